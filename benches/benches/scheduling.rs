//! Scheduler overhead: one super-step of 1–1,000 tasks, `Send` fan-out, and routing by
//! static edges vs conditional edges.
//!
//! `cargo bench -p graphkit-benches --bench scheduling`
#![allow(missing_docs)]

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use graphkit::nodes::SyncNodeWithContext;
use graphkit::{
    CompiledGraph, END, Input, NodeContext, START, SendTo, State, StateGraph, SyncNode,
};
use graphkit_benches::Mode;
use graphkit_benches::case::run_config;
use graphkit_benches::workloads::sequential;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Wide {
    n: i64,
    #[reducer(append)]
    items: Vec<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavor {
    /// Sync nodes, `invoke_blocking`.
    Sync,
    /// Async nodes on a current-thread runtime.
    Current,
    /// Async nodes on a 2-worker multi-thread runtime.
    Multi,
}

impl Flavor {
    const ALL: [Flavor; 3] = [Flavor::Sync, Flavor::Current, Flavor::Multi];

    fn name(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Current => "async_current_thread",
            Self::Multi => "async_multi_thread",
        }
    }

    fn mode(self) -> Mode {
        if self == Self::Sync {
            Mode::Sync
        } else {
            Mode::Async
        }
    }

    fn runtime(self) -> Option<tokio::runtime::Runtime> {
        let runtime = match self {
            Self::Sync => return None,
            Self::Current => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            Self::Multi => tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build(),
        };
        Some(runtime.expect("a tokio runtime"))
    }
}

/// Invokes `graph` once in `flavor`.
fn invoke<S: State>(
    graph: &CompiledGraph<S>,
    runtime: Option<&tokio::runtime::Runtime>,
    input: S::Update,
) -> S {
    match runtime {
        None => graph
            .invoke_blocking(graphkit::RunInput::Update(input), run_config())
            .and_then(graphkit::Outcome::finished)
            .expect("the graph runs"),
        Some(runtime) => {
            let graph = graph.clone();
            runtime
                .block_on(runtime.spawn(async move {
                    graph
                        .invoke_with(graphkit::RunInput::Update(input), run_config())
                        .await
                }))
                .expect("the task joins")
                .and_then(graphkit::Outcome::finished)
                .expect("the graph runs")
        }
    }
}

/// `START → t_i` for `width` nodes, each appending its index: one super-step of `width` tasks.
fn one_step(width: usize, mode: Mode) -> CompiledGraph<Wide> {
    let mut graph = StateGraph::<Wide>::new();
    for i in 0..width {
        let name = format!("t_{i:04}");
        let value = i as i64;
        match mode {
            Mode::Sync => graph.add_node(
                &name,
                SyncNode::new(move |_: &Wide| WideUpdate::new().items(vec![value])),
            ),
            Mode::Async => graph.add_node(&name, move |_: Arc<Wide>| async move {
                WideUpdate::new().items(vec![value])
            }),
        };
        graph.add_edge(START, &name).add_edge(name.as_str(), END);
    }
    graph.compile().expect("a valid graph")
}

/// `START →? n Sends to work`, `work → END`.
fn send_fanout(mode: Mode) -> CompiledGraph<Wide> {
    let mut graph = StateGraph::<Wide>::new();
    match mode {
        Mode::Sync => graph.add_node(
            "work",
            SyncNodeWithContext::new(|_: &Wide, ctx: &NodeContext| {
                WideUpdate::new().items(vec![ctx.input::<i64>().copied().unwrap_or(-1)])
            }),
        ),
        Mode::Async => graph.add_node("work", |Input(i): Input<i64>| async move {
            WideUpdate::new().items(vec![i])
        }),
    };
    graph
        .add_conditional_edges(
            START,
            |s: &Wide| (0..s.n).map(|i| SendTo::new("work", i)).collect::<Vec<_>>(),
            ["work"],
        )
        .add_edge("work", END);
    graph.compile().expect("a valid graph")
}

/// One node looping on itself through a conditional edge for `steps` steps.
fn conditional_loop(steps: i64, mode: Mode) -> CompiledGraph<Wide> {
    let mut graph = StateGraph::<Wide>::new();
    let bump = |s: &Wide| WideUpdate::new().n(s.n + 1);
    match mode {
        Mode::Sync => graph.add_node("step", SyncNode::new(bump)),
        Mode::Async => graph.add_node("step", move |s: Arc<Wide>| async move { bump(&s) }),
    };
    graph.add_edge(START, "step").add_conditional_edges(
        "step",
        move |s: &Wide| if s.n < steps { "step" } else { END },
        ["step", END],
    );
    graph.compile().expect("a valid graph")
}

fn superstep(c: &mut Criterion) {
    let mut group = c.benchmark_group("superstep");
    for flavor in Flavor::ALL {
        let runtime = flavor.runtime();
        for width in [1, 10, 100, 1000] {
            let graph = one_step(width, flavor.mode());
            group.throughput(Throughput::Elements(width as u64));
            group.bench_with_input(BenchmarkId::new(flavor.name(), width), &width, |b, _| {
                b.iter(|| invoke(&graph, runtime.as_ref(), WideUpdate::new()));
            });
        }
    }
    group.finish();
}

fn fanout(c: &mut Criterion) {
    let mut group = c.benchmark_group("send_fanout");
    for flavor in Flavor::ALL {
        let runtime = flavor.runtime();
        let graph = send_fanout(flavor.mode());
        for width in [10_i64, 100, 1000] {
            group.throughput(Throughput::Elements(width as u64));
            group.bench_with_input(
                BenchmarkId::new(flavor.name(), width),
                &width,
                |b, &width| {
                    b.iter(|| invoke(&graph, runtime.as_ref(), WideUpdate::new().n(width)));
                },
            );
        }
    }
    group.finish();
}

/// 100 steps routed by static edges (W1's chain) and by a conditional edge (a self-loop).
fn routing(c: &mut Criterion) {
    let mut group = c.benchmark_group("routing_100_steps");
    group.throughput(Throughput::Elements(100));
    for flavor in [Flavor::Sync, Flavor::Current] {
        let runtime = flavor.runtime();
        let chain = sequential::graph(100, flavor.mode()).expect("a valid graph");
        group.bench_function(BenchmarkId::new("static_edges", flavor.name()), |b| {
            b.iter(|| invoke(&chain, runtime.as_ref(), sequential::input()));
        });
        let looped = conditional_loop(100, flavor.mode());
        group.bench_function(BenchmarkId::new("conditional_edge", flavor.name()), |b| {
            b.iter(|| invoke(&looped, runtime.as_ref(), WideUpdate::new()));
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
}

criterion_group! {
    name = scheduling;
    config = config();
    targets = superstep, fanout, routing
}
criterion_main!(scheduling);
