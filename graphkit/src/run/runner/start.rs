//! Where a run starts: a new input applied to the thread's state and planned from START,
//! or the thread's pending step — continued, resumed with answers to its interrupts, or
//! changed first by a [`Command`]'s update and `goto`.

use std::sync::Arc;

use super::Runner;
use crate::checkpoint::{CheckpointSource, PendingWrite};
use crate::command::{Command, CommandGraph, RunInput};
use crate::error::Error;
use crate::graph::compiled::GraphCore;
use crate::interrupt::{InterruptKind, Resume};
use crate::run::persist::{
    PendingRef, PendingStep, Persist, Planned, TaskWriteRef, goto_records, pending_step,
    restore_joins, restore_tasks,
};
use crate::run::plan::{self, JoinProgress, PlanScratch, Task};
use crate::state::{State, StateUpdate, StepWrites};

use crate::graph::INPUT as INPUT_NODE;

/// Where the step loop begins.
pub(crate) struct Start<S: State> {
    /// The first step's tasks.
    pub(crate) tasks: Vec<Task>,
    /// What the thread saved of that step (finished tasks, interrupts, resume values).
    pub(crate) pending: PendingStep<S>,
    pub(crate) joins: JoinProgress,
    /// The first step already passed its interrupt_before check.
    pub(crate) skip_static_before: bool,
}

/// The thread's pending step, as loaded, and the rows it was loaded from.
struct Restored<S: State> {
    start: Start<S>,
    writes: Vec<PendingWrite>,
}

impl<S: State> Runner<S> {
    /// Establishes the starting point of the run and its state.
    pub(crate) async fn start(
        &mut self,
        core: &Arc<GraphCore<S>>,
        input: RunInput<S>,
        mut persist: Option<&mut Persist>,
        scratch: &mut PlanScratch,
    ) -> Result<Start<S>, Error> {
        if self.link.is_some()
            && let Some(p) = persist.as_deref_mut()
        {
            // A subgraph keeping its own checkpoints: a task that runs again (resumed,
            // or after a failure or a crash) continues the child run where it stopped.
            if let Some(start) = self.resume_child(core, p).await? {
                return Ok(start);
            }
        }
        match input {
            RunInput::Update(update) => self.start_from_input(core, update, persist, scratch).await,
            RunInput::Continue => self.continue_thread(core, persist, None).await,
            RunInput::Resume(resume) => self.continue_thread(core, persist, Some(resume)).await,
            RunInput::Command(command) => {
                self.start_from_command(core, command, persist, scratch)
                    .await
            }
        }
    }

    /// The pending step of a subgraph run that stopped in this task before, with the
    /// answers the parent task holds handed to its interrupted tasks; `None` when the
    /// task's namespace has no checkpoint (the child starts from its input).
    async fn resume_child(
        &mut self,
        core: &Arc<GraphCore<S>>,
        persist: &mut Persist,
    ) -> Result<Option<Start<S>>, Error> {
        let Some(Restored { mut start, .. }) = self.restore(core, persist).await? else {
            // A fresh child: answers saved for an earlier child run of this task (from a
            // branch this one forked from) are not for it.
            if let Some(link) = self.link.as_ref().filter(|_| self.has_parent_answers()) {
                link.take_resume().await?;
            }
            return Ok(None);
        };
        if let Some(collected) = self.collected.as_mut() {
            // What the child wrote before it stopped is part of what the parent gets.
            let upto = persist.current.clone().unwrap_or_default();
            *collected = persist.recorded_updates::<S>(&upto).await?;
        }
        if self.has_parent_answers() {
            self.take_parent_answers(core, persist, &start.tasks, &mut start.pending)
                .await?;
        }
        Ok(Some(start))
    }

    fn has_parent_answers(&self) -> bool {
        self.inherited_scratchpad
            .as_ref()
            .is_some_and(|pad| !pad.resume.is_empty())
    }

    /// Hands the resume values the parent task was given to this run's interrupted tasks,
    /// in task order (the parent showed the first one's interrupt), saves them as those
    /// tasks' answers, and clears them from the parent task.
    async fn take_parent_answers(
        &self,
        core: &GraphCore<S>,
        persist: &Persist,
        tasks: &[Task],
        pending: &mut PendingStep<S>,
    ) -> Result<(), Error> {
        let (Some(pad), Some(link)) = (&self.inherited_scratchpad, &self.link) else {
            return Ok(());
        };
        let mut open: Vec<usize> = pending.interrupts.keys().copied().collect();
        open.sort_unstable();
        for (index, value) in open.into_iter().zip(pad.resume.iter()) {
            let asked = pending.asked.get(&index).copied().unwrap_or_default();
            let values = pending.resume.entry(index).or_default();
            // More answers than the task had asked for when it paused: this value was
            // handed over already (by a run that stopped before clearing the parent's).
            if values.len() <= asked {
                values.push(value.clone());
                let node = tasks.get(index).map_or("", |t| &*core.nodes[t.node].name);
                persist
                    .save_pending::<S>(format!("resume:{index}"), node, &PendingRef::Resume(values))
                    .await?;
            }
            pending.interrupts.remove(&index);
        }
        link.take_resume().await
    }

    /// The checkpoint a run starts from, if not the newest: a subgraph run always
    /// continues its own namespace's newest (the config's id names a parent checkpoint).
    fn checkpoint_to_load(&self) -> Option<&str> {
        match self.is_subgraph {
            true => None,
            false => self.config.checkpoint_id.as_deref(),
        }
    }

    /// A new input: applied to the thread's newest state (or the default), then the
    /// tasks out of START.
    async fn start_from_input(
        &mut self,
        core: &Arc<GraphCore<S>>,
        update: S::Update,
        mut persist: Option<&mut Persist>,
        scratch: &mut PlanScratch,
    ) -> Result<Start<S>, Error> {
        if let Some(p) = persist.as_deref_mut()
            && let Some((loaded, _)) = p.load::<S>(self.checkpoint_to_load()).await?
        {
            self.state = loaded.state;
        }
        let mut joins = JoinProgress::new(core);
        let recorded = self.apply_input(update, persist.as_deref())?;
        let tasks = plan::start_tasks(core, &self.state, &mut joins, scratch)?;
        if let Some(p) = persist {
            self.save_input(core, p, recorded.as_ref(), &[], &tasks, &joins)
                .await?;
        }
        Ok(Start {
            tasks,
            pending: PendingStep::default(),
            joins,
            skip_static_before: false,
        })
    }

    /// The thread's pending step, resumed with `resume` if given.
    async fn continue_thread(
        &mut self,
        core: &Arc<GraphCore<S>>,
        persist: Option<&mut Persist>,
        resume: Option<Resume>,
    ) -> Result<Start<S>, Error> {
        let Some(p) = persist else {
            return Err(Error::NoCheckpointer("resuming a run"));
        };
        let Some(Restored { mut start, .. }) = self.restore(core, p).await? else {
            return Err(Error::CheckpointNotFound {
                thread_id: p.thread_id.clone(),
                checkpoint_id: None,
            });
        };
        if let Some(resume) = resume {
            apply_resume(core, p, &start.tasks, &mut start.pending, resume).await?;
        }
        Ok(start)
    }

    /// A [`Command`] as the run's input: its update applied as the input, its `goto`
    /// targets added to the pending step (or the first step), its resume value handed to
    /// the pending interrupts.
    async fn start_from_command(
        &mut self,
        core: &Arc<GraphCore<S>>,
        command: Command<S>,
        mut persist: Option<&mut Persist>,
        scratch: &mut PlanScratch,
    ) -> Result<Start<S>, Error> {
        let Command {
            update,
            goto,
            graph,
            resume,
        } = command;
        if graph == CommandGraph::Parent {
            return Err(Error::InvalidRunInput(
                "a Command addressed to the parent graph (`to_parent()`) cannot start a run: a run has no parent graph; drop `to_parent()`".into(),
            ));
        }
        let restored = match persist.as_deref_mut() {
            Some(p) => self.restore(core, p).await?,
            None => None,
        };
        let (mut start, writes) = match restored {
            Some(Restored { start, writes }) => (start, Some(writes)),
            None if resume.is_some() => {
                return Err(match persist {
                    None => Error::NoCheckpointer("resuming a run"),
                    Some(p) => Error::CheckpointNotFound {
                        thread_id: p.thread_id.clone(),
                        checkpoint_id: None,
                    },
                });
            }
            None => {
                let start = Start {
                    tasks: Vec::new(),
                    pending: PendingStep::default(),
                    joins: JoinProgress::new(core),
                    skip_static_before: false,
                };
                (start, None)
            }
        };
        let recorded = match update {
            Some(update) => self.apply_input(update, persist.as_deref())?,
            None => None,
        };
        let records = goto_records(&goto);
        if writes.is_none() && goto.is_empty() {
            start.tasks = plan::start_tasks(core, &self.state, &mut start.joins, scratch)?;
        } else {
            let others = !start.tasks.is_empty();
            let tasks = plan::goto_tasks(core, goto, &mut start.joins, scratch, others)?;
            add_tasks(&mut start.tasks, tasks);
        }
        if let Some(p) = persist {
            if recorded.is_some() || !records.is_empty() || writes.is_none() {
                if writes.is_some() && p.per_step() {
                    p.carry_pending_tasks();
                }
                self.save_input(
                    core,
                    p,
                    recorded.as_ref(),
                    &records,
                    &start.tasks,
                    &start.joins,
                )
                .await?;
                if let Some(writes) = writes.filter(|w| !w.is_empty() && p.per_step()) {
                    // The pending step moves to the new checkpoint with what it saved.
                    p.copy_pending(writes).await?;
                }
            }
            if let Some(resume) = resume {
                apply_resume(core, p, &start.tasks, &mut start.pending, resume).await?;
            }
        }
        Ok(start)
    }

    /// Loads the checkpoint to continue from (the run's `checkpoint_id`, or the newest)
    /// and its pending step; `None` when the thread has no checkpoint.
    async fn restore(
        &mut self,
        core: &GraphCore<S>,
        persist: &mut Persist,
    ) -> Result<Option<Restored<S>>, Error> {
        let Some((loaded, writes)) = persist.load::<S>(self.checkpoint_to_load()).await? else {
            return Ok(None);
        };
        let pending = pending_step(core, &loaded.record, &writes)?;
        let tasks = restore_tasks(core, &loaded.record, loaded.body.next)?;
        let joins = restore_joins(
            core,
            &loaded.record,
            loaded.body.joins,
            loaded.body.deferred,
        )?;
        self.state = loaded.state;
        if self.checkpoint_to_load().is_some()
            && persist.per_step()
            && !persist.is_newest(&loaded.record.checkpoint_id).await?
        {
            // Replaying from an earlier checkpoint: the new branch starts with a copy of
            // it (source `Fork`), carrying what its pending step saved.
            let record = persist
                .save(
                    CheckpointSource::Fork,
                    &self.state,
                    &[] as &[TaskWriteRef<'_, S>],
                    &Planned::of(core, &tasks, &joins),
                    &[],
                )
                .await?;
            self.emitter
                .checkpoint(&persist.thread_id, &record, core, &tasks);
            if !writes.is_empty() {
                persist.copy_pending(writes.clone()).await?;
            }
        }
        // The pending step already passed its interrupt_before check (it paused there, or
        // ran and failed or paused inside); after an interrupt_after pause, the next step
        // has not been checked yet.
        let skip_static_before = !pending
            .static_interrupts
            .iter()
            .any(|i| i.kind == InterruptKind::After);
        Ok(Some(Restored {
            start: Start {
                tasks,
                pending,
                joins,
                skip_static_before,
            },
            writes,
        }))
    }

    /// Applies a run's input update to the state; returns a copy to record in the input's
    /// checkpoint when checkpoints are saved per step.
    fn apply_input(
        &mut self,
        update: S::Update,
        persist: Option<&Persist>,
    ) -> Result<Option<S::Update>, Error> {
        let recorded = persist.filter(|p| p.per_step()).map(|_| update.clone());
        // A same-state subgraph's input is the parent's state itself (an empty update):
        // nothing to hand back to the parent, so nothing is emitted or saved for it.
        if let Some(collected) = self.collected.as_mut().filter(|_| !update.is_empty()) {
            collected.push(update.clone());
        }
        self.state.apply(update, &mut StepWrites::default())?;
        Ok(recorded)
    }

    /// Saves the checkpoint of a run's input (per-step durability only).
    async fn save_input(
        &self,
        core: &GraphCore<S>,
        persist: &mut Persist,
        update: Option<&S::Update>,
        gotos: &[crate::checkpoint::format::GotoRecord],
        tasks: &[Task],
        joins: &JoinProgress,
    ) -> Result<(), Error> {
        if !persist.per_step() {
            persist.count_unsaved();
            return Ok(());
        }
        // A same-state subgraph's input is empty (it starts from the parent's state):
        // nothing to save for it.
        let update = update.filter(|u| !(self.is_subgraph && u.is_empty()));
        let writes = [TaskWriteRef::<S> {
            node: INPUT_NODE,
            updates: update.map_or(&[], std::slice::from_ref),
            gotos: gotos.to_vec(),
        }];
        let record = persist
            .save(
                CheckpointSource::Input,
                &self.state,
                &writes,
                &Planned::of(core, tasks, joins),
                &[],
            )
            .await?;
        self.emitter
            .checkpoint(&persist.thread_id, &record, core, tasks);
        Ok(())
    }
}

/// Adds `extra` tasks after `tasks`; a node already planned (not by a `Send`) is not
/// planned twice. Appending keeps the indices the pending writes are saved under.
fn add_tasks(tasks: &mut Vec<Task>, extra: Vec<Task>) {
    for task in extra {
        let planned = task.input.is_none()
            && tasks
                .iter()
                .any(|t| t.input.is_none() && t.node == task.node);
        if !planned {
            tasks.push(task);
        }
    }
}

/// Hands resume values to the interrupted tasks, and records them.
async fn apply_resume<S: State>(
    core: &GraphCore<S>,
    persist: &mut Persist,
    tasks: &[Task],
    pending: &mut PendingStep<S>,
    resume: Resume,
) -> Result<(), Error> {
    let bad = |message: String| Error::BadResume {
        thread_id: persist.thread_id.clone(),
        message,
    };
    let mut answers: Vec<(usize, serde_json::Value)> = Vec::new();
    match resume {
        Resume::Value(value) => {
            let open: Vec<usize> = pending.interrupts.keys().copied().collect();
            match open.as_slice() {
                [index] => answers.push((*index, value)),
                [] => {
                    return Err(bad(
                        "no interrupt is waiting for a value; continue with `RunInput::Continue`"
                            .into(),
                    ));
                }
                _ => {
                    let ids: Vec<&str> =
                        pending.interrupts.values().map(|i| i.id.as_str()).collect();
                    return Err(bad(format!(
                        "{} interrupts are pending ({ids:?}); answer them by id with `Resume::by_id`",
                        open.len()
                    )));
                }
            }
        }
        Resume::ById(values) => {
            for (id, value) in values {
                let index = pending
                    .interrupts
                    .iter()
                    .find(|(_, i)| i.id == id)
                    .map(|(index, _)| *index)
                    .ok_or_else(|| bad(format!("no pending interrupt has id `{id}`")))?;
                answers.push((index, value));
            }
        }
    }
    answers.sort_by_key(|(index, _)| *index);
    for (index, value) in answers {
        let values = pending.resume.entry(index).or_default();
        values.push(value);
        let node = tasks.get(index).map_or("", |t| &*core.nodes[t.node].name);
        persist
            .save_pending::<S>(format!("resume:{index}"), node, &PendingRef::Resume(values))
            .await?;
        pending.interrupts.remove(&index);
    }
    Ok(())
}
