//! Against a real model server: llama.cpp with a small model, started by
//! `shared/tools/local-llm/start.sh PORT`, its base URL in `GRAPHKIT_TEST_LLM_URL`
//! (e.g. `http://127.0.0.1:8091/v1`). Without the variable every test prints why it
//! skips and passes. Assertions are on shape, never on wording: the model is tiny.

use futures::StreamExt;
use graphkit_llm::{
    AnthropicModel, AssistantMessage, CallOptions, ChatModel, ChatRequest, ClientOptions, LlmError,
    Message, OpenAiModel, ResponseFormat, ToolChoice, ToolSpec,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn server_url(test: &str) -> Option<String> {
    let url = std::env::var("GRAPHKIT_TEST_LLM_URL")
        .ok()
        .filter(|u| !u.trim().is_empty());
    if url.is_none() {
        // Written to the real stderr, past the test harness's capture, so the reason shows.
        let reason = format!(
            "skipped {test}: GRAPHKIT_TEST_LLM_URL is not set \
             (start shared/tools/local-llm/start.sh PORT and export the URL it prints)\n"
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), reason.as_bytes());
    }
    url
}

fn options() -> ClientOptions {
    ClientOptions::default()
        .timeout(std::time::Duration::from_secs(300))
        .max_retries(1)
}

fn openai(url: &str) -> OpenAiModel {
    OpenAiModel::compatible(url, "smollm2").with_client_options(options())
}

fn deterministic(max_tokens: u32) -> CallOptions {
    CallOptions::new().temperature(0.0).max_tokens(max_tokens)
}

#[tokio::test]
async fn openai_compatible_plain_reply_has_text_usage_and_a_finish_reason() {
    let Some(url) = server_url("plain reply") else {
        return;
    };
    let reply = openai(&url)
        .with_options(deterministic(16))
        .invoke(&[
            Message::system("Answer briefly."),
            Message::user("Say hello."),
        ])
        .await
        .expect("reply");
    assert!(!reply.content.trim().is_empty());
    assert!(reply.tool_calls.is_empty());
    let usage = reply.usage.expect("usage");
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0 && usage.output_tokens <= 16,
        "{usage:?}"
    );
    assert!(matches!(
        reply.finish_reason.as_deref(),
        Some("stop" | "length")
    ));
}

#[tokio::test]
async fn openai_compatible_streamed_reply_assembles_its_chunks() {
    let Some(url) = server_url("streamed reply") else {
        return;
    };
    let mut stream = openai(&url)
        .with_options(deterministic(12))
        .stream(&[Message::user("Count to five.")])
        .await
        .expect("stream");
    let mut text = String::new();
    let mut chunks = 0;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.expect("chunk");
        text.push_str(&chunk.content);
        chunks += 1;
    }
    assert!(chunks > 2, "tokens arrive as separate chunks, got {chunks}");
    assert!(!text.is_empty());

    let message = openai(&url)
        .with_options(deterministic(12))
        .stream(&[Message::user("Count to five.")])
        .await
        .expect("stream")
        .final_message()
        .await
        .expect("message");
    assert!(!message.content.is_empty());
    assert!(
        message.usage.is_some_and(|u| u.output_tokens > 0),
        "usage arrives in the last chunk"
    );
    assert!(message.finish_reason.is_some());
}

fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Get the current weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    )
}

/// A forced tool call: `tool_choice: required` plus the `<tool_call>` prefill the server's
/// README documents, since a 135M model does not decide to call tools on its own.
fn forced_tool_request() -> ChatRequest {
    ChatRequest::new(vec![
        Message::user("What is the weather in Oslo?"),
        AssistantMessage::text("<tool_call>\n").into(),
    ])
    .with_tools([weather_tool()])
    .with_options(deterministic(64).tool_choice(ToolChoice::Required))
}

#[tokio::test]
async fn openai_compatible_forced_tool_call_is_well_formed() {
    let Some(url) = server_url("forced tool call") else {
        return;
    };
    let reply = openai(&url)
        .invoke_request(forced_tool_request())
        .await
        .expect("reply");
    assert!(!reply.tool_calls.is_empty(), "{reply:?}");
    for call in &reply.tool_calls {
        assert_eq!(call.name, "get_weather");
        assert!(!call.id.is_empty());
        assert!(call.arguments.is_object(), "{:?}", call.arguments);
    }

    let streamed = openai(&url)
        .stream_request(forced_tool_request())
        .await
        .expect("stream")
        .final_message()
        .await
        .expect("message");
    assert!(
        !streamed.tool_calls.is_empty(),
        "tool-call deltas assemble: {streamed:?}"
    );
    assert!(
        streamed
            .tool_calls
            .iter()
            .all(|c| c.name == "get_weather" && c.arguments.is_object())
    );
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mood {
    Happy,
    Sad,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)] // parsing into the type is the check
struct Feeling {
    mood: Mood,
    confident: bool,
}

#[tokio::test]
async fn openai_compatible_json_schema_output_parses_into_a_struct() {
    let Some(url) = server_url("structured output") else {
        return;
    };
    let model = openai(&url)
        .with_options(deterministic(64))
        .with_structured_output::<Feeling>();
    let (feeling, raw) = model
        .invoke_with_raw(&[Message::user("I won the lottery! How do I feel?")])
        .await
        .expect("typed reply");
    assert!(matches!(feeling.mood, Mood::Happy | Mood::Sad));
    assert!(raw.content.trim_start().starts_with('{'), "{}", raw.content);
}

/// A note with an optional field and a defaulted list, so strict mode has work to do.
#[allow(dead_code)] // parsing into the type is the check
#[derive(Debug, Deserialize, JsonSchema)]
struct Note {
    mood: Mood,
    reason: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[tokio::test]
async fn a_strict_mode_schema_is_accepted_by_a_real_server_and_replies_are_validated() {
    let Some(url) = server_url("strict structured output") else {
        return;
    };
    let result = openai(&url)
        .with_options(deterministic(96))
        .with_structured_output::<Note>()
        .strict(true)
        .retries(1)
        .validate(|note| {
            if note.tags.len() <= 5 {
                Ok(())
            } else {
                Err("`tags` must have at most 5 items".into())
            }
        })
        .invoke(&[Message::user("I won the lottery! Describe my mood.")])
        .await;
    match result {
        Ok(note) => assert!(matches!(note.mood, Mood::Happy | Mood::Sad)),
        // A 135M model may ramble past the validator; then exactly two calls were made.
        Err(LlmError::StructuredOutput { attempts, .. }) => assert_eq!(attempts, 2),
        Err(other) => panic!("the server should accept the strict schema: {other}"),
    }
}

#[tokio::test]
async fn openai_compatible_error_reply_is_an_http_error_with_the_servers_message() {
    let Some(url) = server_url("error reply") else {
        return;
    };
    let mut request = ChatRequest::new(vec![Message::user("x")]).with_options(deterministic(2));
    request.response_format = Some(ResponseFormat {
        name: "broken".into(),
        description: None,
        schema: json!({"type": "nonsense"}),
        strict: None,
    });
    let err = openai(&url)
        .invoke_request(request)
        .await
        .expect_err("the server rejects the schema");
    assert!(matches!(err, LlmError::Http { status: 400, .. }), "{err:?}");
    assert!(err.to_string().contains("nonsense"), "{err}");

    let err = OpenAiModel::compatible(format!("{}/no-such-prefix", url.trim_end_matches('/')), "m")
        .invoke(&[Message::user("x")])
        .await
        .expect_err("wrong path");
    assert!(matches!(err, LlmError::Http { status: 404, .. }), "{err:?}");
}

fn anthropic(url: &str) -> AnthropicModel {
    let host = url.trim_end_matches('/').trim_end_matches("/v1");
    AnthropicModel::new("smollm2", "not-checked-by-the-local-server")
        .with_base_url(host)
        .with_client_options(options())
}

#[tokio::test]
async fn anthropic_provider_plain_and_streamed_replies() {
    let Some(url) = server_url("anthropic provider") else {
        return;
    };
    let history = [
        Message::system("Answer briefly."),
        Message::user("Say hello."),
    ];
    let reply = anthropic(&url)
        .with_options(deterministic(16))
        .invoke(&history)
        .await
        .expect("reply");
    assert!(!reply.content.is_empty());
    assert!(reply.usage.is_some_and(|u| u.output_tokens > 0));
    assert!(matches!(
        reply.finish_reason.as_deref(),
        Some("end_turn" | "max_tokens")
    ));

    let streamed = anthropic(&url)
        .with_options(deterministic(8))
        .stream(&history)
        .await
        .expect("stream")
        .final_message()
        .await
        .expect("message");
    assert!(!streamed.content.is_empty());
    assert!(streamed.finish_reason.is_some());
}
