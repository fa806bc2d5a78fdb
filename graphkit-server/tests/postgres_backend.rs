//! The PostgreSQL backend against a real server: the queue's rules (one running run per
//! thread, serial order, claims racing), leases and the sweeper, cancels, events and
//! LISTEN/NOTIFY wake-ups between two backends (as two processes would hold them).
//!
//! Needs `GRAPHKIT_TEST_POSTGRES_URL`; each test works in a fresh schema and drops it.
#![cfg(feature = "postgres")]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use graphkit_server::backend::{
    Backend, CancelAction, CancelOutcome, IfExists, Lease, MultitaskStrategy, NewRun, NewThread,
    PostgresBackend, PostgresOptions, RunEnd, RunRecord, RunStatus, ThreadStatus,
};
use serde_json::{Map, json};
use uuid::Uuid;

fn url(test: &str) -> Option<String> {
    match std::env::var("GRAPHKIT_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!("SKIPPED {test}: set GRAPHKIT_TEST_POSTGRES_URL to run it");
            None
        }
    }
}

/// A backend on a fresh schema, and a second one on the same schema (another "process").
struct Fixture {
    url: String,
    schema: String,
    a: Arc<PostgresBackend>,
    b: Arc<PostgresBackend>,
}

impl Fixture {
    /// The fixture of test `test` (schemas named after `tag`), or `None` (the test skipped)
    /// without `GRAPHKIT_TEST_POSTGRES_URL`.
    async fn start(test: &str, tag: &str) -> Option<Self> {
        Some(Self::new(url(test)?, tag).await)
    }

    async fn new(url: String, test: &str) -> Self {
        // Schema names stay short: the notify channels are `<schema>.<name>`, at most 63 bytes.
        let id = Uuid::now_v7().simple().to_string();
        let schema = format!("gk_pgb_{test}_{}", &id[id.len() - 16..]);
        let options = PostgresOptions::default().schema(schema.clone());
        let a = Arc::new(
            PostgresBackend::connect_with(&url, options.clone())
                .await
                .expect("connect a"),
        );
        let b = Arc::new(
            PostgresBackend::connect_with(&url, options)
                .await
                .expect("connect b"),
        );
        Self { url, schema, a, b }
    }

    async fn drop_schema(self) {
        use sqlx::Connection;
        drop((self.a, self.b));
        let mut connection = sqlx::PgConnection::connect(&self.url)
            .await
            .expect("connect");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA \"{}\" CASCADE",
            self.schema
        )))
        .execute(&mut connection)
        .await
        .expect("drop schema");
    }
}

async fn thread(backend: &PostgresBackend) -> Uuid {
    let id = Uuid::now_v7();
    backend
        .create_thread(NewThread {
            thread_id: id,
            metadata: Map::new(),
            if_exists: IfExists::Raise,
        })
        .await
        .expect("create thread");
    id
}

fn new_run(thread_id: Uuid, strategy: MultitaskStrategy) -> NewRun {
    NewRun {
        run_id: Uuid::now_v7(),
        thread_id,
        assistant_id: Uuid::now_v7(),
        metadata: Map::new(),
        kwargs: json!({"input": {"n": 1}}),
        multitask_strategy: strategy,
        create_thread: None,
        thread_metadata: Map::new(),
        not_before: None,
    }
}

/// Creates an `enqueue` run on thread `thread_id`.
async fn enqueue(backend: &PostgresBackend, thread_id: Uuid) -> RunRecord {
    backend
        .create_run(new_run(thread_id, MultitaskStrategy::Enqueue))
        .await
        .expect("create run")
        .run
}

const LEASE: Duration = Duration::from_secs(60);

/// Waits for a wake-up, failing the test (rather than hanging) if none comes in a minute.
async fn woken(wakeup: &mut graphkit_server::backend::Wakeup, what: &str) {
    tokio::time::timeout(Duration::from_secs(60), wakeup.changed())
        .await
        .unwrap_or_else(|_| panic!("no wake-up for {what}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_claimers_run_one_run_per_thread_in_creation_order() {
    let Some(f) = Fixture::start("racing_claimers", "race").await else {
        return;
    };
    let mut expected = Vec::new();
    for _ in 0..4 {
        let t = thread(&f.a).await;
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(enqueue(&f.a, t).await.run_id);
        }
        expected.push(runs);
    }
    // Rounds: 8 claimers on two backends race; each round exactly the head run of every
    // thread is claimed, then all are finished.
    for round in 0..3 {
        let mut claims = Vec::new();
        for i in 0..8 {
            let backend = if i % 2 == 0 { f.a.clone() } else { f.b.clone() };
            claims.push(tokio::spawn(async move {
                backend
                    .claim_run(&format!("w{i}"), LEASE)
                    .await
                    .expect("claim")
            }));
        }
        let mut claimed = Vec::new();
        for claim in claims {
            if let Some(run) = claim.await.unwrap() {
                claimed.push(run);
            }
        }
        // A claimer that lost every race may have found nothing; claim until empty.
        while let Some(run) = f.a.claim_run("late", LEASE).await.unwrap() {
            claimed.push(run);
        }
        let threads: HashSet<Uuid> = claimed.iter().map(|r| r.thread_id).collect();
        assert_eq!(claimed.len(), 4, "round {round}: one run per thread");
        assert_eq!(
            threads.len(),
            4,
            "round {round}: never two runs of one thread"
        );
        for run in &claimed {
            assert_eq!(run.status, RunStatus::Running);
            assert_eq!(run.attempt, 1);
            assert!(
                expected.iter().any(|runs| runs[round] == run.run_id),
                "round {round}: runs start in creation order"
            );
        }
        for run in claimed {
            let worker = run.worker_id.clone().unwrap();
            assert!(
                f.b.finish_run(run.run_id, &worker, RunEnd::Success, None)
                    .await
                    .unwrap()
            );
        }
    }
    assert!(f.a.claim_run("w", LEASE).await.unwrap().is_none());
    f.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reject_refuses_while_in_flight_and_interrupt_cancels_the_runs_in_flight() {
    let Some(f) = Fixture::start("multitask", "multitask").await else {
        return;
    };
    let t = thread(&f.a).await;
    let first = enqueue(&f.a, t).await;
    let queued = enqueue(&f.a, t).await;
    let err =
        f.b.create_run(new_run(t, MultitaskStrategy::Reject))
            .await
            .unwrap_err();
    assert_eq!(err.status().as_u16(), 409, "{err}");
    assert_eq!(
        f.a.list_runs(t, &Default::default()).await.unwrap().len(),
        2,
        "nothing inserted"
    );
    assert_eq!(
        f.a.get_thread(t).await.unwrap().unwrap().status,
        ThreadStatus::Busy
    );

    let running = f.a.claim_run("w1", LEASE).await.unwrap().unwrap();
    assert_eq!(running.run_id, first.run_id);
    let mut wakeup = f.a.watch_run(first.run_id);
    let created =
        f.b.create_run(new_run(t, MultitaskStrategy::Interrupt))
            .await
            .unwrap();
    assert_eq!(created.cancelled, vec![first.run_id, queued.run_id]);
    // The worker holding the first run hears it (notified through the other backend).
    woken(&mut wakeup, "the cancel").await;
    assert_eq!(
        f.a.heartbeat(first.run_id, "w1", LEASE).await.unwrap(),
        Lease::Held {
            cancel: Some(CancelAction::Interrupt)
        }
    );
    let queued = f.a.get_run(Some(t), queued.run_id).await.unwrap().unwrap();
    assert_eq!(
        queued.status,
        RunStatus::Interrupted,
        "a pending run is cancelled at once"
    );
    // The new run waits until the cancelled one ends.
    assert!(f.a.claim_run("w2", LEASE).await.unwrap().is_none());
    assert!(
        f.a.finish_run(
            first.run_id,
            "w1",
            RunEnd::Interrupted("cancelled".into()),
            None
        )
        .await
        .unwrap()
    );
    let next = f.a.claim_run("w2", LEASE).await.unwrap().unwrap();
    assert_eq!(next.run_id, created.run.run_id);
    // Cancelling a finished run changes nothing; an unknown run is None.
    assert_eq!(
        f.a.request_cancel(Some(t), first.run_id, CancelAction::Interrupt)
            .await
            .unwrap(),
        Some(CancelOutcome::AlreadyDone)
    );
    assert_eq!(
        f.a.request_cancel(None, Uuid::now_v7(), CancelAction::Interrupt)
            .await
            .unwrap(),
        None
    );
    f.drop_schema().await;
}

/// Sweeps until something is swept (a zero lease is over by the time the sweep looks, but
/// the database clock decides).
async fn sweep_until_swept(backend: &PostgresBackend, max_attempts: u32) -> Vec<Uuid> {
    for _ in 0..10_000 {
        let swept = backend.sweep_expired(max_attempts).await.expect("sweep");
        if !swept.is_empty() {
            return swept;
        }
        tokio::task::yield_now().await;
    }
    panic!("nothing was swept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_returns_the_run_as_its_next_attempt_until_attempts_run_out() {
    let Some(f) = Fixture::start("sweep", "sweep").await else {
        return;
    };
    let t = thread(&f.a).await;
    let run = enqueue(&f.a, t).await;
    let claimed =
        f.a.claim_run("dead-worker", Duration::ZERO)
            .await
            .unwrap()
            .unwrap();
    assert_eq!(claimed.attempt, 1);
    // The lease is over: the sweeper (in the other process) returns the run.
    assert_eq!(sweep_until_swept(&f.b, 2).await, vec![run.run_id]);
    assert_eq!(
        f.a.heartbeat(run.run_id, "dead-worker", LEASE)
            .await
            .unwrap(),
        Lease::Lost
    );
    assert!(
        !f.a.finish_run(run.run_id, "dead-worker", RunEnd::Success, None)
            .await
            .unwrap(),
        "a lost run cannot be finished by its old worker"
    );
    let again =
        f.b.claim_run("second-worker", Duration::ZERO)
            .await
            .unwrap()
            .unwrap();
    assert_eq!((again.run_id, again.attempt), (run.run_id, 2));
    assert_eq!(again.worker_id.as_deref(), Some("second-worker"));
    // Attempt 2 of 2 also dies: the run ends in error, and its stream says why.
    assert_eq!(sweep_until_swept(&f.a, 2).await, vec![run.run_id]);
    let failed = f.a.get_run(None, run.run_id).await.unwrap().unwrap();
    assert_eq!(failed.status, RunStatus::Error);
    assert!(
        failed
            .cancel_reason
            .unwrap()
            .contains("exceeded max attempts")
    );
    let events = f.a.read_events(run.run_id, 0).await.unwrap();
    assert_eq!(events.last().map(|e| e.event.as_str()), Some("error"));
    assert_eq!(
        f.a.get_thread(t).await.unwrap().unwrap().status,
        ThreadStatus::Error
    );
    f.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_count_from_one_per_run_and_wake_readers_in_another_process() {
    let Some(f) = Fixture::start("events", "events").await else {
        return;
    };
    let t = thread(&f.a).await;
    let run = enqueue(&f.a, t).await;
    let other = enqueue(&f.a, thread(&f.a).await).await;
    let mut wakeup = f.b.watch_run(run.run_id);
    let events = |names: &[&str]| {
        names
            .iter()
            .map(|n| ((*n).to_owned(), json!({"e": n}).to_string()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        f.a.append_events(run.run_id, &events(&["metadata", "values"]))
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        f.a.append_events(other.run_id, &events(&["metadata"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        f.a.append_events(run.run_id, &events(&["updates"]))
            .await
            .unwrap(),
        3
    );
    woken(&mut wakeup, "the events").await;
    let replay = f.b.read_events(run.run_id, 1).await.unwrap();
    let seen: Vec<(i64, &str)> = replay.iter().map(|e| (e.seq, e.event.as_str())).collect();
    assert_eq!(seen, [(2, "values"), (3, "updates")]);
    assert_eq!(replay[1].data, r#"{"e":"updates"}"#);
    assert_eq!(f.b.last_event_seq(run.run_id).await.unwrap(), 3);
    // A worker in the other process is woken for a new run.
    let mut queue = f.b.watch_queue();
    enqueue(&f.a, thread(&f.a).await).await;
    woken(&mut queue, "the new run").await;
    f.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_thread_takes_its_running_run_from_the_worker() {
    let Some(f) = Fixture::start("delete_thread", "delete").await else {
        return;
    };
    let t = thread(&f.a).await;
    let run = enqueue(&f.a, t).await;
    f.a.claim_run("w", LEASE).await.unwrap().unwrap();
    f.a.append_events(run.run_id, &[("metadata".into(), "{}".into())])
        .await
        .unwrap();
    assert!(f.b.delete_thread(t).await.unwrap());
    assert!(!f.b.delete_thread(t).await.unwrap());
    assert_eq!(
        f.a.heartbeat(run.run_id, "w", LEASE).await.unwrap(),
        Lease::Lost
    );
    assert!(f.a.get_run(None, run.run_id).await.unwrap().is_none());
    assert!(f.a.read_events(run.run_id, 0).await.unwrap().is_empty());
    // A thread id that exists conflicts unless told to return it.
    let t = thread(&f.a).await;
    let again = NewThread {
        thread_id: t,
        metadata: Map::new(),
        if_exists: IfExists::Raise,
    };
    assert_eq!(
        f.b.create_thread(again.clone())
            .await
            .unwrap_err()
            .status()
            .as_u16(),
        409
    );
    let same =
        f.b.create_thread(NewThread {
            if_exists: IfExists::DoNothing,
            ..again
        })
        .await
        .unwrap();
    assert_eq!(same.thread_id, t);
    f.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_and_count_apply_the_same_filters() {
    use graphkit_server::backend::{AssistantQuery, AssistantRecord, ThreadQuery};
    use graphkit_server::time::Timestamp;
    let Some(f) = Fixture::start("search_count", "search").await else {
        return;
    };
    let mut tagged = Map::new();
    tagged.insert("team".into(), json!("red"));
    let mut ids = Vec::new();
    for metadata in [tagged.clone(), tagged.clone(), Map::new()] {
        let id = Uuid::now_v7();
        f.a.create_thread(NewThread {
            thread_id: id,
            metadata,
            if_exists: IfExists::Raise,
        })
        .await
        .unwrap();
        ids.push(id);
    }
    let red = ThreadQuery {
        metadata: Some(tagged.clone()),
        limit: Some(1),
        ..ThreadQuery::default()
    };
    let page = f.b.search_threads(&red).await.unwrap();
    assert_eq!(page.len(), 1, "the limit applies to the search");
    assert_eq!(page[0].thread_id, ids[1], "newest first");
    assert_eq!(
        f.b.count_threads(&red).await.unwrap(),
        2,
        "not to the count"
    );
    let idle = ThreadQuery {
        status: Some(ThreadStatus::Idle),
        ..ThreadQuery::default()
    };
    assert_eq!(f.b.search_threads(&idle).await.unwrap().len(), 3);
    assert_eq!(f.b.count_threads(&idle).await.unwrap(), 3);

    for (name, graph_id) in [("one", "g1"), ("two", "g1"), ("three", "g2")] {
        f.a.put_assistant(&AssistantRecord {
            assistant_id: Uuid::now_v7(),
            graph_id: graph_id.into(),
            config: json!({}),
            context: json!({}),
            metadata: tagged.clone(),
            name: name.into(),
            description: None,
            created_at: Timestamp::now(),
            updated_at: Timestamp::now(),
            version: 1,
        })
        .await
        .unwrap();
    }
    let g1 = AssistantQuery {
        graph_id: Some("g1".into()),
        metadata: Some(tagged),
        offset: 1,
        ..AssistantQuery::default()
    };
    assert_eq!(f.b.search_assistants(&g1).await.unwrap().len(), 1);
    assert_eq!(f.b.count_assistants(&g1).await.unwrap(), 2);
    let named = AssistantQuery {
        name: Some("three".into()),
        ..AssistantQuery::default()
    };
    assert_eq!(f.b.count_assistants(&named).await.unwrap(), 1);
    f.drop_schema().await;
}
