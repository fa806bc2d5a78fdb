//! Input from outside the program (stored checkpoints, counters fed by nodes, retry
//! settings) cannot make graphkit panic (issue 18): each ends in a clear error.

use std::sync::Arc;
use std::time::Duration;

use graphkit::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, InMemorySaver, new_checkpoint_id,
};
use graphkit::error::StorageError;
use graphkit::{
    CompileOptions, END, Error, RetryPolicy, RunConfig, RunInput, START, State, StateGraph,
    SyncNode,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Tally {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    small: u8,
    #[reducer(add)]
    big: i64,
}

#[test]
fn an_add_field_that_would_overflow_is_an_error_naming_the_field() {
    let mut state = Tally::default();
    state.apply_update(TallyUpdate::new().small(200)).unwrap();
    let err = state
        .apply_update(TallyUpdate::new().small(100))
        .unwrap_err();
    assert!(
        matches!(err, Error::AddOverflow { field: "small" }),
        "{err}"
    );
    assert!(err.to_string().contains("`small`"), "{err}");
    assert_eq!(state.small, 200, "the field keeps its value");

    let mut state = Tally::default();
    state
        .apply_update(TallyUpdate::new().big(i64::MIN))
        .unwrap();
    let err = state.apply_update(TallyUpdate::new().big(-1)).unwrap_err();
    assert!(matches!(err, Error::AddOverflow { field: "big" }), "{err}");
}

#[test]
fn deltas_combined_in_one_update_saturate_instead_of_panicking() {
    let update = TallyUpdate::new().small(200).small(100);
    let mut state = Tally::default();
    state.apply_update(update).unwrap();
    assert_eq!(state.small, u8::MAX);
}

#[tokio::test]
async fn a_node_overflowing_an_add_field_fails_the_run_with_the_field_named() {
    let mut g = StateGraph::<Tally>::new();
    g.add_node(
        "count",
        SyncNode::new(|_: &Tally| TallyUpdate::new().small(255)),
    )
    .add_edge(START, "count")
    .add_edge("count", END);
    let graph = g.compile().unwrap();
    let err = graph.invoke(TallyUpdate::new().small(1)).await.unwrap_err();
    assert!(err.to_string().contains("`small`"), "{err}");
}

#[test]
fn retry_intervals_at_duration_max_do_not_overflow() {
    let policy = RetryPolicy::new(100)
        .initial_interval(Duration::MAX)
        .max_interval(Duration::MAX)
        .backoff_factor(f64::INFINITY)
        .jitter(false);
    for attempt in [0, 1, 2, 3, 64, 100, u32::MAX] {
        assert!(policy.delay_before(attempt) <= Duration::MAX);
    }
    let capped = RetryPolicy::new(5)
        .initial_interval(Duration::MAX)
        .max_interval(Duration::from_secs(3))
        .jitter(false);
    assert_eq!(capped.delay_before(4), Duration::from_secs(3));
    let zero = RetryPolicy::new(5)
        .initial_interval(Duration::ZERO)
        .backoff_factor(f64::INFINITY)
        .jitter(false);
    assert!(zero.delay_before(5) <= Duration::from_secs(128));
}

fn graph(saver: Arc<dyn Checkpointer>) -> graphkit::CompiledGraph<Tally> {
    let mut g = StateGraph::<Tally>::new();
    g.add_node(
        "a",
        SyncNode::new(|_: &Tally| TallyUpdate::new().log(vec!["a".into()]).big(1)),
    )
    .add_edge(START, "a")
    .add_edge("a", END);
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .expect("the graph compiles")
}

fn thread(id: &str) -> RunConfig {
    RunConfig::new().thread_id(id)
}

fn record(thread: &str, step: i64, is_snapshot: bool, payload: Vec<u8>) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        checkpoint_ns: String::new(),
        checkpoint_id: new_checkpoint_id(None),
        parent_id: None,
        format_version: 1,
        step,
        source: CheckpointSource::Loop,
        created_at_ms: 0,
        metadata: serde_json::json!({}),
        is_snapshot,
        payload,
    }
}

#[tokio::test]
async fn a_checkpoint_with_an_absurd_step_is_corrupt_not_a_panic() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = graph(saver.clone());
    for (name, step) in [("max", i64::MAX), ("min", i64::MIN), ("huge", 1 << 60)] {
        let payload = br#"{"state":{"log":[],"small":0,"big":0},"next":[{"node":"a"}]}"#;
        saver
            .put(record(name, step, true, payload.to_vec()))
            .await
            .unwrap();
        let err = graph
            .invoke_with(RunInput::Continue, thread(name))
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Storage(StorageError::CorruptCheckpoint { message, .. }) if message.contains("step")),
            "{name}: {err}"
        );
        let err = graph.get_state(&thread(name)).await.unwrap_err();
        assert!(
            matches!(err, Error::Storage(StorageError::CorruptCheckpoint { .. })),
            "{err}"
        );
    }
}

fn json_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(
            r#"{"state":{"log":["x"],"small":1,"big":2},"next":[{"node":"a"}],"joins":[]}"#
                .to_owned()
        ),
        Just(
            r#"{"writes":[{"node":"a","updates":[{"big":9223372036854775807}]}],"next":[]}"#
                .to_owned()
        ),
        Just(r#"{"state":{"small":300}}"#.to_owned()),
        Just(r#"{"state":{"big":1e400},"joins":[[true,false,true]]}"#.to_owned()),
        Just(
            r#"{"next":[{"node":"nowhere","input":{"x":1}}],"joins":[[true],[false]]}"#.to_owned()
        ),
        "[ -~]{0,80}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Whatever a stored row holds, loading and continuing it returns (Ok or a clear
    /// error) and never panics.
    #[test]
    fn the_checkpoint_decoder_never_panics(
        step in any::<i64>(),
        is_snapshot in any::<bool>(),
        version in 0u32..3,
        payload in prop_oneof![json_fragment().prop_map(String::into_bytes), proptest::collection::vec(any::<u8>(), 0..64)],
        with_parent in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let saver = Arc::new(InMemorySaver::new());
            let graph = graph(saver.clone());
            let mut stored = record("fuzz", step, is_snapshot, payload);
            stored.format_version = version;
            if with_parent {
                stored.parent_id = Some(stored.checkpoint_id.clone());
            }
            saver.put(stored).await.unwrap();
            let _ = graph.get_state(&thread("fuzz")).await;
            let _ = graph.invoke_with(RunInput::Continue, thread("fuzz")).await;
        });
    }
}
