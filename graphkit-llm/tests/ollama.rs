//! The Ollama provider against a local mock server speaking `/api/chat`.

use crate::common;

use common::{fast_retries, only_body, server};
use graphkit_llm::{CallOptions, ChatModel, LlmError, Message, OllamaModel, ToolSpec};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use wiremock::matchers::{method, path};
use wiremock::{Mock, ResponseTemplate};

fn ndjson(lines: &[serde_json::Value]) -> ResponseTemplate {
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    ResponseTemplate::new(200).set_body_raw(body, "application/x-ndjson")
}

#[tokio::test]
async fn plain_reply_sends_options_and_stream_false() {
    let server = server().await;
    Mock::given(method("POST"))
        .and(path("/api/chat"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "qwen2.5", "created_at": "2025-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": "Hello."},
            "done": true, "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 3,
        })))
        .mount(&server)
        .await;
    let model = OllamaModel::new("qwen2.5", server.uri())
        .with_options(CallOptions::new().temperature(0.5).max_tokens(20));
    let reply = model.invoke(&[Message::user("Hi")]).await.expect("reply");
    assert_eq!(reply.content, "Hello.");
    assert_eq!(
        reply.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((11, 3))
    );
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "qwen2.5",
            "messages": [{"role": "user", "content": "Hi"}],
            "options": {"temperature": 0.5, "num_predict": 20},
            "stream": false,
        })
    );
}

#[tokio::test]
async fn tool_calls_arrive_with_object_arguments() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "qwen2.5", "message": {"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Oslo"}}}]},
            "done": true, "done_reason": "stop",
        })))
        .mount(&server)
        .await;
    let tool = ToolSpec::new("weather", "Weather.", json!({"type": "object"}));
    let reply = OllamaModel::new("qwen2.5", server.uri())
        .bind_tools([tool])
        .invoke(&[Message::user("Oslo?")])
        .await
        .expect("reply");
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert!(
        !reply.tool_calls[0].id.is_empty(),
        "a local id is made up when Ollama gives none"
    );
    let body = only_body(&server).await;
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "weather", "description": "Weather.", "parameters": {"type": "object"}}}])
    );
}

#[tokio::test]
async fn ndjson_stream_assembles_and_a_cut_stream_is_an_error() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ndjson(&[
            json!({"model": "m", "message": {"role": "assistant", "content": "Hel"}, "done": false}),
            json!({"model": "m", "message": {"role": "assistant", "content": "lo"}, "done": false}),
            json!({"model": "m", "message": {"role": "assistant", "content": "",
                "tool_calls": [{"function": {"name": "t", "arguments": {"x": 1}}}]}, "done": false}),
            json!({"model": "m", "message": {"role": "assistant", "content": ""}, "done": true,
                "done_reason": "stop", "prompt_eval_count": 7, "eval_count": 2}),
        ]))
        .mount(&server)
        .await;
    let message = OllamaModel::new("m", server.uri())
        .stream(&[Message::user("x")])
        .await
        .expect("stream")
        .final_message()
        .await
        .expect("message");
    assert_eq!(message.content, "Hello");
    assert_eq!(message.tool_calls[0].arguments, json!({"x": 1}));
    assert_eq!(message.usage.map(|u| u.total()), Some(9));
    assert_eq!(only_body(&server).await["stream"], json!(true));

    let server = common::server().await;
    Mock::given(method("POST"))
        .respond_with(ndjson(&[json!({"model": "m", "message": {"role": "assistant", "content": "Hel"}, "done": false})]))
        .mount(&server)
        .await;
    let err = OllamaModel::new("m", server.uri())
        .stream(&[Message::user("x")])
        .await
        .expect("starts")
        .final_message()
        .await
        .expect_err("cut");
    assert!(
        matches!(
            err,
            LlmError::StreamTruncated {
                provider: "ollama",
                ..
            }
        ),
        "{err:?}"
    );
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Answer {
    value: i64,
}

#[tokio::test]
async fn structured_output_sends_the_schema_as_format() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "m", "message": {"role": "assistant", "content": "{\"value\": 42}"}, "done": true,
        })))
        .mount(&server)
        .await;
    let answer = OllamaModel::new("m", server.uri())
        .with_structured_output::<Answer>()
        .invoke(&[Message::user("?")])
        .await
        .expect("answer");
    assert_eq!(answer, Answer { value: 42 });
    assert_eq!(
        only_body(&server).await["format"],
        graphkit_llm::schema_for::<Answer>()
    );
}

#[tokio::test]
async fn model_not_found_is_reported_with_ollamas_message() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(404)
                .set_body_json(json!({"error": "model \"nope\" not found, try pulling it first"})),
        )
        .mount(&server)
        .await;
    let err = OllamaModel::new("nope", server.uri())
        .with_client_options(fast_retries(2))
        .invoke(&[Message::user("x")])
        .await
        .expect_err("404");
    let text = err.to_string();
    assert!(
        text.contains("try pulling it first") && text.contains("check the model name"),
        "{text}"
    );
}
