//! W1 `sequential`: a chain of N nodes, each adding one to a counter (per-step overhead).

use std::sync::Arc;

use graphkit::{CompiledGraph, END, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::Checksum;

/// W1's state: one last-value counter.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Counter {
    /// Incremented by every node.
    pub counter: i64,
}

/// `node_0000` ... : the name of node `i`.
pub fn node_name(i: usize) -> String {
    format!("node_{i:04}")
}

fn bump(state: &Counter) -> CounterUpdate {
    CounterUpdate::new().counter(state.counter + 1)
}

/// `START → node_0000 → … → node_{n-1} → END`; sync nodes for `sync`, async for `async`.
pub fn builder(n: usize, mode: Mode) -> StateGraph<Counter> {
    let mut graph = StateGraph::<Counter>::new();
    for i in 0..n {
        let name = node_name(i);
        match mode {
            Mode::Sync => graph.add_node(&name, SyncNode::new(bump)),
            Mode::Async => graph.add_node(&name, |state: Arc<Counter>| async move { bump(&state) }),
        };
        if i > 0 {
            graph.add_edge(node_name(i - 1).as_str(), &name);
        }
    }
    graph
        .add_edge(START, &node_name(0))
        .add_edge(node_name(n - 1).as_str(), END);
    graph
}

/// [`builder`], compiled.
pub fn graph(n: usize, mode: Mode) -> Result<CompiledGraph<Counter>, graphkit::BuildError> {
    builder(n, mode).compile()
}

/// `{counter: 0}`.
pub fn input() -> CounterUpdate {
    CounterUpdate::new().counter(0)
}

/// `{"counter": N}`.
pub fn checksum(state: &Counter) -> Checksum {
    Checksum::new().with("counter", state.counter)
}

/// The case `sequential_{n}_{mode}`.
pub fn case(n: usize, mode: Mode) -> Case {
    graph_case(
        format!("sequential_{n}_{}", mode.as_str()),
        "sequential",
        mode,
        move |mode| graph(n, mode),
        input,
        checksum,
    )
    .param("N", n as i64)
    .steps(n as u64)
    .items(n as u64, "node")
}
