//! W3 `fanout_send`: map-reduce with W `Send`s from START, then one reduce.

use graphkit::nodes::SyncNodeWithContext;
use graphkit::{CompiledGraph, END, Input, NodeContext, START, SendTo, State, StateGraph};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::workloads::items_checksum;

/// W3's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct MapReduce {
    /// How many sends the router makes.
    pub n: i64,
    /// One entry per send, in send order.
    #[reducer(append)]
    pub items: Vec<i64>,
    /// The reduce's sum of `items`.
    pub total: i64,
    /// The reduce's count of `items`.
    pub count: i64,
}

/// A `work` task's packet: `{i}`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Work {
    /// The send's index.
    pub i: i64,
}

fn fan(state: &MapReduce) -> Vec<SendTo> {
    (0..state.n)
        .map(|i| SendTo::new("work", Work { i }))
        .collect()
}

fn reduce(state: &MapReduce) -> MapReduceUpdate {
    MapReduceUpdate::new()
        .total(state.items.iter().sum::<i64>())
        .count(state.items.len() as i64)
}

/// `START →? fan (n Sends to work)`, `work → reduce → END`.
pub fn graph(mode: Mode) -> Result<CompiledGraph<MapReduce>, graphkit::BuildError> {
    let mut graph = StateGraph::<MapReduce>::new();
    match mode {
        Mode::Sync => graph
            .add_node(
                "work",
                SyncNodeWithContext::new(|_: &MapReduce, ctx: &NodeContext| {
                    let work = ctx
                        .input::<Work>()
                        .ok_or("a `work` task needs a `Work` packet")?;
                    Ok::<_, &str>(MapReduceUpdate::new().items(vec![work.i]))
                }),
            )
            .add_node("reduce", graphkit::SyncNode::new(reduce)),
        Mode::Async => graph
            .add_node("work", |Input(work): Input<Work>| async move {
                MapReduceUpdate::new().items(vec![work.i])
            })
            .add_node("reduce", |state: std::sync::Arc<MapReduce>| async move {
                reduce(&state)
            }),
    };
    graph
        .add_conditional_edges(START, fan, ["work"])
        .add_edge("work", "reduce")
        .add_edge("reduce", END);
    graph.compile()
}

/// The case `fanout_send_{width}_{mode}`.
pub fn case(width: usize, mode: Mode) -> Case {
    let n = width as i64;
    graph_case(
        format!("fanout_send_{width}_{}", mode.as_str()),
        "fanout_send",
        mode,
        graph,
        move || {
            MapReduceUpdate::new()
                .n(n)
                .items(Vec::new())
                .total(0)
                .count(0)
        },
        |state| items_checksum(&state.items, state.total, state.count),
    )
    .param("W", n)
    .steps(2)
    .items(width as u64, "task")
}
