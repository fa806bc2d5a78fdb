//! W1 `sequential`: a chain of N nodes, each adding one to a counter (per-step overhead).
//! Also, graphkit only: the same chain with every node cached and the cache warm (the cost
//! of a cache hit: hashing the input, looking it up, decoding and applying the writes).

use std::sync::Arc;

use graphkit::cache::{CachePolicy, InMemoryCache};
use graphkit::nodes::NodeOptions;
use graphkit::{CompileOptions, CompiledGraph, END, START, State, StateGraph, SyncNode};
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
    chain(n, mode, &NodeOptions::new())
}

/// The chain of [`builder`], each node with `options`.
fn chain(n: usize, mode: Mode, options: &NodeOptions) -> StateGraph<Counter> {
    let mut graph = StateGraph::<Counter>::new();
    for i in 0..n {
        let name = node_name(i);
        let options = options.clone();
        match mode {
            Mode::Sync => graph.add_node_with(&name, SyncNode::new(bump), options),
            Mode::Async => graph.add_node_with(
                &name,
                |state: Arc<Counter>| async move { bump(&state) },
                options,
            ),
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

/// [`builder`] with every node cached (default key: a hash of the state) in an
/// [`InMemoryCache`] of its own: after the first invocation every task is a cache hit.
pub fn cached_graph(n: usize, mode: Mode) -> Result<CompiledGraph<Counter>, graphkit::BuildError> {
    let options = NodeOptions::new().cache(CachePolicy::new());
    chain(n, mode, &options)
        .compile_with(CompileOptions::new().cache(Arc::new(InMemoryCache::new())))
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
    chain_case("sequential", n, mode, graph)
}

/// The case `cached_sequential_{n}_{mode}` (graphkit only, not in the shared spec): W1 with
/// every node cached; the warm-up invocations fill the cache, so every timed task is a hit.
pub fn cached_case(n: usize, mode: Mode) -> Case {
    chain_case("cached_sequential", n, mode, cached_graph)
}

/// The case `{workload}_{n}_{mode}` of a chain of `n` nodes built by `build`.
fn chain_case(
    workload: &'static str,
    n: usize,
    mode: Mode,
    build: fn(usize, Mode) -> Result<CompiledGraph<Counter>, graphkit::BuildError>,
) -> Case {
    graph_case(
        format!("{workload}_{n}_{}", mode.as_str()),
        workload,
        mode,
        move |mode| build(n, mode),
        input,
        checksum,
    )
    .param("N", n as i64)
    .steps(n as u64)
    .items(n as u64, "node")
}
