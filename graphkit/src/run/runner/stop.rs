//! How a run stops before its end: a step that failed or paused on dynamic interrupts, or a
//! static interrupt before or after a step. What the thread needs to resume is saved here.

use std::sync::Arc;

use super::Runner;
use crate::context::task_link::interrupt_id;
use crate::error::Error;
use crate::graph::compiled::GraphCore;
use crate::graph::node::NodeOutput;
use crate::interrupt::{Interrupt, InterruptKind, InterruptSignal};
use crate::run::apply::apply_finished;
use crate::run::persist::{PendingRef, Persist, Planned, output_ref};
use crate::run::plan::{JoinProgress, Task};
use crate::state::State;

/// A step that stopped: its tasks, and what each finished, raised or failed with.
pub(crate) struct StoppedStep<'a, S: State> {
    pub(crate) tasks: &'a [Task],
    pub(crate) outputs: &'a [(usize, NodeOutput<S>)],
    pub(crate) interrupts: &'a [(usize, InterruptSignal)],
    pub(crate) failures: &'a [(usize, Error)],
    /// The tasks whose output came from the cache.
    pub(crate) cached: &'a [usize],
}

/// Which tasks a static interrupt looks at, and what runs next if it fires.
pub(crate) struct StaticCheck<'a> {
    pub(crate) kind: InterruptKind,
    pub(crate) hits: &'a [Task],
    pub(crate) next: &'a [Task],
}

impl<S: State> Runner<S> {
    /// Streams the updates of the tasks that finished before the step stopped (`updates`
    /// mode, in task order), so a caller sees what the step did. Returns the conflict, if
    /// those writes conflict with each other, as applying them would.
    pub(crate) fn show_stopped_step(
        &self,
        core: &GraphCore<S>,
        stopped: &StoppedStep<'_, S>,
    ) -> Result<(), Error> {
        let mut finished = Vec::with_capacity(stopped.outputs.len());
        for (index, output) in stopped.outputs {
            let node = &core.nodes[stopped.tasks[*index].node].name;
            let writes = output_ref(node, output);
            for update in writes.updates {
                self.emitter
                    .update(node, update, stopped.cached.contains(index));
            }
            finished.push((*index, writes.updates));
        }
        if finished.len() < 2 {
            return Ok(());
        }
        let mut scratch = self.state.clone();
        apply_finished(core, &mut scratch, stopped.tasks, finished).map_err(|(_, error)| error)
    }

    /// Saves what the thread needs to resume a stopped step: the errors of the tasks that
    /// failed (so a UI can show them) and, with `Durability::Exit` (nothing saved yet), the
    /// state before the step, the step as the next one, and its finished tasks and
    /// interrupts as pending writes.
    pub(crate) async fn save_stopped_step(
        &self,
        core: &GraphCore<S>,
        persist: &mut Persist,
        joins: &JoinProgress,
        stopped: &StoppedStep<'_, S>,
    ) -> Result<(), Error> {
        let node = |index: usize| &*core.nodes[stopped.tasks[index].node].name;
        if !persist.per_step() {
            let planned = Planned::of(core, stopped.tasks, joins);
            let record = persist.save_at_exit(&self.state, &planned).await?;
            for (index, output) in stopped.outputs {
                let pending = PendingRef::Output(output_ref(node(*index), output));
                persist
                    .save_pending::<S>(index.to_string(), node(*index), &pending)
                    .await?;
            }
            for (index, signal) in stopped.interrupts {
                let id = interrupt_id(&record.checkpoint_id, *index);
                let pending = PendingRef::Interrupt {
                    id: &id,
                    index: signal.index,
                    payload: &signal.payload,
                };
                persist
                    .save_pending::<S>(index.to_string(), node(*index), &pending)
                    .await?;
            }
        }
        for (index, error) in stopped.failures {
            let message = error.to_string();
            let pending = PendingRef::Error { message: &message };
            persist
                .save_pending::<S>(index.to_string(), node(*index), &pending)
                .await?;
        }
        Ok(())
    }

    /// Stops the run if one of `check.hits` is marked to interrupt before (or after) it.
    pub(crate) async fn static_interrupt(
        &self,
        core: &GraphCore<S>,
        check: StaticCheck<'_>,
        joins: &JoinProgress,
        persist: Option<&mut Persist>,
    ) -> Result<(), Error> {
        let StaticCheck {
            kind,
            hits: tasks,
            next,
        } = check;
        // A subgraph run shares the parent's config, whose per-run lists name the
        // parent's nodes.
        let per_run: &[Arc<str>] = match kind {
            _ if self.is_subgraph => &[],
            InterruptKind::After => &self.config.interrupt_after,
            _ => &self.config.interrupt_before,
        };
        let mut hits: Vec<&Arc<str>> = tasks
            .iter()
            .map(|t| &core.nodes[t.node])
            .filter(|n| {
                let compiled = if kind == InterruptKind::After {
                    n.interrupt_after
                } else {
                    n.interrupt_before
                };
                compiled || per_run.contains(&n.name)
            })
            .map(|n| &n.name)
            .collect();
        hits.dedup();
        // A subgraph run without checkpoints of its own would meet the same static
        // interrupt again each time its task re-runs: it does not stop there.
        if hits.is_empty() || (self.is_subgraph && persist.is_none()) {
            return Ok(());
        }
        let Some(p) = persist else {
            return Err(Error::NoCheckpointer("interrupt_before / interrupt_after"));
        };
        if !p.per_step() {
            let planned = Planned::of(core, next, joins);
            p.save_at_exit(&self.state, &planned).await?;
        }
        let label = if kind == InterruptKind::After {
            "after"
        } else {
            "before"
        };
        let mut interrupts = Vec::with_capacity(hits.len());
        for node in hits {
            let id = format!("{label}:{node}");
            p.save_pending::<S>(
                id.clone(),
                node,
                &PendingRef::Interrupt {
                    id: &id,
                    index: 0,
                    payload: &serde_json::Value::Null,
                },
            )
            .await?;
            interrupts.push(Interrupt {
                id,
                node: node.to_string(),
                payload: serde_json::Value::Null,
                kind,
            });
        }
        if self.is_subgraph {
            // The parent task pauses; resuming it continues this run past the interrupt.
            return Err(Error::Interrupt(InterruptSignal {
                index: 0,
                payload: serde_json::Value::Null,
                call: None,
            }));
        }
        Err(Error::NotFinished {
            thread_id: p.thread_id.clone(),
            interrupts,
        })
    }

    /// The error that ends a run paused on dynamic interrupts (a root run's becomes its
    /// [`Outcome::Paused`](crate::Outcome::Paused)).
    pub(crate) fn paused(
        &self,
        core: &GraphCore<S>,
        tasks: &[Task],
        interrupts: Vec<(usize, InterruptSignal)>,
        persist: Option<&Persist>,
    ) -> Error {
        let Some(p) = persist.filter(|_| !self.is_subgraph) else {
            // A subgraph run: the parent task pauses with the first signal (the child's
            // own checkpoint, if it keeps them, holds every interrupt).
            let mut interrupts = interrupts;
            return Error::Interrupt(interrupts.swap_remove(0).1);
        };
        let checkpoint = p.current.clone().unwrap_or_default();
        Error::NotFinished {
            thread_id: p.thread_id.clone(),
            interrupts: interrupts
                .into_iter()
                .map(|(index, signal)| Interrupt {
                    id: interrupt_id(&checkpoint, index),
                    node: core.nodes[tasks[index].node].name.to_string(),
                    payload: signal.payload,
                    kind: InterruptKind::Dynamic,
                })
                .collect(),
        }
    }
}
