//! [`SqliteSaver`]: checkpoints in an SQLite file, the embedded default for durable runs.
//!
//! The schema is created and migrated on open (see [`SCHEMA`]); the file is put in WAL
//! mode with a busy timeout, so several processes may share it. Thread locks are rows that
//! name the holding process; a lock whose process is gone (killed, crashed) is taken over
//! (see [`sqlite_lock`](super::sqlite_lock)).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use sqlx::Row;
use sqlx::sqlite::SqlitePool;

use super::sql::{
    SQLITE, bind_checkpoint, bind_write, execute_each, get_checkpoint, list_checkpoints,
    metadata_text,
};
use super::sqlite_lock::{
    BACKEND, Holder, LOCK_HOLDER, LOCK_INSERT, LOCK_TAKE_OVER, LockHolder, UNLOCK, took_over,
};
use super::sqlite_writer::{self, Writer};
use super::{
    CheckpointRecord, CheckpointTuple, Checkpointer, ListOptions, PendingWrite, WriteFence, now_ms,
};
use crate::error::StorageError;
use crate::sql::sqlite::{in_memory_pool, open_pool};
use crate::sql::{Migration, Schema, backend_error, migrate_sqlite};

pub use crate::sql::sqlite::SqliteSync;

/// The checkpointer's schema history.
const SCHEMA: Schema = Schema {
    component: "checkpoint",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "checkpoints, pending writes, thread locks",
        sql: "
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
    }],
};

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
    /// The condition every write checks first, for a saver made by [`fenced`](Self::fenced).
    fence: Option<Arc<WriteFence>>,
}

impl SqliteSaver {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with a busy
    /// timeout, and migrates its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::open_with(path, SqliteSync::Full).await
    }

    /// [`open`](Self::open) with a chosen fsync policy.
    pub async fn open_with(path: impl AsRef<Path>, sync: SqliteSync) -> Result<Self, StorageError> {
        let path = path.as_ref();
        let pool = open_pool(path, BACKEND, sync).await?;
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
    pub async fn in_memory() -> Result<Self, StorageError> {
        Self::from_pool(in_memory_pool(BACKEND).await?).await
    }

    /// Uses an existing pool (for example one shared with a [`SqliteStore`](crate::store::SqliteStore)),
    /// migrating its schema first.
    pub async fn from_pool(pool: SqlitePool) -> Result<Self, StorageError> {
        migrate_sqlite(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self {
            pool,
            writer: None,
            fence: None,
        })
    }

    /// The same database, with every write (checkpoints, pending writes, deleting a run or
    /// a thread) refused unless `fence` passes in the write's own transaction; taking the
    /// thread only checks the fence (see [`WriteFence`]). Cheap: the connections are shared.
    #[must_use]
    pub fn fenced(&self, fence: WriteFence) -> Self {
        Self {
            fence: Some(Arc::new(fence)),
            ..self.clone()
        }
    }

    /// Begins a write transaction on the pool and checks the fence, if any, in it.
    async fn begin_write(
        &self,
        doing: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, StorageError> {
        let err = |e| backend_error(BACKEND, doing, e);
        let mut tx = self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(err)?;
        if let Some(fence) = &self.fence
            && !pool_fence_passes(&mut tx, fence, doing).await?
        {
            return Err(fence.refused(doing));
        }
        Ok(tx)
    }

    /// Runs `work` on the writer in one transaction, checking the fence first.
    async fn write_with<F>(
        &self,
        writer: &Arc<Writer>,
        doing: &'static str,
        work: F,
    ) -> Result<(), StorageError>
    where
        F: Fn(&rusqlite::Connection) -> rusqlite::Result<()> + Send + 'static,
    {
        let fence = self.fence.clone();
        let written = writer
            .run(doing, move |conn| {
                sqlite_writer::in_transaction(conn, fence.as_deref(), &work)
            })
            .await?;
        match (written, &self.fence) {
            (None, Some(fence)) => Err(fence.refused(doing)),
            _ => Ok(()),
        }
    }

    /// The connection pool, to share it with a store or to inspect the tables. A saver
    /// from [`open`](Self::open) also holds a connection of its own for writing: use
    /// [`close`](Self::close) rather than closing the pool to close the database.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

#[async_trait]
impl Checkpointer for SqliteSaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), StorageError> {
        const DOING: &str = "saving a checkpoint";
        let metadata = metadata_text(&record)?;
        match (&self.writer, &self.fence) {
            (Some(writer), None) => {
                writer
                    .run(DOING, move |conn| {
                        sqlite_writer::insert_checkpoint(conn, &record, &metadata)
                    })
                    .await
            }
            (Some(writer), Some(_)) => {
                self.write_with(writer, DOING, move |conn| {
                    sqlite_writer::insert_checkpoint(conn, &record, &metadata)
                })
                .await
            }
            (None, None) => insert_checkpoint(&self.pool, &record, metadata).await,
            (None, Some(_)) => {
                let mut tx = self.begin_write(DOING).await?;
                insert_checkpoint(&mut *tx, &record, metadata).await?;
                tx.commit()
                    .await
                    .map_err(|e| backend_error(BACKEND, DOING, e))
            }
        }
    }

    async fn put_many(&self, records: Vec<CheckpointRecord>) -> Result<(), StorageError> {
        let records = records
            .into_iter()
            .map(|record| Ok((metadata_text(&record)?, record)))
            .collect::<Result<Vec<_>, StorageError>>()?;
        if let Some(writer) = &self.writer {
            return self
                .write_with(writer, "saving checkpoints", move |conn| {
                    sqlite_writer::insert_checkpoints(conn, &records)
                })
                .await;
        }
        let err = |e| backend_error(BACKEND, "saving checkpoints", e);
        let mut tx = self.begin_write("saving checkpoints").await?;
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
    ) -> Result<(), StorageError> {
        if let Some(writer) = &self.writer {
            let at = (
                thread_id.to_owned(),
                checkpoint_ns.to_owned(),
                checkpoint_id.to_owned(),
            );
            return self
                .write_with(writer, "saving pending writes", move |conn| {
                    sqlite_writer::upsert_writes(conn, &at, &writes)
                })
                .await;
        }
        let err = |e| backend_error(BACKEND, "saving pending writes", e);
        let mut tx = self.begin_write("saving pending writes").await?;
        for write in &writes {
            let query = sqlx::query(SQLITE.upsert_write.as_str());
            bind_write!(query, thread_id, checkpoint_ns, checkpoint_id, write)
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
    ) -> Result<Option<CheckpointTuple>, StorageError> {
        // A saver from `open` reads on its own connection: no hand-off to the pool's thread.
        if let Some(writer) = &self.writer {
            let (thread, ns) = (thread_id.to_owned(), checkpoint_ns.to_owned());
            let id = checkpoint_id.map(str::to_owned);
            let raw = writer
                .read("reading a checkpoint", move |conn| {
                    sqlite_writer::read_checkpoint(conn, &thread, &ns, id.as_deref())
                })
                .await?;
            return raw
                .map(|raw| sqlite_writer::decode_checkpoint(raw, thread_id, checkpoint_ns))
                .transpose();
        }
        get_checkpoint!(
            &self.pool,
            SQLITE,
            BACKEND,
            thread_id,
            checkpoint_ns,
            checkpoint_id
        )
        .await
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, StorageError> {
        list_checkpoints!(
            &self.pool,
            SQLITE,
            BACKEND,
            thread_id,
            checkpoint_ns,
            options
        )
        .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        let err = |e| backend_error(BACKEND, "deleting a thread", e);
        let mut tx = self.begin_write("deleting a thread").await?;
        execute_each!(tx, &SQLITE.delete_thread, err, thread_id);
        tx.commit().await.map_err(err)
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, StorageError> {
        let err = |e| backend_error(BACKEND, "deleting a run's checkpoints", e);
        let mut tx = self.begin_write("deleting a run's checkpoints").await?;
        let deleted = execute_each!(tx, &SQLITE.delete_run, err, thread_id, run_id);
        tx.commit().await.map_err(err)?;
        Ok(deleted)
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, StorageError> {
        if self.fence.is_some() {
            // The fence is the lock: whoever passes it holds the thread.
            let tx = self.begin_write("taking the thread").await?;
            drop(tx);
            return Ok(true);
        }
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

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), StorageError> {
        if self.fence.is_some() {
            return Ok(()); // nothing was locked (see try_lock_thread)
        }
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

/// Whether `fence`'s query returns a row inside `tx`.
async fn pool_fence_passes(
    tx: &mut sqlx::SqliteConnection,
    fence: &WriteFence,
    doing: &'static str,
) -> Result<bool, StorageError> {
    let mut query = sqlx::query(sqlx::AssertSqlSafe(fence.query().to_owned()));
    for param in fence.params() {
        query = query.bind(param.clone());
    }
    let row = query
        .fetch_optional(tx)
        .await
        .map_err(|e| backend_error(BACKEND, doing, e))?;
    Ok(row.is_some())
}

/// Inserts (or replaces) one checkpoint row through the pool (a saver without a writer).
async fn insert_checkpoint<'e, E>(
    executor: E,
    record: &CheckpointRecord,
    metadata: String,
) -> Result<(), StorageError>
where
    E: sqlx::Executor<'e, Database = sqlx::Sqlite>,
{
    bind_checkpoint!(
        sqlx::query(SQLITE.insert_checkpoint.as_str()),
        record,
        metadata
    )
    .execute(executor)
    .await
    .map_err(|e| backend_error(BACKEND, "saving a checkpoint", e))?;
    Ok(())
}
