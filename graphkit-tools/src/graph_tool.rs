//! [`GraphTool`]: a compiled graph offered to a model as a tool (an agent as a tool).

use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit::{CompiledGraph, Error, NodeContext, RunInput, State};
use graphkit_llm::schema_for;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::state::MessagesState;
use crate::tool::{Tool, ToolOutput, ToolRuntime, parse_args};

type InputFn<S, C, A> = dyn Fn(A, &ToolRuntime<S>) -> <C as State>::Update + Send + Sync;
type OutputFn<S, C> = dyn Fn(C, &ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> + Send + Sync;

/// A compiled graph as a [`Tool`]: the model calls it with typed arguments `A`, the graph
/// runs to the end, and its final state becomes the tool's answer.
///
/// - **Input mapping**: `input(args, runtime)` turns the arguments (decoded and checked
///   against `A`'s JSON Schema, from schemars) into the child graph's input update; the
///   child starts from `C::default()`.
/// - **Output mapping**: `output(final_state, runtime)` turns the child's final state into
///   a [`ToolOutput`]: text for the model, a parent state update with a reply, or a
///   [`Command`](graphkit::Command) (answer the call with [`ToolRuntime::reply`] in it).
///   [`reply_with_last_message`] is the usual choice for an agent.
/// - **Streaming**: inside a graph, the child runs in the tool node's task: its model
///   tokens and custom events always reach the caller's stream, and with
///   `RunConfig::subgraphs(true)` its updates, values and task events too, under the
///   namespace `["tools:<step>", "<tool name>:<tool call id>"]` (after the caller's own).
/// - **Errors**: invalid arguments, a failing child graph, and a child that pauses on an
///   `interrupt` (a tool cannot wait for a human) are [`ToolError`]s, which the
///   [`ToolNode`](crate::ToolNode) shows to the model by default.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{START, State, StateGraph};
/// use graphkit_tools::{AgentState, GraphTool, Tool, ToolOutput, ToolRuntime};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Count { text: String, words: usize }
///
/// #[derive(Deserialize, JsonSchema)]
/// struct CountArgs {
///     /// The text to count.
///     text: String,
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut counter = StateGraph::<Count>::new();
/// counter
///     .add_node("count", |s: Arc<Count>| async move { CountUpdate::new().words(s.text.split_whitespace().count()) })
///     .add_edge(START, "count");
///
/// let tool = GraphTool::new(
///     "count_words",
///     "Counts the words of a text.",
///     counter.compile()?,
///     |args: CountArgs, _rt: &ToolRuntime<AgentState>| CountUpdate::new().text(args.text),
///     |done: Count, _rt| Ok(ToolOutput::text(format!("{} words", done.words))),
/// );
/// let runtime = ToolRuntime::detached(AgentState::default(), "call_1", "count_words");
/// let out = tool.call(serde_json::json!({"text": "three little words"}), runtime).await.unwrap();
/// assert!(matches!(out, ToolOutput::Content(text) if text == "3 words"));
/// # Ok::<(), graphkit::BuildError>(()) }).unwrap();
/// ```
pub struct GraphTool<S: State, C: State, A> {
    name: String,
    description: String,
    parameters: Value,
    graph: CompiledGraph<C>,
    input: Arc<InputFn<S, C, A>>,
    output: Arc<OutputFn<S, C>>,
    _args: PhantomData<fn(A)>,
}

impl<S: State, C: State, A> std::fmt::Debug for GraphTool<S, C, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphTool")
            .field("name", &self.name)
            .field("graph", &self.graph)
            .finish_non_exhaustive()
    }
}

impl<S, C, A> GraphTool<S, C, A>
where
    S: State,
    C: State,
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    /// The tool `name` (what the model calls), described to the model by `description`,
    /// running `graph` with the `input` and `output` mappings (see the type's docs).
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        graph: CompiledGraph<C>,
        input: impl Fn(A, &ToolRuntime<S>) -> C::Update + Send + Sync + 'static,
        output: impl Fn(C, &ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: schema_for::<A>(),
            graph,
            input: Arc::new(input),
            output: Arc::new(output),
            _args: PhantomData,
        }
    }

    /// Turns the child run's error into the error the model reads.
    fn child_error(&self, error: Error) -> ToolError {
        let message = if let Some(payload) = error.pause_payload() {
            format!(
                "paused to ask a human ({payload}), which it cannot do when called as a tool; carry on without that answer, or ask the user yourself"
            )
        } else if let Error::ParentCommand { node, .. } = &error {
            format!(
                "failed: its node `{node}` sent a Command to a parent graph, which a graph called as a tool cannot do (map the final state to a Command in the tool's output instead)"
            )
        } else {
            format!(
                "failed: {error}. Try again with different arguments, or continue without this tool"
            )
        };
        ToolError::Graph {
            tool: self.name.clone(),
            message,
        }
    }
}

#[async_trait]
impl<S, C, A> Tool<S> for GraphTool<S, C, A>
where
    S: State,
    C: State,
    A: DeserializeOwned + JsonSchema + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> {
        let args = parse_args::<A>(&self.name, args)?;
        let input = (self.input)(args, &runtime);
        let detached;
        let task = match runtime.task() {
            Some(task) => task,
            None => {
                detached = NodeContext::detached(&self.name);
                &detached
            }
        };
        let label = format!("{}:{}", self.name, runtime.tool_call_id());
        let done = self
            .graph
            .invoke_in_task(C::default(), RunInput::Update(input), task, Some(&label))
            .await
            .map_err(|error| self.child_error(error))?;
        (self.output)(done, &runtime)
    }
}

/// An output mapping for [`GraphTool`]: answers with the text of the child's last message
/// (an agent's final answer), or an error when it has no messages.
///
/// # Errors
/// [`ToolError::Graph`] when the child's conversation is empty.
pub fn reply_with_last_message<S: State, C: MessagesState>(
    done: C,
    runtime: &ToolRuntime<S>,
) -> Result<ToolOutput<S>, ToolError> {
    match done.messages().last() {
        Some(message) => Ok(ToolOutput::text(message.text())),
        None => Err(ToolError::Graph {
            tool: runtime.tool_name().to_owned(),
            message: "ended without any message to answer with".into(),
        }),
    }
}
