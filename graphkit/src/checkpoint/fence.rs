//! [`WriteFence`]: a condition the database checks inside every write of a fenced saver.
//!
//! A host that hands a thread to one writer at a time with a lease (a server whose workers
//! claim runs from a queue) cannot rely on timing to keep a writer that lost its lease
//! quiet: a paused process wakes up and goes on writing. A fenced saver
//! ([`SqliteSaver::fenced`](super::SqliteSaver::fenced),
//! [`PostgresSaver::fenced`](super::PostgresSaver::fenced)) runs the fence's query first
//! in the same transaction as each write; when it returns no row the write is rolled back
//! and refused with [`StorageError::Fenced`], so the database, not the clock, decides.

use crate::error::StorageError;

/// A query that returns a row while the writer may still write, checked by a fenced saver
/// in the transaction of each write (checkpoints, pending writes, deleting a run or a
/// thread).
///
/// The query is in the saver's SQL dialect (`?1`, `?2` for SQLite; `$1`, `$2` for
/// PostgreSQL), takes its parameters as text, and should lock what it reads where the
/// database allows (`FOR SHARE` in PostgreSQL), so that whoever takes the lease over waits
/// for a write that passed the fence to commit.
///
/// A fenced saver also stands in for the thread lock: the fence is the lock, so
/// [`try_lock_thread`](super::Checkpointer::try_lock_thread) only checks it and
/// [`unlock_thread`](super::Checkpointer::unlock_thread) does nothing.
///
/// ```
/// use graphkit::checkpoint::WriteFence;
///
/// let fence = WriteFence::new(
///     "run 7, attempt 2",
///     "SELECT 1 FROM runs WHERE run_id = ?1 AND lease_token = ?2",
///     ["7", "4f1c"],
/// );
/// assert_eq!(fence.params(), ["7", "4f1c"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFence {
    holder: String,
    query: String,
    params: Vec<String>,
}

impl WriteFence {
    /// A fence for `holder` (named in the refusal's message) that passes while `query`,
    /// with `params` bound in order, returns a row.
    pub fn new(
        holder: impl Into<String>,
        query: impl Into<String>,
        params: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            holder: holder.into(),
            query: query.into(),
            params: params.into_iter().map(Into::into).collect(),
        }
    }

    /// The query.
    pub fn query(&self) -> &str {
        &self.query
    }

    /// Its parameters, in order.
    pub fn params(&self) -> &[String] {
        &self.params
    }

    /// The error of a write the fence refused.
    pub fn refused(&self, doing: &str) -> StorageError {
        StorageError::Fenced {
            holder: self.holder.clone(),
            doing: doing.to_owned(),
        }
    }
}
