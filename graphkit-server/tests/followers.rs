//! Many followers of one run's stream over HTTP: every follower gets every event once and in
//! order, a follower joining mid-run gets the earlier events from the database and the rest
//! live with no gap and no duplicate, and `Last-Event-ID` replays the rest of a finished run.
//!
//! The first tests drive a backend's followers directly, to see where events come from.
//! The HTTP test's run is the `relay` graph below: four steps, each held at a gate the test opens, so
//! the test (not timing) decides where the run stands when followers join.

use std::sync::Arc;
use std::time::Duration;

use crate::common;

use common::{Event, SseReader, TestServer};
use graphkit_server::backend::{
    Backend, Followed, MultitaskStrategy, NewRun, RunFollower, SqliteBackend,
};
use reqwest::StatusCode;
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use uuid::Uuid;

/// More events than a feed's buffer holds (1,024).
const MORE_THAN_THE_BUFFER: usize = 1024 + 5;

/// A backend with one run, claimed: the run's id and the claim's lease token.
async fn backend_with_run() -> (SqliteBackend, Uuid, Uuid) {
    let backend = SqliteBackend::in_memory().await.expect("backend");
    let run_id = Uuid::now_v7();
    backend
        .create_run(NewRun {
            run_id,
            thread_id: Uuid::now_v7(),
            assistant_id: Uuid::now_v7(),
            metadata: Map::new(),
            kwargs: Value::Null,
            multitask_strategy: MultitaskStrategy::Enqueue,
            create_thread: Some(Map::new()),
            thread_metadata: Map::new(),
            not_before: None,
        })
        .await
        .expect("run");
    let claimed = backend
        .claim_run("w", std::time::Duration::from_secs(60))
        .await
        .expect("claim")
        .expect("the run");
    let token = claimed.lease_token.expect("a lease token");
    (backend, run_id, token)
}

async fn next_seqs(follower: &mut RunFollower, backend: &dyn Backend) -> Vec<i64> {
    match follower.next(backend).await.expect("next") {
        Followed::Events(events) => events.iter().map(|e| e.seq).collect(),
        other => panic!("expected events, got {other:?}"),
    }
}

#[tokio::test]
async fn live_events_come_from_memory_after_the_replay() {
    let (backend, run, token) = backend_with_run().await;
    let stored = vec![("metadata".to_owned(), "{}".to_owned())];
    backend
        .append_events(run, token, &stored)
        .await
        .expect("append");
    let mut follower = backend.follow_run(run, 0);
    assert_eq!(next_seqs(&mut follower, &backend).await, [1]);
    // Handed to the feed without being stored: only memory can give it.
    backend
        .feeds()
        .publish(run, 2, &[("values".into(), "{}".into())]);
    assert_eq!(next_seqs(&mut follower, &backend).await, [2]);
    assert!(matches!(
        follower.next(&backend).await.expect("next"),
        Followed::Waiting
    ));
}

#[tokio::test]
async fn a_follower_behind_the_feeds_buffer_reads_the_database() {
    let (backend, run, token) = backend_with_run().await;
    let mut behind = backend.follow_run(run, 0);
    assert!(matches!(
        behind.next(&backend).await.expect("next"),
        Followed::Waiting
    ));
    let many: Vec<(String, String)> = (0..MORE_THAN_THE_BUFFER)
        .map(|i| ("custom".to_owned(), i.to_string()))
        .collect();
    backend
        .append_events(run, token, &many)
        .await
        .expect("append");
    // The feed kept only the newest events; the first ones come from the database.
    let all: Vec<i64> = (1..=many.len() as i64).collect();
    assert_eq!(next_seqs(&mut behind, &backend).await, all);
    let mut late = backend.follow_run(run, 0);
    assert_eq!(next_seqs(&mut late, &backend).await, all);
}

const STEPS: [&str; 4] = ["step_1", "step_2", "step_3", "step_4"];
/// A stuck stream fails the test instead of hanging it.
const DEADLINE: Duration = Duration::from_secs(120);

#[derive(graphkit::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Relay {
    #[reducer(append)]
    #[serde(default)]
    done: Vec<String>,
}

/// One gate per step, opened by the test with a permit.
#[derive(Clone)]
struct Gates(Arc<[Semaphore; 4]>);

impl Gates {
    fn closed() -> Self {
        Self(Arc::new([const { Semaphore::const_new(0) }; 4]))
    }

    fn gate(&self, step: usize) -> &Semaphore {
        &self.0[step]
    }

    fn open(&self, step: usize) {
        self.gate(step).add_permits(1);
    }
}

async fn step(
    state: Arc<Relay>,
    gates: graphkit::RunContext<Gates>,
) -> Result<RelayUpdate, graphkit::error::BoxError> {
    let index = state.done.len();
    let name = STEPS.get(index).ok_or("relay ran past its last step")?;
    gates.gate(index).acquire().await?.forget();
    Ok(RelayUpdate::new().done(vec![(*name).to_owned()]))
}

async fn relay_server(gates: Gates) -> TestServer {
    let mut graph = graphkit::StateGraph::<Relay, Gates>::new();
    for name in STEPS {
        graph.add_node(name, step);
    }
    graph.add_edge(graphkit::START, STEPS[0]);
    for pair in STEPS.windows(2) {
        graph.add_edge(pair[0], pair[1]);
    }
    graph.add_edge(STEPS[3], graphkit::END);
    let graph = graph.compile().expect("relay compiles").with_context(gates);
    TestServer::start_with(|server| server.graph_without_schema("relay", graph)).await
}

/// Joins the run's stream, with `Last-Event-ID` if given.
async fn join(s: &TestServer, path: &str, last_event_id: Option<&str>) -> SseReader {
    let mut request = s.client.get(s.url(&format!("{path}/stream")));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let response = request.send().await.expect("join");
    assert_eq!(response.status(), StatusCode::OK);
    SseReader::new(response)
}

async fn collect(reader: SseReader) -> Vec<Event> {
    tokio::time::timeout(DEADLINE, reader.collect())
        .await
        .expect("the stream ended")
}

/// What a follower saw, comparable: (id, event, data).
fn seen(events: &[Event]) -> Vec<(i64, &str, &Value)> {
    events
        .iter()
        .map(|e| {
            let id = e.id.as_deref().expect("resumable runs send ids");
            (id.parse().expect("numeric id"), e.event.as_str(), &e.data)
        })
        .collect()
}

fn is_update_of(event: &Event, step: &str) -> bool {
    event.event == "updates" && event.data.get(step).is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_followers_and_late_joiners_get_every_event_once_in_order() {
    let gates = Gates::closed();
    let s = relay_server(gates.clone()).await;
    let thread = s.thread().await;
    let run = s
        .post_json(
            &format!("/threads/{thread}/runs"),
            json!({"assistant_id": "relay", "input": {}, "stream_mode": ["values", "updates"],
                   "stream_resumable": true}),
            StatusCode::OK,
        )
        .await;
    let run_id = run["run_id"].as_str().expect("run id");
    let path = format!("/threads/{thread}/runs/{run_id}");

    // Followers from the start, while the run waits at its first gate.
    let mut watcher = join(&s, &path, Some("0")).await;
    let mut early = Vec::new();
    for _ in 0..30 {
        let reader = join(&s, &path, Some("0")).await;
        early.push(tokio::spawn(collect(reader)));
    }
    gates.open(0);
    gates.open(1);
    // Mid-run: step_2 is done and step_3 waits at its gate.
    let mut watched = Vec::new();
    while !watched.iter().any(|e| is_update_of(e, "step_2")) {
        let event = tokio::time::timeout(DEADLINE, watcher.next())
            .await
            .expect("an event")
            .expect("the run goes on until step_2");
        watched.push(event);
    }
    let mid_from_start = tokio::spawn(collect(join(&s, &path, Some("0")).await));
    let mid_from_now = tokio::spawn(collect(join(&s, &path, None).await));
    gates.open(2);
    gates.open(3);
    watched.extend(collect(watcher).await);

    // The record: the whole stream replayed from the database once the run has ended.
    let reference = collect(join(&s, &path, Some("0")).await).await;
    let reference = seen(&reference);
    let ids: Vec<i64> = reference.iter().map(|(id, _, _)| *id).collect();
    assert_eq!(ids, (1..=ids.len() as i64).collect::<Vec<_>>());
    for step in STEPS {
        assert!(
            reference
                .iter()
                .any(|(_, event, data)| *event == "updates" && data.get(step).is_some()),
            "no update of {step} in {reference:?}"
        );
    }
    assert_eq!(seen(&watched), reference);
    for follower in early {
        assert_eq!(seen(&follower.await.expect("follower")), reference);
    }
    assert_eq!(
        seen(&mid_from_start.await.expect("follower")),
        reference,
        "a follower joining mid-run from the start: the database, then live, no gap, no duplicate"
    );
    // Without Last-Event-ID: from the last event stored when it joined (step_2's update or
    // later), every event after that.
    let from_now = mid_from_now.await.expect("follower");
    let from_now = seen(&from_now);
    let first = from_now.first().expect("the events after the join").0;
    let step_2 = reference
        .iter()
        .position(|(_, event, data)| *event == "updates" && data.get("step_2").is_some())
        .expect("step_2's update");
    assert!(first > reference[step_2].0, "{from_now:?}");
    assert_eq!(from_now, reference[(first - 1) as usize..]);

    // Last-Event-ID on the ended run: the rest, from the database.
    let after = reference[step_2].0.to_string();
    let rest = collect(join(&s, &path, Some(&after)).await).await;
    assert_eq!(seen(&rest), reference[step_2 + 1..]);
    s.stop().await;
}
