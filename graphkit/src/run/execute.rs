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
    /// The `Command` targets of each task of the step.
    pub(crate) gotos: Vec<Vec<Goto>>,
    /// Where the planner writes the next step's tasks.
    pub(crate) next: Vec<Task>,
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
/// order. `extras(i)` gives what task `i` needs besides its node.
///
/// A step of one task runs it directly: a sync node inline, an async node as its own
/// future, with nothing boxed or allocated by the engine. Wider steps go to [`run_many`].
pub(crate) async fn run_step<S: State>(
    core: &GraphCore<S>,
    tasks: &[Task],
    snapshot: &Arc<S>,
    scope: &StepScope<'_>,
    mut extras: impl FnMut(usize) -> TaskExtras<S>,
    results: &mut Vec<Option<TaskResult<S>>>,
) {
    results.clear();
    results.resize_with(tasks.len(), || None);
    let [task] = tasks else {
        return Box::pin(run_many(core, tasks, snapshot, scope, extras, results)).await;
    };
    let extra = extras(0);
    let result = match extra.prefilled {
        Some(output) => Ok(output),
        None if let Some(f) = lean_async(core, task, scope, extra.saver.as_ref()) => {
            let ctx = node_context(&core.nodes[task.node], task, scope, None, extra.scratchpad);
            LeanTask::new(f, snapshot, ctx).await
        }
        None => {
            let mut run = prepare(core, task, 0, scope, extra.saver, extra.scratchpad);
            match run.run_inline(snapshot) {
                Some(result) if run.wants_save(&result) => run.save(result).await,
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
pub(crate) fn run_inline_step<S: State>(
    core: &GraphCore<S>,
    task: &Task,
    snapshot: &Arc<S>,
    scope: &StepScope<'_>,
    extra: TaskExtras<S>,
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
            let ctx = node_context(spec, task, scope, None, extra.scratchpad);
            attempt_sync(f, snapshot, &ctx).into_result(&ctx.node, 1)
        }
        (None, _) => {
            let mut run = prepare(core, task, 0, scope, extra.saver, extra.scratchpad);
            match run.run_inline(snapshot) {
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
    results: &mut [Option<TaskResult<S>>],
) {
    let async_count = tasks
        .iter()
        .filter(|t| matches!(core.nodes[t.node].runner, NodeRunner::Async(_)))
        .count();
    let limit = scope.config.max_concurrency.unwrap_or(usize::MAX);
    let unlimited = limit == usize::MAX;
    // Without a concurrency limit, lean async tasks are made in apply order into `lean`
    // and first polled once each, after the sync tasks ran; only those still pending then
    // go into `in_flight`. With a limit, they wait in `waiting` and start as others finish.
    let mut in_flight = FuturesUnordered::new();
    let mut lean = Vec::new();
    let mut waiting = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        let extra = extras(index);
        // A lean async task needs nothing but its node's context: no `TaskRun` is built.
        if extra.prefilled.is_none()
            && async_count > 1
            && unlimited
            && let Some(f) = lean_async(core, task, scope, extra.saver.as_ref())
        {
            let ctx = node_context(&core.nodes[task.node], task, scope, None, extra.scratchpad);
            lean.push((index, LeanTask::new(f, snapshot, ctx)));
            continue;
        }
        let mut run = match extra.prefilled {
            Some(output) => {
                results[index] = Some(Ok(output));
                continue;
            }
            None => prepare(core, task, index, scope, extra.saver, extra.scratchpad),
        };
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
        // One poll each, in apply order: a node that finishes at once never needs a place
        // in `in_flight` (and its allocation).
        // (Captured as `&mut`: a shared `&FuturesUnordered` held across the await would
        // need its futures to be `Sync`.)
        let (lean, pending, results) = (&mut lean, &mut in_flight, &mut *results);
        std::future::poll_fn(move |cx| {
            for (index, mut task) in lean.drain(..) {
                match Pin::new(&mut task).poll(cx) {
                    Poll::Ready(result) => results[index] = Some(result),
                    Poll::Pending => pending.push(tagged(index, Either::Left(task))),
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
            let future = match lean_async(core, &tasks[index], scope, run.saver.as_ref()) {
                Some(f) => Either::Left(LeanTask::new(f, snapshot, run.ctx)),
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
    future: Either<LeanTask<S>, BoxedTask<S>>,
) -> impl Future<Output = (usize, TaskResult<S>)> + std::marker::Send + 'static {
    future.map(move |result| (index, result))
}

/// An async task that needs no retries, timeout, task events or saver: the node's own
/// future, polled inside its stream writer's scope, its span and a panic catcher, as the
/// full task would, with nothing else around it. `Unpin`, and small.
struct LeanTask<S: State> {
    future: BoxFuture<'static, Result<NodeOutput<S>, BoxError>>,
    writer: StreamWriter,
    /// The node's span, when a subscriber is installed.
    span: Option<tracing::Span>,
    node: Arc<str>,
}

impl<S: State> LeanTask<S> {
    /// Calls `f` on `snapshot` with `ctx`, its first attempt.
    #[inline]
    fn new(f: &dyn ErasedAsyncNode<S>, snapshot: &Arc<S>, ctx: NodeContext) -> Self {
        let node = Arc::clone(&ctx.node);
        let span = tracing_on().then(|| node_span(&ctx));
        let writer = ctx.writer.clone();
        Self {
            future: f.call(Arc::clone(snapshot), ctx),
            writer,
            span,
            node,
        }
    }
}

impl<S: State> Future for LeanTask<S> {
    type Output = TaskResult<S>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<TaskResult<S>> {
        let this = &mut *self;
        let _entered = this.span.as_ref().map(tracing::Span::enter);
        let future = &mut this.future;
        let polled = this
            .writer
            .clone()
            .sync_scope(|| std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(output))) => Poll::Ready(Ok(output)),
            Ok(Poll::Ready(Err(error))) => Poll::Ready(Err(into_task_error(&this.node, 1, error))),
            Err(panic) => Poll::Ready(Err(Error::NodePanicked {
                node: this.node.to_string(),
                message: panic_message(&*panic),
            })),
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
    let writer = match scope.target {
        Some(target) => StreamWriter::new(target.clone(), Arc::clone(&spec.name)),
        None => StreamWriter::disabled(),
    };
    NodeContext {
        node: Arc::clone(&spec.name),
        step: scope.step,
        attempt: 1,
        config: Arc::clone(scope.config),
        writer,
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
fn attempt_sync<S: State>(f: &SyncFn<S>, snapshot: &Arc<S>, ctx: &NodeContext) -> Attempt<S> {
    // Not even a disabled span without a subscriber: entering and leaving one costs.
    let _entered = tracing_on().then(|| node_span(ctx).entered());
    let call = || std::panic::catch_unwind(AssertUnwindSafe(|| f(snapshot, ctx)));
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
                let future =
                    AssertUnwindSafe(f.call(Arc::clone(snapshot), self.ctx.clone())).catch_unwind();
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
    fn run_inline(&mut self, snapshot: &Arc<S>) -> Option<TaskResult<S>> {
        if self.retry.is_some() || !matches!(self.runner, NodeRunner::Sync(_)) {
            return None;
        }
        self.start();
        let NodeRunner::Sync(f) = &self.runner else {
            return None;
        };
        let attempt = attempt_sync(f, snapshot, &self.ctx);
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
