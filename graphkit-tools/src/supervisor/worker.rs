//! [`Worker`]: a compiled graph the supervisor delegates to, and how it runs as a node.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit::{CompiledGraph, Error, NodeContext, RunInput, State};
use graphkit_llm::Message;

use crate::state::MessagesState;

/// A named worker of a [`Supervisor`](crate::Supervisor): a compiled graph, and the
/// description the supervisor's model reads on its handoff tool.
///
/// - [`Worker::new`]: the worker shares the supervisor's state type and starts from the
///   supervisor's state (the whole conversation so far).
/// - [`Worker::mapped`]: the worker has its own state; `input` builds its input from the
///   supervisor's state, `output` maps its final state to an extra update of the
///   supervisor's state.
///
/// Either way the worker hands back the messages it **added** (those whose ids were not
/// in the supervisor's conversation): all of them or the last one, per the supervisor's
/// [`OutputMode`](crate::OutputMode).
pub struct Worker<S: MessagesState> {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) run: Arc<dyn RunWorker<S>>,
}

impl<S: MessagesState> std::fmt::Debug for Worker<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("name", &self.name)
            .field("description", &self.description)
            .finish_non_exhaustive()
    }
}

impl<S: MessagesState> Worker<S> {
    /// A worker over the supervisor's own state type.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        graph: CompiledGraph<S>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            run: Arc::new(SharedState { graph }),
        }
    }

    /// A worker with its own state `C`: `input` builds its input update from the
    /// supervisor's state (it starts from `C::default()`), `output` turns its final state
    /// into an update of the supervisor's state, applied after the handed-back messages
    /// (return `S::Update::default()` for none).
    pub fn mapped<C: MessagesState>(
        name: impl Into<String>,
        description: impl Into<String>,
        graph: CompiledGraph<C>,
        input: impl Fn(&S) -> C::Update + Send + Sync + 'static,
        output: impl Fn(&C) -> S::Update + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            run: Arc::new(Mapped {
                graph,
                input: Box::new(input),
                output: Box::new(output),
            }),
        }
    }

    /// The worker's name (its node's name in the supervisor graph).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What a worker run gives back to the supervisor.
pub(crate) struct WorkerResult<S: State> {
    /// The messages the worker added, in its conversation's order.
    pub(crate) added: Vec<Message>,
    /// An extra update of the supervisor's state (mapped workers).
    pub(crate) update: Option<S::Update>,
}

/// Runs a worker's graph inside the worker node's task.
#[async_trait]
pub(crate) trait RunWorker<S: State>: Send + Sync {
    async fn run(&self, state: Arc<S>, ctx: &NodeContext) -> Result<WorkerResult<S>, Error>;
}

struct SharedState<S: State> {
    graph: CompiledGraph<S>,
}

#[async_trait]
impl<S: MessagesState> RunWorker<S> for SharedState<S> {
    async fn run(&self, state: Arc<S>, ctx: &NodeContext) -> Result<WorkerResult<S>, Error> {
        let done = self
            .graph
            .invoke_in_task(
                S::clone(&state),
                RunInput::Update(S::Update::default()),
                ctx,
                None,
            )
            .await
            .map_err(no_parent_command)?;
        Ok(WorkerResult {
            added: added_messages(state.messages(), done.messages()),
            update: None,
        })
    }
}

type InputMap<S, C> = Box<dyn Fn(&S) -> <C as State>::Update + Send + Sync>;
type OutputMap<S, C> = Box<dyn Fn(&C) -> <S as State>::Update + Send + Sync>;

struct Mapped<S: State, C: State> {
    graph: CompiledGraph<C>,
    input: InputMap<S, C>,
    output: OutputMap<S, C>,
}

#[async_trait]
impl<S: MessagesState, C: MessagesState> RunWorker<S> for Mapped<S, C> {
    async fn run(&self, state: Arc<S>, ctx: &NodeContext) -> Result<WorkerResult<S>, Error> {
        let input = (self.input)(&state);
        let done = self
            .graph
            .invoke_in_task(C::default(), RunInput::Update(input), ctx, None)
            .await
            .map_err(no_parent_command)?;
        Ok(WorkerResult {
            added: added_messages(state.messages(), done.messages()),
            update: Some((self.output)(&done)),
        })
    }
}

/// A worker's `Command::to_parent()` would address whatever runs the supervisor, not the
/// supervisor: refuse it clearly.
fn no_parent_command(error: Error) -> Error {
    match error {
        Error::ParentCommand { node, .. } => Error::NoParentGraph {
            node,
            reason: "a supervisor's worker cannot address a parent graph; end the worker and let the supervisor route",
        },
        other => other,
    }
}

/// The messages of `after` whose ids are not in `before`.
fn added_messages(before: &[Message], after: &[Message]) -> Vec<Message> {
    let known: HashSet<&str> = before.iter().map(Message::id).collect();
    after
        .iter()
        .filter(|m| !known.contains(m.id()))
        .cloned()
        .collect()
}
