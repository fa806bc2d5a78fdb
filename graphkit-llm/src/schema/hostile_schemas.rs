//! Random and adversarial schemas (issue 27): every call of the validator, the null
//! clean-up and the strict-mode rewrite returns, with a result or a clear refusal, within
//! its step budget, which is linear in the size of the value (validator, clean-up) or of
//! the schema (rewrite). Assertions are on outcomes and step counts, never on time.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::drop_optional_nulls_counting;
use super::strict::openai_strict_counting;
use super::validate::{TOO_COSTLY, step_budget, violations_within};

/// Nodes of a JSON document.
fn size(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(size).sum::<usize>(),
        _ => 1,
    }
}

/// Any JSON value, a few levels deep.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-z]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A reference into the schemas [`any_schema`] builds: the root, a definition (some
/// missing), or nonsense.
fn any_ref() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"$ref": "#"})),
        (0..4usize).prop_map(|i| json!({"$ref": format!("#/$defs/d{i}")})),
        Just(json!({"$ref": "#/properties/a"})),
        Just(json!({"$ref": "https://elsewhere.example/schema"})),
        Just(json!({"$ref": "#/$defs/d0", "description": "inlined by strict mode"})),
    ]
}

/// Random schemas: every keyword the code reads, self-references included.
fn any_schema() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!(true)),
        Just(json!(false)),
        Just(json!({})),
        prop_oneof![
            Just("object"),
            Just("array"),
            Just("string"),
            Just("integer"),
            Just("number"),
            Just("null"),
            Just("boolean")
        ]
        .prop_map(|t| json!({"type": t})),
        Just(json!({"enum": [1, "a", null]})),
        Just(json!({"const": {"a": 1}})),
        Just(json!({"type": ["string", "null"], "minLength": 1, "maxLength": 3})),
        Just(json!({"minimum": 0, "exclusiveMaximum": 10, "multipleOf": 2})),
        any_ref(),
    ];
    let node = leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|b| json!({"anyOf": b})),
            prop::collection::vec(inner.clone(), 0..6).prop_map(|b| json!({"oneOf": b})),
            prop::collection::vec(inner.clone(), 0..6).prop_map(|b| json!({"allOf": b})),
            inner.clone().prop_map(|s| json!({"not": s})),
            inner
                .clone()
                .prop_map(|s| json!({"type": "array", "items": s, "uniqueItems": true})),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({
                "type": "object",
                "properties": {"a": a, "b": b},
                "required": ["a"],
                "additionalProperties": false
            })),
            (inner.clone(), any_ref()).prop_map(|(s, r)| json!({"allOf": [s, r]})),
        ]
    });
    (node.clone(), prop::collection::vec(node, 0..4)).prop_map(|(root, defs)| {
        let mut root = match root {
            Value::Object(map) => map,
            other => [("anyOf".to_owned(), json!([other]))].into_iter().collect(),
        };
        let defs: serde_json::Map<String, Value> = defs
            .into_iter()
            .enumerate()
            .map(|(i, d)| (format!("d{i}"), d))
            .collect();
        root.insert("$defs".into(), Value::Object(defs));
        Value::Object(root)
    })
}

/// The adversarial shapes of the issue, at a given size.
fn adversarial(n: usize) -> Vec<Value> {
    let branches = vec![json!({"$ref": "#"}); n.clamp(2, 64)];
    let mut nested = json!({"type": "string"});
    for _ in 0..n {
        nested = json!({"type": "object", "properties": {"a": nested}});
    }
    let mut nested_any = json!(true);
    for _ in 0..n {
        nested_any = json!({"anyOf": [nested_any, {"$ref": "#"}]});
    }
    // Definitions that each refer to the next several times, with a description (so strict
    // mode inlines them): k^depth copies if nothing bounds it.
    let defs: serde_json::Map<String, Value> = (0..16)
        .map(|i| {
            let next = json!({"$ref": format!("#/$defs/d{}", i + 1), "description": "x"});
            (format!("d{i}"), json!({"anyOf": vec![next; 4]}))
        })
        .chain([("d16".to_owned(), json!({"type": "string"}))])
        .collect();
    vec![
        json!({"anyOf": branches}),
        json!({"allOf": vec![json!({"$ref": "#"}); n.clamp(2, 64)]}),
        json!({"oneOf": [{"$ref": "#"}, {"$ref": "#"}, {"not": {"$ref": "#"}}]}),
        nested,
        nested_any,
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/d0", "description": "x"}},
               "$defs": defs}),
        json!({"type": "object", "properties": {"wide": {"anyOf": vec![json!({"type": "integer"}); n * 8]}}}),
    ]
}

/// Runs all three on (`value`, `schema`) and checks outcomes and step counts.
fn check_bounded(value: &Value, schema: &Value) {
    let allowed = step_budget(value);
    let (violations, steps) = violations_within(value, schema, schema);
    assert!(steps <= allowed, "validate took {steps} > {allowed} steps");
    for violation in &violations {
        assert!(!violation.message.is_empty() && violation.path.starts_with('$'));
    }
    if steps == allowed && !violations.is_empty() {
        assert_eq!(violations.len(), 1);
        assert_eq!(violations[0].message, TOO_COSTLY);
    }

    let mut cleaned = value.clone();
    let steps = drop_optional_nulls_counting(&mut cleaned, schema);
    assert!(
        steps <= allowed,
        "drop_optional_nulls took {steps} > {allowed} steps"
    );
    assert!(size(&cleaned) <= size(value), "the clean-up only removes");

    let mut object_root = schema.clone();
    if let Value::Object(map) = &mut object_root {
        map.insert("type".into(), json!("object"));
    }
    for candidate in [schema, &object_root] {
        let strict_allowed = 10_000 + 64 * size(candidate);
        let (rewritten, steps) = openai_strict_counting(candidate);
        assert!(
            steps <= strict_allowed,
            "openai_strict took {steps} > {strict_allowed} steps"
        );
        match rewritten {
            Ok(strict) => assert!(strict.is_object()),
            Err(message) => assert!(
                message.len() < 600 && !message.is_empty(),
                "a refusal is one clear sentence: {message}"
            ),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_schemas_are_handled_within_their_budgets(
        schema in any_schema(),
        value in any_value(),
    ) {
        check_bounded(&value, &schema);
    }

    #[test]
    fn adversarial_schemas_are_handled_within_their_budgets(
        n in 1usize..120,
        value in any_value(),
    ) {
        for schema in adversarial(n) {
            check_bounded(&value, &schema);
        }
    }
}

#[test]
fn the_issue_27_schemas_are_refused_clearly() {
    let deep = json!({"a": {"a": {"a": {"a": {"a": 1}}}}});
    let (violations, _) = violations_within(
        &deep,
        &json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}),
        &json!({"anyOf": [{"$ref": "#"}, {"$ref": "#"}]}),
    );
    assert!(violations.iter().all(|v| !v.message.is_empty()));
    // Strict mode: 4 references a level, 16 levels: refused, not 4^16 copies.
    let schema = adversarial(1).remove(5);
    let (rewritten, steps) = openai_strict_counting(&schema);
    let refusal = rewritten.expect_err("too large to inline");
    assert!(
        refusal.contains("too large once its `$ref`s are inlined"),
        "{refusal}"
    );
    assert!(steps <= 10_000 + 64 * size(&schema));
}
