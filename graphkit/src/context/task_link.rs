//! A task's place in its thread's checkpoints: the task's stable id, and the namespace
//! where a subgraph run inside the task keeps its own checkpoints.

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::checkpoint::format::{self, CallRecord};
use crate::checkpoint::{Checkpointer, PendingWrite};
use crate::error::Error;

/// A task's place in its thread's checkpoints: what a subgraph run inside the task needs
/// to keep checkpoints of its own, in the task's namespace.
#[derive(Debug)]
pub(crate) struct TaskLink {
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) thread_id: String,
    /// The namespace of the graph the task belongs to.
    pub(crate) ns: String,
    /// The checkpoint the task's pending writes attach to.
    pub(crate) checkpoint_id: String,
    /// The checkpoint that planned the task's step, if not `checkpoint_id`: its id
    /// names the task's namespace.
    pub(crate) tasks_of: Option<String>,
    /// The task's index in its step.
    pub(crate) index: usize,
    /// The task's node.
    pub(crate) node: Arc<str>,
}

impl TaskLink {
    /// The namespace of a subgraph run inside this task.
    pub(crate) fn child_namespace(&self) -> String {
        let planned_by = self.tasks_of.as_deref().unwrap_or(&self.checkpoint_id);
        task_namespace(&self.ns, &self.node, planned_by, self.index)
    }

    /// Clears the resume values saved for this task: a subgraph run inside it has handed
    /// them to its own interrupted tasks (a value is never answered twice).
    pub(crate) async fn take_resume(&self) -> Result<(), Error> {
        // The `Resume` variant of a pending write, which does not depend on the state type.
        #[derive(Serialize)]
        enum ResumeOnly {
            Resume([Value; 0]),
        }
        let payload = format::encode(&ResumeOnly::Resume([]), "pending write")?;
        let write = PendingWrite {
            task_id: format!("resume:{}", self.index),
            node: self.node.to_string(),
            payload,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, &self.checkpoint_id, vec![write])
            .await?;
        Ok(())
    }

    /// Saves what an entrypoint's task call recorded (functional API) as a pending write
    /// of this task.
    pub(crate) async fn record_call(&self, record: &CallRecord) -> Result<(), Error> {
        // The `Call` variant of a pending write, which does not depend on the state type.
        #[derive(Serialize)]
        enum CallOnly<'a> {
            Call(&'a CallRecord),
        }
        let write = PendingWrite {
            task_id: record.task_id(self.index),
            node: self.node.to_string(),
            payload: format::encode(&CallOnly::Call(record), "pending write")?,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, &self.checkpoint_id, vec![write])
            .await?;
        Ok(())
    }
}

/// Stable id of the interrupt raised by task `task` of the step after `checkpoint_id`.
pub(crate) fn interrupt_id(checkpoint_id: &str, task: usize) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in checkpoint_id
        .bytes()
        .chain(b":".iter().copied())
        .chain(task.to_string().bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The checkpoint namespace of a subgraph run inside task `index` (of node `node`) of the
/// step planned by checkpoint `checkpoint_id` in namespace `parent_ns`: LangGraph's
/// `node:task_id`, nested with `|`.
pub(crate) fn task_namespace(
    parent_ns: &str,
    node: &str,
    checkpoint_id: &str,
    index: usize,
) -> String {
    let task_id = interrupt_id(checkpoint_id, index);
    if parent_ns.is_empty() {
        format!("{node}:{task_id}")
    } else {
        format!("{parent_ns}|{node}:{task_id}")
    }
}
