//! W8 `concurrent`: C independent invocations of a three-node graph at once (or one after
//! another, for the serial baseline).

use std::sync::Arc;
use std::time::{Duration, Instant};

use graphkit::{CompiledGraph, END, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

use crate::case::{
    AsyncRuntime, BLOCKING_RUNTIME, BenchError, Case, Mode, Prepared, RuntimeInfo, Sample,
    run_config,
};
use crate::checksum::{Checksum, csv, fnv};
use crate::measure::process_cpu_time;

/// W8's state.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Small {
    /// `a`: +1, `b`: ×2, `c`: +3.
    pub x: i64,
    /// The nodes that ran, in order.
    #[reducer(append)]
    pub trace: Vec<String>,
}

/// What each node does before its update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Nothing: pure CPU.
    Cpu,
    /// Awaits a 5 ms sleep (simulated I/O).
    Io5ms,
}

fn a(s: &Small) -> SmallUpdate {
    SmallUpdate::new().x(s.x + 1).trace(vec!["a".to_owned()])
}

fn b(s: &Small) -> SmallUpdate {
    SmallUpdate::new().x(s.x * 2).trace(vec!["b".to_owned()])
}

fn c(s: &Small) -> SmallUpdate {
    SmallUpdate::new().x(s.x + 3).trace(vec!["c".to_owned()])
}

/// `START → a → b → c → END`: sync nodes for `sync`, async nodes (sleeping first for
/// [`Work::Io5ms`]) for `async`.
pub fn builder(mode: Mode, work: Work) -> StateGraph<Small> {
    let mut graph = StateGraph::<Small>::new();
    type NodeFn = fn(&Small) -> SmallUpdate;
    let nodes: [(&str, NodeFn); 3] = [("a", a), ("b", b), ("c", c)];
    for (name, f) in nodes {
        match (mode, work) {
            (Mode::Sync, _) => graph.add_node(name, SyncNode::new(f)),
            (Mode::Async, Work::Cpu) => {
                graph.add_node(name, move |s: Arc<Small>| async move { f(&s) })
            }
            (Mode::Async, Work::Io5ms) => graph.add_node(name, move |s: Arc<Small>| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                f(&s)
            }),
        };
    }
    graph
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END);
    graph
}

/// [`builder`], compiled.
pub fn graph(mode: Mode, work: Work) -> Result<CompiledGraph<Small>, graphkit::BuildError> {
    builder(mode, work).compile()
}

/// `{"invocations", "sum_x", "total_trace", "fnv_x", "all_traces_abc"}` in invocation order.
pub fn checksum(states: &[Small]) -> Checksum {
    let xs: Vec<i64> = states.iter().map(|s| s.x).collect();
    Checksum::new()
        .with("invocations", states.len())
        .with("sum_x", xs.iter().sum::<i64>())
        .with(
            "total_trace",
            states.iter().map(|s| s.trace.len()).sum::<usize>(),
        )
        .with("fnv_x", fnv(&csv(&xs)))
        .with(
            "all_traces_abc",
            states.iter().all(|s| s.trace == ["a", "b", "c"]),
        )
}

/// Invocation `i`'s input and config (thread id `r{run}-t{i}`).
fn inputs(count: usize, run: usize) -> Vec<(SmallUpdate, graphkit::RunConfig)> {
    (0..count)
        .map(|i| {
            let input = SmallUpdate::new().x(i as i64).trace(Vec::new());
            (input, run_config().thread_id(format!("r{run}-t{i}")))
        })
        .collect()
}

/// C concurrent `invoke_with`s, one tokio task each, on the async runtime.
struct Concurrent {
    graph: CompiledGraph<Small>,
    count: usize,
    runs: usize,
    runtime: tokio::runtime::Runtime,
    choice: AsyncRuntime,
    info: RuntimeInfo,
}

impl Prepared for Concurrent {
    fn runtime(&self) -> RuntimeInfo {
        self.info
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        self.runs += 1;
        let batch = inputs(self.count, self.runs);
        let graph = self.graph.clone();
        let (wall, cpu, states) = self.choice.run(&self.runtime, async move {
            let cpu_start = process_cpu_time();
            let start = Instant::now();
            let handles: Vec<_> = batch
                .into_iter()
                .map(|(input, config)| {
                    let graph = graph.clone();
                    tokio::spawn(async move { graph.invoke_with(input, config).await })
                })
                .collect();
            let mut states = Vec::with_capacity(handles.len());
            for handle in handles {
                states.push(handle.await);
            }
            (
                start.elapsed(),
                process_cpu_time().saturating_sub(cpu_start),
                states,
            )
        })?;
        let states = states
            .into_iter()
            .map(|joined| Ok(joined??.finished()?))
            .collect::<Result<Vec<_>, BenchError>>()?;
        Ok(Sample {
            wall,
            cpu,
            checksum: checksum(&states),
        })
    }
}

/// C blocking `invoke_blocking`s one after another.
struct Serial {
    graph: CompiledGraph<Small>,
    count: usize,
    runs: usize,
}

impl Prepared for Serial {
    fn runtime(&self) -> RuntimeInfo {
        BLOCKING_RUNTIME
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        self.runs += 1;
        let batch = inputs(self.count, self.runs);
        let mut states = Vec::with_capacity(self.count);
        let cpu_start = process_cpu_time();
        let start = Instant::now();
        for (input, config) in batch {
            states.push(self.graph.invoke_blocking(input, config));
        }
        let wall = start.elapsed();
        let cpu = process_cpu_time().saturating_sub(cpu_start);
        let states = states
            .into_iter()
            .map(|outcome| Ok(outcome?.finished()?))
            .collect::<Result<Vec<_>, BenchError>>()?;
        Ok(Sample {
            wall,
            cpu,
            checksum: checksum(&states),
        })
    }
}

/// `concurrent_{count}_{cpu|io5ms}`, or with `memory` `concurrent_{count}_cpu_memory`
/// (an in-memory checkpointer, one thread per invocation).
pub fn concurrent_case(count: usize, work: Work, memory: bool) -> Case {
    let suffix = match (work, memory) {
        (Work::Cpu, false) => "cpu",
        (Work::Cpu, true) => "cpu_memory",
        (Work::Io5ms, _) => "io5ms",
    };
    let case = Case::new(
        format!("concurrent_{count}_{suffix}"),
        "concurrent",
        Mode::Async,
        move || {
            let choice = AsyncRuntime::from_env();
            let (runtime, info) = choice.build()?;
            let builder = builder(Mode::Async, work);
            let graph = if memory {
                let saver: Arc<dyn graphkit::checkpoint::Checkpointer> =
                    Arc::new(graphkit::checkpoint::InMemorySaver::new());
                builder.compile_with(graphkit::CompileOptions::new().checkpointer(saver))?
            } else {
                builder.compile()?
            };
            Ok(Box::new(Concurrent {
                graph,
                count,
                runs: 0,
                runtime,
                choice,
                info,
            }) as Box<dyn Prepared>)
        },
    )
    .param("C", count as i64)
    .steps(3)
    .items(count as u64, "invocation")
    .slow();
    if memory {
        case.checkpointer("memory", Some("sync"))
    } else {
        case
    }
}

/// `serial_{count}_sync`.
pub fn serial_case(count: usize) -> Case {
    Case::new(
        format!("serial_{count}_sync"),
        "concurrent",
        Mode::Sync,
        move || {
            Ok(Box::new(Serial {
                graph: graph(Mode::Sync, Work::Cpu)?,
                count,
                runs: 0,
            }) as Box<dyn Prepared>)
        },
    )
    .param("C", count as i64)
    .steps(3)
    .items(count as u64, "invocation")
    .slow()
}
