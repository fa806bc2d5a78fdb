//! A case of the suite (WORKLOADS.md §10): what it is, and how to run it once, timed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use graphkit::{CompiledGraph, RunConfig, State};
use serde::{Deserialize, Serialize};

use crate::checksum::{Checksum, OrderedObject};
use crate::measure::process_cpu_time;

/// Errors of the suite.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A graph failed to run.
    #[error("graph error: {0}")]
    Graph(#[from] graphkit::Error),
    /// A graph failed to build.
    #[error("graph does not compile: {0}")]
    Build(#[from] graphkit::BuildError),
    /// A checkpointer used directly failed.
    #[error("storage error: {0}")]
    Storage(#[from] graphkit::error::StorageError),
    /// The tokio runtime could not be built, or a child process could not be started.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// A spawned tokio task failed.
    #[error("task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
    /// A child process (one case) failed or printed something unreadable.
    #[error("case `{case}`: {message}")]
    Child {
        /// The case.
        case: String,
        /// What went wrong.
        message: String,
    },
    /// A command-line argument is wrong.
    #[error("{0}")]
    Usage(String),
    /// The `sqlite_direct` baseline's own SQLite calls failed.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// How a case invokes its graph (WORKLOADS.md §0 "Modes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// `invoke_blocking` with `SyncNode`s, on the calling thread.
    Sync,
    /// `invoke_with(..).await` with async nodes, on the suite's async runtime.
    Async,
}

impl Mode {
    /// `"sync"` or `"async"`, as in case names.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Async => "async",
        }
    }
}

/// The tokio runtime a case ran on (recorded in the result's `env`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RuntimeInfo {
    /// `current_thread` or `multi_thread`.
    pub flavor: &'static str,
    /// Threads that run tasks (1 for current-thread).
    pub worker_threads: usize,
    /// Which graphkit entry point the timer wraps.
    pub entry: &'static str,
}

/// Which tokio runtime async cases use; chosen with `--runtime` (the parent passes it to
/// every child in [`RUNTIME_ENV`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsyncRuntime {
    /// One thread: every task of the run on the thread that drives it (like one asyncio loop).
    CurrentThread,
    /// A work-stealing pool with one worker per CPU; the run itself is spawned onto it.
    MultiThread,
}

/// Environment variable that carries the async runtime choice to child processes.
pub const RUNTIME_ENV: &str = "GRAPHKIT_BENCH_RUNTIME";

impl AsyncRuntime {
    /// Parses `current` or `multi`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "current" | "current_thread" => Some(Self::CurrentThread),
            "multi" | "multi_thread" => Some(Self::MultiThread),
            _ => None,
        }
    }

    /// The name `--runtime` takes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CurrentThread => "current",
            Self::MultiThread => "multi",
        }
    }

    /// The choice in [`RUNTIME_ENV`], or the default (multi-thread).
    pub fn from_env() -> Self {
        std::env::var(RUNTIME_ENV)
            .ok()
            .and_then(|v| Self::parse(&v))
            .unwrap_or(Self::MultiThread)
    }

    /// Builds the runtime (timers enabled) and describes it.
    pub fn build(self) -> Result<(tokio::runtime::Runtime, RuntimeInfo), BenchError> {
        match self {
            Self::CurrentThread => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                Ok((
                    runtime,
                    RuntimeInfo {
                        flavor: "current_thread",
                        worker_threads: 1,
                        entry: "invoke_with",
                    },
                ))
            }
            Self::MultiThread => {
                let workers = crate::measure::nproc();
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(workers)
                    .enable_all()
                    .build()?;
                Ok((
                    runtime,
                    RuntimeInfo {
                        flavor: "multi_thread",
                        worker_threads: workers,
                        entry: "invoke_with",
                    },
                ))
            }
        }
    }

    /// Runs `future` on `runtime`: spawned onto the workers for a multi-thread runtime (so
    /// the run lives where a server's request would), directly for a current-thread one.
    pub fn run<T: Send + 'static>(
        self,
        runtime: &tokio::runtime::Runtime,
        future: impl Future<Output = T> + Send + 'static,
    ) -> Result<T, BenchError> {
        match self {
            Self::CurrentThread => Ok(runtime.block_on(future)),
            Self::MultiThread => Ok(runtime.block_on(runtime.spawn(future))?),
        }
    }
}

/// The runtime description of `sync` cases: `invoke_blocking` drives the run on graphkit's
/// per-thread current-thread runtime, and sync nodes run inline.
pub const BLOCKING_RUNTIME: RuntimeInfo = RuntimeInfo {
    flavor: "current_thread",
    worker_threads: 1,
    entry: "invoke_blocking",
};

/// One timed invocation.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Wall time of the invoke call (or of the whole batch for W8).
    pub wall: Duration,
    /// Process CPU time over the same interval, all threads.
    pub cpu: Duration,
    /// The checksum of the final state, computed after the timer stopped.
    pub checksum: Checksum,
}

/// W7's `checkpoint_stats`: what the last invocation persisted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointStats {
    /// Checkpoints written by one invocation.
    pub checkpoints: u64,
    /// Pending-write rows written by one invocation.
    pub write_rows: u64,
    /// Size of the database file after one invocation (0 for in-memory savers).
    pub db_bytes: u64,
    /// Serialised bytes of the checkpoint and write payloads of one invocation.
    pub payload_bytes: u64,
}

/// A case whose graph is built: each call to [`run`](Prepared::run) builds the input
/// (untimed), times one invocation, and checksums the result (untimed).
pub trait Prepared {
    /// The runtime the timed call uses.
    fn runtime(&self) -> RuntimeInfo;

    /// One timed invocation.
    fn run(&mut self) -> Result<Sample, BenchError>;

    /// What the last invocation persisted (checkpointed cases only), measured untimed.
    fn checkpoint_stats(&mut self) -> Result<Option<CheckpointStats>, BenchError> {
        Ok(None)
    }
}

/// The run config of every case: the recursion limit raised to 10^6 (WORKLOADS.md §0).
pub fn run_config() -> RunConfig {
    RunConfig::new().recursion_limit(1_000_000)
}

type InputFn<S> = Box<dyn Fn() -> <S as State>::Update + Send + Sync>;
type ChecksumFn<S> = fn(&S) -> Checksum;

/// Runs one compiled graph per sample: blocking for `sync`, awaited for `async`.
pub struct GraphRun<S: State> {
    graph: CompiledGraph<S>,
    input: InputFn<S>,
    checksum: ChecksumFn<S>,
    runtime: Option<(tokio::runtime::Runtime, AsyncRuntime, RuntimeInfo)>,
}

impl<S: State> GraphRun<S> {
    /// A run of `graph` in `mode`, with the input made by `input` and the final state
    /// summarised by `checksum`.
    pub fn new(
        mode: Mode,
        graph: CompiledGraph<S>,
        input: impl Fn() -> S::Update + Send + Sync + 'static,
        checksum: ChecksumFn<S>,
    ) -> Result<Self, BenchError> {
        let runtime = match mode {
            Mode::Sync => None,
            Mode::Async => {
                let choice = AsyncRuntime::from_env();
                let (runtime, info) = choice.build()?;
                Some((runtime, choice, info))
            }
        };
        Ok(Self {
            graph,
            input: Box::new(input),
            checksum,
            runtime,
        })
    }
}

impl<S: State> Prepared for GraphRun<S> {
    fn runtime(&self) -> RuntimeInfo {
        self.runtime
            .as_ref()
            .map_or(BLOCKING_RUNTIME, |(_, _, info)| *info)
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        let input = (self.input)();
        let config = run_config();
        let (wall, cpu, state) = match &self.runtime {
            None => {
                let cpu_start = process_cpu_time();
                let start = Instant::now();
                let state = self
                    .graph
                    .invoke_blocking(graphkit::RunInput::Update(input), config);
                let wall = start.elapsed();
                (wall, process_cpu_time().saturating_sub(cpu_start), state)
            }
            Some((runtime, choice, _)) => {
                let graph = self.graph.clone();
                choice.run(runtime, async move {
                    let cpu_start = process_cpu_time();
                    let start = Instant::now();
                    let state = graph
                        .invoke_with(graphkit::RunInput::Update(input), config)
                        .await;
                    let wall = start.elapsed();
                    (wall, process_cpu_time().saturating_sub(cpu_start), state)
                })?
            }
        };
        let state = state?.finished()?;
        Ok(Sample {
            wall,
            cpu,
            checksum: (self.checksum)(&state),
        })
    }
}

type PrepareFn = Arc<dyn Fn() -> Result<Box<dyn Prepared>, BenchError> + Send + Sync>;

/// One case of WORKLOADS.md §10: its description and how to prepare it.
#[derive(Clone)]
pub struct Case {
    /// The case name, e.g. `sequential_100_sync`.
    pub name: String,
    /// The workload, e.g. `sequential`.
    pub workload: &'static str,
    /// The workload's parameters, e.g. `{"N": 100}`.
    pub params: OrderedObject,
    /// Blocking or async.
    pub mode: Mode,
    /// `none`, `memory`, `sqlite` or `sqlitenormal`.
    pub checkpointer: &'static str,
    /// The checkpoint durability (W7 only).
    pub durability: Option<&'static str>,
    /// Super-steps that run user nodes, per invocation.
    pub steps: u64,
    /// What `per_item_us` divides by.
    pub items: u64,
    /// What an item is (`node`, `item`, `invocation`, ...).
    pub item_unit: &'static str,
    /// Slow cases get 1 warm-up and 5 runs instead of 2 and 9 (§9.3, §9.4).
    pub slow: bool,
    /// The checksum the final state must have.
    pub expected: Checksum,
    prepare: PrepareFn,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case")
            .field("name", &self.name)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Case {
    /// A case with no checkpointer, 2 warm-ups and 9 runs; set the rest with the builders.
    pub fn new(
        name: impl Into<String>,
        workload: &'static str,
        mode: Mode,
        prepare: impl Fn() -> Result<Box<dyn Prepared>, BenchError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            workload,
            params: OrderedObject::new(),
            mode,
            checkpointer: "none",
            durability: None,
            steps: 0,
            items: 0,
            item_unit: "node",
            slow: false,
            expected: Checksum::new(),
            prepare: Arc::new(prepare),
        }
    }

    /// Adds a parameter.
    #[must_use]
    pub fn param(mut self, key: &str, value: i64) -> Self {
        self.params = self.params.with(key, value);
        self
    }

    /// Super-steps per invocation.
    #[must_use]
    pub fn steps(mut self, steps: u64) -> Self {
        self.steps = steps;
        self
    }

    /// Items per invocation and what they are.
    #[must_use]
    pub fn items(mut self, items: u64, unit: &'static str) -> Self {
        self.items = items;
        self.item_unit = unit;
        self
    }

    /// Marks the case slow (1 warm-up, 5 runs).
    #[must_use]
    pub fn slow(mut self) -> Self {
        self.slow = true;
        self
    }

    /// Sets the checkpointer and durability (W7).
    #[must_use]
    pub fn checkpointer(mut self, saver: &'static str, durability: Option<&'static str>) -> Self {
        self.checkpointer = saver;
        self.durability = durability;
        self
    }

    /// Sets the expected checksum.
    #[must_use]
    pub fn expect(mut self, checksum: Checksum) -> Self {
        self.expected = checksum;
        self
    }

    /// Sets the expected checksum from its text as WORKLOADS.md prints it.
    ///
    /// # Panics
    /// If `text` is not a JSON object: the literals are copied from the spec, and the
    /// unit tests check every one.
    #[must_use]
    pub fn expect_spec(self, text: &str) -> Self {
        let checksum: Checksum =
            serde_json::from_str(text).expect("a spec checksum literal is a JSON object");
        self.expect(checksum)
    }

    /// Untimed invocations before the timed ones.
    pub fn warmup(&self) -> usize {
        if self.slow { 1 } else { 2 }
    }

    /// Timed invocations per pass.
    pub fn runs(&self) -> usize {
        if self.slow { 5 } else { 9 }
    }

    /// Builds and compiles the graph (untimed).
    pub fn prepare(&self) -> Result<Box<dyn Prepared>, BenchError> {
        (self.prepare)()
    }
}

/// Shorthand for a case that runs one graph per sample.
pub fn graph_case<S: State>(
    name: impl Into<String>,
    workload: &'static str,
    mode: Mode,
    build: impl Fn(Mode) -> Result<CompiledGraph<S>, graphkit::BuildError> + Send + Sync + 'static,
    input: impl Fn() -> S::Update + Clone + Send + Sync + 'static,
    checksum: ChecksumFn<S>,
) -> Case {
    Case::new(name, workload, mode, move || {
        let run = GraphRun::new(mode, build(mode)?, input.clone(), checksum)?;
        Ok(Box::new(run) as Box<dyn Prepared>)
    })
}
