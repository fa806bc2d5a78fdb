//! The behaviour every `Checkpointer` must have, run against each saver: in memory always,
//! SQLite with the `sqlite` feature, PostgreSQL with the `postgres` feature when
//! `GRAPHKIT_TEST_POSTGRES_URL` names a server (otherwise those tests print why they skip).
//!
//! Each behaviour is one generic async function; `for_each_saver!` runs it on every backend.
//! Behaviours only a database has (reopening, corrupt rows, dead lock holders, two
//! processes) follow, per backend.

use crate::backend_support;

use backend_support::unique;
use graphkit::checkpoint::{
    CheckpointRecord, CheckpointSource, CheckpointTuple, Checkpointer, FORMAT_VERSION,
    InMemorySaver, ListOptions, PendingWrite, new_checkpoint_id,
};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
use graphkit::error::StorageError;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Fixtures

/// A thread's checkpoints, oldest first, each the parent of the next.
fn chain(thread_id: &str, checkpoint_ns: &str, metadata: &[Value]) -> Vec<CheckpointRecord> {
    let mut records: Vec<CheckpointRecord> = Vec::new();
    for (step, metadata) in metadata.iter().enumerate() {
        let parent = records.last().map(|r| r.checkpoint_id.clone());
        let step = step as i64 - 1;
        records.push(CheckpointRecord {
            thread_id: thread_id.to_owned(),
            checkpoint_ns: checkpoint_ns.to_owned(),
            checkpoint_id: new_checkpoint_id(parent.as_deref()),
            parent_id: parent,
            format_version: FORMAT_VERSION,
            step,
            source: if step < 0 {
                CheckpointSource::Input
            } else {
                CheckpointSource::Loop
            },
            created_at_ms: 1_700_000_000_000 + step,
            metadata: metadata.clone(),
            is_snapshot: step % 2 != 0,
            payload: vec![0, 255, step as u8, b'x', 0],
        });
    }
    records
}

fn plain_chain(thread_id: &str, checkpoint_ns: &str, len: usize) -> Vec<CheckpointRecord> {
    let metadata: Vec<Value> = (0..len).map(|i| json!({ "n": i })).collect();
    chain(thread_id, checkpoint_ns, &metadata)
}

async fn put_all(saver: &dyn Checkpointer, records: &[CheckpointRecord]) {
    for record in records {
        saver.put(record.clone()).await.expect("put");
    }
}

fn write(task_id: &str, node: &str, payload: &[u8]) -> PendingWrite {
    PendingWrite {
        task_id: task_id.to_owned(),
        node: node.to_owned(),
        payload: payload.to_vec(),
    }
}

fn ids(records: &[CheckpointRecord]) -> Vec<&str> {
    records.iter().map(|r| r.checkpoint_id.as_str()).collect()
}

async fn latest(
    saver: &dyn Checkpointer,
    thread_id: &str,
    checkpoint_ns: &str,
) -> Option<CheckpointTuple> {
    saver
        .get(thread_id, checkpoint_ns, None)
        .await
        .expect("get latest")
}

// ---------------------------------------------------------------------------------------
// Behaviours of every saver

async fn get_on_an_unknown_thread_is_none(saver: &dyn Checkpointer) {
    let thread = unique("unknown");
    assert_eq!(latest(saver, &thread, "").await, None);
    assert_eq!(
        saver
            .get(&thread, "", Some("0123"))
            .await
            .expect("get by id"),
        None
    );
    assert_eq!(
        saver
            .list(&thread, "", &ListOptions::default())
            .await
            .expect("list"),
        []
    );
}

async fn put_then_get_returns_the_latest_or_the_named_checkpoint(saver: &dyn Checkpointer) {
    let thread = unique("get");
    let records = chain(
        &thread,
        "",
        &[
            json!({}),
            json!({ "nested": { "a": [1, "two", null, true] } }),
            json!({ "k": "v" }),
        ],
    );
    put_all(saver, &records).await;

    let newest = latest(saver, &thread, "").await.expect("a checkpoint");
    assert_eq!(
        newest,
        CheckpointTuple {
            record: records[2].clone(),
            pending_writes: vec![]
        }
    );
    for record in &records {
        let got = saver
            .get(&thread, "", Some(&record.checkpoint_id))
            .await
            .expect("get by id");
        assert_eq!(got.map(|t| t.record).as_ref(), Some(record));
    }
    let missing = new_checkpoint_id(Some(&records[2].checkpoint_id));
    assert_eq!(
        saver
            .get(&thread, "", Some(&missing))
            .await
            .expect("get missing"),
        None
    );
}

async fn list_is_newest_first_with_before_and_limit(saver: &dyn Checkpointer) {
    let thread = unique("list");
    let records = plain_chain(&thread, "", 5);
    put_all(saver, &records).await;
    let newest_first: Vec<&str> = ids(&records).into_iter().rev().collect();

    let all = saver
        .list(&thread, "", &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(ids(&all), newest_first);
    assert_eq!(all[0], records[4]);

    let limited = saver
        .list(
            &thread,
            "",
            &ListOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .expect("list");
    assert_eq!(ids(&limited), newest_first[..2]);

    let before = ListOptions {
        before: Some(records[3].checkpoint_id.clone()),
        ..Default::default()
    };
    assert_eq!(
        ids(&saver.list(&thread, "", &before).await.expect("list")),
        newest_first[2..]
    );

    let before_limited = ListOptions {
        before: Some(records[3].checkpoint_id.clone()),
        limit: Some(1),
        metadata: None,
    };
    assert_eq!(
        ids(&saver
            .list(&thread, "", &before_limited)
            .await
            .expect("list")),
        newest_first[2..3]
    );

    let none = ListOptions {
        limit: Some(0),
        ..Default::default()
    };
    assert_eq!(saver.list(&thread, "", &none).await.expect("list"), []);
}

async fn list_filters_on_metadata_equality(saver: &dyn Checkpointer) {
    let thread = unique("filter");
    let records = chain(
        &thread,
        "",
        &[
            json!({ "kind": "a", "tags": ["x"] }),
            json!({ "kind": "b", "tags": ["x", "y"] }),
            json!({ "kind": "a", "tags": ["x", "y"], "extra": { "deep": 1 } }),
            json!({ "kind": "a" }),
            json!({ "other": true }),
        ],
    );
    put_all(saver, &records).await;
    let filter = |value: Value| ListOptions {
        metadata: value.as_object().cloned(),
        ..Default::default()
    };

    let kind_a = saver
        .list(&thread, "", &filter(json!({ "kind": "a" })))
        .await
        .expect("list");
    assert_eq!(
        ids(&kind_a),
        [&records[3], &records[2], &records[0]].map(|r| r.checkpoint_id.as_str())
    );

    // Equality, not containment: ["x"] does not match ["x", "y"].
    let tags_x = saver
        .list(&thread, "", &filter(json!({ "tags": ["x"] })))
        .await
        .expect("list");
    assert_eq!(ids(&tags_x), [records[0].checkpoint_id.as_str()]);

    let two_keys = saver
        .list(
            &thread,
            "",
            &filter(json!({ "kind": "a", "tags": ["x", "y"] })),
        )
        .await
        .expect("list");
    assert_eq!(ids(&two_keys), [records[2].checkpoint_id.as_str()]);

    let nested = saver
        .list(&thread, "", &filter(json!({ "extra": {} })))
        .await
        .expect("list");
    assert_eq!(nested, []);

    let limited = ListOptions {
        limit: Some(2),
        ..filter(json!({ "kind": "a" }))
    };
    assert_eq!(
        ids(&saver.list(&thread, "", &limited).await.expect("list")),
        ids(&kind_a)[..2]
    );

    let before = ListOptions {
        before: Some(records[3].checkpoint_id.clone()),
        ..filter(json!({ "kind": "a" }))
    };
    assert_eq!(
        ids(&saver.list(&thread, "", &before).await.expect("list")),
        ids(&kind_a)[1..]
    );

    let nothing = saver
        .list(&thread, "", &filter(json!({ "kind": "zzz" })))
        .await
        .expect("list");
    assert_eq!(nothing, []);

    let empty_filter = saver
        .list(&thread, "", &filter(json!({})))
        .await
        .expect("list");
    assert_eq!(empty_filter.len(), 5);
}

async fn putting_an_existing_id_replaces_it(saver: &dyn Checkpointer) {
    let thread = unique("replace");
    let records = plain_chain(&thread, "", 2);
    put_all(saver, &records).await;
    let mut changed = records[0].clone();
    changed.metadata = json!({ "changed": true });
    changed.payload = b"new payload".to_vec();
    changed.is_snapshot = !changed.is_snapshot;
    changed.source = CheckpointSource::Update;
    saver.put(changed.clone()).await.expect("put again");

    let got = saver
        .get(&thread, "", Some(&changed.checkpoint_id))
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.record, changed);
    let all = saver
        .list(&thread, "", &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(all, [records[1].clone(), changed]);
}

async fn pending_writes_append_in_order_and_replace_by_task(saver: &dyn Checkpointer) {
    let thread = unique("writes");
    let records = plain_chain(&thread, "", 2);
    put_all(saver, &records).await;
    let first = &records[0].checkpoint_id;

    saver
        .put_writes(
            &thread,
            "",
            first,
            vec![write("t1", "a", b"one"), write("t2", "b", b"two")],
        )
        .await
        .expect("put");
    saver
        .put_writes(&thread, "", first, vec![write("t3", "c", b"three")])
        .await
        .expect("put");
    saver
        .put_writes(&thread, "", first, vec![write("t1", "a2", b"one again")])
        .await
        .expect("put");
    saver
        .put_writes(&thread, "", first, vec![])
        .await
        .expect("put nothing");

    let got = saver
        .get(&thread, "", Some(first))
        .await
        .expect("get")
        .expect("present");
    assert_eq!(
        got.pending_writes,
        [
            write("t1", "a2", b"one again"),
            write("t2", "b", b"two"),
            write("t3", "c", b"three")
        ]
    );
    // Writes belong to their checkpoint only.
    assert_eq!(
        latest(saver, &thread, "")
            .await
            .expect("present")
            .pending_writes,
        []
    );

    saver
        .put_writes(
            &thread,
            "",
            &records[1].checkpoint_id,
            vec![write("t9", "z", &[0, 1, 2])],
        )
        .await
        .expect("put");
    assert_eq!(
        latest(saver, &thread, "")
            .await
            .expect("present")
            .pending_writes,
        [write("t9", "z", &[0, 1, 2])]
    );
}

async fn delete_thread_removes_everything_of_that_thread_only(saver: &dyn Checkpointer) {
    let doomed = unique("doomed");
    let kept = unique("kept");
    for thread in [&doomed, &kept] {
        for ns in ["", "child"] {
            let records = plain_chain(thread, ns, 2);
            put_all(saver, &records).await;
            saver
                .put_writes(
                    thread,
                    ns,
                    &records[1].checkpoint_id,
                    vec![write("t", "n", b"w")],
                )
                .await
                .expect("put");
        }
    }
    let kept_before = latest(saver, &kept, "child").await;

    saver.delete_thread(&doomed).await.expect("delete");
    for ns in ["", "child"] {
        assert_eq!(latest(saver, &doomed, ns).await, None);
        assert_eq!(
            saver
                .list(&doomed, ns, &ListOptions::default())
                .await
                .expect("list"),
            []
        );
        assert_eq!(
            saver
                .list(&kept, ns, &ListOptions::default())
                .await
                .expect("list")
                .len(),
            2
        );
    }
    assert_eq!(latest(saver, &kept, "child").await, kept_before);

    // Writes went too: a checkpoint saved again under a deleted id starts without them.
    let again = plain_chain(&doomed, "", 1);
    saver.put(again[0].clone()).await.expect("put");
    assert_eq!(
        latest(saver, &doomed, "")
            .await
            .expect("present")
            .pending_writes,
        []
    );

    saver
        .delete_thread(&unique("never-existed"))
        .await
        .expect("deleting an unknown thread is fine");
}

async fn delete_run_removes_that_runs_checkpoints_and_writes_only(saver: &dyn Checkpointer) {
    let thread = unique("rollback");
    let other = unique("rollback-other");
    let records = chain(
        &thread,
        "",
        &[
            json!({ "run_id": "first" }),
            json!({ "run_id": "second" }),
            json!({ "run_id": "second" }),
        ],
    );
    put_all(saver, &records).await;
    saver
        .put_writes(
            &thread,
            "",
            &records[2].checkpoint_id,
            vec![write("t", "n", b"w")],
        )
        .await
        .expect("put");
    let elsewhere = chain(&other, "", &[json!({ "run_id": "second" })]);
    put_all(saver, &elsewhere).await;

    assert_eq!(
        saver.delete_run(&thread, "second").await.expect("delete"),
        2
    );
    let left = saver
        .list(&thread, "", &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(ids(&left), [records[0].checkpoint_id.as_str()]);
    assert_eq!(
        latest(saver, &thread, "").await.expect("present").record,
        records[0]
    );
    // Another thread's checkpoints of a run with the same id stay.
    assert_eq!(
        latest(saver, &other, "").await.expect("present").record,
        elsewhere[0]
    );
    // The writes went too: the id saved again starts without them.
    saver.put(records[2].clone()).await.expect("put");
    assert_eq!(
        saver
            .get(&thread, "", Some(&records[2].checkpoint_id))
            .await
            .expect("get")
            .expect("present")
            .pending_writes,
        []
    );
    assert_eq!(
        saver
            .delete_run(&thread, "never-ran")
            .await
            .expect("delete"),
        0
    );
}

async fn namespaces_are_separate(saver: &dyn Checkpointer) {
    let thread = unique("ns");
    let root = plain_chain(&thread, "", 2);
    let mut child = plain_chain(&thread, "inner:1", 3);
    // The same id in two namespaces is two checkpoints.
    child[0].checkpoint_id = root[0].checkpoint_id.clone();
    put_all(saver, &root).await;
    put_all(saver, &child).await;
    saver
        .put_writes(
            &thread,
            "inner:1",
            &child[0].checkpoint_id,
            vec![write("t", "n", b"child")],
        )
        .await
        .expect("put");

    assert_eq!(
        latest(saver, &thread, "").await.expect("present").record,
        root[1]
    );
    assert_eq!(
        latest(saver, &thread, "inner:1")
            .await
            .expect("present")
            .record,
        child[2]
    );
    let root_first = saver
        .get(&thread, "", Some(&root[0].checkpoint_id))
        .await
        .expect("get")
        .expect("present");
    assert_eq!(
        (root_first.record, root_first.pending_writes),
        (root[0].clone(), vec![])
    );
    let child_first = saver
        .get(&thread, "inner:1", Some(&root[0].checkpoint_id))
        .await
        .expect("get")
        .expect("present");
    assert_eq!(child_first.record, child[0]);
    assert_eq!(child_first.pending_writes, [write("t", "n", b"child")]);
    assert_eq!(
        saver
            .list(&thread, "", &ListOptions::default())
            .await
            .expect("list")
            .len(),
        2
    );
    assert_eq!(
        saver
            .list(&thread, "inner:1", &ListOptions::default())
            .await
            .expect("list")
            .len(),
        3
    );
    assert_eq!(latest(saver, &thread, "inner:2").await, None);
}

async fn a_locked_thread_refuses_other_runs_until_unlocked(saver: &dyn Checkpointer) {
    let thread = unique("lock");
    let other_thread = unique("lock-other");
    assert!(saver.try_lock_thread(&thread, "run-1").await.expect("lock"));
    assert!(
        !saver.try_lock_thread(&thread, "run-2").await.expect("lock"),
        "a second run is refused"
    );
    assert!(
        saver.try_lock_thread(&thread, "run-1").await.expect("lock"),
        "the holder may lock again"
    );
    assert!(
        saver
            .try_lock_thread(&other_thread, "run-2")
            .await
            .expect("lock"),
        "other threads are free"
    );

    saver
        .unlock_thread(&thread, "run-2")
        .await
        .expect("unlock by a non-holder is a no-op");
    assert!(
        !saver.try_lock_thread(&thread, "run-2").await.expect("lock"),
        "still held by run-1"
    );

    saver.unlock_thread(&thread, "run-1").await.expect("unlock");
    assert!(
        saver.try_lock_thread(&thread, "run-2").await.expect("lock"),
        "free after unlock"
    );
    assert!(!saver.try_lock_thread(&thread, "run-1").await.expect("lock"));

    saver.unlock_thread(&thread, "run-2").await.expect("unlock");
    saver
        .unlock_thread(&other_thread, "run-2")
        .await
        .expect("unlock");
    saver
        .unlock_thread(&thread, "run-2")
        .await
        .expect("unlocking twice is fine");
}

async fn concurrent_lock_attempts_let_exactly_one_run_in(saver: &dyn Checkpointer) {
    let thread = unique("lock-race");
    let attempts = (0..8).map(|i| {
        let thread = &thread;
        async move {
            saver
                .try_lock_thread(thread, &format!("run-{i}"))
                .await
                .expect("lock")
        }
    });
    let won = futures::future::join_all(attempts).await;
    assert_eq!(won.iter().filter(|won| **won).count(), 1, "{won:?}");
}

async fn concurrent_writers_all_succeed(saver: &dyn Checkpointer) {
    let thread = unique("writers");
    let records = plain_chain(&thread, "", 12);
    let puts = records.iter().map(|record| saver.put(record.clone()));
    for result in futures::future::join_all(puts).await {
        result.expect("put");
    }
    let id = &records[0].checkpoint_id;
    let writes = (0..12).map(|i| {
        let (thread, task) = (&thread, format!("task-{i:02}"));
        async move {
            saver
                .put_writes(thread, "", id, vec![write(&task, "n", &[i])])
                .await
        }
    });
    for result in futures::future::join_all(writes).await {
        result.expect("put writes");
    }
    let all = saver
        .list(&thread, "", &ListOptions::default())
        .await
        .expect("list");
    assert_eq!(all.len(), 12);
    let first = saver
        .get(&thread, "", Some(id))
        .await
        .expect("get")
        .expect("present");
    let mut tasks: Vec<String> = first
        .pending_writes
        .into_iter()
        .map(|w| w.task_id)
        .collect();
    tasks.sort();
    assert_eq!(
        tasks,
        (0..12).map(|i| format!("task-{i:02}")).collect::<Vec<_>>()
    );
}

// Behaviours only a database saver has (it checks versions and decodes rows).

#[cfg(any(feature = "sqlite", feature = "postgres"))]
async fn a_newer_format_version_is_refused_by_name(saver: &dyn Checkpointer) {
    let thread = unique("version");
    let mut records = plain_chain(&thread, "", 2);
    records[1].format_version = FORMAT_VERSION + 1;
    put_all(saver, &records).await;

    let error = saver
        .get(&thread, "", None)
        .await
        .expect_err("a newer version is refused");
    match error {
        StorageError::CheckpointVersion {
            thread_id,
            checkpoint_id,
            found,
            supported,
        } => {
            assert_eq!(
                (thread_id, checkpoint_id),
                (thread.clone(), records[1].checkpoint_id.clone())
            );
            assert_eq!((found, supported), (FORMAT_VERSION + 1, FORMAT_VERSION));
        }
        other => panic!("expected CheckpointVersion, got {other:?}"),
    }
    assert!(matches!(
        saver.list(&thread, "", &ListOptions::default()).await,
        Err(StorageError::CheckpointVersion { .. })
    ));
    let older = saver
        .get(&thread, "", Some(&records[0].checkpoint_id))
        .await
        .expect("older rows read");
    assert_eq!(older.map(|t| t.record), Some(records[0].clone()));
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
/// `corrupt(thread, checkpoint)` damages one stored row behind the saver's back.
async fn a_corrupt_row_is_reported_by_name_and_the_rest_still_reads(
    saver: &dyn Checkpointer,
    corrupt: impl AsyncFnOnce(&str, &str),
) {
    let thread = unique("corrupt");
    let neighbour = unique("neighbour");
    let records = plain_chain(&thread, "", 3);
    let neighbours = plain_chain(&neighbour, "", 2);
    put_all(saver, &records).await;
    put_all(saver, &neighbours).await;
    let bad = &records[1];
    corrupt(&thread, &bad.checkpoint_id).await;

    let assert_names_the_row = |result: Result<_, StorageError>, what: &str| match result {
        Err(error @ StorageError::CorruptCheckpoint { .. }) => {
            let StorageError::CorruptCheckpoint {
                thread_id,
                checkpoint_id,
                ..
            } = &error
            else {
                unreachable!()
            };
            assert_eq!(
                (thread_id, checkpoint_id),
                (&thread, &bad.checkpoint_id),
                "{what}"
            );
            let message = error.to_string();
            assert!(
                message.contains(&thread) && message.contains(&bad.checkpoint_id),
                "{what}: {message}"
            );
        }
        Err(other) => panic!("{what}: expected CorruptCheckpoint, got {other:?}"),
        Ok(_) => panic!("{what}: expected CorruptCheckpoint, got a value"),
    };
    assert_names_the_row(
        saver
            .get(&thread, "", Some(&bad.checkpoint_id))
            .await
            .map(drop),
        "get by id",
    );
    assert_names_the_row(
        saver
            .list(&thread, "", &ListOptions::default())
            .await
            .map(drop),
        "list",
    );

    // Rows around it, and other threads, still read.
    assert_eq!(
        latest(saver, &thread, "").await.map(|t| t.record).as_ref(),
        Some(&records[2])
    );
    let first = saver
        .get(&thread, "", Some(&records[0].checkpoint_id))
        .await
        .expect("an intact row reads");
    assert_eq!(first.map(|t| t.record).as_ref(), Some(&records[0]));
    let newest_only = ListOptions {
        limit: Some(1),
        ..Default::default()
    };
    assert_eq!(
        saver
            .list(&thread, "", &newest_only)
            .await
            .expect("list above the bad row"),
        [records[2].clone()]
    );
    assert_eq!(
        saver
            .list(&neighbour, "", &ListOptions::default())
            .await
            .expect("other threads list")
            .len(),
        2
    );
    saver
        .put(plain_chain(&neighbour, "", 1).remove(0))
        .await
        .expect("other threads still write");

    saver
        .delete_thread(&thread)
        .await
        .expect("a thread with a corrupt row can be deleted");
    assert_eq!(latest(saver, &thread, "").await, None);
}

// ---------------------------------------------------------------------------------------
// Runs

macro_rules! for_each_saver {
    ($($behaviour:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    super::$behaviour(&graphkit::checkpoint::InMemorySaver::new()).await;
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let (_dir, saver) = super::sqlite_backend::saver().await;
                    super::$behaviour(&saver).await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let Some(saver) = super::postgres_backend::saver().await else { return };
                    super::$behaviour(&saver).await;
                }
            )*
        }
    };
}

for_each_saver!(
    get_on_an_unknown_thread_is_none,
    put_then_get_returns_the_latest_or_the_named_checkpoint,
    list_is_newest_first_with_before_and_limit,
    list_filters_on_metadata_equality,
    putting_an_existing_id_replaces_it,
    pending_writes_append_in_order_and_replace_by_task,
    delete_thread_removes_everything_of_that_thread_only,
    delete_run_removes_that_runs_checkpoints_and_writes_only,
    namespaces_are_separate,
    a_locked_thread_refuses_other_runs_until_unlocked,
    concurrent_lock_attempts_let_exactly_one_run_in,
    concurrent_writers_all_succeed,
);

#[test]
fn the_memory_saver_is_usable_as_a_trait_object() {
    let saver: std::sync::Arc<dyn Checkpointer> = std::sync::Arc::new(InMemorySaver::new());
    assert!(format!("{saver:?}").contains("InMemorySaver"));
}

// ---------------------------------------------------------------------------------------
// Property tests: any record comes back as it was put.

mod round_trip {
    use graphkit::checkpoint::{CheckpointRecord, CheckpointSource, Checkpointer, FORMAT_VERSION};
    use proptest::prelude::*;
    use serde_json::{Map, Value};

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            // Floats with short exact forms: JSON text round trips of arbitrary floats depend
            // on the parser's rounding, which is serde_json's business, not the saver's.
            prop::sample::select(vec![0.5, -2.25, 1e-3, 6.02e23]).prop_map(Value::from),
            ".*".prop_map(Value::String),
        ]
    }

    fn json_object() -> impl Strategy<Value = Value> {
        let value = json_leaf().prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        prop::collection::btree_map(".{0,8}", value, 0..5)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
    }

    fn record() -> impl Strategy<Value = CheckpointRecord> {
        (
            (
                "[a-z0-9:|]{0,12}",
                "[0-9a-f]{32}",
                proptest::option::of("[0-9a-f]{32}"),
            ),
            (
                0..=FORMAT_VERSION,
                any::<i64>(),
                any::<i64>(),
                any::<bool>(),
            ),
            prop::sample::select(vec![
                CheckpointSource::Input,
                CheckpointSource::Loop,
                CheckpointSource::Update,
                CheckpointSource::Fork,
            ]),
            json_object(),
            prop::collection::vec(any::<u8>(), 0..256),
        )
            .prop_map(
                |(
                    (checkpoint_ns, checkpoint_id, parent_id),
                    (format_version, step, created_at_ms, is_snapshot),
                    source,
                    metadata,
                    payload,
                )| {
                    CheckpointRecord {
                        thread_id: String::new(), // set per case
                        checkpoint_ns,
                        checkpoint_id,
                        parent_id,
                        format_version,
                        step,
                        source,
                        created_at_ms,
                        metadata,
                        is_snapshot,
                        payload,
                    }
                },
            )
    }

    /// Puts each generated record on a fresh thread and reads it back, by id and as the latest.
    pub(crate) fn round_trips(saver: &dyn Checkpointer, runtime: &tokio::runtime::Runtime) {
        let config = ProptestConfig {
            cases: 32,
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        proptest!(config, |(mut record in record())| {
            record.thread_id = super::unique("prop");
            let (by_id, newest) = runtime.block_on(async {
                saver.put(record.clone()).await.expect("put");
                let by_id = saver.get(&record.thread_id, &record.checkpoint_ns, Some(&record.checkpoint_id)).await;
                let newest = saver.get(&record.thread_id, &record.checkpoint_ns, None).await;
                (by_id.expect("get by id"), newest.expect("get latest"))
            });
            prop_assert_eq!(by_id.map(|t| t.record), Some(record.clone()));
            prop_assert_eq!(newest.map(|t| t.record), Some(record));
        });
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn any_record_round_trips_in_memory() {
        round_trips(&graphkit::checkpoint::InMemorySaver::new(), &runtime());
    }

    #[cfg(feature = "sqlite")]
    #[test]
    fn any_record_round_trips_in_sqlite() {
        let runtime = runtime();
        let (_dir, saver) = runtime.block_on(super::sqlite_backend::saver());
        round_trips(&saver, &runtime);
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn any_record_round_trips_in_postgres() {
        let runtime = runtime();
        let Some(saver) = runtime.block_on(super::postgres_backend::saver()) else {
            return;
        };
        round_trips(&saver, &runtime);
    }
}

// ---------------------------------------------------------------------------------------
// Two processes: a lock held by a process that is then killed (SIGKILL) is taken over.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod two_processes {
    use graphkit::checkpoint::Checkpointer;

    /// The environment of a child process started by [`lock_holder`]: which backend, where
    /// (a file path or a URL), and which thread to hold.
    const HOLDER_BACKEND: &str = "GRAPHKIT_TEST_LOCK_HOLDER_BACKEND";
    const HOLDER_TARGET: &str = "GRAPHKIT_TEST_LOCK_HOLDER_TARGET";
    const HOLDER_THREAD: &str = "GRAPHKIT_TEST_LOCK_HOLDER_THREAD";
    const HOLDER_READY: &str = "graphkit-test: lock held";

    /// Does nothing in a normal run. Started by [`lock_holder`] as a child process (this test
    /// binary, filtered to this test), it takes the lock on a thread, says so on stdout and
    /// sleeps until it is killed.
    #[test]
    fn lock_holder_child_process() {
        let (Ok(backend), Ok(target), Ok(thread)) = (
            std::env::var(HOLDER_BACKEND),
            std::env::var(HOLDER_TARGET),
            std::env::var(HOLDER_THREAD),
        ) else {
            return;
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let saver: Box<dyn Checkpointer> = match backend.as_str() {
                #[cfg(feature = "sqlite")]
                "sqlite" => Box::new(
                    graphkit::checkpoint::SqliteSaver::open(&target)
                        .await
                        .expect("open"),
                ),
                #[cfg(feature = "postgres")]
                "postgres" => Box::new(
                    graphkit::checkpoint::PostgresSaver::connect(&target)
                        .await
                        .expect("connect"),
                ),
                other => panic!("unknown backend {other} for {target}"),
            };
            assert!(
                saver
                    .try_lock_thread(&thread, "child-run")
                    .await
                    .expect("lock"),
                "the thread is free"
            );
            println!("{HOLDER_READY}");
            tokio::time::sleep(std::time::Duration::from_secs(600)).await;
            drop(saver);
        });
    }

    /// A child process holding a thread lock; killed when dropped, so a failing test leaves no
    /// process behind.
    pub(crate) struct LockHolder(std::process::Child);

    impl LockHolder {
        /// Starts the holder and waits until it holds the lock.
        pub(crate) fn start(backend: &str, target: &str, thread: &str) -> Self {
            use std::io::BufRead;
            let mut child =
                std::process::Command::new(std::env::current_exe().expect("the test binary"))
                    .args([
                        "checkpoint_conformance::two_processes::lock_holder_child_process",
                        "--exact",
                        "--nocapture",
                        "--test-threads",
                        "1",
                    ])
                    .env(HOLDER_BACKEND, backend)
                    .env(HOLDER_TARGET, target)
                    .env(HOLDER_THREAD, thread)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .expect("start the holder");
            let stdout = child.stdout.take().expect("piped stdout");
            let holder = Self(child);
            let ready = std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|line| line.contains(HOLDER_READY));
            assert!(ready, "the holder process exited without taking the lock");
            holder
        }

        /// SIGKILL, then reap (until reaped, a dead process still has a /proc entry).
        pub(crate) fn kill(mut self) {
            self.0.kill().expect("kill the holder");
            self.0.wait().expect("reap the holder");
        }
    }

    impl Drop for LockHolder {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Tries `try_lock_thread` until it succeeds or `patience` runs out (a server notices a
    /// closed connection a moment after the process is gone). No timing is asserted: only that
    /// the lock is released eventually.
    #[cfg(feature = "postgres")]
    pub(crate) async fn lock_eventually(
        saver: &dyn Checkpointer,
        thread: &str,
        run_id: &str,
        patience: std::time::Duration,
    ) -> bool {
        let deadline = std::time::Instant::now() + patience;
        loop {
            if saver.try_lock_thread(thread, run_id).await.expect("lock") {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

// ---------------------------------------------------------------------------------------
// SQLite

#[cfg(feature = "sqlite")]
mod sqlite_backend {
    use graphkit::checkpoint::{Checkpointer, ListOptions, SqliteSaver};
    use sqlx::Row;

    use super::backend_support::unique;
    use super::two_processes::LockHolder;

    /// A saver on a fresh file in a temporary directory (removed when the guard drops).
    pub(crate) async fn saver() -> (tempfile::TempDir, SqliteSaver) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let saver = SqliteSaver::open(dir.path().join("checkpoints.db"))
            .await
            .expect("open");
        (dir, saver)
    }

    #[tokio::test]
    async fn a_newer_format_version_is_refused_by_name() {
        let (_dir, saver) = saver().await;
        super::a_newer_format_version_is_refused_by_name(&saver).await;
    }

    async fn corrupt_with(saver: &SqliteSaver, sql: &'static str) {
        let pool = saver.pool().clone();
        super::a_corrupt_row_is_reported_by_name_and_the_rest_still_reads(
            saver,
            async move |thread, checkpoint| {
                let changed = sqlx::query(sql)
                    .bind(thread)
                    .bind(checkpoint)
                    .execute(&pool)
                    .await
                    .expect("corrupt");
                assert_eq!(changed.rows_affected(), 1);
            },
        )
        .await;
    }

    #[tokio::test]
    async fn metadata_that_is_not_json_is_a_corrupt_checkpoint() {
        let (_dir, saver) = saver().await;
        corrupt_with(
            &saver,
            "UPDATE graphkit_checkpoints SET metadata = '{\"truncat' WHERE thread_id = ?1 AND checkpoint_id = ?2",
        )
        .await;
    }

    #[tokio::test]
    async fn an_unknown_source_is_a_corrupt_checkpoint() {
        let (_dir, saver) = saver().await;
        corrupt_with(&saver, "UPDATE graphkit_checkpoints SET source = 'garbage' WHERE thread_id = ?1 AND checkpoint_id = ?2")
            .await;
    }

    #[tokio::test]
    async fn a_value_of_the_wrong_type_is_a_corrupt_checkpoint() {
        let (_dir, saver) = saver().await;
        corrupt_with(&saver, "UPDATE graphkit_checkpoints SET step = 'seven' WHERE thread_id = ?1 AND checkpoint_id = ?2")
            .await;
    }

    #[tokio::test]
    async fn a_negative_format_version_is_a_corrupt_checkpoint() {
        let (_dir, saver) = saver().await;
        corrupt_with(
            &saver,
            "UPDATE graphkit_checkpoints SET format_version = -3 WHERE thread_id = ?1 AND checkpoint_id = ?2",
        )
        .await;
    }

    async fn migrations(saver: &SqliteSaver) -> Vec<(String, i64, i64)> {
        sqlx::query("SELECT component, version, applied_at_ms FROM graphkit_migrations ORDER BY component, version")
            .fetch_all(saver.pool())
            .await
            .expect("read migrations")
            .iter()
            .map(|row| (row.get("component"), row.get("version"), row.get("applied_at_ms")))
            .collect()
    }

    #[tokio::test]
    async fn reopening_the_file_keeps_data_and_does_not_rerun_migrations() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("reopen.db");
        let thread = unique("reopen");
        let records = super::plain_chain(&thread, "", 2);
        let applied = {
            let saver = SqliteSaver::open(&path).await.expect("open");
            super::put_all(&saver, &records).await;
            saver
                .put_writes(
                    &thread,
                    "",
                    &records[1].checkpoint_id,
                    vec![super::write("t", "n", b"w")],
                )
                .await
                .expect("put");
            assert!(saver.try_lock_thread(&thread, "run-1").await.expect("lock"));
            let applied = migrations(&saver).await;
            assert!(
                applied
                    .iter()
                    .any(|(component, version, _)| component == "checkpoint" && *version == 1)
            );
            saver.pool().close().await;
            applied
        };

        let saver = SqliteSaver::open(&path).await.expect("reopen");
        assert_eq!(migrations(&saver).await, applied, "migrations ran once");
        let newest = super::latest(&saver, &thread, "")
            .await
            .expect("data survived");
        assert_eq!(newest.record, records[1]);
        assert_eq!(newest.pending_writes, [super::write("t", "n", b"w")]);
        assert_eq!(
            saver
                .list(&thread, "", &ListOptions::default())
                .await
                .expect("list")
                .len(),
            2
        );
        assert!(
            !saver.try_lock_thread(&thread, "run-2").await.expect("lock"),
            "this process still holds it"
        );
    }

    #[tokio::test]
    async fn two_savers_on_one_file_share_checkpoints_and_locks() {
        let (dir, first) = saver().await;
        let second = SqliteSaver::open(dir.path().join("checkpoints.db"))
            .await
            .expect("open again");
        let thread = unique("shared");
        super::put_all(&first, &super::plain_chain(&thread, "", 3)).await;
        assert_eq!(
            second
                .list(&thread, "", &ListOptions::default())
                .await
                .expect("list")
                .len(),
            3
        );
        assert!(first.try_lock_thread(&thread, "run-1").await.expect("lock"));
        assert!(
            !second
                .try_lock_thread(&thread, "run-2")
                .await
                .expect("lock")
        );
        first.unlock_thread(&thread, "run-1").await.expect("unlock");
        assert!(
            second
                .try_lock_thread(&thread, "run-2")
                .await
                .expect("lock")
        );
    }

    #[tokio::test]
    async fn an_in_memory_saver_behaves_like_a_file() {
        let saver = SqliteSaver::in_memory().await.expect("open");
        super::put_then_get_returns_the_latest_or_the_named_checkpoint(&saver).await;
        super::pending_writes_append_in_order_and_replace_by_task(&saver).await;
    }

    /// The pid of a process that has exited (and been reaped).
    fn dead_pid() -> i64 {
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("run `true`");
        let pid = child.id();
        child.wait().expect("reap `true`");
        i64::from(pid)
    }

    async fn plant_lock(
        saver: &SqliteSaver,
        thread: &str,
        run_id: &str,
        pid: i64,
        pid_start: Option<i64>,
    ) {
        sqlx::query(
            "INSERT INTO graphkit_thread_locks (thread_id, run_id, pid, pid_start, acquired_at_ms) VALUES (?1, ?2, ?3, ?4, 0)",
        )
        .bind(thread)
        .bind(run_id)
        .bind(pid)
        .bind(pid_start)
        .execute(saver.pool())
        .await
        .expect("plant a lock row");
    }

    #[tokio::test]
    async fn a_lock_whose_process_is_gone_is_taken_over() {
        let (_dir, saver) = saver().await;
        let thread = unique("dead-holder");
        plant_lock(&saver, &thread, "dead-run", dead_pid(), None).await;
        assert!(
            saver
                .try_lock_thread(&thread, "new-run")
                .await
                .expect("lock")
        );
        assert!(
            !saver
                .try_lock_thread(&thread, "dead-run")
                .await
                .expect("lock"),
            "the new run holds it now"
        );
    }

    #[tokio::test]
    async fn a_lock_whose_pid_was_reused_by_another_process_is_taken_over() {
        let (_dir, saver) = saver().await;
        let thread = unique("reused-pid");
        // This process is alive, but it started at another time than the recorded holder.
        plant_lock(
            &saver,
            &thread,
            "old-run",
            i64::from(std::process::id()),
            Some(-1),
        )
        .await;
        assert!(
            saver
                .try_lock_thread(&thread, "new-run")
                .await
                .expect("lock")
        );
    }

    #[tokio::test]
    async fn a_lock_of_a_live_process_is_kept() {
        let (_dir, saver) = saver().await;
        let thread = unique("live-holder");
        plant_lock(&saver, &thread, "live-run", 1, None).await; // pid 1 never dies
        assert!(
            !saver
                .try_lock_thread(&thread, "new-run")
                .await
                .expect("lock")
        );
    }

    #[test]
    fn a_lock_held_by_a_killed_process_is_taken_over() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("two-processes.db");
        let thread = unique("killed-holder");
        let saver = runtime.block_on(SqliteSaver::open(&path)).expect("open");

        let holder = LockHolder::start("sqlite", path.to_str().expect("a UTF-8 path"), &thread);
        assert!(
            !runtime
                .block_on(saver.try_lock_thread(&thread, "parent-run"))
                .expect("lock"),
            "the child holds it"
        );
        holder.kill();
        assert!(
            runtime
                .block_on(saver.try_lock_thread(&thread, "parent-run"))
                .expect("lock"),
            "taken over at once"
        );
    }
}

// ---------------------------------------------------------------------------------------
// PostgreSQL

#[cfg(feature = "postgres")]
mod postgres_backend {
    use std::time::Duration;

    use graphkit::checkpoint::{Checkpointer, PostgresSaver};
    use sqlx::Row;

    use super::backend_support::{self, unique};
    use super::two_processes::{LockHolder, lock_eventually};

    /// A saver on the test server, or `None` (after saying why) when none is configured.
    pub(crate) async fn saver() -> Option<PostgresSaver> {
        let url = backend_support::postgres_url()?;
        Some(
            PostgresSaver::connect(&url)
                .await
                .expect("connect to GRAPHKIT_TEST_POSTGRES_URL"),
        )
    }

    #[tokio::test]
    async fn a_newer_format_version_is_refused_by_name() {
        let Some(saver) = saver().await else { return };
        super::a_newer_format_version_is_refused_by_name(&saver).await;
    }

    async fn corrupt_with(saver: &PostgresSaver, sql: &'static str) {
        let pool = saver.pool().clone();
        super::a_corrupt_row_is_reported_by_name_and_the_rest_still_reads(
            saver,
            async move |thread, checkpoint| {
                let changed = sqlx::query(sql)
                    .bind(thread)
                    .bind(checkpoint)
                    .execute(&pool)
                    .await
                    .expect("corrupt");
                assert_eq!(changed.rows_affected(), 1);
            },
        )
        .await;
    }

    #[tokio::test]
    async fn metadata_that_is_not_json_is_a_corrupt_checkpoint() {
        let Some(saver) = saver().await else { return };
        corrupt_with(
            &saver,
            "UPDATE graphkit_checkpoints SET metadata = '{\"truncat' WHERE thread_id = $1 AND checkpoint_id = $2",
        )
        .await;
    }

    #[tokio::test]
    async fn an_unknown_source_is_a_corrupt_checkpoint() {
        let Some(saver) = saver().await else { return };
        corrupt_with(&saver, "UPDATE graphkit_checkpoints SET source = 'garbage' WHERE thread_id = $1 AND checkpoint_id = $2")
            .await;
    }

    #[tokio::test]
    async fn a_negative_format_version_is_a_corrupt_checkpoint() {
        let Some(saver) = saver().await else { return };
        corrupt_with(
            &saver,
            "UPDATE graphkit_checkpoints SET format_version = -3 WHERE thread_id = $1 AND checkpoint_id = $2",
        )
        .await;
    }

    #[tokio::test]
    async fn connecting_again_does_not_rerun_migrations() {
        let Some(url) = backend_support::postgres_url() else {
            return;
        };
        let read = async |saver: &PostgresSaver| -> Vec<(String, i64, i64)> {
            sqlx::query("SELECT component, version, applied_at_ms FROM graphkit_migrations ORDER BY component, version")
                .fetch_all(saver.pool())
                .await
                .expect("read migrations")
                .iter()
                .map(|row| (row.get("component"), row.get("version"), row.get("applied_at_ms")))
                .collect()
        };
        let first = PostgresSaver::connect(&url).await.expect("connect");
        let before = read(&first).await;
        assert!(
            before
                .iter()
                .any(|(component, version, _)| component == "checkpoint" && *version == 1)
        );
        let second = PostgresSaver::connect(&url).await.expect("connect again");
        let after = read(&second).await;
        let checkpoint_rows = |rows: &[(String, i64, i64)]| {
            rows.iter()
                .filter(|(component, ..)| component == "checkpoint")
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(checkpoint_rows(&after), checkpoint_rows(&before));
    }

    #[tokio::test]
    async fn savers_connected_at_once_migrate_without_racing() {
        let Some(url) = backend_support::postgres_url() else {
            return;
        };
        let (a, b, c) = tokio::join!(
            PostgresSaver::connect(&url),
            PostgresSaver::connect(&url),
            PostgresSaver::connect(&url)
        );
        for saver in [a, b, c] {
            saver.expect("connect");
        }
    }

    #[tokio::test]
    async fn two_savers_exclude_each_other_and_a_dropped_holder_frees_the_thread() {
        let Some(url) = backend_support::postgres_url() else {
            return;
        };
        let thread = unique("pg-dropped-holder");
        let holder = PostgresSaver::connect(&url).await.expect("connect");
        let other = PostgresSaver::connect(&url).await.expect("connect");
        assert!(
            holder
                .try_lock_thread(&thread, "run-1")
                .await
                .expect("lock")
        );
        assert!(
            !other.try_lock_thread(&thread, "run-2").await.expect("lock"),
            "held through another connection"
        );

        holder
            .unlock_thread(&thread, "run-1")
            .await
            .expect("unlock");
        assert!(
            other.try_lock_thread(&thread, "run-2").await.expect("lock"),
            "an unlock frees it at once"
        );
        other.unlock_thread(&thread, "run-2").await.expect("unlock");

        assert!(
            holder
                .try_lock_thread(&thread, "run-3")
                .await
                .expect("lock")
        );
        drop(holder);
        assert!(
            lock_eventually(&other, &thread, "run-2", Duration::from_secs(60)).await,
            "the server frees the lock of a closed connection"
        );
    }

    #[test]
    fn a_lock_held_by_a_killed_process_is_taken_over() {
        let Some(url) = backend_support::postgres_url() else {
            return;
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let thread = unique("pg-killed-holder");
        let saver = runtime
            .block_on(PostgresSaver::connect(&url))
            .expect("connect");

        let holder = LockHolder::start("postgres", &url, &thread);
        assert!(
            !runtime
                .block_on(saver.try_lock_thread(&thread, "parent-run"))
                .expect("lock"),
            "the child holds it"
        );
        holder.kill();
        assert!(
            runtime.block_on(lock_eventually(
                &saver,
                &thread,
                "parent-run",
                Duration::from_secs(60)
            )),
            "the server frees the killed process's lock"
        );
    }
}
