//! The borrowed shapes the engine encodes into checkpoints and pending writes (the same
//! JSON as `checkpoint::format`, which decodes them), and the records of gotos and tasks.

use serde::Serialize;
use serde_json::Value;

use crate::checkpoint::format::GotoRecord;
use crate::command::Goto;
use crate::graph::compiled::{GraphCore, NodeId};
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

/// The node names of a graph, for encoding its tasks without knowing its state type.
pub(crate) trait NodeNames: Sync {
    /// The name of node `id`.
    fn node_name(&self, id: NodeId) -> &str;
}

impl<S: State> NodeNames for GraphCore<S> {
    fn node_name(&self, id: NodeId) -> &str {
        &self.nodes[id].name
    }
}

/// Tasks borrowed for encoding, as a list of `format::TaskRecord` (the same JSON), with no
/// record or name copied per task.
pub(crate) struct TaskList<'a> {
    names: &'a dyn NodeNames,
    tasks: &'a [Task],
}

/// One task of a [`TaskList`], encoded as a `format::TaskRecord`.
#[derive(Serialize)]
struct TaskRecordRef<'a> {
    node: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<Value>,
}

impl Serialize for TaskList<'_> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        serializer.collect_seq(self.tasks.iter().map(|t| TaskRecordRef {
            node: self.names.node_name(t.node),
            input: t.input.as_ref().map(|p| p.to_json().unwrap_or(Value::Null)),
        }))
    }
}

impl TaskList<'_> {
    /// `true` when there is no task.
    pub(crate) fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

/// What a checkpoint plans after it, ready to encode: the next step's tasks, join
/// progress, and the held tasks of deferred nodes (all borrowed).
pub(crate) struct Planned<'a> {
    pub(crate) next: TaskList<'a>,
    pub(crate) joins: &'a [Vec<bool>],
    pub(crate) deferred: TaskList<'a>,
}

impl<'a> Planned<'a> {
    /// The tasks `next` after a checkpoint, with the run's `joins`.
    pub(crate) fn of<S: State>(
        core: &'a GraphCore<S>,
        next: &'a [Task],
        joins: &'a JoinProgress,
    ) -> Self {
        Self {
            next: TaskList {
                names: core,
                tasks: next,
            },
            joins: &joins.seen,
            deferred: TaskList {
                names: core,
                tasks: &joins.deferred,
            },
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
