//! JSON Schema tools for structured output: a validator, OpenAI's strict-mode rewrite, and
//! the clean-up that undoes what strict mode forces on optional fields.
//!
//! [`validate`] checks a value against the subset of JSON Schema that schemars 1.x emits
//! for Rust types and names the JSON path of every problem, so a model can be told exactly
//! what to fix. [`openai_strict`] rewrites a schema for OpenAI's `strict: true` mode, which
//! accepts only a subset (every property required, no extra properties, no validation
//! keywords); the constraints it drops are still enforced locally because
//! [`StructuredModel`](crate::StructuredModel) validates replies against the original
//! schema. [`drop_optional_nulls`] removes the `null`s a strict-mode model writes for
//! properties that were optional, so serde's defaults apply again.

mod strict;
mod validate;

#[cfg(test)]
mod hostile_schemas;

use std::cell::Cell;

use serde_json::Value;

pub use strict::openai_strict;
pub(crate) use validate::counted;
pub use validate::{SchemaViolation, validate};

/// Removes object properties whose value is `null` where the schema makes them optional
/// (not in `required`) and does not itself accept `null`.
///
/// OpenAI strict mode makes every property required and turns optional ones into
/// nullable ones, so a model answering in strict mode writes `"tags": null` for a
/// `#[serde(default)] tags: Vec<String>` that it has nothing for. Dropping that `null`
/// gives serde the missing field it expects. Nulls the schema accepts (an `Option` field)
/// are kept. Follows `properties`, `items`, `$ref`, `allOf`, and the first `anyOf`/`oneOf`
/// branch the value fits after clean-up.
///
/// ```
/// use graphkit_llm::schema::drop_optional_nulls;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "tags": {"type": "array", "items": {"type": "string"}},
///     "note": {"type": ["string", "null"]},
/// }});
/// let mut reply = json!({"tags": null, "note": null});
/// drop_optional_nulls(&mut reply, &schema);
/// assert_eq!(reply, json!({"note": null}));
/// ```
pub fn drop_optional_nulls(value: &mut Value, schema: &Value) {
    drop_optional_nulls_counting(value, schema);
}

/// [`drop_optional_nulls`], answering the steps it took (at most the validator's
/// `step_budget` of the value as it was).
pub(crate) fn drop_optional_nulls_counting(value: &mut Value, schema: &Value) -> usize {
    let allowed = validate::step_budget(value);
    let budget = Cell::new(allowed);
    Cleaner {
        root: schema,
        budget: &budget,
    }
    .clean(value, schema, 0);
    allowed - budget.get()
}

/// How deep the clean-up follows nested schemas (as deep as the validator).
const MAX_DEPTH: usize = 128;

struct Cleaner<'s> {
    root: &'s Value,
    /// Steps left for the clean-up and the checks it makes (see `validate::step_budget`);
    /// when they run out the rest of the value is left as it is.
    budget: &'s Cell<usize>,
}

impl Cleaner<'_> {
    fn clean(&self, value: &mut Value, schema: &Value, depth: usize) {
        let Value::Object(rules) = schema else {
            return;
        };
        if depth > MAX_DEPTH {
            return;
        }
        match self.budget.get() {
            0 => return,
            left => self.budget.set(left - 1),
        }
        if let Some(target) = rules
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| validate::resolve(self.root, r))
        {
            self.clean(value, target, depth + 1);
        }
        for entry in rules
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.clean(value, entry, depth + 1);
        }
        for keyword in ["anyOf", "oneOf"] {
            for branch in rules
                .get(keyword)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let mut candidate = value.clone();
                self.clean(&mut candidate, branch, depth + 1);
                if validate::matches_within(&candidate, branch, self.root, self.budget) {
                    *value = candidate;
                    break;
                }
            }
        }
        match value {
            Value::Object(object) => {
                let Some(properties) = rules.get("properties").and_then(Value::as_object) else {
                    return;
                };
                let required = |name: &str| {
                    rules
                        .get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|n| n == name))
                };
                object.retain(|name, item| {
                    !(item.is_null()
                        && !required(name)
                        && properties.get(name).is_some_and(|p| {
                            !validate::matches_within(&Value::Null, p, self.root, self.budget)
                        }))
                });
                for (name, item) in object.iter_mut() {
                    if let Some(property) = properties.get(name) {
                        self.clean(item, property, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = rules.get("items").filter(|s| s.is_object()) {
                    for item in items {
                        self.clean(item, item_schema, depth + 1);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nulls_for_optional_fields_go_and_nulls_the_schema_allows_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                "maybe": {"anyOf": [{"$ref": "#/$defs/Tag"}, {"type": "null"}]},
            },
            "required": ["name"],
            "$defs": {"Tag": {"type": "object", "properties": {"label": {"type": "string"}, "weight": {"type": "number"}}}},
        });
        let mut reply = json!({
            "name": null,
            "tags": [{"label": "a", "weight": null}],
            "maybe": {"label": null},
        });
        drop_optional_nulls(&mut reply, &schema);
        assert_eq!(
            reply,
            json!({"name": null, "tags": [{"label": "a"}], "maybe": {}}),
            "a required null stays for the validator to report"
        );
        let recursive = json!({
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["label"],
        });
        let mut chain =
            json!({"label": "a", "tags": null, "next": {"label": "b", "tags": null, "next": null}});
        drop_optional_nulls(&mut chain, &recursive);
        assert_eq!(
            chain,
            json!({"label": "a", "next": {"label": "b", "next": null}})
        );

        let mut absent = json!({"name": "x", "maybe": null});
        drop_optional_nulls(&mut absent, &schema);
        assert_eq!(absent, json!({"name": "x", "maybe": null}));
    }
}
