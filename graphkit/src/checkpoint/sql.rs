//! What the SQL savers share: their statements (written once, see [`Statements`]), encoding
//! a checkpoint's metadata, and decoding checkpoint and pending-write rows.

use std::sync::LazyLock;

use futures::{Stream, TryStreamExt};
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{CheckpointRecord, CheckpointSource, FORMAT_VERSION, ListOptions, PendingWrite};
use crate::error::StorageError;
use crate::sql::{Dialect, backend_error};

/// The savers' statements in one dialect, each built from the one definition in
/// [`Statements::new`]. Parameters are listed as `(first, second, ...)`.
pub(crate) struct Statements {
    /// Inserts or replaces a checkpoint row: (thread_id, checkpoint_ns, checkpoint_id,
    /// parent_id, format_version, step, source, created_at_ms, metadata, is_snapshot,
    /// payload), the order of [`bind_checkpoint!`].
    pub(crate) insert_checkpoint: String,
    /// Saves one pending write: (thread_id, checkpoint_ns, checkpoint_id, task_id, node,
    /// payload). On a task id already saved, the row (and so its place in the order) stays
    /// and its content is replaced.
    pub(crate) upsert_write: String,
    /// One checkpoint: (thread_id, checkpoint_ns, checkpoint_id).
    pub(crate) select_checkpoint: String,
    /// The newest checkpoint of a thread: (thread_id, checkpoint_ns).
    pub(crate) select_latest: String,
    /// A thread's checkpoints, newest first: (thread_id, checkpoint_ns, before or NULL,
    /// limit; see [`crate::sql::sql_limit`]).
    pub(crate) select_list: String,
    /// A checkpoint's pending writes, in save order: (thread_id, checkpoint_ns, checkpoint_id).
    pub(crate) select_writes: String,
    /// Deletes a thread, pending writes first: (thread_id).
    pub(crate) delete_thread: [String; 2],
    /// Deletes the checkpoints whose metadata names a run, pending writes first:
    /// (thread_id, run_id).
    pub(crate) delete_run: [String; 2],
}

/// The savers' statements in SQLite's dialect.
#[cfg(feature = "sqlite")]
pub(crate) static SQLITE: LazyLock<Statements> = LazyLock::new(|| Statements::new(Dialect::Sqlite));
/// The savers' statements in PostgreSQL's dialect.
#[cfg(feature = "postgres")]
pub(crate) static POSTGRES: LazyLock<Statements> =
    LazyLock::new(|| Statements::new(Dialect::Postgres));

impl Statements {
    fn new(dialect: Dialect) -> Self {
        /// The columns [`decode_record`] reads.
        const SELECT: &str = "SELECT checkpoint_id, parent_id, format_version, step, source, created_at_ms, \
             metadata, is_snapshot, payload FROM graphkit_checkpoints";
        let statement = |text: &str| dialect.statement(text);
        let of_run = format!(
            "thread_id = ?1 AND {} = ?2",
            dialect.json_field("metadata", "run_id")
        );
        Self {
            insert_checkpoint: statement(
                "INSERT INTO graphkit_checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, \
                 format_version, step, source, created_at_ms, metadata, is_snapshot, payload) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET \
                 parent_id = excluded.parent_id, format_version = excluded.format_version, step = excluded.step, \
                 source = excluded.source, created_at_ms = excluded.created_at_ms, metadata = excluded.metadata, \
                 is_snapshot = excluded.is_snapshot, payload = excluded.payload",
            ),
            upsert_write: statement(
                "INSERT INTO graphkit_checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, node, payload) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO UPDATE SET \
                 node = excluded.node, payload = excluded.payload",
            ),
            select_checkpoint: statement(&format!(
                "{SELECT} WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3"
            )),
            select_latest: statement(&format!(
                "{SELECT} WHERE thread_id = ?1 AND checkpoint_ns = ?2 ORDER BY checkpoint_id DESC LIMIT 1"
            )),
            select_list: statement(&format!(
                "{SELECT} WHERE thread_id = ?1 AND checkpoint_ns = ?2 \
                 AND (CAST(?3 AS TEXT) IS NULL OR checkpoint_id < ?3) \
                 ORDER BY checkpoint_id DESC LIMIT ?4"
            )),
            select_writes: statement(
                "SELECT task_id, node, payload FROM graphkit_checkpoint_writes \
                 WHERE thread_id = ?1 AND checkpoint_ns = ?2 AND checkpoint_id = ?3 ORDER BY seq",
            ),
            delete_thread: [
                statement("DELETE FROM graphkit_checkpoint_writes WHERE thread_id = ?1"),
                statement("DELETE FROM graphkit_checkpoints WHERE thread_id = ?1"),
            ],
            delete_run: [
                statement(&format!(
                    "DELETE FROM graphkit_checkpoint_writes WHERE thread_id = ?1 AND checkpoint_id IN \
                     (SELECT checkpoint_id FROM graphkit_checkpoints WHERE {of_run})"
                )),
                statement(&format!("DELETE FROM graphkit_checkpoints WHERE {of_run}")),
            ],
        }
    }
}

/// Binds a checkpoint's columns to an sqlx query, in the order of
/// [`Statements::insert_checkpoint`]; `$metadata` is the metadata as text ([`metadata_text`]).
macro_rules! bind_checkpoint {
    ($query:expr, $record:expr, $metadata:expr) => {
        $query
            .bind(&$record.thread_id)
            .bind(&$record.checkpoint_ns)
            .bind(&$record.checkpoint_id)
            .bind(&$record.parent_id)
            .bind(i64::from($record.format_version))
            .bind($record.step)
            .bind($record.source.as_str())
            .bind($record.created_at_ms)
            .bind($metadata)
            .bind($record.is_snapshot)
            .bind(&$record.payload)
    };
}
pub(crate) use bind_checkpoint;

/// Binds a pending write's columns, in the order of [`Statements::upsert_write`].
macro_rules! bind_write {
    ($query:expr, $thread_id:expr, $checkpoint_ns:expr, $checkpoint_id:expr, $write:expr) => {
        $query
            .bind($thread_id)
            .bind($checkpoint_ns)
            .bind($checkpoint_id)
            .bind(&$write.task_id)
            .bind(&$write.node)
            .bind(&$write.payload)
    };
}
pub(crate) use bind_write;

/// Runs each statement of `$statements` on the transaction `$tx` with the same binds and
/// evaluates to the rows the last one affected (the delete statements of a thread or a run).
macro_rules! execute_each {
    ($tx:expr, $statements:expr, $err:expr, $($bind:expr),+) => {{
        let mut affected = 0;
        for statement in $statements {
            affected = sqlx::query(statement.as_str())
                $(.bind($bind))+
                .execute(&mut *$tx)
                .await
                .map_err($err)?
                .rows_affected();
        }
        affected
    }};
}
pub(crate) use execute_each;

/// `Checkpointer::get` of an SQL saver: the checkpoint `$checkpoint_id` (the latest when
/// `None`) of a thread and namespace, with its pending writes; a future of
/// `Result<Option<CheckpointTuple>, StorageError>`. (Macros rather than functions generic over the
/// pool: sqlx's bounds for one body over both databases outweigh the body.)
macro_rules! get_checkpoint {
    ($pool:expr, $statements:expr, $backend:expr, $thread_id:expr, $checkpoint_ns:expr, $checkpoint_id:expr) => {
        async {
            let (thread_id, checkpoint_ns, checkpoint_id): (&str, &str, Option<&str>) =
                ($thread_id, $checkpoint_ns, $checkpoint_id);
            let err = |e| $crate::sql::backend_error($backend, "reading a checkpoint", e);
            let statement = match checkpoint_id {
                Some(_) => &$statements.select_checkpoint,
                None => &$statements.select_latest,
            };
            let query = sqlx::query(statement.as_str())
                .bind(thread_id)
                .bind(checkpoint_ns);
            let query = match checkpoint_id {
                Some(id) => query.bind(id),
                None => query,
            };
            let row = query.fetch_optional($pool).await.map_err(err)?;
            let Some(row) = row else { return Ok(None) };
            let record = $crate::checkpoint::sql::decode_record(&row, thread_id, checkpoint_ns)?;
            let pending_writes = sqlx::query($statements.select_writes.as_str())
                .bind(thread_id)
                .bind(checkpoint_ns)
                .bind(&record.checkpoint_id)
                .fetch_all($pool)
                .await
                .map_err(err)?
                .iter()
                .map(|row| {
                    $crate::checkpoint::sql::decode_write(row, thread_id, &record.checkpoint_id)
                })
                .collect::<Result<_, _>>()?;
            Ok::<_, $crate::error::StorageError>(Some($crate::checkpoint::CheckpointTuple {
                record,
                pending_writes,
            }))
        }
    };
}
pub(crate) use get_checkpoint;

/// `Checkpointer::list` of an SQL saver; a future of `Result<Vec<CheckpointRecord>, StorageError>`.
macro_rules! list_checkpoints {
    ($pool:expr, $statements:expr, $backend:expr, $thread_id:expr, $checkpoint_ns:expr, $options:expr) => {{
        let (thread_id, checkpoint_ns, options): (&str, &str, &$crate::checkpoint::ListOptions) =
            ($thread_id, $checkpoint_ns, $options);
        let rows = sqlx::query($statements.select_list.as_str())
            .bind(thread_id)
            .bind(checkpoint_ns)
            .bind(options.before.as_deref())
            .bind($crate::checkpoint::sql::list_limit(options))
            .fetch($pool);
        $crate::checkpoint::sql::read_list(rows, $backend, thread_id, checkpoint_ns, options)
    }};
}
pub(crate) use list_checkpoints;

/// A checkpoint's metadata as stored (JSON text).
pub(crate) fn metadata_text(record: &CheckpointRecord) -> Result<String, StorageError> {
    serde_json::to_string(&record.metadata).map_err(|source| StorageError::Serde {
        what: "checkpoint metadata".to_owned(),
        source,
    })
}

/// Reads one checkpoint row; anything that does not decode is a [`StorageError::CorruptCheckpoint`]
/// for that row.
pub(crate) fn decode_record<'r, R>(
    row: &'r R,
    thread_id: &str,
    checkpoint_ns: &str,
) -> Result<CheckpointRecord, StorageError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
    bool: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let checkpoint_id: String =
        row.try_get("checkpoint_id")
            .map_err(|e| StorageError::CorruptCheckpoint {
                thread_id: thread_id.to_owned(),
                checkpoint_id: "<unreadable id>".to_owned(),
                message: format!("column checkpoint_id: {e}"),
            })?;
    let column = |name: &str, e: sqlx::Error| StorageError::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.clone(),
        message: format!("column {name}: {e}"),
    };
    let stored = StoredCheckpoint {
        parent_id: row
            .try_get("parent_id")
            .map_err(|e| column("parent_id", e))?,
        format_version: row
            .try_get("format_version")
            .map_err(|e| column("format_version", e))?,
        step: row.try_get("step").map_err(|e| column("step", e))?,
        source: row.try_get("source").map_err(|e| column("source", e))?,
        created_at_ms: row
            .try_get("created_at_ms")
            .map_err(|e| column("created_at_ms", e))?,
        metadata: row.try_get("metadata").map_err(|e| column("metadata", e))?,
        is_snapshot: row
            .try_get("is_snapshot")
            .map_err(|e| column("is_snapshot", e))?,
        payload: row.try_get("payload").map_err(|e| column("payload", e))?,
        checkpoint_id,
    };
    stored.into_record(thread_id, checkpoint_ns)
}

/// The columns of one checkpoint row (those [`Statements::select_checkpoint`] reads), each
/// of its column's type, before the checks that make it a [`CheckpointRecord`].
pub(crate) struct StoredCheckpoint {
    pub(crate) checkpoint_id: String,
    pub(crate) parent_id: Option<String>,
    pub(crate) format_version: i64,
    pub(crate) step: i64,
    pub(crate) source: String,
    pub(crate) created_at_ms: i64,
    pub(crate) metadata: String,
    pub(crate) is_snapshot: bool,
    pub(crate) payload: Vec<u8>,
}

impl StoredCheckpoint {
    /// The record of thread `thread_id`, namespace `checkpoint_ns`: a version newer than
    /// this build's is [`StorageError::CheckpointVersion`], an unknown source or metadata
    /// that is not JSON a [`StorageError::CorruptCheckpoint`].
    pub(crate) fn into_record(
        self,
        thread_id: &str,
        checkpoint_ns: &str,
    ) -> Result<CheckpointRecord, StorageError> {
        let corrupt = |message: String| StorageError::CorruptCheckpoint {
            thread_id: thread_id.to_owned(),
            checkpoint_id: self.checkpoint_id.clone(),
            message,
        };
        let format_version = self.format_version;
        let format_version = u32::try_from(format_version)
            .map_err(|_| corrupt(format!("format_version {format_version} is not a version")))?;
        if format_version > FORMAT_VERSION {
            return Err(StorageError::CheckpointVersion {
                thread_id: thread_id.to_owned(),
                checkpoint_id: self.checkpoint_id,
                found: format_version,
                supported: FORMAT_VERSION,
            });
        }
        let source = CheckpointSource::parse(&self.source)
            .ok_or_else(|| corrupt(format!("unknown source {:?}", self.source)))?;
        let metadata = serde_json::from_str(&self.metadata)
            .map_err(|e| corrupt(format!("metadata is not JSON: {e}")))?;
        Ok(CheckpointRecord {
            thread_id: thread_id.to_owned(),
            checkpoint_ns: checkpoint_ns.to_owned(),
            parent_id: self.parent_id,
            format_version,
            step: self.step,
            source,
            created_at_ms: self.created_at_ms,
            metadata,
            is_snapshot: self.is_snapshot,
            payload: self.payload,
            checkpoint_id: self.checkpoint_id,
        })
    }
}

/// Reads one pending-write row of a checkpoint.
pub(crate) fn decode_write<'r, R>(
    row: &'r R,
    thread_id: &str,
    checkpoint_id: &str,
) -> Result<PendingWrite, StorageError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let column = |name: &str, e: sqlx::Error| StorageError::CorruptCheckpoint {
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

/// The `LIMIT` of [`Statements::select_list`]: with a metadata filter the limit applies after
/// filtering, which [`read_list`] does.
pub(crate) fn list_limit(options: &ListOptions) -> i64 {
    crate::sql::sql_limit(options.limit.filter(|_| options.metadata.is_none()))
}

/// What `list` returns of the rows of [`Statements::select_list`]: decoded, filtered on
/// metadata, up to the limit. Reading stops there.
pub(crate) async fn read_list<R>(
    mut rows: impl Stream<Item = Result<R, sqlx::Error>> + Unpin,
    backend: &'static str,
    thread_id: &str,
    checkpoint_ns: &str,
    options: &ListOptions,
) -> Result<Vec<CheckpointRecord>, StorageError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Option<String>: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> Vec<u8>: Decode<'r, R::Database> + Type<R::Database>,
{
    let limit = options.limit.unwrap_or(usize::MAX);
    let mut records = Vec::new();
    while records.len() < limit {
        let row = rows
            .try_next()
            .await
            .map_err(|e| backend_error(backend, "listing checkpoints", e))?;
        let Some(row) = row else { break };
        let record = decode_record(&row, thread_id, checkpoint_ns)?;
        if options
            .metadata
            .as_ref()
            .is_none_or(|filter| crate::filter::matches_filter(&record.metadata, filter))
        {
            records.push(record);
        }
    }
    Ok(records)
}
