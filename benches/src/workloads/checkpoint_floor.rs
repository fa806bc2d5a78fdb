//! The floors of W7's `ckpt_sequential_100_*_sync` cases (graphkit only): the checkpoint
//! rows such a run writes, inserted by hand with the database's own client, one committed
//! statement per row, with no graph, no encoding and no thread lock.
//!
//! The rows are the ones graphkit writes: the case runs W1 (N = 100) once, untimed, with
//! the in-memory saver and `Durability::Sync`, and keeps its 101 checkpoints (the input's
//! and one per step), oldest first. Each timed run inserts them into a fresh database
//! file (SQLite) or under a fresh thread id (PostgreSQL) with the savers' own `INSERT`
//! statement, prepared once, untimed. The checksum is the state the inserted rows hold,
//! read back untimed through the graph (`get_state`), so a floor that wrote something
//! else would fail it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use graphkit::checkpoint::{
    CheckpointRecord, Checkpointer, InMemorySaver, ListOptions, SqliteSaver, SqliteSync,
};
use graphkit::{CompileOptions, Durability, RunConfig};

use crate::case::{BenchError, Case, Mode, Prepared, RuntimeInfo, Sample, run_config};
use crate::measure::process_cpu_time;
use crate::workloads::checkpoint::Saver;
use crate::workloads::sequential;

/// The savers' `INSERT` of one checkpoint row (SQLite's placeholders), as graphkit runs it.
const SQLITE_INSERT: &str = "INSERT INTO graphkit_checkpoints (thread_id, checkpoint_ns, \
     checkpoint_id, parent_id, format_version, step, source, created_at_ms, metadata, \
     is_snapshot, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
     ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET \
     parent_id = excluded.parent_id, format_version = excluded.format_version, step = excluded.step, \
     source = excluded.source, created_at_ms = excluded.created_at_ms, metadata = excluded.metadata, \
     is_snapshot = excluded.is_snapshot, payload = excluded.payload";

/// The thread the rows were recorded on (and are inserted under, for SQLite).
const THREAD: &str = "ckpt-floor";

/// One checkpoint row, ready to bind: the record and its metadata as text.
struct Row {
    record: CheckpointRecord,
    metadata: String,
}

/// Runs W1 (N = 100) once with the in-memory saver and returns its checkpoints, oldest
/// first, as rows.
async fn recorded_rows() -> Result<Vec<Row>, BenchError> {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let graph = sequential::builder(100, Mode::Sync)
        .compile_with(CompileOptions::new().checkpointer(Arc::clone(&saver)))?;
    let config = run_config().thread_id(THREAD).durability(Durability::Sync);
    graph
        .invoke_with(graphkit::RunInput::Update(sequential::input()), config)
        .await?
        .finished()?;
    let mut records = saver.list(THREAD, "", &ListOptions::default()).await?;
    records.reverse();
    records
        .into_iter()
        .map(|record| {
            let metadata = serde_json::to_string(&record.metadata)
                .map_err(|e| BenchError::Usage(format!("checkpoint metadata: {e}")))?;
            Ok(Row { record, metadata })
        })
        .collect()
}

/// The checksum of the state `saver` holds for `thread`, read through W1's graph.
async fn stored_checksum(
    saver: Arc<dyn Checkpointer>,
    thread: &str,
) -> Result<crate::checksum::Checksum, BenchError> {
    let graph = sequential::builder(100, Mode::Sync)
        .compile_with(CompileOptions::new().checkpointer(saver))?;
    let snapshot = graph.get_state(&RunConfig::new().thread_id(thread)).await?;
    Ok(sequential::checksum(&snapshot.values))
}

/// `ckpt_sequential_100_{saver}_by_hand`: the floor of `ckpt_sequential_100_{saver}_sync`
/// for the SQLite savers (`sqlite`: `synchronous=FULL`, `sqlitenormal`: `NORMAL`).
pub fn sqlite_case(saver: Saver) -> Case {
    let sync = match saver {
        Saver::SqliteNormal => SqliteSync::Normal,
        _ => SqliteSync::Full,
    };
    let name = format!("ckpt_sequential_100_{}_by_hand", saver.name());
    Case::new(&name, "checkpoint", Mode::Sync, move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let rows = runtime.block_on(recorded_rows())?;
        Ok(Box::new(SqliteByHand {
            rows,
            sync,
            runtime,
            dir: tempfile::tempdir()?,
            runs: 0,
        }) as Box<dyn Prepared>)
    })
    .checkpointer(saver.name(), Some("by_hand"))
    .param("N", 100)
    .steps(100)
    .items(100, "node")
}

/// [`sqlite_case`]'s run.
struct SqliteByHand {
    rows: Vec<Row>,
    sync: SqliteSync,
    runtime: tokio::runtime::Runtime,
    dir: tempfile::TempDir,
    runs: usize,
}

impl SqliteByHand {
    /// A fresh database file with graphkit's schema (made by the saver, which is then
    /// closed), and a connection to it with the case's `synchronous` setting.
    fn fresh_database(&mut self) -> Result<(PathBuf, rusqlite::Connection), BenchError> {
        self.runs += 1;
        let path = self.dir.path().join(format!("floor-{}.sqlite", self.runs));
        self.runtime.block_on(async {
            let saver = SqliteSaver::open_with(&path, self.sync).await?;
            saver.close().await;
            Ok::<_, BenchError>(())
        })?;
        let connection = rusqlite::Connection::open(&path)?;
        let pragma = match self.sync {
            SqliteSync::Normal => "NORMAL",
            _ => "FULL",
        };
        connection.pragma_update(None, "synchronous", pragma)?;
        connection.prepare_cached(SQLITE_INSERT)?;
        Ok((path, connection))
    }

    fn stored_checksum(&self, path: &Path) -> Result<crate::checksum::Checksum, BenchError> {
        self.runtime.block_on(async {
            let saver = SqliteSaver::open_with(path, self.sync).await?;
            let checksum = stored_checksum(Arc::new(saver.clone()), THREAD).await;
            saver.close().await;
            checksum
        })
    }
}

impl Prepared for SqliteByHand {
    fn runtime(&self) -> RuntimeInfo {
        RuntimeInfo {
            flavor: "none",
            worker_threads: 1,
            entry: "rusqlite, one autocommit INSERT per checkpoint",
        }
    }

    fn run(&mut self) -> Result<Sample, BenchError> {
        let (path, connection) = self.fresh_database()?;
        let cpu_start = process_cpu_time();
        let start = Instant::now();
        for Row { record, metadata } in &self.rows {
            connection
                .prepare_cached(SQLITE_INSERT)?
                .execute(rusqlite::params![
                    record.thread_id,
                    record.checkpoint_ns,
                    record.checkpoint_id,
                    record.parent_id,
                    i64::from(record.format_version),
                    record.step,
                    record.source.as_str(),
                    record.created_at_ms,
                    metadata,
                    record.is_snapshot,
                    record.payload,
                ])?;
        }
        let wall = start.elapsed();
        let cpu = process_cpu_time().saturating_sub(cpu_start);
        drop(connection);
        Ok(Sample {
            wall,
            cpu,
            checksum: self.stored_checksum(&path)?,
        })
    }
}

/// The environment variable naming the PostgreSQL database of the PostgreSQL cases (as
/// for graphkit's tests); without it they are not listed.
pub const POSTGRES_URL_ENV: &str = "GRAPHKIT_TEST_POSTGRES_URL";

/// W1 (N = 100) with the PostgreSQL saver, and its floor by hand: listed only when
/// [`POSTGRES_URL_ENV`] is set and the crate was built with its `postgres` feature.
pub fn postgres_cases() -> Vec<Case> {
    #[cfg(feature = "postgres")]
    if let Ok(url) = std::env::var(POSTGRES_URL_ENV) {
        return vec![
            postgres::case(url.clone(), postgres::Kind::Graph),
            postgres::case(url, postgres::Kind::ByHand),
        ];
    }
    Vec::new()
}

#[cfg(feature = "postgres")]
mod postgres {
    use std::sync::Arc;
    use std::time::Instant;

    use graphkit::checkpoint::{Checkpointer, PostgresSaver};
    use graphkit::{CompileOptions, CompiledGraph, Durability};

    use super::{Row, THREAD, recorded_rows, stored_checksum};
    use crate::case::{BenchError, Case, Mode, Prepared, RuntimeInfo, Sample, run_config};
    use crate::measure::process_cpu_time;
    use crate::workloads::sequential::{self, Counter};

    /// The savers' `INSERT` of one checkpoint row in PostgreSQL's dialect.
    const INSERT: &str = "INSERT INTO graphkit_checkpoints (thread_id, checkpoint_ns, \
         checkpoint_id, parent_id, format_version, step, source, created_at_ms, metadata, \
         is_snapshot, payload) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET \
         parent_id = excluded.parent_id, format_version = excluded.format_version, step = excluded.step, \
         source = excluded.source, created_at_ms = excluded.created_at_ms, metadata = excluded.metadata, \
         is_snapshot = excluded.is_snapshot, payload = excluded.payload";

    /// graphkit's case, or its floor.
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(super) enum Kind {
        /// `ckpt_sequential_100_postgres_sync`: the graph with the PostgreSQL saver.
        Graph,
        /// `ckpt_sequential_100_postgres_by_hand`: its rows inserted over one connection.
        ByHand,
    }

    pub(super) fn case(url: String, kind: Kind) -> Case {
        let name = match kind {
            Kind::Graph => "ckpt_sequential_100_postgres_sync",
            Kind::ByHand => "ckpt_sequential_100_postgres_by_hand",
        };
        let durability = match kind {
            Kind::Graph => "sync",
            Kind::ByHand => "by_hand",
        };
        Case::new(name, "checkpoint", Mode::Sync, move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let (saver, graph, rows, connection) = runtime.block_on(async {
                let saver = Arc::new(PostgresSaver::connect(&url).await?);
                let graph = sequential::builder(100, Mode::Sync)
                    .compile_with(CompileOptions::new().checkpointer(saver.clone()))?;
                let (rows, connection) = match kind {
                    Kind::Graph => (Vec::new(), None),
                    Kind::ByHand => {
                        // Detached: a pooled connection dropped after the runtime (at
                        // exit) would need the runtime to go back to its pool.
                        let connection = saver.pool().acquire().await.map_err(pg_error)?.detach();
                        (recorded_rows().await?, Some(connection))
                    }
                };
                Ok::<_, BenchError>((saver, graph, rows, connection))
            })?;
            Ok(Box::new(PostgresRun {
                kind,
                saver,
                graph,
                rows,
                connection,
                runtime,
                runs: 0,
            }) as Box<dyn Prepared>)
        })
        .checkpointer("postgres", Some(durability))
        .param("N", 100)
        .steps(100)
        .items(100, "node")
    }

    fn pg_error(error: sqlx::Error) -> BenchError {
        BenchError::Usage(format!("postgres: {error}"))
    }

    /// [`case`]'s run: a fresh thread id per run (deleted again, untimed, after it).
    struct PostgresRun {
        kind: Kind,
        saver: Arc<PostgresSaver>,
        graph: CompiledGraph<Counter>,
        rows: Vec<Row>,
        connection: Option<sqlx::PgConnection>,
        runtime: tokio::runtime::Runtime,
        runs: usize,
    }

    impl Prepared for PostgresRun {
        fn runtime(&self) -> RuntimeInfo {
            RuntimeInfo {
                flavor: "current_thread",
                worker_threads: 1,
                entry: match self.kind {
                    Kind::Graph => "invoke_with (block_on)",
                    Kind::ByHand => "sqlx, one autocommit INSERT per checkpoint on one connection",
                },
            }
        }

        fn run(&mut self) -> Result<Sample, BenchError> {
            self.runs += 1;
            let thread = format!("{THREAD}-{}-{}", std::process::id(), self.runs);
            let (kind, graph, rows) = (self.kind, &self.graph, &self.rows);
            let connection = &mut self.connection;
            let saver: Arc<dyn Checkpointer> = self.saver.clone();
            self.runtime.block_on(async move {
                let cpu_start = process_cpu_time();
                let start = Instant::now();
                let checksum = match (kind, connection) {
                    (Kind::ByHand, Some(connection)) => {
                        for Row { record, metadata } in rows {
                            sqlx::query(INSERT)
                                .bind(&thread)
                                .bind(&record.checkpoint_ns)
                                .bind(&record.checkpoint_id)
                                .bind(&record.parent_id)
                                .bind(i64::from(record.format_version))
                                .bind(record.step)
                                .bind(record.source.as_str())
                                .bind(record.created_at_ms)
                                .bind(metadata)
                                .bind(record.is_snapshot)
                                .bind(&record.payload)
                                .execute(&mut *connection)
                                .await
                                .map_err(pg_error)?;
                        }
                        None
                    }
                    _ => {
                        let config = run_config()
                            .thread_id(thread.clone())
                            .durability(Durability::Sync);
                        let state = graph
                            .invoke_with(graphkit::RunInput::Update(sequential::input()), config)
                            .await?
                            .finished()?;
                        Some(sequential::checksum(&state))
                    }
                };
                let wall = start.elapsed();
                let cpu = process_cpu_time().saturating_sub(cpu_start);
                let checksum = match checksum {
                    Some(checksum) => checksum,
                    None => stored_checksum(Arc::clone(&saver), &thread).await?,
                };
                saver.delete_thread(&thread).await?;
                Ok(Sample {
                    wall,
                    cpu,
                    checksum,
                })
            })
        }
    }
}
