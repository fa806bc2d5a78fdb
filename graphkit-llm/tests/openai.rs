//! The OpenAI chat-completions provider against a local mock server that answers with
//! the documented response shapes; each test asserts the exact request body sent.

use crate::common;

use std::time::Duration;

use common::{bodies, fast_retries, only_body, server, sse};
use futures::StreamExt;
use graphkit_llm::{
    AssistantMessage, CallOptions, ChatModel, ChatRequest, ClientOptions, LlmError, Message,
    OpenAiModel, ToolCall, ToolChoice, ToolSpec,
};
use schemars::JsonSchema;
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, ResponseTemplate};

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    })
}

#[derive(JsonSchema)]
#[allow(dead_code)]
struct WeatherArgs {
    /// City name.
    city: String,
}

#[tokio::test]
async fn plain_reply_sends_the_documented_body_and_reads_text_and_usage() {
    let server = server().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-test"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": "Hello!"}),
            "stop",
        )))
        .mount(&server)
        .await;

    let model = OpenAiModel::new("gpt-4o", "sk-test")
        .with_base_url(format!("{}/v1/", server.uri()))
        .with_options(
            CallOptions::new()
                .temperature(0.0)
                .max_tokens(64)
                .stop("END"),
        );
    let reply = model
        .invoke(&[Message::system("Be brief."), Message::user("Hi")])
        .await
        .expect("reply");

    assert_eq!(reply.content, "Hello!");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        reply.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((12, 5))
    );
    assert_eq!(reply.response_id.as_deref(), Some("chatcmpl-123"));
    assert!(
        reply.id.starts_with("msg_"),
        "our own id, not the provider's"
    );
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Hi"},
            ],
            "temperature": 0.0,
            "max_completion_tokens": 64,
            "stop": ["END"],
        })
    );
}

#[tokio::test]
async fn tool_calls_are_offered_parsed_and_sent_back_in_wire_format() {
    let server = server().await;
    let reply = completion(
        json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Rome\"}"}},
            ],
        }),
        "tool_calls",
    );
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .mount(&server)
        .await;

    let tool = ToolSpec::from_args::<WeatherArgs>("weather", "Current weather.");
    let model =
        OpenAiModel::compatible(format!("{}/v1", server.uri()), "local").bind_tools([tool.clone()]);
    let earlier_call = ToolCall::new("weather", json!({"city": "Paris"})).with_id("call_0");
    let history = vec![
        Message::user("Weather in Paris, then Oslo and Rome?"),
        AssistantMessage::with_tool_calls("", vec![earlier_call]).into(),
        Message::tool_result("call_0", "sunny"),
    ];
    let request = ChatRequest::new(history)
        .with_options(CallOptions::new().tool_choice(ToolChoice::Required));
    let reply = model.invoke_request(request).await.expect("reply");

    assert_eq!(reply.content, "");
    let calls: Vec<_> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments["city"].clone()))
        .collect();
    assert_eq!(
        calls,
        [("call_a", json!("Oslo")), ("call_b", json!("Rome"))]
    );
    assert_eq!(
        only_body(&server).await,
        json!({
            "model": "local",
            "messages": [
                {"role": "user", "content": "Weather in Paris, then Oslo and Rome?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Paris\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "weather",
                "description": "Current weather.",
                "parameters": tool.parameters,
            }}],
            "tool_choice": "required",
        })
    );
}

#[tokio::test]
async fn streamed_chunks_with_tool_call_deltas_assemble_into_one_message() {
    let server = server().await;
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "gpt-4o",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        .to_string()
    };
    let events = vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": "Checking"}), Value::Null),
        chunk(json!({"content": " now."}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "weather", "arguments": ""}}]}),
            Value::Null,
        ),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"ci"}}]}), Value::Null),
        chunk(json!({"tool_calls": [{"index": 0, "function": {"arguments": "ty\": \"Oslo\"}"}}]}), Value::Null),
        chunk(json!({}), json!("tool_calls")),
        json!({"id": "chatcmpl-9", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": [],
               "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}})
        .to_string(),
        "[DONE]".to_string(),
    ];
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(events))
        .mount(&server)
        .await;

    let model = OpenAiModel::new("gpt-4o", "sk-test").with_base_url(format!("{}/v1", server.uri()));
    let mut stream = model
        .stream(&[Message::user("Weather in Oslo?")])
        .await
        .expect("stream");
    let mut text = String::new();
    let mut pieces = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        text.push_str(&chunk.content);
        pieces += chunk.tool_calls.len();
    }
    assert_eq!(text, "Checking now.");
    assert_eq!(pieces, 3, "the tool call arrived in three pieces");

    let mut stream = model
        .stream(&[Message::user("Weather in Oslo?")])
        .await
        .expect("stream");
    let id = stream.message_id().to_owned();
    let first = stream.next().await;
    assert!(first.is_some());
    let message = stream.final_message().await.expect("message");
    assert_eq!(message.id, id);
    assert_eq!(message.content, "Checking now.");
    assert_eq!(
        message.tool_calls,
        vec![ToolCall::new("weather", json!({"city": "Oslo"})).with_id("call_x")]
    );
    assert_eq!(message.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(message.usage.map(|u| u.total()), Some(29));

    let body = &bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "gpt-4o",
            "messages": [{"role": "user", "content": "Weather in Oslo?"}],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn rate_limited_call_waits_as_retry_after_says_then_succeeds() {
    let server = server().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
                ),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            json!({"role": "assistant", "content": "ok"}),
            "stop",
        )))
        .mount(&server)
        .await;

    // A one-hour backoff: only the server's `Retry-After: 0` lets this finish at all.
    let options = ClientOptions::default()
        .max_retries(2)
        .backoff(Duration::from_secs(3600), Duration::from_secs(3600));
    let model =
        OpenAiModel::compatible(format!("{}/v1", server.uri()), "m").with_client_options(options);
    let reply = tokio::time::timeout(
        Duration::from_secs(30),
        model.invoke(&[Message::user("hi")]),
    )
    .await
    .expect("Retry-After was not honoured")
    .expect("reply after retry");
    assert_eq!(reply.content, "ok");
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0], sent[1], "the retry sends the same body");
}

#[tokio::test]
async fn server_errors_are_retried_then_reported_with_the_servers_message() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(500)
                .set_body_json(json!({"error": {"message": "The server had an error"}})),
        )
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(format!("{}/v1", server.uri()), "m")
        .with_client_options(fast_retries(2));
    let err = model
        .invoke(&[Message::user("hi")])
        .await
        .expect_err("500 forever");
    assert!(matches!(err, LlmError::Http { status: 500, .. }), "{err:?}");
    assert!(err.to_string().contains("The server had an error"), "{err}");
    assert_eq!(
        bodies(&server).await.len(),
        3,
        "one attempt and two retries"
    );
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": {"message": "Incorrect API key provided"}})),
        )
        .mount(&server)
        .await;
    let model = OpenAiModel::new("gpt-4o", "sk-bad")
        .with_base_url(server.uri())
        .with_client_options(fast_retries(3));
    let err = model.invoke(&[Message::user("hi")]).await.expect_err("401");
    let text = err.to_string();
    assert!(
        text.contains("401")
            && text.contains("Incorrect API key")
            && text.contains("check the API key"),
        "{text}"
    );
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn malformed_json_is_an_error_that_shows_the_raw_reply() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("{\"choices\": [oops", "application/json"),
        )
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(server.uri(), "m");
    let err = model
        .invoke(&[Message::user("hi")])
        .await
        .expect_err("malformed");
    assert!(matches!(err, LlmError::MalformedResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("{\"choices\": [oops"), "{err}");

    // Valid JSON in the wrong shape is malformed too.
    let server = common::server().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"object": "chat.completion"})),
        )
        .mount(&server)
        .await;
    let err = OpenAiModel::compatible(server.uri(), "m")
        .invoke(&[Message::user("hi")])
        .await
        .expect_err("no choices");
    assert!(err.to_string().contains("no `choices[0]`"), "{err}");
}

#[tokio::test]
async fn a_stream_cut_before_done_is_an_error_not_a_short_reply() {
    let server = server().await;
    let piece = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
                       "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]});
    Mock::given(method("POST"))
        .respond_with(sse([piece.to_string()]))
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(server.uri(), "m");
    let stream = model
        .stream(&[Message::user("hi")])
        .await
        .expect("stream starts");
    let err = stream.final_message().await.expect_err("truncated");
    assert!(matches!(err, LlmError::StreamTruncated { .. }), "{err:?}");
    assert!(err.to_string().contains("[DONE]"), "{err}");
}

#[tokio::test]
async fn invalid_tool_arguments_are_reported_with_the_raw_text() {
    let server = server().await;
    let reply = completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{city: Oslo"}}]}),
        "tool_calls",
    );
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .mount(&server)
        .await;
    let err = OpenAiModel::compatible(server.uri(), "m")
        .invoke(&[Message::user("hi")])
        .await
        .expect_err("bad args");
    assert!(
        matches!(&err, LlmError::ToolArguments { name, raw, .. } if name == "weather" && raw == "{city: Oslo"),
        "{err:?}"
    );
}

#[tokio::test]
async fn openai_spec_without_a_key_names_the_variable() {
    if std::env::var_os("OPENAI_API_KEY").is_some() {
        println!("skipped: OPENAI_API_KEY is set in this environment");
        return;
    }
    let err = graphkit_llm::init_chat_model("openai:gpt-4o").expect_err("no key");
    assert!(matches!(
        err,
        LlmError::MissingApiKey {
            var: "OPENAI_API_KEY",
            ..
        }
    ));
    assert!(
        err.to_string()
            .contains("set the environment variable OPENAI_API_KEY"),
        "{err}"
    );
}

#[tokio::test]
async fn unreachable_server_is_a_connection_error_naming_the_url() {
    // Port 9 (discard) on loopback is closed on test machines; connecting fails at once.
    let model =
        OpenAiModel::compatible("http://127.0.0.1:9/v1", "m").with_client_options(fast_retries(1));
    let err = model
        .invoke(&[Message::user("hi")])
        .await
        .expect_err("nothing listens");
    assert!(matches!(err, LlmError::Connection { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("http://127.0.0.1:9/v1/chat/completions"),
        "{err}"
    );
}
