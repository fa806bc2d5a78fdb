//! Running a compiled graph: the super-step loop and its three phases.
//!
//! Each super-step [plans](plan) the tasks triggered by the previous one, [executes](execute)
//! them concurrently on one snapshot of the state, and [applies](apply) their writes in a
//! deterministic order. Routers then look at the post-step state to plan the next step.

pub(crate) mod apply;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod execute;
pub(crate) mod persist;
pub(crate) mod plan;
pub(crate) mod stream;
pub(crate) mod thread;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::checkpoint::{CheckpointRecord, CheckpointSource};
use crate::command::RunInput;
use crate::error::Error;
use crate::graph::compiled::{CompiledGraph, GraphCore};
use crate::graph::node::NodeOutput;
use crate::interrupt::{Interrupt, InterruptKind, InterruptSignal, Resume, Scratchpad};
use crate::run::config::RunConfig;
use crate::run::execute::StepScope;
use crate::run::execute::TaskExtras;
use crate::run::persist::{
    PendingRef, PendingStep, Persist, TaskWriteRef, interrupt_id, output_ref, pending_step,
    restore_tasks, task_records,
};
use crate::run::plan::Task;
use crate::run::plan::{JoinProgress, PlanScratch};
use crate::run::stream::{
    Namespace, RawPayload, StreamEvent, StreamMode, StreamModes, StreamPayload, StreamTarget,
};
use crate::state::{State, StepWrites};

/// Sends a run's events: typed to the root stream, or as raw events up to a parent run.
pub(crate) struct Emitter<S: State> {
    target: Option<StreamTarget>,
    typed: Option<mpsc::UnboundedSender<StreamEvent<S>>>,
}

impl<S: State> Emitter<S> {
    pub(crate) fn none() -> Self {
        Self {
            target: None,
            typed: None,
        }
    }

    fn root(tx: mpsc::UnboundedSender<StreamEvent<S>>, modes: StreamModes) -> Self {
        let raw_tx = tx.clone();
        let sink = Arc::new(move |event: stream::RawEvent| {
            let _ = raw_tx.send(event.into());
        });
        let namespace: Namespace = Arc::from(Vec::new());
        Self {
            target: Some(StreamTarget {
                sink,
                modes,
                namespace,
            }),
            typed: Some(tx),
        }
    }

    /// The emitter of a subgraph run inside the node of `ctx`.
    pub(crate) fn child_of(ctx: &context::NodeContext) -> Self {
        let Some(parent) = ctx.writer.target() else {
            return Self::none();
        };
        let modes = if ctx.config.subgraphs {
            parent.modes
        } else {
            parent.modes.intersect(StreamModes::from([
                StreamMode::Messages,
                StreamMode::Custom,
            ]))
        };
        if modes.is_empty() {
            return Self::none();
        }
        let mut namespace: Vec<Arc<str>> = parent.namespace.to_vec();
        namespace.push(format!("{}:{}", ctx.node, ctx.step).into());
        let target = StreamTarget {
            sink: Arc::clone(&parent.sink),
            modes,
            namespace: namespace.into(),
        };
        Self {
            target: Some(target),
            typed: None,
        }
    }

    fn wants(&self, mode: StreamMode) -> bool {
        self.target.as_ref().is_some_and(|t| t.modes.contains(mode))
    }

    fn typed(&self, payload: StreamPayload<S>) {
        if let (Some(tx), Some(target)) = (&self.typed, &self.target) {
            // The root's (empty) namespace, shared rather than allocated per event.
            let namespace = Arc::clone(&target.namespace);
            let _ = tx.send(StreamEvent { namespace, payload });
        }
    }

    fn raw(&self, payload: RawPayload) {
        if let Some(target) = &self.target {
            target.emit(payload);
        }
    }

    pub(crate) fn values(&self, state: &S) {
        if !self.wants(StreamMode::Values) {
            return;
        }
        if self.typed.is_some() {
            self.typed(StreamPayload::Values(state.clone()));
        } else if let Ok(value) = serde_json::to_value(state) {
            self.raw(RawPayload::Values(value));
        }
    }

    pub(crate) fn checkpoint(&self, record: &CheckpointRecord, core: &GraphCore<S>, next: &[Task]) {
        if self.wants(StreamMode::Checkpoints) {
            self.raw(RawPayload::Checkpoint(stream::CheckpointEvent {
                thread_id: record.thread_id.clone(),
                checkpoint_id: record.checkpoint_id.clone(),
                step: record.step,
                next: next
                    .iter()
                    .map(|t| Arc::clone(&core.nodes[t.node].name))
                    .collect(),
            }));
        }
    }

    pub(crate) fn update(&self, node: &Arc<str>, update: &S::Update) {
        if !self.wants(StreamMode::Updates) {
            return;
        }
        let node = Arc::clone(node);
        if self.typed.is_some() {
            self.typed(StreamPayload::Updates {
                node,
                update: update.clone(),
            });
        } else if let Ok(update) = serde_json::to_value(update) {
            self.raw(RawPayload::Updates { node, update });
        }
    }
}

thread_local! {
    static BLOCKING_RUNTIME: std::cell::OnceCell<Result<tokio::runtime::Runtime, String>> =
        const { std::cell::OnceCell::new() };
}

/// Runs `future` to completion on this thread's current-thread runtime.
pub(crate) fn block_on<T>(future: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::BlockingInAsync);
    }
    BLOCKING_RUNTIME.with(|cell| {
        let runtime = cell.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        });
        match runtime {
            Ok(runtime) => runtime.block_on(future),
            Err(message) => Err(Error::Runtime(message.clone())),
        }
    })
}

/// A finished run.
pub(crate) struct Done<S: State> {
    pub(crate) state: S,
    pub(crate) updates: Vec<S::Update>,
}

/// One run of a compiled graph: its state and the loop over super-steps.
pub(crate) struct Runner<S: State> {
    graph: CompiledGraph<S>,
    config: Arc<RunConfig>,
    emitter: Emitter<S>,
    state: S,
    step: usize,
    namespace: Namespace,
    collected: Option<Vec<S::Update>>,
    /// Root runs save checkpoints (when the graph has a checkpointer); subgraph runs don't.
    persistent: bool,
    /// A subgraph run shares the interrupt bookkeeping of the parent task it runs in.
    inherited_scratchpad: Option<Arc<Scratchpad>>,
    /// `true` when this run is a subgraph inside a parent task.
    is_subgraph: bool,
}

/// Which tasks a static interrupt looks at, and what runs next if it fires.
struct StaticCheck<'a> {
    kind: InterruptKind,
    hits: &'a [Task],
    next: &'a [Task],
}

/// The pseudo-node that writes a run's input.
const INPUT_NODE: &str = "__input__";

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
        }
    }

    /// A subgraph run inside the task of `ctx`: no checkpoints of its own, the parent
    /// task's interrupt bookkeeping.
    pub(crate) fn child_of(graph: &CompiledGraph<S>, state: S, ctx: &context::NodeContext) -> Self {
        let mut runner = Self::new(
            graph,
            state,
            Arc::clone(&ctx.config),
            Emitter::child_of(ctx),
        );
        runner.persistent = false;
        runner.inherited_scratchpad = ctx.scratchpad.clone();
        runner.is_subgraph = true;
        runner
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
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Error::Cancelled),
            done = self.run_with_thread(input) => done,
        }
    }

    async fn run_with_thread(mut self, input: RunInput<S>) -> Result<Done<S>, Error> {
        self.config.validate()?;
        let core = Arc::clone(&self.graph.core);
        for (what, names) in [
            ("RunConfig::interrupt_before", &self.config.interrupt_before),
            ("RunConfig::interrupt_after", &self.config.interrupt_after),
        ] {
            if let Some(unknown) = names.iter().find(|n| !core.by_name.contains_key(&***n)) {
                return Err(Error::UnknownNode {
                    context: format!("`{what}`"),
                    node: unknown.to_string(),
                });
            }
        }
        let mut persist = match (&core.checkpointer, self.persistent) {
            (Some(saver), true) => {
                let thread = self
                    .config
                    .thread_id
                    .as_deref()
                    .ok_or(Error::MissingThreadId)?;
                Some(Persist::open(Arc::clone(saver), thread, self.config.durability).await?)
            }
            _ => None,
        };
        let mut outcome = self.run_steps(&core, input, persist.as_mut()).await;
        if let Err(Error::ParentCommand { node, .. }) = &outcome
            && !self.is_subgraph
        {
            outcome = Err(Error::NoParentGraph {
                node: node.clone(),
                reason: "this graph is not running as a subgraph",
            });
        }
        if let Some(persist) = persist {
            let released = persist.release().await;
            // A checkpoint that failed to save fails the run, unless it failed already.
            if outcome.is_ok() {
                outcome = released;
            }
        }
        outcome.map(|()| Done {
            state: self.state,
            updates: self.collected.unwrap_or_default(),
        })
    }

    /// Establishes the starting point (new input, or a resumed checkpoint), then runs
    /// super-steps until no task is triggered.
    async fn run_steps(
        &mut self,
        core: &Arc<GraphCore<S>>,
        input: RunInput<S>,
        mut persist: Option<&mut Persist>,
    ) -> Result<(), Error> {
        let mut joins = JoinProgress::new(core);
        let mut scratch = PlanScratch::new(core);
        let mut pending = PendingStep::<S>::default();
        let mut skip_static_before = false;
        let mut tasks = match input {
            RunInput::Update(update) => {
                if let Some(p) = persist.as_deref_mut()
                    && let Some((loaded, _)) =
                        p.load::<S>(self.config.checkpoint_id.as_deref()).await?
                {
                    self.state = loaded.state;
                }
                let recorded = persist
                    .as_deref()
                    .filter(|p| p.per_step())
                    .map(|_| update.clone());
                if let Some(collected) = self.collected.as_mut() {
                    collected.push(update.clone());
                }
                self.state.apply(update, &mut StepWrites::default())?;
                let tasks = plan::start_tasks(core, &self.state, &mut scratch)?;
                if let (Some(p), Some(recorded)) = (persist.as_deref_mut(), recorded) {
                    let writes = [TaskWriteRef::<S> {
                        node: INPUT_NODE,
                        updates: std::slice::from_ref(&recorded),
                        gotos: Vec::new(),
                    }];
                    let record = p
                        .save(
                            CheckpointSource::Input,
                            &self.state,
                            &writes,
                            &task_records(core, &tasks),
                            &joins.0,
                            &[],
                        )
                        .await?;
                    self.emitter.checkpoint(&record, core, &tasks);
                }
                tasks
            }
            RunInput::Continue | RunInput::Resume(_) => {
                let Some(p) = persist.as_deref_mut() else {
                    return Err(Error::NoCheckpointer("resuming a run"));
                };
                let Some((loaded, writes)) =
                    p.load::<S>(self.config.checkpoint_id.as_deref()).await?
                else {
                    return Err(Error::CheckpointNotFound {
                        thread_id: p.thread_id.clone(),
                        checkpoint_id: None,
                    });
                };
                pending = pending_step(core, &loaded.record, &writes)?;
                let tasks = restore_tasks(core, &loaded.record, loaded.body.next)?;
                joins = JoinProgress::restore(core, loaded.body.joins);
                self.state = loaded.state;
                if let RunInput::Resume(resume) = input {
                    apply_resume(core, p, &tasks, &mut pending, resume).await?;
                }
                // The pending step already passed its interrupt_before check (it paused
                // there, or ran and failed or paused inside); after an interrupt_after
                // pause, the next step has not been checked yet.
                skip_static_before = !pending
                    .static_interrupts
                    .iter()
                    .any(|i| i.kind == InterruptKind::After);
                tasks
            }
        };
        self.emitter.values(&self.state);

        while !tasks.is_empty() {
            if !skip_static_before {
                let before = StaticCheck {
                    kind: InterruptKind::Before,
                    hits: &tasks,
                    next: &tasks,
                };
                self.static_interrupt(core, before, &joins, persist.as_deref_mut())
                    .await?;
            }
            skip_static_before = false;
            if self.step >= self.config.recursion_limit {
                return Err(Error::RecursionLimit {
                    limit: self.config.recursion_limit,
                });
            }
            self.step += 1;

            let parallel = tasks.len() > 1;
            let extras: Vec<TaskExtras<S>> = (0..tasks.len())
                .map(|i| TaskExtras {
                    prefilled: pending
                        .outputs
                        .remove(&i)
                        .map(|(updates, gotos)| NodeOutput::Writes { updates, gotos }),
                    saver: persist.as_deref().and_then(|p| p.task_saver(i, parallel)),
                    scratchpad: match persist {
                        Some(_) => Some(Scratchpad::new(
                            pending.resume.remove(&i).unwrap_or_default(),
                        )),
                        None => self.inherited_scratchpad.clone(),
                    },
                })
                .collect();
            pending = PendingStep::default();
            let scope = StepScope {
                step: self.step,
                config: Arc::clone(&self.config),
                target: self.emitter.target.clone(),
                namespace: Arc::clone(&self.namespace),
                store: core.store.clone(),
            };
            // The snapshot takes the state by move; it is cloned back only if a task kept
            // a reference past the step.
            let snapshot = Arc::new(std::mem::take(&mut self.state));
            let results = execute::run_step(core, &tasks, &snapshot, &scope, extras).await;
            self.state = Arc::try_unwrap(snapshot).unwrap_or_else(|shared| (*shared).clone());

            let mut outputs = Vec::with_capacity(results.len());
            let mut interrupts = Vec::new();
            let mut failure = None;
            for (index, result) in results.into_iter().enumerate() {
                match result {
                    Ok(output) => outputs.push((index, output)),
                    Err(Error::Interrupt(signal)) => interrupts.push((index, signal)),
                    Err(error) => {
                        failure.get_or_insert(error);
                    }
                }
            }
            if failure.is_some() || !interrupts.is_empty() {
                if let Some(p) = persist.as_deref_mut().filter(|p| !p.per_step()) {
                    self.save_stopped_step(core, p, &tasks, &joins, &outputs, &interrupts)
                        .await?;
                }
                if let Some(error) = failure {
                    return Err(error);
                }
                return Err(self.paused(core, &tasks, interrupts, persist.as_deref()));
            }
            let outputs: Vec<NodeOutput<S>> = outputs.into_iter().map(|(_, o)| o).collect();

            let mut recorded = persist
                .as_deref()
                .filter(|p| p.per_step())
                .map(|_| Vec::new());
            let gotos = apply::apply_writes(
                core,
                &mut self.state,
                &tasks,
                outputs,
                &self.emitter,
                &mut self.collected,
                recorded.as_mut(),
            )?;
            self.emitter.values(&self.state);
            let next =
                plan::next_tasks(core, &tasks, gotos, &self.state, &mut joins, &mut scratch)?;
            if let (Some(p), Some(recorded)) = (persist.as_deref_mut(), recorded) {
                let writes: Vec<TaskWriteRef<'_, S>> = recorded
                    .iter()
                    .map(|w| TaskWriteRef {
                        node: &w.node,
                        updates: &w.updates,
                        gotos: Vec::new(),
                    })
                    .collect();
                let ran: Vec<&str> = tasks.iter().map(|t| &*core.nodes[t.node].name).collect();
                let record = p
                    .save(
                        CheckpointSource::Loop,
                        &self.state,
                        &writes,
                        &task_records(core, &next),
                        &joins.0,
                        &ran,
                    )
                    .await?;
                self.emitter.checkpoint(&record, core, &next);
            }
            if !next.is_empty() {
                let after = StaticCheck {
                    kind: InterruptKind::After,
                    hits: &tasks,
                    next: &next,
                };
                self.static_interrupt(core, after, &joins, persist.as_deref_mut())
                    .await?;
            }
            tasks = next;
        }
        if let Some(p) = persist.filter(|p| !p.per_step()) {
            let ran: [&str; 0] = [];
            let record = p
                .save(
                    CheckpointSource::Loop,
                    &self.state,
                    &[],
                    &[],
                    &joins.0,
                    &ran,
                )
                .await?;
            self.emitter.checkpoint(&record, core, &[]);
        }
        Ok(())
    }

    /// `Durability::Exit`: a step stopped (failed or paused), so save the state before
    /// it, the step as the next one, and its finished tasks and interrupts as pending
    /// writes, so the thread can be resumed.
    async fn save_stopped_step(
        &self,
        core: &GraphCore<S>,
        persist: &mut Persist,
        tasks: &[Task],
        joins: &JoinProgress,
        outputs: &[(usize, NodeOutput<S>)],
        interrupts: &[(usize, InterruptSignal)],
    ) -> Result<(), Error> {
        let next = task_records(core, tasks);
        let record = persist
            .save(
                CheckpointSource::Loop,
                &self.state,
                &[],
                &next,
                &joins.0,
                &[],
            )
            .await?;
        for (index, output) in outputs {
            let node = &*core.nodes[tasks[*index].node].name;
            let pending = PendingRef::Output(output_ref(node, output));
            persist
                .save_pending::<S>(index.to_string(), node, &pending)
                .await?;
        }
        for (index, signal) in interrupts {
            let node = &*core.nodes[tasks[*index].node].name;
            let id = interrupt_id(&record.checkpoint_id, *index);
            let pending = PendingRef::Interrupt {
                id: &id,
                index: signal.index,
                payload: &signal.payload,
            };
            persist
                .save_pending::<S>(index.to_string(), node, &pending)
                .await?;
        }
        Ok(())
    }

    /// Stops the run if one of `check.hits` is marked to interrupt before (or after) it.
    async fn static_interrupt(
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
        let per_run = match kind {
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
        if hits.is_empty() || !self.persistent {
            return Ok(());
        }
        let Some(p) = persist else {
            return Err(Error::NoCheckpointer("interrupt_before / interrupt_after"));
        };
        if !p.per_step() {
            let records = task_records(core, next);
            p.save(
                CheckpointSource::Loop,
                &self.state,
                &[],
                &records,
                &joins.0,
                &[],
            )
            .await?;
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
        Err(Error::Interrupted {
            thread_id: p.thread_id.clone(),
            interrupts,
        })
    }

    /// The error that ends a run paused on dynamic interrupts.
    fn paused(
        &self,
        core: &GraphCore<S>,
        tasks: &[Task],
        interrupts: Vec<(usize, InterruptSignal)>,
        persist: Option<&Persist>,
    ) -> Error {
        let Some(p) = persist else {
            // A subgraph run: the parent task pauses with the first signal.
            let mut interrupts = interrupts;
            return Error::Interrupt(interrupts.swap_remove(0).1);
        };
        let checkpoint = p.current.clone().unwrap_or_default();
        Error::Interrupted {
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

/// The stream of a run's events; see [`CompiledGraph::stream`].
///
/// The run advances as the stream is polled. After the last event, a failed run yields its
/// error; a successful run's final state is then available from [`RunStream::final_state`].
pub struct RunStream<S: State> {
    events: mpsc::UnboundedReceiver<StreamEvent<S>>,
    run: Option<BoxFuture<'static, Result<Done<S>, Error>>>,
    error: Option<Error>,
    final_state: Option<S>,
}

impl<S: State> RunStream<S> {
    pub(crate) fn start(
        graph: CompiledGraph<S>,
        input: RunInput<S>,
        config: RunConfig,
        modes: StreamModes,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let emitter = Emitter::root(tx, modes);
        let runner = Runner::new(&graph, S::default(), Arc::new(config), emitter);
        Self {
            events: rx,
            run: Some(Box::pin(runner.run(input))),
            error: None,
            final_state: None,
        }
    }

    /// The final state, once the stream has ended without error.
    pub fn final_state(&self) -> Option<&S> {
        self.final_state.as_ref()
    }

    /// Takes the final state, once the stream has ended without error.
    pub fn into_final_state(self) -> Option<S> {
        self.final_state
    }
}

// Nothing is ever pinned through a `RunStream`: the run future is boxed.
impl<S: State> Unpin for RunStream<S> {}

impl<S: State> Stream for RunStream<S> {
    type Item = Result<StreamEvent<S>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_recv(cx) {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(run) = this.run.as_mut() else { break };
            match run.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(outcome) => {
                    this.run = None;
                    match outcome {
                        Ok(done) => this.final_state = Some(done.state),
                        Err(error) => this.error = Some(error),
                    }
                }
            }
        }
        if let Ok(event) = this.events.try_recv() {
            return Poll::Ready(Some(Ok(event)));
        }
        Poll::Ready(this.error.take().map(Err))
    }
}
