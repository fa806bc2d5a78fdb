//! [`Runner`]: one run of a compiled graph. It finds where the run starts ([`start`]),
//! then loops over super-steps — plan, execute, apply, persist — until no task is
//! triggered or a step stops ([`stop`]).
//!
//! Both are parts of the runner (they add methods to [`Runner`]), so they are its child
//! modules; the phases of a step (`plan`, `execute`, `apply`) and `persist` are siblings
//! that know nothing of the runner.

mod start;
mod stop;

use std::sync::Arc;

use crate::checkpoint::CheckpointSource;
use crate::command::RunInput;
use crate::context::config::RunConfig;
use crate::context::node_context::NodeContext;
use crate::context::scratchpad::Scratchpad;
use crate::context::stream::Namespace;
use crate::context::task_link::TaskLink;
use crate::error::Error;
use crate::graph::compiled::{CompiledGraph, GraphCore};
use crate::graph::node::NodeOutput;
use crate::interrupt::{InterruptKind, InterruptSignal};
use crate::run::Done;
use crate::run::apply::{self, RecordedWrite};
use crate::run::cache;
use crate::run::emitter::Emitter;
use crate::run::execute::{self, StepBuffers, StepScope, TaskExtras};
use crate::run::persist::{PendingStep, Persist, Planned, TaskWriteRef, ThreadRelease};
use crate::run::plan::{self, JoinProgress, PlanScratch, Task};
use crate::state::State;
use start::Start;
use stop::StaticCheck;

/// One run of a compiled graph: its state and the loop over super-steps.
pub(crate) struct Runner<S: State> {
    pub(crate) graph: CompiledGraph<S>,
    pub(crate) config: Arc<RunConfig>,
    pub(crate) emitter: Emitter<S>,
    pub(crate) state: S,
    pub(crate) step: usize,
    pub(crate) namespace: Namespace,
    pub(crate) collected: Option<Vec<S::Update>>,
    /// Root runs save checkpoints (when the graph has a checkpointer); subgraph runs don't.
    pub(crate) persistent: bool,
    /// A subgraph run shares the interrupt bookkeeping of the parent task it runs in.
    pub(crate) inherited_scratchpad: Option<Arc<Scratchpad>>,
    /// `true` when this run is a subgraph inside a parent task.
    pub(crate) is_subgraph: bool,
    /// A subgraph run that keeps its own checkpoints: the parent task it runs in.
    pub(crate) link: Option<Arc<TaskLink>>,
    /// The subgraph nodes this run is inside, joined by `|` (`None` for a root run): the
    /// namespace of its cached nodes' entries.
    pub(crate) graph_path: Option<Arc<str>>,
}

/// What task `i` of a step needs besides its node: its output restored from `pending`,
/// its saver, and its interrupt bookkeeping (its own with a checkpointer, else the parent
/// task's, if any).
fn task_extras<S: State>(
    i: usize,
    parallel: bool,
    pending: &mut Option<Box<PendingStep<S>>>,
    persist: Option<&Persist>,
    inherited: &Option<Arc<Scratchpad>>,
) -> TaskExtras<S> {
    // Nothing restored and nothing saved (a run without a checkpointer, past its first
    // step): only the inherited bookkeeping.
    if pending.is_none() && persist.is_none() {
        return TaskExtras {
            prefilled: None,
            saver: None,
            scratchpad: inherited.clone(),
        };
    }
    // (An empty map is not asked: hashing the index would cost more than the rest.)
    TaskExtras {
        prefilled: pending
            .as_mut()
            .filter(|p| !p.outputs.is_empty())
            .and_then(|p| p.outputs.remove(&i))
            .map(|(updates, gotos)| NodeOutput::Writes { updates, gotos }),
        saver: persist.and_then(|p| p.task_saver(i, parallel)),
        scratchpad: match persist {
            Some(_) => {
                let resume = pending
                    .as_mut()
                    .filter(|p| !p.resume.is_empty())
                    .and_then(|p| p.resume.remove(&i))
                    .unwrap_or_default();
                let recorded = pending
                    .as_mut()
                    .filter(|p| !p.calls.is_empty())
                    .and_then(|p| p.calls.remove(&i));
                Some(match recorded {
                    None => Scratchpad::new(resume),
                    Some(recorded) => Scratchpad::with_recorded(resume, recorded),
                })
            }
            None => inherited.clone(),
        },
    }
}

/// How the step whose task results are in `results` (one per task) ended; when a task
/// failed or paused, `results` is drained into the outcome.
fn step_outcome<S: State>(
    core: &GraphCore<S>,
    tasks: &[Task],
    results: &mut Vec<Option<execute::TaskResult<S>>>,
) -> StepOutcome<S> {
    if results.iter().all(|r| matches!(r, Some(Ok(_)))) {
        return StepOutcome::Finished;
    }
    let mut outputs = Vec::with_capacity(results.len());
    let mut interrupts = Vec::new();
    let mut failures = Vec::new();
    for (index, result) in results.drain(..).enumerate() {
        match result {
            Some(Ok(output)) => outputs.push((index, output)),
            Some(Err(Error::Interrupt(signal))) => interrupts.push((index, signal)),
            Some(Err(error)) => failures.push((index, error)),
            None => failures.push((index, execute::missing_result(core, &tasks[index]))),
        }
    }
    StepOutcome::Stopped {
        outputs,
        interrupts,
        failures,
    }
}

/// Awaits `future` (a small one: it is moved into this one) inside `span`, if any.
async fn in_span<F: Future>(span: Option<&tracing::Span>, future: F) -> F::Output {
    match span {
        Some(span) => tracing::Instrument::instrument(future, span.clone()).await,
        None => future.await,
    }
}

/// How one super-step ended.
enum StepOutcome<S: State> {
    /// Every task finished: their outputs are in the step's buffers, in task order.
    Finished,
    /// A task failed or paused: the outputs that did finish, the interrupts raised and
    /// the failures, each with its task index.
    Stopped {
        outputs: Vec<(usize, NodeOutput<S>)>,
        interrupts: Vec<(usize, InterruptSignal)>,
        failures: Vec<(usize, Error)>,
    },
}

impl<S: State> Runner<S> {
    pub(crate) fn new(
        graph: &CompiledGraph<S>,
        state: S,
        config: Arc<RunConfig>,
        emitter: Emitter<S>,
    ) -> Self {
        let namespace = emitter
            .target
            .as_ref()
            .map_or_else(|| Arc::from(Vec::new()), |t| Arc::clone(&t.namespace));
        // The graph's context fills the types the run was not given.
        let config = match config.context.with_defaults(&graph.core.context) {
            Some(context) => Arc::new(RunConfig {
                context,
                ..RunConfig::clone(&config)
            }),
            None => config,
        };
        Self {
            graph: graph.clone(),
            config,
            emitter,
            state,
            step: 0,
            namespace,
            collected: None,
            persistent: true,
            inherited_scratchpad: None,
            is_subgraph: false,
            link: None,
            graph_path: None,
        }
    }

    /// A subgraph run inside the task of `ctx`: no checkpoints of its own, the parent
    /// task's interrupt bookkeeping.
    pub(crate) fn child_of(graph: &CompiledGraph<S>, state: S, ctx: &NodeContext) -> Self {
        let mut runner = Self::new(
            graph,
            state,
            Arc::clone(&ctx.config),
            Emitter::child_of(ctx),
        );
        runner.persistent = false;
        runner.inherited_scratchpad = ctx.scratchpad.clone();
        runner.is_subgraph = true;
        runner.graph_path = Some(match &ctx.graph_path {
            Some(parent) => {
                format!("{parent}{}{}", crate::cache::NAMESPACE_SEPARATOR, ctx.node).into()
            }
            None => Arc::clone(&ctx.node),
        });
        runner
    }

    /// Keeps this subgraph run's checkpoints in the namespace of the task of `ctx` (when
    /// the parent saves checkpoints per step), so that the run resumes where it stopped
    /// when the task runs again.
    pub(crate) fn with_checkpoints(mut self, ctx: &NodeContext) -> Self {
        self.link = ctx.checkpoint.clone();
        self
    }

    /// Adds `label` to the namespace of this child run's events, after the parent task's
    /// `"node:step"` (so that several child runs of one task stay apart).
    pub(crate) fn labeled(mut self, label: &str) -> Self {
        if let Some(target) = self.emitter.target.as_mut() {
            let mut namespace = target.namespace.to_vec();
            namespace.push(label.into());
            target.namespace = namespace.into();
            self.namespace = Arc::clone(&target.namespace);
        }
        self
    }

    /// Keeps a copy of every applied update (for a same-state subgraph's parent).
    pub(crate) fn collecting(mut self) -> Self {
        self.collected = Some(Vec::new());
        self
    }

    pub(crate) async fn run(self, input: RunInput<S>) -> Result<Done<S>, Error> {
        let cancel = self.config.cancel.clone();
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let span = tracing::info_span!(
            "run",
            thread_id = self.config.thread_id.as_deref(),
            subgraph = self.is_subgraph,
            namespace = ?self.namespace,
        );
        let release = ThreadRelease::default();
        let run = tracing::Instrument::instrument(self.run_with_thread(input, &release), span);
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Error::Cancelled),
            done = run => done,
        };
        // A cancelled run was dropped holding the thread: free it before returning.
        release.finish().await;
        outcome
    }

    /// Checks the run's config, takes the thread (with a checkpointer), runs, and
    /// releases the thread whatever happened (if this future is dropped, through
    /// `release`).
    async fn run_with_thread(
        mut self,
        input: RunInput<S>,
        release: &ThreadRelease,
    ) -> Result<Done<S>, Error> {
        self.config.validate()?;
        let core = Arc::clone(&self.graph.core);
        // A subgraph run shares the parent's config: its per-run interrupt lists name
        // the parent's nodes.
        let per_run: &[_] = if self.is_subgraph {
            &[]
        } else {
            &[
                ("RunConfig::interrupt_before", &self.config.interrupt_before),
                ("RunConfig::interrupt_after", &self.config.interrupt_after),
            ]
        };
        for (what, names) in per_run {
            if let Some(unknown) = names.iter().find(|n| !core.by_name.contains_key(&***n)) {
                return Err(Error::UnknownNode {
                    context: format!("`{what}`"),
                    node: unknown.to_string(),
                });
            }
        }
        if let Some((id, type_name)) = core.context_type
            && !self.config.context.has(id)
        {
            return Err(Error::ContextNotGiven {
                type_name,
                available: self.config.context.type_names(),
            });
        }
        let mut persist = match (&core.checkpointer, self.persistent, &self.link) {
            (_, false, Some(link)) => {
                // A subgraph's checkpoints carry the run's metadata too, so that what finds
                // a run's checkpoints by it (a server's rollback) finds them in every
                // namespace.
                let mut persist = Persist::nested(link, self.config.durability);
                if !self.config.checkpoint_metadata.is_empty() {
                    persist.extra_metadata(&self.config.checkpoint_metadata);
                }
                Some(persist)
            }
            (Some(saver), true, _) => {
                let thread = self
                    .config
                    .thread_id
                    .as_deref()
                    .ok_or(Error::MissingThreadId)?;
                let open = Persist::open(Arc::clone(saver), thread, self.config.durability);
                let mut persist = Box::pin(open).await?;
                persist.release_into(release);
                if !self.config.checkpoint_metadata.is_empty() {
                    persist.extra_metadata(&self.config.checkpoint_metadata);
                }
                Some(persist)
            }
            _ => None,
        };
        // The step loop's future is the run's largest by far: boxed once here, it is not
        // copied again by each wrapper it passes through (instrumenting, the cancellation
        // select, `block_on`), which cost more than the allocation.
        let mut outcome = Box::pin(self.run_steps(&core, input, persist.as_mut())).await;
        if let Err(Error::ParentCommand { node, .. }) = &outcome
            && !self.is_subgraph
        {
            outcome = Err(Error::NoParentGraph {
                node: node.clone(),
                reason: "this graph is not running as a subgraph",
            });
        }
        if let Some(persist) = persist {
            let released = Box::pin(persist.release()).await;
            // A checkpoint that failed to save fails the run, unless it failed already.
            if outcome.is_ok() {
                outcome = released;
            }
        }
        // A root run's pause is an outcome, not an error.
        let paused = match outcome {
            Err(Error::NotFinished {
                thread_id,
                interrupts,
            }) if !self.is_subgraph => Some((thread_id, interrupts)),
            Err(error) => return Err(error),
            Ok(()) => None,
        };
        Ok(Done {
            state: self.state,
            updates: self.collected.unwrap_or_default(),
            paused,
        })
    }

    /// Finds the starting point, then runs super-steps until no task is triggered.
    async fn run_steps(
        &mut self,
        core: &Arc<GraphCore<S>>,
        input: RunInput<S>,
        mut persist: Option<&mut Persist>,
    ) -> Result<(), Error> {
        let mut scratch = PlanScratch::new(core);
        let mut buffers = StepBuffers::default();
        let Start {
            mut tasks,
            pending,
            mut joins,
            mut skip_static_before,
        } = Box::pin(self.start(core, input, persist.as_deref_mut(), &mut scratch)).await?;
        self.emitter.values(&self.state);
        // What the start restored for its first step only (boxed: it is large, and most
        // runs have none; the step loop's future would keep room for it every step).
        let mut pending = (!pending.is_empty()).then(|| Box::new(pending));

        while !tasks.is_empty() {
            if !skip_static_before && self.may_pause(core, InterruptKind::Before, &tasks) {
                let before = StaticCheck {
                    kind: InterruptKind::Before,
                    hits: &tasks,
                    next: &tasks,
                };
                Box::pin(self.static_interrupt(core, before, &joins, persist.as_deref_mut()))
                    .await?;
            }
            skip_static_before = false;
            if self.step >= self.config.recursion_limit {
                return Err(Error::RecursionLimit {
                    limit: self.config.recursion_limit,
                });
            }
            self.step += 1;
            // No span at all without a subscriber: even a disabled one costs.
            let step_span = execute::tracing_on().then(|| {
                tracing::info_span!(
                    "step",
                    step = self.step,
                    tasks = tasks.len(),
                    thread_id = self.config.thread_id.as_deref(),
                )
            });

            // Tasks whose outputs the start restored (finished before the run stopped) do
            // not run again: their updates are streamed as cached, as LangGraph does.
            let mut restored: Vec<usize> = match &pending {
                Some(p) if !p.outputs.is_empty() => p.outputs.keys().copied().collect(),
                _ => Vec::new(),
            };
            // Tasks of cached nodes found in the cache become outputs, as restored ones do.
            // (The cache's futures are boxed: the step loop's own future stays as small as
            // it is without a cache.)
            let step_cache = match &core.cache {
                Some(cache) if core.caches_nodes && cache::any_cached(core, &tasks) => {
                    let look_up = Box::pin(cache::look_up(
                        core,
                        &**cache,
                        &tasks,
                        &self.state,
                        self.graph_path.as_ref(),
                        &mut pending,
                        self.step,
                    ));
                    Some(in_span(step_span.as_ref(), look_up).await?)
                }
                _ => None,
            };

            // A step of one sync node runs right here, with no future to build and move.
            let inline = execute::runs_inline(core, &tasks).then(|| {
                let _entered = step_span.as_ref().map(tracing::Span::enter);
                self.execute_inline(core, &tasks, &mut pending, persist.as_deref(), &mut buffers)
            });
            let outcome = match inline {
                Some(Ok(())) => step_outcome(core, &tasks, &mut buffers.results),
                Some(Err(save)) => {
                    // (Boxed: rare, and the task it holds is large.)
                    let result = in_span(step_span.as_ref(), Box::pin(save.finish())).await;
                    buffers.results.push(Some(result));
                    step_outcome(core, &tasks, &mut buffers.results)
                }
                None => {
                    let execute = self.execute_step(
                        core,
                        &tasks,
                        pending.take(),
                        persist.as_deref(),
                        &mut buffers,
                    );
                    // Wrapped only when there is a span: wrapping moves the step's future.
                    match &step_span {
                        Some(span) => tracing::Instrument::instrument(execute, span.clone()).await,
                        None => execute.await,
                    }
                }
            };
            if pending.is_some() {
                // What the start restored is for its first step only.
                pending = None;
            }
            let hits: &[usize] = step_cache.as_ref().map_or(&[], |c| &c.hits);
            let cached: &[usize] = if restored.is_empty() {
                hits
            } else {
                restored.extend_from_slice(hits);
                restored.sort_unstable();
                &restored
            };
            match outcome {
                StepOutcome::Finished => {
                    if let (Some(cache), Some(step_cache)) = (&core.cache, &step_cache) {
                        let results = &buffers.results;
                        let output = |i: usize| results.get(i)?.as_ref()?.as_ref().ok();
                        let store =
                            Box::pin(cache::store(core, &**cache, step_cache, &tasks, output));
                        in_span(step_span.as_ref(), store).await?;
                    }
                }
                StepOutcome::Stopped {
                    outputs,
                    interrupts,
                    failures,
                } => {
                    if let (Some(cache), Some(step_cache)) = (&core.cache, &step_cache) {
                        let output = |i: usize| {
                            let found = outputs.iter().find(|(index, _)| *index == i);
                            found.map(|(_, output)| output)
                        };
                        let store =
                            Box::pin(cache::store(core, &**cache, step_cache, &tasks, output));
                        in_span(step_span.as_ref(), store).await?;
                    }
                    let stopped = stop::StoppedStep {
                        tasks: &tasks,
                        outputs: &outputs,
                        interrupts: &interrupts,
                        failures: &failures,
                        cached,
                    };
                    let conflict = self.show_stopped_step(core, &stopped);
                    if let Some(p) = persist.as_deref_mut() {
                        Box::pin(self.save_stopped_step(core, p, &joins, &stopped)).await?;
                    }
                    if let Some((_, error)) = failures.into_iter().next() {
                        return Err(error);
                    }
                    conflict?;
                    return Err(self.paused(core, &tasks, interrupts, persist.as_deref()));
                }
            }

            let mut recorded = persist
                .as_deref()
                .filter(|p| p.per_step())
                .map(|_| Vec::new());
            // Every slot holds an output here (`execute_step` checked): apply them all.
            let outputs = buffers.results.drain(..).flatten().filter_map(Result::ok);
            buffers.writes.clear();
            apply::apply_writes(
                core,
                &mut self.state,
                &tasks,
                outputs,
                cached,
                &self.emitter,
                &mut self.collected,
                recorded.as_mut(),
                &mut buffers.writes,
                &mut buffers.gotos,
            )?;
            self.emitter.values(&self.state);
            let mut next = std::mem::take(&mut buffers.next);
            plan::next_tasks_into(
                core,
                &tasks,
                &mut buffers.gotos,
                &self.state,
                &mut joins,
                &mut scratch,
                &mut next,
            )?;
            if let (Some(p), Some(recorded)) = (persist.as_deref_mut(), recorded) {
                let save = self.save_step(core, p, &tasks, &recorded, &next, &joins);
                in_span(step_span.as_ref(), save).await?;
            } else if let Some(p) = persist.as_deref_mut().filter(|p| !p.per_step()) {
                p.count_unsaved();
            }
            if !next.is_empty() && self.may_pause(core, InterruptKind::After, &tasks) {
                let after = StaticCheck {
                    kind: InterruptKind::After,
                    hits: &tasks,
                    next: &next,
                };
                Box::pin(self.static_interrupt(core, after, &joins, persist.as_deref_mut()))
                    .await?;
            }
            // The finished step's task list becomes the buffer of the step after next.
            buffers.next = std::mem::replace(&mut tasks, next);
            buffers.next.clear();
        }
        if let Some(p) = persist.filter(|p| !p.per_step()) {
            let planned = Planned::of(core, &[], &joins);
            let record = Box::pin(p.save_at_exit(&self.state, &planned)).await?;
            self.emitter.checkpoint(&p.thread_id, &record, core, &[]);
        }
        Ok(())
    }

    /// `true` when a static interrupt of `kind` may hit one of `tasks` (so the full check,
    /// which may save a checkpoint, must run).
    fn may_pause(&self, core: &GraphCore<S>, kind: InterruptKind, tasks: &[Task]) -> bool {
        let per_run = match kind {
            InterruptKind::After => &self.config.interrupt_after,
            _ => &self.config.interrupt_before,
        };
        !per_run.is_empty()
            || tasks.iter().any(|t| {
                let node = &core.nodes[t.node];
                match kind {
                    InterruptKind::After => node.interrupt_after,
                    _ => node.interrupt_before,
                }
            })
    }

    /// Runs the tasks of one super-step concurrently on one snapshot of the state.
    /// Tasks that finished before an interruption (in `pending`) return their saved output.
    /// On [`StepOutcome::Finished`], `buffers.results` holds every task's output.
    async fn execute_step(
        &mut self,
        core: &Arc<GraphCore<S>>,
        tasks: &[Task],
        mut pending: Option<Box<PendingStep<S>>>,
        persist: Option<&Persist>,
        buffers: &mut StepBuffers<S>,
    ) -> StepOutcome<S> {
        let parallel = tasks.len() > 1;
        let inherited = &self.inherited_scratchpad;
        let extras = |i: usize| task_extras(i, parallel, &mut pending, persist, inherited);
        // The snapshot takes the state by move; it is cloned back only if a task kept
        // a reference past the step.
        let snapshot = buffers.share(&mut self.state);
        let scope = self.step_scope(core);
        let (slot, results) = (&mut buffers.context, &mut buffers.results);
        execute::run_step(core, tasks, &snapshot, &scope, extras, slot, results).await;
        buffers.restore(snapshot, &mut self.state);
        step_outcome(core, tasks, &mut buffers.results)
    }

    /// [`Self::execute_step`] for a step where [`execute::runs_inline`] holds: the same,
    /// without a future, unless the task's result must be saved (then it is returned).
    fn execute_inline(
        &self,
        core: &GraphCore<S>,
        tasks: &[Task],
        pending: &mut Option<Box<PendingStep<S>>>,
        persist: Option<&Persist>,
        buffers: &mut StepBuffers<S>,
    ) -> Result<(), Box<execute::InlineSave<S>>> {
        let extra = task_extras(0, false, pending, persist, &self.inherited_scratchpad);
        // A sync node reads the state by reference: no shared snapshot to make.
        let scope = self.step_scope(core);
        execute::run_inline_step(
            core,
            &tasks[0],
            &self.state,
            &scope,
            extra,
            &mut buffers.context,
            &mut buffers.results,
        )
    }

    /// What every task of the current step shares.
    fn step_scope<'a>(&'a self, core: &'a GraphCore<S>) -> StepScope<'a> {
        StepScope {
            step: self.step,
            config: &self.config,
            target: self.emitter.target.as_ref(),
            namespace: &self.namespace,
            store: core.store.as_ref(),
            graph_path: self.graph_path.as_ref(),
        }
    }

    /// Saves the checkpoint that ends a super-step: its writes, and the tasks of the next.
    async fn save_step(
        &self,
        core: &GraphCore<S>,
        persist: &mut Persist,
        ran: &[Task],
        recorded: &[RecordedWrite<S>],
        next: &[Task],
        joins: &JoinProgress,
    ) -> Result<(), Error> {
        let writes: Vec<TaskWriteRef<'_, S>> = recorded
            .iter()
            .map(|w| TaskWriteRef {
                node: &w.node,
                updates: &w.updates,
                gotos: Vec::new(),
            })
            .collect();
        let ran: Vec<&str> = ran.iter().map(|t| &*core.nodes[t.node].name).collect();
        let record = persist
            .save(
                CheckpointSource::Loop,
                &self.state,
                &writes,
                &Planned::of(core, next, joins),
                &ran,
            )
            .await?;
        self.emitter
            .checkpoint(&persist.thread_id, &record, core, next);
        Ok(())
    }
}
