//! Checkpoints: the storage contract ([`Checkpointer`]) and the savers that implement it.
//!
//! A checkpoint closes every super-step of a run on a thread. The engine encodes what it
//! needs (the state, or only the step's updates as a delta from the parent checkpoint; the
//! next tasks; pending interrupts) into [`CheckpointRecord::payload`]; savers store and
//! return records without looking inside. A record whose `is_snapshot` is false is a delta:
//! loading it means walking `parent_id` back to the nearest snapshot and replaying the
//! deltas, which the engine does. This is what keeps write cost proportional to the size of
//! each step's update rather than the size of the state.

mod fence;
pub(crate) mod format;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_lock;
#[cfg(feature = "sqlite")]
mod sqlite_writer;

use std::fmt::Debug;

use async_trait::async_trait;
use serde_json::Value;

use crate::error::StorageError;

pub use fence::WriteFence;
pub use memory::InMemorySaver;
#[cfg(feature = "postgres")]
pub use postgres::PostgresSaver;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteSaver, SqliteSync};

/// The version of the stored checkpoint format this build writes and reads.
///
/// A record with a greater version was written by a newer graphkit and is refused with
/// [`StorageError::CheckpointVersion`]; older versions stay readable.
pub const FORMAT_VERSION: u32 = 1;

/// What created a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointSource {
    /// The run's input was applied.
    Input,
    /// A super-step finished.
    Loop,
    /// `update_state` wrote to the thread.
    Update,
    /// A run started from an earlier checkpoint: the copy that begins its branch.
    Fork,
}

impl CheckpointSource {
    /// The lowercase name stored in databases.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Loop => "loop",
            Self::Update => "update",
            Self::Fork => "fork",
        }
    }

    /// Parses [`as_str`](Self::as_str) output.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "input" => Some(Self::Input),
            "loop" => Some(Self::Loop),
            "update" => Some(Self::Update),
            "fork" => Some(Self::Fork),
            _ => None,
        }
    }
}

/// One checkpoint as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointRecord {
    /// The thread.
    pub thread_id: String,
    /// `""` for the root graph; the subgraph path otherwise.
    pub checkpoint_ns: String,
    /// Unique within the thread, and greater than every id created before it on the thread
    /// (see [`new_checkpoint_id`]), so ordering by id is ordering by creation.
    pub checkpoint_id: String,
    /// The checkpoint this one follows (None for a thread's first).
    pub parent_id: Option<String>,
    /// The format version the payload was written with.
    pub format_version: u32,
    /// The super-step: a thread's first input is 0, and the count goes on across runs.
    pub step: i64,
    /// What created it.
    pub source: CheckpointSource,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// User-visible metadata: a JSON object (never null).
    pub metadata: Value,
    /// `true` if the payload holds the full state; `false` if it holds a delta from the parent.
    pub is_snapshot: bool,
    /// The engine's encoded body. Savers store it byte for byte.
    pub payload: Vec<u8>,
}

/// A write of one task that finished while its step as a whole did not (a sibling failed,
/// or an interrupt paused the step). Resuming applies these instead of re-running the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingWrite {
    /// The task's id, unique within the checkpoint.
    pub task_id: String,
    /// The task's node.
    pub node: String,
    /// The engine's encoded task output.
    pub payload: Vec<u8>,
}

/// A checkpoint and the pending writes saved against it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointTuple {
    /// The checkpoint.
    pub record: CheckpointRecord,
    /// Writes of tasks that finished after it, in the order they were saved.
    pub pending_writes: Vec<PendingWrite>,
}

/// Filters for [`Checkpointer::list`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListOptions {
    /// Only checkpoints created before this one (exclusive).
    pub before: Option<String>,
    /// At most this many (newest first).
    pub limit: Option<usize>,
    /// Only checkpoints whose metadata contains every key of this object with an equal value.
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// Storage for checkpoints, shared by every run that uses it.
///
/// Implementations must be safe to use from many tasks at once. The shared conformance
/// tests (`graphkit/tests/checkpoint_conformance.rs`) define the expected behaviour.
#[async_trait]
pub trait Checkpointer: Send + Sync + Debug + 'static {
    /// Saves a checkpoint. Saving an id that exists replaces it.
    async fn put(&self, record: CheckpointRecord) -> Result<(), StorageError>;

    /// Saves several checkpoints, in order, at once where the backend can (one transaction
    /// for SQLite). The background writer of `Durability::Async` uses it to group commits.
    async fn put_many(&self, records: Vec<CheckpointRecord>) -> Result<(), StorageError> {
        for record in records {
            self.put(record).await?;
        }
        Ok(())
    }

    /// Saves pending writes against a checkpoint (appending to those already saved; a
    /// write whose `task_id` is already saved for that checkpoint replaces it).
    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), StorageError>;

    /// The checkpoint with this id, or the newest of the thread when `checkpoint_id` is None.
    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<CheckpointTuple>, StorageError>;

    /// The thread's checkpoints, newest first.
    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, StorageError>;

    /// Deletes every checkpoint and pending write of the thread (all namespaces).
    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError>;

    /// Deletes the checkpoints of one run on a thread (those whose metadata `run_id` is
    /// `run_id`, in every namespace) with their pending writes, and returns how many
    /// checkpoints went. A server rolls a cancelled run back with it; name the run with
    /// [`RunConfig::with_checkpoint_metadata`](crate::RunConfig::with_checkpoint_metadata).
    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, StorageError>;

    /// Takes the thread for one run. Returns `false` if another live run (in this process
    /// or another) holds it. A holder that died (its process was killed, its connection
    /// dropped) must not keep the thread locked.
    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, StorageError>;

    /// Releases the thread if `run_id` holds it.
    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), StorageError>;
}

/// A new checkpoint id: 32 hex digits, the first 16 the current time in microseconds and
/// the rest random, so ids sort by creation time. `after` (the newest id of the thread, if
/// known) guarantees the new id sorts after it even if the clock went backwards.
pub fn new_checkpoint_id(after: Option<&str>) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let floor = after
        .and_then(|id| id.get(..16))
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .map_or(0, |t| t + 1);
    let mut id = [0; 32];
    let (time, random) = id.split_at_mut(16);
    write_hex16(time, now.max(floor));
    write_hex16(random, rand::random::<u64>());
    // (Hex digits are ASCII: the conversion cannot fail.)
    std::str::from_utf8(&id)
        .map(str::to_owned)
        .unwrap_or_default()
}

/// Writes `value` as 16 lowercase hex digits into `out` (what `{:016x}` writes, for a
/// fraction of its cost: a checkpoint id is made per step).
fn write_hex16(out: &mut [u8], value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (i, byte) in out.iter_mut().take(16).enumerate() {
        *byte = DIGITS[((value >> ((15 - i) * 4)) & 0xf) as usize];
    }
}

pub use crate::clock::now_ms;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_are_what_format_writes() {
        for value in [0, 1, 0xabc, u64::MAX, 0x0123_4567_89ab_cdef] {
            let mut out = [0; 16];
            write_hex16(&mut out, value);
            assert_eq!(
                std::str::from_utf8(&out),
                Ok(format!("{value:016x}").as_str())
            );
        }
    }

    #[test]
    fn a_new_checkpoint_id_sorts_after_the_one_it_follows() {
        let later = "ffffffffffff0000".to_owned() + "0000000000000000";
        let id = new_checkpoint_id(Some(&later));
        assert_eq!(id.len(), 32);
        assert!(
            id.as_str() > later.as_str(),
            "{id} should sort after {later}"
        );
        assert!(id.starts_with("ffffffffffff0001"));
    }
}
