//! The thread API: reading a thread's state and history, writing to it, deleting it.

use std::sync::Arc;

use serde_json::Value;

use crate::checkpoint::format::{self, Loaded};
use crate::checkpoint::{
    CheckpointRecord, CheckpointSource, CheckpointTuple, Checkpointer, ListOptions,
};
use crate::error::Error;
use crate::graph::compiled::CompiledGraph;
use crate::interrupt::Interrupt;
use crate::run::config::RunConfig;
use crate::run::persist::{Persist, TaskWriteRef, pending_step, restore_tasks, task_records};
use crate::run::plan::{self, JoinProgress, Task};
use crate::state::State;

/// A thread's state at one checkpoint, as `get_state` and `get_state_history` return it.
#[derive(Debug, Clone)]
pub struct StateSnapshot<S: State> {
    /// The state.
    pub values: S,
    /// The nodes the next super-step runs (empty when the run finished).
    pub next: Vec<String>,
    /// The thread.
    pub thread_id: String,
    /// This checkpoint.
    pub checkpoint_id: String,
    /// The checkpoint before it.
    pub parent_checkpoint_id: Option<String>,
    /// The super-step (0 for a thread's first input).
    pub step: i64,
    /// What created it.
    pub source: CheckpointSource,
    /// When, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Its metadata (source, step, the nodes whose writes it holds, the run id).
    pub metadata: Value,
    /// Interrupts waiting for an answer at this checkpoint.
    pub interrupts: Vec<Interrupt>,
}

impl<S: State> StateSnapshot<S> {
    /// A run config pointing at this checkpoint: running with it forks from here.
    pub fn config(&self) -> RunConfig {
        RunConfig::new()
            .thread_id(self.thread_id.clone())
            .checkpoint_id(self.checkpoint_id.clone())
    }
}

impl<S: State> CompiledGraph<S> {
    fn saver(&self, what: &'static str) -> Result<&Arc<dyn Checkpointer>, Error> {
        self.core
            .checkpointer
            .as_ref()
            .ok_or(Error::NoCheckpointer(what))
    }

    fn snapshot_of(
        &self,
        loaded: Loaded<S>,
        tuple: &CheckpointTuple,
    ) -> Result<StateSnapshot<S>, Error> {
        let pending = pending_step(&self.core, &loaded.record, &tuple.pending_writes)?;
        let record: CheckpointRecord = loaded.record;
        Ok(StateSnapshot {
            values: loaded.state,
            next: loaded.body.next.into_iter().map(|t| t.node).collect(),
            thread_id: record.thread_id,
            checkpoint_id: record.checkpoint_id,
            parent_checkpoint_id: record.parent_id,
            step: record.step,
            source: record.source,
            created_at_ms: record.created_at_ms,
            metadata: record.metadata,
            interrupts: pending.all_interrupts(),
        })
    }

    /// The thread's state at its newest checkpoint, or at `config`'s checkpoint id.
    ///
    /// # Errors
    /// [`Error::NoCheckpointer`], [`Error::MissingThreadId`], [`Error::CheckpointNotFound`],
    /// or a clear error for a checkpoint that cannot be read.
    pub async fn get_state(&self, config: &RunConfig) -> Result<StateSnapshot<S>, Error> {
        let saver = self.saver("get_state")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let tuple = saver
            .get(thread, "", config.checkpoint_id.as_deref())
            .await?
            .ok_or_else(|| Error::CheckpointNotFound {
                thread_id: thread.to_owned(),
                checkpoint_id: config.checkpoint_id.clone(),
            })?;
        let loaded = format::load::<S>(&**saver, tuple.record.clone()).await?;
        self.snapshot_of(loaded, &tuple)
    }

    /// The thread's checkpoints, newest first (filtered by `options`).
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, Error> {
        let saver = self.saver("get_state_history")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let records = saver.list(thread, "", options).await?;
        let mut history = Vec::with_capacity(records.len());
        for record in records {
            let tuple = saver
                .get(thread, "", Some(&record.checkpoint_id))
                .await?
                .ok_or_else(|| Error::CheckpointNotFound {
                    thread_id: thread.to_owned(),
                    checkpoint_id: Some(record.checkpoint_id.clone()),
                })?;
            let loaded = format::load::<S>(&**saver, tuple.record.clone()).await?;
            history.push(self.snapshot_of(loaded, &tuple)?);
        }
        Ok(history)
    }

    /// Writes `update` to the thread as if node `as_node` had returned it, and plans the
    /// next step from that node's edges (with `None`, the pending next step stays). The
    /// next `invoke_with(RunInput::Continue, ..)` continues from there. With a
    /// `checkpoint_id` in `config`, the write forks from that checkpoint.
    ///
    /// Returns a config pointing at the new checkpoint.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<RunConfig, Error> {
        let saver = self.saver("update_state")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let node = match as_node {
            Some(name) => Some(
                *self
                    .core
                    .by_name
                    .get(name)
                    .ok_or_else(|| Error::UnknownNode {
                        context: "update_state(as_node)".into(),
                        node: name.to_owned(),
                    })?,
            ),
            None => None,
        };
        let mut persist = Persist::open(Arc::clone(saver), thread, crate::Durability::Sync).await?;
        let outcome = async {
            let loaded = persist.load::<S>(config.checkpoint_id.as_deref()).await?;
            let (mut state, mut joins, pending_next) = match loaded {
                Some((loaded, _)) => {
                    let next = restore_tasks(&self.core, &loaded.record, loaded.body.next)?;
                    (
                        loaded.state,
                        JoinProgress::restore(&self.core, loaded.body.joins),
                        next,
                    )
                }
                None => (S::default(), JoinProgress::new(&self.core), Vec::new()),
            };
            state.apply_update(update.clone())?;
            let next = match node {
                Some(id) => plan::next_tasks(
                    &self.core,
                    &[Task {
                        node: id,
                        input: None,
                    }],
                    vec![Vec::new()],
                    &state,
                    &mut joins,
                    &mut plan::PlanScratch::new(&self.core),
                )?,
                None => pending_next,
            };
            let writer = as_node.unwrap_or("__update__");
            let writes = [TaskWriteRef::<S> {
                node: writer,
                updates: std::slice::from_ref(&update),
                gotos: Vec::new(),
            }];
            let record = persist
                .save(
                    // Writing on an earlier checkpoint starts a new branch.
                    if config.checkpoint_id.is_some() {
                        CheckpointSource::Fork
                    } else {
                        CheckpointSource::Update
                    },
                    &state,
                    &writes,
                    &task_records(&self.core, &next),
                    &joins.0,
                    &[writer],
                )
                .await?;
            Ok(RunConfig::new()
                .thread_id(thread)
                .checkpoint_id(record.checkpoint_id))
        }
        .await;
        let released = persist.release().await;
        outcome.and_then(|config| released.map(|()| config))
    }

    /// Deletes every checkpoint of a thread.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), Error> {
        self.saver("delete_thread")?.delete_thread(thread_id).await
    }
}
