//! Checksums of final states: FNV-1a 64 over canonical strings, and the ordered checksum
//! object every case prints (WORKLOADS.md §0 "Checksums").

use std::fmt::{self, Write as _};

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a 64-bit of `text`'s UTF-8 bytes, as 16 lowercase hex digits.
///
/// ```
/// assert_eq!(graphkit_benches::fnv("0,1,2"), "1c2c3ac2c828864a");
/// ```
pub fn fnv(text: &str) -> String {
    let hash = text.bytes().fold(FNV_OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    });
    format!("{hash:016x}")
}

/// The integers in decimal, joined by `,` with no spaces (`csv(xs)` of the spec).
pub fn csv<I>(values: I) -> String
where
    I: IntoIterator,
    I::Item: fmt::Display,
{
    let mut out = String::new();
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{value}");
    }
    out
}

/// A checksum object: named values in the order WORKLOADS.md prints them.
///
/// It serialises as a JSON object that keeps that order, so the `checksum` of a result
/// line reads like the spec's; [`OrderedObject::canonical`] is the exact text the spec
/// gives (Python `json.dumps` spacing), which is what a case is checked against.
pub type Checksum = OrderedObject;

/// A JSON object that keeps its keys in insertion order (checksums and case parameters).
///
/// serde_json's own map sorts its keys unless its `preserve_order` feature is on, and
/// turning that on here would change serde_json for the whole workspace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OrderedObject(Vec<(String, Value)>);

impl OrderedObject {
    /// An empty checksum object.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an entry.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.0.push((key.to_owned(), value.into()));
        self
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[(String, Value)] {
        &self.0
    }

    /// The object as text in the spec's form: `{"key": value, "key2": [1,2]}`.
    ///
    /// Arrays have no spaces (the spec writes `"list_lens": [10,5,...]`), objects have
    /// `": "` and `", "` separators.
    pub fn canonical(&self) -> String {
        let mut out = String::from("{");
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}: {}", Value::String(key.clone()), value);
        }
        out.push('}');
        out
    }
}

impl Serialize for OrderedObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in &self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for OrderedObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedMap;

        impl<'de> Visitor<'de> for OrderedMap {
            type Value = OrderedObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(
                self,
                mut access: A,
            ) -> Result<OrderedObject, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = access.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(OrderedObject(entries))
            }
        }

        deserializer.deserialize_map(OrderedMap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_spec_test_vectors() {
        assert_eq!(fnv(""), "cbf29ce484222325");
        assert_eq!(fnv("a"), "af63dc4c8601ec8c");
        assert_eq!(fnv("0,1,2"), "1c2c3ac2c828864a");
    }

    #[test]
    fn csv_joins_with_commas_and_no_spaces() {
        assert_eq!(csv([0, 1, 2]), "0,1,2");
        assert_eq!(csv(Vec::<i64>::new()), "");
        assert_eq!(csv([-5]), "-5");
    }

    #[test]
    fn canonical_text_matches_the_spec_layout() {
        let checksum = Checksum::new()
            .with("step", 50)
            .with("fnv_f", "2e7143b6fe204392")
            .with("list_lens", vec![10, 5])
            .with("all_traces_abc", true);
        assert_eq!(
            checksum.canonical(),
            r#"{"step": 50, "fnv_f": "2e7143b6fe204392", "list_lens": [10,5], "all_traces_abc": true}"#
        );
    }

    #[test]
    fn checksum_round_trips_through_json_keeping_order() -> Result<(), serde_json::Error> {
        let checksum = Checksum::new().with("zeta", 1).with("alpha", "x");
        let text = serde_json::to_string(&checksum)?;
        assert_eq!(text, r#"{"zeta":1,"alpha":"x"}"#);
        assert_eq!(serde_json::from_str::<Checksum>(&text)?, checksum);
        Ok(())
    }
}
