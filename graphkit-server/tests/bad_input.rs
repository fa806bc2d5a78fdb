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
    // A key of the right length, or the key's prefix, is still wrong.
    for near in ["sesamf", "sesam", "sesame2", ""] {
        let refused = s
            .client
            .get(s.url("/ok"))
            .header("x-api-key", near)
            .send()
            .await
            .expect("send");
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED, "{near:?}");
    }
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

/// Paging numbers are whole numbers from 0, or a 422 that names the field; they never fall
/// back to a default. An item needs a namespace.
#[tokio::test]
async fn paging_numbers_and_namespaces_are_validated_not_defaulted() {
    let s = TestServer::start().await;
    let searches = [
        ("/threads/search", json!({})),
        ("/assistants/search", json!({})),
        ("/store/items/search", json!({"namespace_prefix": []})),
    ];
    for (path, base) in searches {
        for field in ["limit", "offset"] {
            for bad in [json!(-1), json!("x"), json!(1e30), json!(2.5), json!([3])] {
                let mut body = base.clone();
                body[field] = bad.clone();
                let refused = s
                    .post_json(path, body, StatusCode::UNPROCESSABLE_ENTITY)
                    .await;
                let detail = refused["detail"].as_str().expect("detail");
                assert!(detail.contains(field), "{path} {field}={bad}: {detail}");
            }
            // Null is the default, as if the field were absent.
            let mut body = base.clone();
            body[field] = serde_json::Value::Null;
            s.post_json(path, body, StatusCode::OK).await;
        }
    }
    let empty = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": [], "key": "k", "value": {"a": 1}}))
        .send()
        .await
        .expect("send");
    let body = expect_json(empty, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains("namespace")
    );
    s.stop().await;
}

/// `after_seconds` is a delay from 0 to a year; anything else is a 422 that names it, never
/// a run started at once (it was) or a database error (PostgreSQL gave a 500 for 1e18).
#[tokio::test]
async fn a_delay_outside_zero_to_a_year_is_refused() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let runs = format!("/threads/{thread}/runs");
    for bad in [json!(-1), json!(1e18), json!(1e20), json!(31_536_001)] {
        let refused = s
            .post_json(
                &runs,
                json!({"assistant_id": "agent", "input": user_input("later", json!({})), "after_seconds": bad}),
                StatusCode::UNPROCESSABLE_ENTITY,
            )
            .await;
        let detail = refused["detail"].as_str().expect("detail");
        assert!(detail.contains("after_seconds"), "{bad}: {detail}");
    }
    // Zero is now, and a day is accepted (the run waits, pending).
    let later = s
        .post_json(
            &runs,
            json!({"assistant_id": "agent", "input": user_input("later", json!({})), "after_seconds": 86_400}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(later["status"], "pending", "{later}");
    s.stop().await;
}

/// What the server does not do yet is refused with a 422 naming it, never ignored: a store
/// item's `index` and a search's `query` (no semantic search), a cron's named time zone.
/// Null is as if absent.
#[tokio::test]
async fn unsupported_fields_are_refused_not_ignored() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let put = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["a"], "key": "k", "value": {"x": 1}, "index": ["$.x"]}))
        .send()
        .await
        .expect("send");
    let answer = expect_json(put, StatusCode::UNPROCESSABLE_ENTITY).await;
    let detail = answer["detail"].as_str().expect("detail");
    assert!(
        detail.contains("`index`") && detail.contains("not supported"),
        "{detail}"
    );
    let refused = [
        (
            "/store/items/search".to_owned(),
            json!({"namespace_prefix": ["a"], "query": "similar"}),
            "`query`",
        ),
        (
            "/runs/crons".to_owned(),
            json!({"assistant_id": "agent", "schedule": "0 9 * * *", "timezone": "../../etc/passwd"}),
            "../../etc/passwd",
        ),
    ];
    for (path, body, field) in refused {
        let answer = s
            .post_json(&path, body, StatusCode::UNPROCESSABLE_ENTITY)
            .await;
        let detail = answer["detail"].as_str().expect("detail");
        assert!(detail.contains(field), "{detail}");
    }
    // Null is as if the field were absent.
    let put = s
        .client
        .put(s.url("/store/items"))
        .json(
            &json!({"namespace": ["a"], "key": "k", "value": {"x": 1}, "index": null, "ttl": null}),
        )
        .send()
        .await
        .expect("send");
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    s.post_json("/threads", json!({"ttl": null}), StatusCode::OK)
        .await;
    s.post_json(
        &format!("/threads/{thread}/runs"),
        json!({"assistant_id": "agent", "input": user_input("w", json!({})), "webhook": null}),
        StatusCode::OK,
    )
    .await;
    s.stop().await;
}

/// `select` gives only the named fields: on a run list (query, repeated
/// or one JSON list), a thread search and an assistant search (body); an unknown name is a
/// 422 that names it.
#[tokio::test]
async fn select_returns_only_the_named_fields() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let run = s
        .post_json(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": user_input("s", json!({}))}),
            StatusCode::OK,
        )
        .await;
    assert!(run["messages"].is_array(), "{run}");
    let listed = s
        .get_json(
            &format!("/threads/{thread}/runs?select=status&select=run_id"),
            StatusCode::OK,
        )
        .await;
    let only = listed[0].as_object().expect("a run");
    let mut keys: Vec<&String> = only.keys().collect();
    keys.sort();
    assert_eq!(keys, ["run_id", "status"]);
    assert_eq!(only["status"], "success");
    let as_list = s
        .get_json(
            &format!("/threads/{thread}/runs?select=%5B%22attempt%22%5D"),
            StatusCode::OK,
        )
        .await;
    assert_eq!(as_list, json!([{"attempt": 1}]));
    let bad = s
        .get_json(
            &format!("/threads/{thread}/runs?select=nope"),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
    assert!(
        bad["detail"].as_str().expect("detail").contains("\"nope\""),
        "{bad}"
    );

    let threads = s
        .post_json(
            "/threads/search",
            json!({"select": ["thread_id"], "ids": [thread]}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(threads, json!([{"thread_id": thread}]));
    s.post_json(
        "/threads/search",
        json!({"select": ["values", 3]}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    let assistants = s
        .post_json(
            "/assistants/search",
            json!({"select": ["graph_id", "version"]}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(assistants, json!([{"graph_id": "agent", "version": 1}]));
    s.stop().await;
}
