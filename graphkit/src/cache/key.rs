//! Cache keys: a stable hash of what a node reads.
//!
//! The hash must be the same in every process and build that shares a cache, so it is not
//! Rust's `DefaultHasher` (whose algorithm may change between releases) but SipHash-1-3 with
//! fixed keys, 128 bits, over a canonical form of the value's JSON: object keys sorted, so
//! that a `HashMap` field hashes the same whatever its iteration order.

use std::hash::Hasher;

use serde::Serialize;
use serde_json::Value;
use siphasher::sip128::{Hasher128, SipHasher13};

/// Joins the node names of a node's path (see [`CacheKey::namespace`](super::CacheKey)).
pub(crate) const NAMESPACE_SEPARATOR: char = '|';

/// The hex hash of `value`'s canonical JSON.
pub(crate) fn input_key<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(value)?;
    let mut hasher = SipHasher13::new();
    hash_value(&mut hasher, &value);
    Ok(format!("{:032x}", hasher.finish128().as_u128()))
}

/// Feeds `value` to `hasher`: a tag per kind, lengths before contents, so that no two
/// different values feed the same bytes; object entries in key order.
fn hash_value(hasher: &mut SipHasher13, value: &Value) {
    let bytes = |hasher: &mut SipHasher13, bytes: &[u8]| {
        hasher.write_u64(bytes.len() as u64);
        hasher.write(bytes);
    };
    match value {
        Value::Null => hasher.write_u8(0),
        Value::Bool(b) => {
            hasher.write_u8(1);
            hasher.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            hasher.write_u8(2);
            bytes(hasher, n.to_string().as_bytes());
        }
        Value::String(s) => {
            hasher.write_u8(3);
            bytes(hasher, s.as_bytes());
        }
        Value::Array(items) => {
            hasher.write_u8(4);
            hasher.write_u64(items.len() as u64);
            for item in items {
                hash_value(hasher, item);
            }
        }
        Value::Object(map) => {
            hasher.write_u8(5);
            hasher.write_u64(map.len() as u64);
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (key, value) in entries {
                bytes(hasher, key.as_bytes());
                hash_value(hasher, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn equal_values_hash_equal_whatever_the_map_order() {
        let a: HashMap<String, u32> = (0..50).map(|i| (format!("k{i}"), i)).collect();
        let b: HashMap<String, u32> = (0..50).rev().map(|i| (format!("k{i}"), i)).collect();
        assert_eq!(input_key(&a).ok(), input_key(&b).ok());
    }

    #[test]
    fn the_hash_is_stable_across_builds() {
        // A cache shared by processes relies on this value never changing.
        let key = input_key(&serde_json::json!({"topic": "rust", "n": [1, 2]}));
        assert_eq!(
            key.ok().as_deref(),
            Some("f439d6a54fd2887903ff1d6c361e6b71")
        );
        assert_ne!(input_key(&"a").ok(), input_key(&["a"]).ok());
        assert_ne!(input_key(&("ab", "c")).ok(), input_key(&("a", "bc")).ok());
    }
}
