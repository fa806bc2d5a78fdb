//! `--stream`: machine-readable run events, one JSON object per line on stdout (human
//! text goes to stderr), with state values in their plain form.

use std::io::Write;

use graphkit::State;
use serde_json::{Map, Value};

/// A node's update as the fields it sets, each in its plain form: what the field holds
/// after the update is applied to an empty state. Lists are lists (an append or upsert
/// shows its items, a replace the new list), counters show their increment, and
/// last-value fields their new value — never the reducer's internal operations.
///
/// Returns an empty object when the update cannot be applied or serialized.
pub(crate) fn plain_update<S: State>(update: &S::Update) -> Value {
    let Ok(Value::Object(touched)) = serde_json::to_value(update) else {
        return Value::Object(Map::new());
    };
    let mut applied = S::default();
    if applied.apply_update(update.clone()).is_err() {
        return Value::Object(Map::new());
    }
    let Ok(Value::Object(mut values)) = serde_json::to_value(&applied) else {
        return Value::Object(Map::new());
    };
    Value::Object(
        touched
            .keys()
            .filter_map(|k| values.remove(k).map(|v| (k.clone(), v)))
            .collect(),
    )
}

/// Writes `value` as one line on stdout and flushes it (so `| jq` sees it at once).
pub(crate) fn emit_json_line(value: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphkit::{AppendUpdate, State};
    use serde::{Deserialize, Serialize};

    #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    struct Demo {
        #[reducer(append)]
        notes: Vec<String>,
        #[reducer(add)]
        calls: u64,
        title: String,
    }

    #[test]
    fn plain_updates_show_lists_as_lists_and_only_the_fields_set() {
        let update = DemoUpdate::new()
            .notes(AppendUpdate::items(["a".to_owned(), "b".to_owned()]))
            .calls(2);
        assert_eq!(
            plain_update::<Demo>(&update),
            serde_json::json!({"notes": ["a", "b"], "calls": 2})
        );
    }
}
