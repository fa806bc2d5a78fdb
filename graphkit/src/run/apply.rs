//! Applying a step's writes: every task's output through the reducers, in task order.

use std::sync::Arc;

use crate::command::{CommandGraph, Goto};
use crate::error::{Error, ParentCommand};
use crate::graph::compiled::GraphCore;
use crate::graph::node::NodeOutput;
use crate::run::emitter::Emitter;
use crate::run::plan::Task;
use crate::state::{State, StepWrites};

/// A task's writes as applied, kept for the step's checkpoint.
pub(crate) struct RecordedWrite<S: State> {
    pub(crate) node: Arc<str>,
    pub(crate) updates: Vec<S::Update>,
}

/// Applies `outputs` (one per task, in task order) to `state`, with `writes` (cleared by
/// the caller) as the step's bookkeeping. Pushes the `Command` targets of each task that
/// has some to `gotos` (cleared first), with the task's index: a step of many tasks that do
/// not route keeps no list per task. `cached` lists the tasks whose output came from the node cache (their
/// updates are streamed as cached). `collected` receives a copy of every applied update (used by
/// same-state subgraphs to hand their writes to the parent); `recorded` receives them per
/// task (for the checkpoint's delta).
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_writes<S: State>(
    core: &GraphCore<S>,
    state: &mut S,
    tasks: &[Task],
    outputs: impl IntoIterator<Item = NodeOutput<S>>,
    cached: &[usize],
    emitter: &Emitter<S>,
    collected: &mut Option<Vec<S::Update>>,
    mut recorded: Option<&mut Vec<RecordedWrite<S>>>,
    writes: &mut StepWrites,
    gotos: &mut Vec<(usize, Vec<Goto>)>,
) -> Result<(), Error> {
    gotos.clear();
    for (index, (task, output)) in tasks.iter().zip(outputs).enumerate() {
        let node = &core.nodes[task.node].name;
        // (An empty list is the rule: no cache, or no hit this step.)
        let hit = !cached.is_empty() && cached.contains(&index);
        writes.begin_task(index, node);
        let mut record = recorded.as_deref_mut().map(|r| {
            r.push(RecordedWrite {
                node: Arc::clone(node),
                updates: Vec::new(),
            });
            r.len() - 1
        });
        let mut apply = |update: S::Update| -> Result<(), Error> {
            emitter.update(node, &update, hit);
            if let Some(collected) = collected.as_mut() {
                collected.push(update.clone());
            }
            if let (Some(i), Some(r)) = (record.as_mut(), recorded.as_deref_mut()) {
                r[*i].updates.push(update.clone());
            }
            state.apply(update, writes)
        };
        match output {
            NodeOutput::Update(update) => apply(update)?,
            NodeOutput::Updates(updates) => {
                for update in updates {
                    apply(update)?;
                }
            }
            NodeOutput::Writes {
                updates,
                gotos: targets,
            } => {
                for update in updates {
                    apply(update)?;
                }
                if !targets.is_empty() {
                    gotos.push((index, targets));
                }
            }
            NodeOutput::Command(command) if command.graph == CommandGraph::Parent => {
                return Err(Error::ParentCommand {
                    node: node.to_string(),
                    command: ParentCommand(command),
                });
            }
            NodeOutput::Command(command) => {
                if let Some(update) = command.update {
                    apply(update)?;
                } else {
                    emitter.update(node, &S::Update::default(), hit);
                }
                if !command.goto.is_empty() {
                    gotos.push((index, command.goto));
                }
            }
        }
    }
    Ok(())
}

/// Applies the writes of the tasks of a stopped step that did finish (`finished`: task
/// index and its updates, in task order) to `state`, with the step's conflict checks: two
/// last-value writes are [`Error::InvalidConcurrentUpdate`] here as in a whole step. On an
/// error, the index of the task whose write failed comes with it, and `state` may hold the
/// writes before it.
pub(crate) fn apply_finished<'a, S: State>(
    core: &GraphCore<S>,
    state: &mut S,
    tasks: &[Task],
    finished: impl IntoIterator<Item = (usize, &'a [S::Update])>,
) -> Result<(), (usize, Error)> {
    let mut writes = StepWrites::default();
    for (index, updates) in finished {
        let Some(task) = tasks.get(index) else {
            continue;
        };
        writes.begin_task(index, &core.nodes[task.node].name);
        for update in updates {
            state
                .apply(update.clone(), &mut writes)
                .map_err(|error| (index, error))?;
        }
    }
    Ok(())
}

/// [`apply_finished`] for reading or repairing a thread: when the finished writes cannot be
/// applied together (two writers of one last-value field, say), `state` is left as it was
/// before the step and the failing task's index and the error are returned.
pub(crate) fn apply_finished_or_keep<S: State>(
    core: &GraphCore<S>,
    state: &mut S,
    tasks: &[Task],
    finished: &[(usize, &[S::Update])],
) -> Option<(usize, Error)> {
    if finished.is_empty() {
        return None;
    }
    let mut applied = state.clone();
    match apply_finished(core, &mut applied, tasks, finished.iter().copied()) {
        Ok(()) => {
            *state = applied;
            None
        }
        Err(conflict) => Some(conflict),
    }
}
