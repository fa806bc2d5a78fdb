//! Pending writes: saved against the checkpoint a step started from, keyed by task, so
//! that a step that stops part-way does not run its finished tasks again.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use super::Persist;
use super::records::{TaskWriteRef, output_ref};
use crate::checkpoint::format;
use crate::checkpoint::{Checkpointer, PendingWrite};
use crate::context::task_link::{TaskLink, interrupt_id};
use crate::error::Error;
use crate::graph::node::NodeOutput;
use crate::state::State;

/// A pending write's payload, borrowed for encoding (same JSON shape as `format::Pending`).
#[derive(Serialize)]
#[serde(bound = "")]
pub(crate) enum PendingRef<'a, S: State> {
    Output(TaskWriteRef<'a, S>),
    Interrupt {
        id: &'a str,
        index: usize,
        payload: &'a Value,
    },
    Resume(&'a [Value]),
    Error {
        message: &'a str,
    },
}

impl Persist {
    /// What a task needs to save its own pending write.
    pub(crate) fn task_saver(&self, index: usize, save_output: bool) -> Option<TaskSaver> {
        if !self.per_step() {
            return None;
        }
        let checkpoint_id = self.current.clone()?;
        Some(TaskSaver {
            saver: Arc::clone(&self.saver),
            thread_id: self.thread_id.clone(),
            ns: self.ns.clone(),
            checkpoint_id,
            tasks_of: self.tasks_of.clone(),
            index,
            save_output,
        })
    }

    /// Saves a pending write against the current checkpoint.
    pub(crate) async fn save_pending<S: State>(
        &self,
        task_id: String,
        node: &str,
        pending: &PendingRef<'_, S>,
    ) -> Result<(), Error> {
        let Some(checkpoint_id) = &self.current else {
            return Ok(());
        };
        let payload = format::encode(pending, "pending write")?;
        let write = PendingWrite {
            task_id,
            node: node.to_owned(),
            payload,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, checkpoint_id, vec![write])
            .await?;
        Ok(())
    }

    /// Saves `writes` (pending writes loaded from an earlier checkpoint) against the
    /// current checkpoint, which now holds the same pending step.
    pub(crate) async fn copy_pending(&self, writes: Vec<PendingWrite>) -> Result<(), Error> {
        let Some(checkpoint_id) = &self.current else {
            return Ok(());
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, checkpoint_id, writes)
            .await?;
        Ok(())
    }
}

/// Lets a task save its output (or its interrupt) the moment it finishes.
pub(crate) struct TaskSaver {
    saver: Arc<dyn Checkpointer>,
    thread_id: String,
    ns: String,
    pub(crate) checkpoint_id: String,
    /// The checkpoint that planned the task, if not `checkpoint_id`.
    tasks_of: Option<String>,
    pub(crate) index: usize,
    save_output: bool,
}

impl TaskSaver {
    /// `true` when `result` is something this saver keeps: an output (if it saves
    /// outputs) or an interrupt.
    pub(crate) fn wants<S: State>(&self, result: &Result<NodeOutput<S>, Error>) -> bool {
        match result {
            Ok(_) => self.save_output,
            Err(Error::Interrupt(_)) => true,
            Err(_) => false,
        }
    }

    pub(crate) async fn output<S: State>(
        &self,
        node: &str,
        output: &NodeOutput<S>,
    ) -> Result<(), Error> {
        if !self.save_output {
            return Ok(());
        }
        let pending: PendingRef<'_, S> = PendingRef::Output(output_ref(node, output));
        self.put(
            node,
            self.index.to_string(),
            format::encode(&pending, "pending write")?,
        )
        .await
    }

    pub(crate) async fn interrupt<S: State>(
        &self,
        node: &str,
        index: usize,
        payload: &Value,
    ) -> Result<(), Error> {
        let id = interrupt_id(&self.checkpoint_id, self.index);
        let pending: PendingRef<'_, S> = PendingRef::Interrupt {
            id: &id,
            index,
            payload,
        };
        self.put(
            node,
            self.index.to_string(),
            format::encode(&pending, "pending write")?,
        )
        .await
    }

    /// Where the task (of node `node`) runs in the thread, for a subgraph run inside it.
    pub(crate) fn link(&self, node: &Arc<str>) -> Arc<TaskLink> {
        Arc::new(TaskLink {
            saver: Arc::clone(&self.saver),
            thread_id: self.thread_id.clone(),
            ns: self.ns.clone(),
            tasks_of: self.tasks_of.clone(),
            checkpoint_id: self.checkpoint_id.clone(),
            index: self.index,
            node: Arc::clone(node),
        })
    }

    async fn put(&self, node: &str, task_id: String, payload: Vec<u8>) -> Result<(), Error> {
        let write = PendingWrite {
            task_id,
            node: node.to_owned(),
            payload,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, &self.checkpoint_id, vec![write])
            .await?;
        Ok(())
    }
}
