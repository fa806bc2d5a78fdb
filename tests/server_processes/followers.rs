//! Issue 26's cross-process stream: a run of the gated `steps` graph executes in one
//! `graphkit-test-server` process (the only one with workers) while many clients follow its
//! stream on a second process (`--workers 0`) sharing the PostgreSQL schema. Every follower
//! must get every event exactly once and in order (the events reach the second process
//! through `LISTEN/NOTIFY` and its in-memory feed), a follower joining mid-run must get the
//! earlier events from the database and the rest live, and the stream must equal the run's
//! record replayed with `Last-Event-ID: 0` from the first process.
//!
//! Needs `GRAPHKIT_TEST_POSTGRES_URL`; skips (and says so) without it.

use super::{new_thread, one_at_a_time, open_gate, start_gated_run};
use graphkit_tests::{
    DEADLINE, Event, Http, ServerProcess, Sse, drop_schema, fresh_schema, postgres_args,
    postgres_url,
};
use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_graphkit-test-server");
const FOLLOWERS: usize = 25;

/// Every remaining event of a stream (failing the test rather than hanging).
async fn rest(mut stream: Sse) -> Vec<Event> {
    let mut events = Vec::new();
    let read = async {
        while let Some(event) = stream.next().await {
            events.push(event);
        }
    };
    tokio::time::timeout(DEADLINE, read)
        .await
        .expect("the stream ended");
    events
}

/// What a follower saw, comparable: (id, event, data).
fn seen(events: &[Event]) -> Vec<(i64, String, Value)> {
    events
        .iter()
        .map(|e| {
            let id = e.id.as_deref().and_then(|id| id.parse().ok());
            (
                id.expect("resumable runs send numeric ids"),
                e.event.clone(),
                e.data.clone(),
            )
        })
        .collect()
}

fn is_update_of(event: &Event, step: &str) -> bool {
    event.event == "updates" && event.data.get(step).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_in_another_process_get_every_event_of_a_run_once_in_order() {
    let _alone = one_at_a_time().await;
    let Some(url) = postgres_url("server_followers") else {
        return;
    };
    let schema = fresh_schema("follow");
    let args = postgres_args(&url, &schema);
    let runner = ServerProcess::start(BINARY, &[&args[..], &["--workers", "2"]].concat());
    let watcher_process = ServerProcess::start(BINARY, &[&args[..], &["--workers", "0"]].concat());
    let (first, second) = (runner.base.clone(), watcher_process.base.clone());
    let http = Http::default();

    let thread = new_thread(&http, &first).await;
    let run_id = start_gated_run(&http, &first, &thread).await;
    let stream_url = format!("{second}/threads/{thread}/runs/{run_id}/stream");

    // Followers on the second process from the start, while step_1 waits at its gate.
    let mut watcher = http.sse(&stream_url, Some("0")).await;
    let mut followers = Vec::new();
    for _ in 0..FOLLOWERS {
        let stream = http.sse(&stream_url, Some("0")).await;
        followers.push(tokio::spawn(rest(stream)));
    }
    open_gate(&http, &first, &thread, "step_1").await;
    open_gate(&http, &first, &thread, "step_2").await;
    // Mid-run: step_2's update reached the second process; step_3 waits at its gate.
    let mut watched = Vec::new();
    while !watched.iter().any(|e| is_update_of(e, "step_2")) {
        let event = tokio::time::timeout(DEADLINE, watcher.next())
            .await
            .expect("an event")
            .expect("the stream goes on until step_2's update");
        watched.push(event);
    }
    let late = tokio::spawn(rest(http.sse(&stream_url, Some("0")).await));
    open_gate(&http, &first, &thread, "step_3").await;
    open_gate(&http, &first, &thread, "step_4").await;
    watched.extend(rest(watcher).await);

    // The record, replayed from the database by the process that ran the run.
    let record = rest(
        http.sse(
            &format!("{first}/threads/{thread}/runs/{run_id}/stream"),
            Some("0"),
        )
        .await,
    )
    .await;
    let record = seen(&record);
    let ids: Vec<i64> = record.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
    for step in ["step_1", "step_2", "step_3", "step_4"] {
        assert!(
            record
                .iter()
                .any(|(_, event, data)| event == "updates" && data.get(step).is_some()),
            "no update of {step} in {record:?}"
        );
    }
    let state = http
        .get(&format!("{first}/threads/{thread}/runs/{run_id}"))
        .await;
    assert_eq!(state["status"], "success");

    assert_eq!(seen(&watched), record);
    for follower in followers {
        assert_eq!(seen(&follower.await.expect("follower")), record);
    }
    assert_eq!(
        seen(&late.await.expect("follower")),
        record,
        "a follower joining mid-run: the database, then live, no gap, no duplicate"
    );

    drop((runner, watcher_process));
    drop_schema(&url, &schema).await;
}
