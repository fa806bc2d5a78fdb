//! The `Backend` contract, one suite run against each backend: SQLite always, PostgreSQL
//! when `GRAPHKIT_TEST_POSTGRES_URL` names a server (otherwise those tests print why they
//! skip). The queue's rules (one running run per thread, serial order, claims racing),
//! leases and the sweeper, multitask strategies and cancels, events and wake-ups, threads
//! and searches.
//!
//! Each behaviour is one async function of a [`Fixture`]: two handles on one database, as two
//! server processes would hold them. PostgreSQL's are two backends on one fresh schema
//! (dropped afterwards); SQLite's backend serves one process, so both handles are the same
//! backend on a temporary file.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use graphkit::checkpoint::{CheckpointRecord, CheckpointSource, ListOptions, PendingWrite};
use graphkit::error::StorageError;
use graphkit_server::ServerError;
use graphkit_server::backend::{
    AssistantPatch, AssistantQuery, AssistantRecord, AssistantVersion, Backend, CancelAction,
    CancelOutcome, CronQuery, CronRecord, CronRun, Followed, IfExists, Lease, MultitaskStrategy,
    NewRun, NewThread, RunEnd, RunEnding, RunQuery, RunRecord, RunStatus, SqliteBackend,
    ThreadQuery, ThreadStatus, VersionQuery, Wakeup,
};
use graphkit_server::time::Timestamp;
use serde_json::{Map, Value, json};
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(60);

/// Two handles on one database, and what to clean up after the test (also the backends of
/// the HTTP contract suite, `http_contract.rs`).
pub(crate) struct Fixture {
    pub(crate) a: Arc<dyn Backend>,
    pub(crate) b: Arc<dyn Backend>,
    _dir: Option<tempfile::TempDir>,
    /// PostgreSQL: the server's URL and the test's schema, dropped at the end.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    schema: Option<(String, String)>,
}

impl Fixture {
    pub(crate) async fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend: Arc<dyn Backend> = Arc::new(
            SqliteBackend::open(dir.path().join("backend.db"))
                .await
                .expect("open"),
        );
        Self {
            a: backend.clone(),
            b: backend,
            _dir: Some(dir),
            schema: None,
        }
    }

    /// Two backends on a fresh schema, or `None` (the test skipped) without
    /// `GRAPHKIT_TEST_POSTGRES_URL`.
    #[cfg(feature = "postgres")]
    pub(crate) async fn postgres(test: &str) -> Option<Self> {
        use graphkit_server::backend::{PostgresBackend, PostgresOptions};
        let url = match std::env::var("GRAPHKIT_TEST_POSTGRES_URL") {
            Ok(url) if !url.is_empty() => url,
            _ => {
                eprintln!("SKIPPED {test}: set GRAPHKIT_TEST_POSTGRES_URL to run it");
                return None;
            }
        };
        // Schema names stay short: the notify channels are `<schema>.<name>`, at most 63 bytes.
        let id = Uuid::now_v7().simple().to_string();
        let schema = format!("gk_pgb_{}", &id[id.len() - 16..]);
        let options = PostgresOptions::default().schema(schema.clone());
        let connect = || async {
            let backend = PostgresBackend::connect_with(&url, options.clone())
                .await
                .expect("connect");
            Arc::new(backend) as Arc<dyn Backend>
        };
        let (a, b) = (connect().await, connect().await);
        Some(Self {
            a,
            b,
            _dir: None,
            schema: Some((url, schema)),
        })
    }

    /// Drops the PostgreSQL schema; nothing to do for SQLite (its directory goes with it).
    pub(crate) async fn finish(self) {
        #[cfg(feature = "postgres")]
        if let Some((url, schema)) = self.schema {
            use sqlx::Connection;
            drop((self.a, self.b));
            let mut connection = sqlx::PgConnection::connect(&url).await.expect("connect");
            // The dropped servers' background tasks (a worker's maintenance tick, the cron
            // check) may still hold a connection for a moment, and PostgreSQL can pick this
            // DROP as the victim of a deadlock with one of their queries: try again then.
            let mut attempts = 0;
            loop {
                let dropped = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
                )))
                .execute(&mut connection)
                .await;
                match dropped {
                    Ok(_) => break,
                    Err(sqlx::Error::Database(e))
                        if attempts < 20
                            && matches!(e.code().as_deref(), Some("40P01" | "55P03")) =>
                    {
                        attempts += 1;
                        tokio::time::sleep(std::time::Duration::from_millis(50 * attempts)).await;
                    }
                    Err(e) => panic!("drop schema {schema}: {e}"),
                }
            }
        }
    }
}

async fn thread(backend: &dyn Backend) -> Uuid {
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
        create_thread: Some(Map::new()),
        thread_metadata: Map::new(),
        not_before: None,
    }
}

/// Creates an `enqueue` run on thread `thread_id`.
async fn enqueue(backend: &dyn Backend, thread_id: Uuid) -> RunRecord {
    backend
        .create_run(new_run(thread_id, MultitaskStrategy::Enqueue))
        .await
        .expect("create run")
        .run
}

/// Claims the run `worker` should get next, with a lease of `lease`; fails without one.
async fn claim(backend: &dyn Backend, worker: &str, lease: Duration) -> RunRecord {
    let claimed = backend.claim_run(worker, lease).await.expect("claim");
    claimed.expect("a run to claim")
}

/// The lease token of a claimed run.
fn token(run: &RunRecord) -> Uuid {
    run.lease_token.expect("a claimed run has a lease token")
}

/// Ends a run the way the holder of the claim `token` would; `false` if it no longer held
/// it.
async fn finish(backend: &dyn Backend, run_id: Uuid, token: Uuid, end: RunEnd) -> bool {
    backend
        .finish_run(run_id, token, end, None)
        .await
        .expect("finish")
}

/// A run that must exist.
async fn stored_run(backend: &dyn Backend, thread_id: Option<Uuid>, run_id: Uuid) -> RunRecord {
    let found = backend.get_run(thread_id, run_id).await.expect("get");
    found.expect("the run")
}

/// Waits for a wake-up, failing the test (rather than hanging) if none comes in a minute.
async fn woken(wakeup: &mut Wakeup, what: &str) {
    tokio::time::timeout(Duration::from_secs(60), wakeup.changed())
        .await
        .unwrap_or_else(|_| panic!("no wake-up for {what}"));
}

/// Sweeps until something is swept (a zero lease is over by the time the sweep looks, but
/// the database's clock decides).
async fn sweep_until_swept(backend: &dyn Backend, max_attempts: u32) -> Vec<Uuid> {
    for _ in 0..10_000 {
        let swept = backend.sweep_expired(max_attempts).await.expect("sweep");
        if !swept.is_empty() {
            return swept;
        }
        tokio::task::yield_now().await;
    }
    panic!("nothing was swept");
}

// ---------------------------------------------------------------------------------------
// Behaviours

async fn one_running_run_per_thread_in_creation_order(f: &Fixture) {
    let (b, c) = (thread(&*f.a).await, thread(&*f.a).await);
    let b1 = enqueue(&*f.a, b).await;
    let b2 = enqueue(&*f.a, b).await;
    let c1 = enqueue(&*f.a, c).await;
    assert_eq!(b1.status, RunStatus::Pending);

    let first = claim(&*f.a, "w1", LEASE).await;
    assert_eq!(
        (first.run_id, first.attempt, first.status),
        (b1.run_id, 1, RunStatus::Running)
    );
    assert_eq!(first.worker_id.as_deref(), Some("w1"));
    let second = claim(&*f.b, "w2", LEASE).await;
    assert_eq!(
        second.run_id, c1.run_id,
        "b2 waits: its thread has a running run"
    );
    assert!(f.b.claim_run("w2", LEASE).await.expect("claim").is_none());

    // Only the holder may end it.
    assert_ne!(
        token(&first),
        token(&second),
        "each claim has a token of its own"
    );
    assert!(!finish(&*f.b, b1.run_id, token(&second), RunEnd::Success).await);
    assert!(finish(&*f.b, b1.run_id, token(&first), RunEnd::Success).await);
    let third = claim(&*f.a, "w1", LEASE).await;
    assert_eq!(third.run_id, b2.run_id);
    let ended = stored_run(&*f.a, Some(b), b1.run_id).await;
    assert_eq!(ended.status, RunStatus::Success);
    assert!(
        f.a.get_run(Some(c), b1.run_id)
            .await
            .expect("get")
            .is_none(),
        "wrong thread"
    );
}

async fn racing_claimers_run_one_run_per_thread_in_creation_order(f: &Fixture) {
    let mut expected = Vec::new();
    for _ in 0..4 {
        let t = thread(&*f.a).await;
        let mut runs = Vec::new();
        for _ in 0..3 {
            runs.push(enqueue(&*f.a, t).await.run_id);
        }
        expected.push(runs);
    }
    // Rounds: 8 claimers on the two handles race; each round exactly the head run of every
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
            if let Some(run) = claim.await.expect("claimer") {
                claimed.push(run);
            }
        }
        // A claimer that lost every race may have found nothing; claim until empty.
        while let Some(run) = f.a.claim_run("late", LEASE).await.expect("claim") {
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
            assert!(finish(&*f.b, run.run_id, token(&run), RunEnd::Success).await);
        }
    }
    assert!(f.a.claim_run("w", LEASE).await.expect("claim").is_none());
}

async fn reject_refuses_while_in_flight_and_interrupt_cancels_the_runs_in_flight(f: &Fixture) {
    let t = thread(&*f.a).await;
    let first = enqueue(&*f.a, t).await;
    let queued = enqueue(&*f.a, t).await;
    let refused = f.b.create_run(new_run(t, MultitaskStrategy::Reject)).await;
    assert!(
        matches!(refused, Err(ServerError::Conflict(_))),
        "{refused:?}"
    );
    assert_eq!(
        f.a.list_runs(t, &Default::default())
            .await
            .expect("list")
            .len(),
        2,
        "nothing inserted"
    );
    assert_eq!(
        f.a.get_thread(t)
            .await
            .expect("get")
            .expect("thread")
            .status,
        ThreadStatus::Busy
    );

    let running = claim(&*f.a, "w1", LEASE).await;
    assert_eq!(running.run_id, first.run_id);
    let mut wakeup = f.a.watch_run(first.run_id);
    let created =
        f.b.create_run(new_run(t, MultitaskStrategy::Interrupt))
            .await
            .expect("run");
    let mut cancelled = created.cancelled.clone();
    cancelled.sort();
    assert_eq!(cancelled, vec![first.run_id, queued.run_id]);
    // The worker holding the first run hears it (notified through the other handle).
    woken(&mut wakeup, "the cancel").await;
    assert_eq!(
        f.a.heartbeat(first.run_id, token(&running), LEASE)
            .await
            .expect("beat"),
        Lease::Held {
            cancel: Some(CancelAction::Interrupt)
        }
    );
    let queued = stored_run(&*f.a, Some(t), queued.run_id).await;
    assert_eq!(
        queued.status,
        RunStatus::Interrupted,
        "a pending run is cancelled at once"
    );
    // The new run waits until the cancelled one ends.
    assert!(f.a.claim_run("w2", LEASE).await.expect("claim").is_none());
    let interrupted = RunEnd::Interrupted("cancelled".into());
    assert!(finish(&*f.a, first.run_id, token(&running), interrupted).await);
    let next = claim(&*f.a, "w2", LEASE).await;
    assert_eq!(next.run_id, created.run.run_id);
    // Cancelling a finished run changes nothing; an unknown run is None.
    assert_eq!(
        f.a.request_cancel(Some(t), first.run_id, CancelAction::Interrupt)
            .await
            .expect("cancel"),
        Some(CancelOutcome::AlreadyDone)
    );
    assert_eq!(
        f.a.request_cancel(None, Uuid::now_v7(), CancelAction::Interrupt)
            .await
            .expect("cancel"),
        None
    );
}

async fn rollback_deletes_pending_runs_and_flags_running_ones(f: &Fixture) {
    let t = thread(&*f.a).await;
    let running = enqueue(&*f.a, t).await;
    let claimed = claim(&*f.a, "w", LEASE).await;
    let pending = enqueue(&*f.a, t).await;

    let rollback =
        f.b.create_run(new_run(t, MultitaskStrategy::Rollback))
            .await
            .expect("run");
    let mut cancelled = rollback.cancelled.clone();
    cancelled.sort();
    assert_eq!(cancelled, vec![running.run_id, pending.run_id]);
    // The pending run went at once; the running one is flagged for its worker.
    assert!(
        f.a.get_run(None, pending.run_id)
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        f.a.heartbeat(running.run_id, token(&claimed), LEASE)
            .await
            .expect("beat"),
        Lease::Held {
            cancel: Some(CancelAction::Rollback)
        }
    );
    assert_eq!(
        f.a.heartbeat(running.run_id, Uuid::now_v7(), LEASE)
            .await
            .expect("beat"),
        Lease::Lost
    );

    // Interrupt on a pending run: it ends interrupted at once, and only once.
    let queued = rollback.run;
    assert_eq!(
        f.b.request_cancel(Some(t), queued.run_id, CancelAction::Interrupt)
            .await
            .expect("cancel"),
        Some(CancelOutcome::CancelledPending)
    );
    let status = stored_run(&*f.a, None, queued.run_id).await.status;
    assert_eq!(status, RunStatus::Interrupted);
    assert_eq!(
        f.b.request_cancel(Some(t), queued.run_id, CancelAction::Interrupt)
            .await
            .expect("cancel"),
        Some(CancelOutcome::AlreadyDone)
    );
}

async fn an_expired_lease_returns_the_run_as_its_next_attempt_until_attempts_run_out(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    // A lease of zero is over as soon as it is granted.
    let claimed = claim(&*f.a, "dead-worker", Duration::ZERO).await;
    assert_eq!(claimed.attempt, 1);
    // The sweeper (in the other process) returns the run.
    assert_eq!(sweep_until_swept(&*f.b, 2).await, vec![run.run_id]);
    let status = stored_run(&*f.a, None, run.run_id).await.status;
    assert_eq!(status, RunStatus::Pending);
    assert_eq!(
        f.a.heartbeat(run.run_id, token(&claimed), LEASE)
            .await
            .expect("beat"),
        Lease::Lost
    );
    assert!(
        !finish(&*f.a, run.run_id, token(&claimed), RunEnd::Success).await,
        "a lost run cannot be finished by its old worker"
    );
    let again = claim(&*f.b, "second-worker", Duration::ZERO).await;
    assert_eq!((again.run_id, again.attempt), (run.run_id, 2));
    assert_eq!(again.worker_id.as_deref(), Some("second-worker"));
    // Attempt 2 of 2 also dies: the run ends in error, and so does its thread.
    assert_eq!(sweep_until_swept(&*f.a, 2).await, vec![run.run_id]);
    let failed = stored_run(&*f.a, None, run.run_id).await;
    assert_eq!(failed.status, RunStatus::Error);
    assert!(
        failed
            .cancel_reason
            .expect("reason")
            .contains("exceeded max attempts")
    );
    // The run's stream is told why, once.
    let events = f.a.read_events(run.run_id, 0).await.expect("read");
    let errors: Vec<_> = events.iter().filter(|e| e.event == "error").collect();
    assert_eq!(errors.len(), 1, "{events:?}");
    assert!(errors[0].data.contains("RunAttemptsExceeded"), "{events:?}");
    let failed_thread = f.a.get_thread(t).await.expect("get").expect("thread");
    assert_eq!(failed_thread.status, ThreadStatus::Error);
    // Both backends store the error in the shape a worker's failure has.
    assert_eq!(
        failed_thread.error["error"], "RunAttemptsExceeded",
        "{:?}",
        failed_thread.error
    );
    assert!(f.a.sweep_expired(2).await.expect("sweep").is_empty());
}

async fn events_count_from_one_per_run_and_wake_readers_in_another_process(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    let other = enqueue(&*f.a, thread(&*f.a).await).await;
    let (held, other_held) = (
        claim(&*f.a, "w", LEASE).await,
        claim(&*f.a, "w", LEASE).await,
    );
    assert_eq!((held.run_id, other_held.run_id), (run.run_id, other.run_id));
    let mut wakeup = f.b.watch_run(run.run_id);
    let events = |names: &[&str]| {
        names
            .iter()
            .map(|n| ((*n).to_owned(), json!({"e": n}).to_string()))
            .collect::<Vec<_>>()
    };
    let appended =
        f.a.append_events(run.run_id, token(&held), &events(&["metadata", "values"]))
            .await;
    assert_eq!(appended.expect("append"), 2);
    let appended =
        f.a.append_events(other.run_id, token(&other_held), &events(&["metadata"]))
            .await;
    assert_eq!(appended.expect("append"), 1);
    let appended =
        f.a.append_events(run.run_id, token(&held), &events(&["updates"]))
            .await;
    assert_eq!(appended.expect("append"), 3);
    woken(&mut wakeup, "the events").await;
    let replay = f.b.read_events(run.run_id, 1).await.expect("read");
    let seen: Vec<(i64, &str)> = replay.iter().map(|e| (e.seq, e.event.as_str())).collect();
    assert_eq!(seen, [(2, "values"), (3, "updates")]);
    assert_eq!(replay[1].data, r#"{"e":"updates"}"#);
    assert_eq!(f.b.last_event_seq(run.run_id).await.expect("last"), 3);
    assert_eq!(f.b.read_events(Uuid::now_v7(), 0).await.expect("read"), []);
    // What a wait answers: the newest root `values` or `error`, not a subgraph's values.
    let last =
        f.b.last_result_event(run.run_id)
            .await
            .expect("last values");
    assert_eq!(
        last.map(|e| (e.seq, e.event, e.data)),
        Some((2, "values".to_owned(), r#"{"e":"values"}"#.to_owned()))
    );
    let appended =
        f.a.append_events(
            run.run_id,
            token(&held),
            &events(&["error", "values|sub:1"]),
        )
        .await;
    assert_eq!(appended.expect("append"), 5);
    let last =
        f.b.last_result_event(run.run_id)
            .await
            .expect("last values");
    assert_eq!(
        last.map(|e| (e.seq, e.event)),
        Some((4, "error".to_owned()))
    );
    assert_eq!(
        f.b.last_result_event(other.run_id)
            .await
            .expect("last values"),
        None
    );
    // What a wait polls: the status, without the run's request.
    let status = f.b.run_status(run.run_id).await.expect("status");
    assert_eq!(
        status,
        Some(RunEnding {
            status: RunStatus::Running,
            cancel_reason: None
        })
    );
    assert_eq!(f.b.run_status(Uuid::now_v7()).await.expect("status"), None);
    // A worker in the other process is woken for a new run.
    let mut queue = f.b.watch_queue();
    enqueue(&*f.a, thread(&*f.a).await).await;
    woken(&mut queue, "the new run").await;
}

/// Follows a run on `backend` until it has ended; the sequence numbers and names given.
async fn follow_to_the_end(
    backend: Arc<dyn Backend>,
    run_id: Uuid,
    after: i64,
) -> Vec<(i64, String)> {
    let mut follower = backend.follow_run(run_id, after);
    let mut seen = Vec::new();
    loop {
        match follower.next(&*backend).await.expect("follow") {
            Followed::Events(events) => {
                seen.extend(events.iter().map(|e| (e.seq, e.event.clone())));
            }
            Followed::Waiting => tokio::time::timeout(Duration::from_secs(60), follower.changed())
                .await
                .unwrap_or_else(|_| panic!("the followers of {run_id} heard nothing for a minute")),
            Followed::Ended => return seen,
        }
    }
}

async fn followers_in_another_process_get_every_event_once_in_order(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    let held = claim(&*f.a, "w1", LEASE).await;
    let follow = |after: i64| {
        let backend = Arc::clone(&f.b);
        tokio::spawn(follow_to_the_end(backend, run.run_id, after))
    };
    // Alone at first: only the notifications can bring it each batch while the run goes on.
    let mut live = f.b.follow_run(run.run_id, 0);
    let mut early = Vec::new();
    let mut late = Vec::new();
    let mut names = Vec::new();
    for batch in 0..12 {
        let events: Vec<(String, String)> = (0..=batch % 3)
            .map(|i| {
                (
                    format!("custom{batch}.{i}"),
                    json!({"batch": batch}).to_string(),
                )
            })
            .collect();
        names.extend(events.iter().map(|(name, _)| name.clone()));
        let last =
            f.a.append_events(run.run_id, token(&held), &events)
                .await
                .expect("append");
        assert_eq!(last, names.len() as i64);
        // Each batch reaches the other process while the run goes on.
        while live.last_seq() < last {
            match live.next(&*f.b).await.expect("follow") {
                Followed::Events(_) => {}
                Followed::Waiting => tokio::time::timeout(Duration::from_secs(60), live.changed())
                    .await
                    .unwrap_or_else(|_| panic!("event {last} did not reach the live follower")),
                Followed::Ended => panic!("the run ended early"),
            }
        }
        if batch == 5 {
            // Joining mid-run, many from the start (the database, then live), one from now on.
            early = (0..20).map(|_| follow(0)).collect();
            let from_now = f.b.last_event_seq(run.run_id).await.expect("last");
            assert_eq!(from_now, names.len() as i64);
            late.push((from_now, follow(from_now)));
        }
    }
    assert!(finish(&*f.a, run.run_id, token(&held), RunEnd::Success).await);
    let expected: Vec<(i64, String)> = (1..).zip(names.iter().cloned()).collect();
    for task in early {
        assert_eq!(task.await.expect("follower"), expected);
    }
    for (after, task) in late {
        let skip = usize::try_from(after).expect("a sequence number");
        assert_eq!(task.await.expect("follower"), expected[skip..]);
    }
    // A follower of the ended run gets it all from the database; one after an event id,
    // the rest.
    assert_eq!(follow(0).await.expect("follower"), expected);
    assert_eq!(follow(7).await.expect("follower"), expected[7..]);
}

async fn deleting_a_thread_takes_its_running_run_from_the_worker(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    let held = claim(&*f.a, "w", LEASE).await;
    let appended =
        f.a.append_events(
            run.run_id,
            token(&held),
            &[("metadata".into(), "{}".into())],
        )
        .await;
    appended.expect("append");
    assert!(f.b.delete_thread(t).await.expect("delete"));
    assert!(!f.b.delete_thread(t).await.expect("delete"));
    assert_eq!(
        f.a.heartbeat(run.run_id, token(&held), LEASE)
            .await
            .expect("beat"),
        Lease::Lost
    );
    assert!(f.a.get_run(None, run.run_id).await.expect("get").is_none());
    assert!(
        f.a.read_events(run.run_id, 0)
            .await
            .expect("read")
            .is_empty()
    );
    // A thread id that exists conflicts unless told to return it.
    let t = thread(&*f.a).await;
    let again = NewThread {
        thread_id: t,
        metadata: Map::new(),
        if_exists: IfExists::Raise,
    };
    let refused = f.b.create_thread(again.clone()).await;
    assert!(
        matches!(refused, Err(ServerError::Conflict(_))),
        "{refused:?}"
    );
    let same = NewThread {
        if_exists: IfExists::DoNothing,
        ..again
    };
    assert_eq!(f.b.create_thread(same).await.expect("create").thread_id, t);
}

/// A checkpoint of run `run_id` on thread `thread_id`, in namespace `ns`.
fn checkpoint(thread_id: Uuid, ns: &str, run_id: Uuid, n: u8) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread_id.to_string(),
        checkpoint_ns: ns.to_owned(),
        checkpoint_id: format!("{n:032x}"),
        parent_id: None,
        format_version: 1,
        step: i64::from(n),
        source: CheckpointSource::Loop,
        created_at_ms: 0,
        metadata: json!({"run_id": run_id.to_string()}),
        is_snapshot: true,
        payload: vec![n],
    }
}

/// Appends one event named `name` for the holder of the claim `token`.
async fn append_one(
    backend: &dyn Backend,
    run_id: Uuid,
    token: Uuid,
    name: &str,
) -> Result<i64, ServerError> {
    let events = [(name.to_owned(), "{}".to_owned())];
    backend.append_events(run_id, token, &events).await
}

fn is_fenced<T: std::fmt::Debug>(result: &Result<T, StorageError>) -> bool {
    matches!(result, Err(StorageError::Fenced { .. }))
}

/// The ids of the thread's checkpoints in namespace `ns`, oldest first.
async fn checkpoint_ids(backend: &dyn Backend, thread_id: Uuid, ns: &str) -> Vec<String> {
    let mut ids: Vec<String> = backend
        .checkpointer()
        .list(&thread_id.to_string(), ns, &ListOptions::default())
        .await
        .expect("list")
        .into_iter()
        .map(|c| c.checkpoint_id)
        .collect();
    ids.reverse();
    ids
}

async fn a_worker_that_lost_its_lease_can_write_nothing_more(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    let thread_id = t.to_string();
    // The first worker claims the run, writes, then stalls past its lease.
    let stalled = claim(&*f.a, "stalled", Duration::ZERO).await;
    let old = f.a.fenced_checkpointer(run.run_id, token(&stalled));
    assert!(old.try_lock_thread(&thread_id, "old").await.expect("lock"));
    old.put(checkpoint(t, "", run.run_id, 1))
        .await
        .expect("put");
    let before = append_one(&*f.a, run.run_id, token(&stalled), "metadata");
    assert_eq!(before.await.expect("append"), 1);

    // Another process sweeps it and takes it over as the next attempt.
    assert_eq!(sweep_until_swept(&*f.b, 3).await, vec![run.run_id]);
    let next = claim(&*f.b, "next", LEASE).await;
    assert_eq!((next.run_id, next.attempt), (run.run_id, 2));
    // A thread lock the stalled worker took outside the fence does not keep it out
    // either: the lease is the lock.
    let unfenced = f.a.checkpointer();
    assert!(
        unfenced
            .try_lock_thread(&thread_id, "stalled")
            .await
            .expect("lock")
    );
    let new = f.b.fenced_checkpointer(run.run_id, token(&next));
    assert!(
        new.try_lock_thread(&thread_id, "next")
            .await
            .expect("not busy")
    );
    unfenced
        .unlock_thread(&thread_id, "stalled")
        .await
        .expect("unlock");

    // The stalled worker wakes: every write it makes is refused.
    let refused = append_one(&*f.a, run.run_id, token(&stalled), "values");
    assert!(matches!(refused.await, Err(ServerError::LeaseLost { .. })));
    assert!(is_fenced(&old.put(checkpoint(t, "", run.run_id, 2)).await));
    assert!(is_fenced(
        &old.put_many(vec![checkpoint(t, "child:1", run.run_id, 3)])
            .await
    ));
    let write = PendingWrite {
        task_id: "task".into(),
        node: "node".into(),
        payload: vec![1],
    };
    let at = format!("{:032x}", 1);
    assert!(is_fenced(
        &old.put_writes(&thread_id, "", &at, vec![write.clone()])
            .await
    ));
    assert!(is_fenced(
        &old.delete_run(&thread_id, &run.run_id.to_string()).await
    ));
    assert!(is_fenced(&old.try_lock_thread(&thread_id, "old").await));
    assert_eq!(
        f.a.heartbeat(run.run_id, token(&stalled), LEASE)
            .await
            .expect("beat"),
        Lease::Lost
    );
    assert!(
        !f.a.release_run(run.run_id, token(&stalled))
            .await
            .expect("release")
    );
    assert!(
        !finish(
            &*f.a,
            run.run_id,
            token(&stalled),
            RunEnd::Error("late".into())
        )
        .await
    );

    // Nothing of it landed; the new attempt's writes do, and it finishes the run.
    let held = stored_run(&*f.a, Some(t), run.run_id).await;
    assert_eq!(
        (held.status, held.lease_token),
        (RunStatus::Running, next.lease_token)
    );
    new.put(checkpoint(t, "", run.run_id, 4))
        .await
        .expect("put");
    new.put_writes(&thread_id, "", &format!("{:032x}", 4), vec![write])
        .await
        .expect("writes");
    let ids = checkpoint_ids(&*f.a, t, "").await;
    assert_eq!(ids, [format!("{:032x}", 1), format!("{:032x}", 4)]);
    assert!(checkpoint_ids(&*f.a, t, "child:1").await.is_empty());
    let appended = append_one(&*f.b, run.run_id, token(&next), "values");
    assert_eq!(appended.await.expect("append"), 2);
    let events = f.a.read_events(run.run_id, 0).await.expect("read");
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(finish(&*f.b, run.run_id, token(&next), RunEnd::Success).await);
    // Once it ended, its own token writes nothing more either.
    assert!(is_fenced(&new.put(checkpoint(t, "", run.run_id, 5)).await));
    assert_eq!(stored_run(&*f.a, None, run.run_id).await.lease_token, None);
}

async fn a_rollback_removes_the_runs_checkpoints_in_every_namespace(f: &Fixture) {
    let t = thread(&*f.a).await;
    let earlier = Uuid::now_v7();
    f.a.checkpointer()
        .put(checkpoint(t, "", earlier, 1))
        .await
        .expect("put");
    let run = enqueue(&*f.a, t).await;
    let held = claim(&*f.a, "w", LEASE).await;
    let fenced = f.a.fenced_checkpointer(run.run_id, token(&held));
    for (ns, n) in [("", 2), ("child:1", 3), ("child:1|grandchild:2", 4)] {
        fenced
            .put(checkpoint(t, ns, run.run_id, n))
            .await
            .expect("put");
    }
    f.b.request_cancel(Some(t), run.run_id, CancelAction::Rollback)
        .await
        .expect("cancel");
    let deleted = fenced
        .delete_run(&t.to_string(), &run.run_id.to_string())
        .await
        .expect("the holder rolls back");
    assert_eq!(deleted, 3);
    assert!(finish(&*f.a, run.run_id, token(&held), RunEnd::RolledBack).await);
    assert_eq!(checkpoint_ids(&*f.a, t, "").await, [format!("{:032x}", 1)]);
    assert!(checkpoint_ids(&*f.a, t, "child:1").await.is_empty());
    assert!(f.a.get_run(None, run.run_id).await.expect("get").is_none());
}

async fn a_thread_deleted_and_created_again_refuses_its_old_runs_writes(f: &Fixture) {
    let t = thread(&*f.a).await;
    let run = enqueue(&*f.a, t).await;
    let held = claim(&*f.a, "w", LEASE).await;
    let fenced = f.a.fenced_checkpointer(run.run_id, token(&held));
    fenced
        .put(checkpoint(t, "", run.run_id, 1))
        .await
        .expect("put");
    assert!(f.b.delete_thread(t).await.expect("delete"));
    f.b.checkpointer()
        .delete_thread(&t.to_string())
        .await
        .expect("delete checkpoints");
    let again = NewThread {
        thread_id: t,
        metadata: Map::new(),
        if_exists: IfExists::Raise,
    };
    f.b.create_thread(again).await.expect("create again");
    // The old run's worker goes on: nothing it writes reaches the new thread.
    assert!(is_fenced(
        &fenced.put(checkpoint(t, "", run.run_id, 2)).await
    ));
    let refused = append_one(&*f.a, run.run_id, token(&held), "values");
    assert!(matches!(refused.await, Err(ServerError::LeaseLost { .. })));
    assert!(!finish(&*f.a, run.run_id, token(&held), RunEnd::Success).await);
    assert!(checkpoint_ids(&*f.a, t, "").await.is_empty());
    let thread = f.a.get_thread(t).await.expect("get").expect("thread");
    assert_eq!(thread.status, ThreadStatus::Idle);
}

async fn search_and_count_apply_the_same_filters(f: &Fixture) {
    let mut tagged = Map::new();
    tagged.insert("team".into(), json!("red"));
    let mut ids = Vec::new();
    for metadata in [tagged.clone(), tagged.clone(), Map::new()] {
        let id = Uuid::now_v7();
        let thread = NewThread {
            thread_id: id,
            metadata,
            if_exists: IfExists::Raise,
        };
        f.a.create_thread(thread).await.expect("create");
        ids.push(id);
    }
    let red = ThreadQuery {
        metadata: Some(tagged.clone()),
        limit: Some(1),
        ..ThreadQuery::default()
    };
    let page = f.b.search_threads(&red).await.expect("search");
    assert_eq!(page.len(), 1, "the limit applies to the search");
    assert_eq!(page[0].thread_id, ids[1], "newest first");
    assert_eq!(
        f.b.count_threads(&red).await.expect("count"),
        2,
        "not to the count"
    );
    let idle = ThreadQuery {
        status: Some(ThreadStatus::Idle),
        ..ThreadQuery::default()
    };
    assert_eq!(f.b.search_threads(&idle).await.expect("search").len(), 3);
    assert_eq!(f.b.count_threads(&idle).await.expect("count"), 3);

    for (name, graph_id) in [("one", "g1"), ("two", "g1"), ("three", "g2")] {
        let assistant = AssistantRecord {
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
        };
        f.a.create_assistant(&assistant, IfExists::Raise)
            .await
            .expect("create");
    }
    let g1 = AssistantQuery {
        graph_id: Some("g1".into()),
        metadata: Some(tagged),
        offset: 1,
        ..AssistantQuery::default()
    };
    assert_eq!(f.b.search_assistants(&g1).await.expect("search").len(), 1);
    assert_eq!(f.b.count_assistants(&g1).await.expect("count"), 2);
    let named = AssistantQuery {
        name: Some("three".into()),
        ..AssistantQuery::default()
    };
    assert_eq!(f.b.count_assistants(&named).await.expect("count"), 1);
}

fn assistant(name: &str, metadata: serde_json::Value) -> AssistantRecord {
    let now = Timestamp::now();
    AssistantRecord {
        assistant_id: Uuid::now_v7(),
        graph_id: "g1".into(),
        config: json!({"configurable": {"model": "small"}}),
        context: json!({}),
        metadata: metadata.as_object().cloned().unwrap_or_default(),
        name: name.into(),
        description: None,
        created_at: now,
        updated_at: now,
        version: 1,
    }
}

async fn creating_an_assistant_twice_raises_or_returns_the_first(f: &Fixture) {
    let first = assistant("first", json!({"team": "red"}));
    let created =
        f.a.create_assistant(&first, IfExists::Raise)
            .await
            .expect("create");
    assert_eq!(created, first);
    let again = AssistantRecord {
        name: "second".into(),
        ..first.clone()
    };
    let refused = f.b.create_assistant(&again, IfExists::Raise).await;
    assert!(
        matches!(refused, Err(ServerError::Conflict(_))),
        "a taken id is a conflict: {refused:?}"
    );
    let kept =
        f.b.create_assistant(&again, IfExists::DoNothing)
            .await
            .expect("do nothing");
    assert_eq!(
        kept.name, "first",
        "do_nothing returns the existing assistant unchanged"
    );
    let stored =
        f.b.get_assistant(first.assistant_id)
            .await
            .expect("get")
            .expect("exists");
    assert_eq!(stored.name, "first");
    let versions =
        f.b.assistant_versions(first.assistant_id, &VersionQuery::default())
            .await
            .expect("versions");
    assert_eq!(versions.len(), 1, "creating records version 1 once");
    assert_eq!(versions[0].version, 1);
    assert_eq!(versions[0].config, first.config);
}

async fn updates_make_new_versions_and_an_old_one_can_be_made_latest(f: &Fixture) {
    let a = assistant("bot", json!({"team": "red"}));
    f.a.create_assistant(&a, IfExists::Raise)
        .await
        .expect("create");
    let patch = AssistantPatch {
        config: Some(json!({"configurable": {"model": "large"}})),
        metadata: Some(
            json!({"stage": "beta"})
                .as_object()
                .cloned()
                .expect("object"),
        ),
        ..AssistantPatch::default()
    };
    let v2 =
        f.b.update_assistant(a.assistant_id, &patch)
            .await
            .expect("update")
            .expect("exists");
    assert_eq!(v2.version, 2);
    assert_eq!(
        v2.config,
        json!({"configurable": {"model": "large"}}),
        "config is replaced whole"
    );
    assert_eq!(
        Value::Object(v2.metadata.clone()),
        json!({"team": "red", "stage": "beta"}),
        "metadata is merged"
    );
    assert_eq!(v2.name, "bot", "what the patch leaves out stays");
    assert_eq!(v2.created_at, a.created_at);
    let renamed = AssistantPatch {
        name: Some("bot3".into()),
        ..AssistantPatch::default()
    };
    let v3 =
        f.a.update_assistant(a.assistant_id, &renamed)
            .await
            .expect("update")
            .expect("exists");
    assert_eq!(v3.version, 3);
    assert_eq!(v3.config, v2.config);

    let all =
        f.b.assistant_versions(a.assistant_id, &VersionQuery::default())
            .await
            .expect("versions");
    let numbers: Vec<i64> = all.iter().map(|v| v.version).collect();
    assert_eq!(numbers, [3, 2, 1], "newest first");
    assert_eq!(all[2].config, a.config, "version 1 keeps what it was");
    let beta = VersionQuery {
        metadata: json!({"stage": "beta"}).as_object().cloned(),
        limit: Some(1),
        ..VersionQuery::default()
    };
    let page =
        f.b.assistant_versions(a.assistant_id, &beta)
            .await
            .expect("versions");
    assert_eq!(page.iter().map(|v| v.version).collect::<Vec<_>>(), [3]);

    let back =
        f.b.set_assistant_version(a.assistant_id, 1)
            .await
            .expect("set")
            .expect("exists");
    assert_eq!(back.version, 1);
    assert_eq!(back.config, a.config);
    assert_eq!(back.name, "bot");
    let stored =
        f.a.get_assistant(a.assistant_id)
            .await
            .expect("get")
            .expect("exists");
    assert_eq!(stored, back, "the current version is stored");
    let v4 =
        f.a.update_assistant(a.assistant_id, &renamed)
            .await
            .expect("update")
            .expect("exists");
    assert_eq!(
        v4.version, 4,
        "an update after going back still gets a new number"
    );
    assert_eq!(v4.config, a.config, "built on the version made latest");

    let missing = f.b.set_assistant_version(a.assistant_id, 9).await;
    assert!(
        matches!(missing, Err(ServerError::NotFound(_))),
        "{missing:?}"
    );
    let unknown = Uuid::now_v7();
    assert!(
        f.b.update_assistant(unknown, &renamed)
            .await
            .expect("update")
            .is_none()
    );
    assert!(
        f.b.set_assistant_version(unknown, 1)
            .await
            .expect("set")
            .is_none()
    );
}

async fn concurrent_updates_each_get_a_version_of_their_own(f: &Fixture) {
    let a = assistant("busy", json!({}));
    f.a.create_assistant(&a, IfExists::Raise)
        .await
        .expect("create");
    let updates = (0..8).map(|i| {
        let backend = if i % 2 == 0 { f.a.clone() } else { f.b.clone() };
        let patch = AssistantPatch {
            name: Some(format!("n{i}")),
            ..AssistantPatch::default()
        };
        async move { backend.update_assistant(a.assistant_id, &patch).await }
    });
    let results = futures::future::join_all(updates).await;
    let mut versions: Vec<i64> = results
        .into_iter()
        .map(|r| r.expect("update").expect("exists").version)
        .collect();
    versions.sort_unstable();
    assert_eq!(versions, (2..=9).collect::<Vec<_>>());
    let all =
        f.a.assistant_versions(a.assistant_id, &VersionQuery::default())
            .await
            .expect("versions");
    assert_eq!(all.len(), 9);
}

async fn deleting_an_assistant_deletes_its_versions(f: &Fixture) {
    let a = assistant("gone", json!({}));
    f.a.create_assistant(&a, IfExists::Raise)
        .await
        .expect("create");
    let patch = AssistantPatch {
        name: Some("gone2".into()),
        ..AssistantPatch::default()
    };
    f.a.update_assistant(a.assistant_id, &patch)
        .await
        .expect("update");
    assert!(f.b.delete_assistant(a.assistant_id).await.expect("delete"));
    assert!(
        f.a.get_assistant(a.assistant_id)
            .await
            .expect("get")
            .is_none()
    );
    assert!(
        f.a.assistant_versions(a.assistant_id, &VersionQuery::default())
            .await
            .expect("versions")
            .is_empty()
    );
    assert!(
        !f.b.delete_assistant(a.assistant_id).await.expect("delete"),
        "a second delete finds nothing"
    );
    // The id can be used again, from version 1.
    let again =
        f.a.create_assistant(&a, IfExists::Raise)
            .await
            .expect("create again");
    assert_eq!(again.version, 1);
    let versions =
        f.a.assistant_versions(a.assistant_id, &VersionQuery::default())
            .await
            .expect("versions");
    assert_eq!(versions.len(), 1);
}

// ---------------------------------------------------------------------------------------
// Crons and expiry

const MINUTE: i64 = 60_000_000;

/// A cron on `thread` (or a new thread each time), every minute, next due at `next`.
fn cron(thread: Option<Uuid>, next: Timestamp, metadata: Value) -> CronRecord {
    let now = Timestamp::now();
    CronRecord {
        cron_id: Uuid::now_v7(),
        assistant_id: Uuid::now_v7(),
        thread_id: thread,
        schedule: "* * * * *".into(),
        timezone: None,
        end_time: None,
        payload: json!({"input": {"n": 1}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        run: CronRun {
            assistant_id: Uuid::now_v7(),
            metadata: json!({"from": "cron"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
            kwargs: json!({"input": {"n": 1}}),
            multitask_strategy: MultitaskStrategy::Enqueue,
            thread_metadata: json!({"graph_id": "agent"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        },
        on_run_completed: None,
        enabled: true,
        next_run_date: Some(next),
        metadata: metadata.as_object().cloned().unwrap_or_default(),
        created_at: now,
        updated_at: now,
    }
}

/// The time `minutes` whole minutes from the start of the current one.
fn minute_from_now(minutes: i64) -> Timestamp {
    let now = Timestamp::now().micros();
    Timestamp(now - now.rem_euclid(MINUTE) + minutes * MINUTE)
}

async fn a_due_cron_fires_once_across_processes_and_moves_on(f: &Fixture) {
    let thread_id = thread(&*f.a).await;
    let due = minute_from_now(1);
    let on_thread = cron(Some(thread_id), due, json!({}));
    f.a.create_cron(&on_thread).await.expect("create");
    assert_eq!(
        f.a.fire_due_cron(Timestamp(due.micros() - 1))
            .await
            .expect("fire"),
        None,
        "not due a microsecond early"
    );
    // Both processes look at once: one fires the tick, the other finds nothing due.
    let (one, two) = tokio::join!(f.a.fire_due_cron(due), f.b.fire_due_cron(due));
    let fired: Vec<_> = [one.expect("fire"), two.expect("fire")]
        .into_iter()
        .flatten()
        .collect();
    assert_eq!(fired.len(), 1, "{fired:?}");
    let run_id = fired[0].run_id.expect("a run");
    assert_eq!(
        fired[0].next_run_date,
        Some(Timestamp(due.micros() + MINUTE))
    );
    assert_eq!(f.a.fire_due_cron(due).await.expect("fire"), None);
    let run = stored_run(&*f.b, Some(thread_id), run_id).await;
    assert_eq!(run.status, RunStatus::Pending);
    assert_eq!(run.assistant_id, on_thread.run.assistant_id);
    assert_eq!(run.metadata.get("from"), Some(&json!("cron")));
    let stored =
        f.b.get_cron(on_thread.cron_id)
            .await
            .expect("get")
            .expect("cron");
    assert_eq!(stored.next_run_date, Some(Timestamp(due.micros() + MINUTE)));
    // Missed ticks collapse into one run: fired an hour late, it moves past the hour.
    let late = Timestamp(due.micros() + 60 * MINUTE + 5);
    let fired = f.a.fire_due_cron(late).await.expect("fire").expect("due");
    assert!(fired.run_id.is_some());
    assert_eq!(
        fired.next_run_date,
        Some(Timestamp(due.micros() + 61 * MINUTE))
    );
    assert_eq!(f.a.fire_due_cron(late).await.expect("fire"), None);

    // A cron without a thread gets a new one each time, created with the run.
    let stateless = cron(None, due, json!({}));
    f.b.create_cron(&stateless).await.expect("create");
    let first = f.a.fire_due_cron(due).await.expect("fire").expect("due");
    let second = f.a.fire_due_cron(late).await.expect("fire").expect("due");
    let mut thread_ids = HashSet::new();
    for run_id in [first.run_id, second.run_id] {
        let run = stored_run(&*f.a, None, run_id.expect("a run")).await;
        assert_ne!(run.thread_id, thread_id);
        let thread =
            f.a.get_thread(run.thread_id)
                .await
                .expect("get")
                .expect("its thread");
        assert_eq!(thread.metadata.get("graph_id"), Some(&json!("agent")));
        thread_ids.insert(run.thread_id);
    }
    assert_eq!(thread_ids.len(), 2, "a new thread per run");
}

async fn a_cron_skips_a_tick_it_cannot_run_and_stops_at_its_end(f: &Fixture) {
    let thread_id = thread(&*f.a).await;
    let due = minute_from_now(1);
    let mut ending = cron(Some(thread_id), due, json!({}));
    ending.end_time = Some(Timestamp(due.micros() + 90_000_000));
    ending.run.multitask_strategy = MultitaskStrategy::Reject;
    f.a.create_cron(&ending).await.expect("create");
    let first = f.a.fire_due_cron(due).await.expect("fire").expect("due");
    assert!(first.run_id.is_some());
    assert_eq!(first.next_run_date, Some(Timestamp(due.micros() + MINUTE)));
    // `reject` meets the first run, still pending: the next tick creates nothing, and the
    // cron still moves on, here past its end: it never fires again.
    let next = Timestamp(due.micros() + MINUTE);
    let skipped = f.b.fire_due_cron(next).await.expect("fire").expect("due");
    assert_eq!(skipped.run_id, None);
    assert!(
        skipped
            .skipped
            .as_deref()
            .is_some_and(|why| why.contains("already running")),
        "{skipped:?}"
    );
    let runs =
        f.a.list_runs(thread_id, &RunQuery::default())
            .await
            .expect("list");
    assert_eq!(runs.len(), 1, "the skipped tick stored no run");
    assert_eq!(skipped.next_run_date, None);
    let far = Timestamp(due.micros() + 600 * MINUTE);
    assert_eq!(f.a.fire_due_cron(far).await.expect("fire"), None);
    let stored =
        f.a.get_cron(ending.cron_id)
            .await
            .expect("get")
            .expect("cron");
    assert_eq!(stored.next_run_date, None);

    // A thread's crons are deleted with it.
    let other = cron(Some(thread_id), due, json!({}));
    f.a.create_cron(&other).await.expect("create");
    f.b.delete_thread(thread_id).await.expect("delete");
    assert_eq!(f.a.get_cron(other.cron_id).await.expect("get"), None);
    assert_eq!(f.a.get_cron(ending.cron_id).await.expect("get"), None);

    // A cron whose thread is gone stops.
    let orphan = cron(Some(Uuid::now_v7()), due, json!({}));
    f.a.create_cron(&orphan).await.expect("create");
    let stopped = f.b.fire_due_cron(due).await.expect("fire").expect("due");
    assert_eq!((stopped.run_id, stopped.next_run_date), (None, None));
    assert!(
        stopped
            .skipped
            .as_deref()
            .is_some_and(|why| why.contains("not")),
        "{stopped:?}"
    );
    assert_eq!(f.a.fire_due_cron(far).await.expect("fire"), None);

    // A disabled cron is not due, whatever its date.
    let mut off = cron(None, due, json!({}));
    off.enabled = false;
    f.b.create_cron(&off).await.expect("create");
    assert_eq!(f.a.fire_due_cron(far).await.expect("fire"), None);
}

async fn crons_are_kept_searched_counted_updated_and_deleted(f: &Fixture) {
    let thread_id = thread(&*f.a).await;
    let due = minute_from_now(5);
    let mut a = cron(Some(thread_id), due, json!({"team": "x"}));
    let mut b = cron(None, minute_from_now(3), json!({"team": "x", "n": 2}));
    b.assistant_id = a.assistant_id;
    let mut c = cron(None, minute_from_now(4), json!({"team": "y"}));
    c.enabled = false;
    for cron in [&a, &b, &c] {
        f.a.create_cron(cron).await.expect("create");
    }
    // Stored and read back whole, by the other process.
    assert_eq!(
        f.b.get_cron(a.cron_id).await.expect("get").as_ref(),
        Some(&a)
    );
    let ids = |crons: Vec<CronRecord>| crons.into_iter().map(|c| c.cron_id).collect::<Vec<_>>();
    let by_next = CronQuery {
        sort_by: Some("next_run_date".into()),
        ascending: true,
        ..CronQuery::default()
    };
    assert_eq!(
        ids(f.b.search_crons(&by_next).await.expect("search")),
        [b.cron_id, c.cron_id, a.cron_id]
    );
    let team_x = CronQuery {
        metadata: json!({"team": "x"}).as_object().cloned(),
        ..by_next.clone()
    };
    assert_eq!(
        ids(f.b.search_crons(&team_x).await.expect("search")),
        [b.cron_id, a.cron_id]
    );
    assert_eq!(f.a.count_crons(&team_x).await.expect("count"), 2);
    let of_assistant = CronQuery {
        assistant_id: Some(a.assistant_id),
        ..by_next.clone()
    };
    assert_eq!(f.a.count_crons(&of_assistant).await.expect("count"), 2);
    let of_thread = CronQuery {
        thread_id: Some(thread_id),
        ..CronQuery::default()
    };
    assert_eq!(
        ids(f.a.search_crons(&of_thread).await.expect("search")),
        [a.cron_id]
    );
    let disabled = CronQuery {
        enabled: Some(false),
        ..CronQuery::default()
    };
    assert_eq!(
        ids(f.a.search_crons(&disabled).await.expect("search")),
        [c.cron_id]
    );
    let page = CronQuery {
        limit: Some(1),
        offset: 1,
        ..by_next.clone()
    };
    assert_eq!(
        ids(f.a.search_crons(&page).await.expect("search")),
        [c.cron_id]
    );
    let bad = CronQuery {
        sort_by: Some("schedule".into()),
        ..CronQuery::default()
    };
    let refused = f.a.search_crons(&bad).await.expect_err("unknown column");
    assert!(matches!(refused, ServerError::Validation(_)), "{refused:?}");

    a.schedule = "0 * * * *".into();
    a.enabled = false;
    a.end_time = Some(minute_from_now(60));
    assert!(f.b.update_cron(&a, true).await.expect("update"));
    assert_eq!(
        f.a.get_cron(a.cron_id).await.expect("get").as_ref(),
        Some(&a)
    );
    // Without `reschedule`, the stored next run date stays (a firing may have moved it).
    let mut stale = a.clone();
    stale.next_run_date = Some(minute_from_now(-10));
    stale.metadata = json!({"team": "z"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert!(f.a.update_cron(&stale, false).await.expect("update"));
    let stored = f.b.get_cron(a.cron_id).await.expect("get").expect("cron");
    assert_eq!(stored.next_run_date, a.next_run_date);
    assert_eq!(stored.metadata, stale.metadata);
    b.cron_id = Uuid::now_v7();
    assert!(
        !f.a.update_cron(&b, true).await.expect("update"),
        "no such cron"
    );
    assert!(f.a.delete_cron(a.cron_id).await.expect("delete"));
    assert!(!f.b.delete_cron(a.cron_id).await.expect("delete"));
    assert_eq!(f.b.get_cron(a.cron_id).await.expect("get"), None);
}

async fn threads_and_store_items_expire_at_their_ttl(f: &Fixture) {
    let (short, long, busy) = (
        thread(&*f.a).await,
        thread(&*f.a).await,
        thread(&*f.a).await,
    );
    assert!(f.a.set_thread_ttl(short, Some(1.0)).await.expect("ttl"));
    assert!(f.a.set_thread_ttl(long, Some(120.0)).await.expect("ttl"));
    assert!(f.b.set_thread_ttl(busy, Some(1.0)).await.expect("ttl"));
    assert!(
        !f.a.set_thread_ttl(Uuid::now_v7(), Some(1.0))
            .await
            .expect("ttl"),
        "no such thread"
    );
    let now = Timestamp::now();
    assert_eq!(
        f.b.expired_threads(now, 10).await.expect("expired"),
        Vec::<Uuid>::new()
    );
    // A thread with a run in flight is not expired under it; its run started its ttl again.
    enqueue(&*f.a, busy).await;
    let later = Timestamp(now.micros() + 2 * MINUTE);
    assert_eq!(
        f.b.expired_threads(later, 10).await.expect("expired"),
        [short]
    );
    let much_later = Timestamp(now.micros() + 200 * MINUTE);
    let mut expired = f.b.expired_threads(much_later, 10).await.expect("expired");
    expired.sort();
    let mut expected = vec![short, long];
    expected.sort();
    assert_eq!(expired, expected);
    assert_eq!(
        f.b.expired_threads(much_later, 1)
            .await
            .expect("expired")
            .len(),
        1,
        "bounded"
    );
    assert!(f.a.set_thread_ttl(short, None).await.expect("ttl"));
    assert_eq!(
        f.b.expired_threads(much_later, 10).await.expect("expired"),
        [long]
    );

    // Store items: an expiry per (namespace, key), refreshed on request while alive.
    f.a.set_item_ttl(&["a", "b"], "k", Some(1.0))
        .await
        .expect("ttl");
    f.a.set_item_ttl(&["a"], "k", Some(10.0))
        .await
        .expect("ttl");
    let expiry =
        f.b.item_expiry(&["a", "b"], "k", now, false)
            .await
            .expect("expiry")
            .expect("set");
    assert!(
        expiry > now && expiry.micros() <= Timestamp::now().micros() + MINUTE,
        "{expiry:?}"
    );
    assert_eq!(
        f.b.item_expiry(&["a", "b"], "other", now, false)
            .await
            .expect("expiry"),
        None
    );
    assert_eq!(
        f.b.expired_items(later, 10).await.expect("expired"),
        [(vec!["a".to_owned(), "b".to_owned()], "k".to_owned())]
    );
    // Refreshed half a minute from now: alive a minute past that.
    let soon = Timestamp(Timestamp::now().micros() + MINUTE / 2);
    let renewed =
        f.a.item_expiry(&["a", "b"], "k", soon, true)
            .await
            .expect("expiry")
            .expect("set");
    assert_eq!(renewed, Timestamp(soon.micros() + MINUTE));
    assert_eq!(
        f.b.expired_items(Timestamp(soon.micros() + MINUTE - 1), 10)
            .await
            .expect("expired"),
        Vec::new()
    );
    // An expired item is not refreshed.
    let gone = Timestamp(soon.micros() + 5 * MINUTE);
    let kept =
        f.a.item_expiry(&["a", "b"], "k", gone, true)
            .await
            .expect("expiry")
            .expect("set");
    assert_eq!(kept, renewed);
    f.b.set_item_ttl(&["a", "b"], "k", None).await.expect("ttl");
    assert_eq!(
        f.a.item_expiry(&["a", "b"], "k", gone, false)
            .await
            .expect("expiry"),
        None
    );
    assert_eq!(
        f.a.expired_items(much_later, 10).await.expect("expired"),
        [(vec!["a".to_owned()], "k".to_owned())]
    );
}

// ---------------------------------------------------------------------------------------
// Runs

macro_rules! for_each_backend {
    ($($behaviour:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $behaviour() {
                    let fixture = super::Fixture::sqlite().await;
                    super::$behaviour(&fixture).await;
                    fixture.finish().await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $behaviour() {
                    let Some(fixture) = super::Fixture::postgres(stringify!($behaviour)).await
                    else {
                        return;
                    };
                    super::$behaviour(&fixture).await;
                    fixture.finish().await;
                }
            )*
        }
    };
}

for_each_backend!(
    one_running_run_per_thread_in_creation_order,
    racing_claimers_run_one_run_per_thread_in_creation_order,
    reject_refuses_while_in_flight_and_interrupt_cancels_the_runs_in_flight,
    rollback_deletes_pending_runs_and_flags_running_ones,
    an_expired_lease_returns_the_run_as_its_next_attempt_until_attempts_run_out,
    events_count_from_one_per_run_and_wake_readers_in_another_process,
    followers_in_another_process_get_every_event_once_in_order,
    deleting_a_thread_takes_its_running_run_from_the_worker,
    search_and_count_apply_the_same_filters,
    a_worker_that_lost_its_lease_can_write_nothing_more,
    a_rollback_removes_the_runs_checkpoints_in_every_namespace,
    a_thread_deleted_and_created_again_refuses_its_old_runs_writes,
    creating_an_assistant_twice_raises_or_returns_the_first,
    updates_make_new_versions_and_an_old_one_can_be_made_latest,
    concurrent_updates_each_get_a_version_of_their_own,
    deleting_an_assistant_deletes_its_versions,
    a_due_cron_fires_once_across_processes_and_moves_on,
    a_cron_skips_a_tick_it_cannot_run_and_stops_at_its_end,
    crons_are_kept_searched_counted_updated_and_deleted,
    threads_and_store_items_expire_at_their_ttl,
);

/// A cron is a row: it survives the process (here, the backend reopened on its file) and
/// fires after the restart.
#[tokio::test]
async fn a_cron_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("crons.db");
    let backend = SqliteBackend::open(&path).await.expect("open");
    let t = thread(&backend).await;
    let due = minute_from_now(1);
    let kept = cron(Some(t), due, json!({"kept": true}));
    backend.create_cron(&kept).await.expect("create");
    drop(backend);
    let reopened = SqliteBackend::open(&path).await.expect("reopen");
    assert_eq!(
        reopened.get_cron(kept.cron_id).await.expect("get"),
        Some(kept.clone())
    );
    let fired = reopened
        .fire_due_cron(due)
        .await
        .expect("fire")
        .expect("due");
    assert_eq!(fired.cron_id, kept.cron_id);
    assert!(fired.run_id.is_some());
}

/// A file whose server schema was recorded before it joined `graphkit_migrations` (in a
/// table of its own, `graphkit_server_schema`, at version 1) opens with its rows, is not
/// migrated to version 1 again, and gets version 2: its runs' due time, which was their
/// `created_at`; and the later versions, among them 4: its assistants' versions, one each,
/// and 6: its runs' requests moved to a table of their own (the old run is claimed with it).
#[tokio::test]
async fn an_sqlite_file_from_before_the_shared_migrations_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("old.db");
    let backend = SqliteBackend::open(&path).await.expect("open");
    let t = thread(&backend).await;
    let run = enqueue(&backend, t).await;
    let old = assistant("old", json!({}));
    backend
        .create_assistant(&old, IfExists::Raise)
        .await
        .expect("create");
    sqlx::raw_sql(
        "DELETE FROM graphkit_migrations WHERE component = 'server';
         CREATE TABLE graphkit_server_schema (version INTEGER NOT NULL);
         INSERT INTO graphkit_server_schema (version) VALUES (1);
         DROP INDEX graphkit_server_runs_due;
         ALTER TABLE graphkit_server_runs DROP COLUMN due_at;
         ALTER TABLE graphkit_server_runs DROP COLUMN lease_token;
         DROP TABLE graphkit_server_assistant_versions;
         DROP TABLE graphkit_server_crons;
         DROP TABLE graphkit_server_store_ttl;
         DROP INDEX graphkit_server_threads_expiry;
         ALTER TABLE graphkit_server_threads DROP COLUMN ttl_minutes;
         ALTER TABLE graphkit_server_threads DROP COLUMN expires_at;
         ALTER TABLE graphkit_server_runs ADD COLUMN kwargs TEXT NOT NULL DEFAULT '{}';
         UPDATE graphkit_server_runs SET kwargs = (SELECT k.kwargs FROM graphkit_server_run_kwargs k
             WHERE k.run_id = graphkit_server_runs.run_id);
         DROP TABLE graphkit_server_run_kwargs;",
    )
    .execute(backend.pool())
    .await
    .expect("make the file look old");
    drop(backend);

    let reopened = SqliteBackend::open(&path).await.expect("an old file opens");
    assert!(reopened.get_thread(t).await.expect("get").is_some());
    let versions: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM graphkit_migrations WHERE component = 'server'")
            .fetch_all(reopened.pool())
            .await
            .expect("read");
    assert_eq!(
        versions,
        [1, 2, 3, 4, 5, 6],
        "version 1 is not applied again, the later ones are"
    );
    let recorded = reopened
        .assistant_versions(old.assistant_id, &VersionQuery::default())
        .await
        .expect("versions");
    assert_eq!(
        recorded,
        [AssistantVersion::of(&old)],
        "an assistant of the old file has its version"
    );
    // The old run is due (its due time is its old created_at) and is claimed.
    let claimed = claim(&reopened, "w1", LEASE).await;
    assert_eq!(claimed.run_id, run.run_id);
    assert_eq!(claimed.kwargs, run.kwargs, "the old run keeps its request");
}
