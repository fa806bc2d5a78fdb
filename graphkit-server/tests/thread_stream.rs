//! `GET /threads/{thread_id}/stream` (`threads.join_stream`): every run on a thread, one
//! after another, on each backend; `Last-Event-ID` replays; `lifecycle` shows only starts
//! and ends; what cannot be served is refused with a 422 naming it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{Event, SseReader, TestServer, expect_json, user_input};
use crate::http_contract::serve;

/// A guard against a hang: a stream that stops sending fails the test instead.
const PATIENCE: Duration = Duration::from_secs(120);

async fn open(s: &TestServer, thread: &str, query: &str, last_event_id: Option<&str>) -> SseReader {
    let mut request = s
        .client
        .get(s.url(&format!("/threads/{thread}/stream{query}")));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.expect("send");
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap_or_default()
            .starts_with("text/event-stream")
    );
    SseReader::new(response)
}

/// Events up to and including the `count`-th `run_done`.
async fn until_runs_done(reader: &mut SseReader, count: usize) -> Vec<Event> {
    let read = async {
        let mut events = Vec::new();
        let mut done = 0;
        while done < count {
            let event = reader
                .next()
                .await
                .expect("the thread stream never ends by itself");
            if event.event == "metadata" && event.data["status"] == "run_done" {
                done += 1;
            }
            events.push(event);
        }
        events
    };
    tokio::time::timeout(PATIENCE, read)
        .await
        .expect("the thread stream went quiet")
}

/// A run on the thread, waited for; its id.
async fn run(s: &TestServer, thread: &str, text: &str) -> String {
    let response = s
        .post(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": "agent", "input": user_input(text, json!({})), "stream_mode": ["values", "updates"]}),
        )
        .await;
    let location = response.headers()["content-location"]
        .to_str()
        .expect("text")
        .to_owned();
    expect_json(response, StatusCode::OK).await;
    location.rsplit('/').next().expect("run id").to_owned()
}

/// A run's events as its own stream replays them (`Last-Event-ID: 0`).
async fn run_events(s: &TestServer, thread: &str, run: &str) -> Vec<(String, Value)> {
    let response = s
        .client
        .get(s.url(&format!("/threads/{thread}/runs/{run}/stream")))
        .header("last-event-id", "0")
        .send()
        .await
        .expect("send");
    let events = tokio::time::timeout(PATIENCE, SseReader::new(response).collect())
        .await
        .expect("an ended run's stream ends");
    events.into_iter().map(|e| (e.event, e.data)).collect()
}

fn run_of(event: &Event) -> String {
    let id = event.id.as_deref().expect("every event has an id");
    id.split(':').next().expect("run id part").to_owned()
}

async fn every_run_is_streamed_in_order_and_replays_after_its_id(s: &TestServer) {
    let thread = s.thread().await;
    let mut live = open(s, &thread, "", None).await;
    let first = run(s, &thread, "one").await;
    let second = run(s, &thread, "two").await;
    let events = until_runs_done(&mut live, 2).await;

    // Each run as its own stream shows it, then its run_done.
    let mut expected = Vec::new();
    for run_id in [&first, &second] {
        expected.extend(run_events(s, &thread, run_id).await);
        expected.push((
            "metadata".to_owned(),
            json!({"status": "run_done", "run_id": run_id}),
        ));
    }
    let got: Vec<(String, Value)> = events
        .iter()
        .map(|e| (e.event.clone(), e.data.clone()))
        .collect();
    assert_eq!(got, expected);
    assert_eq!(events[0].data, json!({"run_id": first, "attempt": 1}));
    let first_done = events
        .iter()
        .position(|e| e.data["status"] == "run_done")
        .expect("the first run's end");
    assert_eq!(
        events[first_done].id.as_deref(),
        Some(format!("{first}:done").as_str())
    );
    assert!(events[..=first_done].iter().all(|e| run_of(e) == first));
    assert!(events[first_done + 1..].iter().all(|e| run_of(e) == second));
    assert!(
        events
            .iter()
            .any(|e| e.data["messages"][3]["content"] == "echo: two"),
        "{events:?}"
    );

    // Reconnecting after the first run's end gives the second run whole.
    let mut replay = open(s, &thread, "", events[first_done].id.as_deref()).await;
    let replayed = until_runs_done(&mut replay, 1).await;
    let ids =
        |events: &[Event]| -> Vec<Option<String>> { events.iter().map(|e| e.id.clone()).collect() };
    assert_eq!(ids(&replayed), ids(&events[first_done + 1..]));

    // Reconnecting in the middle of a run goes on after the event named.
    let mut middle = open(s, &thread, "", events[1].id.as_deref()).await;
    let rest = until_runs_done(&mut middle, 2).await;
    assert_eq!(ids(&rest), ids(&events[2..]));

    // lifecycle: only the starts and the ends.
    let from_start = format!("{first}:0");
    let mut lifecycle = open(s, &thread, "?stream_mode=lifecycle", Some(&from_start)).await;
    let lived = until_runs_done(&mut lifecycle, 2).await;
    let data: Vec<Value> = lived.iter().map(|e| e.data.clone()).collect();
    assert_eq!(
        data,
        [
            json!({"run_id": first, "attempt": 1}),
            json!({"status": "run_done", "run_id": first}),
            json!({"run_id": second, "attempt": 1}),
            json!({"status": "run_done", "run_id": second}),
        ]
    );
    assert!(lived.iter().all(|e| e.event == "metadata"));

    // Without Last-Event-ID the stream starts now: the ended runs are not sent again, and
    // the next run is.
    let mut now = open(s, &thread, "?stream_mode=run_modes", None).await;
    let third = run(s, &thread, "three").await;
    let fresh = until_runs_done(&mut now, 1).await;
    assert!(fresh.iter().all(|e| run_of(e) == third), "{fresh:?}");
    assert_eq!(fresh.len(), run_events(s, &thread, &third).await.len() + 1);
}

async fn what_cannot_be_served_is_refused_by_name(s: &TestServer) {
    let thread = s.thread().await;
    let cases = [
        (
            format!("/threads/{thread}/stream?stream_mode=state_update"),
            None,
            "state_update",
        ),
        (
            format!("/threads/{thread}/stream?stream_modes=run_modes,values"),
            None,
            "values",
        ),
        (
            format!("/threads/{thread}/stream"),
            Some("7"),
            "Last-Event-ID",
        ),
        ("/threads/not-a-uuid/stream".to_owned(), None, "UUID"),
    ];
    for (path, last_event_id, names) in cases {
        let mut request = s.client.get(s.url(&path));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let answer = expect_json(
            request.send().await.expect("send"),
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        let detail = answer["detail"].as_str().unwrap_or_default();
        assert!(detail.contains(names), "{path}: {detail}");
    }
    let missing = uuid::Uuid::now_v7();
    let answer = s
        .get_json(&format!("/threads/{missing}/stream"), StatusCode::NOT_FOUND)
        .await;
    assert!(
        answer["detail"]
            .as_str()
            .unwrap_or_default()
            .contains(&missing.to_string())
    );
}

over_each_backend!(
    every_run_is_streamed_in_order_and_replays_after_its_id,
    what_cannot_be_served_is_refused_by_name,
);

/// A thread stream on one server process follows the runs another process creates and
/// executes (on PostgreSQL two backends on one schema; on SQLite two servers on one file).
async fn runs_of_another_process_are_followed(fixture: crate::backend_contract::Fixture) {
    let (dir_a, dir_b) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let streaming = TestServer::start_on(std::sync::Arc::clone(&fixture.a), dir_a, |server| {
        server.workers(0)
    })
    .await;
    let running =
        TestServer::start_on(std::sync::Arc::clone(&fixture.b), dir_b, |server| server).await;
    let thread = running.thread().await;
    let mut live = open(&streaming, &thread, "?stream_mode=lifecycle", None).await;
    let first = run(&running, &thread, "one").await;
    let second = run(&running, &thread, "two").await;
    let events = until_runs_done(&mut live, 2).await;
    let data: Vec<Value> = events.iter().map(|e| e.data.clone()).collect();
    assert_eq!(
        data,
        [
            json!({"run_id": first, "attempt": 1}),
            json!({"status": "run_done", "run_id": first}),
            json!({"run_id": second, "attempt": 1}),
            json!({"status": "run_done", "run_id": second}),
        ]
    );
    drop(live);
    streaming.stop().await;
    running.stop().await;
    fixture.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_another_process_are_followed_on_sqlite() {
    runs_of_another_process_are_followed(crate::backend_contract::Fixture::sqlite().await).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_of_another_process_are_followed_on_postgres() {
    let Some(fixture) =
        crate::backend_contract::Fixture::postgres("runs_of_another_process_are_followed").await
    else {
        return;
    };
    runs_of_another_process_are_followed(fixture).await;
}
