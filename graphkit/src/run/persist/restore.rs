//! Restoring: a checkpoint's pending writes and planned tasks, decoded back into the step
//! a run continues (finished outputs, interrupts, resume values, errors, tasks to run).

use std::collections::HashMap;

use serde_json::Value;

use crate::checkpoint::format::{self, CallRecord, GotoRecord, Pending, TaskRecord};
use crate::checkpoint::{CheckpointRecord, PendingWrite};
use crate::command::{Goto, Packet, SendTo};
use crate::error::{Error, StorageError};
use crate::graph::compiled::GraphCore;
use crate::interrupt::{Interrupt, InterruptKind};
use crate::run::plan::{JoinProgress, Task};
use crate::state::State;

/// What a loaded checkpoint says about the step it was waiting to run.
#[derive(Default)]
pub(crate) struct PendingStep<S: State> {
    /// Outputs of tasks that already finished, by task index.
    pub(crate) outputs: HashMap<usize, (Vec<S::Update>, Vec<Goto>)>,
    /// Unanswered dynamic interrupts, by task index.
    pub(crate) interrupts: HashMap<usize, Interrupt>,
    /// For each task in `interrupts`: which of its `interrupt` calls it paused on (how
    /// many answers it had then).
    pub(crate) asked: HashMap<usize, usize>,
    /// Resume values given so far, by task index.
    pub(crate) resume: HashMap<usize, Vec<Value>>,
    /// Static interrupts recorded on the checkpoint.
    pub(crate) static_interrupts: Vec<Interrupt>,
    /// Errors of tasks that failed, by task index.
    pub(crate) errors: HashMap<usize, String>,
    /// What entrypoint tasks (functional API) recorded of their calls, by task index.
    pub(crate) calls: HashMap<usize, Vec<CallRecord>>,
}

impl<S: State> PendingStep<S> {
    /// `true` when nothing was restored: a step to run as if there were no checkpoint.
    pub(crate) fn is_empty(&self) -> bool {
        self.outputs.is_empty()
            && self.interrupts.is_empty()
            && self.asked.is_empty()
            && self.resume.is_empty()
            && self.static_interrupts.is_empty()
            && self.errors.is_empty()
            && self.calls.is_empty()
    }

    /// All unanswered interrupts, dynamic ones in task order.
    pub(crate) fn all_interrupts(&self) -> Vec<Interrupt> {
        let mut dynamic: Vec<(&usize, &Interrupt)> = self.interrupts.iter().collect();
        dynamic.sort_by_key(|(i, _)| **i);
        dynamic
            .into_iter()
            .map(|(_, i)| i.clone())
            .chain(self.static_interrupts.iter().cloned())
            .collect()
    }
}

/// Decodes the pending writes of a checkpoint.
pub(crate) fn pending_step<S: State>(
    core: &GraphCore<S>,
    record: &CheckpointRecord,
    writes: &[PendingWrite],
) -> Result<PendingStep<S>, Error> {
    let corrupt = |message: String| StorageError::CorruptCheckpoint {
        thread_id: record.thread_id.clone(),
        checkpoint_id: record.checkpoint_id.clone(),
        message,
    };
    let mut step = PendingStep::default();
    for write in writes {
        let pending = format::decode_pending::<S>(record, &write.payload)?;
        if let Some(rest) = write.task_id.strip_prefix("call:") {
            let index = rest.split(':').next().and_then(|i| i.parse::<usize>().ok());
            match (pending, index) {
                (Pending::Call(call), Some(index)) => {
                    step.calls.entry(index).or_default().push(call);
                    continue;
                }
                _ => {
                    return Err(corrupt(format!(
                        "pending write `{}` does not fit its task id",
                        write.task_id
                    ))
                    .into());
                }
            }
        }
        let (is_resume, index) = match write.task_id.strip_prefix("resume:") {
            Some(rest) => (true, rest.parse::<usize>().ok()),
            None => (false, write.task_id.parse::<usize>().ok()),
        };
        match (pending, index) {
            (Pending::Output(output), Some(index)) if !is_resume => {
                let gotos = decode_gotos(core, output.gotos)
                    .map_err(|e| corrupt(format!("a pending {e}")))?;
                step.interrupts.remove(&index);
                step.asked.remove(&index);
                step.errors.remove(&index);
                step.outputs.insert(index, (output.updates, gotos));
            }
            (
                Pending::Interrupt {
                    id,
                    payload,
                    index: asked,
                },
                Some(index),
            ) if !is_resume => {
                if !step.outputs.contains_key(&index) {
                    step.asked.insert(index, asked);
                    step.interrupts.insert(
                        index,
                        Interrupt {
                            id,
                            node: write.node.clone(),
                            payload,
                            kind: InterruptKind::Dynamic,
                        },
                    );
                }
            }
            (Pending::Interrupt { id, payload, .. }, None) => {
                let kind = if write.task_id.starts_with("after:") {
                    InterruptKind::After
                } else {
                    InterruptKind::Before
                };
                // Only the newest static pause is pending: an earlier one on the same
                // checkpoint was continued past already.
                if step
                    .static_interrupts
                    .last()
                    .is_some_and(|last| last.kind != kind)
                {
                    step.static_interrupts.clear();
                }
                step.static_interrupts.push(Interrupt {
                    id,
                    node: write.node.clone(),
                    payload,
                    kind,
                });
            }
            (Pending::Resume(values), Some(index)) if is_resume => {
                step.resume.insert(index, values);
            }
            (Pending::Error { message }, Some(index)) if !is_resume => {
                if !step.outputs.contains_key(&index) {
                    step.errors.insert(index, message);
                }
            }
            (_, _) => {
                return Err(corrupt(format!(
                    "pending write `{}` does not fit its task id",
                    write.task_id
                ))
                .into());
            }
        }
    }
    Ok(step)
}

/// Rebuilds the tasks a checkpoint planned.
pub(crate) fn restore_tasks<S: State>(
    core: &GraphCore<S>,
    record: &CheckpointRecord,
    next: Vec<TaskRecord>,
) -> Result<Vec<Task>, Error> {
    next.into_iter()
        .map(|t| {
            let corrupt = |message: String| StorageError::CorruptCheckpoint {
                thread_id: record.thread_id.clone(),
                checkpoint_id: record.checkpoint_id.clone(),
                message,
            };
            let node = *core.by_name.get(t.node.as_str()).ok_or_else(|| {
                corrupt(format!(
                    "it plans node `{}`, which this graph does not have",
                    t.node
                ))
            })?;
            let input = match t.input {
                Some(value) => Some(decode_packet(core, node, value).map_err(|e| {
                    corrupt(format!(
                        "a Send input for `{}` does not decode: {e}",
                        t.node
                    ))
                })?),
                None => None,
            };
            Ok(Task { node, input })
        })
        .collect()
}

/// Rebuilds the join progress a checkpoint saved, with its held tasks of deferred nodes.
pub(crate) fn restore_joins<S: State>(
    core: &GraphCore<S>,
    record: &CheckpointRecord,
    joins: Vec<Vec<bool>>,
    deferred: Vec<TaskRecord>,
) -> Result<JoinProgress, Error> {
    let deferred = restore_tasks(core, record, deferred)?;
    Ok(JoinProgress::restore(core, joins, deferred))
}

/// The checkpoint that planned `record`'s pending step, when the step moved to `record`
/// from it.
pub(crate) fn tasks_of(record: &CheckpointRecord) -> Option<&str> {
    record.metadata.get("tasks_of").and_then(Value::as_str)
}

/// Stored `Command` targets, decoded (each `Send` input with the type its node takes). The
/// error says which target failed, to follow "a pending " or the like.
pub(crate) fn decode_gotos<S: State>(
    core: &GraphCore<S>,
    records: Vec<GotoRecord>,
) -> Result<Vec<Goto>, String> {
    let mut gotos = Vec::with_capacity(records.len());
    for goto in records {
        gotos.push(match goto {
            GotoRecord::Node(n) => Goto::Node(n.into()),
            GotoRecord::Send { node, input } => {
                let id = *core.by_name.get(node.as_str()).ok_or_else(|| {
                    format!("Send targets node `{node}`, which this graph does not have")
                })?;
                let packet = decode_packet(core, id, input)
                    .map_err(|e| format!("Send input for `{node}` does not decode: {e}"))?;
                Goto::Send(SendTo {
                    node: node.into(),
                    input: packet,
                })
            }
        });
    }
    Ok(gotos)
}

fn decode_packet<S: State>(
    core: &GraphCore<S>,
    node: usize,
    input: Value,
) -> Result<Packet, String> {
    match core.nodes[node].decoder {
        Some(decode) => decode(input),
        None => Ok(Packet::new(input)),
    }
}
