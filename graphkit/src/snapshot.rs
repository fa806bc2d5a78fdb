//! What the thread API shows of a thread: its state at one checkpoint
//! ([`StateSnapshot`]), the tasks of the step it plans ([`SnapshotTask`]), and, for
//! subgraph nodes, a view of the child graph's checkpoints whatever its state type
//! ([`SubgraphView`]).
//!
//! The types live below `graph/` because a subgraph node hands out a `SubgraphView`;
//! `run/thread.rs` reads the checkpoints and fills them in.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::checkpoint::{CheckpointSource, Checkpointer, ListOptions};
use crate::context::config::RunConfig;
use crate::error::Error;
use crate::interrupt::Interrupt;
use crate::state::State;

/// A thread's state at one checkpoint, as `get_state` and `get_state_history` return it.
///
/// `S` is the type of the state: the graph's own for its checkpoints, JSON ([`Value`], the
/// default) for a subgraph's checkpoints, whose state type may differ from the parent's
/// (see [`SubgraphSnapshot`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StateSnapshot<S = Value> {
    /// The state.
    pub values: S,
    /// The nodes the next super-step runs (empty when the run finished). On the thread's
    /// newest checkpoint (`get_state` without a checkpoint id), the tasks of a stopped step
    /// that already finished are not among them (their writes are in `values`); a
    /// checkpoint of the past (`get_state_history`, or `get_state` with its id) shows its
    /// own state and lists its whole step, as LangGraph does. A deferred node that waits
    /// for the run's other tasks is not among them until they are done: see
    /// [`deferred`](Self::deferred).
    pub next: Vec<String>,
    /// The [deferred](crate::NodeOptions::defer) nodes that were triggered and wait for
    /// everything else to finish, in the order they were first triggered (a node once per
    /// `SendTo` to it). They run in the first step where nothing else is left, so they
    /// are in no step's `next` before that one; empty when none waits.
    pub deferred: Vec<String>,
    /// The thread (for a subgraph, the parent's).
    pub thread_id: String,
    /// The checkpoint namespace: `""` for the graph's own checkpoints, the child's
    /// namespace for a subgraph's.
    pub checkpoint_ns: String,
    /// This checkpoint.
    pub checkpoint_id: String,
    /// The checkpoint before it (in the same namespace).
    pub parent_checkpoint_id: Option<String>,
    /// The super-step (0 for a thread's first input, or a subgraph's input).
    pub step: i64,
    /// What created it.
    pub source: CheckpointSource,
    /// When, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Its metadata (source, step, the nodes whose writes it holds, the run id).
    pub metadata: Value,
    /// Interrupts waiting for an answer at this checkpoint.
    pub interrupts: Vec<Interrupt>,
    /// The tasks of the step this checkpoint plans, in task order, with what each did so
    /// far: LangGraph's `StateSnapshot.tasks`. A UI shows from it which task failed and why.
    /// Nested subgraphs are filled in the same way.
    pub tasks: Vec<SnapshotTask>,
}

/// One task of the step a checkpoint plans, as [`StateSnapshot::tasks`] shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotTask {
    /// The task's id (stable for this checkpoint and task).
    pub id: String,
    /// Its node.
    pub name: String,
    /// The error it failed with, if the step stopped on it.
    pub error: Option<String>,
    /// The interrupt it is paused on, if any.
    pub interrupts: Vec<Interrupt>,
    /// Its writes (the list of its updates, as JSON), once it finished: on the newest
    /// checkpoint, a task that finished before the step stopped (it does not run again);
    /// on a checkpoint of the past, what the task wrote when its step ran (the next
    /// checkpoint the run saved recorded it; a step ended by `update_state` or a fork
    /// shows none).
    pub result: Option<Value>,
    /// For a subgraph node: the checkpoint namespace where the child run inside this
    /// task keeps its checkpoints (`"node:task_id"`, nested with `|`). Read them with
    /// [`CompiledGraph::get_subgraph_state_history`](crate::CompiledGraph::get_subgraph_state_history).
    pub checkpoint_ns: Option<String>,
    /// For a subgraph node whose child run has saved checkpoints: the child's newest
    /// state. Filled by
    /// [`CompiledGraph::get_state_with_subgraphs`](crate::CompiledGraph::get_state_with_subgraphs)
    /// only.
    pub state: Option<Box<SubgraphSnapshot>>,
}

/// A subgraph's state at one checkpoint of its namespace, with its values as JSON (the
/// child's state type may differ from the parent's): what
/// [`CompiledGraph::get_state_with_subgraphs`](crate::CompiledGraph::get_state_with_subgraphs)
/// puts in [`SnapshotTask::state`] and
/// [`CompiledGraph::get_subgraph_state_history`](crate::CompiledGraph::get_subgraph_state_history)
/// returns.
pub type SubgraphSnapshot = StateSnapshot<Value>;

impl<S: State> StateSnapshot<S> {
    /// A run config pointing at this checkpoint: running with it forks from here.
    pub fn config(&self) -> RunConfig {
        RunConfig::new()
            .thread_id(self.thread_id.clone())
            .checkpoint_id(self.checkpoint_id.clone())
    }

    /// `true` when this checkpoint plans nothing more: no task in its step and no
    /// deferred node waiting — the run ended here. Unlike `next.is_empty()`, it is
    /// `false` for a step whose tasks all finished before the process stopped, before
    /// the step's checkpoint was saved (`next` leaves out finished tasks): continuing
    /// such a thread applies their saved writes and runs the steps after them.
    pub fn is_done(&self) -> bool {
        self.tasks.is_empty() && self.deferred.is_empty()
    }

    /// The same snapshot with its values as JSON.
    pub(crate) fn into_json(self) -> Result<SubgraphSnapshot, Error> {
        let values = serde_json::to_value(&self.values).map_err(|source| Error::Serde {
            what: format!("the state of checkpoint namespace `{}`", self.checkpoint_ns),
            source,
        })?;
        Ok(StateSnapshot {
            values,
            next: self.next,
            deferred: self.deferred,
            thread_id: self.thread_id,
            checkpoint_ns: self.checkpoint_ns,
            checkpoint_id: self.checkpoint_id,
            parent_checkpoint_id: self.parent_checkpoint_id,
            step: self.step,
            source: self.source,
            created_at_ms: self.created_at_ms,
            metadata: self.metadata,
            interrupts: self.interrupts,
            tasks: self.tasks,
        })
    }
}

/// Reads the checkpoints a subgraph node's child runs keep in the parent's thread,
/// whatever the child's state type.
pub(crate) trait SubgraphView: std::marker::Send + Sync {
    /// The newest checkpoint of namespace `ns`, nested subgraphs filled in.
    fn newest<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
    ) -> BoxFuture<'a, Result<Option<SubgraphSnapshot>, Error>>;

    /// The checkpoints of namespace `ns`, newest first.
    fn history<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<SubgraphSnapshot>, Error>>;

    /// Writes `update` (JSON of the child's update type) to the newest checkpoint of
    /// namespace `ns`, as `update_state` does; returns the new checkpoint's id.
    fn update<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
        update: Value,
        as_node: UpdateAs<'a>,
    ) -> BoxFuture<'a, Result<String, Error>>;

    /// The child graph of this graph's subgraph node `node`.
    fn node_subgraph(&self, node: &str) -> Option<&dyn SubgraphView>;
}

/// Whose write an [`update_state`](crate::CompiledGraph::update_state) is, which decides what runs
/// next. A node's name converts into [`UpdateAs::Node`], so `update_state(&config, update,
/// "human")` writes as node `human`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateAs<'a> {
    /// As the node that wrote the checkpoint's last step (LangGraph's default).
    LastWriter,
    /// As if this node had returned the update: its edges plan the next step.
    Node(&'a str),
    /// As the run's input: the next step is planned from `START`.
    Input,
}

impl<'a> From<&'a str> for UpdateAs<'a> {
    fn from(node: &'a str) -> Self {
        Self::Node(node)
    }
}
