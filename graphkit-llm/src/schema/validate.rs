//! Checks a JSON value against a JSON Schema (the subset schemars 1.x emits).

use std::cell::Cell;
use std::fmt;

use serde_json::{Map, Value};

/// How deep `$ref`s and nested schemas may go before validation gives up. Deeper than
/// any schema a Rust type produces; it stops a self-referencing `$ref` from looping.
const MAX_DEPTH: usize = 128;

/// The steps (schema nodes checked against value nodes) one validation may take: a fixed
/// allowance plus a share per node of the value. A schema from outside (an MCP server's
/// tool) can branch on itself (`{"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}`), which would
/// take exponential time; past the budget the value is reported as not checkable, which
/// fails closed.
pub(crate) fn step_budget(value: &Value) -> usize {
    fn nodes(value: &Value) -> usize {
        match value {
            Value::Array(items) => 1 + items.iter().map(nodes).sum::<usize>(),
            Value::Object(map) => 1 + map.values().map(nodes).sum::<usize>(),
            _ => 1,
        }
    }
    10_000usize.saturating_add(nodes(value).saturating_mul(256))
}

/// One way a value breaks a schema: where (a JSON path such as `$.items[2].name`) and what.
///
/// ```
/// use graphkit_llm::schema::validate;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]});
/// let problems = validate(&json!({"age": "ten"}), &schema).unwrap_err();
/// assert_eq!(problems[0].to_string(), r#"`$.age`: expected integer, found string "ten""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// Where in the value: `$` is the whole value, `$.a[0]` the first item of field `a`.
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.message)
    }
}

/// Checks `value` against `schema` and returns every violation found (empty means valid).
///
/// Supported keywords: boolean schemas, `type` (a name or a list of names, including
/// `"null"` and `"integer"`), `enum`, `const`, `properties`, `required`,
/// `additionalProperties` (`false` or a schema), `minProperties`/`maxProperties`, `items`
/// (a schema, or a list for tuples), `prefixItems`, `minItems`/`maxItems`, `uniqueItems`,
/// `minLength`/`maxLength` (in characters), `minimum`/`maximum`/`exclusiveMinimum`/
/// `exclusiveMaximum` (numbers, or draft-4 booleans), `multipleOf`, `anyOf`, `oneOf`,
/// `allOf`, `not`, and `$ref` into the same document (`#`, `#/$defs/..`,
/// `#/definitions/..`, any JSON pointer).
///
/// Ignored (always pass): `pattern` (no regex engine here), `format`, `patternProperties`
/// (and `additionalProperties` is then not checked, since it depends on them),
/// `propertyNames`, `dependentRequired`/`dependentSchemas`/`dependencies`,
/// `if`/`then`/`else`, `contains`, `unevaluated*`, and references to other documents.
///
/// # Errors
///
/// Every violation, each naming the JSON path of the offending value.
pub fn validate(value: &Value, schema: &Value) -> Result<(), Vec<SchemaViolation>> {
    let (violations, _steps) = violations_within(value, schema, schema);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// Whether `value` matches `schema`, a part of the document `root` (its `$ref`s resolve
/// against `root`), spending steps from `budget` (shared by the caller's other checks).
pub(crate) fn matches_within(
    value: &Value,
    schema: &Value,
    root: &Value,
    budget: &Cell<usize>,
) -> bool {
    let mut violations = Vec::new();
    Validator { root, budget }.check(value, schema, &Path::root(), 0, &mut violations);
    violations.is_empty()
}

/// The violations of `value`, and the steps the check took (at most
/// [`step_budget`]`(value)`).
pub(crate) fn violations_within(
    value: &Value,
    schema: &Value,
    root: &Value,
) -> (Vec<SchemaViolation>, usize) {
    let mut violations = Vec::new();
    let allowed = step_budget(value);
    let budget = Cell::new(allowed);
    Validator {
        root,
        budget: &budget,
    }
    .check(value, schema, &Path::root(), 0, &mut violations);
    let steps = allowed - budget.get();
    if budget.get() == 0 && !violations.is_empty() {
        // What was found before the budget ran out is beside the point.
        let too_costly = SchemaViolation {
            path: "$".into(),
            message: TOO_COSTLY.into(),
        };
        return (vec![too_costly], steps);
    }
    (violations, steps)
}

pub(crate) const TOO_COSTLY: &str =
    "the schema is too costly to check against this value (it branches on itself?)";

/// A JSON path under construction (`$`, `$.a`, `$.a[0]`, `$["odd key"]`).
#[derive(Debug, Clone)]
struct Path(String);

impl Path {
    fn root() -> Self {
        Self("$".into())
    }

    fn key(&self, key: &str) -> Self {
        let plain = !key.is_empty()
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !key.starts_with(|c: char| c.is_ascii_digit());
        if plain {
            Self(format!("{}.{key}", self.0))
        } else {
            Self(format!("{}[{}]", self.0, Value::String(key.to_owned())))
        }
    }

    fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }
}

struct Validator<'s> {
    root: &'s Value,
    /// Steps left; at 0 the check stops with a violation.
    budget: &'s Cell<usize>,
}

impl<'s> Validator<'s> {
    fn check(
        &self,
        value: &Value,
        schema: &'s Value,
        path: &Path,
        depth: usize,
        out: &mut Vec<SchemaViolation>,
    ) {
        let at = |message: String| SchemaViolation {
            path: path.0.clone(),
            message,
        };
        if depth > MAX_DEPTH {
            out.push(at(
                "the schema nests too deeply (a `$ref` that refers to itself?)".into(),
            ));
            return;
        }
        match self.budget.get() {
            0 => {
                out.push(at(TOO_COSTLY.into()));
                return;
            }
            left => self.budget.set(left - 1),
        }
        let rules = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                out.push(at("no value is allowed here".into()));
                return;
            }
            Value::Object(rules) => rules,
            _ => return,
        };

        if let Some(reference) = rules.get("$ref").and_then(Value::as_str) {
            match resolve(self.root, reference) {
                Some(target) => self.check(value, target, path, depth + 1, out),
                None => out.push(at(format!(
                    "the schema refers to `{reference}`, which it does not define"
                ))),
            }
        }
        // Problems with the value itself are reported before those inside it.
        let mut here = Vec::new();
        let mut inside = Vec::new();
        self.check_type(value, rules, &mut here);
        self.check_values(value, rules, &mut here);
        match value {
            Value::Object(object) => {
                self.check_object(object, rules, path, depth, &mut inside, &mut here);
            }
            Value::Array(items) => {
                self.check_array(items, rules, path, depth, &mut inside, &mut here);
            }
            Value::String(text) => check_string(text, rules, &mut here),
            Value::Number(_) => check_number(value, rules, &mut here),
            _ => {}
        }
        out.extend(here.into_iter().map(at));
        out.extend(inside);
        self.check_combinators(value, rules, path, depth, out);
    }

    fn check_type(&self, value: &Value, rules: &Map<String, Value>, out: &mut Vec<String>) {
        let allowed: Vec<&str> = match rules.get("type") {
            Some(Value::String(name)) => vec![name.as_str()],
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => return,
        };
        if !allowed.iter().any(|name| has_type(value, name)) {
            out.push(format!(
                "expected {}, found {}",
                allowed.join(" or "),
                describe(value)
            ));
        }
    }

    fn check_values(&self, value: &Value, rules: &Map<String, Value>, out: &mut Vec<String>) {
        if let Some(Value::Array(options)) = rules.get("enum")
            && !options.iter().any(|option| same_value(option, value))
        {
            let listed: Vec<String> = options.iter().map(Value::to_string).collect();
            out.push(format!(
                "{} is not one of the allowed values: {}",
                describe(value),
                listed.join(", ")
            ));
        }
        if let Some(constant) = rules.get("const")
            && !same_value(constant, value)
        {
            out.push(format!(
                "expected exactly {constant}, found {}",
                describe(value)
            ));
        }
    }

    fn check_object(
        &self,
        object: &Map<String, Value>,
        rules: &'s Map<String, Value>,
        path: &Path,
        depth: usize,
        out: &mut Vec<SchemaViolation>,
        local: &mut Vec<String>,
    ) {
        let properties = rules.get("properties").and_then(Value::as_object);
        for name in rules
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(name) {
                local.push(format!("missing required property `{name}`"));
            }
        }
        let additional = rules.get("additionalProperties");
        let pattern_properties = rules.contains_key("patternProperties");
        for (key, item) in object {
            let item_path = path.key(key);
            match properties.and_then(|p| p.get(key)) {
                Some(schema) => self.check(item, schema, &item_path, depth + 1, out),
                None if pattern_properties => {}
                None => match additional {
                    Some(Value::Bool(false)) => {
                        let known: Vec<String> = properties
                            .map(|p| p.keys().map(|k| format!("`{k}`")).collect())
                            .unwrap_or_default();
                        local.push(if known.is_empty() {
                            format!("property `{key}` is not allowed (no properties are)")
                        } else {
                            format!(
                                "property `{key}` is not allowed; the allowed properties are {}",
                                known.join(", ")
                            )
                        });
                    }
                    Some(schema @ Value::Object(_)) => {
                        self.check(item, schema, &item_path, depth + 1, out);
                    }
                    _ => {}
                },
            }
        }
        let count = object.len();
        if let Some(min) = rules.get("minProperties").and_then(Value::as_u64)
            && (count as u64) < min
        {
            local.push(format!(
                "has {}; the minimum is {min}",
                counted(count, "property", "properties")
            ));
        }
        if let Some(max) = rules.get("maxProperties").and_then(Value::as_u64)
            && (count as u64) > max
        {
            local.push(format!(
                "has {}; the maximum is {max}",
                counted(count, "property", "properties")
            ));
        }
    }

    fn check_array(
        &self,
        items: &[Value],
        rules: &'s Map<String, Value>,
        path: &Path,
        depth: usize,
        out: &mut Vec<SchemaViolation>,
        local: &mut Vec<String>,
    ) {
        // Draft 2020-12 tuples use `prefixItems` (+ `items` for the rest); older drafts put
        // a list in `items` (+ `additionalItems`).
        let (prefix, rest): (&[Value], Option<&Value>) =
            match (rules.get("prefixItems"), rules.get("items")) {
                (Some(Value::Array(prefix)), rest) => (prefix, rest),
                (None, Some(Value::Array(prefix))) => (prefix, rules.get("additionalItems")),
                (_, rest) => (&[], rest),
            };
        for (index, item) in items.iter().enumerate() {
            let schema = prefix.get(index).or(rest);
            if let Some(schema) = schema {
                self.check(item, schema, &path.index(index), depth + 1, out);
            }
        }
        let count = items.len();
        if let Some(min) = rules.get("minItems").and_then(Value::as_u64)
            && (count as u64) < min
        {
            local.push(format!(
                "has {}; the minimum is {min}",
                counted(count, "item", "items")
            ));
        }
        if let Some(max) = rules.get("maxItems").and_then(Value::as_u64)
            && (count as u64) > max
        {
            local.push(format!(
                "has {}; the maximum is {max}",
                counted(count, "item", "items")
            ));
        }
        if rules.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (i, a) in items.iter().enumerate() {
                if let Some(j) = items[i + 1..].iter().position(|b| same_value(a, b)) {
                    local.push(format!(
                        "items {i} and {} are equal; items must be unique",
                        i + 1 + j
                    ));
                    break;
                }
            }
        }
    }

    fn check_combinators(
        &self,
        value: &Value,
        rules: &'s Map<String, Value>,
        path: &Path,
        depth: usize,
        out: &mut Vec<SchemaViolation>,
    ) {
        if let Some(Value::Array(all)) = rules.get("allOf") {
            for schema in all {
                self.check(value, schema, path, depth + 1, out);
            }
        }
        for (keyword, exactly_one) in [("anyOf", false), ("oneOf", true)] {
            let Some(Value::Array(branches)) = rules.get(keyword) else {
                continue;
            };
            let results: Vec<Vec<SchemaViolation>> = branches
                .iter()
                .map(|schema| {
                    let mut found = Vec::new();
                    self.check(value, schema, path, depth + 1, &mut found);
                    found
                })
                .collect();
            let passing = results.iter().filter(|r| r.is_empty()).count();
            if passing == 0 {
                // Show the problems of the branch that came closest, so the model can fix them.
                let closest = results.into_iter().min_by_key(Vec::len).unwrap_or_default();
                out.push(SchemaViolation {
                    path: path.0.clone(),
                    message: format!(
                        "{} matches none of the {} allowed shapes; the closest one fails with: {}",
                        describe(value),
                        branches.len(),
                        closest
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                });
            } else if exactly_one && passing > 1 {
                out.push(SchemaViolation {
                    path: path.0.clone(),
                    message: format!(
                        "matches {passing} of the allowed shapes; it must match exactly one"
                    ),
                });
            }
        }
        if let Some(not) = rules.get("not") {
            let mut found = Vec::new();
            self.check(value, not, path, depth + 1, &mut found);
            if found.is_empty() {
                out.push(SchemaViolation {
                    path: path.0.clone(),
                    message: format!("{} matches a shape that is not allowed", describe(value)),
                });
            }
        }
    }
}

fn check_string(text: &str, rules: &Map<String, Value>, out: &mut Vec<String>) {
    let length = text.chars().count() as u64;
    if let Some(min) = rules.get("minLength").and_then(Value::as_u64)
        && length < min
    {
        out.push(format!(
            "is {} long; the minimum is {min}",
            counted(length as usize, "character", "characters")
        ));
    }
    if let Some(max) = rules.get("maxLength").and_then(Value::as_u64)
        && length > max
    {
        out.push(format!(
            "is {} long; the maximum is {max}",
            counted(length as usize, "character", "characters")
        ));
    }
}

fn check_number(value: &Value, rules: &Map<String, Value>, out: &mut Vec<String>) {
    let Some(n) = value.as_f64() else {
        return;
    };
    let bound = |key: &str| rules.get(key).and_then(Value::as_f64);
    // Draft 4 wrote exclusive bounds as booleans next to `minimum`/`maximum`.
    let exclusive = |key: &str| rules.get(key) == Some(&Value::Bool(true));
    if let Some(min) = bound("minimum") {
        if exclusive("exclusiveMinimum") && n <= min {
            out.push(format!(
                "{value} is too small; it must be greater than {min}"
            ));
        } else if n < min {
            out.push(format!("{value} is too small; the minimum is {min}"));
        }
    }
    if let Some(max) = bound("maximum") {
        if exclusive("exclusiveMaximum") && n >= max {
            out.push(format!("{value} is too large; it must be less than {max}"));
        } else if n > max {
            out.push(format!("{value} is too large; the maximum is {max}"));
        }
    }
    if let Some(min) = bound("exclusiveMinimum")
        && n <= min
    {
        out.push(format!(
            "{value} is too small; it must be greater than {min}"
        ));
    }
    if let Some(max) = bound("exclusiveMaximum")
        && n >= max
    {
        out.push(format!("{value} is too large; it must be less than {max}"));
    }
    if let Some(step) = bound("multipleOf").filter(|s| *s > 0.0) {
        let ratio = n / step;
        if (ratio - ratio.round()).abs() > 1e-9 {
            out.push(format!("{value} is not a multiple of {step}"));
        }
    }
}

/// `1 item`, `3 items`.
pub(crate) fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

/// Whether `value` is of the JSON Schema type `name`.
fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64()
                || value.is_u64()
                || value
                    .as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
        }
        _ => false,
    }
}

/// JSON equality where `1` and `1.0` are the same number.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(x), Some(y)) if x == y)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// `string "abc"`, `integer 3`, `object`, ... for messages (long values shortened).
fn describe(value: &Value) -> String {
    const LIMIT: usize = 60;
    let kind = match value {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(a) => return format!("an array of {} items", a.len()),
        Value::Object(_) => return "an object".into(),
    };
    let mut shown = value.to_string();
    if shown.len() > LIMIT {
        let mut end = LIMIT;
        while !shown.is_char_boundary(end) {
            end -= 1;
        }
        shown.truncate(end);
        shown.push('…');
    }
    format!("{kind} {shown}")
}

/// Follows a `$ref` inside `root`: `#`, or a JSON pointer such as `#/$defs/Name`.
pub(crate) fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    // `pointer` is already in JSON pointer syntax (`/a/b`, with `~0`/`~1` escapes).
    root.pointer(pointer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(value: Value, schema: Value) -> Vec<String> {
        validate(&value, &schema)
            .err()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_wrong_type_names_the_path_and_what_was_found() {
        let schema = json!({"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}}
        }});
        assert_eq!(
            problems(json!({"tags": ["a", 2]}), schema),
            ["`$.tags[1]`: expected string, found integer 2"]
        );
    }

    #[test]
    fn type_lists_accept_null_and_integers_accept_whole_floats() {
        let schema = json!({"type": ["integer", "null"]});
        assert!(validate(&json!(null), &schema).is_ok());
        assert!(validate(&json!(3), &schema).is_ok());
        assert!(validate(&json!(3.0), &schema).is_ok());
        assert_eq!(
            problems(json!(3.5), schema),
            ["`$`: expected integer or null, found number 3.5"]
        );
    }

    #[test]
    fn missing_required_and_extra_properties_are_both_reported() {
        let schema = json!({
            "type": "object",
            "properties": {"age": {"type": "integer"}, "name": {"type": "string"}},
            "required": ["age", "name"],
            "additionalProperties": false,
        });
        assert_eq!(
            problems(json!({"name": "Ada", "nickname": "A"}), schema),
            [
                "`$`: missing required property `age`",
                "`$`: property `nickname` is not allowed; the allowed properties are `age`, `name`",
            ]
        );
    }

    #[test]
    fn additional_properties_as_a_schema_checks_map_values() {
        let schema = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        assert!(validate(&json!({"a": 1, "b": 2}), &schema).is_ok());
        assert_eq!(
            problems(json!({"a": 1, "odd key": "x"}), schema),
            [r#"`$["odd key"]`: expected integer, found string "x""#]
        );
    }

    #[test]
    fn refs_resolve_into_defs_and_definitions_and_the_root() {
        let schema = json!({
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Place"},
                "work": {"$ref": "#/definitions/Place"},
                "child": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
            },
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            "definitions": {"Place": {"type": "object", "required": ["zip"]}},
        });
        assert!(
            validate(
                &json!({"home": {"city": "Oslo"}, "child": {"child": null}}),
                &schema
            )
            .is_ok()
        );
        assert_eq!(
            problems(json!({"home": {}, "work": {}}), schema.clone()),
            [
                "`$.home`: missing required property `city`",
                "`$.work`: missing required property `zip`",
            ]
        );
        assert_eq!(
            problems(
                json!({"home": {"city": 1}}),
                json!({"properties": {"home": {"$ref": "#/$defs/Nope"}}})
            ),
            ["`$.home`: the schema refers to `#/$defs/Nope`, which it does not define"]
        );
    }

    #[test]
    fn a_self_referencing_ref_stops_with_a_violation_instead_of_looping() {
        let schema = json!({"$ref": "#"});
        let found = problems(json!(1), schema);
        assert!(found[0].contains("nests too deeply"), "{found:?}");
    }

    #[test]
    fn enum_and_const_compare_values_numerically() {
        assert!(validate(&json!(1.0), &json!({"enum": [1, 2]})).is_ok());
        assert_eq!(
            problems(json!("c"), json!({"type": "string", "enum": ["a", "b"]})),
            [r#"`$`: string "c" is not one of the allowed values: "a", "b""#]
        );
        assert_eq!(
            problems(json!("x"), json!({"const": "y"})),
            [r#"`$`: expected exactly "y", found string "x""#]
        );
    }

    #[test]
    fn any_of_reports_the_closest_branch_and_one_of_needs_exactly_one() {
        let schema = json!({"anyOf": [
            {"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer"}}, "required": ["kind", "n"]},
            {"type": "string"},
        ]});
        let found = problems(json!({"kind": "a", "n": "x"}), schema);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].starts_with("`$`: an object matches none of the 2 allowed shapes"),
            "{found:?}"
        );
        assert!(found[0].contains("`$.n`: expected integer"), "{found:?}");

        let one_of = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        assert_eq!(
            problems(json!(2), one_of.clone()),
            ["`$`: matches 2 of the allowed shapes; it must match exactly one"]
        );
        assert!(validate(&json!(2.5), &one_of).is_ok());
    }

    #[test]
    fn all_of_applies_every_schema_and_not_rejects_its_match() {
        let schema = json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}], "not": {"required": ["c"]}});
        assert_eq!(
            problems(json!({"a": 1, "c": 1}), schema),
            [
                "`$`: missing required property `b`",
                "`$`: an object matches a shape that is not allowed",
            ]
        );
    }

    #[test]
    fn numeric_bounds_in_both_drafts() {
        let schema = json!({"minimum": 0, "maximum": 10, "exclusiveMaximum": 10});
        assert!(validate(&json!(0), &schema).is_ok());
        assert_eq!(
            problems(json!(-1), schema.clone()),
            ["`$`: -1 is too small; the minimum is 0"]
        );
        assert_eq!(
            problems(json!(10), schema),
            ["`$`: 10 is too large; it must be less than 10"]
        );
        let draft4 = json!({"minimum": 1, "exclusiveMinimum": true});
        assert_eq!(
            problems(json!(1), draft4),
            ["`$`: 1 is too small; it must be greater than 1"]
        );
        assert_eq!(
            problems(json!(0.3), json!({"multipleOf": 0.25})),
            ["`$`: 0.3 is not a multiple of 0.25"]
        );
    }

    #[test]
    fn string_lengths_count_characters_and_pattern_and_format_are_ignored() {
        let schema = json!({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^z$", "format": "email"});
        assert!(validate(&json!("ÅÄÖ"), &schema).is_ok());
        assert_eq!(
            problems(json!("a"), schema),
            ["`$`: is 1 character long; the minimum is 2"]
        );
    }

    #[test]
    fn array_sizes_uniqueness_and_tuples() {
        let schema = json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2, "uniqueItems": true});
        assert_eq!(
            problems(json!([]), schema.clone()),
            ["`$`: has 0 items; the minimum is 1"]
        );
        assert_eq!(
            problems(json!([1, 1, 2]), schema),
            [
                "`$`: has 3 items; the maximum is 2",
                "`$`: items 0 and 1 are equal; items must be unique",
            ]
        );
        let tuple = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false});
        assert!(validate(&json!(["a", 1]), &tuple).is_ok());
        assert_eq!(
            problems(json!([1, 1, 1]), tuple),
            [
                "`$[0]`: expected string, found integer 1",
                "`$[2]`: no value is allowed here",
            ]
        );
    }

    #[test]
    fn schemas_that_schemars_generates_accept_what_serde_writes() {
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Report {
            title: String,
            pages: u32,
            score: Option<f64>,
            kind: Kind,
            sections: Vec<Section>,
            extra: std::collections::BTreeMap<String, i64>,
            raw: Value,
        }
        #[derive(serde::Serialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        enum Kind {
            Short,
            Long { words: u64 },
        }
        #[derive(serde::Serialize, schemars::JsonSchema)]
        struct Section {
            heading: String,
            child: Option<Box<Section>>,
        }
        let report = Report {
            title: "t".into(),
            pages: 3,
            score: None,
            kind: Kind::Long { words: 5 },
            sections: vec![Section {
                heading: "h".into(),
                child: Some(Box::new(Section {
                    heading: "i".into(),
                    child: None,
                })),
            }],
            extra: [("a".to_owned(), -1)].into(),
            raw: json!({"anything": [1]}),
        };
        let schema = crate::schema_for::<Report>();
        let value = serde_json::to_value(&report).unwrap();
        assert_eq!(validate(&value, &schema), Ok(()), "{schema:#}");
        let mut wrong = value;
        wrong["pages"] = json!(-3);
        wrong["kind"] = json!("Medium");
        let found = problems(wrong, schema);
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("`$.pages`: -3 is too small")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("`$.kind`: string \"Medium\" matches none")),
            "{found:?}"
        );
    }

    #[test]
    fn a_schema_that_branches_on_itself_is_refused_within_a_budget() {
        // Two branches back to the root at every level: 2^128 checks without a budget.
        let schema = json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]});
        let problems = validate(&json!({"a": [1, 2, 3]}), &schema).expect_err("not checkable");
        assert!(
            problems.iter().any(|p| p.message.contains("too costly")),
            "{problems:?}"
        );
        // The clean-up of a reply under that schema ends too, leaving the value as it was.
        let mut reply = json!({"a": null});
        crate::schema::drop_optional_nulls(&mut reply, &schema);
        assert_eq!(reply, json!({"a": null}));
    }
}
