//! Structured output: the schema goes out natively (in OpenAI strict mode on the OpenAI
//! API), every reply is checked against the schema and the validators, a rejected reply is
//! retried with the problems quoted to the model, and a model that never gets it right
//! ends with the last reply and problem after exactly the configured retries.

use crate::common;

use common::{bodies, server};
use graphkit_llm::checks::{required_headings, word_range};
use graphkit_llm::{ChatModel, LlmError, Message, OpenAiModel, ScriptedModel};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

/// A city and its population.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct City {
    name: String,
    population: u64,
}

/// A research report.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Report {
    /// What it is about.
    title: String,
    /// Free labels.
    #[serde(default)]
    tags: Vec<String>,
    /// Who wrote it, if anyone.
    author: Option<Author>,
    status: Status,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Author {
    name: String,
    orcid: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Status {
    Draft,
    Final,
}

/// A strict record: no other properties allowed.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
struct Point {
    x: i32,
    y: i32,
}

fn completion(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-s", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }))
}

/// A server answering with `replies` in order (the last one repeats).
async fn replying(replies: &[&str]) -> MockServer {
    let server = server().await;
    for (i, reply) in replies.iter().enumerate() {
        let mock = Mock::given(method("POST")).respond_with(completion(reply));
        let mock = if i + 1 < replies.len() {
            mock.up_to_n_times(1).with_priority(1)
        } else {
            mock
        };
        mock.mount(&server).await;
    }
    server
}

/// The OpenAI API itself (not a compatible server) at the mock's address.
fn openai_api(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("gpt-4o", "sk-test").with_base_url(server.uri())
}

#[tokio::test]
async fn openai_compatible_servers_get_the_plain_json_schema_without_strict() {
    let server = replying(&[r#"{"name": "Oslo", "population": 700000}"#]).await;
    let model = OpenAiModel::compatible(server.uri(), "m").with_structured_output::<City>();
    let city = model
        .invoke(&[Message::user("Biggest city in Norway?")])
        .await
        .expect("city");
    assert_eq!(
        city,
        City {
            name: "Oslo".into(),
            population: 700_000
        }
    );
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "City",
            "description": "A city and its population.",
            "schema": graphkit_llm::schema_for::<City>(),
        }})
    );
}

#[tokio::test]
async fn the_openai_api_gets_strict_mode_with_the_schema_rewritten_for_it() {
    let server = replying(&[
        r#"{"title": "T", "tags": null, "author": {"name": "Ada", "orcid": null}, "status": "final"}"#,
    ])
    .await;
    let report = openai_api(&server)
        .with_structured_output::<Report>()
        .invoke(&[Message::user("Write it.")])
        .await
        .expect("a strict reply with nulls for optional fields parses");
    assert_eq!(
        report,
        Report {
            title: "T".into(),
            tags: vec![],
            author: Some(Author {
                name: "Ada".into(),
                orcid: None
            }),
            status: Status::Final,
        }
    );
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {
            "name": "Report",
            "description": "A research report.",
            "strict": true,
            "schema": {
                "type": "object",
                "description": "A research report.",
                "properties": {
                    "title": {"type": "string", "description": "What it is about."},
                    "tags": {"type": ["array", "null"], "items": {"type": "string"}, "description": "Free labels."},
                    "author": {
                        "anyOf": [{"$ref": "#/$defs/Author"}, {"type": "null"}],
                        "description": "Who wrote it, if anyone.",
                    },
                    "status": {"$ref": "#/$defs/Status"},
                },
                "required": ["author", "status", "tags", "title"],
                "additionalProperties": false,
                "$defs": {
                    "Author": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "orcid": {"type": ["string", "null"]}},
                        "required": ["name", "orcid"],
                        "additionalProperties": false,
                    },
                    "Status": {"type": "string", "enum": ["draft", "final"]},
                },
            },
        }})
    );
}

#[tokio::test]
async fn strict_mode_can_be_turned_off_for_openai_and_on_for_a_compatible_server() {
    let server = replying(&[r#"{"name": "Oslo", "population": 1}"#]).await;
    openai_api(&server)
        .with_structured_output::<City>()
        .strict(false)
        .invoke(&[Message::user("?")])
        .await
        .expect("city");
    OpenAiModel::compatible(server.uri(), "m")
        .with_structured_output::<City>()
        .strict(true)
        .invoke(&[Message::user("?")])
        .await
        .expect("city");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["response_format"]["json_schema"].get("strict"),
        None
    );
    assert_eq!(
        sent[0]["response_format"]["json_schema"]["schema"],
        graphkit_llm::schema_for::<City>()
    );
    assert_eq!(
        sent[1]["response_format"]["json_schema"]["strict"],
        json!(true)
    );
    assert_eq!(
        sent[1]["response_format"]["json_schema"]["schema"]["properties"]["population"],
        json!({"type": "integer"}),
        "format and minimum are left out in strict mode"
    );
}

#[tokio::test]
async fn a_schema_strict_mode_cannot_express_goes_without_strict_unless_strict_is_forced() {
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Counts {
        by_word: std::collections::BTreeMap<String, u32>,
    }
    let server = replying(&[r#"{"by_word": {"a": 1}}"#]).await;
    let counts = openai_api(&server)
        .with_structured_output::<Counts>()
        .invoke(&[Message::user("?")])
        .await
        .expect("sent without strict");
    assert_eq!(counts.by_word["a"], 1);
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["response_format"]["json_schema"].get("strict"),
        None
    );

    let err = openai_api(&server)
        .with_structured_output::<Counts>()
        .strict(true)
        .invoke(&[Message::user("?")])
        .await
        .expect_err("a map cannot be strict");
    assert!(matches!(err, LlmError::InvalidRequest(_)), "{err:?}");
    assert!(
        err.to_string().contains("`#/properties/by_word` is a map"),
        "{err}"
    );
    assert_eq!(bodies(&server).await.len(), 1, "nothing was sent");
}

#[tokio::test]
async fn a_rejected_reply_is_retried_with_the_problem_quoted_to_the_model() {
    let server = replying(&[
        r#"{"name": "Oslo"}"#,
        r#"{"name": "Oslo", "population": 1}"#,
    ])
    .await;
    let city = OpenAiModel::compatible(server.uri(), "m")
        .with_structured_output::<City>()
        .invoke(&[Message::user("?")])
        .await
        .expect("second reply is accepted");
    assert_eq!(city.population, 1);
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    let retry = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(retry.len(), 3, "question, bad reply, correction");
    assert_eq!(
        retry[1],
        json!({"role": "assistant", "content": "{\"name\": \"Oslo\"}"})
    );
    assert_eq!(
        retry[2],
        json!({"role": "user", "content": "Your reply was not accepted:\n\
            - `$`: missing required property `population`\n\
            Reply again with only a JSON value that matches the schema `City`, with these problems fixed."})
    );
    assert_eq!(sent[1]["response_format"], sent[0]["response_format"]);
}

#[tokio::test]
async fn schema_violations_are_caught_before_serde_and_named_by_path() {
    let cases: [(&str, &str); 4] = [
        (
            r#"{"x": "1", "y": 2}"#,
            r#"`$.x`: expected integer, found string "1""#,
        ),
        (r#"{"x": 1}"#, "`$`: missing required property `y`"),
        (
            r#"{"x": 1, "y": 2, "z": 3}"#,
            "`$`: property `z` is not allowed; the allowed properties are `x`, `y`",
        ),
        (
            r#"[1, 2]"#,
            "`$`: expected object, found an array of 2 items",
        ),
    ];
    for (reply, problem) in cases {
        let model = ScriptedModel::new([reply]);
        let err = model
            .clone()
            .with_structured_output::<Point>()
            .retries(0)
            .invoke(&[Message::user("?")])
            .await
            .expect_err(reply);
        match err {
            LlmError::StructuredOutput {
                error,
                raw,
                attempts,
                ..
            } => {
                assert_eq!(error, problem, "{reply}");
                assert_eq!(raw, reply);
                assert_eq!(attempts, 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(model.requests().len(), 1, "retries(0) asks once");
    }
}

#[tokio::test]
async fn a_validator_that_never_passes_ends_after_exactly_n_retries_with_the_last_reply() {
    let replies: Vec<String> = (1..=5)
        .map(|i| json!({"title": format!("draft {i}"), "status": "draft"}).to_string())
        .collect();
    let model = ScriptedModel::new(replies.clone());
    let err = model
        .clone()
        .with_structured_output::<Report>()
        .retries(3)
        .validate(|r| word_range("title", &r.title, 5..=10))
        .validate(|r| {
            if r.status == Status::Final {
                Ok(())
            } else {
                Err("`status` must be \"final\"".into())
            }
        })
        .invoke(&[Message::user("Write it.")])
        .await
        .expect_err("never valid");
    assert_eq!(model.requests().len(), 4, "one call plus exactly 3 retries");
    assert_eq!(model.remaining(), 1);
    match &err {
        LlmError::StructuredOutput {
            raw,
            error,
            attempts,
            type_name,
        } => {
            assert_eq!(raw, &replies[3]);
            assert_eq!(
                error,
                "`title` has 2 words; it must have between 5 and 10 words; `status` must be \"final\""
            );
            assert_eq!(*attempts, 4);
            assert!(type_name.ends_with("Report"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("after 4 attempt(s)"), "{text}");
    assert!(
        text.ends_with(&format!("raw reply: {}", replies[3])),
        "{text}"
    );
    // Each retry shows the model its own previous reply and the validators' messages.
    let last = &model.requests()[3].messages;
    assert_eq!(last.len(), 1 + 2 * 3);
    assert_eq!(last[5].text(), replies[2]);
    assert!(
        last[6]
            .text()
            .contains("- `title` has 2 words; it must have between 5 and 10 words\n- `status` must be \"final\"\n"),
        "{}",
        last[6].text()
    );
}

#[tokio::test]
async fn validators_see_the_parsed_value_and_pass_a_good_reply() {
    #[derive(Debug, Deserialize, JsonSchema)]
    struct Writeup {
        body: String,
    }
    let good = json!({"body": "# Findings\nSome.\n\n## Sources\n- a"}).to_string();
    let model = ScriptedModel::new([json!({"body": "# Findings\nSome."}).to_string(), good]);
    let writeup = model
        .clone()
        .with_structured_output::<Writeup>()
        .validate(|w| required_headings("body", &w.body, &["Findings", "Sources"]))
        .invoke(&[Message::user("?")])
        .await
        .expect("second reply has both headings");
    assert!(writeup.body.contains("Sources"));
    let correction = model.requests()[1].messages[2].text().to_owned();
    assert!(
        correction.contains(
            "`body` lacks the Markdown heading(s) \"Sources\"; its headings are \"Findings\""
        ),
        "{correction}"
    );
}

#[tokio::test]
async fn invalid_json_is_quoted_and_the_default_is_one_retry() {
    let model = ScriptedModel::new(["not json", "still not json", "{}"]);
    let err = model
        .clone()
        .with_structured_output::<City>()
        .invoke(&[Message::user("?")])
        .await
        .expect_err("invalid twice");
    match &err {
        LlmError::StructuredOutput {
            raw,
            error,
            attempts,
            ..
        } => {
            assert_eq!(raw, "still not json");
            assert!(
                error.starts_with("the reply is not valid JSON: expected value at line 1 column 1"),
                "{error}"
            );
            assert_eq!(*attempts, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(graphkit_llm::DEFAULT_RETRIES, 1);
    assert_eq!(model.requests().len(), 2, "exactly one retry by default");
    assert!(
        model
            .requests()
            .iter()
            .all(|r| r.response_format.as_ref().is_some_and(|f| f.name == "City"))
    );
}

#[tokio::test]
async fn schema_validation_can_be_turned_off_for_hand_written_schemas() {
    /// A type whose hand-written schema lies (says string, serde reads a number).
    #[derive(Debug, Deserialize)]
    struct Odd(u8);
    impl JsonSchema for Odd {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Odd".into()
        }
        fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({"type": "string"})
        }
    }
    let rejected = ScriptedModel::new(["7"])
        .with_structured_output::<Odd>()
        .retries(0)
        .invoke(&[Message::user("?")])
        .await;
    assert!(rejected.is_err());
    let odd = ScriptedModel::new(["7"])
        .with_structured_output::<Odd>()
        .schema_validation(false)
        .invoke(&[Message::user("?")])
        .await
        .expect("serde alone decides");
    assert_eq!(odd.0, 7);
}

/// A mood, as a plain string enum.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Mood {
    Happy,
    Sad,
}

#[tokio::test]
async fn a_type_that_is_not_an_object_is_asked_for_as_the_value_of_one() {
    let model = ScriptedModel::new([
        r#"{"value": ["lions", "owls"]}"#,
        r#"{"value": 3}"#,
        r#"{"value": "sad"}"#,
        r#"["owls"]"#,
    ]);
    let ask = [Message::user("?")];
    let list: Vec<String> = model
        .clone()
        .with_structured_output()
        .invoke(&ask)
        .await
        .unwrap();
    assert_eq!(list, ["lions", "owls"]);
    let count: usize = model
        .clone()
        .with_structured_output()
        .invoke(&ask)
        .await
        .unwrap();
    assert_eq!(count, 3);
    let mood: Mood = model
        .clone()
        .with_structured_output()
        .invoke(&ask)
        .await
        .unwrap();
    assert_eq!(mood, Mood::Sad);
    // The schema sent is an object with the type's schema as its `value`.
    let format = model.requests()[0].response_format.clone().unwrap();
    assert_eq!(format.schema["type"], "object");
    assert_eq!(format.schema["required"], json!(["value"]));
    assert_eq!(format.schema["properties"]["value"]["type"], "array");
    // A reply that gives the bare value is taken as it.
    let again: Vec<String> = model
        .clone()
        .with_structured_output()
        .invoke(&ask)
        .await
        .unwrap();
    assert_eq!(again, ["owls"]);
}
