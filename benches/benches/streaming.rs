//! Streaming overhead: W1's 100-node chain run with `invoke` and with `stream` in each
//! mode; (stream − invoke) / events is the cost of one event.
//!
//! `cargo bench -p graphkit-benches --bench streaming`
#![allow(missing_docs)]

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use graphkit::streaming::StreamModes;
use graphkit::{CompiledGraph, END, START, StateGraph, StreamMode, StreamWriter};
use graphkit_benches::case::run_config;
use graphkit_benches::workloads::sequential::{Counter, CounterUpdate, input, node_name};

const NODES: usize = 100;

/// W1's chain whose nodes also write one custom event each.
fn chain() -> CompiledGraph<Counter> {
    let mut graph = StateGraph::<Counter>::new();
    for i in 0..NODES {
        let name = node_name(i);
        graph.add_node(
            &name,
            |state: Arc<Counter>, writer: StreamWriter| async move {
                writer.custom(state.counter);
                CounterUpdate::new().counter(state.counter + 1)
            },
        );
        if i > 0 {
            graph.add_edge(node_name(i - 1).as_str(), &name);
        }
    }
    graph
        .add_edge(START, &node_name(0))
        .add_edge(node_name(NODES - 1).as_str(), END);
    graph.compile().expect("a valid graph")
}

async fn drain(graph: &CompiledGraph<Counter>, modes: StreamModes) -> usize {
    let mut stream = graph.stream_with(input(), run_config(), modes);
    let mut events = 0;
    while let Some(event) = stream.next().await {
        event.expect("the run succeeds");
        events += 1;
    }
    events
}

fn streaming(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let graph = chain();
    let mut group = c.benchmark_group("stream_100_nodes");
    group.throughput(Throughput::Elements(NODES as u64));
    group.bench_function("invoke", |b| {
        b.iter(|| {
            runtime
                .block_on(graph.invoke_with(input(), run_config()))
                .expect("the run succeeds")
        });
    });
    for (name, modes) in [
        ("stream_no_mode", StreamModes::NONE),
        ("stream_updates", StreamModes::from(StreamMode::Updates)),
        ("stream_values", StreamModes::from(StreamMode::Values)),
        ("stream_custom", StreamModes::from(StreamMode::Custom)),
        ("stream_tasks", StreamModes::from(StreamMode::Tasks)),
    ] {
        group.bench_function(name, |b| b.iter(|| runtime.block_on(drain(&graph, modes))));
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
    name = benches;
    config = config();
    targets = streaming
}
criterion_main!(benches);
