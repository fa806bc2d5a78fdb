//! graphkit's own cases (not in the shared spec) for LangGraph features on a hot path:
//! W2 with its join as a deferred node, and W1 written with the functional API (an
//! entrypoint awaiting a chain of tasks).

use std::sync::Arc;

use graphkit::func::{self, EntrypointContext, EntrypointState};
use graphkit::nodes::NodeOptions;
use graphkit::{CompiledGraph, END, Error, START, StateGraph, SyncNode};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::Checksum;
use crate::workloads::fanout_static::{self, Fanout, FanoutUpdate, worker_name};

fn join(state: &Fanout) -> FanoutUpdate {
    FanoutUpdate::new()
        .total(state.items.iter().sum::<i64>())
        .count(state.items.len() as i64)
}

/// `START → split → worker_i (W edges) → join (deferred) → END`: W2 with the barrier join
/// replaced by a deferred node, triggered by every worker and run once after them.
pub fn deferred_graph(
    width: usize,
    mode: Mode,
) -> Result<CompiledGraph<Fanout>, graphkit::BuildError> {
    let mut graph = StateGraph::<Fanout>::new();
    let deferred = NodeOptions::new().defer();
    match mode {
        Mode::Sync => graph
            .add_node("split", SyncNode::new(|_: &Fanout| FanoutUpdate::new()))
            .add_node_with("join", SyncNode::new(join), deferred),
        Mode::Async => graph
            .add_node("split", |_: Arc<Fanout>| async { FanoutUpdate::new() })
            .add_node_with(
                "join",
                |state: Arc<Fanout>| async move { join(&state) },
                deferred,
            ),
    };
    for i in 0..width {
        let name = worker_name(i);
        let value = i as i64;
        match mode {
            Mode::Sync => graph.add_node(
                &name,
                SyncNode::new(move |_: &Fanout| FanoutUpdate::new().items(vec![value])),
            ),
            Mode::Async => graph.add_node(&name, move |_: Arc<Fanout>| async move {
                FanoutUpdate::new().items(vec![value])
            }),
        };
        graph
            .add_edge("split", &name)
            .add_edge(name.as_str(), "join");
    }
    graph.add_edge(START, "split").add_edge("join", END);
    graph.compile()
}

/// The case `deferred_fanout_{width}_{mode}`: W2's checksum.
pub fn deferred_case(width: usize, mode: Mode) -> Case {
    graph_case(
        format!("deferred_fanout_{width}_{}", mode.as_str()),
        "deferred_fanout",
        mode,
        move |mode| deferred_graph(width, mode),
        fanout_static::input,
        fanout_static::checksum,
    )
    .param("W", width as i64)
    .steps(3)
    .items(width as u64, "node")
}

/// The functional API's state for [`tasks_graph`]: the input is the number of tasks, the
/// output the sum of their results.
pub type Tasks = EntrypointState<i64, i64>;

/// An entrypoint that awaits `n` tasks one after another, each returning 1.
pub fn tasks_graph(n: usize) -> Result<CompiledGraph<Tasks>, graphkit::BuildError> {
    func::entrypoint(
        "chain",
        move |_: i64, ctx: EntrypointContext<i64>| async move {
            let mut counter = 0;
            for _ in 0..n {
                counter += ctx.task("add", |_| async { Ok::<i64, Error>(1) }).await?;
            }
            Ok::<_, Error>(counter)
        },
    )
}

/// `{"counter": N}`: W1's checksum, from the entrypoint's output.
pub fn tasks_checksum(state: &Tasks) -> Checksum {
    Checksum::new().with("counter", state.output.unwrap_or_default())
}

/// The case `functional_tasks_{n}_async`: W1 as `n` functional-API task calls (async only:
/// an entrypoint and its tasks are async functions).
pub fn tasks_case(n: usize) -> Case {
    graph_case(
        format!("functional_tasks_{n}_async"),
        "functional_tasks",
        Mode::Async,
        move |_| tasks_graph(n),
        || graphkit::func::EntrypointUpdate::input(0),
        tasks_checksum,
    )
    .param("N", n as i64)
    .steps(1)
    .items(n as u64, "task")
}
