//! A hostile or broken server cannot crash the client or make it hold unbounded data
//! (issue 18): huge `Retry-After` values, oversized replies, and stalled streams each end in
//! a clear error.

use crate::common;

use std::time::Duration;

use common::server;
use futures::StreamExt;
use graphkit_llm::{ChatModel, ClientOptions, LlmError, Message, OpenAiModel};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

fn history() -> [Message; 1] {
    [Message::user("x")]
}

#[tokio::test]
async fn a_retry_after_of_1e20_seconds_fails_the_call_instead_of_panicking() {
    for (header, value) in [
        ("retry-after", "1e20"),
        ("retry-after-ms", "1e300"),
        ("retry-after", "inf"),
    ] {
        let server = server().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(429).insert_header(header, value))
            .mount(&server)
            .await;
        let model = OpenAiModel::compatible(server.uri(), "m");
        let err = model.invoke(&history()).await.unwrap_err();
        assert!(
            matches!(err, LlmError::Http { status: 429, .. }),
            "{header}: {value}: {err}"
        );
        // Asked to wait longer than max_retry_after: not retried.
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_reply_above_the_size_limit_is_refused_with_a_clear_error() {
    let server = server().await;
    let big = "x".repeat(64 * 1024);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "c", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": big}, "finish_reason": "stop"}],
        })))
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(server.uri(), "m")
        .with_client_options(ClientOptions::default().max_response_bytes(16 * 1024));
    let err = model.invoke(&history()).await.unwrap_err();
    assert!(
        matches!(err, LlmError::ResponseTooLarge { limit: 16384, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("max_response_bytes"), "{err}");
}

#[tokio::test]
async fn a_streamed_reply_above_the_size_limit_stops_with_a_clear_error() {
    let server = server().await;
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {"content": "y".repeat(1000)}, "finish_reason": null}]});
    let body: String = std::iter::repeat_n(format!("data: {chunk}\n\n"), 100).collect();
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(body + "data: [DONE]\n\n"),
        )
        .mount(&server)
        .await;
    let model = OpenAiModel::compatible(server.uri(), "m")
        .with_client_options(ClientOptions::default().max_response_bytes(20 * 1024));
    let stream = model.stream(&history()).await.unwrap();
    let err = stream.final_message().await.unwrap_err();
    assert!(matches!(err, LlmError::ResponseTooLarge { .. }), "{err}");
}

/// A server on 127.0.0.1 that answers with stream headers and one chunk, then holds the
/// connection open without sending anything more.
async fn stalling_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("bound"));
    let task = tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        let mut request = vec![0u8; 64 * 1024];
        let _ = socket.read(&mut request).await;
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": "Hel"}, "finish_reason": null}]});
        let event = format!("data: {chunk}\n\n");
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
            event.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        // Hold the connection until the client gives up (the test ends the task).
        let _ = socket.read(&mut request).await;
    });
    (url, task)
}

#[tokio::test]
async fn a_stalled_stream_is_reported_as_a_timeout_not_a_decoding_error() {
    let (url, server) = stalling_server().await;
    let model = OpenAiModel::compatible(url, "m").with_client_options(
        ClientOptions::default()
            .timeout(Duration::from_millis(300))
            .max_retries(0),
    );
    let mut stream = model.stream(&history()).await.expect("headers arrive");
    let first = stream.next().await.expect("a first piece").expect("ok");
    assert_eq!(first.content, "Hel");
    let err = loop {
        match stream.next().await {
            Some(Ok(_)) => continue,
            Some(Err(err)) => break err,
            None => panic!("the stream ended without an error"),
        }
    };
    assert!(matches!(err, LlmError::StreamStalled { .. }), "{err}");
    assert!(err.to_string().contains("stalled"), "{err}");
    server.abort();
}
