//! Threads, checkpoints, pending writes, interrupts, time travel (in-memory saver).

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use graphkit::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, InMemorySaver, ListOptions,
};
use graphkit::error::StorageError;
use graphkit::store::{InMemoryStore, Store};
use graphkit::{
    Command, CompileOptions, END, Error, Input, InterruptKind, NodeContext, Outcome, Paused,
    RunConfig, RunInput, START, Scoped, SendTo, State, StateGraph, SyncNode, UpdateAs,
};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Chat {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    turns: u32,
    answer: String,
}

fn saver() -> Arc<InMemorySaver> {
    Arc::new(InMemorySaver::new())
}

fn thread(id: &str) -> RunConfig {
    RunConfig::new().thread_id(id)
}

fn say(word: &'static str) -> SyncNode<impl Fn(&Chat) -> ChatUpdate> {
    SyncNode::new(move |_: &Chat| ChatUpdate::new().log(vec![word.to_string()]).turns(1))
}

/// START → `names[0]` → `names[1]` → … → END, each node a [`say`] of its name, compiled with
/// `options`.
fn says(names: &[&'static str], options: CompileOptions) -> graphkit::CompiledGraph<Chat> {
    let mut g = StateGraph::<Chat>::new();
    let mut from = START;
    for &name in names {
        g.add_node(name, say(name)).add_edge(from, name);
        from = name;
    }
    g.add_edge(from, END);
    g.compile_with(options).unwrap()
}

fn chain(saver: Arc<dyn Checkpointer>) -> graphkit::CompiledGraph<Chat> {
    says(&["a", "b", "c"], CompileOptions::new().checkpointer(saver))
}

/// [`chain`] run to its end on thread `id`, and that thread's history (newest first).
async fn chain_run(
    id: &str,
) -> (
    graphkit::CompiledGraph<Chat>,
    Vec<graphkit::StateSnapshot<Chat>>,
) {
    let graph = chain(saver());
    graph
        .invoke_with(ChatUpdate::new(), thread(id))
        .await
        .unwrap()
        .into_state();
    let history = graph
        .get_state_history(&thread(id), &ListOptions::default())
        .await
        .unwrap();
    (graph, history)
}

#[tokio::test]
async fn every_super_step_ends_with_a_checkpoint() {
    let graph = chain(saver());
    let out = graph
        .invoke_with(ChatUpdate::new().log(vec!["hi".into()]), thread("t1"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["hi", "a", "b", "c"]);

    let history = graph
        .get_state_history(&thread("t1"), &ListOptions::default())
        .await
        .unwrap();
    let steps: Vec<(i64, CheckpointSource, Vec<String>)> = history
        .iter()
        .map(|s| (s.step, s.source, s.next.clone()))
        .collect();
    assert_eq!(
        steps,
        [
            (3, CheckpointSource::Loop, vec![]),
            (2, CheckpointSource::Loop, vec!["c".to_string()]),
            (1, CheckpointSource::Loop, vec!["b".to_string()]),
            (0, CheckpointSource::Input, vec!["a".to_string()]),
        ]
    );
    assert_eq!(history[1].values.log, ["hi", "a", "b"]);
    assert_eq!(
        history[0].parent_checkpoint_id.as_deref(),
        Some(history[1].checkpoint_id.as_str())
    );
    assert_eq!(history[2].metadata["writes"], serde_json::json!(["a"]));

    let latest = graph.get_state(&thread("t1")).await.unwrap();
    assert_eq!(latest.values, out);
    assert!(latest.next.is_empty() && latest.interrupts.is_empty());

    let limited = graph
        .get_state_history(
            &thread("t1"),
            &ListOptions {
                limit: Some(2),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(limited.len(), 2);
}

#[tokio::test]
async fn a_second_input_on_a_thread_continues_its_state() {
    let graph = chain(saver());
    graph
        .invoke_with(ChatUpdate::new(), thread("t"))
        .await
        .unwrap()
        .into_state();
    let out = graph
        .invoke_with(ChatUpdate::new().log(vec!["again".into()]), thread("t"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["a", "b", "c", "again", "a", "b", "c"]);
    assert_eq!(out.turns, 6);
}

#[tokio::test]
async fn a_run_with_a_checkpointer_needs_a_thread() {
    let err = chain(saver()).invoke(ChatUpdate::new()).await.unwrap_err();
    assert!(matches!(err, Error::MissingThreadId));
}

#[tokio::test]
async fn resuming_after_a_failure_runs_only_what_did_not_finish() {
    let steady_runs = Arc::new(AtomicUsize::new(0));
    let flaky_runs = Arc::new(AtomicUsize::new(0));
    let (steady_count, flaky_count) = (Arc::clone(&steady_runs), Arc::clone(&flaky_runs));
    let mut g = StateGraph::<Chat>::new();
    g.add_node("steady", move |_: Arc<Chat>| {
        steady_count.fetch_add(1, Ordering::SeqCst);
        async { ChatUpdate::new().log(vec!["steady".into()]) }
    })
    .add_node("flaky", move |_: Arc<Chat>| {
        let first = flaky_count.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                Err("flaky failure".into())
            } else {
                Ok::<_, graphkit::error::BoxError>(ChatUpdate::new().log(vec!["flaky".into()]))
            }
        }
    })
    .add_node("after", say("after"))
    .add_edge(START, "steady")
    .add_edge(START, "flaky")
    .add_edge(["steady", "flaky"], "after");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();

    let err = graph
        .invoke_with(ChatUpdate::new(), thread("p"))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NodeFailed { node, .. } if node == "flaky"),
        "{err}"
    );
    // The stopped step shows what it did: steady's write is in the state, only flaky is
    // still to run, and the step's tasks say which failed and why.
    let paused = graph.get_state(&thread("p")).await.unwrap();
    assert_eq!(paused.values.log, ["steady"]);
    assert_eq!(paused.next, ["flaky"]);
    let flaky = paused.tasks.iter().find(|t| t.name == "flaky").unwrap();
    assert!(
        flaky
            .error
            .as_deref()
            .is_some_and(|e| e.contains("flaky failure")),
        "{flaky:?}"
    );
    assert!(flaky.result.is_none());
    let steady = paused.tasks.iter().find(|t| t.name == "steady").unwrap();
    assert_eq!(
        steady.result,
        Some(serde_json::json!([{ "log": ["steady"] }]))
    );
    assert_eq!(steady.error, None);

    let out = graph
        .invoke_with(RunInput::Continue, thread("p"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["flaky", "steady", "after"]);
    assert_eq!(
        steady_runs.load(Ordering::SeqCst),
        1,
        "a finished sibling must not run again"
    );
    assert_eq!(flaky_runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn pending_sends_are_restored_with_their_inputs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let mut g = StateGraph::<Chat>::new();
    g.add_node("work", move |Input(n): Input<u32>| {
        let fail = n == 2 && counter.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if fail {
                Err("first try fails".into())
            } else {
                Ok::<_, graphkit::error::BoxError>(ChatUpdate::new().log(vec![format!("w{n}")]))
            }
        }
    })
    .add_conditional_edges(
        START,
        |_: &Chat| {
            (0..4u32)
                .map(|i| SendTo::new("work", i))
                .collect::<Vec<_>>()
        },
        ["work"],
    );
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    assert!(
        graph
            .invoke_with(ChatUpdate::new(), thread("s"))
            .await
            .is_err()
    );
    let out = graph
        .invoke_with(RunInput::Continue, thread("s"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["w0", "w1", "w2", "w3"]);
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
struct Message {
    id: String,
    text: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Long {
    #[reducer(append)]
    messages: Vec<Message>,
}

#[tokio::test]
async fn write_cost_follows_the_update_not_the_state() {
    const STEPS: usize = 1000;
    let saver = saver();
    let mut g = StateGraph::<Long>::new();
    g.add_node(
        "talk",
        SyncNode::new(|s: &Long| {
            LongUpdate::new().messages(vec![Message {
                id: s.messages.len().to_string(),
                text: "x".repeat(1024),
            }])
        }),
    )
    .add_edge(START, "talk")
    .add_conditional_edges(
        "talk",
        |s: &Long| {
            if s.messages.len() < STEPS {
                "talk"
            } else {
                END
            }
        },
        ["talk", END],
    );
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let out = graph
        .invoke_with(LongUpdate::new(), thread("long"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.messages.len(), STEPS);

    let records: Vec<CheckpointRecord> = saver
        .list("long", "", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(records.len(), STEPS + 1);
    let total: usize = records.iter().map(|r| r.payload.len()).sum();
    let data = STEPS * 1024;
    // Full copies every step would write about STEPS²/2 KB (≈ 500 MB); deltas with
    // geometric snapshots stay within a small multiple of the data itself.
    assert!(
        total < 4 * data,
        "wrote {total} bytes for {data} bytes of messages"
    );
    assert!(records.iter().filter(|r| r.is_snapshot).count() < 20);

    eprintln!(
        "write cost: {STEPS} steps of 1 KiB appends wrote {total} bytes in {} checkpoints ({} snapshots)",
        records.len(),
        records.iter().filter(|r| r.is_snapshot).count()
    );
    // And the state still loads exactly from the newest checkpoint.
    let state = graph.get_state(&thread("long")).await.unwrap();
    assert_eq!(state.values.messages, out.messages);
}

async fn ask(state: Arc<Chat>, ctx: NodeContext) -> Result<ChatUpdate, Error> {
    let answer =
        ctx.interrupt(serde_json::json!({ "question": "proceed?", "turns": state.turns }))?;
    Ok(ChatUpdate::new().answer(answer.as_str().unwrap_or_default()))
}

#[tokio::test]
async fn a_dynamic_interrupt_pauses_and_resume_returns_the_value() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("before", say("before"))
        .add_node("ask", ask)
        .add_node("after", say("after"));
    g.add_edge(START, "before")
        .add_edge("before", "ask")
        .add_edge("ask", "after");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();

    let err = graph
        .invoke_with(ChatUpdate::new(), thread("h"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    let Error::NotFinished {
        interrupts,
        thread_id,
    } = err
    else {
        panic!("expected an interrupt, got {err}")
    };
    assert_eq!(thread_id, "h");
    assert_eq!(interrupts.len(), 1);
    assert_eq!(interrupts[0].node, "ask");
    assert_eq!(interrupts[0].payload["question"], "proceed?");
    assert_eq!(interrupts[0].kind, InterruptKind::Dynamic);

    let state = graph.get_state(&thread("h")).await.unwrap();
    assert_eq!(state.next, ["ask"]);
    assert_eq!(state.interrupts, interrupts);

    let out = graph
        .invoke_with(Command::resume("yes"), thread("h"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "yes");
    assert_eq!(out.log, ["before", "after"]);
    assert!(
        graph
            .get_state(&thread("h"))
            .await
            .unwrap()
            .interrupts
            .is_empty()
    );
}

#[tokio::test]
async fn several_interrupts_in_one_node_are_matched_in_order() {
    async fn two_questions(_: Arc<Chat>, ctx: NodeContext) -> Result<ChatUpdate, Error> {
        let name: String = ctx.interrupt_as("name?")?;
        let age: u32 = ctx.interrupt_as("age?")?;
        Ok(ChatUpdate::new().answer(format!("{name} is {age}")))
    }
    let mut g = StateGraph::<Chat>::new();
    g.add_node("form", two_questions).add_edge(START, "form");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();

    let first = graph
        .invoke_with(ChatUpdate::new(), thread("f"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&first, Error::NotFinished { interrupts, .. } if interrupts[0].payload == "name?")
    );
    let second = graph
        .invoke_with(Command::resume("Ada"), thread("f"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&second, Error::NotFinished { interrupts, .. } if interrupts[0].payload == "age?"),
        "{second}"
    );
    let out = graph
        .invoke_with(Command::resume(36), thread("f"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "Ada is 36");
}

#[tokio::test]
async fn interrupts_from_parallel_tasks_are_resumed_by_id() {
    async fn approve(Input(who): Input<String>, ctx: NodeContext) -> Result<ChatUpdate, Error> {
        let verdict = ctx.interrupt(format!("approve {who}?"))?;
        Ok(ChatUpdate::new().log(vec![format!("{who}:{}", verdict.as_str().unwrap_or("?"))]))
    }
    let mut g = StateGraph::<Chat>::new();
    g.add_node("approve", approve).add_conditional_edges(
        START,
        |_: &Chat| {
            vec![
                SendTo::new("approve", "alice".to_string()),
                SendTo::new("approve", "bob".to_string()),
            ]
        },
        ["approve"],
    );
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let Ok(Outcome::Paused(Paused { interrupts, .. })) =
        graph.invoke_with(ChatUpdate::new(), thread("par")).await
    else {
        panic!("expected interrupts")
    };
    assert_eq!(interrupts.len(), 2);
    assert_ne!(interrupts[0].id, interrupts[1].id);

    // One plain value is ambiguous with two interrupts pending.
    let err = graph
        .invoke_with(Command::resume("yes"), thread("par"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::BadResume { .. }), "{err}");

    let by_id = Command::resume_by_id([
        (interrupts[0].id.clone(), "yes"),
        (interrupts[1].id.clone(), "no"),
    ]);
    let out = graph
        .invoke_with(by_id, thread("par"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["alice:yes", "bob:no"]);
}

#[tokio::test]
async fn interrupting_without_a_checkpointer_is_a_clear_error() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("ask", ask).add_edge(START, "ask");
    let err = g
        .compile()
        .unwrap()
        .invoke(ChatUpdate::new())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoCheckpointer(_)), "{err}");
}

#[tokio::test]
async fn static_interrupts_pause_before_and_after_nodes() {
    let graph = says(
        &["draft", "publish", "notify"],
        CompileOptions::new()
            .checkpointer(saver())
            .interrupt_before(["publish"]),
    );

    let err = graph
        .invoke_with(ChatUpdate::new(), thread("s1"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotFinished { interrupts, .. } if interrupts[0].kind == InterruptKind::Before && interrupts[0].node == "publish")
    );
    let paused = graph.get_state(&thread("s1")).await.unwrap();
    assert_eq!(
        (paused.values.log.clone(), paused.next.clone()),
        (vec!["draft".to_string()], vec!["publish".to_string()])
    );
    let out = graph
        .invoke_with(RunInput::Continue, thread("s1"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["draft", "publish", "notify"]);

    // Per run, after a node.
    let err = graph
        .invoke_with(ChatUpdate::new(), thread("s2").interrupt_after(["draft"]))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&err, Error::NotFinished { interrupts, .. } if interrupts[0].kind == InterruptKind::After)
    );
    assert_eq!(
        graph.get_state(&thread("s2")).await.unwrap().values.log,
        ["draft"]
    );
}

#[tokio::test]
async fn update_state_as_a_node_then_continue() {
    let graph = says(
        &["draft", "human", "publish"],
        CompileOptions::new()
            .checkpointer(saver())
            .interrupt_before(["human"]),
    );
    assert!(
        graph
            .invoke_with(ChatUpdate::new(), thread("u"))
            .await
            .unwrap()
            .is_paused()
    );

    // Answer in the human's place: its edges plan the next step.
    graph
        .update_state(
            &thread("u"),
            ChatUpdate::new().answer("edited by hand"),
            "human",
        )
        .await
        .unwrap();
    let state = graph.get_state(&thread("u")).await.unwrap();
    assert_eq!(state.source, CheckpointSource::Update);
    assert_eq!(state.next, ["publish"]);

    let out = graph
        .invoke_with(RunInput::Continue, thread("u"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "edited by hand");
    assert_eq!(out.log, ["draft", "publish"]);

    let err = graph
        .update_state(&thread("u"), ChatUpdate::new(), "nope")
        .await
        .unwrap_err();
    assert!(matches!(err, Error::UnknownNode { .. }));
}

#[tokio::test]
async fn running_from_an_earlier_checkpoint_forks_and_keeps_the_old_branch() {
    let (graph, history) = chain_run("tt").await;
    let after_a = history.iter().find(|s| s.next == ["b"]).unwrap();

    // Rewrite history from after `a`, then replay the rest.
    let fork = graph
        .update_state(
            &after_a.config(),
            ChatUpdate::new().answer("forked"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap();
    let out = graph
        .invoke_with(RunInput::Continue, fork)
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["a", "b", "c"]);
    assert_eq!(out.answer, "forked");

    let all = graph
        .get_state_history(&thread("tt"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        all.len(),
        history.len() + 3,
        "the fork adds checkpoints; the old ones stay"
    );
    let old_end = graph.get_state(&history[0].config()).await.unwrap();
    assert_eq!(old_end.values.answer, "", "the original branch is intact");
}

#[tokio::test]
async fn delete_thread_removes_its_checkpoints() {
    let graph = chain(saver());
    graph
        .invoke_with(ChatUpdate::new(), thread("gone"))
        .await
        .unwrap()
        .into_state();
    graph
        .invoke_with(ChatUpdate::new(), thread("kept"))
        .await
        .unwrap()
        .into_state();
    graph.delete_thread("gone").await.unwrap();
    assert!(matches!(
        graph.get_state(&thread("gone")).await,
        Err(Error::CheckpointNotFound { .. })
    ));
    assert!(graph.get_state(&thread("kept")).await.is_ok());
}

#[tokio::test]
async fn a_second_run_on_a_busy_thread_is_refused() {
    let gate = Arc::new(tokio::sync::Notify::new());
    let entered = Arc::new(tokio::sync::Notify::new());
    let (g1, e1) = (Arc::clone(&gate), Arc::clone(&entered));
    let mut g = StateGraph::<Chat>::new();
    g.add_node("wait", move |_: Arc<Chat>| {
        let (gate, entered) = (Arc::clone(&g1), Arc::clone(&e1));
        async move {
            entered.notify_one();
            gate.notified().await;
            ChatUpdate::new().log(vec!["done".into()])
        }
    })
    .add_edge(START, "wait");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let first = tokio::spawn({
        let graph = graph.clone();
        async move { graph.invoke_with(ChatUpdate::new(), thread("busy")).await }
    });
    entered.notified().await;
    let err = graph
        .invoke_with(ChatUpdate::new(), thread("busy"))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::ThreadBusy(t) if t == "busy"), "{err}");
    // Other threads are not blocked.
    gate.notify_one();
    assert_eq!(first.await.unwrap().unwrap().into_state().log, ["done"]);
    // And the thread is free again.
    assert!(
        graph
            .invoke_with(RunInput::Continue, thread("busy"))
            .await
            .is_ok()
    );
}

fn record(thread: &str, id: &str, version: u32, payload: &[u8]) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        checkpoint_ns: String::new(),
        checkpoint_id: id.into(),
        parent_id: None,
        format_version: version,
        step: 0,
        source: CheckpointSource::Loop,
        created_at_ms: 0,
        metadata: serde_json::json!({}),
        is_snapshot: true,
        payload: payload.to_vec(),
    }
}

#[tokio::test]
async fn bad_checkpoints_give_clear_errors_and_the_rest_keeps_working() {
    let saver = saver();
    let graph = chain(saver.clone());
    graph
        .invoke_with(ChatUpdate::new(), thread("good"))
        .await
        .unwrap()
        .into_state();

    saver
        .put(record("truncated", "0001", 1, br#"{"state":{"log":["a"#))
        .await
        .unwrap();
    let err = graph.get_state(&thread("truncated")).await.unwrap_err();
    assert!(
        matches!(&err, Error::Storage(StorageError::CorruptCheckpoint { thread_id, checkpoint_id, .. }) if thread_id == "truncated" && checkpoint_id == "0001"),
        "{err}"
    );

    saver
        .put(record("future", "0001", 99, b"{}"))
        .await
        .unwrap();
    let err = graph.get_state(&thread("future")).await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::Storage(StorageError::CheckpointVersion { found: 99, .. })
        ),
        "{err}"
    );

    // A state written by another type (fields renamed since) fails by name.
    saver
        .put(record(
            "old-type",
            "0001",
            1,
            br#"{"state":{"log":"not a list"},"next":[],"joins":[]}"#,
        ))
        .await
        .unwrap();
    let err = graph.get_state(&thread("old-type")).await.unwrap_err();
    assert!(
        err.to_string().contains("old-type") && err.to_string().contains("Chat"),
        "{err}"
    );
    let err = graph
        .invoke_with(RunInput::Continue, thread("old-type"))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Storage(StorageError::CorruptCheckpoint { .. })
    ));

    assert_eq!(
        graph.get_state(&thread("good")).await.unwrap().values.log,
        ["a", "b", "c"]
    );
    assert!(
        graph
            .invoke_with(ChatUpdate::new(), thread("another"))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn checkpoints_stream_mode_reports_each_save() {
    use futures::StreamExt;
    let graph = chain(saver());
    let events: Vec<_> = graph
        .stream_with(
            ChatUpdate::new(),
            thread("cs"),
            graphkit::StreamMode::Checkpoints,
        )
        .map(|e| e.unwrap())
        .collect()
        .await;
    let steps: Vec<i64> = events
        .iter()
        .map(|e| match &e.payload {
            graphkit::StreamPayload::Checkpoint(c) => c.step,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(steps, [0, 1, 2, 3]);
}

#[tokio::test]
async fn nodes_reach_the_store_across_threads() {
    let store: Arc<dyn Store> = Arc::new(InMemoryStore::new());
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "remember",
        |state: Arc<Chat>, ctx: NodeContext| async move {
            let store = ctx.store().expect("compiled with a store");
            let seen = store
                .get(&["memories"], "visits")
                .await?
                .map_or(0, |item| item.value.as_u64().unwrap_or(0));
            store
                .put(&["memories"], "visits", serde_json::json!(seen + 1))
                .await?;
            Ok::<_, Error>(ChatUpdate::new().answer(format!(
                "visit {} ({} turns)",
                seen + 1,
                state.turns
            )))
        },
    )
    .add_edge(START, "remember");
    let graph = g
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver())
                .store(Arc::clone(&store)),
        )
        .unwrap();
    graph
        .invoke_with(ChatUpdate::new(), thread("one"))
        .await
        .unwrap()
        .into_state();
    let out = graph
        .invoke_with(ChatUpdate::new(), thread("two"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "visit 2 (0 turns)");
}

#[tokio::test]
async fn async_durability_saves_every_checkpoint_before_the_run_returns() {
    let saver = saver();
    let graph = chain(saver.clone());
    let config = thread("async").durability(graphkit::Durability::Async);
    let out = graph
        .invoke_with(ChatUpdate::new(), config)
        .await
        .unwrap()
        .into_state();
    let history = graph
        .get_state_history(&thread("async"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0].values, out);
}

#[tokio::test]
async fn exit_durability_writes_one_checkpoint_and_still_resumes() {
    let saver = saver();
    let graph = chain(saver.clone());
    let exit = || thread("exit").durability(graphkit::Durability::Exit);
    let out = graph
        .invoke_with(ChatUpdate::new(), exit())
        .await
        .unwrap()
        .into_state();
    let history = graph
        .get_state_history(&thread("exit"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history.len(), 1, "only the final checkpoint");
    assert_eq!(history[0].values, out);
    // `step` counts super-steps, as with the default durability.
    graph
        .invoke_with(ChatUpdate::new(), thread("exit-sync"))
        .await
        .unwrap()
        .finished()
        .unwrap();
    let synced = graph.get_state(&thread("exit-sync")).await.unwrap();
    assert_eq!(history[0].step, synced.step);
    assert!(synced.step > 1, "{}", synced.step);

    // A pause still leaves a resumable thread: the stopped step and its interrupt.
    let mut g = StateGraph::<Chat>::new();
    g.add_node("before", say("before"))
        .add_node("ask", ask)
        .add_node("side", say("side"));
    g.add_edge(START, "before")
        .add_edge("before", "ask")
        .add_edge("before", "side");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap();
    let err = graph
        .invoke_with(ChatUpdate::new(), exit())
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(matches!(err, Error::NotFinished { .. }), "{err}");
    let paused = graph.get_state(&exit()).await.unwrap();
    // `side` finished before the pause: its write shows, and only `ask` is still to run.
    assert_eq!(paused.next, ["ask"]);
    assert!(
        paused
            .values
            .log
            .ends_with(&["before".into(), "side".into()])
    );
    let planned: Vec<&str> = paused.tasks.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(planned, ["ask", "side"]);
    assert_eq!(paused.interrupts.len(), 1);
    let out = graph
        .invoke_with(Command::resume("ok"), exit())
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "ok");
    assert_eq!(
        out.log,
        ["a", "b", "c", "before", "side"],
        "`side` finished before the pause and is not run again"
    );
}

#[tokio::test]
async fn an_interrupt_after_then_an_interrupt_before_both_pause() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("a", say("a")).add_node("b", say("b"));
    g.add_edge(START, "a").add_edge("a", "b");
    let graph = g
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver())
                .interrupt_after(["a"])
                .interrupt_before(["b"]),
        )
        .unwrap();
    let first = graph
        .invoke_with(ChatUpdate::new(), thread("ab"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&first, Error::NotFinished { interrupts, .. } if interrupts[0].kind == InterruptKind::After)
    );
    let second = graph
        .invoke_with(RunInput::Continue, thread("ab"))
        .await
        .unwrap()
        .finished()
        .unwrap_err();
    assert!(
        matches!(&second, Error::NotFinished { interrupts, .. } if interrupts[0].kind == InterruptKind::Before),
        "{second}"
    );
    assert_eq!(
        graph
            .invoke_with(RunInput::Continue, thread("ab"))
            .await
            .unwrap()
            .into_state()
            .log,
        ["a", "b"]
    );
}

#[tokio::test]
async fn per_run_interrupt_names_are_checked() {
    let err = chain(saver())
        .invoke_with(
            ChatUpdate::new(),
            thread("typo").interrupt_before(["publsh"]),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::UnknownNode { node, .. } if node == "publsh"),
        "{err}"
    );
}

#[tokio::test]
async fn writing_on_an_earlier_checkpoint_is_an_update_branching_from_it() {
    let (graph, history) = chain_run("fk").await;
    let edit = graph
        .update_state(
            &history[2].config(),
            ChatUpdate::new().answer("x"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap();
    let edited = graph.get_state(&edit).await.unwrap();
    assert_eq!(edited.source, CheckpointSource::Update);
    assert_eq!(
        edited.parent_checkpoint_id.as_deref(),
        Some(history[2].checkpoint_id.as_str())
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_groups_checkpoints_written_in_the_background() {
    let sqlite = graphkit::checkpoint::SqliteSaver::in_memory()
        .await
        .unwrap();
    let records: Vec<CheckpointRecord> = (1..=3)
        .map(|i| record("batch", &format!("000{i}"), 1, b"{}"))
        .collect();
    sqlite.put_many(records.clone()).await.unwrap();
    let listed = sqlite
        .list("batch", "", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|r| r.checkpoint_id.as_str())
            .collect::<Vec<_>>(),
        ["0003", "0002", "0001"]
    );

    // A whole run with the background writer: every checkpoint lands, in order.
    let graph = chain(Arc::new(sqlite));
    let config = thread("bg").durability(graphkit::Durability::Async);
    let out = graph
        .invoke_with(ChatUpdate::new(), config)
        .await
        .unwrap()
        .into_state();
    let history = graph
        .get_state_history(&thread("bg"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        history.iter().map(|s| s.step).collect::<Vec<_>>(),
        [3, 2, 1, 0]
    );
    assert_eq!(history[0].values, out);
}

fn ask_then_after(saver: Arc<dyn Checkpointer>) -> graphkit::CompiledGraph<Chat> {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("before", say("before"))
        .add_node("ask", ask)
        .add_node("after", say("after"))
        .add_node("extra", say("extra"));
    g.add_edge(START, "before")
        .add_edge("before", "ask")
        .add_edge("ask", "after")
        // `extra` is reached only by a Command's goto.
        .add_conditional_edges("after", |_: &Chat| END, ["extra", END]);
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn a_command_input_applies_its_update_adds_its_goto_and_resumes_together() {
    let graph = ask_then_after(saver());
    assert!(
        graph
            .invoke_with(ChatUpdate::new(), thread("cmd"))
            .await
            .unwrap()
            .is_paused()
    );
    let command = Command::resume("yes")
        .update(ChatUpdate::new().log(vec!["edited".to_string()]))
        .goto("extra");
    let out = graph
        .invoke_with(command, thread("cmd"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.answer, "yes", "the resume value reached the interrupt");
    // The update is the input of the resumed step; `extra` ran in that step, after `ask`.
    assert_eq!(out.log, ["before", "edited", "extra", "after"]);
    let history = graph
        .get_state_history(&thread("cmd"), &ListOptions::default())
        .await
        .unwrap();
    assert!(
        history.iter().any(|s| s.source == CheckpointSource::Input
            && s.tasks.iter().map(|t| t.name.as_str()).eq(["ask", "extra"])),
        "the command's input is saved as a checkpoint of its own"
    );
}

#[tokio::test]
async fn a_command_input_on_a_finished_thread_updates_and_runs_only_its_goto() {
    let graph = chain(saver());
    graph
        .invoke_with(ChatUpdate::new(), thread("done"))
        .await
        .unwrap()
        .into_state();
    // An update alone: applied, nothing runs.
    let out = graph
        .invoke_with(
            Command::new().update(ChatUpdate::new().answer("noted")),
            thread("done"),
        )
        .await
        .unwrap()
        .into_state();
    assert_eq!((out.answer.as_str(), out.log.len()), ("noted", 3));
    // A goto: that node runs, then its edges.
    let out = graph
        .invoke_with(Command::goto_only("c"), thread("done"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["a", "b", "c", "c"]);
}

#[tokio::test]
async fn a_command_input_without_a_checkpointer_starts_at_its_goto() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("a", say("a")).add_node("b", say("b"));
    g.add_edge(START, "a")
        .add_edge("a", END)
        .add_conditional_edges("a", |_: &Chat| END, ["b", END])
        .add_edge("b", END);
    let graph = g.compile().unwrap();
    let out = graph
        .invoke(
            Command::new()
                .update(ChatUpdate::new().answer("given"))
                .goto("b"),
        )
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        (out.answer.as_str(), out.log.as_slice()),
        ("given", &["b".to_string()][..])
    );
    let err = graph
        .invoke(Command::resume("x").goto("b"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NoCheckpointer(_)), "{err}");
    let err = graph
        .invoke(Command::goto_only("b").to_parent())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidRunInput(_)), "{err}");
}

fn fan_out(saver: Arc<dyn Checkpointer>) -> graphkit::CompiledGraph<Chat> {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("left", say("left"))
        .add_node("right", say("right"))
        .add_node("last", say("last"));
    g.add_edge(START, "left")
        .add_edge(START, "right")
        .add_edge("left", "last")
        .add_edge("last", END);
    g.compile_with(
        CompileOptions::new()
            .checkpointer(saver)
            .interrupt_before(["last"]),
    )
    .unwrap()
}

#[tokio::test]
async fn update_state_without_as_node_after_several_writers_is_ambiguous_and_names_them() {
    let graph = fan_out(saver());
    assert!(
        graph
            .invoke_with(ChatUpdate::new(), thread("amb"))
            .await
            .unwrap()
            .is_paused()
    );
    let err = graph
        .update_state(
            &thread("amb"),
            ChatUpdate::new().answer("x"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::AmbiguousUpdate { writers, .. } if writers == &["left", "right"]),
        "{err}"
    );
}

#[tokio::test]
async fn update_state_without_as_node_writes_as_the_last_single_writer() {
    let (graph, history) = chain_run("single").await;
    let after_a = history.iter().find(|s| s.next == ["b"]).unwrap();
    // Written as `a` (the only writer of that step): `a`'s edge plans `b` again.
    let edited = graph
        .update_state(
            &after_a.config(),
            ChatUpdate::new().answer("as a"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap();
    let state = graph.get_state(&edited).await.unwrap();
    assert_eq!(state.next, ["b"]);
    assert_eq!(state.metadata["writes"], serde_json::json!(["a"]));
    assert_eq!(
        state.source,
        CheckpointSource::Update,
        "an update on an earlier checkpoint is an Update, as the docs say"
    );
}

#[tokio::test]
async fn update_state_as_the_input_plans_from_start() {
    let graph = chain(saver());
    graph
        .invoke_with(ChatUpdate::new(), thread("asinput"))
        .await
        .unwrap()
        .into_state();
    graph
        .update_state(
            &thread("asinput"),
            ChatUpdate::new().answer("again"),
            UpdateAs::Input,
        )
        .await
        .unwrap();
    let state = graph.get_state(&thread("asinput")).await.unwrap();
    assert_eq!(
        (state.source, state.next.clone()),
        (CheckpointSource::Input, vec!["a".to_string()])
    );
    let out = graph
        .invoke_with(RunInput::Continue, thread("asinput"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["a", "b", "c", "a", "b", "c"]);
}

#[tokio::test]
async fn update_state_on_a_new_thread_starts_it_and_a_run_continues_from_there() {
    let graph = chain(saver());
    graph
        .update_state(
            &thread("fresh"),
            ChatUpdate::new().answer("seeded"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap();
    let state = graph.get_state(&thread("fresh")).await.unwrap();
    assert_eq!(state.next, ["a"]);
    let out = graph
        .invoke_with(RunInput::Continue, thread("fresh"))
        .await
        .unwrap()
        .into_state();
    assert_eq!((out.answer.as_str(), out.log.len()), ("seeded", 3));
}

#[tokio::test]
async fn replaying_from_an_earlier_checkpoint_records_the_copy_it_forks() {
    let (graph, history) = chain_run("replay").await;
    let after_a = history.iter().find(|s| s.next == ["b"]).unwrap();
    let out = graph
        .invoke_with(RunInput::Continue, after_a.config())
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["a", "b", "c"]);
    let all = graph
        .get_state_history(&thread("replay"), &ListOptions::default())
        .await
        .unwrap();
    let fork = all
        .iter()
        .find(|s| s.source == CheckpointSource::Fork)
        .expect("a Fork checkpoint");
    assert_eq!(
        fork.parent_checkpoint_id.as_deref(),
        Some(after_a.checkpoint_id.as_str())
    );
    assert_eq!(
        (fork.next.clone(), fork.values.log.clone()),
        (after_a.next.clone(), after_a.values.log.clone())
    );
    assert_eq!(all.len(), history.len() + 3, "the copy, then `b` and `c`");
}

fn parallel_approvals(saver: Arc<dyn Checkpointer>) -> graphkit::CompiledGraph<Chat> {
    async fn approve(Input(who): Input<String>, ctx: NodeContext) -> Result<ChatUpdate, Error> {
        let verdict = ctx.interrupt(format!("approve {who}?"))?;
        Ok(ChatUpdate::new().log(vec![format!("{who}:{}", verdict.as_str().unwrap_or("?"))]))
    }
    let mut g = StateGraph::<Chat>::new();
    g.add_node("approve", approve).add_conditional_edges(
        START,
        |_: &Chat| {
            vec![
                SendTo::new("approve", "alice".to_string()),
                SendTo::new("approve", "bob".to_string()),
            ]
        },
        ["approve"],
    );
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn resuming_one_of_two_parallel_interrupts_applies_and_streams_what_it_wrote() {
    use futures::StreamExt;
    use graphkit::{StreamMode, StreamPayload};
    let graph = parallel_approvals(saver());
    let Ok(Outcome::Paused(Paused { interrupts, .. })) =
        graph.invoke_with(ChatUpdate::new(), thread("half")).await
    else {
        panic!("expected interrupts")
    };
    let alice = interrupts
        .iter()
        .find(|i| i.payload == "approve alice?")
        .unwrap();
    let answer = Command::resume_by_id([(alice.id.clone(), "yes")]);
    let mut stream = graph.stream_with(answer, thread("half"), StreamMode::Updates);
    let mut updates = Vec::new();
    let mut end = None;
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => {
                if let StreamPayload::Updates {
                    node,
                    update: Scoped::Root(update),
                    ..
                } = event.payload
                {
                    updates.push((node.to_string(), update.log));
                }
            }
            Err(error) => end = Some(error),
        }
    }
    // The stream ends without an error; the pause is its outcome.
    assert!(end.is_none(), "{end:?}");
    assert_eq!(
        stream
            .outcome()
            .map(graphkit::Outcome::interrupts)
            .map(<[_]>::len),
        Some(1)
    );
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].0, "approve");
    let state = graph.get_state(&thread("half")).await.unwrap();
    assert_eq!(state.values.log, ["alice:yes"]);
    assert_eq!(state.next, ["approve"], "only bob's task is still to run");
    assert_eq!(state.interrupts.len(), 1);
    assert_eq!(state.tasks.len(), 2);
    assert_eq!(state.tasks[1].interrupts.len(), 1);
}

#[tokio::test]
async fn a_failed_step_streams_its_finished_siblings_before_the_error() {
    use futures::StreamExt;
    use graphkit::{StreamMode, StreamPayload};
    let mut g = StateGraph::<Chat>::new();
    g.add_node("fine", say("fine"))
        .add_node("broken", |_: Arc<Chat>| async {
            Err::<ChatUpdate, _>("broken on purpose")
        })
        .add_edge(START, "fine")
        .add_edge(START, "broken");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let items: Vec<_> = graph
        .stream_with(ChatUpdate::new(), thread("sib"), StreamMode::Updates)
        .collect()
        .await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(
        matches!(&items[0], Ok(e) if matches!(&e.payload, StreamPayload::Updates { node, .. } if &**node == "fine"))
    );
    assert!(matches!(&items[1], Err(Error::NodeFailed { node, .. }) if node == "broken"));
}

#[tokio::test]
async fn a_resumed_step_streams_the_restored_outputs_of_its_finished_tasks_as_cached() {
    use futures::StreamExt;
    use graphkit::{StreamMode, StreamPayload};
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut g = StateGraph::<Chat>::new();
    let flaky = Arc::clone(&fail);
    g.add_node("fine", say("fine"))
        .add_node("flaky", move |_: Arc<Chat>| {
            let fails = flaky.swap(false, Ordering::SeqCst);
            async move {
                match fails {
                    true => Err("fails once"),
                    false => Ok(ChatUpdate::new().log(vec!["flaky".to_string()])),
                }
            }
        })
        .add_edge(START, "fine")
        .add_edge(START, "flaky");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let first: Vec<_> = graph
        .stream_with(ChatUpdate::new(), thread("restored"), StreamMode::Updates)
        .collect()
        .await;
    assert!(first.last().is_some_and(Result::is_err), "{first:?}");
    let updates: Vec<(String, bool)> = graph
        .stream_with(RunInput::Continue, thread("restored"), StreamMode::Updates)
        .filter_map(|item| async move {
            match item.unwrap().payload {
                StreamPayload::Updates { node, cached, .. } => Some((node.to_string(), cached)),
                _ => None,
            }
        })
        .collect()
        .await;
    // `fine` finished before the failure and is not run again: its saved output is
    // streamed as cached; `flaky` ran for real.
    assert_eq!(
        updates,
        [("fine".to_string(), true), ("flaky".to_string(), false)]
    );
    let state = graph.get_state(&thread("restored")).await.unwrap();
    assert_eq!(state.values.log, ["fine", "flaky"]);
}

#[tokio::test]
async fn conflicting_writes_saved_by_a_stopped_step_are_shown_by_get_state_and_reported_by_resume()
{
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "one",
        SyncNode::new(|_: &Chat| ChatUpdate::new().answer("one")),
    )
    .add_node(
        "two",
        SyncNode::new(|_: &Chat| ChatUpdate::new().answer("two")),
    )
    .add_node("broken", |_: Arc<Chat>| async {
        Err::<ChatUpdate, _>("broken on purpose")
    })
    .add_edge(START, "one")
    .add_edge(START, "two")
    .add_edge(START, "broken");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let err = graph
        .invoke_with(ChatUpdate::new(), thread("clash"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NodeFailed { .. }), "{err}");
    // The state is the one before the step; the conflict is the error of the task whose
    // write could not be applied, and the whole step is still to do.
    let snapshot = graph.get_state(&thread("clash")).await.unwrap();
    assert_eq!(snapshot.values.answer, "");
    assert_eq!(snapshot.next, ["broken", "one", "two"]);
    let two = snapshot.tasks.iter().find(|t| t.name == "two").unwrap();
    assert!(
        two.error.as_deref().is_some_and(|e| e.contains("`answer`")),
        "{two:?}"
    );
    let err = graph
        .invoke_with(RunInput::Continue, thread("clash"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidConcurrentUpdate {
                field: "answer",
                ..
            } | Error::NodeFailed { .. }
        ),
        "{err}"
    );
}

/// `fine` and `flaky` start together; `flaky` fails on its first call; `fine` leads to `after`.
/// Returns the graph and the number of times `fine` ran.
fn stopped_step() -> (graphkit::CompiledGraph<Chat>, Arc<AtomicUsize>) {
    let fine_runs = Arc::new(AtomicUsize::new(0));
    let flaky_calls = Arc::new(AtomicUsize::new(0));
    let runs = Arc::clone(&fine_runs);
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "fine",
        SyncNode::new(move |_: &Chat| {
            runs.fetch_add(1, Ordering::SeqCst);
            ChatUpdate::new().log(vec!["fine".into()])
        }),
    )
    .add_node("flaky", move |_: Arc<Chat>| {
        let first = flaky_calls.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            if first {
                Err("flaky on purpose")
            } else {
                Ok(ChatUpdate::new().log(vec!["flaky".into()]))
            }
        }
    })
    .add_node("after", say("after"))
    .add_edge(START, "fine")
    .add_edge(START, "flaky")
    .add_edge("fine", "after");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    (graph, fine_runs)
}

#[tokio::test]
async fn update_state_keeping_a_stopped_step_keeps_its_finished_tasks_outputs() {
    let (graph, fine_runs) = stopped_step();
    let err = graph
        .invoke_with(ChatUpdate::new(), thread("keep"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NodeFailed { .. }), "{err}");

    // The checkpoint is the input's (nobody wrote it), so the planned step stays.
    graph
        .update_state(
            &thread("keep"),
            ChatUpdate::new().answer("noted"),
            UpdateAs::LastWriter,
        )
        .await
        .unwrap();
    let state = graph.get_state(&thread("keep")).await.unwrap();
    assert_eq!(
        state.values.log,
        ["fine"],
        "what `fine` wrote is still there"
    );
    assert_eq!(state.values.answer, "noted");
    assert_eq!(
        state.next,
        ["flaky"],
        "only the failed task is still to run"
    );

    let done = graph
        .invoke_with(RunInput::Continue, thread("keep"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["fine", "flaky", "after"]);
    assert_eq!(done.answer, "noted");
    assert_eq!(
        fine_runs.load(Ordering::SeqCst),
        1,
        "`fine` is not run again"
    );
}

#[tokio::test]
async fn update_state_as_a_node_on_a_stopped_step_applies_the_finished_writes_first() {
    let (graph, fine_runs) = stopped_step();
    graph
        .invoke_with(ChatUpdate::new(), thread("as-node"))
        .await
        .unwrap_err();
    graph
        .update_state(
            &thread("as-node"),
            ChatUpdate::new().log(vec!["by hand".into()]),
            "flaky",
        )
        .await
        .unwrap();
    let state = graph.get_state(&thread("as-node")).await.unwrap();
    assert_eq!(
        state.values.log,
        ["fine", "by hand"],
        "`fine`'s saved write, then the update"
    );
    assert_eq!(
        state.next,
        ["after"],
        "`fine`'s edge is planned; the step is over"
    );

    let done = graph
        .invoke_with(RunInput::Continue, thread("as-node"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["fine", "by hand", "after"]);
    assert_eq!(fine_runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_host_rebinds_a_graph_to_its_storage_and_names_the_run_in_checkpoints() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node("a", say("a"))
        .add_edge(START, "a")
        .add_edge("a", END);
    let plain = g.compile().unwrap();
    assert!(!plain.has_checkpointer());
    assert_eq!(
        plain.edges(),
        [
            (START.to_owned(), "a".to_owned(), false),
            ("a".to_owned(), END.to_owned(), false)
        ]
    );
    let host_saver = saver();
    let hosted = plain
        .with_checkpointer(host_saver.clone())
        .with_store(Arc::new(InMemoryStore::new()));
    assert!(hosted.has_checkpointer() && !plain.has_checkpointer());

    let config = thread("hosted")
        .with_checkpoint_metadata("run_id", "host-run-1")
        .with_checkpoint_metadata("graph_id", "g");
    hosted
        .invoke_with(ChatUpdate::new(), config)
        .await
        .unwrap()
        .into_state();
    let records = host_saver
        .list("hosted", "", &ListOptions::default())
        .await
        .unwrap();
    assert!(!records.is_empty());
    for record in &records {
        assert_eq!(record.metadata["run_id"], "host-run-1");
        assert_eq!(record.metadata["graph_id"], "g");
        assert!(
            record.metadata.get("step").is_some(),
            "graphkit's own keys stay"
        );
    }
    // The run's checkpoints can be deleted by that name (a rollback).
    let deleted = host_saver.delete_run("hosted", "host-run-1").await.unwrap();
    assert_eq!(deleted, records.len() as u64);
    assert!(matches!(
        hosted.get_state(&thread("hosted")).await,
        Err(Error::CheckpointNotFound { .. })
    ));
}

#[tokio::test]
async fn a_thread_whose_step_had_conflicting_writes_can_be_read_and_repaired() {
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "left",
        SyncNode::new(|_: &Chat| ChatUpdate::new().answer("left").log(vec!["left".into()])),
    )
    .add_node(
        "right",
        SyncNode::new(|_: &Chat| ChatUpdate::new().answer("right")),
    )
    .add_node("after", say("after"))
    .add_edge(START, "left")
    .add_edge(START, "right")
    .add_edge(["left", "right"], "after")
    .add_edge("after", END);
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    let err = graph
        .invoke_with(ChatUpdate::new(), thread("c"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            Error::InvalidConcurrentUpdate {
                field: "answer",
                ..
            }
        ),
        "{err}"
    );

    // The thread reads: the state before the step, both tasks with what they wrote, the
    // conflict on the task whose write failed, and the step still to do.
    let snapshot = graph.get_state(&thread("c")).await.unwrap();
    assert_eq!(snapshot.values.answer, "");
    assert!(snapshot.values.log.is_empty());
    assert_eq!(snapshot.next, ["left", "right"]);
    assert!(snapshot.tasks.iter().all(|task| task.result.is_some()));
    let errors: Vec<&str> = snapshot
        .tasks
        .iter()
        .filter_map(|task| task.error.as_deref())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("answer"), "{errors:?}");
    let history = graph
        .get_state_history(&thread("c"), &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(history[0].next, ["left", "right"]);

    // Run again as it is, it fails the same way; an update repairs it in place of the
    // step's writes, and the join still sees both branches finished.
    let again = graph
        .invoke_with(RunInput::Continue, thread("c"))
        .await
        .unwrap_err();
    assert!(
        matches!(again, Error::InvalidConcurrentUpdate { .. }),
        "{again}"
    );
    graph
        .update_state(
            &thread("c"),
            ChatUpdate::new().answer("both").log(vec!["left".into()]),
            "left",
        )
        .await
        .unwrap();
    let repaired = graph.get_state(&thread("c")).await.unwrap();
    assert_eq!(repaired.values.answer, "both");
    assert_eq!(repaired.values.log, ["left"]);
    assert_eq!(repaired.next, ["after"]);
    let done = graph
        .invoke_with(RunInput::Continue, thread("c"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.answer, "both");
    assert_eq!(done.log, ["left", "after"]);
}

/// The writes a snapshot task shows as its result, as the list of its updates' `log`s.
fn logged(task: &graphkit::running::SnapshotTask) -> Option<Vec<String>> {
    let updates: Vec<ChatUpdate> = serde_json::from_value(task.result.clone()?).unwrap();
    Some(
        updates
            .into_iter()
            .flat_map(|u| u.log.map(|l| l.items).unwrap_or_default())
            .collect(),
    )
}

#[tokio::test]
async fn the_history_shows_what_each_finished_step_wrote_as_its_tasks_results() {
    // a, then b and c together, then d: steps of one and of two tasks.
    let mut g = StateGraph::<Chat>::new();
    g.add_node("a", say("a"))
        .add_node("b", say("b"))
        .add_node("c", say("c"))
        .add_node("d", say("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(["b", "c"], "d");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver()))
        .unwrap();
    graph
        .invoke_with(ChatUpdate::new(), thread("steps"))
        .await
        .unwrap()
        .finished()
        .unwrap();
    let history = graph
        .get_state_history(&thread("steps"), &ListOptions::default())
        .await
        .unwrap();
    let shown: Vec<_> = history
        .iter()
        .rev()
        .map(|s| {
            let results: Vec<_> = s.tasks.iter().map(logged).collect();
            (s.step, s.values.log.clone(), s.next.clone(), results)
        })
        .collect();
    let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        shown,
        [
            (0, vec![], strings(&["a"]), vec![Some(strings(&["a"]))]),
            // Each checkpoint shows its own state and its whole step, with what the step
            // then wrote (as LangGraph's history does).
            (
                1,
                strings(&["a"]),
                strings(&["b", "c"]),
                vec![Some(strings(&["b"])), Some(strings(&["c"]))]
            ),
            (
                2,
                strings(&["a", "b", "c"]),
                strings(&["d"]),
                vec![Some(strings(&["d"]))]
            ),
            (3, strings(&["a", "b", "c", "d"]), vec![], vec![]),
        ]
    );
    // The same checkpoint read by id shows the same.
    let second = &history[2];
    let by_id = graph.get_state(&second.config()).await.unwrap();
    assert_eq!(by_id.values.log, ["a"]);
    assert_eq!(by_id.next, ["b", "c"]);
    assert_eq!(logged(&by_id.tasks[1]), Some(strings(&["c"])));
    // Listed from before the newest, the step that checkpoint holds still shows.
    let older = graph
        .get_state_history(
            &thread("steps"),
            &ListOptions {
                before: Some(history[0].checkpoint_id.clone()),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(logged(&older[0].tasks[0]), Some(strings(&["d"])));
}

#[tokio::test]
async fn a_step_saved_as_a_full_snapshot_keeps_its_writes_for_the_history() {
    // A write larger than the snapshot interval makes its checkpoint a full snapshot.
    let big = "x".repeat(40_000);
    let mut g = StateGraph::<Chat>::new();
    g.add_node(
        "big",
        SyncNode::new(move |_: &Chat| ChatUpdate::new().answer(big.clone())),
    )
    .add_node("a", say("a"))
    .add_edge(START, "big")
    .add_edge("big", "a");
    let store = saver();
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(store.clone()))
        .unwrap();
    graph
        .invoke_with(ChatUpdate::new(), thread("big"))
        .await
        .unwrap()
        .finished()
        .unwrap();
    let history = graph
        .get_state_history(&thread("big"), &ListOptions::default())
        .await
        .unwrap();
    let after_big = &history[1];
    assert_eq!(after_big.step, 1);
    let record = store
        .get("big", "", Some(&after_big.checkpoint_id))
        .await
        .unwrap()
        .unwrap()
        .record;
    assert!(record.is_snapshot, "the test needs a snapshot here");
    let input = &history[2];
    assert_eq!(input.next, ["big"]);
    let result = input.tasks[0]
        .result
        .as_ref()
        .expect("big's writes are kept");
    assert_eq!(result[0]["answer"].as_str().map(str::len), Some(40_000));
    // Loading the snapshot does not apply its writes again.
    assert_eq!(after_big.values.answer.len(), 40_000);
    assert_eq!(history[0].values.log, ["a"]);
}

/// A test double: an [`InMemorySaver`] that refuses to save checkpoints (not pending
/// writes) while `refuse` is set, as a process that dies between a step's last task and
/// the step's checkpoint leaves the thread.
#[derive(Debug, Default)]
struct RefusingSaver {
    inner: InMemorySaver,
    refuse: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Checkpointer for RefusingSaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), StorageError> {
        if self.refuse.load(Ordering::SeqCst) {
            return Err(StorageError::backend(
                "refusing saver",
                "refused on purpose",
            ));
        }
        self.inner.put(record).await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<graphkit::checkpoint::PendingWrite>,
    ) -> Result<(), StorageError> {
        self.inner
            .put_writes(thread_id, checkpoint_ns, checkpoint_id, writes)
            .await
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<graphkit::checkpoint::CheckpointTuple>, StorageError> {
        self.inner
            .get(thread_id, checkpoint_ns, checkpoint_id)
            .await
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, StorageError> {
        self.inner.list(thread_id, checkpoint_ns, options).await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        self.inner.delete_thread(thread_id).await
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, StorageError> {
        self.inner.delete_run(thread_id, run_id).await
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, StorageError> {
        self.inner.try_lock_thread(thread_id, run_id).await
    }

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), StorageError> {
        self.inner.unlock_thread(thread_id, run_id).await
    }
}

#[tokio::test]
async fn a_step_whose_tasks_all_finished_before_its_checkpoint_is_not_done() {
    // START → a and b together → c. The checkpoint after a and b is refused: both saved
    // their writes, the step's checkpoint is missing.
    let saver = Arc::new(RefusingSaver::default());
    let mut g = StateGraph::<Chat>::new();
    let refuse = Arc::clone(&saver);
    g.add_node("a", say("a"))
        .add_node(
            "b",
            SyncNode::new(move |_: &Chat| {
                refuse.refuse.store(true, Ordering::SeqCst);
                ChatUpdate::new().log(vec!["b".to_string()])
            }),
        )
        .add_node("c", say("c"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], "c");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let failed = graph.invoke_with(ChatUpdate::new(), thread("gap")).await;
    assert!(matches!(failed, Err(Error::Storage(_))), "{failed:?}");

    let snapshot = graph.get_state(&thread("gap")).await.unwrap();
    // `next` leaves out the finished tasks, so it is empty; the run is not over.
    assert!(snapshot.next.is_empty());
    assert_eq!(snapshot.tasks.len(), 2);
    assert!(!snapshot.is_done());

    saver.refuse.store(false, Ordering::SeqCst);
    let done = graph
        .invoke_with(RunInput::Continue, thread("gap"))
        .await
        .unwrap()
        .finished()
        .unwrap();
    assert_eq!(done.log, ["a", "b", "c"]);
    assert!(graph.get_state(&thread("gap")).await.unwrap().is_done());
}
