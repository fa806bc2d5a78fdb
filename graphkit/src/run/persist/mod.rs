//! A run's link to its checkpointer, one job per module:
//!
//! - [`lock`]: taking the thread for a run and giving it back, also when the run is
//!   dropped half-way (a subgraph's persistence takes no lock: its parent holds the thread);
//! - [`load`]: reading the checkpoint a run starts from;
//! - [`save`]: writing one checkpoint per super-step, as a delta or a snapshot, inline or
//!   on a background writer;
//! - [`pending`]: pending writes, saved against the checkpoint a step started from: what a
//!   task finished with, what it paused on, what a resume answered;
//! - [`restore`]: decoding a checkpoint's pending writes and planned tasks back into the
//!   step a run continues;
//! - [`records`]: the borrowed shapes these encode (the JSON that `checkpoint::format`
//!   decodes).
//!
//! [`Persist`], defined here, is the run's side of all of it; each module adds its methods.

mod load;
mod lock;
mod pending;
mod records;
mod restore;
mod save;

use std::sync::Arc;

use crate::checkpoint::Checkpointer;
use crate::context::config::Durability;

pub(crate) use lock::ThreadRelease;
pub(crate) use pending::{PendingRef, TaskSaver};
pub(crate) use records::{Planned, TaskWriteRef, goto_records, output_ref};
pub(crate) use restore::{
    PendingStep, decode_gotos, pending_step, restore_joins, restore_tasks, tasks_of,
};

use save::BackgroundWriter;
pub(crate) use save::Saved;

/// The run's persistence state.
pub(crate) struct Persist {
    pub(crate) saver: Arc<dyn Checkpointer>,
    durability: Durability,
    writer: Option<BackgroundWriter>,
    pub(crate) thread_id: String,
    pub(crate) ns: String,
    run_id: String,
    locked: bool,
    /// Where a run dropped while it held the thread (cancelled) leaves its unlock, for
    /// the run's caller to finish before it returns (see [`ThreadRelease`]).
    release: Option<ThreadRelease>,
    /// The newest checkpoint of this run's branch (pending writes attach to it).
    pub(crate) current: Option<String>,
    /// The checkpoint that planned the current checkpoint's pending step, when that step
    /// moved to it from an earlier one (a `Command` input with an update or `goto`):
    /// subgraph tasks keep the namespace they started in.
    tasks_of: Option<String>,
    /// The next checkpoint saved takes over the current one's pending step.
    carry_tasks: bool,
    pub(crate) step: i64,
    chain_len: usize,
    delta_bytes: usize,
    snapshot_bytes: usize,
    /// Keys added to every checkpoint's metadata (`RunConfig::with_checkpoint_metadata`).
    extra_metadata: serde_json::Map<String, serde_json::Value>,
}

impl Persist {
    /// A fresh run's persistence in namespace `ns`, before any checkpoint, holding no lock.
    fn unlocked(
        saver: Arc<dyn Checkpointer>,
        durability: Durability,
        thread_id: String,
        ns: String,
    ) -> Self {
        Self {
            saver,
            durability,
            writer: None,
            thread_id,
            ns,
            run_id: format!("{:016x}{:016x}", rand::random::<u64>(), std::process::id()),
            locked: false,
            release: None,
            current: None,
            tasks_of: None,
            carry_tasks: false,
            step: -1,
            chain_len: 0,
            delta_bytes: 0,
            snapshot_bytes: 0,
            extra_metadata: serde_json::Map::new(),
        }
    }

    /// Adds these keys to the metadata of every checkpoint saved from now on.
    pub(crate) fn extra_metadata(&mut self, metadata: &serde_json::Map<String, serde_json::Value>) {
        self.extra_metadata.clone_from(metadata);
    }

    /// `true` unless checkpoints are written only when the run stops.
    pub(crate) fn per_step(&self) -> bool {
        self.durability != Durability::Exit
    }

    /// Counts the input or a super-step whose checkpoint `Durability::Exit` does not
    /// write, so that `step` counts super-steps whatever the durability.
    pub(crate) fn count_unsaved(&mut self) {
        self.step += 1;
    }
}
