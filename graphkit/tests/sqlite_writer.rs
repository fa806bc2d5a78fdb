//! A file-backed `SqliteSaver` writes through a connection of its own: what it writes is
//! at once visible to other connections and processes, survives a reopen, and `close`
//! leaves the database file alone holding it. A write that finds another connection
//! holding the file's write lock waits for it (off the async thread) instead of failing.
#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, ListOptions, SqliteSaver, SqliteSync,
};
use graphkit::{CompileOptions, RunConfig, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    #[reducer(add)]
    n: i64,
}

fn chain(saver: Arc<dyn Checkpointer>, steps: usize) -> graphkit::CompiledGraph<Count> {
    let mut graph = StateGraph::<Count>::new();
    let name = |i: usize| format!("step_{i:02}");
    for i in 0..steps {
        graph.add_node(&name(i), SyncNode::new(|_: &Count| CountUpdate::new().n(1)));
        if i > 0 {
            graph.add_edge(name(i - 1).as_str(), &name(i));
        }
    }
    graph.add_edge(START, &name(0));
    graph
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn every_step_written_by_a_file_saver_is_seen_by_another_connection_and_after_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("writer.db");
    let saver = SqliteSaver::open_with(&path, SqliteSync::Normal)
        .await
        .unwrap();
    let graph = chain(Arc::new(saver.clone()), 5);
    let state = graph
        .invoke_with(CountUpdate::new(), RunConfig::new().thread_id("w-1"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(state.n, 5);

    // A second saver on the same file (other connections) sees every checkpoint at once.
    let other = SqliteSaver::open(&path).await.unwrap();
    let seen = other
        .list("w-1", "", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(seen.len(), 6, "the input's checkpoint and one per step");
    other.close().await;

    // Closing folds the write-ahead log into the file; the file alone then holds the run.
    saver.close().await;
    assert!(
        !path.with_extension("db-wal").exists(),
        "the write-ahead log is gone after close"
    );
    assert!(
        saver
            .list("w-1", "", &ListOptions::default())
            .await
            .is_err(),
        "a closed saver refuses to work"
    );
    let reopened = SqliteSaver::open(&path).await.unwrap();
    let graph = chain(Arc::new(reopened.clone()), 5);
    let snapshot = graph
        .get_state(&RunConfig::new().thread_id("w-1"))
        .await
        .unwrap();
    assert_eq!(snapshot.values.n, 5);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_on_two_threads_sharing_one_file_saver_each_save_all_their_steps() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open_with(dir.path().join("shared.db"), SqliteSync::Normal)
        .await
        .unwrap();
    let graph = chain(Arc::new(saver.clone()), 8);
    let runs = (0..4).map(|i| {
        let graph = graph.clone();
        tokio::spawn(async move {
            graph
                .invoke_with(
                    CountUpdate::new(),
                    RunConfig::new().thread_id(format!("t-{i}")),
                )
                .await
        })
    });
    for run in runs.collect::<Vec<_>>() {
        assert_eq!(run.await.unwrap().unwrap().into_state().n, 8);
    }
    for i in 0..4 {
        let saved = saver
            .list(&format!("t-{i}"), "", &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(saved.len(), 9, "thread t-{i}");
    }
    saver.close().await;
}

fn record(thread_id: &str, checkpoint_id: &str) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread_id.to_owned(),
        checkpoint_ns: String::new(),
        checkpoint_id: checkpoint_id.to_owned(),
        parent_id: None,
        format_version: 1,
        step: 0,
        source: CheckpointSource::Input,
        created_at_ms: 0,
        metadata: serde_json::json!({"note": "written while the file was locked"}),
        is_snapshot: true,
        payload: b"{}".to_vec(),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_write_waits_for_another_connections_write_lock_and_then_lands() {
    for sync in [SqliteSync::Normal, SqliteSync::Full] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.db");
        let saver = SqliteSaver::open_with(&path, sync).await.unwrap();

        // Another saver's pool holds the write lock in an open transaction.
        let other = SqliteSaver::open(&path).await.unwrap();
        let holder = other.pool().begin_with("BEGIN IMMEDIATE").await.unwrap();

        let writer = saver.clone();
        let put = tokio::spawn(async move { writer.put(record("locked", "0001")).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            !put.is_finished(),
            "{sync:?}: the put cannot commit while the lock is held, and must not give up"
        );
        holder.commit().await.unwrap();
        put.await.unwrap().unwrap();

        let saved = other.get("locked", "", None).await.unwrap().unwrap();
        assert_eq!(saved.record.checkpoint_id, "0001");
        assert_eq!(
            saved.record.metadata["note"],
            "written while the file was locked"
        );
        other.close().await;
        saver.close().await;
    }
}

#[tokio::test]
async fn a_closed_saver_refuses_writes_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open_with(dir.path().join("closed.db"), SqliteSync::Normal)
        .await
        .unwrap();
    saver.close().await;
    let err = saver.put(record("t", "0001")).await.unwrap_err();
    assert!(
        err.to_string().contains("closed"),
        "the error says the saver was closed: {err}"
    );
}
