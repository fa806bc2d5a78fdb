//! [`ToolNode`]: the graph node that runs the tool calls of the last assistant message,
//! and the [`tools_condition`] router that sends the graph to it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use graphkit::error::BoxError;
use graphkit::nodes::{BoxedNode, CommandGraph, Goto, IntoNode, NodeOutput};
use graphkit::{Command, END, KeyedUpdate, NodeContext};
use graphkit_llm::{Message, ToolCall, ToolSpec};

use crate::error::ToolError;
use crate::state::MessagesState;
use crate::tool::{DynTool, IntoTools, ToolOutput, ToolRuntime, tool_message};

/// The conventional name of the tool node, which [`tools_condition`] routes to.
pub const TOOLS_NODE: &str = "tools";

/// What the tool node does when a call fails (unknown tool, invalid arguments, or an error
/// from the tool).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnToolError {
    /// Answer the call with an error tool message (`is_error: true`) that the model can
    /// read and correct; the run goes on. The default, as in LangGraph.
    #[default]
    ReturnToModel,
    /// Fail the node with the [`ToolError`]: the step fails and the run stops with it.
    FailNode,
}

/// Runs every tool call of the last assistant message and answers each with a tool message.
///
/// - Calls run concurrently, at most [`max_concurrency`](Self::max_concurrency) at once
///   (default 8), all on the same state snapshot.
/// - Answers come in call order, whatever order the calls finish in.
/// - A tool returning [`ToolOutput::Update`] or [`ToolOutput::Command`] changes the
///   state: the node returns all its calls' updates **in call order**, and the engine
///   merges them through the state's reducers in that order, in the same step. So a
///   `todo_update` and a file-writing tool called together both land.
/// - Unknown tools, invalid arguments and tool errors become error tool messages, or fail
///   the node (see [`OnToolError`]). A panicking tool is reported like an error.
///
/// It is an ordinary node: `graph.add_node("tools", ToolNode::new(tools))`.
///
/// Routing: a tool's [`Command`] `goto` targets are kept. When the node's whole output is
/// that single command, it passes through unchanged (so `Send`s and `to_parent` work);
/// when other calls also write, the targets are kept by node name only.
pub struct ToolNode<S: MessagesState> {
    tools: Arc<Vec<DynTool<S>>>,
    max_concurrency: usize,
    on_error: OnToolError,
}

impl<S: MessagesState> Clone for ToolNode<S> {
    fn clone(&self) -> Self {
        Self {
            tools: Arc::clone(&self.tools),
            max_concurrency: self.max_concurrency,
            on_error: self.on_error,
        }
    }
}

impl<S: MessagesState> std::fmt::Debug for ToolNode<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolNode")
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("max_concurrency", &self.max_concurrency)
            .field("on_error", &self.on_error)
            .finish()
    }
}

impl<S: MessagesState> ToolNode<S> {
    /// A tool node over these tools. A later tool with the same name as an earlier one
    /// replaces it.
    pub fn new(tools: impl IntoTools<S>) -> Self {
        let mut list: Vec<DynTool<S>> = Vec::new();
        for tool in tools.into_tools() {
            match list.iter().position(|t| t.name() == tool.name()) {
                Some(i) => list[i] = tool,
                None => list.push(tool),
            }
        }
        Self {
            tools: Arc::new(list),
            max_concurrency: 8,
            on_error: OnToolError::default(),
        }
    }

    /// Runs at most `n` calls at once (at least 1).
    #[must_use]
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = n.max(1);
        self
    }

    /// Chooses what happens when a call fails.
    #[must_use]
    pub fn on_error(mut self, policy: OnToolError) -> Self {
        self.on_error = policy;
        self
    }

    /// The tools, in registration order.
    pub fn tools(&self) -> &[DynTool<S>] {
        &self.tools
    }

    /// The tools as offered to a chat model (bind them with `ChatRequest::with_tools`).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Runs the calls of the last assistant message of `state` (what the node does).
    ///
    /// # Errors
    /// [`ToolError::NoToolCalls`] when the last message is not an assistant message; with
    /// [`OnToolError::FailNode`], the first failing call's error.
    pub async fn run(&self, state: Arc<S>, ctx: &NodeContext) -> Result<NodeOutput<S>, ToolError> {
        let base = ToolRuntime::from_node(Arc::clone(&state), ctx, "", "");
        self.run_with(base).await
    }

    /// [`run`](Self::run) with a prepared runtime (outside a graph, use
    /// [`ToolRuntime::detached`]); the runtime's call id and name are set per call.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn run_with(&self, base: ToolRuntime<S>) -> Result<NodeOutput<S>, ToolError> {
        let calls: Vec<ToolCall> = match base.state().messages().last() {
            Some(Message::Assistant(m)) => m.tool_calls.clone(),
            Some(other) => {
                return Err(ToolError::NoToolCalls {
                    found: format!("a `{}` message", other.role()),
                });
            }
            None => {
                return Err(ToolError::NoToolCalls {
                    found: "no messages".into(),
                });
            }
        };
        let tools = Arc::clone(&self.tools);
        let outcomes: Vec<Result<ToolOutput<S>, ToolError>> =
            futures::stream::iter(calls.clone().into_iter().map(move |call| {
                let runtime = base.for_call(&call.id, &call.name);
                let span = tracing::info_span!(
                    "tool",
                    tool = %call.name,
                    call_id = %call.id,
                    thread_id = runtime.config().thread_id.as_deref(),
                );
                tracing::Instrument::instrument(call_one(Arc::clone(&tools), call, runtime), span)
            }))
            .buffered(self.max_concurrency)
            .collect()
            .await;

        let mut out = Writes::<S>::default();
        for (call, outcome) in calls.iter().zip(outcomes) {
            match outcome {
                Ok(ToolOutput::Content(text)) => {
                    out.message(tool_message(&call.id, &call.name, text, false))
                }
                Ok(ToolOutput::Update { update, reply }) => {
                    out.update(update);
                    out.message(tool_message(&call.id, &call.name, reply, false));
                }
                Ok(ToolOutput::Command(command)) => out.command(command),
                Err(err) if self.on_error == OnToolError::ReturnToModel => {
                    tracing::debug!(tool = %call.name, error = %err, "tool call failed; answering the model with the error");
                    out.message(tool_message(
                        &call.id,
                        &call.name,
                        format!("Error: {err}"),
                        true,
                    ));
                }
                Err(err) => return Err(err),
            }
        }
        Ok(out.finish())
    }
}

async fn call_one<S: MessagesState>(
    tools: Arc<Vec<DynTool<S>>>,
    call: ToolCall,
    runtime: ToolRuntime<S>,
) -> Result<ToolOutput<S>, ToolError> {
    let Some(tool) = tools.iter().find(|t| t.name() == call.name) else {
        return Err(ToolError::UnknownTool {
            name: call.name.clone(),
            available: tools
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    match AssertUnwindSafe(tool.call(call.arguments.clone(), runtime))
        .catch_unwind()
        .await
    {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "no message".into());
            Err(ToolError::Failed(format!(
                "tool `{}` panicked: {what}",
                call.name
            )))
        }
    }
}

/// The writes of one tool-node run, in call order; adjacent tool messages share one update.
struct Writes<S: MessagesState> {
    updates: Vec<S::Update>,
    pending_messages: Vec<Message>,
    /// A tool's command for the parent graph; it replaces the node's other writes.
    parent: Option<Command<S>>,
    gotos: Vec<Goto>,
}

impl<S: MessagesState> Default for Writes<S> {
    fn default() -> Self {
        Self {
            updates: Vec::new(),
            pending_messages: Vec::new(),
            parent: None,
            gotos: Vec::new(),
        }
    }
}

impl<S: MessagesState> Writes<S> {
    fn message(&mut self, message: Message) {
        self.pending_messages.push(message);
    }

    fn flush_messages(&mut self) {
        if !self.pending_messages.is_empty() {
            let messages = std::mem::take(&mut self.pending_messages);
            self.updates
                .push(S::messages_update(KeyedUpdate::upsert(messages)));
        }
    }

    fn update(&mut self, update: S::Update) {
        self.flush_messages();
        self.updates.push(update);
    }

    fn command(&mut self, command: Command<S>) {
        if command.graph() == CommandGraph::Parent {
            // A command for the parent graph cannot merge with this graph's writes: it
            // travels up as it is (see `finish`).
            self.parent = Some(command);
            return;
        }
        let (update, gotos, _) = command.into_parts();
        if let Some(update) = update {
            self.update(update);
        }
        self.gotos.extend(gotos);
    }

    fn finish(mut self) -> NodeOutput<S> {
        self.flush_messages();
        if let Some(parent) = self.parent {
            return NodeOutput::Command(Box::new(parent));
        }
        match (self.gotos.is_empty(), self.updates.len()) {
            (true, 1) => NodeOutput::Update(self.updates.remove(0)),
            (true, _) => NodeOutput::Updates(self.updates),
            (false, _) => NodeOutput::Writes {
                updates: self.updates,
                gotos: self.gotos,
            },
        }
    }
}

#[doc(hidden)]
pub struct ToolNodeMarker;

impl<S: MessagesState, C: ?Sized + 'static> IntoNode<S, ToolNodeMarker, C> for ToolNode<S> {
    const MAY_ROUTE: bool = true;

    fn into_runner(self) -> BoxedNode<S, C> {
        BoxedNode::new(move |state: Arc<S>, ctx: NodeContext| {
            let node = self.clone();
            async move { node.run(state, &ctx).await.map_err(BoxError::from) }
        })
    }
}

/// The router after a model node: `"tools"` when the last message is an assistant message
/// with tool calls, `END` otherwise.
///
/// ```
/// use graphkit_tools::{AgentState, TOOLS_NODE, tools_condition};
/// # use graphkit::StateGraph;
/// # let mut graph = StateGraph::<AgentState>::new();
/// # graph.add_node("agent", |_: std::sync::Arc<AgentState>| async { () });
/// graph.add_conditional_edges("agent", tools_condition::<AgentState>, [TOOLS_NODE, graphkit::END]);
/// ```
pub fn tools_condition<S: MessagesState>(state: &S) -> &'static str {
    match state.messages().last() {
        Some(message) if !message.tool_calls().is_empty() => TOOLS_NODE,
        _ => END,
    }
}
