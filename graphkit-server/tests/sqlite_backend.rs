//! The SQLite backend against the Backend contract: the queue's rules, leases, the
//! sweeper, cancels and events.

use std::time::Duration;

use graphkit_server::ServerError;
use graphkit_server::backend::{
    Backend, CancelAction, CancelOutcome, Lease, MultitaskStrategy, NewRun, RunEnd, RunStatus,
    SqliteBackend,
};
use serde_json::{Map, json};
use uuid::Uuid;

const LEASE: Duration = Duration::from_secs(60);

async fn backend() -> (tempfile::TempDir, SqliteBackend) {
    let dir = tempfile::tempdir().expect("tempdir");
    let backend = SqliteBackend::open(dir.path().join("b.db"))
        .await
        .expect("open");
    (dir, backend)
}

fn new_run(thread: Uuid, strategy: MultitaskStrategy) -> NewRun {
    NewRun {
        run_id: Uuid::now_v7(),
        thread_id: thread,
        assistant_id: Uuid::now_v7(),
        metadata: Map::new(),
        kwargs: json!({"graph_id": "agent"}),
        multitask_strategy: strategy,
        create_thread: Some(Map::new()),
        thread_metadata: Map::new(),
        not_before: None,
    }
}

#[tokio::test]
async fn one_running_run_per_thread_in_creation_order() {
    let (_dir, b) = backend().await;
    let (a, c) = (Uuid::now_v7(), Uuid::now_v7());
    let a1 = b
        .create_run(new_run(a, MultitaskStrategy::Enqueue))
        .await
        .expect("a1")
        .run;
    let a2 = b
        .create_run(new_run(a, MultitaskStrategy::Enqueue))
        .await
        .expect("a2")
        .run;
    let c1 = b
        .create_run(new_run(c, MultitaskStrategy::Enqueue))
        .await
        .expect("c1")
        .run;
    assert_eq!(a1.status, RunStatus::Pending);

    let first = b
        .claim_run("w1", LEASE)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(
        (first.run_id, first.attempt, first.status),
        (a1.run_id, 1, RunStatus::Running)
    );
    assert_eq!(first.worker_id.as_deref(), Some("w1"));
    let second = b
        .claim_run("w2", LEASE)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(
        second.run_id, c1.run_id,
        "a2 waits: its thread has a running run"
    );
    assert!(b.claim_run("w2", LEASE).await.expect("claim").is_none());

    // Only the holder may end it.
    assert!(
        !b.finish_run(a1.run_id, "w2", RunEnd::Success, None)
            .await
            .expect("finish")
    );
    assert!(
        b.finish_run(a1.run_id, "w1", RunEnd::Success, None)
            .await
            .expect("finish")
    );
    let third = b
        .claim_run("w1", LEASE)
        .await
        .expect("claim")
        .expect("a run");
    assert_eq!(third.run_id, a2.run_id);
    let ended = b
        .get_run(Some(a), a1.run_id)
        .await
        .expect("get")
        .expect("present");
    assert_eq!(ended.status, RunStatus::Success);
    assert!(
        b.get_run(Some(c), a1.run_id).await.expect("get").is_none(),
        "wrong thread"
    );
}

#[tokio::test]
async fn strategies_reject_interrupt_and_rollback_act_on_runs_in_flight() {
    let (_dir, b) = backend().await;
    let t = Uuid::now_v7();
    let running = b
        .create_run(new_run(t, MultitaskStrategy::Enqueue))
        .await
        .expect("run")
        .run;
    b.claim_run("w", LEASE)
        .await
        .expect("claim")
        .expect("claimed");
    let pending = b
        .create_run(new_run(t, MultitaskStrategy::Enqueue))
        .await
        .expect("run")
        .run;

    let refused = b.create_run(new_run(t, MultitaskStrategy::Reject)).await;
    assert!(
        matches!(refused, Err(ServerError::Conflict(_))),
        "{refused:?}"
    );
    assert_eq!(
        b.list_runs(t, &Default::default())
            .await
            .expect("list")
            .len(),
        2
    );

    let rollback = b
        .create_run(new_run(t, MultitaskStrategy::Rollback))
        .await
        .expect("run");
    let mut cancelled = rollback.cancelled.clone();
    cancelled.sort();
    let mut expected = vec![running.run_id, pending.run_id];
    expected.sort();
    assert_eq!(cancelled, expected);
    // The pending run went at once; the running one is flagged for its worker.
    assert!(
        b.get_run(None, pending.run_id)
            .await
            .expect("get")
            .is_none()
    );
    assert_eq!(
        b.heartbeat(running.run_id, "w", LEASE).await.expect("beat"),
        Lease::Held {
            cancel: Some(CancelAction::Rollback)
        }
    );
    assert_eq!(
        b.heartbeat(running.run_id, "other", LEASE)
            .await
            .expect("beat"),
        Lease::Lost
    );

    // Interrupt on a pending run: it ends interrupted at once.
    let queued = rollback.run;
    let outcome = b
        .request_cancel(Some(t), queued.run_id, CancelAction::Interrupt)
        .await
        .expect("cancel");
    assert_eq!(outcome, Some(CancelOutcome::CancelledPending));
    assert_eq!(
        b.get_run(None, queued.run_id)
            .await
            .expect("get")
            .expect("kept")
            .status,
        RunStatus::Interrupted
    );
    assert_eq!(
        b.request_cancel(Some(t), queued.run_id, CancelAction::Interrupt)
            .await
            .expect("cancel"),
        Some(CancelOutcome::AlreadyDone)
    );
    assert_eq!(
        b.request_cancel(Some(t), Uuid::now_v7(), CancelAction::Interrupt)
            .await
            .expect("cancel"),
        None
    );
}

#[tokio::test]
async fn expired_leases_go_back_to_the_queue_until_the_attempts_run_out() {
    let (_dir, b) = backend().await;
    let t = Uuid::now_v7();
    let run = b
        .create_run(new_run(t, MultitaskStrategy::Enqueue))
        .await
        .expect("run")
        .run;
    // A lease of zero has expired as soon as it is granted.
    let held = b
        .claim_run("dead", Duration::ZERO)
        .await
        .expect("claim")
        .expect("claimed");
    assert_eq!(held.attempt, 1);
    assert_eq!(b.sweep_expired(2).await.expect("sweep"), [run.run_id]);
    assert_eq!(
        b.get_run(None, run.run_id)
            .await
            .expect("get")
            .expect("run")
            .status,
        RunStatus::Pending
    );
    assert_eq!(
        b.heartbeat(run.run_id, "dead", LEASE).await.expect("beat"),
        Lease::Lost
    );

    let again = b
        .claim_run("alive", Duration::ZERO)
        .await
        .expect("claim")
        .expect("claimed");
    assert_eq!(again.attempt, 2);
    assert_eq!(b.sweep_expired(2).await.expect("sweep"), [run.run_id]);
    let failed = b
        .get_run(None, run.run_id)
        .await
        .expect("get")
        .expect("run");
    assert_eq!(failed.status, RunStatus::Error);
    assert!(
        failed
            .cancel_reason
            .expect("reason")
            .contains("exceeded max attempts")
    );
    let thread = b.get_thread(t).await.expect("get").expect("thread");
    assert_eq!(thread.status.as_str(), "error");
    assert!(b.sweep_expired(2).await.expect("sweep").is_empty());
}

#[tokio::test]
async fn events_get_increasing_sequence_numbers_and_wake_watchers() {
    let (_dir, b) = backend().await;
    let run = Uuid::now_v7();
    let mut watch = b.watch_run(run);
    let last = b
        .append_events(
            run,
            &[
                ("metadata".into(), "{}".into()),
                ("values".into(), "{\"a\":1}".into()),
            ],
        )
        .await
        .expect("append");
    assert_eq!(last, 2);
    watch.changed().await; // the append woke the watcher
    assert_eq!(
        b.append_events(run, &[("values".into(), "{}".into())])
            .await
            .expect("append"),
        3
    );
    let after_one = b.read_events(run, 1).await.expect("read");
    let seqs: Vec<i64> = after_one.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(after_one[0].data, "{\"a\":1}");
    assert_eq!(b.last_event_seq(run).await.expect("last"), 3);
    assert_eq!(b.read_events(Uuid::now_v7(), 0).await.expect("read"), []);
}
