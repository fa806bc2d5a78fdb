//! Executing a super-step: every task on the same snapshot, concurrently, with retries,
//! timeouts, a concurrency bound, and task events.

use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::{BoxFuture, Either};
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use crate::command::Goto;
use crate::context::config::{RetryPolicy, RunConfig};
use crate::context::node_context::{NodeContext, PacketDebug};
use crate::context::scratchpad::Scratchpad;
use crate::context::stream::{
    Namespace, RawPayload, StreamMode, StreamTarget, StreamWriter, TaskEvent, TaskEventKind,
};
use crate::error::{BoxError, Error};
use crate::graph::compiled::{GraphCore, NodeSpec};
use crate::graph::node::{ErasedAsyncNode, NodeOutput, NodeRunner, SyncFn};
use crate::run::persist::TaskSaver;
use crate::run::plan::{Task, panic_message};
use crate::state::{State, StepWrites};
use crate::store::Store;

/// What every task of one step shares, borrowed from the run (each task clones what it
/// keeps).
pub(crate) struct StepScope<'a> {
    pub(crate) step: usize,
    pub(crate) config: &'a Arc<RunConfig>,
    pub(crate) target: Option<&'a StreamTarget>,
    pub(crate) namespace: &'a Namespace,
    pub(crate) store: Option<&'a Arc<dyn Store>>,
    /// The subgraph nodes the run is inside (`None` for a root run).
    pub(crate) graph_path: Option<&'a Arc<str>>,
}

/// What differs per task besides its node: restored output, persistence, interrupts.
pub(crate) struct TaskExtras<S: State> {
    /// Output restored from a checkpoint: the task is not run again.
    pub(crate) prefilled: Option<NodeOutput<S>>,
    /// Saves the task's output or interrupt as soon as it finishes.
    pub(crate) saver: Option<TaskSaver>,
    pub(crate) scratchpad: Option<Arc<Scratchpad>>,
}

/// Everything one task needs, owned, so it can run on another tokio task.
struct TaskRun<S: State> {
    runner: NodeRunner<S>,
    retry: Option<RetryPolicy>,
    timeout: Option<Duration>,
    ctx: NodeContext,
    index: usize,
    events: Option<StreamTarget>,
    saver: Option<TaskSaver>,
    /// When the task started, while task events are streamed (for their durations).
    started: Option<Instant>,
}

pub(crate) type TaskResult<S> = Result<NodeOutput<S>, Error>;

/// Buffers a run reuses from one super-step to the next, so that a step allocates nothing
/// once the run is warm: the results of the step's tasks, the state's shared snapshot,
/// the step's write bookkeeping and `Command` targets, and the next step's tasks.
pub(crate) struct StepBuffers<S: State> {
    /// One slot per task of the current step, in task order.
    pub(crate) results: Vec<Option<TaskResult<S>>>,
    /// The `Arc` the last step's snapshot lived in, kept to hold the next one.
    pub(crate) spare: Option<Arc<S>>,
    /// The step's last-value claims and overwrites.
    pub(crate) writes: StepWrites,
    /// The `Command` targets of the step's tasks that routed, by task index.
    pub(crate) gotos: Vec<(usize, Vec<Goto>)>,
    /// Where the planner writes the next step's tasks.
    pub(crate) next: Vec<Task>,
    /// The context lent to the run's lean tasks, kept from task to task (see
    /// [`lend_context`]).
    pub(crate) context: Option<NodeContext>,
}

impl StepScope<'_> {
    /// `true` when the run streams `mode`.
    fn streams(&self, mode: StreamMode) -> bool {
        self.target.is_some_and(|t| t.modes.contains(mode))
    }
}

impl<S: State> Default for StepBuffers<S> {
    fn default() -> Self {
        Self {
            results: Vec::new(),
            spare: None,
            writes: StepWrites::default(),
            gotos: Vec::new(),
            next: Vec::new(),
            context: None,
        }
    }
}

impl<S: State> StepBuffers<S> {
    /// Moves `state` into a shared snapshot for the step's tasks, reusing the last
    /// step's allocation. `state` holds a stale default value until [`Self::restore`].
    pub(crate) fn share(&mut self, state: &mut S) -> Arc<S> {
        if let Some(mut spare) = self.spare.take()
            && let Some(slot) = Arc::get_mut(&mut spare)
        {
            std::mem::swap(slot, state);
            return spare;
        }
        Arc::new(std::mem::take(state))
    }

    /// Puts the snapshot's state back into `state`; it is cloned only if a task kept a
    /// reference to it past the step.
    pub(crate) fn restore(&mut self, mut snapshot: Arc<S>, state: &mut S) {
        match Arc::get_mut(&mut snapshot) {
            Some(shared) => {
                std::mem::swap(shared, state);
                self.spare = Some(snapshot);
            }
            None => *state = (*snapshot).clone(),
        }
    }
}

/// Runs `tasks` on `snapshot`; their results go to `results`, one per task in task
/// order. `extras(i)` gives what task `i` needs besides its node; `slot` is the context
/// lent to lean tasks (see [`lend_context`]).
///
/// A step of one task runs it directly: a sync node inline, an async node as its own
/// future, with nothing boxed or allocated by the engine. Wider steps go to [`run_many`].
pub(crate) async fn run_step<S: State>(
    core: &GraphCore<S>,
    tasks: &[Task],
    snapshot: &Arc<S>,
    scope: &StepScope<'_>,
    mut extras: impl FnMut(usize) -> TaskExtras<S>,
    slot: &mut Option<NodeContext>,
    results: &mut Vec<Option<TaskResult<S>>>,
) {
    results.clear();
    results.resize_with(tasks.len(), || None);
    let [task] = tasks else {
        Box::pin(run_many(
            core, tasks, snapshot, scope, extras, slot, results,
        ))
        .await;
        return_context(slot);
        return;
    };
    let extra = extras(0);
    let result = match extra.prefilled {
        Some(output) => Ok(output),
        None if let Some(f) = lean_async(core, task, scope, extra.saver.as_ref()) => {
            let spec = &core.nodes[task.node];
            let ctx = lend_context(slot, spec, task, scope, extra.scratchpad);
            let lean = LeanTask::new(f, snapshot, ctx);
            let attempt = lean.await;
            return_context(slot);
            attempt.into_result(&spec.name, 1)
        }
        None => {
            let mut run = prepare(core, task, 0, scope, extra.saver, extra.scratchpad);
            match run.run_inline(snapshot) {
                // (Boxed: rare, and large.)
                Some(result) if run.wants_save(&result) => Box::pin(run.save(result)).await,
                Some(result) => result,
                // (A lean task was caught above: this one needs the full task.)
                None => Box::pin(run.execute(Arc::clone(snapshot))).await,
            }
        }
    };
    results[0] = Some(result);
}

/// `true` when `tasks` is one task of a sync node without a retry policy: a step
/// [`run_inline_step`] runs with no future at all.
pub(crate) fn runs_inline<S: State>(core: &GraphCore<S>, tasks: &[Task]) -> bool {
    matches!(tasks, [task] if {
        let spec = &core.nodes[task.node];
        spec.retry.is_none() && matches!(spec.runner, NodeRunner::Sync(_))
    })
}

/// The one task of an inline step, run, with a result its saver wants saved.
pub(crate) struct InlineSave<S: State> {
    run: TaskRun<S>,
    result: TaskResult<S>,
}

impl<S: State> InlineSave<S> {
    /// Saves the result; the task's result once saved.
    pub(crate) async fn finish(self: Box<Self>) -> TaskResult<S> {
        let Self { run, result } = *self;
        run.save(result).await
    }
}

/// [`run_step`] for a step where [`runs_inline`] holds, with no future: the task's result
/// goes to `results`, unless it still has to be saved (then it is returned, and its
/// [`InlineSave::finish`] gives the result).
///
/// The node reads `state` itself: a sync node needs no shared snapshot.
pub(crate) fn run_inline_step<S: State>(
    core: &GraphCore<S>,
    task: &Task,
    state: &S,
    scope: &StepScope<'_>,
    extra: TaskExtras<S>,
    slot: &mut Option<NodeContext>,
    results: &mut Vec<Option<TaskResult<S>>>,
) -> Result<(), Box<InlineSave<S>>> {
    results.clear();
    let spec = &core.nodes[task.node];
    let result = match (extra.prefilled, &spec.runner) {
        (Some(output), _) => Ok(output),
        // Nothing to save and no task events: just the node's context and its call.
        (None, NodeRunner::Sync(f))
            if extra.saver.is_none() && !scope.streams(StreamMode::Tasks) =>
        {
            let ctx = lend_context(slot, spec, task, scope, extra.scratchpad);
            let result = attempt_sync(f, state, ctx).into_result(&spec.name, 1);
            return_context(slot);
            result
        }
        (None, _) => {
            let mut run = prepare(core, task, 0, scope, extra.saver, extra.scratchpad);
            match run.run_inline(state) {
                Some(result) if run.wants_save(&result) => {
                    // Boxed: large, and rare (an interrupt to save, or a saved output).
                    return Err(Box::new(InlineSave { run, result }));
                }
                Some(result) => result,
                None => Err(missing_result(core, task)),
            }
        }
    };
    results.push(Some(result));
    Ok(())
}

/// [`run_step`] for a step of several tasks: sync nodes inline one after another, in task
/// order, then the async tasks polled together (each alone if it is the only one).
async fn run_many<S: State>(
    core: &GraphCore<S>,
    tasks: &[Task],
    snapshot: &Arc<S>,
    scope: &StepScope<'_>,
    mut extras: impl FnMut(usize) -> TaskExtras<S>,
    slot: &mut Option<NodeContext>,
    results: &mut [Option<TaskResult<S>>],
) {
    let async_count = tasks
        .iter()
        .filter(|t| matches!(core.nodes[t.node].runner, NodeRunner::Async(_)))
        .count();
    let limit = scope.config.max_concurrency.unwrap_or(usize::MAX);
    let unlimited = limit == usize::MAX;
    let events = scope.streams(StreamMode::Tasks);
    // Without a concurrency limit, lean async tasks are listed in `lean` (by index, with
    // their interrupt bookkeeping) and started after the sync tasks ran, each polled once
    // as it is made; only those still pending then go into `in_flight`. With a limit, they
    // wait in `waiting` and start as others finish.
    let mut in_flight = FuturesUnordered::new();
    let mut lean = Vec::new();
    let mut waiting = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        let extra = extras(index);
        if let Some(output) = extra.prefilled {
            results[index] = Some(Ok(output));
            continue;
        }
        let spec = &core.nodes[task.node];
        // A lean task needs nothing but its node's context: no `TaskRun` is built.
        if extra.saver.is_none() && spec.retry.is_none() && !events {
            match &spec.runner {
                NodeRunner::Sync(f) => {
                    let ctx = lend_context(slot, spec, task, scope, extra.scratchpad);
                    results[index] =
                        Some(attempt_sync(f, snapshot, ctx).into_result(&spec.name, 1));
                    continue;
                }
                NodeRunner::Async(_) if spec.timeout.is_none() && async_count > 1 && unlimited => {
                    lean.push((index, extra.scratchpad));
                    continue;
                }
                NodeRunner::Async(_) => {}
            }
        }
        let mut run = prepare(core, task, index, scope, extra.saver, extra.scratchpad);
        let result = match run.run_inline(snapshot) {
            Some(result) if run.wants_save(&result) => run.save(result).await,
            Some(result) => result,
            None if async_count > 1 && unlimited => {
                in_flight.push(tagged(index, Either::Right(boxed(run, snapshot))));
                continue;
            }
            None if async_count > 1 => {
                waiting.push(run);
                continue;
            }
            None => boxed(run, snapshot).await,
        };
        results[index] = Some(result);
    }
    if !lean.is_empty() {
        // Made and polled once each, in apply order: a node that finishes at once never
        // needs a place in `in_flight` (and its allocation), and its future is freed before
        // the next one is made.
        // (Captured as `&mut`: a shared `&FuturesUnordered` held across the await would
        // need its futures to be `Sync`.)
        let (lean, pending, results, slot) = (&mut lean, &mut in_flight, &mut *results, &mut *slot);
        std::future::poll_fn(move |cx| {
            for (index, scratchpad) in lean.drain(..) {
                let task = &tasks[index];
                let spec = &core.nodes[task.node];
                let NodeRunner::Async(f) = &spec.runner else {
                    continue;
                };
                let ctx = lend_context(slot, spec, task, scope, scratchpad);
                let mut started = LeanTask::new(&**f, snapshot, ctx);
                match Pin::new(&mut started).poll(cx) {
                    Poll::Ready(attempt) => {
                        results[index] = Some(attempt.into_result(&spec.name, 1));
                    }
                    Poll::Pending => pending.push(tagged(index, Either::Left(started.named(spec)))),
                }
            }
            Poll::Ready(())
        })
        .await;
    }
    // Poll the step's async tasks together on this task, started in apply order with at
    // most `limit` in flight. No spawn per task: nodes wait on I/O concurrently, and a
    // node with heavy CPU work should hand it to `tokio::task::spawn_blocking`.
    let mut waiting = waiting.into_iter();
    loop {
        while in_flight.len() < limit {
            let Some(run) = waiting.next() else { break };
            let index = run.index;
            let spec = &core.nodes[tasks[index].node];
            let future = match lean_async(core, &tasks[index], scope, run.saver.as_ref()) {
                Some(f) => Either::Left(LeanTask::new(f, snapshot, &run.ctx).named(spec)),
                None => Either::Right(boxed(run, snapshot)),
            };
            in_flight.push(tagged(index, future));
        }
        match in_flight.next().await {
            Some((index, result)) => results[index] = Some(result),
            None => break,
        }
    }
}

/// The full future of a task (retries, timeout, events, saving), boxed: it is large.
type BoxedTask<S> = Pin<Box<dyn Future<Output = TaskResult<S>> + std::marker::Send>>;

fn boxed<S: State>(run: TaskRun<S>, snapshot: &Arc<S>) -> BoxedTask<S> {
    Box::pin(run.execute(Arc::clone(snapshot)))
}

/// A concurrent task's future, tagged with its index.
fn tagged<S: State>(
    index: usize,
    future: Either<NamedLeanTask<S>, BoxedTask<S>>,
) -> impl Future<Output = (usize, TaskResult<S>)> + std::marker::Send + 'static {
    future.map(move |result| (index, result))
}

/// An async task that needs no retries, timeout, task events or saver: the node's own
/// future, polled inside its stream writer's scope, its span and a panic catcher, as the
/// full task would, with nothing else around it. `Unpin`, and small: it does not even
/// keep its node's name (the caller knows it, see [`LeanTask::named`]).
struct LeanTask<S: State> {
    future: BoxFuture<'static, Result<NodeOutput<S>, BoxError>>,
    writer: StreamWriter,
    /// The node's span, when a subscriber is installed.
    span: Option<tracing::Span>,
}

/// A [`LeanTask`] that outlives the loop that made it (it went into `in_flight`), with
/// its node's name for its errors.
struct NamedLeanTask<S: State> {
    task: LeanTask<S>,
    node: Arc<str>,
}

impl<S: State> Future for NamedLeanTask<S> {
    type Output = TaskResult<S>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TaskResult<S>> {
        let this = &mut *self;
        Pin::new(&mut this.task)
            .poll(cx)
            .map(|attempt| attempt.into_result(&this.node, 1))
    }
}

impl<S: State> LeanTask<S> {
    /// Calls `f` on `snapshot` with `ctx`, its first attempt.
    #[inline]
    fn new(f: &dyn ErasedAsyncNode<S>, snapshot: &Arc<S>, ctx: &NodeContext) -> Self {
        Self {
            span: tracing_on().then(|| node_span(ctx)),
            writer: ctx.writer.clone(),
            future: f.call(snapshot, ctx),
        }
    }

    /// This task, ending with its result as a task of the node `spec`.
    fn named(self, spec: &NodeSpec<S>) -> NamedLeanTask<S> {
        NamedLeanTask {
            task: self,
            node: Arc::clone(&spec.name),
        }
    }
}

impl<S: State> Future for LeanTask<S> {
    type Output = Attempt<S>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Attempt<S>> {
        let this = &mut *self;
        let _entered = this.span.as_ref().map(tracing::Span::enter);
        let future = &mut this.future;
        let polled = this
            .writer
            .clone()
            .sync_scope(|| std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(output))) => Poll::Ready(Attempt::Done(output)),
            Ok(Poll::Ready(Err(error))) => Poll::Ready(Attempt::Failed(error)),
            Err(panic) => Poll::Ready(Attempt::Panicked(panic_message(&*panic))),
        }
    }
}

/// The async node of `task` when the task can run as a [`LeanTask`]: no retry policy,
/// timeout, saver or task events.
fn lean_async<'c, S: State>(
    core: &'c GraphCore<S>,
    task: &Task,
    scope: &StepScope<'_>,
    saver: Option<&TaskSaver>,
) -> Option<&'c dyn ErasedAsyncNode<S>> {
    let spec = &core.nodes[task.node];
    match &spec.runner {
        NodeRunner::Async(f)
            if spec.retry.is_none()
                && spec.timeout.is_none()
                && saver.is_none()
                && !scope.streams(StreamMode::Tasks) =>
        {
            Some(&**f)
        }
        _ => None,
    }
}

/// The error for a task whose result slot [`run_step`] left empty (it never does; this
/// is reported as an internal error rather than a panic).
pub(crate) fn missing_result<S: State>(core: &GraphCore<S>, task: &Task) -> Error {
    Error::NodePanicked {
        node: core.nodes[task.node].name.to_string(),
        message: "internal error: the task reported no result".into(),
    }
}

fn prepare<S: State>(
    core: &GraphCore<S>,
    task: &Task,
    index: usize,
    scope: &StepScope<'_>,
    saver: Option<TaskSaver>,
    scratchpad: Option<Arc<Scratchpad>>,
) -> TaskRun<S> {
    let spec = &core.nodes[task.node];
    let events = scope
        .target
        .filter(|_| scope.streams(StreamMode::Tasks))
        .cloned();
    TaskRun {
        runner: spec.runner.clone(),
        retry: spec.retry.clone(),
        timeout: spec.timeout,
        ctx: node_context(spec, task, scope, saver.as_ref(), scratchpad),
        index,
        events,
        saver,
        started: None,
    }
}

/// The context of a task of the node `spec` (its first attempt).
fn node_context<S: State>(
    spec: &NodeSpec<S>,
    task: &Task,
    scope: &StepScope<'_>,
    saver: Option<&TaskSaver>,
    scratchpad: Option<Arc<Scratchpad>>,
) -> NodeContext {
    NodeContext {
        node: Arc::clone(&spec.name),
        step: scope.step,
        attempt: 1,
        config: Arc::clone(scope.config),
        writer: node_writer(spec, scope),
        input: task.input.clone().map(PacketDebug),
        namespace: Arc::clone(scope.namespace),
        scratchpad,
        store: scope.store.cloned(),
        checkpoint: saver
            .filter(|_| spec.runner.needs_task_link())
            .map(|s| s.link(&spec.name)),
        graph_path: scope.graph_path.cloned(),
    }
}

/// The stream writer of a task of the node `spec`.
fn node_writer<S: State>(spec: &NodeSpec<S>, scope: &StepScope<'_>) -> StreamWriter {
    match scope.target {
        Some(target) => StreamWriter::new(target.clone(), Arc::clone(&spec.name)),
        None => StreamWriter::disabled(),
    }
}

/// The context of a lean task (no saver) of the node `spec`, lent from `slot`: what is
/// the same for every task of a run (its config, namespace, store, graph path) is kept
/// from the task before, and what differs is set again; the node's name and stream
/// writer only when the node differs. A task costs no reference counts for what it
/// shares with the run, and nothing is built or dropped per task.
///
/// The node gets `&NodeContext`; one that keeps the context clones it.
fn lend_context<'s, S: State>(
    slot: &'s mut Option<NodeContext>,
    spec: &NodeSpec<S>,
    task: &Task,
    scope: &StepScope<'_>,
    scratchpad: Option<Arc<Scratchpad>>,
) -> &'s NodeContext {
    // (The run's config is compared in case the slot outlived its run's scope.)
    let reusable = slot
        .as_ref()
        .is_some_and(|ctx| Arc::ptr_eq(&ctx.config, scope.config));
    if !reusable {
        *slot = None;
    }
    match slot {
        Some(ctx) => {
            if !Arc::ptr_eq(&ctx.node, &spec.name) {
                ctx.node = Arc::clone(&spec.name);
                ctx.writer = node_writer(spec, scope);
            }
            ctx.step = scope.step;
            ctx.attempt = 1;
            ctx.input = task.input.clone().map(PacketDebug);
            ctx.scratchpad = scratchpad;
            ctx.checkpoint = None;
            ctx
        }
        None => slot.insert(node_context(spec, task, scope, None, scratchpad)),
    }
}

/// Drops what the last task lent from `slot` kept of its own (its input, its interrupt
/// bookkeeping), so that nothing of a finished task stays alive in the slot.
fn return_context(slot: &mut Option<NodeContext>) {
    if let Some(ctx) = slot {
        ctx.input = None;
        ctx.scratchpad = None;
    }
}

/// How one attempt ended.
enum Attempt<S: State> {
    Done(NodeOutput<S>),
    Failed(BoxError),
    TimedOut(Duration),
    Panicked(String),
}

impl<S: State> Attempt<S> {
    /// The task's result after this attempt, the last one (attempt number `attempts`).
    fn into_result(self, node: &Arc<str>, attempts: u32) -> TaskResult<S> {
        match self {
            Self::Done(output) => Ok(output),
            Self::Panicked(message) => Err(Error::NodePanicked {
                node: node.to_string(),
                message,
            }),
            Self::TimedOut(timeout) => Err(Error::NodeTimeout {
                node: node.to_string(),
                timeout,
            }),
            Self::Failed(error) => Err(into_task_error(node, attempts, error)),
        }
    }
}

/// One attempt of the sync node `f`, inline, with `ctx`'s stream writer as the current one.
fn attempt_sync<S: State>(f: &SyncFn<S>, state: &S, ctx: &NodeContext) -> Attempt<S> {
    // Not even a disabled span without a subscriber: entering and leaving one costs.
    let _entered = tracing_on().then(|| node_span(ctx).entered());
    let call = || std::panic::catch_unwind(AssertUnwindSafe(|| f(state, ctx)));
    match ctx.writer.clone().sync_scope(call) {
        Ok(Ok(output)) => Attempt::Done(output),
        Ok(Err(err)) => Attempt::Failed(err),
        Err(panic) => Attempt::Panicked(panic_message(&*panic)),
    }
}

/// What to do after an attempt.
enum Settled<S: State> {
    /// The task is done, successfully or not.
    Done(TaskResult<S>),
    /// Try again after this delay.
    Retry(Duration),
}

/// `true` when a `tracing` subscriber is installed. Without one, the per-step and per-task
/// spans are not built at all: even a disabled span costs a few hundred instructions
/// (its fields, and the `log` fallback some dependencies switch on), a third of a step.
pub(crate) fn tracing_on() -> bool {
    tracing::dispatcher::has_been_set()
}

/// The `node` span of one attempt (none without a subscriber).
fn node_span(ctx: &NodeContext) -> tracing::Span {
    if !tracing_on() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "node",
        node = %ctx.node,
        step = ctx.step,
        attempt = ctx.attempt,
    )
}

impl<S: State> TaskRun<S> {
    /// Emits the task's `Start` event and starts its clock (only while events stream).
    fn start(&mut self) {
        if self.events.is_some() {
            self.started = Some(Instant::now());
            self.emit(TaskEventKind::Start);
        }
    }

    /// Time since [`start`](Self::start) (zero when events are not streamed).
    fn elapsed(&self) -> Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }

    fn emit(&self, kind: TaskEventKind) {
        if let Some(target) = &self.events {
            target.emit(RawPayload::Task(TaskEvent {
                step: self.ctx.step,
                node: Arc::clone(&self.ctx.node),
                index: self.index,
                kind,
            }));
        }
    }

    async fn attempt(&self, snapshot: &Arc<S>) -> Attempt<S> {
        match &self.runner {
            NodeRunner::Sync(f) => attempt_sync(f, snapshot, &self.ctx),
            NodeRunner::Async(f) => {
                let span = node_span(&self.ctx);
                let future = AssertUnwindSafe(f.call(snapshot, &self.ctx)).catch_unwind();
                let future =
                    tracing::Instrument::instrument(self.ctx.writer.clone().scope(future), span);
                let outcome = match self.timeout {
                    Some(limit) => match Box::pin(tokio::time::timeout(limit, future)).await {
                        Ok(outcome) => outcome,
                        Err(_) => return Attempt::TimedOut(limit),
                    },
                    None => future.await,
                };
                match outcome {
                    Ok(Ok(output)) => Attempt::Done(output),
                    Ok(Err(err)) => Attempt::Failed(err),
                    Err(panic) => Attempt::Panicked(panic_message(&*panic)),
                }
            }
        }
    }

    /// Runs a sync node without a retry policy right here, with its task events; `None`
    /// (nothing run) for any other node. The output still has to be [saved](Self::save).
    fn run_inline(&mut self, state: &S) -> Option<TaskResult<S>> {
        if self.retry.is_some() || !matches!(self.runner, NodeRunner::Sync(_)) {
            return None;
        }
        self.start();
        let NodeRunner::Sync(f) = &self.runner else {
            return None;
        };
        let attempt = attempt_sync(f, state, &self.ctx);
        let result = match self.settle(attempt) {
            Settled::Done(result) => result,
            // `settle` retries only under a retry policy, and this task has none.
            Settled::Retry(_) => Err(Error::NodePanicked {
                node: self.ctx.node.to_string(),
                message: "internal error: a retry without a retry policy".into(),
            }),
        };
        Some(result)
    }

    /// Runs the task, then saves its output or interrupt if it has a saver.
    async fn execute(mut self, snapshot: Arc<S>) -> TaskResult<S> {
        let result = self.run_attempts(&snapshot).await;
        self.save(result).await
    }

    /// `true` when the task has a saver that keeps `result`.
    fn wants_save(&self, result: &TaskResult<S>) -> bool {
        self.saver.as_ref().is_some_and(|saver| saver.wants(result))
    }

    /// Saves the task's output or interrupt if it has a saver that wants it. Only the
    /// saving itself is a future (boxed: it is off the hot path), so a task with nothing
    /// to save costs nothing here.
    ///
    /// A successful task's `End` event follows its save, so a consumer that sees `End`
    /// knows the output is durable; a failed save ends the task with an `Error` event.
    fn save(mut self, result: TaskResult<S>) -> impl Future<Output = TaskResult<S>> {
        let saver = self.saver.take().filter(|saver| saver.wants(&result));
        async move {
            let Some(saver) = saver else { return result };
            let saved = Box::pin(save_result(&saver, &self.ctx.node, &result)).await;
            if result.is_ok() {
                match &saved {
                    Ok(()) => self.emit(TaskEventKind::End {
                        duration: self.elapsed(),
                    }),
                    Err(error) => self.emit(TaskEventKind::Error {
                        duration: self.elapsed(),
                        error: error.to_string(),
                    }),
                }
            }
            saved.and(result)
        }
    }

    /// What an attempt means for the task: done (with events emitted), or a retry.
    /// A successful attempt's `End` event waits for the save when the output is saved.
    fn settle(&self, attempt: Attempt<S>) -> Settled<S> {
        let elapsed = || self.elapsed();
        let error: BoxError = match attempt {
            Attempt::Done(output) => {
                let done = Ok(output);
                if !self.wants_save(&done) {
                    self.emit(TaskEventKind::End {
                        duration: elapsed(),
                    });
                }
                return Settled::Done(done);
            }
            Attempt::Panicked(message) => {
                self.emit(TaskEventKind::Error {
                    duration: elapsed(),
                    error: message.clone(),
                });
                return Settled::Done(Attempt::Panicked(message).into_result(&self.ctx.node, 1));
            }
            Attempt::TimedOut(timeout) => Box::new(Error::NodeTimeout {
                node: self.ctx.node.to_string(),
                timeout,
            }),
            Attempt::Failed(error) => error,
        };
        let attempt = self.ctx.attempt;
        let max_attempts = self.retry.as_ref().map_or(1, RetryPolicy::max_attempts);
        let retry = self.retry.as_ref().filter(|policy| {
            attempt < max_attempts && !is_control_flow(&error) && policy.should_retry(&error)
        });
        if let Some(policy) = retry {
            let delay = policy.jittered_delay(attempt + 1);
            self.emit(TaskEventKind::Retry {
                attempt,
                error: error.to_string(),
                delay,
            });
            tracing::debug!(node = %self.ctx.node, attempt, ?delay, %error, "retrying node");
            return Settled::Retry(delay);
        }
        self.emit(TaskEventKind::Error {
            duration: elapsed(),
            error: error.to_string(),
        });
        Settled::Done(Err(into_task_error(&self.ctx.node, attempt, error)))
    }

    /// Runs attempts until one succeeds or the retry policy gives up. Borrows `self`, so
    /// the task's state is not copied into this future as well.
    async fn run_attempts(&mut self, snapshot: &Arc<S>) -> TaskResult<S> {
        self.start();
        loop {
            let attempt = self.attempt(snapshot).await;
            match self.settle(attempt) {
                Settled::Done(result) => return result,
                Settled::Retry(delay) => {
                    Box::pin(tokio::time::sleep(delay)).await;
                    self.ctx.attempt += 1;
                }
            }
        }
    }
}

/// Saves a finished task's writes (or its interrupt) as a pending write.
async fn save_result<S: State>(
    saver: &TaskSaver,
    node: &str,
    result: &TaskResult<S>,
) -> Result<(), Error> {
    match result {
        Ok(output) => saver.output(node, output).await,
        Err(Error::Interrupt(signal)) => {
            saver
                .interrupt::<S>(node, signal.index, &signal.payload)
                .await
        }
        Err(_) => Ok(()),
    }
}

/// Errors that steer the run rather than report a failure; never retried or wrapped.
fn is_control_flow(error: &BoxError) -> bool {
    matches!(
        error.downcast_ref::<Error>(),
        Some(Error::ParentCommand { .. } | Error::Cancelled | Error::Interrupt(_))
    )
}

fn into_task_error(node: &Arc<str>, attempts: u32, error: BoxError) -> Error {
    match error.downcast::<Error>() {
        Ok(error) => match *error {
            own @ (Error::ParentCommand { .. }
            | Error::Cancelled
            | Error::NodeTimeout { .. }
            | Error::Interrupt(_)
            | Error::NoCheckpointer(_)) => own,
            input @ Error::InputType { .. } => input,
            other => Error::NodeFailed {
                node: node.to_string(),
                attempts,
                source: Box::new(other),
            },
        },
        Err(source) => Error::NodeFailed {
            node: node.to_string(),
            attempts,
            source,
        },
    }
}
