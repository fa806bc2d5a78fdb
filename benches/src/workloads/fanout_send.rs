//! W3 `fanout_send`: map-reduce with W `Send`s from START, then one reduce. Also, graphkit
//! only: the memory of 100,000 async `Send` tasks, and the same tasks polled by hand in a
//! `FuturesUnordered` (its floor).

use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use graphkit::nodes::SyncNodeWithContext;
use graphkit::{CompiledGraph, END, Input, NodeContext, START, SendTo, State, StateGraph};
use serde::{Deserialize, Serialize};

use crate::case::{
    AsyncRuntime, BenchError, Case, Mode, Prepared, RuntimeInfo, Sample, graph_case,
};
use crate::measure::process_cpu_time;
use crate::workloads::items_checksum;

/// The width of the memory cases: 100,000 sends.
pub const MEMORY_WIDTH: usize = 100_000;

/// The checksum of W3 at [`MEMORY_WIDTH`] (`fnv` of `"0,1,…,99999"`).
pub const MEMORY_CHECKSUM: &str = r#"{"len_items": 100000, "sum_items": 4999950000, "total": 4999950000, "count": 100000, "fnv_items": "01b9e95a368164a5"}"#;

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

/// The case `send_memory_100k_async` (graphkit only): W3 with 100,000 async `Send` tasks,
/// for its peak memory (`peak_rss_mb`); [`by_hand_case`] is its floor.
pub fn memory_case() -> Case {
    let mut case = case(MEMORY_WIDTH, Mode::Async);
    case.name = "send_memory_100k_async".to_owned();
    case.expect_spec(MEMORY_CHECKSUM).slow()
}

/// The case `send_memory_100k_by_hand` (graphkit only): the floor of [`memory_case`]. The
/// same 100,000 packets and `work` futures (each makes a one-item `Vec`), polled together
/// in a `FuturesUnordered` on the same runtime, their lists appended in send order, with
/// no graph.
pub fn by_hand_case() -> Case {
    Case::new(
        "send_memory_100k_by_hand",
        "fanout_send",
        Mode::Async,
        || {
            let choice = AsyncRuntime::from_env();
            let (runtime, info) = choice.build()?;
            Ok(Box::new(ByHand {
                runtime,
                choice,
                info,
            }) as Box<dyn Prepared>)
        },
    )
    .param("W", MEMORY_WIDTH as i64)
    .steps(1)
    .items(MEMORY_WIDTH as u64, "task")
    .expect_spec(MEMORY_CHECKSUM)
    .slow()
}

/// [`by_hand_case`]'s run.
struct ByHand {
    runtime: tokio::runtime::Runtime,
    choice: AsyncRuntime,
    info: RuntimeInfo,
}

impl Prepared for ByHand {
    fn runtime(&self) -> RuntimeInfo {
        self.info
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        let n = MEMORY_WIDTH as i64;
        let (wall, cpu, items) = self.choice.run(&self.runtime, async move {
            let cpu_start = process_cpu_time();
            let start = Instant::now();
            let packets: Vec<Work> = (0..n).map(|i| Work { i }).collect();
            let mut running: FuturesUnordered<_> = packets
                .into_iter()
                .enumerate()
                .map(|(index, work)| async move { (index, vec![work.i]) })
                .collect();
            let mut lists: Vec<Option<Vec<i64>>> = Vec::new();
            lists.resize_with(MEMORY_WIDTH, || None);
            while let Some((index, list)) = running.next().await {
                lists[index] = Some(list);
            }
            let mut items = Vec::new();
            for list in lists.into_iter().flatten() {
                items.extend(list);
            }
            let wall = start.elapsed();
            (wall, process_cpu_time().saturating_sub(cpu_start), items)
        })?;
        let total = items.iter().sum::<i64>();
        let count = items.len() as i64;
        Ok(Sample {
            wall,
            cpu,
            checksum: items_checksum(&items, total, count),
        })
    }
}
