//! The connection a file-backed [`SqliteSaver`](super::SqliteSaver) writes checkpoints and
//! pending writes on.
//!
//! SQLite is a library, not a server: a statement is a function call. The async driver the
//! saver reads with runs each connection on a thread of its own, so every statement costs two
//! thread hand-offs (there and back), which on a checkpoint per step was most of the cost.
//! The writer calls SQLite directly instead:
//!
//! * with `synchronous=NORMAL`, a commit in WAL mode appends to the log and does not wait
//!   for the disk, so the statement runs on the caller's thread, as a small file write
//!   would; it does not wait for other connections either (busy timeout zero): if another
//!   connection holds the write lock, the attempt is rolled back and the write moves to
//!   tokio's blocking pool, where it waits for the lock;
//! * with `synchronous=FULL`, every commit waits for an fsync, so it always runs on the
//!   blocking pool and the async thread stays free.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, TransactionBehavior, params};

use super::sql::SQLITE;
use super::sql::StoredCheckpoint;
use super::sqlite_lock::{
    BACKEND, Holder, LOCK_HOLDER, LOCK_INSERT, LOCK_TAKE_OVER, LockHolder, took_over,
};
use super::{CheckpointRecord, CheckpointTuple, PendingWrite, WriteFence, now_ms};
use crate::error::StorageError;
use crate::sql::sqlite::{BUSY_TIMEOUT, SqliteSync, retry_while_locked};

/// The writer connection (`None` once the saver was closed).
#[derive(Debug)]
pub(super) struct Writer {
    connection: Mutex<Option<Connection>>,
    /// Commits wait for an fsync (`synchronous=FULL`): run them off the async thread.
    waits_for_disk: bool,
}

impl Writer {
    /// Opens a connection to the file the saver's pool has created and migrated (so it is in
    /// WAL mode already: the journal mode is stored in the file). While another process
    /// holds the file in a state SQLite will not wait on, opening starts over until the busy
    /// timeout has passed, as the pool's opening does.
    pub(super) async fn open(path: &Path, sync: SqliteSync) -> Result<Self, StorageError> {
        let connection = retry_while_locked(is_busy, || std::future::ready(connect(path, sync)))
            .await
            .map_err(|e| failed(&format!("cannot open {} for writing", path.display()), e))?;
        Ok(Self {
            connection: Mutex::new(Some(connection)),
            waits_for_disk: sync == SqliteSync::Full,
        })
    }

    /// Closes the connection; later writes fail with a clear error.
    pub(super) fn close(&self) {
        let taken = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(connection) = taken
            && let Err((_, err)) = connection.close()
        {
            tracing::warn!(%err, "closing the checkpoint writer connection failed");
        }
    }

    /// Runs `work` on the connection: on the caller's thread when that cannot wait (see the
    /// module's documentation), else on tokio's blocking pool with the busy timeout.
    /// `work` may run twice: an attempt that found the database busy was rolled back.
    pub(super) async fn run<T, F>(
        self: &Arc<Self>,
        doing: &'static str,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.on_connection(doing, !self.waits_for_disk, "write", work)
            .await
    }

    /// Runs the read `work` on the connection: on the caller's thread when the connection is
    /// free (a read in WAL mode does not wait for writers), else as [`run`](Self::run) does.
    pub(super) async fn read<T, F>(
        self: &Arc<Self>,
        doing: &'static str,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        self.on_connection(doing, true, "read", work).await
    }

    /// Runs `work` on the caller's thread when `inline` and the connection is free, else
    /// (or when that attempt found the database busy) on tokio's blocking pool, waiting up
    /// to the busy timeout; `kind` ("read", "write") names it in an error.
    async fn on_connection<T, F>(
        self: &Arc<Self>,
        doing: &'static str,
        inline: bool,
        kind: &'static str,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: Fn(&mut Connection) -> rusqlite::Result<T> + Send + 'static,
    {
        if inline && let Ok(mut guard) = self.connection.try_lock() {
            let connection = guard.as_mut().ok_or_else(|| closed(doing))?;
            match work(connection) {
                Err(e) if is_busy(&e) => {} // another connection is writing: wait off this thread
                outcome => return outcome.map_err(|e| failed(doing, e)),
            }
        }
        let writer = Arc::clone(self);
        let waiting = move || writer.run_waiting(doing, &work);
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime.spawn_blocking(waiting).await.map_err(|e| {
                StorageError::backend(BACKEND, format!("{doing}: the {kind}'s thread failed: {e}"))
            })?,
            Err(_) => waiting(),
        }
    }

    /// Runs `work` waiting (up to the busy timeout) for other connections' write locks.
    fn run_waiting<T>(
        &self,
        doing: &'static str,
        work: &dyn Fn(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StorageError> {
        let mut guard = self
            .connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let connection = guard.as_mut().ok_or_else(|| closed(doing))?;
        let outcome = connection
            .busy_timeout(BUSY_TIMEOUT)
            .and_then(|()| work(connection));
        let reset = connection.busy_timeout(Duration::ZERO);
        let value = outcome.map_err(|e| failed(doing, e))?;
        reset.map_err(|e| failed(doing, e))?;
        Ok(value)
    }
}

/// A connection to `path` with the `sync` policy and a busy timeout of zero.
fn connect(path: &Path, sync: SqliteSync) -> rusqlite::Result<Connection> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    // Opening may read the schema; let it wait for another process's write.
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.pragma_update(None, "synchronous", sync.pragma())?;
    connection.pragma_update(None, "foreign_keys", true)?;
    connection.busy_timeout(Duration::ZERO)?;
    Ok(connection)
}

/// Inserts (or replaces) one checkpoint row, `metadata` being its metadata as text.
pub(super) fn insert_checkpoint(
    connection: &Connection,
    record: &CheckpointRecord,
    metadata: &str,
) -> rusqlite::Result<()> {
    connection
        .prepare_cached(&SQLITE.insert_checkpoint)?
        .execute(params![
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
    Ok(())
}

/// Runs `work` in one `IMMEDIATE` transaction, after checking `fence` in it: `None` (and
/// nothing written) when the fence refuses.
pub(super) fn in_transaction<T>(
    connection: &mut Connection,
    fence: Option<&WriteFence>,
    work: impl FnOnce(&Connection) -> rusqlite::Result<T>,
) -> rusqlite::Result<Option<T>> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if let Some(fence) = fence
        && !fence_passes(&tx, fence)?
    {
        return Ok(None); // dropping the transaction rolls it back
    }
    let value = work(&tx)?;
    tx.commit()?;
    Ok(Some(value))
}

/// Whether `fence`'s query returns a row on `connection`.
pub(super) fn fence_passes(connection: &Connection, fence: &WriteFence) -> rusqlite::Result<bool> {
    let mut statement = connection.prepare_cached(fence.query())?;
    let mut rows = statement.query(rusqlite::params_from_iter(fence.params()))?;
    Ok(rows.next()?.is_some())
}

/// Inserts several checkpoint rows (each with its metadata text); the caller holds the
/// transaction.
pub(super) fn insert_checkpoints(
    connection: &Connection,
    records: &[(String, CheckpointRecord)],
) -> rusqlite::Result<()> {
    for (metadata, record) in records {
        insert_checkpoint(connection, record, metadata)?;
    }
    Ok(())
}

/// Saves pending writes against one checkpoint; the caller holds the transaction.
pub(super) fn upsert_writes(
    connection: &Connection,
    at: &(String, String, String),
    writes: &[PendingWrite],
) -> rusqlite::Result<()> {
    let (thread_id, checkpoint_ns, checkpoint_id) = at;
    let mut statement = connection.prepare_cached(&SQLITE.upsert_write)?;
    for write in writes {
        statement.execute(params![
            thread_id,
            checkpoint_ns,
            checkpoint_id,
            write.task_id,
            write.node,
            write.payload,
        ])?;
    }
    Ok(())
}

/// Takes `thread_id`'s lock for `run_id`, or takes it over from a run whose process is
/// gone; `false` when a live run holds it. One `IMMEDIATE` transaction: the row seen is
/// the row replaced.
pub(super) fn try_lock_thread(
    connection: &mut Connection,
    thread_id: &str,
    run_id: &str,
    me: Holder,
) -> rusqlite::Result<bool> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let inserted = tx.prepare_cached(LOCK_INSERT)?.execute(params![
        thread_id,
        run_id,
        me.pid,
        me.start,
        now_ms()
    ])?;
    let locked = inserted == 1 || {
        let (holder_run, holder) =
            tx.prepare_cached(LOCK_HOLDER)?
                .query_row(params![thread_id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        Holder {
                            pid: row.get(1)?,
                            start: row.get(2)?,
                        },
                    ))
                })?;
        match LockHolder::judge(&holder_run, holder, run_id) {
            LockHolder::Us => true,
            LockHolder::Alive => false,
            LockHolder::Gone => {
                tx.prepare_cached(LOCK_TAKE_OVER)?.execute(params![
                    run_id,
                    me.pid,
                    me.start,
                    now_ms(),
                    thread_id,
                    holder_run,
                    holder.pid
                ])?;
                took_over(thread_id, &holder_run, holder);
                true
            }
        }
    };
    tx.commit()?;
    Ok(locked)
}

/// `SQLITE_BUSY` or `SQLITE_LOCKED`: another connection holds the lock.
pub(super) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn failed(doing: &str, error: rusqlite::Error) -> StorageError {
    StorageError::backend(BACKEND, format!("{doing}: {error}"))
}

fn closed(doing: &str) -> StorageError {
    StorageError::backend(
        BACKEND,
        format!("{doing}: the saver was closed; open it again to write"),
    )
}

/// The columns of one checkpoint row and of its pending writes, as stored (typed by
/// [`decode_checkpoint`], so that a value of the wrong type is reported as corrupt).
pub(super) struct RawCheckpoint {
    row: Vec<Value>,
    writes: Vec<[Value; 3]>,
}

/// Reads checkpoint `checkpoint_id` (the newest when `None`) of a thread and namespace,
/// with its pending writes, in one read transaction.
pub(super) fn read_checkpoint(
    connection: &mut Connection,
    thread_id: &str,
    checkpoint_ns: &str,
    checkpoint_id: Option<&str>,
) -> rusqlite::Result<Option<RawCheckpoint>> {
    let tx = connection.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let row = {
        let mut statement = match checkpoint_id {
            Some(_) => tx.prepare_cached(&SQLITE.select_checkpoint)?,
            None => tx.prepare_cached(&SQLITE.select_latest)?,
        };
        let columns = statement.column_count();
        let mut rows = match checkpoint_id {
            Some(id) => statement.query(params![thread_id, checkpoint_ns, id])?,
            None => statement.query(params![thread_id, checkpoint_ns])?,
        };
        match rows.next()? {
            Some(row) => Some(
                (0..columns)
                    .map(|i| row.get(i))
                    .collect::<Result<Vec<Value>, _>>()?,
            ),
            None => None,
        }
    };
    let Some(row) = row else {
        tx.commit()?;
        return Ok(None);
    };
    let writes = {
        let id = match row.first() {
            Some(Value::Text(id)) => id.as_str(),
            _ => "",
        };
        let mut statement = tx.prepare_cached(&SQLITE.select_writes)?;
        let rows = statement.query_map(params![thread_id, checkpoint_ns, id], |row| {
            Ok([row.get(0)?, row.get(1)?, row.get(2)?])
        })?;
        rows.collect::<Result<Vec<_>, _>>()?
    };
    tx.commit()?;
    Ok(Some(RawCheckpoint { row, writes }))
}

/// The checkpoint and pending writes [`read_checkpoint`] read, checked as the pool's
/// decoding checks them.
pub(super) fn decode_checkpoint(
    raw: RawCheckpoint,
    thread_id: &str,
    checkpoint_ns: &str,
) -> Result<CheckpointTuple, StorageError> {
    let corrupt = |checkpoint_id: &str, message: String| StorageError::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.to_owned(),
        message,
    };
    let mut columns = raw.row.into_iter();
    let mut next = || columns.next().unwrap_or(Value::Null);
    let checkpoint_id = match next() {
        Value::Text(id) => id,
        other => {
            return Err(corrupt(
                "<unreadable id>",
                format!("column checkpoint_id: {}", type_name(&other)),
            ));
        }
    };
    let wrong = |name: &str, value: &Value| {
        corrupt(
            &checkpoint_id,
            format!("column {name}: a {} value", type_name(value)),
        )
    };
    let text = |name: &str, value: Value| match value {
        Value::Text(text) => Ok(text),
        other => Err(wrong(name, &other)),
    };
    let integer = |name: &str, value: Value| match value {
        Value::Integer(n) => Ok(n),
        other => Err(wrong(name, &other)),
    };
    let parent_id = match next() {
        Value::Null => None,
        value => Some(text("parent_id", value)?),
    };
    let format_version = integer("format_version", next())?;
    let step = integer("step", next())?;
    let source = text("source", next())?;
    let created_at_ms = integer("created_at_ms", next())?;
    let metadata = text("metadata", next())?;
    let is_snapshot = integer("is_snapshot", next())? != 0;
    let payload = match next() {
        Value::Blob(bytes) => bytes,
        Value::Text(text) => text.into_bytes(),
        other => return Err(wrong("payload", &other)),
    };
    let pending_writes = raw
        .writes
        .into_iter()
        .map(|[task_id, node, payload]| {
            let column = |name: &str, value: &Value| {
                corrupt(
                    &checkpoint_id,
                    format!("pending write column {name}: a {} value", type_name(value)),
                )
            };
            Ok(PendingWrite {
                task_id: match task_id {
                    Value::Text(id) => id,
                    other => return Err(column("task_id", &other)),
                },
                node: match node {
                    Value::Text(node) => node,
                    other => return Err(column("node", &other)),
                },
                payload: match payload {
                    Value::Blob(bytes) => bytes,
                    Value::Text(text) => text.into_bytes(),
                    other => return Err(column("payload", &other)),
                },
            })
        })
        .collect::<Result<_, StorageError>>()?;
    let stored = StoredCheckpoint {
        checkpoint_id,
        parent_id,
        format_version,
        step,
        source,
        created_at_ms,
        metadata,
        is_snapshot,
        payload,
    };
    Ok(CheckpointTuple {
        record: stored.into_record(thread_id, checkpoint_ns)?,
        pending_writes,
    })
}

/// What a stored value is, for an error message.
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::Integer(_) => "INTEGER",
        Value::Real(_) => "REAL",
        Value::Text(_) => "TEXT",
        Value::Blob(_) => "BLOB",
    }
}
