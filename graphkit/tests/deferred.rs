//! Deferred nodes (`NodeOptions::defer`, LangGraph's `add_node(..., defer=True)`): a deferred
//! node that is triggered while other tasks remain waits, and runs once, in the first step
//! where nothing else is left; what waits survives checkpoints.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::future::{Ready, ready};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use graphkit::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, InMemorySaver, ListOptions,
};
use graphkit::nodes::{Goto, IntoNode, NodeOptions};
use graphkit::{
    BuildError, Command, CompileOptions, CompiledGraph, Durability, END, Input, InterruptKind,
    NodeContext, RunConfig, RunInput, START, Scoped, SendTo, State, StateGraph, StreamMode,
    StreamPayload,
};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Trace {
    /// The nodes that ran, in apply order.
    #[reducer(append)]
    log: Vec<String>,
    /// `node@step` for each task, in apply order (steps of one run, from 1).
    #[reducer(append)]
    steps: Vec<String>,
    /// What each run of an aggregating node found in `log`.
    #[reducer(append)]
    seen: Vec<Vec<String>>,
}

/// A node that logs its name and step.
fn visit(name: &'static str) -> impl Fn(Arc<Trace>, NodeContext) -> Ready<TraceUpdate> + Clone {
    move |_, ctx| {
        ready(
            TraceUpdate::new()
                .log(vec![name.to_string()])
                .steps(vec![format!("{name}@{}", ctx.step())]),
        )
    }
}

/// A node that logs its name and step, and what it found in `log`.
fn aggregate(name: &'static str) -> impl Fn(Arc<Trace>, NodeContext) -> Ready<TraceUpdate> + Clone {
    move |state, ctx| {
        ready(
            TraceUpdate::new()
                .log(vec![name.to_string()])
                .steps(vec![format!("{name}@{}", ctx.step())])
                .seen(vec![state.log.clone()]),
        )
    }
}

fn deferred() -> NodeOptions {
    NodeOptions::new().defer()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// `fan` starts a branch of one node (`short`) and one of three (`long_1` .. `long_3`);
/// both branches end in `aggregate`, added with `options`.
fn branches(options: NodeOptions) -> StateGraph<Trace> {
    branches_with(options, visit("long_2"))
}

/// [`branches`] with `long_2` as given.
fn branches_with<A>(options: NodeOptions, long_2: impl IntoNode<Trace, A>) -> StateGraph<Trace> {
    let mut g = StateGraph::<Trace>::new();
    g.add_node("fan", visit("fan"))
        .add_node("short", visit("short"))
        .add_node("long_1", visit("long_1"))
        .add_node("long_2", long_2)
        .add_node("long_3", visit("long_3"))
        .add_node_with("aggregate", aggregate("aggregate"), options)
        .add_edge(START, "fan")
        .add_edge("fan", "short")
        .add_edge("fan", "long_1")
        .add_edge("long_1", "long_2")
        .add_edge("long_2", "long_3")
        .add_edge("short", "aggregate")
        .add_edge("long_3", "aggregate")
        .add_edge("aggregate", END);
    g
}

async fn run(g: StateGraph<Trace>) -> Trace {
    g.compile()
        .unwrap()
        .invoke(TraceUpdate::new())
        .await
        .unwrap()
        .into_state()
}

#[tokio::test]
async fn deferred_aggregate_runs_once_after_the_longest_branch_and_sees_every_write() {
    let out = run(branches(deferred())).await;
    // `short` triggered it in step 2 and `long_3` again in step 4: it waited for the
    // longest branch and ran once, alone, in the step after.
    assert_eq!(
        out.steps,
        [
            "fan@1",
            "long_1@2",
            "short@2",
            "long_2@3",
            "long_3@4",
            "aggregate@5"
        ]
    );
    assert_eq!(
        out.seen,
        [strings(&["fan", "long_1", "short", "long_2", "long_3"])]
    );
}

#[tokio::test]
async fn without_defer_the_aggregate_runs_after_each_branch() {
    let out = run(branches(NodeOptions::new())).await;
    // The same graph with a plain node: it runs after the short branch, beside `long_2`,
    // before the long branch is done, and again after it.
    assert_eq!(
        out.steps,
        [
            "fan@1",
            "long_1@2",
            "short@2",
            "aggregate@3",
            "long_2@3",
            "long_3@4",
            "aggregate@5"
        ]
    );
    assert_eq!(
        out.seen,
        [
            strings(&["fan", "long_1", "short"]),
            strings(&["fan", "long_1", "short", "aggregate", "long_2", "long_3"]),
        ]
    );
}

#[tokio::test]
async fn deferred_nodes_held_together_run_together_in_one_final_step() {
    let mut g = StateGraph::<Trace>::new();
    g.add_node("short", visit("short"))
        .add_node("long_1", visit("long_1"))
        .add_node("long_2", visit("long_2"))
        .add_node_with("summary", aggregate("summary"), deferred())
        .add_node_with("audit", aggregate("audit"), deferred())
        .add_edge(START, "short")
        .add_edge(START, "long_1")
        .add_edge("short", "summary")
        .add_edge("long_1", "audit")
        .add_edge("long_1", "long_2");
    let out = run(g).await;
    // Both were triggered in step 1 (by different nodes) and waited for `long_2`; then
    // they ran in one step, on one snapshot, applied by name like any step's tasks.
    assert_eq!(
        out.steps,
        ["long_1@1", "short@1", "long_2@2", "audit@3", "summary@3"]
    );
    let before = strings(&["long_1", "short", "long_2"]);
    assert_eq!(out.seen, [before.clone(), before]);
}

#[tokio::test]
async fn a_deferred_node_with_nothing_else_to_wait_for_runs_in_the_next_step() {
    let mut g = StateGraph::<Trace>::new();
    g.add_node("a", visit("a"))
        .add_node_with("b", visit("b"), deferred())
        .add_node("c", visit("c"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c");
    let out = run(g).await;
    // In a chain, deferring changes nothing; and what a deferred node triggers runs as usual.
    assert_eq!(out.steps, ["a@1", "b@2", "c@3"]);
}

#[tokio::test]
async fn a_deferred_node_that_loops_back_waits_again_for_the_new_branches() {
    let mut g = StateGraph::<Trace>::new();
    g.add_node("fan", visit("fan"))
        .add_node("short", visit("short"))
        .add_node("long_1", visit("long_1"))
        .add_node("long_2", visit("long_2"))
        .add_node_with("review", aggregate("review"), deferred())
        .add_edge(START, "fan")
        .add_edge("fan", "short")
        .add_edge("fan", "long_1")
        .add_edge("long_1", "long_2")
        .add_edge("short", "review")
        .add_edge("long_2", "review")
        .add_conditional_edges(
            "review",
            |s: &Trace| if s.seen.len() < 2 { "fan" } else { END },
            ["fan", END],
        );
    let out = run(g).await;
    assert_eq!(
        out.steps,
        [
            "fan@1", "long_1@2", "short@2", "long_2@3", "review@4", //
            "fan@5", "long_1@6", "short@6", "long_2@7", "review@8",
        ]
    );
}

/// A map step: each `work` task logs itself and sends `work` again with one hop less, so
/// the sends `[3, 1, 2]` make chains of three lengths; every `work` task triggers
/// `collect` (added with `options`) through a plain edge.
fn map_reduce(options: NodeOptions) -> CompiledGraph<Trace> {
    async fn work(Input(hops): Input<u32>) -> Command<Trace> {
        let command = Command::new().update(TraceUpdate::new().log(vec![format!("work {hops}")]));
        match hops {
            0 | 1 => command,
            _ => command.goto(SendTo::new("work", hops - 1)),
        }
    }
    let mut g = StateGraph::<Trace>::new();
    g.add_node("plan", visit("plan"))
        .add_node_with("work", work, NodeOptions::new().destinations(["work"]))
        .add_node_with("collect", aggregate("collect"), options)
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |_: &Trace| [3u32, 1, 2].map(|hops| SendTo::new("work", hops)).to_vec(),
            ["work"],
        )
        .add_edge("work", "collect")
        .add_edge("collect", END);
    g.compile().unwrap()
}

#[tokio::test]
async fn a_deferred_reduce_waits_for_every_send_chain() {
    let out = map_reduce(deferred())
        .invoke(TraceUpdate::new())
        .await
        .unwrap()
        .into_state();
    let mapped = [
        "plan", "work 3", "work 1", "work 2", "work 2", "work 1", "work 1",
    ];
    assert_eq!(out.seen, [strings(&mapped)]);
    assert_eq!(out.steps, ["plan@1", "collect@5"]);

    // Without defer, `collect` runs beside the sends of each step, three times.
    let eager = map_reduce(NodeOptions::new())
        .invoke(TraceUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        eager.steps,
        ["plan@1", "collect@3", "collect@4", "collect@5"]
    );
}

#[tokio::test]
async fn sends_to_a_deferred_node_wait_and_run_once_each_in_send_order() {
    async fn tally(Input(n): Input<u32>, ctx: NodeContext) -> TraceUpdate {
        TraceUpdate::new()
            .log(vec![format!("tally {n}")])
            .steps(vec![format!("tally {n}@{}", ctx.step())])
    }
    let mut g = StateGraph::<Trace>::new();
    g.add_node("long_1", visit("long_1"))
        .add_node("long_2", visit("long_2"))
        .add_node_with("tally", tally, deferred())
        .add_conditional_edges(
            START,
            |_: &Trace| {
                vec![
                    Goto::from(SendTo::new("tally", 1u32)),
                    Goto::from("long_1"),
                    Goto::from(SendTo::new("tally", 2u32)),
                ]
            },
            ["tally", "long_1"],
        )
        .add_edge("long_1", "long_2");
    let out = run(g).await;
    assert_eq!(
        out.steps,
        ["long_1@1", "long_2@2", "tally 1@3", "tally 2@3"]
    );
}

#[tokio::test]
async fn a_deferred_join_target_waits_for_its_sources_then_for_everything_else() {
    let mut g = StateGraph::<Trace>::new();
    g.add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("long_1", visit("long_1"))
        .add_node("long_2", visit("long_2"))
        .add_node("long_3", visit("long_3"))
        .add_node_with("both", visit("both"), deferred())
        .add_edge(START, "a")
        .add_edge(START, "long_1")
        .add_edge("a", "b")
        .add_edge("long_1", "long_2")
        .add_edge("long_2", "long_3")
        .add_edge(["a", "b"], "both");
    let out = run(g).await;
    // The join fired after `b` (step 2); a plain target would run beside `long_3`.
    assert_eq!(
        out.steps,
        ["a@1", "long_1@1", "b@2", "long_2@2", "long_3@3", "both@4"]
    );
}

#[tokio::test]
async fn a_deferred_node_s_updates_stream_like_any_node_s() {
    let graph = branches(deferred()).compile().unwrap();
    let events: Vec<_> = graph
        .stream(TraceUpdate::new(), StreamMode::Updates)
        .map(|e| e.unwrap())
        .collect()
        .await;
    let nodes: Vec<String> = events
        .iter()
        .map(|e| match &e.payload {
            StreamPayload::Updates { node, .. } => node.to_string(),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        nodes,
        ["fan", "long_1", "short", "long_2", "long_3", "aggregate"]
    );
    let StreamPayload::Updates {
        update: Scoped::Root(update),
        ..
    } = &events[5].payload
    else {
        unreachable!()
    };
    let mut seen = Vec::new();
    update.seen.clone().unwrap().apply_to(&mut seen);
    assert_eq!(
        seen,
        [strings(&["fan", "long_1", "short", "long_2", "long_3"])]
    );
}

#[tokio::test]
async fn a_deferred_node_in_a_subgraph_waits_for_the_subgraph_only() {
    let mut child = StateGraph::<Trace>::new();
    child
        .add_node("c_short", visit("c_short"))
        .add_node("c_long_1", visit("c_long_1"))
        .add_node("c_long_2", visit("c_long_2"))
        .add_node_with("c_last", visit("c_last"), deferred())
        .add_edge(START, "c_short")
        .add_edge(START, "c_long_1")
        .add_edge("c_long_1", "c_long_2")
        .add_edge("c_short", "c_last")
        .add_edge("c_long_2", "c_last");
    let mut g = StateGraph::<Trace>::new();
    g.add_subgraph("sub", child.compile().unwrap())
        .add_node("p_1", visit("p_1"))
        .add_node("p_2", visit("p_2"))
        .add_edge(START, "sub")
        .add_edge(START, "p_1")
        .add_edge("p_1", "p_2");
    let out = run(g).await;
    // The child run, inside the parent's step 1, ends with `c_last`; the parent's `p_2`
    // (step 2) does not hold it.
    assert_eq!(
        out.log,
        ["p_1", "c_long_1", "c_short", "c_long_2", "c_last", "p_2"]
    );
}

// ---- compile()

#[tokio::test]
async fn compile_accepts_a_deferred_node_wherever_a_node_may_stand() {
    // An entry node: it waits for the other entry's branch.
    let mut g = StateGraph::<Trace>::new();
    g.add_node_with("first", visit("first"), deferred())
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_edge(START, "first")
        .add_edge(START, "a")
        .add_edge("a", "b");
    assert_eq!(run(g).await.steps, ["a@1", "b@2", "first@3"]);

    // The only node: nothing to wait for.
    let mut g = StateGraph::<Trace>::new();
    g.add_node_with("only", visit("only"), deferred())
        .add_edge(START, "only");
    assert_eq!(run(g).await.steps, ["only@1"]);

    // Deferring does not make an unreachable node acceptable: it is refused as any other.
    let mut g = StateGraph::<Trace>::new();
    g.add_node("a", visit("a"))
        .add_node_with("orphan", visit("orphan"), deferred())
        .add_edge(START, "a");
    assert!(matches!(g.compile(), Err(BuildError::Unreachable(n)) if n == "orphan"));
}

// ---- checkpoints

fn thread(id: &str) -> RunConfig {
    RunConfig::new().thread_id(id)
}

/// [`branches`] with a deferred aggregate, saving to `saver`, pausing before `long_3`.
fn paused_branches(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Trace> {
    branches(deferred())
        .compile_with(
            CompileOptions::new()
                .checkpointer(saver)
                .interrupt_before(["long_3"]),
        )
        .unwrap()
}

/// Runs [`paused_branches`] on `thread_id` to its pause before `long_3` (the aggregate
/// waiting), checks what `get_state` shows, continues, and checks the aggregate ran once,
/// at the end, having seen everything.
async fn held_aggregate_survives_the_pause(saver: Arc<dyn Checkpointer>, config: RunConfig) {
    let graph = paused_branches(saver);
    let paused = graph
        .invoke_with(TraceUpdate::new(), config.clone())
        .await
        .unwrap();
    assert!(
        matches!(paused.interrupts(), [stop] if stop.kind == InterruptKind::Before && stop.node == "long_3"),
        "{paused:?}"
    );
    let paused = graph.get_state(&config).await.unwrap();
    assert_eq!(paused.values.log, ["fan", "long_1", "short", "long_2"]);
    assert_eq!(paused.next, ["long_3"]);
    assert_eq!(paused.deferred, ["aggregate"]);

    let out = graph
        .invoke_with(RunInput::Continue, config.clone())
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        out.log,
        ["fan", "long_1", "short", "long_2", "long_3", "aggregate"]
    );
    assert_eq!(
        out.seen,
        [strings(&["fan", "long_1", "short", "long_2", "long_3"])]
    );
    let done = graph.get_state(&config).await.unwrap();
    assert!(done.next.is_empty() && done.deferred.is_empty(), "{done:?}");
}

#[tokio::test]
async fn a_held_deferred_node_survives_an_interrupt_with_each_durability() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let config = thread(&format!("{durability:?}")).durability(durability);
        held_aggregate_survives_the_pause(Arc::new(InMemorySaver::new()), config).await;
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_held_deferred_node_survives_an_interrupt_on_sqlite() {
    let saver = graphkit::checkpoint::SqliteSaver::in_memory()
        .await
        .unwrap();
    held_aggregate_survives_the_pause(Arc::new(saver), thread("sqlite")).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_held_deferred_node_survives_an_interrupt_on_postgres() {
    let Some(url) = crate::backend_support::postgres_url() else {
        return;
    };
    let saver = graphkit::checkpoint::PostgresSaver::connect(&url)
        .await
        .unwrap();
    let thread_id = crate::backend_support::unique("deferred");
    held_aggregate_survives_the_pause(Arc::new(saver), thread(&thread_id)).await;
}

#[tokio::test]
async fn a_command_input_routing_to_a_waiting_deferred_node_does_not_run_it_early_or_twice() {
    let graph = paused_branches(Arc::new(InMemorySaver::new()));
    let config = thread("goto");
    assert!(
        graph
            .invoke_with(TraceUpdate::new(), config.clone())
            .await
            .unwrap()
            .is_paused()
    );
    // Paused before `long_3`, with `aggregate` waiting: a `goto` to it joins the wait.
    let out = graph
        .invoke_with(
            RunInput::Command(Command::new().goto("aggregate")),
            config.clone(),
        )
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        out.log,
        ["fan", "long_1", "short", "long_2", "long_3", "aggregate"]
    );
}

#[tokio::test]
async fn the_history_shows_the_deferred_node_waiting_then_next() {
    let graph = branches(deferred())
        .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();
    graph
        .invoke_with(TraceUpdate::new(), thread("h"))
        .await
        .unwrap()
        .into_state();
    let mut history = graph
        .get_state_history(&thread("h"), &ListOptions::default())
        .await
        .unwrap();
    history.reverse();
    // Each checkpoint's planned step (its tasks: a past step's finished tasks are no
    // longer in its `next`) and what waits.
    let planned: Vec<(Vec<String>, Vec<String>)> = history
        .into_iter()
        .map(|s| (s.tasks.into_iter().map(|t| t.name).collect(), s.deferred))
        .collect();
    let plan = |tasks: &[&str], deferred: &[&str]| (strings(tasks), strings(deferred));
    assert_eq!(
        planned,
        [
            plan(&["fan"], &[]),               // the input
            plan(&["long_1", "short"], &[]),   // after fan
            plan(&["long_2"], &["aggregate"]), // after short: it waits
            plan(&["long_3"], &["aggregate"]), // still waiting
            plan(&["aggregate"], &[]),         // nothing else left: it is next
            plan(&[], &[]),                    // done
        ]
    );
}

#[tokio::test]
async fn a_run_that_fails_while_a_deferred_node_waits_resumes_and_runs_it_once() {
    let failures = Arc::new(AtomicUsize::new(1));
    let flaky = {
        let failures = Arc::clone(&failures);
        move |_: Arc<Trace>| {
            let fail = failures
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            ready(if fail {
                Err("the disk is full".to_string())
            } else {
                Ok(TraceUpdate::new().log(vec!["long_2".to_string()]))
            })
        }
    };
    let graph = branches_with(deferred(), flaky)
        .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();
    let err = graph
        .invoke_with(TraceUpdate::new(), thread("f"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("the disk is full"), "{err}");
    let stopped = graph.get_state(&thread("f")).await.unwrap();
    assert_eq!(stopped.next, ["long_2"]);
    assert_eq!(stopped.deferred, ["aggregate"]);

    let out = graph
        .invoke_with(RunInput::Continue, thread("f"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        out.log,
        ["fan", "long_1", "short", "long_2", "long_3", "aggregate"]
    );
    assert_eq!(out.seen.len(), 1);
}

#[tokio::test]
async fn a_checkpoint_saved_before_deferred_nodes_existed_still_loads() {
    // A checkpoint as graphkit wrote it before it knew deferred nodes: no `deferred` field.
    let saver = Arc::new(InMemorySaver::new());
    let payload = serde_json::json!({
        "state": { "log": ["fan", "long_1", "short"], "steps": [], "seen": [] },
        "next": [{ "node": "long_2" }],
        "joins": [],
    });
    saver
        .put(CheckpointRecord {
            thread_id: "old".into(),
            checkpoint_ns: String::new(),
            checkpoint_id: "0001".into(),
            parent_id: None,
            format_version: 1,
            step: 2,
            source: CheckpointSource::Loop,
            created_at_ms: 0,
            metadata: serde_json::json!({ "source": "loop", "step": 2 }),
            is_snapshot: true,
            payload: serde_json::to_vec(&payload).unwrap(),
        })
        .await
        .unwrap();
    let graph = branches(deferred())
        .compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap();
    let state = graph.get_state(&thread("old")).await.unwrap();
    assert!(state.deferred.is_empty());
    let out = graph
        .invoke_with(RunInput::Continue, thread("old"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        out.log,
        ["fan", "long_1", "short", "long_2", "long_3", "aggregate"]
    );
}
