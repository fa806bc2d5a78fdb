//! Executing a super-step: every task on the same snapshot, concurrently, with retries,
//! timeouts, a concurrency bound, and task events.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};

use crate::error::{BoxError, Error};
use crate::graph::compiled::GraphCore;
use crate::graph::node::{NodeOutput, NodeRunner};
use crate::interrupt::Scratchpad;
use crate::run::config::{RetryPolicy, RunConfig};
use crate::run::context::{NodeContext, PacketDebug};
use crate::run::persist::TaskSaver;
use crate::run::plan::{Task, panic_message};
use crate::run::stream::{
    Namespace, RawPayload, StreamMode, StreamTarget, StreamWriter, TaskEvent, TaskEventKind,
};
use crate::state::State;
use crate::store::Store;

/// What every task of one step shares.
pub(crate) struct StepScope {
    pub(crate) step: usize,
    pub(crate) config: Arc<RunConfig>,
    pub(crate) target: Option<StreamTarget>,
    pub(crate) namespace: Namespace,
    pub(crate) store: Option<Arc<dyn Store>>,
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
}

pub(crate) type TaskResult<S> = Result<NodeOutput<S>, Error>;

/// Runs `tasks` on `snapshot`; results come back in task order.
pub(crate) async fn run_step<S: State>(
    core: &GraphCore<S>,
    tasks: &[Task],
    snapshot: &Arc<S>,
    scope: &StepScope,
    extras: Vec<TaskExtras<S>>,
) -> Vec<TaskResult<S>> {
    let mut results: Vec<Option<TaskResult<S>>> = (0..tasks.len()).map(|_| None).collect();
    let mut runs: Vec<TaskRun<S>> = Vec::with_capacity(tasks.len());
    for ((index, task), extra) in tasks.iter().enumerate().zip(extras) {
        match extra.prefilled {
            Some(output) => results[index] = Some(Ok(output)),
            None => runs.push(prepare(
                core,
                task,
                index,
                scope,
                extra.saver,
                extra.scratchpad,
            )),
        }
    }

    let async_count = runs
        .iter()
        .filter(|r| matches!(r.runner, NodeRunner::Async(_)))
        .count();
    let mut waiting = Vec::new();
    let limit = scope.config.max_concurrency.unwrap_or(usize::MAX);

    for run in runs {
        match run.runner {
            NodeRunner::Async(_) if async_count > 1 => waiting.push(run),
            _ => {
                let index = run.index;
                results[index] = Some(run.execute(Arc::clone(snapshot)).await);
            }
        }
    }
    // Poll the step's async tasks together on this task, started in apply order with at
    // most `limit` in flight. No spawn per task: nodes wait on I/O concurrently, and a
    // node with heavy CPU work should hand it to `tokio::task::spawn_blocking`.
    let mut in_flight = FuturesUnordered::new();
    let mut waiting = waiting.into_iter();
    loop {
        while in_flight.len() < limit {
            let Some(run) = waiting.next() else { break };
            let snapshot = Arc::clone(snapshot);
            in_flight.push(async move {
                let index = run.index;
                (index, run.execute(snapshot).await)
            });
        }
        match in_flight.next().await {
            Some((index, result)) => results[index] = Some(result),
            None => break,
        }
    }
    results
        .into_iter()
        .zip(tasks)
        .map(|(result, task)| {
            result.unwrap_or_else(|| {
                Err(Error::NodePanicked {
                    node: core.nodes[task.node].name.to_string(),
                    message: "internal error: the task reported no result".into(),
                })
            })
        })
        .collect()
}

fn prepare<S: State>(
    core: &GraphCore<S>,
    task: &Task,
    index: usize,
    scope: &StepScope,
    saver: Option<TaskSaver>,
    scratchpad: Option<Arc<Scratchpad>>,
) -> TaskRun<S> {
    let spec = &core.nodes[task.node];
    let writer = match &scope.target {
        Some(target) => StreamWriter::new(target.clone(), Arc::clone(&spec.name)),
        None => StreamWriter::disabled(),
    };
    let events = scope
        .target
        .as_ref()
        .filter(|t| t.modes.contains(StreamMode::Tasks))
        .cloned();
    TaskRun {
        runner: spec.runner.clone(),
        retry: spec.retry.clone(),
        timeout: spec.timeout,
        ctx: NodeContext {
            node: Arc::clone(&spec.name),
            step: scope.step,
            attempt: 1,
            config: Arc::clone(&scope.config),
            writer,
            input: task.input.clone().map(PacketDebug),
            namespace: Arc::clone(&scope.namespace),
            scratchpad,
            store: scope.store.clone(),
            checkpoint: saver
                .as_ref()
                .filter(|_| spec.runner.subgraph().is_some())
                .map(|s| s.link(&spec.name)),
        },
        index,
        events,
        saver,
    }
}

/// How one attempt ended.
enum Attempt<S: State> {
    Done(NodeOutput<S>),
    Failed(BoxError),
    TimedOut(Duration),
    Panicked(String),
}

impl<S: State> TaskRun<S> {
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
        // One span per attempt (cheap when no subscriber listens: a level check).
        let span = tracing::info_span!(
            "node",
            node = %self.ctx.node,
            step = self.ctx.step,
            attempt = self.ctx.attempt,
        );
        match &self.runner {
            NodeRunner::Sync(f) => {
                let _entered = span.enter();
                let call = || std::panic::catch_unwind(AssertUnwindSafe(|| f(snapshot, &self.ctx)));
                let outcome = self.ctx.writer.clone().sync_scope(call);
                match outcome {
                    Ok(Ok(output)) => Attempt::Done(output),
                    Ok(Err(err)) => Attempt::Failed(err),
                    Err(panic) => Attempt::Panicked(panic_message(&*panic)),
                }
            }
            NodeRunner::Async(f) => {
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

    /// Runs the task, then saves its output or interrupt if it has a saver.
    async fn execute(mut self, snapshot: Arc<S>) -> TaskResult<S> {
        let saver = self.saver.take();
        let node = Arc::clone(&self.ctx.node);
        let result = self.run_attempts(&snapshot).await;
        let Some(saver) = saver else { return result };
        // Boxed: saving is off the hot path, and keeping its future out of this one keeps
        // every task's future small (it is moved several times on its way to the executor).
        let saved = Box::pin(save_result(&saver, &node, &result)).await;
        saved.and(result)
    }

    /// Runs attempts until one succeeds or the retry policy gives up. Borrows `self`, so
    /// the task's state is not copied into this future as well.
    async fn run_attempts(&mut self, snapshot: &Arc<S>) -> TaskResult<S> {
        let started = self.events.as_ref().map(|_| Instant::now());
        let elapsed = || started.map(|s| s.elapsed()).unwrap_or_default();
        self.emit(TaskEventKind::Start);
        let max_attempts = self.retry.as_ref().map_or(1, RetryPolicy::max_attempts);
        loop {
            let attempt = self.ctx.attempt;
            let error: BoxError = match self.attempt(snapshot).await {
                Attempt::Done(output) => {
                    self.emit(TaskEventKind::End {
                        duration: elapsed(),
                    });
                    return Ok(output);
                }
                Attempt::Panicked(message) => {
                    self.emit(TaskEventKind::Error {
                        duration: elapsed(),
                        error: message.clone(),
                    });
                    return Err(Error::NodePanicked {
                        node: self.ctx.node.to_string(),
                        message,
                    });
                }
                Attempt::TimedOut(timeout) => Box::new(Error::NodeTimeout {
                    node: self.ctx.node.to_string(),
                    timeout,
                }),
                Attempt::Failed(error) => error,
            };
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
                Box::pin(tokio::time::sleep(delay)).await;
                self.ctx.attempt += 1;
                continue;
            }
            self.emit(TaskEventKind::Error {
                duration: elapsed(),
                error: error.to_string(),
            });
            return Err(into_task_error(&self.ctx.node, attempt, error));
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
