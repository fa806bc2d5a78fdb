//! W7 `checkpoint`: W1 (N = 100), W4 (K = 200) and W5 re-run with a checkpointer, in sync
//! mode, with a fresh thread id per run; and W8's `concurrent_1000_cpu_memory`.
//!
//! What graphkit can run today: the in-memory saver (`memory`), which serialises every
//! checkpoint and pending write to bytes as LangGraph's does. graphkit persists each
//! step's checkpoint before the next step starts, which is the spec's `sync` durability;
//! it has no `async` or `exit` durability, so those cases are not listed. The SQLite saver
//! (`sqlite`, `sqlitenormal`) is not in graphkit's committed tree yet; its cases are not
//! listed either. Nothing is reported for a case that is not listed.

use std::sync::Arc;
use std::time::Instant;

use graphkit::checkpoint::{Checkpointer, InMemorySaver, ListOptions};
use graphkit::{CompileOptions, CompiledGraph, State, StateGraph};

use crate::case::{
    BLOCKING_RUNTIME, BenchError, Case, CheckpointStats, Mode, Prepared, RuntimeInfo, Sample,
    run_config,
};
use crate::checksum::Checksum;
use crate::measure::process_cpu_time;
use crate::workloads::{react, sequential, wide_state};

type InputFn<S> = fn() -> <S as State>::Update;

/// One checkpointed graph, invoked blocking with a fresh thread id per run.
struct CheckpointRun<S: State> {
    graph: CompiledGraph<S>,
    saver: Arc<InMemorySaver>,
    input: InputFn<S>,
    checksum: fn(&S) -> Checksum,
    runs: usize,
}

impl<S: State> CheckpointRun<S> {
    fn new(
        builder: StateGraph<S>,
        input: InputFn<S>,
        checksum: fn(&S) -> Checksum,
    ) -> Result<Self, BenchError> {
        let saver = Arc::new(InMemorySaver::new());
        let graph = builder.compile_with(
            CompileOptions::new().checkpointer(saver.clone() as Arc<dyn Checkpointer>),
        )?;
        Ok(Self {
            graph,
            saver,
            input,
            checksum,
            runs: 0,
        })
    }

    fn thread(&self) -> String {
        format!("ckpt-{}", self.runs)
    }
}

impl<S: State> Prepared for CheckpointRun<S> {
    fn runtime(&self) -> RuntimeInfo {
        BLOCKING_RUNTIME
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        self.runs += 1;
        let input = (self.input)();
        let config = run_config().thread_id(self.thread());
        let cpu_start = process_cpu_time();
        let start = Instant::now();
        let state = self
            .graph
            .invoke_blocking(graphkit::RunInput::Update(input), config);
        let wall = start.elapsed();
        let cpu = process_cpu_time().saturating_sub(cpu_start);
        Ok(Sample {
            wall,
            cpu,
            checksum: (self.checksum)(&state?),
        })
    }

    fn checkpoint_stats(&mut self) -> Result<Option<CheckpointStats>, BenchError> {
        let thread = self.thread();
        let saver = Arc::clone(&self.saver);
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        let stats = runtime.block_on(async move {
            let records = saver.list(&thread, "", &ListOptions::default()).await?;
            let mut stats = CheckpointStats {
                checkpoints: records.len() as u64,
                ..CheckpointStats::default()
            };
            for record in &records {
                stats.payload_bytes += record.payload.len() as u64;
                if let Some(tuple) = saver.get(&thread, "", Some(&record.checkpoint_id)).await? {
                    stats.write_rows += tuple.pending_writes.len() as u64;
                    stats.payload_bytes += tuple
                        .pending_writes
                        .iter()
                        .map(|w| w.payload.len() as u64)
                        .sum::<u64>();
                }
            }
            Ok::<_, graphkit::Error>(stats)
        })?;
        Ok(Some(stats))
    }
}

fn case<S: State>(
    name: &str,
    workload: &'static str,
    builder: impl Fn() -> StateGraph<S> + Send + Sync + 'static,
    input: InputFn<S>,
    checksum: fn(&S) -> Checksum,
) -> Case {
    Case::new(name, workload, Mode::Sync, move || {
        Ok(Box::new(CheckpointRun::new(builder(), input, checksum)?) as Box<dyn Prepared>)
    })
    .checkpointer("memory", Some("sync"))
}

/// `ckpt_sequential_100_memory_sync`.
pub fn sequential_case() -> Case {
    case(
        "ckpt_sequential_100_memory_sync",
        "checkpoint",
        || sequential::builder(100, Mode::Sync),
        sequential::input,
        sequential::checksum,
    )
    .param("N", 100)
    .steps(100)
    .items(100, "node")
}

/// `ckpt_react_200_memory_sync`.
pub fn react_case() -> Case {
    case(
        "ckpt_react_200_memory_sync",
        "checkpoint",
        || react::builder(200, Mode::Sync),
        react::input,
        react::checksum,
    )
    .param("K", 200)
    .steps(401)
    .items(401, "node")
    .slow()
}

/// `ckpt_wide_state_100x50_memory_sync`.
pub fn wide_state_case() -> Case {
    case(
        "ckpt_wide_state_100x50_memory_sync",
        "checkpoint",
        || wide_state::builder(50, Mode::Sync),
        wide_state::input,
        wide_state::checksum,
    )
    .param("F", 100)
    .param("S", 50)
    .steps(50)
    .items(50, "node")
}
