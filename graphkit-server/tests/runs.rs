//! Runs over real HTTP: streaming and its framing, wait, interrupts and resume, background
//! runs, cancel, multitask strategies, replay with Last-Event-ID, stream modes.

use crate::common;

use common::{Event, SseReader, TestServer, expect_json, user_input};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn stream(
    s: &TestServer,
    path: &str,
    body: Value,
) -> (reqwest::header::HeaderMap, SseReader) {
    let response = s.post(path, body).await;
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    (headers, SseReader::new(response))
}

/// Starts a background run that sleeps `seconds` and waits (through the run's stream)
/// until a worker holds it.
async fn sleeping_run(s: &TestServer, thread: &str, seconds: f64) -> (String, SseReader) {
    let (_, mut reader) = stream(
        s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("slow", json!({"sleep": seconds}))}),
    )
    .await;
    let first = reader.next().await.expect("metadata");
    assert_eq!(first.event, "metadata");
    let run_id = first.data["run_id"].as_str().expect("run id").to_owned();
    (run_id, reader)
}

/// While a sleeping run holds `thread`, runs `now` with the multitask `strategy` and waits
/// for it; returns the sleeping run's id (its stream closed) and the new run's values.
async fn run_over_a_sleeping_run(s: &TestServer, thread: &str, strategy: &str) -> (String, Value) {
    let (first, reader) = sleeping_run(s, thread, 600.0).await;
    let input = user_input("now", json!({"sleep": 0}));
    let body = json!({"assistant_id": "agent", "input": input, "multitask_strategy": strategy});
    let second = wait(s, thread, body, StatusCode::OK).await;
    reader.collect().await;
    (first, second)
}

/// `POST /threads/{thread}/runs/wait` with `body`, expecting `status`: the body.
async fn wait(s: &TestServer, thread: &str, body: Value, status: StatusCode) -> Value {
    s.post_json(&format!("/threads/{thread}/runs/wait"), body, status)
        .await
}

/// `POST /threads/{thread}/runs/{run_id}/cancel{query}`.
async fn cancel(s: &TestServer, thread: &str, run_id: &str, query: &str) -> reqwest::Response {
    s.client
        .post(s.url(&format!("/threads/{thread}/runs/{run_id}/cancel{query}")))
        .send()
        .await
        .expect("cancel")
}

/// A run as `GET /threads/{thread}/runs/{run_id}` shows it.
async fn get_run(s: &TestServer, thread: &str, run_id: &str) -> Value {
    s.get_json(&format!("/threads/{thread}/runs/{run_id}"), StatusCode::OK)
        .await
}

/// The `content` of each message of a state's `messages`.
fn contents(values: &Value) -> Vec<&str> {
    values["messages"]
        .as_array()
        .expect("list")
        .iter()
        .map(|m| m["content"].as_str().expect("text"))
        .collect()
}

#[tokio::test]
async fn a_streamed_run_sends_metadata_first_then_updates_and_values() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (headers, reader) = stream(
        &s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("hi", json!({})), "stream_mode": ["values", "updates"]}),
    )
    .await;
    assert_eq!(headers["content-type"], "text/event-stream; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    let content_location = headers["content-location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let location = headers["location"].to_str().expect("ascii").to_owned();
    assert!(content_location.starts_with(&format!("/threads/{thread}/runs/")));
    assert_eq!(location, format!("{content_location}/stream"));
    let events = reader.collect().await;
    assert_eq!(events[0].event, "metadata");
    assert_eq!(events[0].data["attempt"], 1);
    let run_id = events[0].data["run_id"].as_str().expect("id");
    assert!(content_location.ends_with(run_id));
    // No ids unless the run is resumable.
    assert!(events.iter().all(|e| e.id.is_none()));
    let update = events
        .iter()
        .find(|e| e.event == "updates")
        .expect("an updates event");
    assert_eq!(
        update.data,
        json!({"respond": {"messages": [{"role": "assistant", "content": "echo: hi"}]}})
    );
    let last = events
        .iter()
        .rev()
        .find(|e| e.event == "values")
        .expect("values");
    assert_eq!(
        last.data["messages"],
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "echo: hi"}])
    );
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("values"));
    let run = get_run(&s, &thread, run_id).await;
    assert_eq!(run["status"], "success");
    let thread_now = s
        .get_json(&format!("/threads/{thread}"), StatusCode::OK)
        .await;
    assert_eq!(thread_now["status"], "idle");
    assert_eq!(thread_now["values"]["messages"][1]["content"], "echo: hi");
    s.stop().await;
}

#[tokio::test]
async fn sse_frames_are_crlf_with_event_data_id_in_order_for_resumable_runs() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (_, mut reader) = stream(
        &s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("x", json!({})), "stream_mode": "updates", "stream_resumable": true}),
    )
    .await;
    let mut events = Vec::new();
    while let Some(e) = reader.next().await {
        events.push(e);
    }
    assert!(reader.raw.starts_with("event: metadata\r\ndata: {"));
    for frame in reader.raw.split("\r\n\r\n").filter(|f| !f.is_empty()) {
        let lines: Vec<&str> = frame.split("\r\n").collect();
        assert_eq!(lines.len(), 3, "event, data, id: {frame:?}");
        assert!(
            lines[0].starts_with("event: ")
                && lines[1].starts_with("data: ")
                && lines[2].starts_with("id: ")
        );
    }
    let ids: Vec<i64> = events
        .iter()
        .map(|e| e.id.as_deref().expect("id").parse().expect("number"))
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase: {ids:?}");
    // Only the requested mode (plus metadata).
    assert!(
        events
            .iter()
            .all(|e| e.event == "metadata" || e.event == "updates")
    );
    s.stop().await;
}

#[tokio::test]
async fn a_reconnect_with_last_event_id_replays_the_rest() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (headers, reader) = stream(
        &s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("r", json!({"ask_human": true})), "stream_mode": ["values", "updates"], "stream_resumable": true}),
    )
    .await;
    let all = reader.collect().await;
    assert!(all.len() >= 4, "{all:?}");
    let location = headers["location"].to_str().expect("ascii");
    let after = all[1].id.clone().expect("id");
    let replay = s
        .client
        .get(s.url(location))
        .header("last-event-id", after)
        .send()
        .await
        .expect("join");
    assert_eq!(replay.status(), StatusCode::OK);
    let replayed = SseReader::new(replay).collect().await;
    let tail: Vec<(&str, &Value)> = all[2..]
        .iter()
        .map(|e| (e.event.as_str(), &e.data))
        .collect();
    let got: Vec<(&str, &Value)> = replayed
        .iter()
        .map(|e| (e.event.as_str(), &e.data))
        .collect();
    assert_eq!(got, tail);
    // The Python SDK's join without modes sends an empty `stream_mode`: the run's own modes.
    let empty_modes = s
        .client
        .get(s.url(&format!("{location}?stream_mode=")))
        .header("last-event-id", all[1].id.clone().expect("id"))
        .send()
        .await
        .expect("join");
    assert_eq!(empty_modes.status(), StatusCode::OK);
    let again = SseReader::new(empty_modes).collect().await;
    let again: Vec<(&str, &Value)> = again.iter().map(|e| (e.event.as_str(), &e.data)).collect();
    assert_eq!(again, tail);
    // The pause is in the replay: updates with __interrupt__.
    assert!(replayed.iter().any(|e| e.event == "updates"
        && e.data["__interrupt__"][0]["value"] == json!({"question": "approve?"})));
    // A join without Last-Event-ID on an ended run ends at once with nothing.
    let join = s.client.get(s.url(location)).send().await.expect("join");
    assert!(SseReader::new(join).collect().await.is_empty());
    s.stop().await;
}

#[tokio::test]
async fn wait_pauses_on_the_interrupt_and_a_resume_command_finishes_it() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let paused = wait(&s, &thread, json!({"assistant_id": "agent", "input": user_input("ship it", json!({"ask_human": true}))}), StatusCode::OK).await;
    assert_eq!(
        paused["__interrupt__"][0]["value"],
        json!({"question": "approve?"})
    );
    assert!(paused["__interrupt__"][0]["id"].is_string());
    assert_eq!(paused["messages"][1]["content"], "echo: ship it");
    let t = s
        .get_json(&format!("/threads/{thread}"), StatusCode::OK)
        .await;
    assert_eq!(t["status"], "interrupted");
    let interrupts = t["interrupts"].as_object().expect("map");
    assert_eq!(interrupts.len(), 1);
    let state = s
        .get_json(&format!("/threads/{thread}/state"), StatusCode::OK)
        .await;
    assert_eq!(state["next"], json!(["human"]));
    assert_eq!(state["tasks"][0]["name"], "human");
    assert_eq!(
        state["interrupts"][0]["value"],
        json!({"question": "approve?"})
    );
    assert_eq!(
        state["tasks"][0]["interrupts"][0]["value"],
        json!({"question": "approve?"})
    );

    let done = wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "command": {"resume": "yes"}}),
        StatusCode::OK,
    )
    .await;
    assert!(done.get("__interrupt__").is_none());
    assert_eq!(
        done["messages"][2],
        json!({"role": "human", "content": "yes"})
    );
    let t = s
        .get_json(&format!("/threads/{thread}"), StatusCode::OK)
        .await;
    assert_eq!(t["status"], "idle");
    assert_eq!(t["interrupts"], json!({}));
    s.stop().await;
}

#[tokio::test]
async fn interrupt_before_pauses_and_a_null_input_continues() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let paused = wait(&s, &thread, json!({"assistant_id": "agent", "input": user_input("a", json!({})), "interrupt_before": ["respond"]}), StatusCode::OK).await;
    assert_eq!(paused["messages"].as_array().map(Vec::len), Some(1));
    let state = s
        .get_json(&format!("/threads/{thread}/state"), StatusCode::OK)
        .await;
    assert_eq!(state["next"], json!(["respond"]));
    assert_eq!(
        s.get_json(&format!("/threads/{thread}"), StatusCode::OK)
            .await["status"],
        "interrupted"
    );
    let done = wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "input": null}),
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["messages"][1]["content"], "echo: a");
    wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "input": {}, "interrupt_after": ["nope"]}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn command_update_and_goto_and_a_fork_from_a_checkpoint() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "input": user_input("first", json!({}))}),
        StatusCode::OK,
    )
    .await;
    let history = s
        .post_json(
            &format!("/threads/{thread}/history"),
            json!({"limit": 10}),
            StatusCode::OK,
        )
        .await;
    // Fork from the input checkpoint of the first run (before `respond` ran).
    let input_checkpoint = history
        .as_array()
        .expect("list")
        .iter()
        .find(|h| h["next"] == json!(["respond"]))
        .expect("input checkpoint")["checkpoint"]["checkpoint_id"]
        .clone();
    let forked = wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "input": null, "checkpoint_id": input_checkpoint}),
        StatusCode::OK,
    )
    .await;
    assert_eq!(forked["messages"].as_array().map(Vec::len), Some(2));

    // Command update + goto: append a user message and run `respond` again.
    let commanded = wait(&s, &thread, json!({"assistant_id": "agent", "command": {"update": {"messages": [{"role": "user", "content": "again"}]}, "goto": "respond"}}), StatusCode::OK).await;
    let messages = commanded["messages"].as_array().expect("messages");
    assert_eq!(
        messages.last().map(|m| m["content"].clone()),
        Some(json!("echo: again"))
    );
    wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "command": {"goto": "nowhere"}}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn background_runs_join_list_get_and_delete() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let response = s
        .post(&format!("/threads/{thread}/runs"), json!({"assistant_id": "agent", "input": user_input("bg", json!({})), "metadata": {"tag": "t1"}}))
        .await;
    let content_location = response.headers()["content-location"]
        .to_str()
        .expect("ascii")
        .to_owned();
    let run = expect_json(response, StatusCode::OK).await;
    let run_id = run["run_id"].as_str().expect("id").to_owned();
    assert_eq!(content_location, format!("/threads/{thread}/runs/{run_id}"));
    for key in [
        "run_id",
        "thread_id",
        "assistant_id",
        "status",
        "created_at",
        "multitask_strategy",
    ] {
        assert!(!run[key].is_null(), "{key} present");
    }
    assert_eq!(run["multitask_strategy"], "enqueue");
    assert_eq!(run["metadata"], json!({"tag": "t1"}));
    let joined = s
        .get_json(
            &format!("/threads/{thread}/runs/{run_id}/join"),
            StatusCode::OK,
        )
        .await;
    assert_eq!(joined["messages"][1]["content"], "echo: bg");
    let got = get_run(&s, &thread, &run_id).await;
    assert_eq!(got["status"], "success");
    let listed = s
        .get_json(&format!("/threads/{thread}/runs"), StatusCode::OK)
        .await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1));
    let deleted = s
        .client
        .delete(s.url(&format!("/threads/{thread}/runs/{run_id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    s.get_json(
        &format!("/threads/{thread}/runs/{run_id}"),
        StatusCode::NOT_FOUND,
    )
    .await;
    s.get_json(
        &format!("/threads/{thread}/runs/not-a-uuid"),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    s.stop().await;
}

#[tokio::test]
async fn cancelling_a_sleeping_run_ends_it_interrupted() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (run_id, reader) = sleeping_run(&s, &thread, 600.0).await;
    let cancelled = cancel(&s, &thread, &run_id, "").await;
    assert_eq!(cancelled.status(), StatusCode::ACCEPTED);
    assert_eq!(cancelled.text().await.expect("body"), "");
    // The stream closes once the run has stopped.
    reader.collect().await;
    let run = get_run(&s, &thread, &run_id).await;
    assert_eq!(run["status"], "interrupted");
    // The thread is usable again at once.
    let next = wait(
        &s,
        &thread,
        json!({"assistant_id": "agent", "input": user_input("after", json!({"sleep": 0}))}),
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        next["messages"]
            .as_array()
            .expect("messages")
            .last()
            .expect("last")["content"],
        "echo: after"
    );
    s.stop().await;
}

#[tokio::test]
async fn reject_refuses_with_409_while_a_run_is_in_flight() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (run_id, reader) = sleeping_run(&s, &thread, 600.0).await;
    let refused = s
        .post_json(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": {}, "multitask_strategy": "reject"}),
            StatusCode::CONFLICT,
        )
        .await;
    assert!(
        refused["detail"]
            .as_str()
            .expect("detail")
            .contains("already running")
    );
    assert_eq!(
        s.get_json(&format!("/threads/{thread}"), StatusCode::OK)
            .await["status"],
        "busy"
    );
    let runs = s
        .get_json(&format!("/threads/{thread}/runs"), StatusCode::OK)
        .await;
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(1),
        "nothing was inserted"
    );
    cancel(&s, &thread, &run_id, "?wait=1").await;
    reader.collect().await;
    s.stop().await;
}

#[tokio::test]
async fn enqueue_runs_the_second_run_after_the_first() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let first = expect_json(
        s.post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": user_input("first", json!({"sleep": 0.2}))}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let second = expect_json(
        s.post(&format!("/threads/{thread}/runs"), json!({"assistant_id": "agent", "input": user_input("second", json!({"sleep": 0})), "multitask_strategy": "enqueue"})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["status"], "pending");
    let done = s
        .get_json(
            &format!(
                "/threads/{thread}/runs/{}/join",
                second["run_id"].as_str().expect("id")
            ),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        contents(&done),
        ["first", "echo: first", "second", "echo: second"]
    );
    let first_run = get_run(&s, &thread, first["run_id"].as_str().expect("id")).await;
    assert_eq!(first_run["status"], "success");
    s.stop().await;
}

#[tokio::test]
async fn interrupt_strategy_cancels_the_running_run_and_keeps_its_steps() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (first, second) = run_over_a_sleeping_run(&s, &thread, "interrupt").await;
    let first_run = get_run(&s, &thread, &first).await;
    assert_eq!(first_run["status"], "interrupted");
    // The first run's input checkpoint stays: its user message is in the state.
    assert_eq!(contents(&second), ["slow", "now", "echo: now"]);
    s.stop().await;
}

#[tokio::test]
async fn rollback_strategy_deletes_the_running_run_and_its_checkpoints() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (first, second) = run_over_a_sleeping_run(&s, &thread, "rollback").await;
    s.get_json(
        &format!("/threads/{thread}/runs/{first}"),
        StatusCode::NOT_FOUND,
    )
    .await;
    assert_eq!(
        contents(&second),
        ["now", "echo: now"],
        "the rolled-back run left nothing"
    );
    let history = s
        .post_json(
            &format!("/threads/{thread}/history"),
            json!({"limit": 100}),
            StatusCode::OK,
        )
        .await;
    assert!(
        history
            .as_array()
            .expect("list")
            .iter()
            .all(|h| h["metadata"]["run_id"] != first.as_str())
    );
    s.stop().await;
}

#[tokio::test]
async fn stateless_wait_and_stream_and_if_not_exists() {
    let s = TestServer::start().await;
    let done = s
        .post_json(
            "/runs/wait",
            json!({"assistant_id": "agent", "input": user_input("tmp", json!({}))}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(done["messages"][1]["content"], "echo: tmp");
    let (headers, reader) = stream(
        &s,
        "/runs/stream",
        json!({"assistant_id": "agent", "input": user_input("s", json!({}))}),
    )
    .await;
    assert!(
        headers["content-location"]
            .to_str()
            .expect("ascii")
            .starts_with("/runs/")
    );
    let events = reader.collect().await;
    assert_eq!(events[0].event, "metadata");
    assert!(events.iter().any(|e| e.event == "values"));

    // A missing thread: 404, or created with if_not_exists=create.
    let missing = "0191e7a6-1c2d-7e3f-8a4b-5c6d7e8f9a0b";
    wait(
        &s,
        missing,
        json!({"assistant_id": "agent", "input": {}}),
        StatusCode::NOT_FOUND,
    )
    .await;
    let made = wait(&s, missing, json!({"assistant_id": "agent", "input": user_input("new", json!({})), "if_not_exists": "create"}), StatusCode::OK).await;
    assert_eq!(made["messages"][1]["content"], "echo: new");
    let thread = s
        .get_json(&format!("/threads/{missing}"), StatusCode::OK)
        .await;
    assert_eq!(thread["metadata"]["graph_id"], "agent");
    s.stop().await;
}

#[tokio::test]
async fn debug_tasks_and_checkpoints_modes_stream_their_events() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (_, reader) = stream(
        &s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("d", json!({})), "stream_mode": ["debug", "tasks", "checkpoints"]}),
    )
    .await;
    let events: Vec<Event> = reader.collect().await;
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert!(
        !names.contains(&"values"),
        "values were not asked for: {names:?}"
    );
    let task = events
        .iter()
        .find(|e| e.event == "tasks" && e.data.get("input").is_some())
        .expect("task start");
    assert_eq!(task.data["name"], "respond");
    assert!(
        events
            .iter()
            .any(|e| e.event == "tasks" && e.data.get("result").is_some())
    );
    let checkpoint = events
        .iter()
        .rfind(|e| e.event == "checkpoints")
        .expect("checkpoint");
    assert_eq!(
        checkpoint.data["config"]["configurable"]["thread_id"],
        thread.as_str()
    );
    assert_eq!(
        checkpoint.data["values"]["messages"][1]["content"],
        "echo: d"
    );
    let kinds: Vec<&str> = events
        .iter()
        .filter(|e| e.event == "debug")
        .map(|e| e.data["type"].as_str().expect("type"))
        .collect();
    assert!(
        kinds.contains(&"checkpoint") && kinds.contains(&"task") && kinds.contains(&"task_result")
    );
    s.stop().await;
}

#[tokio::test]
async fn a_client_hang_up_cancels_the_run_with_on_disconnect_cancel() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (_, mut reader) = stream(
        &s,
        &format!("/threads/{thread}/runs/stream"),
        json!({"assistant_id": "agent", "input": user_input("bye", json!({"sleep": 600})), "on_disconnect": "cancel"}),
    )
    .await;
    let first = reader.next().await.expect("metadata");
    let run_id = first.data["run_id"].as_str().expect("id").to_owned();
    drop(reader); // the client hangs up
    // join returns once the run has ended.
    s.get_json(
        &format!("/threads/{thread}/runs/{run_id}/join"),
        StatusCode::OK,
    )
    .await;
    let run = get_run(&s, &thread, &run_id).await;
    assert_eq!(run["status"], "interrupted");
    s.stop().await;
}

#[tokio::test]
async fn cancel_with_wait_returns_the_join_body_and_a_pending_run_is_cancelled_at_once() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let (first, reader) = sleeping_run(&s, &thread, 600.0).await;
    let queued = expect_json(
        s.post(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "agent", "input": user_input("later", json!({}))}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    let queued_id = queued["run_id"].as_str().expect("id");
    let cancelled = cancel(&s, &thread, queued_id, "").await;
    assert_eq!(cancelled.status(), StatusCode::ACCEPTED);
    let queued_now = s
        .get_json(
            &format!("/threads/{thread}/runs/{queued_id}"),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        queued_now["status"], "interrupted",
        "a pending run is cancelled at once"
    );

    let body = expect_json(
        cancel(&s, &thread, &first, "?wait=true&action=interrupt").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(body["messages"][0]["content"], "slow");
    reader.collect().await;
    let unknown = cancel(&s, &thread, &first, "?action=explode").await;
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);
    s.stop().await;
}

#[tokio::test]
async fn a_graceful_stop_ends_open_streams_and_puts_the_running_run_back_in_the_queue() {
    let mut s = TestServer::start().await;
    let thread = s.thread().await;
    let (run_id, reader) = sleeping_run(&s, &thread, 600.0).await;
    let server = s.server.take().expect("running");
    server.shutdown().await;
    // The open stream ended with the server.
    reader.collect().await;
    // Started again on the same file, the run is pending (to resume), not lost.
    let backend = graphkit_server::backend::SqliteBackend::open(s.dir.path().join("server.db"))
        .await
        .expect("reopen");
    use graphkit_server::backend::{Backend, RunStatus};
    let run = backend
        .get_run(None, run_id.parse().expect("uuid"))
        .await
        .expect("read")
        .expect("the run is kept");
    assert_eq!(run.status, RunStatus::Pending);
    assert_eq!(run.worker_id, None);
}

/// The dependency a served graph reads from its context (the host gives it when registering).
struct Greeter {
    salutation: String,
}

#[derive(graphkit::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Greeting {
    name: String,
    greeting: String,
}

async fn greet(
    state: std::sync::Arc<Greeting>,
    greeter: graphkit::RunContext<Greeter>,
) -> GreetingUpdate {
    GreetingUpdate::new().greeting(format!("{}, {}!", greeter.salutation, state.name))
}

#[tokio::test]
async fn a_graph_with_a_context_is_served_with_the_hosts_value() {
    let mut graph = graphkit::StateGraph::<Greeting, Greeter>::new();
    graph
        .add_node("greet", greet)
        .add_edge(graphkit::START, "greet")
        .add_edge("greet", graphkit::END);
    let graph = graph
        .compile()
        .expect("the graph compiles")
        .with_context(Greeter {
            salutation: "Good morning".into(),
        });
    let s = TestServer::start_with(|server| server.graph_without_schema("greeter", graph)).await;
    let thread = s.thread().await;
    let done = wait(
        &s,
        &thread,
        json!({"assistant_id": "greeter", "input": {"name": "Ada"}}),
        StatusCode::OK,
    )
    .await;
    assert_eq!(done["greeting"], "Good morning, Ada!", "{done}");
}

#[derive(graphkit::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Doubling {
    x: i64,
    result: i64,
}

#[tokio::test]
async fn a_cached_nodes_update_carries_langgraphs_cached_metadata() {
    use graphkit::cache::{CachePolicy, InMemoryCache};
    use graphkit::nodes::NodeOptions;

    let mut graph = graphkit::StateGraph::<Doubling>::new();
    graph
        .add_node_with(
            "double",
            |s: std::sync::Arc<Doubling>| async move { DoublingUpdate::new().result(s.x * 2) },
            NodeOptions::new().cache(CachePolicy::new()),
        )
        .add_edge(graphkit::START, "double")
        .add_edge("double", graphkit::END);
    let graph = graph
        .compile_with(
            graphkit::CompileOptions::new().cache(std::sync::Arc::new(InMemoryCache::new())),
        )
        .expect("the graph compiles");
    let s = TestServer::start_with(|server| server.graph_without_schema("doubler", graph)).await;

    let mut updates = Vec::new();
    for _ in 0..2 {
        let thread = s.thread().await;
        let (_, reader) = stream(
            &s,
            &format!("/threads/{thread}/runs/stream"),
            json!({"assistant_id": "doubler", "input": {"x": 5}, "stream_mode": "updates"}),
        )
        .await;
        let events = reader.collect().await;
        let update = events
            .into_iter()
            .find(|e| e.event == "updates")
            .expect("an updates event");
        updates.push(update.data);
    }
    assert_eq!(updates[0], json!({"double": {"result": 10}}));
    assert_eq!(
        updates[1],
        json!({"double": {"result": 10}, "__metadata__": {"cached": true}})
    );
}
