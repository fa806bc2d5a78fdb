//! Structured output: the schema goes out natively, bad replies get one retry that shows
//! the model the error, and a second failure carries the raw reply.

mod common;

use common::{bodies, server};
use graphkit_llm::{ChatModel, LlmError, Message, OpenAiModel, ScriptedModel};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

/// A city and its population.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct City {
    name: String,
    population: u64,
}

fn completion(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-s", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }))
}

#[tokio::test]
async fn openai_structured_output_sends_response_format_json_schema() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(completion(r#"{"name": "Oslo", "population": 700000}"#))
        .mount(&server)
        .await;
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
async fn an_invalid_reply_is_retried_once_with_the_error_shown_to_the_model() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(completion(r#"{"name": "Oslo"}"#))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(completion(r#"{"name": "Oslo", "population": 1}"#))
        .mount(&server)
        .await;
    let city = OpenAiModel::compatible(server.uri(), "m")
        .with_structured_output::<City>()
        .invoke(&[Message::user("?")])
        .await
        .expect("second reply parses");
    assert_eq!(city.population, 1);
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    let retry = sent[1]["messages"].as_array().expect("messages");
    assert_eq!(retry.len(), 3, "question, bad reply, correction");
    assert_eq!(
        retry[1],
        json!({"role": "assistant", "content": "{\"name\": \"Oslo\"}"})
    );
    let correction = retry[2]["content"].as_str().expect("text");
    assert!(
        correction.contains("missing field `population`"),
        "{correction}"
    );
    assert_eq!(sent[1]["response_format"], sent[0]["response_format"]);
}

#[tokio::test]
async fn a_second_invalid_reply_fails_with_the_raw_reply() {
    let model = ScriptedModel::new(["not json", "still not json"]);
    let err = model
        .clone()
        .with_structured_output::<City>()
        .invoke(&[Message::user("?")])
        .await
        .expect_err("invalid twice");
    match &err {
        LlmError::StructuredOutput { raw, type_name, .. } => {
            assert_eq!(raw, "still not json");
            assert!(type_name.ends_with("City"));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("raw reply: still not json"),
        "{err}"
    );
    assert_eq!(model.requests().len(), 2, "exactly one retry");
    assert!(
        model
            .requests()
            .iter()
            .all(|r| r.response_format.as_ref().is_some_and(|f| f.name == "City"))
    );
}
