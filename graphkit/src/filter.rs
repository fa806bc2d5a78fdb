//! The metadata filter that checkpoint listings and store searches share: a JSON object
//! matches when it holds every entry of the filter. Below `checkpoint/` and `store/`, which
//! both use it.

use serde_json::{Map, Value};

/// `true` if `value` is an object containing every entry of `filter`.
pub(crate) fn matches_filter(value: &Value, filter: &Map<String, Value>) -> bool {
    filter.is_empty()
        || value
            .as_object()
            .is_some_and(|object| filter.iter().all(|(k, v)| object.get(k) == Some(v)))
}
