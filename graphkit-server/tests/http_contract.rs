//! The HTTP contract: one suite of requests run against a server on each backend (SQLite
//! always, PostgreSQL when `GRAPHKIT_TEST_POSTGRES_URL` names a server), asserting the same
//! answers, word for word where it matters, so that a client cannot tell the backends apart.
//! The cases are where they used to differ (NUL characters, unknown `sort_by`) and the
//! validation of every numeric or typed field (a 422 that names it, never a default or a
//! 500).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use graphkit_server::backend::RunStatus;
use graphkit_server::time::Timestamp;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::backend_contract::Fixture;
use crate::common::{SseReader, TestServer, expect_json, user_input};

/// A request and the detail its 422 must name.
async fn refused(s: &TestServer, method: &str, path: &str, body: Value, names: &str) -> String {
    let request = match method {
        "GET" => s.client.get(s.url(path)),
        "PUT" => s.client.put(s.url(path)).json(&body),
        "PATCH" => s.client.patch(s.url(path)).json(&body),
        "DELETE" => s.client.delete(s.url(path)).json(&body),
        _ => s.client.post(s.url(path)).json(&body),
    };
    let answer = request.send().await.expect("send");
    let answer = expect_json(answer, StatusCode::UNPROCESSABLE_ENTITY).await;
    let detail = answer["detail"].as_str().expect("detail").to_owned();
    assert!(
        detail.contains(names),
        "{method} {path} {body}: the detail should name {names}: {detail}"
    );
    detail
}

async fn nul_characters_are_refused_with_the_field_named(s: &TestServer) {
    let thread = s.thread().await;
    let cases = [
        (
            "POST",
            "/threads".to_owned(),
            json!({"metadata": {"a": "x\u{0}y"}}),
            "metadata.a",
        ),
        (
            "PATCH",
            format!("/threads/{thread}"),
            json!({"metadata": {"k\u{0}": 1}}),
            "metadata.k\\0",
        ),
        (
            "POST",
            "/threads/search".to_owned(),
            json!({"metadata": {"a": "\u{0}"}}),
            "metadata.a",
        ),
        (
            "POST",
            format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": user_input("a\u{0}b", json!({}))}),
            "input.messages[0].content",
        ),
        (
            "PUT",
            "/store/items".to_owned(),
            json!({"namespace": ["n"], "key": "k\u{0}", "value": {}}),
            "`key`",
        ),
        (
            "PUT",
            "/store/items".to_owned(),
            json!({"namespace": ["n"], "key": "k", "value": {"v": ["\u{0}"]}}),
            "value.v[0]",
        ),
        (
            "POST",
            "/assistants/search".to_owned(),
            json!({"graph_id": "agent\u{0}"}),
            "graph_id",
        ),
        (
            "GET",
            "/store/items?key=a%00b&namespace=n".to_owned(),
            json!(null),
            "`key`",
        ),
        (
            "GET",
            format!("/threads/{thread}/state/ab%00c"),
            json!(null),
            "the path",
        ),
        (
            "GET",
            format!("/threads/{thread}/history?before=%00"),
            json!(null),
            "`before`",
        ),
    ];
    for (method, path, body, names) in cases {
        let detail = refused(s, method, &path, body, names).await;
        assert!(detail.contains("NUL"), "{detail}");
    }
    // Nothing of it was stored.
    let threads = s
        .post_json("/threads/count", json!({}), StatusCode::OK)
        .await;
    assert_eq!(threads, json!(1));
    let items = s
        .post_json(
            "/store/items/search",
            json!({"namespace_prefix": ["n"]}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(items, json!({"items": []}));
}

async fn thread_sorting_takes_known_columns_and_orders_only(s: &TestServer) {
    let detail = refused(
        s,
        "POST",
        "/threads/search",
        json!({"sort_by": "colour"}),
        "sort_by",
    )
    .await;
    assert_eq!(
        detail,
        "sort_by must be one of thread_id, created_at, updated_at, state_updated_at, status, not \"colour\""
    );
    refused(
        s,
        "POST",
        "/threads/search",
        json!({"sort_by": 3}),
        "sort_by",
    )
    .await;
    refused(
        s,
        "POST",
        "/threads/search",
        json!({"sort_order": "sideways"}),
        "sort_order",
    )
    .await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        ids.push(s.thread().await);
    }
    ids.sort();
    for (order, expected) in [
        ("asc", ids.clone()),
        ("desc", ids.iter().rev().cloned().collect()),
    ] {
        let found = s
            .post_json(
                "/threads/search",
                json!({"sort_by": "thread_id", "sort_order": order}),
                StatusCode::OK,
            )
            .await;
        let found: Vec<String> = found
            .as_array()
            .expect("list")
            .iter()
            .map(|t| t["thread_id"].as_str().expect("id").to_owned())
            .collect();
        assert_eq!(found, expected, "{order}");
    }
    for column in ["created_at", "updated_at", "state_updated_at", "status"] {
        let found = s
            .post_json(
                "/threads/search",
                json!({"sort_by": column}),
                StatusCode::OK,
            )
            .await;
        assert_eq!(found.as_array().map(Vec::len), Some(3), "{column}");
    }
}

async fn numeric_and_typed_fields_are_refused_with_the_field_named(s: &TestServer) {
    let thread = s.thread().await;
    let runs = format!("/threads/{thread}/runs");
    let run = |extra: Value| {
        let mut body = json!({"assistant_id": "agent", "input": user_input("n", json!({}))});
        if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        body
    };
    let body_cases = [
        (
            runs.clone(),
            run(json!({"after_seconds": "soon"})),
            "after_seconds",
        ),
        (
            runs.clone(),
            run(json!({"stream_subgraphs": 3})),
            "stream_subgraphs",
        ),
        (
            runs.clone(),
            run(json!({"multitask_strategy": 5})),
            "multitask_strategy",
        ),
        (
            runs.clone(),
            run(json!({"interrupt_before": [1]})),
            "interrupt_before",
        ),
        (
            runs.clone(),
            run(json!({"interrupt_after": 7})),
            "interrupt_after",
        ),
        (
            runs.clone(),
            run(json!({"stream_mode": [1]})),
            "stream_mode",
        ),
        (runs.clone(), run(json!({"metadata": []})), "metadata"),
        // PostgreSQL gave such a number back as 309 digits that no longer read (a 500).
        (runs.clone(), run(json!({"config": f64::MAX})), "config"),
        (
            "/threads".to_owned(),
            json!({"metadata": {"x": [-1e301]}}),
            "metadata.x[0]",
        ),
        (
            format!("/threads/{thread}/history"),
            json!({"limit": -1}),
            "limit",
        ),
        (
            format!("/threads/{thread}/history"),
            json!({"limit": "x"}),
            "limit",
        ),
        (
            format!("/threads/{thread}/history"),
            json!({"before": 5}),
            "before",
        ),
        ("/threads".to_owned(), json!({"if_exists": 5}), "if_exists"),
        (
            "/threads".to_owned(),
            json!({"supersteps": 5}),
            "supersteps",
        ),
        ("/threads/search".to_owned(), json!({"ids": [5]}), "ids"),
        ("/threads/search".to_owned(), json!({"status": 5}), "status"),
        (
            "/store/namespaces".to_owned(),
            json!({"max_depth": -1}),
            "max_depth",
        ),
        (
            "/store/namespaces".to_owned(),
            json!({"max_depth": "x"}),
            "max_depth",
        ),
        (
            "/store/namespaces".to_owned(),
            json!({"limit": 1e30}),
            "limit",
        ),
        (
            "/runs/cancel".to_owned(),
            json!({"run_ids": [5]}),
            "run_ids",
        ),
    ];
    for (path, body, names) in body_cases {
        refused(s, "POST", &path, body, names).await;
    }
    let query_cases = [
        (format!("{runs}?limit=-1"), "limit"),
        (format!("{runs}?offset=x"), "offset"),
        (format!("{runs}?limit=1e30"), "limit"),
        (format!("/threads/{thread}/history?limit=abc"), "limit"),
    ];
    for (path, names) in query_cases {
        refused(s, "GET", &path, json!(null), names).await;
    }
    // Checked before the cancel is asked for.
    refused(
        s,
        "POST",
        &format!("{runs}/{thread}/cancel?wait=maybe"),
        json!({}),
        "wait",
    )
    .await;
    // Huge but whole offsets are an empty page on both backends, not a database error.
    let huge = 1_000_000_000_000_000_000_u64;
    for (path, body) in [
        ("/threads/search", json!({"offset": huge})),
        ("/assistants/search", json!({"offset": huge})),
        ("/store/items/search", json!({"offset": huge})),
        (
            "/store/namespaces",
            json!({"offset": huge, "max_depth": huge}),
        ),
    ] {
        let page = s.post_json(path, body, StatusCode::OK).await;
        let empty = page.as_array().map(Vec::is_empty).unwrap_or_else(|| {
            page.as_object()
                .and_then(|o| o.values().next())
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty)
        });
        assert!(empty, "{path}: {page}");
    }
    let page = s
        .get_json(
            &format!("{runs}?offset=18446744073709551615&limit=10000"),
            StatusCode::OK,
        )
        .await;
    assert_eq!(page, json!([]));
    // Nothing of the above created a run, or a thread.
    assert_eq!(s.get_json(&runs, StatusCode::OK).await, json!([]));
    let threads = s
        .post_json("/threads/count", json!({}), StatusCode::OK)
        .await;
    assert_eq!(threads, json!(1));
}

/// A delayed run keeps its creation time as `created_at` (it used to be its due time), waits
/// while due later, and does not hold up a run created after it.
async fn a_delayed_run_is_created_now_and_waits_for_its_time(s: &TestServer) {
    let thread = s.thread().await;
    let delayed = s
        .post_json(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": user_input("later", json!({})), "after_seconds": 86_400}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(delayed["status"], "pending");
    // A thread created after the run is no older than the run: `created_at` is not the
    // due time, a day ahead. (Timestamps have one format and offset, so their text orders
    // as the time does.)
    let after = s.post_json("/threads", json!({}), StatusCode::OK).await;
    let (run_created, after_created) = (
        delayed["created_at"].as_str().expect("time"),
        after["created_at"].as_str().expect("time"),
    );
    assert!(
        run_created <= after_created,
        "the delayed run's created_at {run_created} is later than a thread created after it ({after_created})"
    );
    // A run created after it runs now, on the same thread.
    let now = s
        .post_json(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": user_input("now", json!({}))}),
            StatusCode::OK,
        )
        .await;
    assert!(now["messages"].is_array(), "{now}");
    let still = s
        .get_json(
            &format!(
                "/threads/{thread}/runs/{}",
                delayed["run_id"].as_str().expect("id")
            ),
            StatusCode::OK,
        )
        .await;
    assert_eq!(still["status"], "pending");
    assert_eq!(still["created_at"], delayed["created_at"]);
}

async fn assistants_are_created_updated_versioned_and_deleted(s: &TestServer) {
    let created = s
        .post_json(
            "/assistants",
            json!({"graph_id": "agent", "config": {"configurable": {"tone": "dry"}},
                   "metadata": {"team": "red"}, "name": "dry agent", "description": "terse"}),
            StatusCode::OK,
        )
        .await;
    let id = created["assistant_id"].as_str().expect("id").to_owned();
    assert_eq!(created["version"], 1);
    assert_eq!(created["graph_id"], "agent");
    assert_eq!(created["name"], "dry agent");
    assert_eq!(created["description"], "terse");
    assert_eq!(created["context"], json!({}));
    assert_eq!(
        s.get_json(&format!("/assistants/{id}"), StatusCode::OK)
            .await,
        created
    );

    // The id is taken: raise (the default) is a 409, do_nothing returns the first.
    let again = json!({"graph_id": "agent", "assistant_id": id, "name": "other"});
    s.post_json("/assistants", again.clone(), StatusCode::CONFLICT)
        .await;
    let mut do_nothing = again;
    do_nothing["if_exists"] = json!("do_nothing");
    assert_eq!(
        s.post_json("/assistants", do_nothing, StatusCode::OK).await,
        created
    );
    // Only a served graph; a default name.
    let unknown = s
        .post_json(
            "/assistants",
            json!({"graph_id": "nope"}),
            StatusCode::NOT_FOUND,
        )
        .await;
    assert!(
        unknown["detail"]
            .as_str()
            .expect("detail")
            .contains("agent"),
        "{unknown}"
    );
    let unnamed = s
        .post_json("/assistants", json!({"graph_id": "agent"}), StatusCode::OK)
        .await;
    assert_eq!(unnamed["name"], "Untitled");
    refused(
        s,
        "POST",
        "/assistants",
        json!({"graph_id": "agent", "if_exists": "maybe"}),
        "if_exists",
    )
    .await;
    refused(
        s,
        "POST",
        "/assistants",
        json!({"graph_id": "agent", "assistant_id": "x"}),
        "UUID",
    )
    .await;
    refused(
        s,
        "POST",
        "/assistants",
        json!({"graph_id": "agent", "config": 5}),
        "config",
    )
    .await;
    refused(s, "POST", "/assistants", json!({}), "graph_id").await;

    // Search and count see the created ones next to the system assistant.
    let red = s
        .post_json(
            "/assistants/search",
            json!({"metadata": {"team": "red"}}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(red, json!([created.clone()]));
    assert_eq!(
        s.post_json("/assistants/count", json!({}), StatusCode::OK)
            .await,
        json!(3)
    );
    let names = s
        .post_json(
            "/assistants/search",
            json!({"graph_id": "agent", "select": ["name"]}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        names,
        json!([{"name": "Untitled"}, {"name": "dry agent"}, {"name": "agent"}])
    );
    refused(
        s,
        "POST",
        "/assistants/search",
        json!({"select": ["nope"]}),
        "nope",
    )
    .await;

    // An update is a new version; metadata merges, config is replaced.
    let updated = s
        .client
        .patch(s.url(&format!("/assistants/{id}")))
        .json(&json!({"config": {"configurable": {"tone": "warm"}}, "metadata": {"stage": "beta"}}))
        .send()
        .await
        .expect("send");
    let updated = expect_json(updated, StatusCode::OK).await;
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["config"], json!({"configurable": {"tone": "warm"}}));
    assert_eq!(updated["metadata"], json!({"team": "red", "stage": "beta"}));
    assert_eq!(updated["name"], "dry agent");
    assert_eq!(updated["created_at"], created["created_at"]);
    let versions = s
        .post_json(
            &format!("/assistants/{id}/versions"),
            json!({}),
            StatusCode::OK,
        )
        .await;
    let numbers: Vec<&Value> = versions
        .as_array()
        .expect("list")
        .iter()
        .map(|v| &v["version"])
        .collect();
    assert_eq!(numbers, [&json!(2), &json!(1)]);
    assert_eq!(
        versions[1]["config"],
        json!({"configurable": {"tone": "dry"}})
    );
    let limited = s
        .post_json(
            &format!("/assistants/{id}/versions"),
            json!({"limit": 1, "offset": 1}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(limited.as_array().expect("list").len(), 1);
    assert_eq!(limited[0]["version"], 1);

    // Back to version 1.
    let latest = s
        .post_json(
            &format!("/assistants/{id}/latest"),
            json!({"version": 1}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(latest["version"], 1);
    assert_eq!(latest["config"], json!({"configurable": {"tone": "dry"}}));
    assert_eq!(
        s.get_json(&format!("/assistants/{id}"), StatusCode::OK)
            .await["version"],
        1
    );
    s.post_json(
        &format!("/assistants/{id}/latest"),
        json!({"version": 7}),
        StatusCode::NOT_FOUND,
    )
    .await;
    refused(
        s,
        "POST",
        &format!("/assistants/{id}/latest"),
        json!({"version": "one"}),
        "version",
    )
    .await;
    refused(
        s,
        "POST",
        &format!("/assistants/{id}/latest"),
        json!({}),
        "version",
    )
    .await;

    // A run on it: the assistant's config under the run's own.
    let thread = s.thread().await;
    let run = s
        .post_json(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": id, "input": user_input("hi", json!({})),
                   "config": {"configurable": {"extra": 1}, "recursion_limit": 7}}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(run["assistant_id"], json!(id));
    assert_eq!(
        run["kwargs"]["config"],
        json!({"configurable": {"tone": "dry", "extra": 1}, "recursion_limit": 7})
    );
    let rid = run["run_id"].as_str().expect("run id");
    let done = s
        .get_json(
            &format!("/threads/{thread}/runs/{rid}/join"),
            StatusCode::OK,
        )
        .await;
    assert_eq!(done["messages"][1]["content"], "echo: hi", "{done}");
    let on_thread = s
        .get_json(&format!("/threads/{thread}"), StatusCode::OK)
        .await;
    assert_eq!(on_thread["metadata"]["assistant_id"], json!(id));

    // Delete, with the threads it ran on.
    let deleted = s
        .client
        .delete(s.url(&format!("/assistants/{id}?delete_threads=true")))
        .send()
        .await
        .expect("send");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    s.get_json(&format!("/assistants/{id}"), StatusCode::NOT_FOUND)
        .await;
    s.get_json(&format!("/threads/{thread}"), StatusCode::NOT_FOUND)
        .await;
    s.post_json(
        &format!("/assistants/{id}/versions"),
        json!({}),
        StatusCode::NOT_FOUND,
    )
    .await;
    let twice = s
        .client
        .delete(s.url(&format!("/assistants/{id}")))
        .send()
        .await
        .expect("send");
    assert_eq!(twice.status(), StatusCode::NOT_FOUND);
    // The system assistant still serves runs.
    let wait = s
        .post_json(
            "/runs/wait",
            json!({"assistant_id": "agent", "input": user_input("yo", json!({}))}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(wait["messages"][1]["content"], "echo: yo");
}

/// The value of the sample `name` (with its labels) in a `/metrics` answer.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
        .parse()
        .expect("a number")
}

async fn metrics_text(s: &TestServer) -> String {
    let answer = s.get("/metrics").await;
    assert_eq!(answer.status(), StatusCode::OK);
    let kind = answer.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    answer.text().await.expect("text")
}

async fn metrics_count_runs_the_queue_durations_and_followers(s: &TestServer) {
    let before = metrics_text(s).await;
    assert_eq!(
        sample(&before, "graphkit_server_runs{status=\"success\"}"),
        0.0
    );
    assert_eq!(sample(&before, "graphkit_server_queue_depth"), 0.0);
    assert_eq!(
        sample(&before, "graphkit_server_run_duration_seconds_count"),
        0.0
    );
    assert_eq!(sample(&before, "graphkit_server_stream_followers"), 0.0);

    s.post_json(
        "/runs/wait",
        json!({"assistant_id": "agent", "input": user_input("m", json!({})), "on_completion": "keep"}),
        StatusCode::OK,
    )
    .await;
    let thread = s.thread().await;
    s.post_json(
        &format!("/threads/{thread}/runs"),
        json!({"assistant_id": "agent", "input": user_input("later", json!({})), "after_seconds": 3600}),
        StatusCode::OK,
    )
    .await;
    // A streamed run that sleeps: its stream has one follower while it is open.
    let streamed = s
        .post(
            "/runs/stream",
            json!({"assistant_id": "agent", "input": user_input("slow", json!({"sleep": 600}))}),
        )
        .await;
    let mut reader = SseReader::new(streamed);
    let first = reader.next().await.expect("metadata");
    let run_id = first.data["run_id"].as_str().expect("run id").to_owned();

    let during = metrics_text(s).await;
    assert_eq!(
        sample(&during, "graphkit_server_runs{status=\"success\"}"),
        1.0
    );
    assert_eq!(
        sample(&during, "graphkit_server_runs{status=\"running\"}"),
        1.0
    );
    assert_eq!(
        sample(&during, "graphkit_server_runs{status=\"pending\"}"),
        1.0
    );
    assert_eq!(
        sample(&during, "graphkit_server_queue_depth"),
        1.0,
        "the delayed run"
    );
    assert_eq!(
        sample(&during, "graphkit_server_run_duration_seconds_count"),
        1.0
    );
    assert_eq!(
        sample(
            &during,
            "graphkit_server_run_duration_seconds_bucket{le=\"+Inf\"}"
        ),
        1.0
    );
    assert_eq!(sample(&during, "graphkit_server_stream_followers"), 1.0);
    assert_eq!(sample(&during, "graphkit_server_followed_runs"), 1.0);

    let cancelled = s.post("/runs/cancel", json!({"status": "running"})).await;
    assert_eq!(cancelled.status(), StatusCode::NO_CONTENT);
    // The stream ends once the run has ended, and the run's time was recorded before.
    let rest = reader.collect().await;
    assert!(rest.iter().all(|e| e.event != "error"), "{rest:?}");
    let after = metrics_text(s).await;
    assert_eq!(
        sample(&after, "graphkit_server_run_duration_seconds_count"),
        2.0,
        "run {run_id}"
    );
}

async fn thread_count(s: &TestServer) -> u64 {
    s.post_json("/threads/count", json!({}), StatusCode::OK)
        .await
        .as_u64()
        .expect("a count")
}

async fn a_batch_creates_every_run_or_none(s: &TestServer) {
    let before = thread_count(s).await;
    let batch = s
        .post_json(
            "/runs/batch",
            json!([
                {"assistant_id": "agent", "input": user_input("one", json!({})), "on_completion": "keep"},
                {"assistant_id": "agent", "input": user_input("two", json!({})), "on_completion": "keep",
                 "metadata": {"n": 2}},
            ]),
            StatusCode::OK,
        )
        .await;
    let runs = batch.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 2, "{batch}");
    assert_ne!(runs[0]["run_id"], runs[1]["run_id"]);
    assert_ne!(
        runs[0]["thread_id"], runs[1]["thread_id"],
        "each on its own thread"
    );
    assert_eq!(runs[1]["metadata"]["n"], 2, "in the order given");
    for (run, word) in runs.iter().zip(["one", "two"]) {
        let path = format!(
            "/threads/{}/runs/{}/join",
            run["thread_id"].as_str().expect("thread"),
            run["run_id"].as_str().expect("run")
        );
        let values = s.get_json(&path, StatusCode::OK).await;
        let last = values["messages"]
            .as_array()
            .and_then(|m| m.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(last["content"], format!("echo: {word}"), "{values}");
    }
    assert_eq!(thread_count(s).await, before + 2);

    // One invalid item refuses the batch, naming its index; nothing is created.
    let cases = [
        (
            json!([{"assistant_id": "agent"}, {"assistant_id": "agent", "stream_mode": "bogus"}]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "run [1]: stream_mode",
        ),
        (
            json!([{"assistant_id": "agent"}, {"input": {}}]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "run [1]: `assistant_id` is required",
        ),
        (
            json!([{"assistant_id": "agent"}, {"assistant_id": "agent", "after_seconds": "soon"}]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "run [1]: malformed run request: `after_seconds`",
        ),
        (
            json!([{"assistant_id": "agent"}, 5]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "run [1]",
        ),
        (
            json!([{"assistant_id": "nobody"}]),
            StatusCode::NOT_FOUND,
            "run [0]: Assistant 'nobody' not found",
        ),
        (
            json!({"assistant_id": "agent"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "must be a list of run requests",
        ),
    ];
    for (body, status, names) in cases {
        let answer = s.post_json("/runs/batch", body.clone(), status).await;
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(names), "{body}: {detail}");
    }
    assert_eq!(
        thread_count(s).await,
        before + 2,
        "a refused batch created nothing"
    );
    let empty = s.post_json("/runs/batch", json!([]), StatusCode::OK).await;
    assert_eq!(empty, json!([]));
}

async fn prune_deletes_the_named_threads_and_counts_them(s: &TestServer) {
    let (a, b, kept) = (s.thread().await, s.thread().await, s.thread().await);
    s.post_json(
        &format!("/threads/{a}/runs/wait"),
        json!({"assistant_id": "agent", "input": user_input("x", json!({}))}),
        StatusCode::OK,
    )
    .await;
    let missing = uuid::Uuid::new_v4().to_string();
    // Refusals first: nothing is deleted by a refused request.
    let cases = [
        (json!({"thread_ids": [a, "nope"]}), "`thread_ids[1]`"),
        (
            json!({"thread_ids": [a], "strategy": "keep_latest"}),
            "keep_latest",
        ),
        (
            json!({"thread_ids": [a], "strategy": "all"}),
            "strategy must be",
        ),
        (json!({}), "`thread_ids` is required"),
    ];
    for (body, names) in cases {
        refused(s, "POST", "/threads/prune", body, names).await;
    }
    s.get_json(&format!("/threads/{a}"), StatusCode::OK).await;
    let pruned = s
        .post_json(
            "/threads/prune",
            json!({"thread_ids": [a, b, missing], "strategy": "delete"}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(pruned, json!({"pruned_count": 2}));
    for gone in [&a, &b] {
        s.get_json(&format!("/threads/{gone}"), StatusCode::NOT_FOUND)
            .await;
        let history = s
            .post_json(
                &format!("/threads/{gone}/history"),
                json!({}),
                StatusCode::NOT_FOUND,
            )
            .await;
        assert!(history["detail"].is_string(), "{history}");
    }
    s.get_json(&format!("/threads/{kept}"), StatusCode::OK)
        .await;
    let again = s
        .post_json("/threads/prune", json!({"thread_ids": [a]}), StatusCode::OK)
        .await;
    assert_eq!(
        again,
        json!({"pruned_count": 0}),
        "the default strategy is delete"
    );
}

// ---------------------------------------------------------------------------------------
// Crons, webhooks, ttls

const MINUTE_US: i64 = 60_000_000;

fn timestamp(value: &Value) -> Timestamp {
    Timestamp::parse_iso(value.as_str().expect("a date")).expect("an ISO date")
}

async fn crons_are_created_searched_updated_and_deleted(s: &TestServer) {
    let info = s.get_json("/info", StatusCode::OK).await;
    assert_eq!(info["flags"]["crons"], json!(true));
    let before = Timestamp::now();
    let stateless = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "agent", "schedule": "*/5 * * * *",
                   "input": user_input("tick", json!({})), "metadata": {"team": "x"},
                   "on_run_completed": "keep"}),
            StatusCode::OK,
        )
        .await;
    let agent = graphkit_server::ids::system_assistant_id("agent").to_string();
    assert_eq!(stateless["assistant_id"], json!(agent));
    assert_eq!(stateless["thread_id"], Value::Null);
    assert_eq!(stateless["schedule"], json!("*/5 * * * *"));
    assert_eq!(stateless["enabled"], json!(true));
    assert_eq!(stateless["on_run_completed"], json!("keep"));
    assert_eq!(stateless["metadata"], json!({"team": "x"}));
    assert_eq!(stateless["payload"]["input"], user_input("tick", json!({})));
    assert_eq!(stateless["end_time"], Value::Null);
    let next = timestamp(&stateless["next_run_date"]);
    assert!(
        next > before && next.micros() <= before.micros() + 5 * MINUTE_US,
        "{next:?}"
    );
    assert_eq!(next.micros() % (5 * MINUTE_US), 0, "on a fifth minute");

    let t = s.thread().await;
    let on_thread = s
        .post_json(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "agent", "schedule": "30 9 * * 1-5", "timezone": "+02:00",
                   "input": user_input("morning", json!({}))}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(on_thread["thread_id"], json!(t));
    assert_eq!(on_thread["timezone"], json!("+02:00"));
    let next = timestamp(&on_thread["next_run_date"]);
    assert_eq!(
        next.micros().rem_euclid(24 * 60 * MINUTE_US),
        (7 * 60 + 30) * MINUTE_US,
        "09:30 at +02:00 is 07:30 UTC"
    );
    // An IANA zone follows daylight saving: 09:00 in New York is 14:00 UTC in winter and
    // 13:00 in summer (the test cannot choose the season, so either is right).
    if std::path::Path::new("/usr/share/zoneinfo/America/New_York").is_file() {
        let zoned = s
            .post_json(
                &format!("/threads/{t}/runs/crons"),
                json!({"assistant_id": "agent", "schedule": "0 9 * * *",
                       "timezone": "America/New_York", "input": user_input("ny", json!({}))}),
                StatusCode::OK,
            )
            .await;
        assert_eq!(zoned["timezone"], json!("America/New_York"));
        let of_day = timestamp(&zoned["next_run_date"])
            .micros()
            .rem_euclid(24 * 60 * MINUTE_US);
        assert!(
            [13 * 60 * MINUTE_US, 14 * 60 * MINUTE_US].contains(&of_day),
            "{zoned}"
        );
        let id = zoned["cron_id"].as_str().expect("id");
        let answer = s
            .client
            .delete(s.url(&format!("/runs/crons/{id}")))
            .send()
            .await
            .expect("send");
        assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    } else {
        eprintln!("skipped the America/New_York cron: no time zone database (tzdata)");
    }

    // Refusals name what is wrong.
    let body = |extra: Value| {
        let mut b = json!({"assistant_id": "agent", "schedule": "* * * * *"});
        b.as_object_mut()
            .expect("object")
            .extend(extra.as_object().cloned().unwrap_or_default());
        b
    };
    let cases = [
        (
            "/runs/crons",
            body(json!({"schedule": "61 * * * *"})),
            "minute",
        ),
        ("/runs/crons", body(json!({"schedule": "* * *"})), "five"),
        (
            "/runs/crons",
            body(json!({"schedule": null})),
            "`schedule` is required",
        ),
        (
            "/runs/crons",
            body(json!({"timezone": "Nowhere/Atlantis"})),
            "Nowhere/Atlantis",
        ),
        (
            "/runs/crons",
            body(json!({"end_time": "tomorrow"})),
            "end_time",
        ),
        (
            "/runs/crons",
            body(json!({"after_seconds": 5})),
            "after_seconds",
        ),
        (
            "/runs/crons",
            body(json!({"on_run_completed": "archive"})),
            "on_run_completed",
        ),
        (
            "/runs/crons",
            body(json!({"schedule": "0 0 30 2 *"})),
            "never",
        ),
        (
            "/runs/crons",
            body(json!({"stream_mode": "bogus"})),
            "bogus",
        ),
        (
            "/runs/crons",
            body(json!({"webhook": "http://127.0.0.1:9/hook"})),
            "webhook",
        ),
        (
            "/runs/crons",
            body(json!({"webhook": "file:///etc/passwd"})),
            "webhook",
        ),
        (
            &format!("/threads/{t}/runs/crons") as &str,
            body(json!({"on_run_completed": "keep"})),
            "on_run_completed",
        ),
    ];
    for (path, body, names) in cases {
        refused(s, "POST", path, body, names).await;
    }
    let missing = uuid::Uuid::new_v4();
    s.post_json(
        &format!("/threads/{missing}/runs/crons"),
        body(json!({})),
        StatusCode::NOT_FOUND,
    )
    .await;
    s.post_json(
        "/runs/crons",
        json!({"assistant_id": "nope", "schedule": "* * * * *"}),
        StatusCode::NOT_FOUND,
    )
    .await;

    // Search and count.
    let ids = |found: &Value| -> Vec<String> {
        found
            .as_array()
            .expect("list")
            .iter()
            .map(|c| c["cron_id"].as_str().expect("id").to_owned())
            .collect()
    };
    let all = s
        .post_json(
            "/runs/crons/search",
            json!({"assistant_id": "agent", "sort_by": "created_at", "sort_order": "asc"}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        ids(&all),
        [
            stateless["cron_id"].as_str().expect("id"),
            on_thread["cron_id"].as_str().expect("id")
        ]
    );
    let of_thread = s
        .post_json(
            "/runs/crons/search",
            json!({"thread_id": t}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        ids(&of_thread),
        [on_thread["cron_id"].as_str().expect("id")]
    );
    let selected = s
        .post_json(
            "/runs/crons/search",
            json!({"metadata": {"team": "x"}, "select": ["cron_id", "schedule"]}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        selected,
        json!([{"cron_id": stateless["cron_id"], "schedule": "*/5 * * * *"}])
    );
    assert_eq!(
        s.post_json("/runs/crons/count", json!({}), StatusCode::OK)
            .await,
        json!(2)
    );
    assert_eq!(
        s.post_json("/runs/crons/count", json!({"thread_id": t}), StatusCode::OK)
            .await,
        json!(1)
    );
    refused(
        s,
        "POST",
        "/runs/crons/search",
        json!({"sort_by": "schedule"}),
        "sort_by",
    )
    .await;
    refused(
        s,
        "POST",
        "/runs/crons/search",
        json!({"limit": -1}),
        "limit",
    )
    .await;

    // Get, update, delete.
    let id = on_thread["cron_id"].as_str().expect("id");
    assert_eq!(
        s.get_json(&format!("/runs/crons/{id}"), StatusCode::OK)
            .await,
        on_thread
    );
    let patch = |body: Value| async move {
        let answer = s
            .client
            .patch(s.url(&format!("/runs/crons/{id}")))
            .json(&body)
            .send()
            .await
            .expect("send");
        expect_json(answer, StatusCode::OK).await
    };
    let off = patch(json!({"schedule": "0 * * * *", "enabled": false, "input": user_input("hourly", json!({}))})).await;
    assert_eq!(off["schedule"], json!("0 * * * *"));
    assert_eq!(off["enabled"], json!(false));
    assert_eq!(off["next_run_date"], Value::Null);
    assert_eq!(off["payload"]["input"], user_input("hourly", json!({})));
    let on = patch(json!({"enabled": true, "end_time": "2999-01-01T00:00:00Z"})).await;
    assert_eq!(
        timestamp(&on["next_run_date"]).micros() % (60 * MINUTE_US),
        0,
        "on the hour"
    );
    assert_eq!(on["end_time"], json!("2999-01-01T00:00:00.000000+00:00"));
    let cleared = patch(json!({"end_time": null})).await;
    assert_eq!(cleared["end_time"], Value::Null);
    assert_eq!(
        s.get_json(&format!("/runs/crons/{id}"), StatusCode::OK)
            .await,
        cleared
    );
    let answer = s
        .client
        .patch(s.url(&format!("/runs/crons/{id}")))
        .json(&json!({"assistant_id": "agent"}))
        .send()
        .await
        .expect("send");
    expect_json(answer, StatusCode::UNPROCESSABLE_ENTITY).await;
    let answer = s
        .client
        .delete(s.url(&format!("/runs/crons/{id}")))
        .send()
        .await
        .expect("send");
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);
    s.get_json(&format!("/runs/crons/{id}"), StatusCode::NOT_FOUND)
        .await;
    let answer = s
        .client
        .delete(s.url(&format!("/runs/crons/{id}")))
        .send()
        .await
        .expect("send");
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    s.get_json("/runs/crons/not-a-uuid", StatusCode::UNPROCESSABLE_ENTITY)
        .await;
}

async fn a_due_cron_creates_its_run_on_the_queue(s: &TestServer) {
    let t = s.thread().await;
    let cron = s
        .post_json(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "agent", "schedule": "* * * * *",
                   "input": user_input("scheduled", json!({})), "metadata": {"why": "cron"}}),
            StatusCode::OK,
        )
        .await;
    let due = timestamp(&cron["next_run_date"]);
    let early = graphkit_server::fire_due_crons(&s.backend, Timestamp(due.micros() - 1))
        .await
        .expect("fire");
    assert!(early.is_empty(), "{early:?}");
    let fired = graphkit_server::fire_due_crons(&s.backend, due)
        .await
        .expect("fire");
    assert_eq!(fired.len(), 1, "{fired:?}");
    let run_id = fired[0].run_id.expect("a run");
    let values = s
        .get_json(&format!("/threads/{t}/runs/{run_id}/join"), StatusCode::OK)
        .await;
    let messages = values["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["content"], json!("scheduled"));
    let run = s
        .get_json(&format!("/threads/{t}/runs/{run_id}"), StatusCode::OK)
        .await;
    assert_eq!(run["status"], json!("success"));
    assert_eq!(run["metadata"]["why"], json!("cron"));
    let moved = s
        .get_json(
            &format!("/runs/crons/{}", cron["cron_id"].as_str().expect("id")),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        timestamp(&moved["next_run_date"]),
        Timestamp(due.micros() + MINUTE_US)
    );
    // Done with it: when a minute begins before the next cron is created, that cron's first
    // time is this one's next, and firing it would fire both.
    let answer = s
        .client
        .delete(s.url(&format!(
            "/runs/crons/{}",
            cron["cron_id"].as_str().expect("id")
        )))
        .send()
        .await
        .expect("send");
    assert_eq!(answer.status(), StatusCode::NO_CONTENT);

    // A cron without a thread runs on a new thread, deleted after the run by default. The
    // server's own workers take the run at once: its node sleeps (until the server stops and
    // cancels it) so the run and its thread are still there to be read, not deleted by then.
    let stateless = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "agent", "schedule": "* * * * *",
                   "input": user_input("alone", json!({"sleep": 3600}))}),
            StatusCode::OK,
        )
        .await;
    let fired = graphkit_server::fire_due_crons(&s.backend, timestamp(&stateless["next_run_date"]))
        .await
        .expect("fire");
    assert_eq!(fired.len(), 1, "{fired:?}");
    let run = s
        .backend
        .get_run(None, fired[0].run_id.expect("a run"))
        .await
        .expect("get")
        .expect("the run");
    assert!(
        matches!(run.status, RunStatus::Pending | RunStatus::Running),
        "{:?}",
        run.status
    );
    assert_ne!(run.thread_id.to_string(), t);
    assert_eq!(run.kwargs["delete_thread_when_done"], json!(true));
}

async fn threads_and_store_items_expire_after_their_ttl(s: &TestServer) {
    let short = s
        .post_json(
            "/threads",
            json!({"ttl": {"strategy": "delete", "ttl": 1}}),
            StatusCode::OK,
        )
        .await;
    let short = short["thread_id"].as_str().expect("id").to_owned();
    let patched = s.thread().await;
    let answer = s
        .client
        .patch(s.url(&format!("/threads/{patched}")))
        .json(&json!({"ttl": 10}))
        .send()
        .await
        .expect("send");
    expect_json(answer, StatusCode::OK).await;
    let kept = s.thread().await;
    for (body, names) in [
        (
            json!({"ttl": {"strategy": "keep_latest", "ttl": 1}}),
            "strategy",
        ),
        (json!({"ttl": {"strategy": "delete"}}), "ttl"),
        (json!({"ttl": -1}), "`ttl`"),
        (json!({"ttl": "soon"}), "`ttl`"),
    ] {
        refused(s, "POST", "/threads", body, names).await;
    }
    refused(
        s,
        "PATCH",
        &format!("/threads/{kept}"),
        json!({"ttl": 0}),
        "`ttl`",
    )
    .await;
    let shown = s
        .get_json(&format!("/threads/{patched}?include=ttl"), StatusCode::OK)
        .await;
    assert_eq!(shown["ttl"]["strategy"], json!("delete"));
    assert_eq!(shown["ttl"]["ttl"], json!(10.0));
    let expires = timestamp(&shown["ttl"]["expires_at"]);
    assert!(expires > Timestamp::now(), "{shown}");
    let plain = s
        .get_json(&format!("/threads/{kept}?include=ttl"), StatusCode::OK)
        .await;
    assert_eq!(plain["ttl"], Value::Null);
    let without = s
        .get_json(&format!("/threads/{kept}"), StatusCode::OK)
        .await;
    assert!(without.get("ttl").is_none(), "{without}");
    s.get_json(
        &format!("/threads/{kept}?include=everything"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;

    let put = |body: Value| async move {
        s.client
            .put(s.url("/store/items"))
            .json(&body)
            .send()
            .await
            .expect("send")
    };
    assert_eq!(
        put(json!({"namespace": ["n"], "key": "later", "value": {"v": 1}, "ttl": 1}))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        put(json!({"namespace": ["n"], "key": "forever", "value": {"v": 2}, "index": false}))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    // A ttl this short has run out when it is read: not returned, swept or not.
    assert_eq!(
        put(json!({"namespace": ["n"], "key": "gone", "value": {"v": 3}, "ttl": 1e-9}))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    refused(
        s,
        "PUT",
        "/store/items",
        json!({"namespace": ["n"], "key": "i", "value": {}, "index": ["$.text"]}),
        "index",
    )
    .await;
    refused(
        s,
        "PUT",
        "/store/items",
        json!({"namespace": ["n"], "key": "i", "value": {}, "ttl": "x"}),
        "`ttl`",
    )
    .await;
    let get = |key: &'static str| async move {
        s.get_json(
            &format!("/store/items?namespace=n&key={key}&refresh_ttl=true"),
            StatusCode::OK,
        )
        .await
    };
    assert_eq!(get("later").await["value"], json!({"v": 1}));
    assert_eq!(get("gone").await, Value::Null);
    let found = s
        .post_json(
            "/store/items/search",
            json!({"namespace_prefix": ["n"], "refresh_ttl": false}),
            StatusCode::OK,
        )
        .await;
    let mut keys: Vec<&str> = found["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["key"].as_str().expect("key"))
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, ["forever", "later"]);
    refused(
        s,
        "POST",
        "/store/items/search",
        json!({"refresh_ttl": "yes"}),
        "refresh_ttl",
    )
    .await;
    s.get_json(
        "/store/items?namespace=n&key=later&refresh_ttl=maybe",
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;

    // The workers' sweep, two minutes on: the short thread and both short items go.
    let later = Timestamp(Timestamp::now().micros() + 2 * MINUTE_US);
    let swept = graphkit_server::delete_expired(&s.backend, later, 100)
        .await
        .expect("sweep");
    assert_eq!(swept, (1, 2));
    s.get_json(&format!("/threads/{short}"), StatusCode::NOT_FOUND)
        .await;
    s.get_json(&format!("/threads/{patched}"), StatusCode::OK)
        .await;
    s.get_json(&format!("/threads/{kept}"), StatusCode::OK)
        .await;
    assert_eq!(get("later").await, Value::Null);
    assert_eq!(get("forever").await["value"], json!({"v": 2}));
    let swept = graphkit_server::delete_expired(&s.backend, later, 100)
        .await
        .expect("sweep");
    assert_eq!(swept, (0, 0));
}

/// A webhook receiver on 127.0.0.1 that answers 500 to the first call and 200 after,
/// handing each accepted body to the test.
async fn webhook_receiver() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<Value>,
    Arc<AtomicUsize>,
) {
    let (sender, received) = tokio::sync::mpsc::unbounded_channel();
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let (sender, counted) = (sender.clone(), Arc::clone(&counted));
            async move {
                if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    return StatusCode::INTERNAL_SERVER_ERROR;
                }
                let _ = sender.send(body);
                StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), received, calls)
}

async fn a_webhook_gets_the_ended_run_after_a_failed_call(s: &TestServer) {
    let (url, mut received, calls) = webhook_receiver().await;
    let t = s.thread().await;
    let run = s
        .post_json(
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "agent", "input": user_input("hooked", json!({})), "webhook": url}),
            StatusCode::OK,
        )
        .await;
    let run_id = run["run_id"].as_str().expect("id");
    s.get_json(&format!("/threads/{t}/runs/{run_id}/join"), StatusCode::OK)
        .await;
    // A bound, not a timing assertion: the call is retried after a short backoff.
    let payload = tokio::time::timeout(std::time::Duration::from_secs(60), received.recv())
        .await
        .expect("the webhook was called within a minute")
        .expect("a body");
    assert_eq!(payload["run_id"], json!(run_id));
    assert_eq!(payload["thread_id"], json!(t));
    assert_eq!(payload["status"], json!("success"));
    assert_eq!(payload["kwargs"]["webhook"], json!(url));
    assert_eq!(payload["values"]["messages"][0]["content"], json!("hooked"));
    assert!(payload["webhook_sent_at"].is_string(), "{payload}");
    // As the reference sends them: when the attempt started and ended (same format, so
    // they order as text).
    let (started, ended) = (
        payload["run_started_at"].as_str().expect("run_started_at"),
        payload["run_ended_at"].as_str().expect("run_ended_at"),
    );
    assert!(started <= ended, "{payload}");
    assert!(
        run["created_at"].as_str().expect("created_at") <= started,
        "{payload}"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "one failed call, one retry"
    );

    // A cron's runs call the webhook of its payload.
    let cron = s
        .post_json(
            "/runs/crons",
            json!({"assistant_id": "agent", "schedule": "* * * * *", "webhook": url,
                   "input": user_input("from a cron", json!({}))}),
            StatusCode::OK,
        )
        .await;
    let fired = graphkit_server::fire_due_crons(&s.backend, timestamp(&cron["next_run_date"]))
        .await
        .expect("fire");
    let run_id = fired[0].run_id.expect("a run");
    let payload = tokio::time::timeout(std::time::Duration::from_secs(60), received.recv())
        .await
        .expect("the webhook was called within a minute")
        .expect("a body");
    assert_eq!(payload["run_id"], json!(run_id.to_string()));
    assert_eq!(
        payload["values"]["messages"][0]["content"],
        json!("from a cron")
    );
}

async fn a_webhook_on_a_private_address_is_refused_by_default(s: &TestServer) {
    let t = s.thread().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://10.0.0.1/hook",
        "http://[::1]/hook",
        "ftp://example.com/hook",
        "not a url",
    ] {
        refused(
            s,
            "POST",
            &format!("/threads/{t}/runs"),
            json!({"assistant_id": "agent", "input": user_input("x", json!({})), "webhook": url}),
            "`webhook` is refused",
        )
        .await;
    }
    refused(
        s,
        "POST",
        "/runs",
        json!({"assistant_id": "agent", "webhook": 5}),
        "`webhook`",
    )
    .await;
    let runs = s
        .get_json(&format!("/threads/{t}/runs"), StatusCode::OK)
        .await;
    assert_eq!(runs, json!([]), "nothing was created");
}

/// The workers' own cron look fires a due cron: its next run date is moved into the past
/// behind the API's back, and the run appears on the queue (waited for by the queue's
/// wake-up, not by time).
async fn the_workers_fire_a_due_cron_by_themselves(s: &TestServer) {
    let t = s.thread().await;
    let cron = s
        .post_json(
            &format!("/threads/{t}/runs/crons"),
            json!({"assistant_id": "agent", "schedule": "0 0 1 1 *", "input": user_input("now", json!({}))}),
            StatusCode::OK,
        )
        .await;
    let id = uuid::Uuid::parse_str(cron["cron_id"].as_str().expect("id")).expect("uuid");
    let mut stored = s.backend.get_cron(id).await.expect("get").expect("cron");
    stored.next_run_date = Some(Timestamp(Timestamp::now().micros() - MINUTE_US));
    assert!(s.backend.update_cron(&stored, true).await.expect("update"));
    let thread = uuid::Uuid::parse_str(&t).expect("uuid");
    let found = async {
        loop {
            let mut woken = s.backend.watch_queue();
            let runs = s
                .backend
                .list_runs(thread, &Default::default())
                .await
                .expect("list");
            if let Some(run) = runs.into_iter().next() {
                return run;
            }
            woken.changed().await;
        }
    };
    // A hang guard, not a timing claim.
    let run = tokio::time::timeout(std::time::Duration::from_secs(60), found)
        .await
        .expect("the cron fired");
    let values = s
        .get_json(
            &format!("/threads/{t}/runs/{}/join", run.run_id),
            StatusCode::OK,
        )
        .await;
    assert_eq!(values["messages"][0]["content"], json!("now"));
    let moved = s.backend.get_cron(id).await.expect("get").expect("cron");
    let next = moved.next_run_date.expect("next");
    assert!(
        next > Timestamp::now(),
        "moved on to next new year: {next:?}"
    );
}

/// Webhooks to loopback allowed (the receiver is on 127.0.0.1), retried after 20 ms; the
/// workers look for due crons every 20 ms.
fn test_settings(server: graphkit_server::Server) -> graphkit_server::Server {
    server.worker_settings(graphkit_server::WorkerSettings {
        cron_every: std::time::Duration::from_millis(20),
        webhooks: graphkit_server::WebhookSettings {
            allow_private: true,
            backoff: std::time::Duration::from_millis(20),
            ..Default::default()
        },
        ..Default::default()
    })
}

macro_rules! over_each_backend_with_test_settings {
    ($($behaviour:ident),* $(,)?) => {
        mod with_test_settings {
            mod sqlite {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $behaviour() {
                        let fixture = crate::backend_contract::Fixture::sqlite().await;
                        crate::http_contract::serve_with(
                            fixture,
                            crate::http_contract::test_settings,
                            crate::http_contract::$behaviour,
                        )
                        .await;
                    }
                )*
            }

            #[cfg(feature = "postgres")]
            mod postgres {
                $(
                    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                    async fn $behaviour() {
                        let Some(fixture) =
                            crate::backend_contract::Fixture::postgres(stringify!($behaviour)).await
                        else {
                            return;
                        };
                        crate::http_contract::serve_with(
                            fixture,
                            crate::http_contract::test_settings,
                            crate::http_contract::$behaviour,
                        )
                        .await;
                    }
                )*
            }
        }
    };
}

over_each_backend_with_test_settings!(
    a_webhook_gets_the_ended_run_after_a_failed_call,
    the_workers_fire_a_due_cron_by_themselves,
);

macro_rules! over_each_backend {
    ($($behaviour:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $behaviour() {
                    let fixture = crate::backend_contract::Fixture::sqlite().await;
                    super::serve(fixture, super::$behaviour).await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $behaviour() {
                    let Some(fixture) =
                        crate::backend_contract::Fixture::postgres(stringify!($behaviour)).await
                    else {
                        return;
                    };
                    super::serve(fixture, super::$behaviour).await;
                }
            )*
        }
    };
}

async fn thread_storage_counts_the_stored_checkpoints(s: &TestServer) {
    let thread = s.thread().await;
    let path = format!("/threads/{thread}/storage");
    let empty = s.get_json(&path, StatusCode::OK).await;
    assert_eq!(
        empty,
        json!({
            "thread_id": thread,
            "total_bytes": 0,
            "checkpoints": {"count": 0, "bytes": 0},
            "channel_values": {"count": 0, "bytes": 0, "by_channel": {}},
            "pending_writes": {"count": 0, "bytes": 0},
        })
    );
    s.post_json(
        &format!("/threads/{thread}/runs/wait"),
        json!({"assistant_id": "agent", "input": user_input("hi", json!({"ask_human": true}))}),
        StatusCode::OK,
    )
    .await;
    let used = s.get_json(&path, StatusCode::OK).await;
    let n = |v: &Value| v.as_u64().expect("a count");
    assert!(n(&used["checkpoints"]["count"]) >= 2, "{used}");
    assert!(
        n(&used["pending_writes"]["count"]) >= 1,
        "the interrupt is a pending write: {used}"
    );
    let messages = &used["channel_values"]["by_channel"]["messages"];
    assert!(n(&messages["bytes"]) > "echo: hi".len() as u64, "{used}");
    let by_channel: u64 = used["channel_values"]["by_channel"]
        .as_object()
        .expect("by_channel")
        .values()
        .map(|c| n(&c["bytes"]))
        .sum();
    assert_eq!(by_channel, n(&used["channel_values"]["bytes"]));
    assert_eq!(
        n(&used["total_bytes"]),
        n(&used["checkpoints"]["bytes"])
            + n(&used["channel_values"]["bytes"])
            + n(&used["pending_writes"]["bytes"])
    );
    let missing = format!("/threads/{}/storage", uuid::Uuid::new_v4());
    s.get_json(&missing, StatusCode::NOT_FOUND).await;
    s.get_json(
        "/threads/not-a-uuid/storage",
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}

/// Runs `behaviour` against a server on the fixture's backend, then cleans up.
pub(crate) async fn serve<F>(fixture: Fixture, behaviour: F)
where
    F: AsyncFnOnce(&TestServer),
{
    serve_with(fixture, |server| server, behaviour).await;
}

/// [`serve`] with the server configured by `configure`.
pub(crate) async fn serve_with<F>(
    fixture: Fixture,
    configure: impl FnOnce(graphkit_server::Server) -> graphkit_server::Server,
    behaviour: F,
) where
    F: AsyncFnOnce(&TestServer),
{
    let dir = tempfile::tempdir().expect("tempdir");
    let s = TestServer::start_on(Arc::clone(&fixture.a), dir, configure).await;
    behaviour(&s).await;
    s.stop().await;
    fixture.finish().await;
}

over_each_backend!(
    nul_characters_are_refused_with_the_field_named,
    thread_sorting_takes_known_columns_and_orders_only,
    numeric_and_typed_fields_are_refused_with_the_field_named,
    a_delayed_run_is_created_now_and_waits_for_its_time,
    assistants_are_created_updated_versioned_and_deleted,
    metrics_count_runs_the_queue_durations_and_followers,
    a_batch_creates_every_run_or_none,
    prune_deletes_the_named_threads_and_counts_them,
    crons_are_created_searched_updated_and_deleted,
    a_due_cron_creates_its_run_on_the_queue,
    threads_and_store_items_expire_after_their_ttl,
    a_webhook_on_a_private_address_is_refused_by_default,
    thread_storage_counts_the_stored_checkpoints,
);
