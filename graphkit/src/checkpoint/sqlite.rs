//! [`SqliteSaver`]: checkpoints in an SQLite file, the embedded default for durable runs.
//!
//! The schema is created and migrated on open (see [`MIGRATIONS`]); the file is put in WAL
//! mode with a busy timeout, so several processes may share it. Thread locks are rows that
//! name the holding process; a lock whose process is gone (killed, crashed) is taken over.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::TryStreamExt;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};

use super::sql::{backend_error, decode_record};
use super::sqlite_writer::{self, INSERT_CHECKPOINT, UPSERT_WRITE, Writer, metadata_text};
use super::{CheckpointRecord, CheckpointTuple, Checkpointer, ListOptions, PendingWrite, now_ms};
use crate::error::Error;

/// How errors of the SQLite checkpointer name it.
pub(super) const BACKEND: &str = "sqlite checkpointer";

/// How long a statement waits for another connection's write lock before failing.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// One step of a schema's history: (version, description, SQL). Versions count 1, 2, 3, ...;
/// the statements run in one transaction. Once released, a migration is never edited: a
/// change is a new migration with the next version.
pub(crate) type Migration = (i64, &'static str, &'static str);

/// The checkpointer's schema history.
const MIGRATIONS: &[Migration] = &[(
    1,
    "checkpoints, pending writes, thread locks",
    "
        CREATE TABLE graphkit_checkpoints (
            thread_id      TEXT    NOT NULL,
            checkpoint_ns  TEXT    NOT NULL,
            checkpoint_id  TEXT    NOT NULL,
            parent_id      TEXT,
            format_version INTEGER NOT NULL,
            step           INTEGER NOT NULL,
            source         TEXT    NOT NULL,
            created_at_ms  INTEGER NOT NULL,
            metadata       TEXT    NOT NULL,
            is_snapshot    INTEGER NOT NULL,
            payload        BLOB    NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        );
        CREATE TABLE graphkit_checkpoint_writes (
            seq           INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id     TEXT NOT NULL,
            checkpoint_ns TEXT NOT NULL,
            checkpoint_id TEXT NOT NULL,
            task_id       TEXT NOT NULL,
            node          TEXT NOT NULL,
            payload       BLOB NOT NULL,
            UNIQUE (thread_id, checkpoint_ns, checkpoint_id, task_id)
        );
        CREATE TABLE graphkit_thread_locks (
            thread_id      TEXT PRIMARY KEY,
            run_id         TEXT    NOT NULL,
            pid            INTEGER NOT NULL,
            pid_start      INTEGER,
            acquired_at_ms INTEGER NOT NULL
        );
    ",
)];

/// When SQLite waits for the disk (its `synchronous` setting, in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqliteSync {
    /// Every commit is on disk when it returns: a checkpoint survives a power loss.
    #[default]
    Full,
    /// Commits reach the disk at WAL checkpoints: a process crash loses nothing, a power
    /// loss may lose the last commits. Much faster per step.
    Normal,
}

/// Saves checkpoints in an SQLite database.
///
/// Use it for anything that must survive a restart of the process. Opening the file creates
/// it and its tables if needed; a file written by an older graphkit is migrated in place.
///
/// ```no_run
/// use std::sync::Arc;
/// use graphkit::checkpoint::SqliteSaver;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let saver = Arc::new(SqliteSaver::open("checkpoints.db").await?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteSaver {
    pool: SqlitePool,
    /// The connection checkpoints, pending writes and thread locks are written on, for a
    /// file opened by [`open`](Self::open); reads and deletions use the pool, and so do
    /// writes of a saver without a writer (in memory, or [`from_pool`](Self::from_pool)).
    /// See [`sqlite_writer`](super::sqlite_writer) for why it bypasses the async driver.
    writer: Option<Arc<Writer>>,
}

impl SqliteSaver {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with a busy
    /// timeout, and migrates its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::open_with(path, SqliteSync::Full).await
    }

    /// [`open`](Self::open) with a chosen fsync policy.
    pub async fn open_with(path: impl AsRef<Path>, sync: SqliteSync) -> Result<Self, Error> {
        let path = path.as_ref();
        let pool = Self::open_pool_with(path, BACKEND, sync).await?;
        let mut saver = Self::from_pool(pool).await?;
        saver.writer = Some(Arc::new(Writer::open(path, sync).await?));
        Ok(saver)
    }

    /// Closes the saver's connections, waiting for them to finish; SQLite folds the
    /// write-ahead log back into the file when the last connection to it closes. Later
    /// calls on this saver (or a clone) fail. Dropping every clone closes them too, but
    /// without waiting.
    pub async fn close(&self) {
        if let Some(writer) = &self.writer {
            writer.close();
        }
        self.pool.close().await;
    }

    /// A private database in memory, lost when the saver is dropped (for tests).
    pub async fn in_memory() -> Result<Self, Error> {
        Self::from_pool(Self::in_memory_pool(BACKEND).await?).await
    }

    /// Uses an existing pool (for example one shared with a [`SqliteStore`](crate::store::SqliteStore)),
    /// migrating its schema first.
    pub async fn from_pool(pool: SqlitePool) -> Result<Self, Error> {
        Self::migrate(&pool, BACKEND, "checkpoint", MIGRATIONS).await?;
        Ok(Self { pool, writer: None })
    }

    /// The connection pool, to share it with a store or to inspect the tables. A saver
    /// from [`open`](Self::open) also holds a connection of its own for writing: use
    /// [`close`](Self::close) rather than closing the pool to close the database.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// The pool [`open`](Self::open) uses: WAL, synchronous FULL (a committed checkpoint
    /// survives a power loss too), a busy timeout, foreign keys on.
    pub(crate) async fn open_pool(path: &Path, backend: &'static str) -> Result<SqlitePool, Error> {
        Self::open_pool_with(path, backend, SqliteSync::Full).await
    }

    /// The options of every connection to a file: WAL, `sync`, a busy timeout, foreign keys.
    fn connect_options(path: &Path, sync: SqliteSync) -> SqliteConnectOptions {
        let synchronous = match sync {
            SqliteSync::Full => SqliteSynchronous::Full,
            SqliteSync::Normal => SqliteSynchronous::Normal,
        };
        SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(synchronous)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true)
    }

    async fn open_pool_with(
        path: &Path,
        backend: &'static str,
        sync: SqliteSync,
    ) -> Result<SqlitePool, Error> {
        let options = Self::connect_options(path, sync);
        let connect = || {
            SqlitePoolOptions::new()
                .max_connections(4)
                // A local file's connection does not go stale; pinging it before every
                // statement would add a round trip to SQLite's worker thread per checkpoint.
                .test_before_acquire(false)
                .connect_with(options.clone())
        };
        retry_while_locked(is_locked, connect)
            .await
            .map_err(|e| backend_error(backend, &format!("cannot open {}", path.display()), e))
    }

    /// One connection to a private in-memory database, kept open as long as the pool lives
    /// (each connection to `:memory:` would otherwise see its own empty database).
    pub(crate) async fn in_memory_pool(backend: &'static str) -> Result<SqlitePool, Error> {
        let options = SqliteConnectOptions::new().in_memory(true);
        SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await
            .map_err(|e| backend_error(backend, "cannot open an in-memory database", e))
    }

    /// Applies the migrations of `component` that the database has not seen, in order, in one
    /// `BEGIN IMMEDIATE` transaction (so two processes opening the file at once do not race).
    pub(crate) async fn migrate(
        pool: &SqlitePool,
        backend: &'static str,
        component: &str,
        migrations: &[Migration],
    ) -> Result<(), Error> {
        let applied =
            retry_while_locked(is_locked, || apply_migrations(pool, component, migrations))
                .await
                .map_err(|e| backend_error(backend, "schema migration failed", e))?;
        let known = migrations.last().map_or(0, |m| m.0);
        if applied > known {
            return Err(Error::Backend {
                backend,
                message: format!(
                    "the database's {component} schema is at version {applied}, newer than this build knows ({known}); upgrade graphkit"
                ),
            });
        }
        Ok(())
    }
}

/// Runs the migrations of `component` newer than the database's version, unless the
/// database is newer than this build; returns the version found before migrating.
async fn apply_migrations(
    pool: &SqlitePool,
    component: &str,
    migrations: &[Migration],
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS graphkit_migrations (
            component     TEXT    NOT NULL,
            version       INTEGER NOT NULL,
            description   TEXT    NOT NULL,
            applied_at_ms INTEGER NOT NULL,
            PRIMARY KEY (component, version)
        )",
    )
    .execute(&mut *tx)
    .await?;
    let applied: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(version), 0) FROM graphkit_migrations WHERE component = ?1",
    )
    .bind(component)
    .fetch_one(&mut *tx)
    .await?;
    let known = migrations.last().map_or(0, |m| m.0);
    if applied > known {
        return Ok(applied);
    }
    for &(version, description, sql) in migrations.iter().filter(|m| m.0 > applied) {
        sqlx::raw_sql(sql).execute(&mut *tx).await?;
        sqlx::query(
            "INSERT INTO graphkit_migrations (component, version, description, applied_at_ms) VALUES (?1, ?2, ?3, ?4)",
        )
        .bind(component)
        .bind(version)
        .bind(description)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(applied)
}

/// Runs `attempt` again while SQLite reports the file busy or locked, until
/// [`BUSY_TIMEOUT`] has passed.
///
/// SQLite's own busy handler covers most statements, but not all of opening a file another
/// process is creating, converting to WAL or recovering: there SQLite returns "database is
/// locked" at once (it declines to wait where waiting could deadlock). Opening then starts
/// over, with a short, growing pause.
pub(super) async fn retry_while_locked<T, E, F, Fut>(
    is_locked: fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt().await {
            Err(e) if is_locked(&e) && Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            outcome => return outcome,
        }
    }
}

/// `SQLITE_BUSY` or `SQLITE_LOCKED`, in any of their extended forms.
fn is_locked(error: &sqlx::Error) -> bool {
    const SQLITE_BUSY: i64 = 5;
    const SQLITE_LOCKED: i64 = 6;
    error
        .as_database_error()
        .and_then(|e| e.code())
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
}

/// A query of checkpoint rows, in the column order [`decode_record`] reads.
macro_rules! select_checkpoints {
    ($where:literal) => {
        concat!(
            "SELECT checkpoint_id, parent_id, format_version, step, source, created_at_ms, metadata, is_snapshot, \
             payload FROM graphkit_checkpoints ",
            $where
        )
    };
}

fn decode_write(
    row: &SqliteRow,
    thread_id: &str,
    checkpoint_id: &str,
) -> Result<PendingWrite, Error> {
    let column = |name: &str, e: sqlx::Error| Error::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.to_owned(),
        message: format!("pending write column {name}: {e}"),
    };
    Ok(PendingWrite {
        task_id: row.try_get("task_id").map_err(|e| column("task_id", e))?,
        node: row.try_get("node").map_err(|e| column("node", e))?,
        payload: row.try_get("payload").map_err(|e| column("payload", e))?,
    })
}

#[async_trait]
impl Checkpointer for SqliteSaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), Error> {
        let metadata = metadata_text(&record)?;
        if let Some(writer) = &self.writer {
            return writer
                .run("saving a checkpoint", move |conn| {
                    sqlite_writer::insert_checkpoint(conn, &record, &metadata)
                })
                .await;
        }
        insert_checkpoint(&self.pool, &record, metadata).await
    }

    async fn put_many(&self, records: Vec<CheckpointRecord>) -> Result<(), Error> {
        let records = records
            .into_iter()
            .map(|record| Ok((metadata_text(&record)?, record)))
            .collect::<Result<Vec<_>, Error>>()?;
        if let Some(writer) = &self.writer {
            return writer
                .run("saving checkpoints", move |conn| {
                    sqlite_writer::insert_checkpoints(conn, &records)
                })
                .await;
        }
        let err = |e| backend_error(BACKEND, "saving checkpoints", e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        for (metadata, record) in records {
            insert_checkpoint(&mut *tx, &record, metadata).await?;
        }
        tx.commit().await.map_err(err)
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), Error> {
        if let Some(writer) = &self.writer {
            let at = (
                thread_id.to_owned(),
                checkpoint_ns.to_owned(),
                checkpoint_id.to_owned(),
            );
            return writer
                .run("saving pending writes", move |conn| {
                    sqlite_writer::upsert_writes(conn, &at, &writes)
                })
                .await;
        }
        let err = |e| backend_error(BACKEND, "saving pending writes", e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        for write in &writes {
            sqlx::query(UPSERT_WRITE)
                .bind(thread_id)
                .bind(checkpoint_ns)
                .bind(checkpoint_id)
                .bind(&write.task_id)
                .bind(&write.node)
                .bind(&write.payload)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<CheckpointTuple>, Error> {
        let err = |e| backend_error(BACKEND, "reading a checkpoint", e);
        let row = match checkpoint_id {
            Some(id) => sqlx::query(select_checkpoints!(
                "WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3"
            ))
            .bind(thread_id)
            .bind(checkpoint_ns)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?,
            None => sqlx::query(select_checkpoints!(
                "WHERE thread_id = ?1 AND checkpoint_ns = ?2 ORDER BY checkpoint_id DESC LIMIT 1"
            ))
            .bind(thread_id)
            .bind(checkpoint_ns)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?,
        };
        let Some(row) = row else { return Ok(None) };
        let record = decode_record(&row, thread_id, checkpoint_ns)?;
        let pending_writes = sqlx::query(
            "SELECT task_id, node, payload FROM graphkit_checkpoint_writes \
             WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 ORDER BY seq",
        )
        .bind(thread_id)
        .bind(checkpoint_ns)
        .bind(&record.checkpoint_id)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?
        .iter()
        .map(|row| decode_write(row, thread_id, &record.checkpoint_id))
        .collect::<Result<_, _>>()?;
        Ok(Some(CheckpointTuple {
            record,
            pending_writes,
        }))
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, Error> {
        let err = |e| backend_error(BACKEND, "listing checkpoints", e);
        let limit = options.limit.unwrap_or(usize::MAX);
        // With a metadata filter the limit applies after filtering, which happens here.
        let sql_limit = match (&options.metadata, options.limit) {
            (None, Some(limit)) => i64::try_from(limit).unwrap_or(i64::MAX),
            _ => -1,
        };
        let mut rows = sqlx::query(select_checkpoints!(
            "WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND (?3 IS NULL OR checkpoint_id < ?3) \
             ORDER BY checkpoint_id DESC LIMIT ?4"
        ))
        .bind(thread_id)
        .bind(checkpoint_ns)
        .bind(options.before.as_deref())
        .bind(sql_limit)
        .fetch(&self.pool);
        let mut records = Vec::new();
        while records.len() < limit {
            let Some(row) = rows.try_next().await.map_err(err)? else {
                break;
            };
            let record = decode_record(&row, thread_id, checkpoint_ns)?;
            if options
                .metadata
                .as_ref()
                .is_none_or(|filter| crate::store::matches_filter(&record.metadata, filter))
            {
                records.push(record);
            }
        }
        Ok(records)
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), Error> {
        let err = |e| backend_error(BACKEND, "deleting a thread", e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        for sql in [
            "DELETE FROM graphkit_checkpoint_writes WHERE thread_id = ?1",
            "DELETE FROM graphkit_checkpoints WHERE thread_id = ?1",
        ] {
            sqlx::query(sql)
                .bind(thread_id)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, Error> {
        let err = |e| backend_error(BACKEND, "deleting a run's checkpoints", e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        sqlx::query(
            "DELETE FROM graphkit_checkpoint_writes WHERE thread_id = ?1 AND checkpoint_id IN \
             (SELECT checkpoint_id FROM graphkit_checkpoints WHERE thread_id = ?1 \
              AND json_extract(metadata, '$.run_id') = ?2)",
        )
        .bind(thread_id)
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let deleted = sqlx::query(
            "DELETE FROM graphkit_checkpoints WHERE thread_id = ?1 AND json_extract(metadata, '$.run_id') = ?2",
        )
        .bind(thread_id)
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(err)?
        .rows_affected();
        tx.commit().await.map_err(err)?;
        Ok(deleted)
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, Error> {
        let me = Holder::current();
        if let Some(writer) = &self.writer {
            let (thread, run) = (thread_id.to_owned(), run_id.to_owned());
            return writer
                .run("locking a thread", move |conn| {
                    sqlite_writer::try_lock_thread(conn, &thread, &run, me)
                })
                .await;
        }
        let err = |e| backend_error(BACKEND, "locking a thread", e);
        let mut conn = self.pool.acquire().await.map_err(err)?;
        // Each pass either takes a free lock, or sees a holder and replaces it only if it is
        // unchanged and dead (compare-and-swap); a race lost to a live run means busy.
        for _ in 0..3 {
            let taken = sqlx::query(LOCK_INSERT)
                .bind(thread_id)
                .bind(run_id)
                .bind(me.pid)
                .bind(me.start)
                .bind(now_ms())
                .execute(&mut *conn)
                .await
                .map_err(err)?;
            if taken.rows_affected() == 1 {
                return Ok(true);
            }
            let Some(row) = sqlx::query(LOCK_HOLDER)
                .bind(thread_id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(err)?
            else {
                continue; // released in between: try again
            };
            let holder_run: String = row.try_get("run_id").map_err(err)?;
            let holder = Holder {
                pid: row.try_get("pid").map_err(err)?,
                start: row.try_get("pid_start").map_err(err)?,
            };
            match LockHolder::judge(&holder_run, holder, run_id) {
                LockHolder::Us => return Ok(true),
                LockHolder::Alive => return Ok(false),
                LockHolder::Gone => {}
            }
            let replaced = sqlx::query(LOCK_TAKE_OVER)
                .bind(run_id)
                .bind(me.pid)
                .bind(me.start)
                .bind(now_ms())
                .bind(thread_id)
                .bind(&holder_run)
                .bind(holder.pid)
                .execute(&mut *conn)
                .await
                .map_err(err)?;
            if replaced.rows_affected() == 1 {
                took_over(thread_id, &holder_run, holder);
                return Ok(true);
            }
        }
        Ok(false)
    }

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), Error> {
        if let Some(writer) = &self.writer {
            let (thread, run) = (thread_id.to_owned(), run_id.to_owned());
            return writer
                .run("unlocking a thread", move |conn| {
                    conn.prepare_cached(UNLOCK)?
                        .execute(rusqlite::params![thread, run])
                        .map(drop)
                })
                .await;
        }
        sqlx::query(UNLOCK)
            .bind(thread_id)
            .bind(run_id)
            .execute(&self.pool)
            .await
            .map_err(|e| backend_error(BACKEND, "unlocking a thread", e))?;
        Ok(())
    }
}

/// Takes a free thread lock: (thread_id, run_id, pid, pid_start, acquired_at_ms).
pub(super) const LOCK_INSERT: &str = "INSERT INTO graphkit_thread_locks (thread_id, run_id, pid, pid_start, acquired_at_ms) \
     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (thread_id) DO NOTHING";
/// The holder of a thread's lock: (thread_id) → run_id, pid, pid_start.
pub(super) const LOCK_HOLDER: &str =
    "SELECT run_id, pid, pid_start FROM graphkit_thread_locks WHERE thread_id = ?1";
/// Takes over a dead holder's lock if it is unchanged: (run_id, pid, pid_start,
/// acquired_at_ms, thread_id, holder's run_id, holder's pid).
pub(super) const LOCK_TAKE_OVER: &str = "UPDATE graphkit_thread_locks SET run_id = ?1, pid = ?2, pid_start = ?3, acquired_at_ms = ?4 \
     WHERE thread_id = ?5 AND run_id = ?6 AND pid = ?7";
/// Releases a lock the run holds: (thread_id, run_id).
const UNLOCK: &str = "DELETE FROM graphkit_thread_locks WHERE thread_id = ?1 AND run_id = ?2";

/// Who holds a lock another run asked for.
pub(super) enum LockHolder {
    /// The asking run itself (it locked the thread before).
    Us,
    /// A live process's run: the thread is busy.
    Alive,
    /// A run whose process is gone: the lock may be taken over.
    Gone,
}

impl LockHolder {
    pub(super) fn judge(holder_run: &str, holder: Holder, run_id: &str) -> Self {
        if holder_run == run_id {
            Self::Us
        } else if holder.is_alive() {
            Self::Alive
        } else {
            Self::Gone
        }
    }
}

/// Logs that `thread_id`'s lock was taken over from a dead process's run.
pub(super) fn took_over(thread_id: &str, dead_run: &str, holder: Holder) {
    tracing::warn!(
        thread_id,
        dead_run,
        pid = holder.pid,
        "took over the lock of a run whose process is gone"
    );
}

/// The process holding a thread lock: its pid, and its start time (in clock ticks since
/// boot, from `/proc/<pid>/stat`) so a recycled pid is not mistaken for the holder.
#[derive(Debug, Clone, Copy)]
pub(super) struct Holder {
    pub(super) pid: i64,
    pub(super) start: Option<i64>,
}

impl Holder {
    fn current() -> Self {
        let pid = i64::from(std::process::id());
        Self {
            pid,
            start: process_start(pid),
        }
    }

    /// `false` only when the process is known to be gone. Where `/proc` does not exist
    /// (not Linux), liveness cannot be told, so every holder counts as alive.
    fn is_alive(&self) -> bool {
        if !Path::new("/proc/self").exists() {
            return true;
        }
        let Some(stat) = ProcStat::read(self.pid) else {
            return false; // no such process
        };
        // A killed process that its parent has not reaped yet is a zombie: gone all the same.
        !stat.zombie
            && self
                .start
                .is_none_or(|recorded| stat.start == Some(recorded))
    }
}

/// What `/proc/<pid>/stat` says about a process.
struct ProcStat {
    zombie: bool,
    /// Field 22, `starttime`.
    start: Option<i64>,
}

impl ProcStat {
    fn read(pid: i64) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count from the last `)`.
        let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
        let state = fields.next()?;
        Some(Self {
            zombie: state == "Z" || state == "X",
            start: fields.nth(18).and_then(|s| s.parse().ok()),
        })
    }
}

fn process_start(pid: i64) -> Option<i64> {
    ProcStat::read(pid)?.start
}

/// Inserts (or replaces) one checkpoint row through the pool (a saver without a writer).
async fn insert_checkpoint<'e, E>(
    executor: E,
    record: &CheckpointRecord,
    metadata: String,
) -> Result<(), Error>
where
    E: sqlx::Executor<'e, Database = sqlx::Sqlite>,
{
    sqlx::query(INSERT_CHECKPOINT)
        .bind(&record.thread_id)
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
        .execute(executor)
        .await
        .map_err(|e| backend_error(BACKEND, "saving a checkpoint", e))?;
    Ok(())
}
