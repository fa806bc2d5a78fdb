//! What the SQL savers share: decoding a checkpoint row and wrapping driver errors.

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{CheckpointRecord, CheckpointSource, FORMAT_VERSION};
use crate::error::Error;

/// An [`Error::Backend`] saying what was being done. A database's own error gives its
/// message and SQLSTATE code, without the server's C source position that PostgreSQL's
/// display adds (`at line 1234` of some server file, which only confuses).
pub(crate) fn backend_error(backend: &'static str, doing: &str, error: sqlx::Error) -> Error {
    let message = match &error {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{doing}: {} (SQLSTATE {code})", db.message()),
            None => format!("{doing}: {}", db.message()),
        },
        other => format!("{doing}: {other}"),
    };
    Error::Backend { backend, message }
}

/// Reads one checkpoint row; anything that does not decode is a [`Error::CorruptCheckpoint`]
/// for that row.
pub(crate) fn decode_record<'r, R>(
    row: &'r R,
    thread_id: &str,
    checkpoint_ns: &str,
) -> Result<CheckpointRecord, Error>
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
            .map_err(|e| Error::CorruptCheckpoint {
                thread_id: thread_id.to_owned(),
                checkpoint_id: "<unreadable id>".to_owned(),
                message: format!("column checkpoint_id: {e}"),
            })?;
    let corrupt = |message: String| Error::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.clone(),
        message,
    };
    let column = |name: &str, e: sqlx::Error| corrupt(format!("column {name}: {e}"));

    let format_version: i64 = row
        .try_get("format_version")
        .map_err(|e| column("format_version", e))?;
    let format_version = u32::try_from(format_version)
        .map_err(|_| corrupt(format!("format_version {format_version} is not a version")))?;
    if format_version > FORMAT_VERSION {
        return Err(Error::CheckpointVersion {
            thread_id: thread_id.to_owned(),
            checkpoint_id,
            found: format_version,
            supported: FORMAT_VERSION,
        });
    }
    let source: String = row.try_get("source").map_err(|e| column("source", e))?;
    let source = CheckpointSource::parse(&source)
        .ok_or_else(|| corrupt(format!("unknown source {source:?}")))?;
    let metadata: String = row.try_get("metadata").map_err(|e| column("metadata", e))?;
    let metadata = serde_json::from_str(&metadata)
        .map_err(|e| corrupt(format!("metadata is not JSON: {e}")))?;
    Ok(CheckpointRecord {
        thread_id: thread_id.to_owned(),
        checkpoint_ns: checkpoint_ns.to_owned(),
        parent_id: row
            .try_get("parent_id")
            .map_err(|e| column("parent_id", e))?,
        format_version,
        step: row.try_get("step").map_err(|e| column("step", e))?,
        source,
        created_at_ms: row
            .try_get("created_at_ms")
            .map_err(|e| column("created_at_ms", e))?,
        metadata,
        is_snapshot: row
            .try_get("is_snapshot")
            .map_err(|e| column("is_snapshot", e))?,
        payload: row.try_get("payload").map_err(|e| column("payload", e))?,
        checkpoint_id,
    })
}
