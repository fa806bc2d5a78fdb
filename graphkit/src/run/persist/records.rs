//! The borrowed shapes the engine encodes into checkpoints and pending writes (the same
//! JSON as `checkpoint::format`, which decodes them), and the records of gotos and tasks.

use serde::Serialize;
use serde_json::Value;

use crate::checkpoint::format::{GotoRecord, TaskRecord};
use crate::command::Goto;
use crate::graph::compiled::GraphCore;
use crate::graph::node::NodeOutput;
use crate::run::plan::{JoinProgress, Task};
use crate::state::State;

/// One task's writes, borrowed for encoding (same JSON shape as `format::TaskWrite`).
#[derive(Serialize)]
#[serde(bound = "")]
pub(crate) struct TaskWriteRef<'a, S: State> {
    pub(crate) node: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) updates: &'a [S::Update],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) gotos: Vec<GotoRecord>,
}

pub(crate) fn goto_records(gotos: &[Goto]) -> Vec<GotoRecord> {
    gotos
        .iter()
        .map(|g| match g {
            Goto::Node(n) => GotoRecord::Node(n.to_string()),
            Goto::Send(s) => GotoRecord::Send {
                node: s.node.to_string(),
                input: s.input.to_json().unwrap_or(Value::Null),
            },
        })
        .collect()
}

fn task_records<S: State>(core: &GraphCore<S>, tasks: &[Task]) -> Vec<TaskRecord> {
    tasks
        .iter()
        .map(|t| TaskRecord {
            node: core.nodes[t.node].name.to_string(),
            input: t.input.as_ref().map(|p| p.to_json().unwrap_or(Value::Null)),
        })
        .collect()
}

/// What a checkpoint plans after it, ready to encode: the next step's tasks, join
/// progress, and the held tasks of deferred nodes.
pub(crate) struct Planned<'a> {
    pub(crate) next: Vec<TaskRecord>,
    pub(crate) joins: &'a [Vec<bool>],
    pub(crate) deferred: Vec<TaskRecord>,
}

impl<'a> Planned<'a> {
    /// The tasks `next` after a checkpoint, with the run's `joins`.
    pub(crate) fn of<S: State>(
        core: &GraphCore<S>,
        next: &[Task],
        joins: &'a JoinProgress,
    ) -> Self {
        Self {
            next: task_records(core, next),
            joins: &joins.seen,
            deferred: task_records(core, &joins.deferred),
        }
    }
}

/// The writes of a task output, borrowed for a pending write.
pub(crate) fn output_ref<'a, S: State>(
    node: &'a str,
    output: &'a NodeOutput<S>,
) -> TaskWriteRef<'a, S> {
    let (updates, gotos): (&[S::Update], Vec<GotoRecord>) = match output {
        NodeOutput::Update(update) => (std::slice::from_ref(update), Vec::new()),
        NodeOutput::Updates(updates) => (updates, Vec::new()),
        NodeOutput::Command(command) => (command.update.as_slice(), goto_records(&command.goto)),
        NodeOutput::Writes { updates, gotos } => (updates, goto_records(gotos)),
    };
    TaskWriteRef {
        node,
        updates,
        gotos,
    }
}
