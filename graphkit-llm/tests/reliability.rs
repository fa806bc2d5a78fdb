//! Concurrency limit, requests-per-minute limit, cancellation, and accounting.

use crate::common;

use std::time::Duration;

use common::{bodies, server};
use graphkit_llm::{
    AssistantMessage, ChatModel, ClientOptions, FunctionModel, LlmError, Message, OpenAiModel,
    PriceTable, ScriptedModel, ToolCall, Usage, UsageMeter,
};
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

fn ok(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }))
}

#[tokio::test]
async fn dropping_a_call_cancels_it_and_frees_its_concurrency_slot() {
    let server = server().await;
    // The first request hangs for a minute; later ones answer at once.
    Mock::given(method("POST"))
        .respond_with(ok("slow").set_delay(Duration::from_secs(60)))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("fast"))
        .mount(&server)
        .await;

    let model = OpenAiModel::compatible(server.uri(), "m")
        .with_client_options(ClientOptions::default().max_concurrency(1));
    let history = [Message::user("x")];
    let abandoned = tokio::time::timeout(Duration::from_millis(300), model.invoke(&history)).await;
    assert!(
        abandoned.is_err(),
        "the slow call was still running and is now dropped"
    );
    // With one slot, this call can only run because dropping the first released it.
    let reply = tokio::time::timeout(Duration::from_secs(30), model.invoke(&history))
        .await
        .expect("the slot was released")
        .expect("reply");
    assert_eq!(reply.content, "fast");
}

#[tokio::test]
async fn requests_per_minute_limit_holds_back_the_second_call() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ok("hi"))
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(server.uri(), "m")
        .with_client_options(ClientOptions::default().requests_per_minute(1));
    let history = [Message::user("x")];
    model
        .invoke(&history)
        .await
        .expect("first call is within the limit");
    let second = tokio::time::timeout(Duration::from_millis(500), model.invoke(&history)).await;
    assert!(
        second.is_err(),
        "a second request in the same minute must wait"
    );
    assert_eq!(bodies(&server).await.len(), 1, "and it was never sent");
}

#[tokio::test]
async fn a_usage_meter_totals_calls_per_model_with_costs() {
    let server = server().await;
    Mock::given(method("POST"))
        .respond_with(ok("hi"))
        .mount(&server)
        .await;
    let meter = UsageMeter::with_prices(PriceTable::new().with("m", 1.0, 2.0));
    let remote = meter.meter(OpenAiModel::compatible(server.uri(), "m"));
    let scripted = meter.meter(
        ScriptedModel::new([AssistantMessage {
            usage: Some(Usage {
                input_tokens: 3,
                output_tokens: 4,
            }),
            ..AssistantMessage::text("a")
        }])
        .with_name("fake"),
    );
    let history = [Message::user("x")];
    remote.invoke(&history).await.expect("1");
    remote
        .stream(&history)
        .await
        .expect("stream")
        .final_message()
        .await
        .expect_err("mock sends JSON, not SSE");
    scripted.invoke(&history).await.expect("2");
    scripted
        .invoke(&history)
        .await
        .expect_err("script exhausted");

    let per_model = meter.per_model();
    let m = &per_model["m"];
    assert_eq!((m.calls, m.failures), (1, 1));
    assert_eq!(
        m.usage,
        Usage {
            input_tokens: 10,
            output_tokens: 2
        }
    );
    assert_eq!(m.cost, Some((10.0 * 1.0 + 2.0 * 2.0) / 1_000_000.0));
    let fake = &per_model["fake"];
    assert_eq!(
        (fake.calls, fake.failures, fake.usage.total(), fake.cost),
        (1, 1, 7, None)
    );
    let all = meter.totals();
    assert_eq!((all.calls, all.failures, all.usage.total()), (2, 2, 19));
}

#[tokio::test]
async fn function_model_sees_the_conversation_and_can_call_tools() {
    let model = FunctionModel::from_tool_calls(|messages| {
        if messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            vec![]
        } else {
            vec![ToolCall::new("lookup", json!({"n": messages.len()}))]
        }
    });
    let first = model.invoke(&[Message::user("q")]).await.expect("first");
    assert_eq!(first.tool_calls[0].arguments, json!({"n": 1}));
    let call_id = first.tool_calls[0].id.clone();
    let second = model
        .invoke(&[
            Message::user("q"),
            first.into(),
            Message::tool_result(call_id, "42"),
        ])
        .await
        .expect("second");
    assert!(second.tool_calls.is_empty());
    assert_eq!(second.content, "42");

    let failing =
        FunctionModel::new(|_| Err(LlmError::Function("no answer for this input".into())));
    let err = failing
        .invoke(&[Message::user("q")])
        .await
        .expect_err("fails");
    assert!(err.to_string().contains("no answer for this input"));
}
