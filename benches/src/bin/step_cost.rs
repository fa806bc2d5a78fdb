//! `step_cost`: the engine's cost per super-step and per `Send` task, as heap allocations
//! (exact, whatever the load of the machine) and wall time.
//!
//! ```sh
//! # the table: allocations per step / task, and median µs per step / task
//! cargo run --release -p graphkit-benches --bin step_cost
//! # instruction counts: (I(reps=11) - I(reps=1)) / (10 n) is the instructions per step
//! # (or per task) of one invocation, graph building excluded
//! valgrind --tool=callgrind target/release/step_cost --run seq_sync --n 1000 --reps 11
//! ```
//!
//! Per-step figures are differences between a long and a short run of the same graph
//! (`n` = 1000 and 100), so building the graph, starting the run and the first checkpoint
//! cancel out.

use std::alloc::System;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use graphkit::checkpoint::{Checkpointer, InMemorySaver, SqliteSaver, SqliteSync};
use graphkit::{CompileOptions, CompiledGraph, Durability, RunInput};
use graphkit_benches::case::run_config;
use graphkit_benches::workloads::{fanout_send, sequential};
use graphkit_benches::{BenchError, Mode};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const CASES: &[(&str, &str)] = &[
    (
        "seq_sync",
        "W1 chain, sync nodes, invoke_blocking: per step",
    ),
    (
        "seq_async",
        "W1 chain, async nodes, current-thread runtime: per step",
    ),
    (
        "send_sync",
        "W3 Send fan-out, sync nodes, invoke_blocking: per task",
    ),
    (
        "send_async",
        "W3 Send fan-out, async nodes, current-thread runtime: per task",
    ),
    (
        "send_async_multi",
        "W3 Send fan-out, async nodes, 2-worker runtime: per task",
    ),
    (
        "spawn_join_multi",
        "baseline: tokio::spawn + join of a trivial task, 2-worker runtime: per task",
    ),
    (
        "ckpt_memory",
        "W1 chain + InMemorySaver, Durability::Sync: per step",
    ),
    (
        "ckpt_sqlitenormal",
        "W1 chain + SqliteSaver synchronous=NORMAL, Durability::Sync: per step",
    ),
    (
        "sqlite_direct",
        "baseline: the same row inserted and committed by hand (rusqlite, WAL, synchronous=NORMAL): per step",
    ),
];

/// One prepared case: runs the graph with size `n` once.
struct Runner {
    name: &'static str,
    runtime: Option<tokio::runtime::Runtime>,
    dir: tempfile::TempDir,
    runs: usize,
}

fn allocations() -> u64 {
    let stats = GLOBAL.stats();
    (stats.allocations + stats.reallocations) as u64
}

impl Runner {
    fn new(name: &'static str) -> Result<Self, BenchError> {
        let runtime = match name {
            "seq_sync" | "send_sync" => None,
            "send_async_multi" | "spawn_join_multi" => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()?,
            ),
            _ => Some(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?,
            ),
        };
        Ok(Self {
            name,
            runtime,
            dir: tempfile::tempdir()?,
            runs: 0,
        })
    }

    fn block_on<F: Future + Send + 'static>(&self, future: F) -> Result<F::Output, BenchError>
    where
        F::Output: Send + 'static,
    {
        let runtime = self
            .runtime
            .as_ref()
            .ok_or_else(|| BenchError::Usage(format!("case `{}` has no runtime", self.name)))?;
        // On the multi-thread runtime the run goes to a worker, as in the workload suite.
        if self.name.ends_with("_multi") {
            let handle = runtime.spawn(future);
            return Ok(runtime.block_on(handle)?);
        }
        Ok(runtime.block_on(future))
    }

    /// Builds untimed what runs of size `n` need (the graph); the returned closure runs
    /// it once and returns (allocations, wall time) of the run alone.
    fn prepare(&mut self, n: usize) -> Result<RunFn<'_>, BenchError> {
        Ok(match self.name {
            "seq_sync" => {
                let graph = sequential::graph(n, Mode::Sync)?;
                Box::new(move || {
                    measure(|| {
                        graph
                            .invoke_blocking(RunInput::Update(sequential::input()), run_config())
                            .map(|s| check(s.into_state().counter, n))
                    })
                })
            }
            "send_sync" => {
                let graph = fanout_send::graph(Mode::Sync)?;
                Box::new(move || {
                    measure(|| {
                        graph
                            .invoke_blocking(RunInput::Update(send_input(n)), run_config())
                            .map(|s| check(s.into_state().count, n))
                    })
                })
            }
            "seq_async" => {
                let graph = sequential::graph(n, Mode::Async)?;
                Box::new(move || {
                    let graph = graph.clone();
                    self.block_on(async move {
                        measure_async(graph, sequential::input(), run_config(), move |s| {
                            check(s.counter, n)
                        })
                        .await
                    })?
                })
            }
            "send_async" | "send_async_multi" => {
                let graph = fanout_send::graph(Mode::Async)?;
                Box::new(move || {
                    let graph = graph.clone();
                    self.block_on(async move {
                        measure_async(graph, send_input(n), run_config(), move |s| {
                            check(s.count, n)
                        })
                        .await
                    })?
                })
            }
            "spawn_join_multi" => Box::new(move || {
                self.block_on(async move {
                    let before = allocations();
                    let start = Instant::now();
                    let handles: Vec<_> = (0..n)
                        .map(|i| tokio::spawn(async move { std::hint::black_box(i) }))
                        .collect();
                    let mut sum = 0;
                    for handle in handles {
                        sum += handle.await?;
                    }
                    let wall = start.elapsed();
                    check(sum as i64, n * (n - 1) / 2)?;
                    Ok((allocations() - before, wall))
                })?
            }),
            "ckpt_memory" | "ckpt_sqlitenormal" => Box::new(move || {
                // A fresh saver (and database file) and thread per run, as in W7.
                self.runs += 1;
                let path = self.dir.path().join(format!("run-{}.sqlite", self.runs));
                let sqlite = self.name == "ckpt_sqlitenormal";
                let thread = format!("step-cost-{}", self.runs);
                self.block_on(async move {
                    let saver: Arc<dyn Checkpointer> = if sqlite {
                        Arc::new(open_sqlite(&path).await?)
                    } else {
                        Arc::new(InMemorySaver::new())
                    };
                    let graph = sequential::builder(n, Mode::Sync)
                        .compile_with(CompileOptions::new().checkpointer(saver))?;
                    let config = run_config().thread_id(thread).durability(Durability::Sync);
                    measure_async(graph, sequential::input(), config, move |s| {
                        check(s.counter, n)
                    })
                    .await
                })?
            }),
            "sqlite_direct" => Box::new(move || {
                self.runs += 1;
                let path = self.dir.path().join(format!("direct-{}.sqlite", self.runs));
                let connection = direct::open(&path)?;
                let before = allocations();
                let start = Instant::now();
                for step in 0..n {
                    direct::insert(&connection, step)?;
                }
                Ok((allocations() - before, start.elapsed()))
            }),
            other => return Err(BenchError::Usage(format!("unknown case `{other}`"))),
        })
    }
}

/// The `sqlite_direct` baseline: a checkpoint-shaped row per step, written with SQLite's
/// own API on this thread, prepared statement cached, autocommit.
mod direct {
    use std::path::Path;

    use rusqlite::{Connection, params};

    const INSERT: &str = "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, \
         format_version, step, source, created_at_ms, metadata, is_snapshot, payload) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

    pub fn open(path: &Path) -> rusqlite::Result<Connection> {
        let connection = Connection::open(path)?;
        connection.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(()))?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        connection.execute_batch(
            "CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL, \
             checkpoint_id TEXT NOT NULL, parent_id TEXT, format_version INTEGER NOT NULL, \
             step INTEGER NOT NULL, source TEXT NOT NULL, created_at_ms INTEGER NOT NULL, \
             metadata TEXT NOT NULL, is_snapshot INTEGER NOT NULL, payload BLOB NOT NULL, \
             PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id))",
        )?;
        Ok(connection)
    }

    pub fn insert(connection: &Connection, step: usize) -> rusqlite::Result<()> {
        let step = step as i64;
        connection.prepare_cached(INSERT)?.execute(params![
            "step-cost",
            "",
            format!("{step:020}"),
            format!("{:020}", step - 1),
            1,
            step,
            "loop",
            0,
            r#"{"source":"loop","step":1}"#,
            false,
            [0u8; 48].as_slice(),
        ])?;
        Ok(())
    }
}

type RunFn<'a> = Box<dyn FnMut() -> Result<(u64, Duration), BenchError> + 'a>;

async fn open_sqlite(path: &Path) -> Result<SqliteSaver, BenchError> {
    Ok(SqliteSaver::open_with(path, SqliteSync::Normal).await?)
}

fn send_input(n: usize) -> fanout_send::MapReduceUpdate {
    fanout_send::MapReduceUpdate::new()
        .n(n as i64)
        .items(Vec::new())
        .total(0)
        .count(0)
}

fn check(got: i64, want: usize) -> Result<(), graphkit::Error> {
    if got == want as i64 {
        Ok(())
    } else {
        Err(graphkit::Error::Runtime(format!(
            "wrong result: {got}, expected {want}"
        )))
    }
}

fn measure(
    run: impl FnOnce() -> Result<Result<(), graphkit::Error>, graphkit::Error>,
) -> Result<(u64, Duration), BenchError> {
    let before = allocations();
    let start = Instant::now();
    let outcome = run();
    let wall = start.elapsed();
    let count = allocations() - before;
    outcome??;
    Ok((count, wall))
}

async fn measure_async<S: graphkit::State>(
    graph: CompiledGraph<S>,
    input: S::Update,
    config: graphkit::RunConfig,
    check: impl FnOnce(&S) -> Result<(), graphkit::Error>,
) -> Result<(u64, Duration), BenchError> {
    let before = allocations();
    let start = Instant::now();
    let state = graph.invoke_with(RunInput::Update(input), config).await;
    let wall = start.elapsed();
    let count = allocations() - before;
    check(&state?.finished()?)?;
    Ok((count, wall))
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() -> Result<(), BenchError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(case) = arg("--run") {
        let name = CASES
            .iter()
            .map(|(name, _)| *name)
            .find(|name| *name == case)
            .ok_or_else(|| BenchError::Usage(format!("unknown case `{case}`")))?;
        let n = arg("--n").and_then(|n| n.parse().ok()).unwrap_or(1000);
        let reps: usize = arg("--reps").and_then(|n| n.parse().ok()).unwrap_or(1);
        let mut runner = Runner::new(name)?;
        let mut run = runner.prepare(n)?;
        for _ in 0..reps {
            run()?;
        }
        return Ok(());
    }
    let (small, big) = (100, 1000);
    let reps: usize = arg("--reps").and_then(|n| n.parse().ok()).unwrap_or(31);
    println!("| case | allocations | median µs | what |");
    println!("|---|---:|---:|---|");
    for &(name, what) in CASES {
        let mut runner = Runner::new(name)?;
        let (a_small, _) = {
            let mut run = runner.prepare(small)?;
            run()?; // warm-up: first-use costs of the runtime and allocator
            run()?
        };
        let mut run = runner.prepare(big)?;
        run()?;
        let (a_big, _) = run()?;
        let per_alloc = (a_big as f64 - a_small as f64) / (big - small) as f64;
        let slow = name.starts_with("ckpt_sqlite");
        let reps = if slow { reps.min(5) } else { reps };
        let mut walls = Vec::with_capacity(reps);
        for _ in 0..reps {
            walls.push(run()?.1);
        }
        let per_us = median(walls).as_secs_f64() * 1e6 / big as f64;
        println!("| `{name}` | {per_alloc:.2} | {per_us:.3} | {what} |");
    }
    Ok(())
}
