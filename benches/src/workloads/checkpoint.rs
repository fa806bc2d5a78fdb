//! W7 `checkpoint`: W1 (N = 100), W4 (K = 200) and W5 re-run with a checkpointer, with a
//! fresh thread id (and, for SQLite, a fresh database file whose schema is created before
//! the timer starts) per run; and W8's `concurrent_1000_cpu_memory`.
//!
//! Savers: `memory` (the in-memory saver, which serialises every checkpoint and pending
//! write to bytes, as LangGraph's does), `sqlite` (file-backed, WAL, `synchronous=FULL`)
//! and `sqlitenormal` (the same with `synchronous=NORMAL`). Durabilities map to graphkit's
//! `Durability::{Sync, Async, Exit}`.

use std::sync::Arc;
use std::time::Instant;

use std::path::{Path, PathBuf};

use graphkit::checkpoint::{Checkpointer, InMemorySaver, ListOptions, SqliteSaver, SqliteSync};
use graphkit::{CompileOptions, Durability, State, StateGraph};

use crate::case::{
    BenchError, Case, CheckpointStats, Mode, Prepared, RuntimeInfo, Sample, run_config,
};
use crate::checksum::Checksum;
use crate::measure::process_cpu_time;
use crate::workloads::{react, sequential, wide_state};

type InputFn<S> = fn() -> <S as State>::Update;

/// Which saver a case uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saver {
    /// `InMemorySaver`.
    Memory,
    /// `SqliteSaver`, `synchronous=FULL`.
    Sqlite,
    /// `SqliteSaver`, `synchronous=NORMAL`.
    SqliteNormal,
}

impl Saver {
    /// The saver's name in case names.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::Sqlite => "sqlite",
            Self::SqliteNormal => "sqlitenormal",
        }
    }
}

/// A case's durability, as named in WORKLOADS.md.
fn durability_name(durability: Durability) -> &'static str {
    match durability {
        Durability::Sync => "sync",
        Durability::Async => "async",
        Durability::Exit => "exit",
    }
}

/// What the last run wrote to: its saver, thread, and database file (SQLite only).
#[derive(Clone)]
struct LastRun {
    saver: Arc<dyn Checkpointer>,
    thread: String,
    sqlite: Option<(SqliteSaver, PathBuf)>,
}

/// One checkpointed graph, invoked with a fresh thread (and database) per run.
struct CheckpointRun<S: State> {
    builder: Box<dyn Fn() -> StateGraph<S>>,
    saver: Saver,
    durability: Durability,
    input: InputFn<S>,
    checksum: fn(&S) -> Checksum,
    runs: usize,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    last: Option<LastRun>,
}

impl<S: State> CheckpointRun<S> {
    fn db_path(&self) -> PathBuf {
        self.dir.path().join(format!("run-{}.sqlite", self.runs))
    }

    async fn open_sqlite(kind: Saver, path: &Path) -> Result<Option<SqliteSaver>, BenchError> {
        Ok(match kind {
            Saver::Memory => None,
            Saver::Sqlite => Some(SqliteSaver::open_with(path, SqliteSync::Full).await?),
            Saver::SqliteNormal => Some(SqliteSaver::open_with(path, SqliteSync::Normal).await?),
        })
    }
}

impl<S: State> Prepared for CheckpointRun<S> {
    fn runtime(&self) -> RuntimeInfo {
        RuntimeInfo {
            flavor: "current_thread",
            worker_threads: 1,
            entry: "invoke_with (block_on)",
        }
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        self.runs += 1;
        // Untimed: a fresh saver (and database file with its schema), the graph, the input.
        let path = self.db_path();
        let sqlite = self
            .runtime
            .block_on(Self::open_sqlite(self.saver, &path))?;
        let saver: Arc<dyn Checkpointer> = match &sqlite {
            Some(sqlite) => Arc::new(sqlite.clone()),
            None => Arc::new(InMemorySaver::new()),
        };
        let graph = (self.builder)()
            .compile_with(CompileOptions::new().checkpointer(Arc::clone(&saver)))?;
        let thread = format!("ckpt-{}", self.runs);
        let config = run_config()
            .thread_id(thread.clone())
            .durability(self.durability);
        let input = (self.input)();
        let (wall, cpu, state) = self.runtime.block_on(async {
            let cpu_start = process_cpu_time();
            let start = Instant::now();
            let state = graph
                .invoke_with(graphkit::RunInput::Update(input), config)
                .await;
            (
                start.elapsed(),
                process_cpu_time().saturating_sub(cpu_start),
                state,
            )
        });
        self.last = Some(LastRun {
            saver,
            thread,
            sqlite: sqlite.map(|db| (db, path)),
        });
        Ok(Sample {
            wall,
            cpu,
            checksum: (self.checksum)(&state?.finished()?),
        })
    }

    fn checkpoint_stats(&mut self) -> Result<Option<CheckpointStats>, BenchError> {
        let Some(LastRun {
            saver,
            thread,
            sqlite,
        }) = self.last.clone()
        else {
            return Ok(None);
        };
        let mut stats = self.runtime.block_on(async move {
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
        if let Some((db, file)) = sqlite {
            // The database as it stands once closed: closing the last connection folds the
            // write-ahead log back into the file and removes it.
            self.runtime.block_on(db.close());
            let wal = file.with_extension("sqlite-wal");
            stats.db_bytes = [file, wal]
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
        }
        Ok(Some(stats))
    }
}

fn case<S: State>(
    workload: &'static str,
    prefix: &str,
    saver: Saver,
    durability: Durability,
    builder: fn() -> StateGraph<S>,
    input: InputFn<S>,
    checksum: fn(&S) -> Checksum,
) -> Case {
    let name = format!("{prefix}_{}_{}", saver.name(), durability_name(durability));
    Case::new(&name, workload, Mode::Sync, move || {
        Ok(Box::new(CheckpointRun {
            builder: Box::new(builder),
            saver,
            durability,
            input,
            checksum,
            runs: 0,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?,
            dir: tempfile::tempdir()?,
            last: None,
        }) as Box<dyn Prepared>)
    })
    .checkpointer(saver.name(), Some(durability_name(durability)))
}

/// `ckpt_sequential_100_{saver}_{durability}`.
pub fn sequential_case(saver: Saver, durability: Durability) -> Case {
    case(
        "checkpoint",
        "ckpt_sequential_100",
        saver,
        durability,
        || sequential::builder(100, Mode::Sync),
        sequential::input,
        sequential::checksum,
    )
    .param("N", 100)
    .steps(100)
    .items(100, "node")
}

/// `ckpt_react_200_{saver}_{durability}`.
pub fn react_case(saver: Saver, durability: Durability) -> Case {
    case(
        "checkpoint",
        "ckpt_react_200",
        saver,
        durability,
        || react::builder(200, Mode::Sync),
        react::input,
        react::checksum,
    )
    .param("K", 200)
    .steps(401)
    .items(401, "node")
    .slow()
}

/// `ckpt_wide_state_100x50_{saver}_{durability}`.
pub fn wide_state_case(saver: Saver, durability: Durability) -> Case {
    case(
        "checkpoint",
        "ckpt_wide_state_100x50",
        saver,
        durability,
        || wide_state::builder(50, Mode::Sync),
        wide_state::input,
        wide_state::checksum,
    )
    .param("F", 100)
    .param("S", 50)
    .steps(50)
    .items(50, "node")
}

/// Every W7 case of §10, in its order.
pub fn cases() -> Vec<(Case, &'static str)> {
    use Durability::{Async, Exit, Sync};
    let mut cases = Vec::new();
    for saver in [Saver::Memory, Saver::Sqlite] {
        for durability in [Sync, Async, Exit] {
            cases.push((sequential_case(saver, durability), "sequential"));
        }
    }
    cases.push((sequential_case(Saver::SqliteNormal, Sync), "sequential"));
    for saver in [Saver::Memory, Saver::Sqlite] {
        for durability in [Sync, Async, Exit] {
            cases.push((react_case(saver, durability), "react"));
        }
    }
    cases.push((react_case(Saver::SqliteNormal, Sync), "react"));
    for saver in [Saver::Memory, Saver::Sqlite, Saver::SqliteNormal] {
        cases.push((wide_state_case(saver, Sync), "wide_state"));
    }
    cases
}
