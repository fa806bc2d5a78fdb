//! The Anthropic messages provider against a local mock server with the documented
//! response shapes; each test asserts the exact request sent.

use crate::common;

use common::{bodies, fast_retries, named_sse, only_body, server};
use graphkit_llm::{
    AnthropicModel, AssistantMessage, ChatModel, LlmError, Message, ToolCall, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

fn model(server: &wiremock::MockServer) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-20250514", "sk-ant-test").with_base_url(server.uri())
}

#[tokio::test]
async fn plain_reply_lifts_the_system_prompt_and_sends_required_headers() {
    let server = server().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-test"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "Hi there."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 21, "output_tokens": 4},
        })))
        .mount(&server)
        .await;

    let reply = model(&server)
        .invoke(&[Message::system("Be kind."), Message::user("Hello")])
        .await
        .expect("reply");
    assert_eq!(reply.content, "Hi there.");
    assert_eq!(reply.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(
        reply.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((21, 4))
    );
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 4096,
            "system": "Be kind.",
            "messages": [{"role": "user", "content": "Hello"}],
        })
    );
}

#[tokio::test]
async fn tool_use_round_trip_merges_parallel_results_into_one_user_turn() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_02", "type": "message", "role": "assistant", "model": "claude",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "toolu_9", "name": "search", "input": {"q": "rust"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 50, "output_tokens": 20},
        })))
        .mount(&server)
        .await;

    let tool = ToolSpec::new(
        "search",
        "Search.",
        json!({"type": "object", "properties": {"q": {"type": "string"}}}),
    );
    let calls = vec![
        ToolCall::new("search", json!({"q": "a"})).with_id("toolu_1"),
        ToolCall::new("search", json!({"q": "b"})).with_id("toolu_2"),
    ];
    let history = vec![
        Message::user("Find a and b."),
        AssistantMessage::with_tool_calls("", calls).into(),
        Message::tool_result("toolu_1", "found a"),
        Message::tool_error("toolu_2", "b timed out"),
    ];
    let reply = model(&server)
        .bind_tools([tool])
        .invoke(&history)
        .await
        .expect("reply");
    assert_eq!(reply.content, "Let me look.");
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall::new("search", json!({"q": "rust"})).with_id("toolu_9")]
    );
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "claude-sonnet-4-20250514",
            "max_tokens": 4096,
            "messages": [
                {"role": "user", "content": "Find a and b."},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "a"}},
                    {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": "b"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found a"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "b timed out", "is_error": true},
                ]},
            ],
            "tools": [{"name": "search", "description": "Search.",
                       "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}}}],
        })
    );
}

#[tokio::test]
async fn streamed_events_with_input_json_deltas_assemble_into_one_message() {
    let server = server().await;
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_s", "type": "message", "role": "assistant",
            "model": "claude", "content": [], "stop_reason": null, "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "On it"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_s", "name": "search", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"rust\"}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 15}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    Mock::given(method("POST"))
        .respond_with(named_sse(&events))
        .mount(&server)
        .await;

    let stream = model(&server)
        .stream(&[Message::user("Search rust")])
        .await
        .expect("stream");
    let message = stream.final_message().await.expect("message");
    assert_eq!(message.content, "On it");
    assert_eq!(
        message.tool_calls,
        vec![ToolCall::new("search", json!({"q": "rust"})).with_id("toolu_s")]
    );
    assert_eq!(message.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(
        message.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((30, 15))
    );
    assert_eq!(only_body(&server).await["stream"], json!(true));
}

#[tokio::test]
async fn a_stream_without_message_stop_is_truncated() {
    let server = server().await;
    let events = [(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hal"}}),
    )];
    Mock::given(method("POST"))
        .respond_with(named_sse(&events))
        .mount(&server)
        .await;
    let err = model(&server)
        .stream(&[Message::user("x")])
        .await
        .expect("starts")
        .final_message()
        .await
        .expect_err("cut");
    assert!(matches!(err, LlmError::StreamTruncated { .. }), "{err:?}");
}

#[tokio::test]
async fn overloaded_is_retried_and_malformed_json_is_reported() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_json(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ))
        .mount(&server)
        .await;
    let err = model(&server)
        .with_client_options(fast_retries(1))
        .invoke(&[Message::user("x")])
        .await
        .expect_err("529");
    assert!(err.to_string().contains("HTTP 529: Overloaded"), "{err}");
    assert_eq!(bodies(&server).await.len(), 2);

    let server = common::server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("<html>", "text/html"))
        .mount(&server)
        .await;
    let err = model(&server)
        .invoke(&[Message::user("x")])
        .await
        .expect_err("html");
    assert!(
        matches!(
            err,
            LlmError::MalformedResponse {
                provider: "anthropic",
                ..
            }
        ),
        "{err:?}"
    );
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Person {
    name: String,
    age: u32,
}

#[tokio::test]
async fn structured_output_forces_a_tool_named_after_the_type() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_3", "type": "message", "role": "assistant", "model": "claude",
            "content": [{"type": "tool_use", "id": "toolu_p", "name": "Person", "input": {"name": "Ada", "age": 36}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 5},
        })))
        .mount(&server)
        .await;
    let person = model(&server)
        .with_structured_output::<Person>()
        .invoke(&[Message::user("Who?")])
        .await
        .expect("person");
    assert_eq!(
        person,
        Person {
            name: "Ada".into(),
            age: 36
        }
    );
    let body = only_body(&server).await;
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": "Person"})
    );
    assert_eq!(body["tools"][0]["name"], "Person");
    assert_eq!(
        body["tools"][0]["input_schema"],
        graphkit_llm::schema_for::<Person>()
    );
}

#[tokio::test]
async fn anthropic_spec_without_a_key_names_the_variable() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        println!("skipped: ANTHROPIC_API_KEY is set in this environment");
        return;
    }
    let err =
        graphkit_llm::init_chat_model("anthropic:claude-sonnet-4-20250514").expect_err("no key");
    assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
}
