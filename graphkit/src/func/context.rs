//! The handles an entrypoint and its tasks run with: [`TaskContext`] (call tasks, ask
//! for interrupts, stream, reach the run's config and store) and [`EntrypointContext`]
//! (the same, plus the previous invocation's saved value).

use std::collections::HashMap;
use std::future::Future;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::handle::TaskHandle;
use super::replay::Replay;
use crate::command::RunInput;
use crate::context::config::RunConfig;
use crate::context::node_context::NodeContext;
use crate::context::scratchpad::Scratchpad;
use crate::context::stream::{RawPayload, StreamMode, StreamWriter};
use crate::error::{BoxError, Error};
use crate::graph::compiled::CompiledGraph;
use crate::state::State;
use crate::store::Store;

/// The handle of one call of the functional API: the entrypoint's body, or one task.
///
/// With it, code calls [tasks](Self::task), asks for [interrupts](Self::interrupt),
/// writes to the stream, reads the run's config and store, and runs compiled graphs
/// ([`Self::invoke_graph`]). Cheap to clone; a clone is the same call.
#[derive(Clone, Debug)]
pub struct TaskContext {
    replay: Arc<Replay>,
    /// This call's key: `""` for the entrypoint, `name#n` for a task, nested with `/`.
    call: Arc<str>,
    /// How many calls of each task name this call has made.
    counters: Arc<Mutex<HashMap<String, usize>>>,
    /// The node context this call runs with: its own interrupts and stream writer.
    node: NodeContext,
}

impl TaskContext {
    /// The entrypoint body's context in the task of `ctx`.
    pub(crate) fn root(ctx: &NodeContext) -> (Self, Arc<Replay>) {
        let replay = Arc::new(Replay::of(ctx));
        let root = Self::for_call(&replay, "".into(), ctx, Arc::clone(&ctx.node));
        (root, replay)
    }

    /// The context of call `call` (streaming as `name`), inside the task of `ctx`.
    fn for_call(replay: &Arc<Replay>, call: Arc<str>, ctx: &NodeContext, name: Arc<str>) -> Self {
        let mut node = ctx.clone();
        // A call answers its own interrupts (none without a checkpointer).
        node.scratchpad = ctx
            .scratchpad
            .as_ref()
            .map(|_| Scratchpad::for_call(Arc::clone(&call), replay.answers(&call)));
        // Graphs run inside a call keep no checkpoints of their own: the call's result is
        // what is kept.
        node.checkpoint = None;
        if let Some(target) = ctx.writer.target() {
            node.writer = StreamWriter::new(target.clone(), name);
        }
        Self {
            replay: Arc::clone(replay),
            call,
            counters: Arc::default(),
            node,
        }
    }

    /// The key of the next call of task `name` from this call: the name and how many
    /// calls of it came before.
    fn next_call(&self, name: &str) -> String {
        let mut counters = self.counters.lock().unwrap_or_else(PoisonError::into_inner);
        let count = counters.entry(name.to_owned()).or_default();
        let call = match &*self.call {
            "" => format!("{name}#{count}"),
            parent => format!("{parent}/{name}#{count}"),
        };
        *count += 1;
        call
    }

    /// Calls the task `name`: `f` runs on its own tokio task from now on, and the handle
    /// gives its result.
    ///
    /// A call is identified by `name` and its call order (the third call of `"fetch"` from
    /// one call is `fetch#2`), so the entrypoint must call its tasks in the same order
    /// when it runs again. The result is saved to the thread as soon as the task
    /// finishes (with a checkpointer), and a call whose result is saved does not run
    /// again when the entrypoint re-runs (resumed after an interrupt, continued after a
    /// failure or a crash): its handle returns the saved result.
    ///
    /// `f` gets the task's own context: it can call tasks and ask for interrupts too.
    /// A task's error fails the entrypoint if passed on with `?`, as
    /// [`Error::TaskFailed`]; its interrupt pauses the entrypoint.
    pub fn task<T, F, Fut, E>(&self, name: &str, f: F) -> TaskHandle<T>
    where
        T: Serialize + DeserializeOwned + Send + 'static,
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let call = self.next_call(name);
        if let Some(saved) = self.replay.result(&call) {
            let result = T::deserialize(saved).map_err(|source| Error::Serde {
                what: format!("the saved result of task `{call}`"),
                source,
            });
            return TaskHandle::ready(result);
        }
        let name: Arc<str> = name.into();
        let child = Self::for_call(
            &self.replay,
            call.as_str().into(),
            &self.node,
            Arc::clone(&name),
        );
        let writer = child.node.writer.clone();
        let current = writer.clone();
        let replay = Arc::clone(&self.replay);
        let future = f(child);
        let key = call.clone();
        let run = async move {
            let output = future
                .await
                .map_err(|error| task_error(&key, error.into()))?;
            let value = serde_json::to_value(&output).map_err(|source| Error::Serde {
                what: format!("the result of task `{key}`"),
                source,
            })?;
            replay.record_result(&key, &value).await?;
            if let Some(target) = writer
                .target()
                .filter(|t| t.modes.contains(StreamMode::Updates))
            {
                target.emit(RawPayload::Updates {
                    node: name,
                    update: value,
                    cached: false,
                });
            }
            Ok(output)
        };
        TaskHandle::running(tokio::spawn(current.scope(run)), call)
    }

    /// Pauses the run and asks for a value (human in the loop), as
    /// [`NodeContext::interrupt`]: pass the error on with `?`; when the thread is resumed
    /// with [`Command::resume`](crate::Command::resume), the entrypoint runs again, the
    /// tasks that finished return their saved results, and this call returns the resume
    /// value. Each call (the entrypoint, each task) matches its interrupts with resume
    /// values by order. Needs a checkpointer.
    pub fn interrupt(&self, payload: impl Serialize) -> Result<Value, Error> {
        self.node.interrupt(payload)
    }

    /// [`interrupt`](Self::interrupt), with the resume value decoded as `T`.
    pub fn interrupt_as<T: DeserializeOwned>(&self, payload: impl Serialize) -> Result<T, Error> {
        self.node.interrupt_as(payload)
    }

    /// Runs `graph` from `input` inside this call and returns its final state. Its
    /// events reach the run's stream in this call's namespace; its interrupts pause the
    /// entrypoint and are answered to it when resumed (it runs again from its input).
    /// Called in a task, a finished run is not repeated: the task's result is saved.
    pub async fn invoke_graph<C: State>(
        &self,
        graph: &CompiledGraph<C>,
        input: impl Into<RunInput<C>>,
    ) -> Result<C, Error> {
        let label = match &*self.call {
            "" => None,
            call => Some(call),
        };
        graph
            .invoke_in_task(C::default(), input, &self.node, label)
            .await
    }

    /// The stream writer: custom events (named by the task, or by the entrypoint).
    pub fn writer(&self) -> &StreamWriter {
        &self.node.writer
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.node.config
    }

    /// The graph's cross-thread store, if the entrypoint was given one.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.node.store()
    }

    /// The run's context value of type `C`, if there is one (see
    /// [`RunConfig::with_context`]).
    pub fn context<C: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        self.node.context::<C>()
    }

    /// This call's key: `""` for the entrypoint itself, `name#n` for a task (nested calls
    /// are joined with `/`).
    pub fn call(&self) -> &str {
        &self.call
    }

    /// The node context the call runs with, for code written for nodes (tools, model
    /// calls). Its `interrupt` is this call's.
    pub fn node_context(&self) -> &NodeContext {
        &self.node
    }
}

/// A task's error as the entrypoint sees it: control flow (an interrupt, a cancellation)
/// passes through; anything else is [`Error::TaskFailed`].
fn task_error(call: &str, error: BoxError) -> Error {
    match error.downcast::<Error>() {
        Ok(error) => match *error {
            own @ (Error::Interrupt(_)
            | Error::Cancelled
            | Error::NoCheckpointer(_)
            | Error::ParentCommand { .. }) => own,
            other => Error::TaskFailed {
                task: call.to_owned(),
                source: Box::new(other),
            },
        },
        Err(source) => Error::TaskFailed {
            task: call.to_owned(),
            source,
        },
    }
}

/// The handle an entrypoint runs with: a [`TaskContext`] (it derefs to one) and the value
/// the previous invocation on the thread saved.
#[derive(Debug)]
pub struct EntrypointContext<P> {
    tasks: TaskContext,
    previous: Option<P>,
}

impl<P> EntrypointContext<P> {
    pub(crate) fn new(tasks: TaskContext, previous: Option<P>) -> Self {
        Self { tasks, previous }
    }

    /// What the previous invocation on this thread saved (its return value, or the
    /// `save` of its [`Final`](super::Final)); `None` on a thread's first invocation and
    /// without a checkpointer. LangGraph's `previous`.
    pub fn previous(&self) -> Option<&P> {
        self.previous.as_ref()
    }

    /// Takes the previous value out (see [`previous`](Self::previous)).
    pub fn take_previous(&mut self) -> Option<P> {
        self.previous.take()
    }
}

impl<P> Deref for EntrypointContext<P> {
    type Target = TaskContext;

    fn deref(&self) -> &TaskContext {
        &self.tasks
    }
}
