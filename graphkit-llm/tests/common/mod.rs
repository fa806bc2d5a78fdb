//! Helpers shared by the provider tests: a mock server on 127.0.0.1 and request capture.
#![allow(dead_code)]

use std::time::Duration;

use graphkit_llm::ClientOptions;
use serde_json::Value;
use wiremock::{MockServer, ResponseTemplate};

/// A mock server on 127.0.0.1 (wiremock binds loopback only).
pub async fn server() -> MockServer {
    MockServer::start().await
}

/// The JSON bodies of every request the server received, in order.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("request body is JSON"))
        .collect()
}

/// The only request body the server received.
pub async fn only_body(server: &MockServer) -> Value {
    let mut all = bodies(server).await;
    assert_eq!(all.len(), 1, "expected exactly one request, got {all:?}");
    all.remove(0)
}

/// A `text/event-stream` response with these `data:` payloads (one event each).
pub fn sse<I: IntoIterator<Item = S>, S: AsRef<str>>(payloads: I) -> ResponseTemplate {
    let body: String = payloads
        .into_iter()
        .map(|p| format!("data: {}\n\n", p.as_ref()))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// A `text/event-stream` response with named events (`event:` + `data:`), as Anthropic sends.
pub fn named_sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Client options for tests: fast retries so failure paths finish quickly.
pub fn fast_retries(retries: usize) -> ClientOptions {
    ClientOptions::default()
        .max_retries(retries)
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .timeout(Duration::from_secs(20))
}
