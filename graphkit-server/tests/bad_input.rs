//! Bad input gets the status codes the clients expect, with a JSON `detail`; an API key
//! refuses everything else with 401.

use crate::common;

use common::{TestServer, expect_json, user_input};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn malformed_and_mismatched_bodies_get_json_errors() {
    let s = TestServer::start_with(|server| server.body_limit(64 * 1024)).await;
    let thread = s.thread().await;
    let runs = format!("/threads/{thread}/runs/wait");

    let malformed = s
        .client
        .post(s.url(&runs))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    let body = expect_json(malformed, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("malformed")
    );

    let no_assistant = s
        .post_json(
            &runs,
            json!({"input": {}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    assert!(
        no_assistant["detail"]
            .as_str()
            .expect("detail")
            .contains("assistant_id")
    );
    s.post_json(
        &runs,
        json!({"assistant_id": "ghost", "input": {}}),
        StatusCode::NOT_FOUND,
    )
    .await;
    s.post_json(
        &runs,
        json!({"assistant_id": "00000000-0000-0000-0000-000000000000", "input": {}}),
        StatusCode::NOT_FOUND,
    )
    .await;
    let unknown_field = s
        .post_json(
            &runs,
            json!({"assistant_id": "agent", "input": {"mesages": []}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    assert!(
        unknown_field["detail"]
            .as_str()
            .expect("detail")
            .contains("mesages")
    );
    s.post_json(
        &runs,
        json!({"assistant_id": "agent", "input": {"sleep": "long"}}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.post_json(
        &runs,
        json!({"assistant_id": "agent", "input": [1, 2]}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.post_json(
        &runs,
        json!({"assistant_id": "agent", "input": {}, "stream_mode": "events"}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.post_json(
        &runs,
        json!({"assistant_id": "agent", "input": {}, "multitask_strategy": "sometimes"}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.post_json(
        &runs,
        json!({"assistant_id": "agent", "input": {}, "config": {"configurable": {"a": 1}}, "context": {"b": 2}}),
        StatusCode::BAD_REQUEST,
    )
    .await;
    s.post_json(
        "/runs/wait",
        json!({"assistant_id": "agent", "command": {"resume": "x"}}),
        StatusCode::BAD_REQUEST,
    )
    .await;
    s.post_json(
        "/threads/1234/runs",
        json!({"assistant_id": "agent"}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.get_json("/no/such/endpoint", StatusCode::NOT_FOUND).await;

    // Over the body limit: 413 with JSON.
    let big = "x".repeat(100 * 1024);
    let too_big = s
        .post(
            &runs,
            json!({"assistant_id": "agent", "input": user_input(&big, json!({}))}),
        )
        .await;
    let body = expect_json(too_big, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert!(body["detail"].as_str().expect("detail").contains("65536"));

    // Nothing of the above reached the thread.
    let runs_list = s
        .get_json(&format!("/threads/{thread}/runs"), StatusCode::OK)
        .await;
    assert_eq!(runs_list, json!([]));
    s.stop().await;
}

#[tokio::test]
async fn an_api_key_refuses_requests_without_it() {
    let s = TestServer::start_with(|server| server.api_key("sesame")).await;
    let refused = s.get("/ok").await;
    let body = expect_json(refused, StatusCode::UNAUTHORIZED).await;
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("x-api-key")
    );
    let wrong = s
        .client
        .get(s.url("/threads/search"))
        .header("x-api-key", "nope")
        .send()
        .await
        .expect("send");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    let ok = s
        .client
        .get(s.url("/ok"))
        .header("x-api-key", "sesame")
        .send()
        .await
        .expect("send");
    assert_eq!(expect_json(ok, StatusCode::OK).await, json!({"ok": true}));
    s.stop().await;
}
