//! Saving one checkpoint per super-step: a delta (the step's writes) or a full snapshot,
//! written inline or, with `Durability::Async`, in order on a background writer.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::Persist;
use super::records::{Planned, TaskList, TaskWriteRef};
use crate::checkpoint::format;
use crate::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, FORMAT_VERSION, new_checkpoint_id, now_ms,
};
use crate::context::config::Durability;
use crate::error::{Error, StorageError};
use crate::state::State;

/// Take a full snapshot once the deltas since the last one outweigh it (and at least this
/// many bytes), so total bytes written stay proportional to the data, and loading replays
/// at most about one state's worth of deltas.
const MIN_SNAPSHOT_INTERVAL_BYTES: usize = 16 * 1024;
/// Never chain more deltas than this before a snapshot.
const MAX_CHAIN: usize = 1000;

#[derive(Serialize)]
#[serde(bound = "")]
struct BodyRef<'a, S: State> {
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a S>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    writes: &'a [TaskWriteRef<'a, S>],
    next: &'a TaskList<'a>,
    joins: &'a [Vec<bool>],
    #[serde(skip_serializing_if = "TaskList::is_empty")]
    deferred: &'a TaskList<'a>,
}

/// A checkpoint [`Persist::save`] saved (or queued, with `Durability::Async`).
pub(crate) struct Saved {
    pub(crate) checkpoint_id: String,
    /// Its step number.
    pub(crate) step: i64,
}

impl Persist {
    /// Saves a checkpoint after `writes` were applied to `state`, planning `planned`;
    /// returns its id and step.
    /// The one checkpoint of `Durability::Exit`, when the run stops: it holds the state
    /// after the last super-step counted, so it carries that step's number.
    pub(crate) async fn save_at_exit<S: State>(
        &mut self,
        state: &S,
        planned: &Planned<'_>,
    ) -> Result<Saved, Error> {
        self.step -= 1;
        self.save(CheckpointSource::Loop, state, &[], planned, &[])
            .await
    }

    pub(crate) async fn save<S: State>(
        &mut self,
        source: CheckpointSource,
        state: &S,
        writes: &[TaskWriteRef<'_, S>],
        planned: &Planned<'_>,
        ran: &[&str],
    ) -> Result<Saved, Error> {
        // Without a checkpoint per step the parent holds an older state, so only a full
        // snapshot is correct; the first checkpoint and a long chain need one too. Only
        // otherwise is the delta encoded, and then it is kept unless it outweighs the last
        // snapshot.
        let must_snapshot =
            !self.per_step() || self.current.is_none() || self.chain_len >= MAX_CHAIN;
        let delta = if must_snapshot {
            None
        } else {
            let body = BodyRef::<S> {
                state: None,
                writes,
                next: &planned.next,
                joins: planned.joins,
                deferred: &planned.deferred,
            };
            Some(format::encode(&body, "checkpoint delta")?)
        };
        let threshold = self.snapshot_bytes.max(MIN_SNAPSHOT_INTERVAL_BYTES);
        let (payload, is_snapshot) = match delta {
            Some(delta) if self.delta_bytes + delta.len() <= threshold => {
                self.chain_len += 1;
                self.delta_bytes += delta.len();
                (delta, false)
            }
            _ => {
                let body = BodyRef::<S> {
                    state: Some(state),
                    // The step's writes are kept beside the state: history shows them
                    // as the results of the tasks the parent checkpoint planned.
                    writes,
                    next: &planned.next,
                    joins: planned.joins,
                    deferred: &planned.deferred,
                };
                let full = format::encode(&body, "checkpoint state")?;
                self.chain_len = 0;
                self.delta_bytes = 0;
                self.snapshot_bytes = full.len();
                (full, true)
            }
        };
        self.step += 1;
        let tasks_of = match std::mem::take(&mut self.carry_tasks) {
            true => self.tasks_of.take().or_else(|| self.current.clone()),
            false => None,
        };
        let mut metadata = json!({ "source": source.as_str(), "step": self.step, "run_id": self.run_id, "writes": ran });
        if let (Some(origin), Some(map)) = (&tasks_of, metadata.as_object_mut()) {
            map.insert("tasks_of".into(), Value::String(origin.clone()));
        }
        if let Some(map) = metadata.as_object_mut() {
            for (key, value) in &self.extra_metadata {
                map.insert(key.clone(), value.clone());
            }
        }
        let record = CheckpointRecord {
            thread_id: self.thread_id.clone(),
            checkpoint_ns: self.ns.clone(),
            checkpoint_id: new_checkpoint_id(self.current.as_deref()),
            parent_id: self.current.clone(),
            format_version: FORMAT_VERSION,
            step: self.step,
            source,
            created_at_ms: now_ms(),
            metadata,
            is_snapshot,
            payload,
        };
        let saved = Saved {
            checkpoint_id: record.checkpoint_id.clone(),
            step: self.step,
        };
        // The record moves into the saver: only its id is kept.
        match self.durability {
            Durability::Async => {
                let saver = &self.saver;
                let writer = self
                    .writer
                    .get_or_insert_with(|| BackgroundWriter::start(Arc::clone(saver)));
                if writer.queue.send(record).is_err() {
                    // The writer stopped on an error: report it. (Boxed: rare; a run's
                    // futures keep no room for it.)
                    Box::pin(self.flush()).await?;
                }
            }
            // No span without a subscriber: even a disabled one costs.
            Durability::Sync | Durability::Exit if tracing::dispatcher::has_been_set() => {
                let span = tracing::debug_span!(
                    "checkpoint_save",
                    thread_id = %self.thread_id,
                    step = self.step,
                    checkpoint_id = %record.checkpoint_id,
                    bytes = record.payload.len(),
                    snapshot = is_snapshot,
                );
                Box::pin(tracing::Instrument::instrument(
                    self.saver.put(record),
                    span,
                ))
                .await?;
            }
            Durability::Sync | Durability::Exit => self.saver.put(record).await?,
        }
        self.current = Some(saved.checkpoint_id.clone());
        self.tasks_of = tasks_of;
        Ok(saved)
    }

    /// The next checkpoint saved holds the current one's pending step (moved there with
    /// its pending writes): its subgraph tasks keep their namespaces.
    pub(crate) fn carry_pending_tasks(&mut self) {
        self.carry_tasks = true;
    }

    /// Waits for checkpoints still being written in the background.
    pub(crate) async fn flush(&mut self) -> Result<(), Error> {
        match self.writer.take() {
            Some(writer) => writer.finish().await,
            None => Ok(()),
        }
    }
}

/// The most checkpoints one group commit of the background writer holds.
const GROUP_COMMIT_MAX: usize = 256;

/// Saves checkpoints in order on a background task (`Durability::Async`).
pub(super) struct BackgroundWriter {
    queue: tokio::sync::mpsc::UnboundedSender<CheckpointRecord>,
    done: tokio::task::JoinHandle<Result<(), Error>>,
}

impl BackgroundWriter {
    fn start(saver: Arc<dyn Checkpointer>) -> Self {
        let (queue, mut records) = tokio::sync::mpsc::unbounded_channel::<CheckpointRecord>();
        let done = tokio::spawn(async move {
            // Everything queued while the last write ran goes out in one batch: a slow
            // disk means fewer, larger commits rather than a growing queue.
            let mut batch = Vec::new();
            while records.recv_many(&mut batch, GROUP_COMMIT_MAX).await > 0 {
                let records = std::mem::take(&mut batch);
                if records.len() == 1 {
                    for record in records {
                        saver.put(record).await?;
                    }
                } else {
                    saver.put_many(records).await?;
                }
            }
            Ok(())
        });
        Self { queue, done }
    }

    async fn finish(self) -> Result<(), Error> {
        drop(self.queue);
        self.done
            .await
            .map_err(|e| StorageError::backend("checkpoint writer", e))?
    }
}
