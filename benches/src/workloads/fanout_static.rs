//! W2 `fanout_static`: one split node, W static workers, a barrier join.

use std::sync::Arc;

use graphkit::{CompiledGraph, END, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::Checksum;
use crate::workloads::items_checksum;

/// W2's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Fanout {
    /// One entry per worker, in worker-index order.
    #[reducer(append)]
    pub items: Vec<i64>,
    /// The join's sum of `items`.
    pub total: i64,
    /// The join's count of `items`.
    pub count: i64,
}

/// `worker_0000` ... : the name of worker `i`.
pub fn worker_name(i: usize) -> String {
    format!("worker_{i:04}")
}

fn join(state: &Fanout) -> FanoutUpdate {
    FanoutUpdate::new()
        .total(state.items.iter().sum::<i64>())
        .count(state.items.len() as i64)
}

/// `START → split → worker_i (W edges) → [all workers] → join → END`.
pub fn graph(width: usize, mode: Mode) -> Result<CompiledGraph<Fanout>, graphkit::BuildError> {
    let mut graph = StateGraph::<Fanout>::new();
    let workers: Vec<String> = (0..width).map(worker_name).collect();
    match mode {
        Mode::Sync => graph
            .add_node("split", SyncNode::new(|_: &Fanout| FanoutUpdate::new()))
            .add_node("join", SyncNode::new(join)),
        Mode::Async => graph
            .add_node("split", |_: Arc<Fanout>| async { FanoutUpdate::new() })
            .add_node("join", |state: Arc<Fanout>| async move { join(&state) }),
    };
    for (i, name) in workers.iter().enumerate() {
        let value = i as i64;
        match mode {
            Mode::Sync => graph.add_node(
                name,
                SyncNode::new(move |_: &Fanout| FanoutUpdate::new().items(vec![value])),
            ),
            Mode::Async => graph.add_node(name, move |_: Arc<Fanout>| async move {
                FanoutUpdate::new().items(vec![value])
            }),
        };
        graph.add_edge("split", name);
    }
    let sources: Vec<&str> = workers.iter().map(String::as_str).collect();
    graph
        .add_edge(START, "split")
        .add_edge(sources, "join")
        .add_edge("join", END);
    graph.compile()
}

/// `{items: [], total: 0, count: 0}`.
pub fn input() -> FanoutUpdate {
    FanoutUpdate::new().items(Vec::new()).total(0).count(0)
}

/// `{"len_items", "sum_items", "total", "count", "fnv_items"}`.
pub fn checksum(state: &Fanout) -> Checksum {
    items_checksum(&state.items, state.total, state.count)
}

/// The case `fanout_static_{width}_{mode}`.
pub fn case(width: usize, mode: Mode) -> Case {
    graph_case(
        format!("fanout_static_{width}_{}", mode.as_str()),
        "fanout_static",
        mode,
        move |mode| graph(width, mode),
        input,
        checksum,
    )
    .param("W", width as i64)
    .steps(3)
    .items(width as u64, "node")
}
