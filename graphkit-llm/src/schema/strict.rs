//! Rewrites a JSON Schema into the subset OpenAI's strict structured output accepts.

use std::cell::Cell;

use serde_json::{Map, Value, json};

use super::validate::resolve;

/// Keywords kept in strict mode. Everything else is dropped: strict mode rejects many
/// validation keywords (`default`, `format` values it does not know, string lengths, ...)
/// and which ones it accepts has changed between models, so only structure is sent.
/// The dropped constraints are still enforced: [`StructuredModel`](crate::StructuredModel)
/// validates every reply against the full, original schema.
const KEPT: [&str; 11] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
];

/// How many `$ref`s with sibling keywords may be inlined inside each other.
const MAX_INLINE_DEPTH: usize = 16;

/// The schema nodes one rewrite may produce: a fixed allowance plus a share per node of the
/// schema. Inlining `$ref`s copies their targets, and a schema whose definitions each
/// refer to the next several times would grow exponentially (k^16 copies for k references
/// per level); past this budget the schema is refused.
fn rewrite_budget(schema: &Value) -> usize {
    let mut nodes = 0usize;
    let mut open = vec![schema];
    while let Some(value) = open.pop() {
        nodes += 1;
        match value {
            Value::Array(items) => open.extend(items),
            Value::Object(map) => open.extend(map.values()),
            _ => {}
        }
    }
    10_000usize.saturating_add(nodes.saturating_mul(64))
}

/// How deep schema nodes may nest (as in the validator): far deeper than any schema a Rust
/// type produces, and shallow enough that a hostile schema cannot exhaust the stack.
const MAX_NESTING: usize = 128;

/// The schema rewritten for OpenAI strict mode (`"strict": true`), or why it cannot be.
///
/// Strict mode needs: a root that is an object; `additionalProperties: false` on every
/// object; every property listed in `required` (so a property that was optional becomes
/// required but nullable, and [`StructuredModel`](crate::StructuredModel) drops such a
/// `null` again before parsing, so `#[serde(default)]` fields still get their default); no
/// `oneOf` (it becomes `anyOf`), no `allOf` (a single entry is merged in), `const` written
/// as a one-value `enum`, a `$ref` with no sibling keywords (a `$ref` that carries a
/// description is inlined). All of this applies recursively, `$defs` and `definitions`
/// included. Validation keywords (`minimum`, `maxLength`, `format`, `pattern`, `default`,
/// ...) are dropped; see the module docs of [`schema`](crate::schema).
///
/// ```
/// use graphkit_llm::schema::openai_strict;
/// use serde_json::json;
///
/// let schema = json!({"type": "object", "properties": {
///     "name": {"type": "string"},
///     "age": {"type": "integer", "format": "uint8", "minimum": 0},
/// }, "required": ["name"]});
/// assert_eq!(openai_strict(&schema).unwrap(), json!({"type": "object", "properties": {
///     "name": {"type": "string"},
///     "age": {"type": ["integer", "null"]},
/// }, "required": ["age", "name"], "additionalProperties": false}));
/// ```
///
/// # Errors
///
/// A message naming the place (a JSON pointer into the schema) that strict mode cannot
/// express: a root that is not an object, a map (`additionalProperties` with a schema),
/// a value of any shape (`true` or `{}`), a tuple, an `allOf` with several entries, `not`.
pub fn openai_strict(schema: &Value) -> Result<Value, String> {
    openai_strict_counting(schema).0
}

/// [`openai_strict`], and the schema nodes the rewrite visited (at most
/// [`rewrite_budget`]`(schema)`).
pub(crate) fn openai_strict_counting(schema: &Value) -> (Result<Value, String>, usize) {
    let root_type = schema.get("type");
    if root_type != Some(&json!("object")) {
        let refused = format!(
            "the root must be an object, but the schema's type is {}",
            root_type.map_or_else(|| "not given".to_owned(), Value::to_string)
        );
        return (Err(refused), 0);
    }
    // Checked without recursion first: the rewrite clones and recurses, and a schema built
    // in code can be deeper than the stack.
    if json_depth_exceeds(schema, MAX_NESTING * 4) {
        let refused = format!(
            "the schema is nested more than {MAX_NESTING} levels deep; no model needs a schema that deep"
        );
        return (Err(refused), 0);
    }
    let allowed = rewrite_budget(schema);
    let strict = Strict {
        root: schema,
        nesting: Cell::new(0),
        budget: Cell::new(allowed),
    };
    let rewritten = strict.node(schema, "", 0);
    (rewritten, allowed - strict.budget.get())
}

/// Whether `value` nests arrays and objects more than `limit` deep (without recursing).
fn json_depth_exceeds(value: &Value, limit: usize) -> bool {
    let mut open = vec![(value, 0usize)];
    while let Some((value, depth)) = open.pop() {
        if depth > limit {
            return true;
        }
        match value {
            Value::Array(items) => open.extend(items.iter().map(|v| (v, depth + 1))),
            Value::Object(map) => open.extend(map.values().map(|v| (v, depth + 1))),
            _ => {}
        }
    }
    false
}

struct Strict<'s> {
    root: &'s Value,
    /// How many `node` calls are open.
    nesting: Cell<usize>,
    /// Nodes the rewrite may still visit (see [`rewrite_budget`]).
    budget: Cell<usize>,
}

impl Strict<'_> {
    /// One schema node, rewritten; `at` is its JSON pointer in the original schema.
    fn node(&self, schema: &Value, at: &str, inlined: usize) -> Result<Value, String> {
        let open = self.nesting.get();
        if open >= MAX_NESTING {
            return Err(format!(
                "`{}` is nested more than {MAX_NESTING} levels deep; no model needs a schema that deep",
                pointer(at)
            ));
        }
        match self.budget.get() {
            0 => {
                return Err(
                    "the schema is too large once its `$ref`s are inlined (definitions that refer to each other many times?); no model needs a schema that large"
                        .into(),
                );
            }
            left => self.budget.set(left - 1),
        }
        self.nesting.set(open + 1);
        let rewritten = self.rewrite(schema, at, inlined);
        self.nesting.set(open);
        rewritten
    }

    fn rewrite(&self, schema: &Value, at: &str, inlined: usize) -> Result<Value, String> {
        let Value::Object(rules) = schema else {
            return Err(format!(
                "`{}` allows a value of any shape, which strict mode cannot express",
                pointer(at)
            ));
        };
        if rules.is_empty() {
            return Err(format!(
                "`{}` allows a value of any shape, which strict mode cannot express",
                pointer(at)
            ));
        }
        let mut rules = rules.clone();
        for unsupported in ["not", "prefixItems", "patternProperties"] {
            if rules.contains_key(unsupported) {
                return Err(format!(
                    "`{}` uses `{unsupported}`, which strict mode does not support",
                    pointer(at)
                ));
            }
        }
        if let Some(Value::Array(_)) = rules.get("items") {
            return Err(format!(
                "`{}` is a tuple, which strict mode does not support",
                pointer(at)
            ));
        }
        merge_all_of(&mut rules, at)?;
        if let Some(reference) = rules.get("$ref").and_then(Value::as_str)
            && rules.len() > 1
        {
            return self.inline_ref(reference.to_owned(), rules, at, inlined);
        }
        if let Some(Value::Array(one_of)) = rules.remove("oneOf") {
            let any_of = rules.entry("anyOf").or_insert_with(|| json!([]));
            if let Value::Array(any_of) = any_of {
                any_of.extend(one_of);
            }
        }
        if let Some(constant) = rules.remove("const") {
            rules.insert("enum".into(), json!([constant]));
        }
        rules.retain(|key, _| KEPT.contains(&key.as_str()));

        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(entries)) = rules.get(defs) {
                let mut rewritten = Map::new();
                for (name, def) in entries {
                    let at = format!("{at}/{defs}/{}", escape(name));
                    rewritten.insert(name.clone(), self.node(def, &at, inlined)?);
                }
                rules.insert(defs.into(), Value::Object(rewritten));
            }
        }
        if let Some(Value::Array(branches)) = rules.get("anyOf") {
            let branches = branches
                .iter()
                .enumerate()
                .map(|(i, b)| self.node(b, &format!("{at}/anyOf/{i}"), inlined))
                .collect::<Result<Vec<_>, _>>()?;
            rules.insert("anyOf".into(), Value::Array(branches));
        }
        if let Some(items) = rules.get("items") {
            let items = self.node(items, &format!("{at}/items"), inlined)?;
            rules.insert("items".into(), items);
        }
        let is_object = rules.contains_key("properties") || has_type(&rules, "object");
        if is_object {
            self.object(&mut rules, at, inlined)?;
        }
        Ok(Value::Object(rules))
    }

    /// An object: every property required (optional ones nullable), nothing else allowed.
    fn object(
        &self,
        rules: &mut Map<String, Value>,
        at: &str,
        inlined: usize,
    ) -> Result<(), String> {
        match rules.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) => {
                return Err(format!(
                    "`{}` is a map (an object with `additionalProperties`), which strict mode does not support",
                    pointer(at)
                ));
            }
        }
        let required: Vec<String> = rules
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let mut properties = Map::new();
        if let Some(Value::Object(given)) = rules.get("properties") {
            for (name, property) in given {
                let at = format!("{at}/properties/{}", escape(name));
                let mut property = self.node(property, &at, inlined)?;
                if !required.contains(name) {
                    property = nullable(property);
                }
                properties.insert(name.clone(), property);
            }
        }
        let names: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
        rules.insert("properties".into(), Value::Object(properties));
        rules.insert("required".into(), Value::Array(names));
        rules.insert("additionalProperties".into(), Value::Bool(false));
        if !has_type(rules, "object") {
            rules.insert("type".into(), json!("object"));
        }
        Ok(())
    }

    /// `{"$ref": .., "description": ..}`: strict mode wants a bare `$ref`, so the target
    /// is copied in, with the node's own keywords winning.
    fn inline_ref(
        &self,
        reference: String,
        mut rules: Map<String, Value>,
        at: &str,
        inlined: usize,
    ) -> Result<Value, String> {
        if inlined >= MAX_INLINE_DEPTH {
            // A recursive type: keep the reference and let the description go.
            return Ok(json!({ "$ref": reference }));
        }
        let Some(Value::Object(target)) = resolve(self.root, &reference) else {
            return Err(format!(
                "`{}` refers to `{reference}`, which the schema does not define",
                pointer(at)
            ));
        };
        rules.remove("$ref");
        let mut merged = target.clone();
        merged.remove("$defs");
        merged.remove("definitions");
        merged.extend(rules);
        self.node(&Value::Object(merged), at, inlined + 1)
    }
}

/// Merges an `allOf` of one entry into the node; several entries cannot be expressed.
fn merge_all_of(rules: &mut Map<String, Value>, at: &str) -> Result<(), String> {
    let Some(all_of) = rules.remove("allOf") else {
        return Ok(());
    };
    match all_of {
        Value::Array(mut entries) if entries.len() == 1 => {
            if let Value::Object(entry) = entries.remove(0) {
                for (key, value) in entry {
                    rules.entry(key).or_insert(value);
                }
            }
            Ok(())
        }
        _ => Err(format!(
            "`{}` uses `allOf` with several schemas, which strict mode does not support",
            pointer(at)
        )),
    }
}

/// The property schema, also accepting `null`.
fn nullable(property: Value) -> Value {
    let Value::Object(mut rules) = property else {
        return property;
    };
    if let Some(Value::Array(branches)) = rules.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&json!("null")))
        {
            branches.push(json!({"type": "null"}));
        }
        return Value::Object(rules);
    }
    if rules.contains_key("$ref") {
        return json!({"anyOf": [Value::Object(rules), {"type": "null"}]});
    }
    match rules.get_mut("type") {
        Some(Value::String(name)) if name != "null" => {
            let name = std::mem::take(name);
            rules.insert("type".into(), json!([name, "null"]));
        }
        Some(Value::Array(names)) if !names.contains(&json!("null")) => names.push(json!("null")),
        _ => {}
    }
    if let Some(Value::Array(options)) = rules.get_mut("enum")
        && !options.contains(&Value::Null)
    {
        options.push(Value::Null);
    }
    Value::Object(rules)
}

fn has_type(rules: &Map<String, Value>, name: &str) -> bool {
    match rules.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == name),
        _ => false,
    }
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// `at` as a JSON pointer for a message; a very long one (a deeply nested schema) keeps its
/// first and last 80 characters.
fn pointer(at: &str) -> String {
    const KEEP: usize = 80;
    let chars = at.chars().count();
    if chars <= 2 * KEEP {
        return format!("#{at}");
    }
    let head: String = at.chars().take(KEEP).collect();
    let tail: String = at.chars().skip(chars - KEEP).collect();
    format!("#{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::validate;
    use schemars::JsonSchema;

    /// A report with nested, optional and enum fields.
    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    struct Report {
        /// The title.
        title: String,
        /// How sure, 0 to 1.
        confidence: Option<f64>,
        /// The author, if known.
        author: Option<Person>,
        /// Everyone involved.
        people: Vec<Person>,
        #[serde(default)]
        tags: Vec<String>,
        status: Status,
        shape: Shape,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    struct Person {
        name: String,
        age: Option<u8>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    enum Status {
        Draft,
        Final,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(tag = "kind")]
    enum Shape {
        Circle { radius: f64 },
        Square { side: f64 },
    }

    fn strict_report() -> Value {
        openai_strict(&crate::schema_for::<Report>()).expect("Report can be strict")
    }

    /// Every object node in the schema, with its pointer.
    fn objects(value: &Value, at: String, out: &mut Vec<(String, Map<String, Value>)>) {
        match value {
            Value::Object(map) => {
                if map.get("type") == Some(&json!("object")) {
                    out.push((at.clone(), map.clone()));
                }
                for (k, v) in map {
                    objects(v, format!("{at}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    objects(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_object_lists_all_properties_as_required_and_forbids_others() {
        let strict = strict_report();
        let mut found = Vec::new();
        objects(&strict, String::new(), &mut found);
        assert!(
            found.len() >= 4,
            "root, Person, two Shape variants: {found:?}"
        );
        for (at, object) in found {
            assert_eq!(object["additionalProperties"], json!(false), "{at}");
            let properties: Vec<&String> =
                object["properties"].as_object().unwrap().keys().collect();
            let required: Vec<&str> = object["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(properties, required, "{at}");
        }
    }

    #[test]
    fn optional_fields_become_nullable_and_required_ones_do_not() {
        let strict = strict_report();
        let properties = &strict["properties"];
        assert_eq!(
            properties["title"],
            json!({"type": "string", "description": "The title."})
        );
        assert_eq!(
            properties["confidence"],
            json!({"type": ["number", "null"], "description": "How sure, 0 to 1."})
        );
        assert_eq!(
            properties["author"],
            json!({"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}], "description": "The author, if known."})
        );
        assert_eq!(
            properties["tags"],
            json!({"type": ["array", "null"], "items": {"type": "string"}})
        );
        assert_eq!(
            strict["$defs"]["Person"]["properties"]["age"],
            json!({"type": ["integer", "null"]}),
            "format and minimum are dropped"
        );
    }

    #[test]
    fn enums_keep_their_values_and_tagged_unions_become_any_of_with_enum_tags() {
        let strict = strict_report();
        assert_eq!(
            strict["$defs"]["Status"],
            json!({"type": "string", "enum": ["Draft", "Final"]})
        );
        let shape = &strict["$defs"]["Shape"];
        assert!(shape.get("oneOf").is_none(), "{shape}");
        let branches = shape["anyOf"].as_array().expect("anyOf");
        assert_eq!(branches.len(), 2);
        assert_eq!(
            branches[0]["properties"]["kind"],
            json!({"type": "string", "enum": ["Circle"]})
        );
    }

    #[test]
    fn refs_with_a_description_are_inlined_and_bare_refs_are_kept() {
        let schema = json!({
            "type": "object",
            "properties": {
                "home": {"$ref": "#/$defs/Place", "description": "Where they live."},
                "work": {"$ref": "#/$defs/Place"},
            },
            "required": ["home", "work"],
            "$defs": {"Place": {"type": "object", "properties": {"city": {"type": "string", "default": "Oslo"}}}},
        });
        let strict = openai_strict(&schema).unwrap();
        assert_eq!(
            strict["properties"]["home"],
            json!({"type": "object", "description": "Where they live.",
                   "properties": {"city": {"type": ["string", "null"]}},
                   "required": ["city"], "additionalProperties": false})
        );
        assert_eq!(
            strict["properties"]["work"],
            json!({"$ref": "#/$defs/Place"})
        );
        assert_eq!(strict["$defs"]["Place"]["required"], json!(["city"]));
    }

    #[test]
    fn a_recursive_type_keeps_its_refs() {
        #[allow(dead_code)]
        #[derive(JsonSchema)]
        struct Tree {
            label: String,
            /// Children.
            children: Vec<Tree>,
            /// The first child.
            first: Option<Box<Tree>>,
        }
        let strict = openai_strict(&crate::schema_for::<Tree>()).expect("recursion is allowed");
        let mut required: Vec<&str> = strict["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        assert_eq!(required, ["children", "first", "label"]);
        assert_eq!(
            strict["properties"]["children"]["items"],
            json!({"$ref": "#"})
        );
    }

    #[test]
    fn shapes_strict_mode_cannot_express_are_refused_with_the_place() {
        assert_eq!(
            openai_strict(&json!({"type": "string"})).unwrap_err(),
            "the root must be an object, but the schema's type is \"string\""
        );
        let map = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "integer"}}}});
        assert_eq!(
            openai_strict(&map).unwrap_err(),
            "`#/properties/m` is a map (an object with `additionalProperties`), which strict mode does not support"
        );
        let any = json!({"type": "object", "properties": {"raw": true}});
        assert!(
            openai_strict(&any)
                .unwrap_err()
                .starts_with("`#/properties/raw` allows a value of any shape")
        );
        let all_of = json!({"type": "object", "allOf": [{"required": ["a"]}, {"required": ["b"]}]});
        assert!(
            openai_strict(&all_of)
                .unwrap_err()
                .contains("`allOf` with several schemas")
        );
    }

    #[test]
    fn a_strict_schema_still_accepts_what_the_type_serializes_to_once_nulls_are_allowed() {
        let strict = strict_report();
        let reply = json!({
            "title": "T", "confidence": null, "author": null, "people": [{"name": "A", "age": null}],
            "tags": null, "status": "Final", "shape": {"kind": "Circle", "radius": 1.0},
        });
        assert_eq!(validate(&reply, &strict), Ok(()));
    }

    #[test]
    fn a_schema_nested_ten_thousand_deep_is_refused_not_a_stack_overflow() {
        // Built by moving each level into the next (`json!` would copy it, recursively).
        let mut schema = json!({"type": "object", "properties": {}});
        for _ in 0..10_000 {
            let mut level = json!({"type": "object", "properties": {}, "required": ["a"]});
            level["properties"]
                .as_object_mut()
                .expect("an object")
                .insert("a".into(), schema);
            schema = level;
        }
        let error = openai_strict(&schema).expect_err("too deep");
        assert!(error.contains("nested more than 128"), "{error}");
        // Dropping a Value recurses: free the schema level by level.
        let mut next = Some(schema);
        while let Some(mut level) = next.take() {
            next = level
                .get_mut("properties")
                .and_then(|p| p.get_mut("a"))
                .map(Value::take);
        }
    }
}
