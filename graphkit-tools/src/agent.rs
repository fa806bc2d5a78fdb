//! The prebuilt ReAct agent: a model node and a tool node in a loop, as an ordinary graph.

use std::sync::Arc;

use graphkit::error::BoxError;
use graphkit::nodes::NodeOutput;
use graphkit::{
    BuildError, CompileOptions, CompiledGraph, END, KeyedUpdate, NodeContext, START, StateGraph,
};
use graphkit_llm::{AssistantMessage, ChatModel, ChatRequest, Message};

use crate::node::{OnToolError, TOOLS_NODE, ToolNode, tools_condition};
use crate::state::MessagesState;
use crate::tool::IntoTools;

/// The name of the model node in the ReAct graph.
pub const AGENT_NODE: &str = "agent";

/// A ReAct agent (LangGraph's `create_react_agent`): the model is called with the
/// conversation and the tools; while it asks for tools, the [`ToolNode`] answers and the
/// model is called again.
///
/// ```text
/// START → agent ─(tools_condition)→ tools → agent
///               └────────────────→ END
/// ```
///
/// [`graph`](Self::graph) returns the [`StateGraph`] before compiling, so you can add
/// nodes and edges, draw it, or compile it with a checkpointer.
///
/// ```
/// use std::sync::Arc;
/// use graphkit_llm::{AssistantMessage, ScriptedModel, ToolCall};
/// use graphkit_tools::{AgentState, ReactAgent, ThinkTool};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // A test double: replies are exactly these two messages.
/// let model = ScriptedModel::new([
///     AssistantMessage::with_tool_calls("", vec![ToolCall::new("think", json!({"thought": "easy"}))]),
///     AssistantMessage::text("4"),
/// ]);
/// let agent = ReactAgent::<AgentState>::new(model, (ThinkTool,))
///     .system_prompt("Answer with a number.")
///     .compile()?;
/// let done = agent.invoke(AgentState::user("2 + 2?")).await?.into_state();
/// assert_eq!(done.messages.last().map(|m| m.text()), Some("4"));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub struct ReactAgent<S: MessagesState> {
    /// `None`: read from the run's context ([`ReactAgent::from_context`]).
    model: Option<Arc<dyn ChatModel>>,
    tools: ToolNode<S>,
    system_prompt: Option<String>,
    max_iterations: usize,
}

impl<S: MessagesState> std::fmt::Debug for ReactAgent<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReactAgent")
            .field(
                "model",
                &self
                    .model
                    .as_ref()
                    .map_or("(from the run context)", |m| m.model_name()),
            )
            .field("tools", &self.tools)
            .field("system_prompt", &self.system_prompt)
            .field("max_iterations", &self.max_iterations)
            .finish()
    }
}

impl<S: MessagesState> ReactAgent<S> {
    /// An agent over `model` and `tools`, with no system prompt and at most 25 model calls
    /// per user turn.
    pub fn new(model: impl ChatModel + 'static, tools: impl IntoTools<S>) -> Self {
        Self::from_shared(Arc::new(model), tools)
    }

    /// [`new`](Self::new) with a shared model (what `init_chat_model` returns).
    pub fn from_shared(model: Arc<dyn ChatModel>, tools: impl IntoTools<S>) -> Self {
        Self {
            model: Some(model),
            tools: ToolNode::new(tools),
            system_prompt: None,
            max_iterations: 25,
        }
    }

    /// An agent whose model comes from the run's context, `RunContext<dyn ChatModel>`
    /// ([`graphkit_llm::Model`]): give it to the compiled agent with
    /// `with_shared_context::<dyn ChatModel>(model)`, or per run with
    /// [`RunConfig::with_shared_context`](graphkit::RunConfig::with_shared_context). A run's
    /// value wins over the graph's, so each run may pick its model (LangGraph's dynamic
    /// model). Without either, the model node fails with `Error::MissingContext`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::RunConfig;
    /// use graphkit_llm::{AssistantMessage, ChatModel, ScriptedModel};
    /// use graphkit_tools::{AgentState, ReactAgent};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// // Test doubles: each answers with its one scripted message.
    /// let house: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new([AssistantMessage::text("house model")]));
    /// let premium: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new([AssistantMessage::text("premium model")]));
    /// let agent = ReactAgent::<AgentState>::from_context(())
    ///     .compile()?
    ///     .with_shared_context(house);
    /// let by_default = agent.invoke(AgentState::user("hi")).await?.into_state();
    /// assert_eq!(by_default.messages.last().map(|m| m.text()), Some("house model"));
    ///
    /// let this_run = RunConfig::new().with_shared_context(premium);
    /// let chosen = agent.invoke_with(AgentState::user("hi"), this_run).await?.into_state();
    /// assert_eq!(chosen.messages.last().map(|m| m.text()), Some("premium model"));
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    pub fn from_context(tools: impl IntoTools<S>) -> Self {
        Self {
            model: None,
            tools: ToolNode::new(tools),
            system_prompt: None,
            max_iterations: 25,
        }
    }

    /// A system prompt sent first on every model call (not stored in the state).
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// At most `n` model calls per user turn (at least 1). When the model still asks for
    /// tools on the last one, the agent answers with a message saying it stopped, and ends.
    #[must_use]
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = n.max(1);
        self
    }

    /// Configures the tool node (concurrency, error policy).
    #[must_use]
    pub fn tool_node(mut self, configure: impl FnOnce(ToolNode<S>) -> ToolNode<S>) -> Self {
        self.tools = configure(self.tools);
        self
    }

    /// Fails the run on a tool error instead of showing it to the model.
    #[must_use]
    pub fn fail_on_tool_error(self) -> Self {
        self.tool_node(|t| t.on_error(OnToolError::FailNode))
    }

    /// The agent as a graph, not yet compiled: nodes [`AGENT_NODE`] and [`TOOLS_NODE`].
    pub fn graph(self) -> StateGraph<S> {
        let model_node = ModelNode {
            model: self.model,
            tools: self.tools.specs(),
            system_prompt: self.system_prompt,
            max_iterations: self.max_iterations,
        };
        let model_node = Arc::new(model_node);
        let mut graph = StateGraph::<S>::new();
        graph
            .add_node(AGENT_NODE, move |state: Arc<S>, ctx: NodeContext| {
                let node = Arc::clone(&model_node);
                async move { node.run::<S>(&state, &ctx).await }
            })
            .add_node(TOOLS_NODE, self.tools)
            .add_edge(START, AGENT_NODE)
            .add_conditional_edges(AGENT_NODE, tools_condition::<S>, [TOOLS_NODE, END])
            .add_edge(TOOLS_NODE, AGENT_NODE);
        graph
    }

    /// Compiles the agent graph.
    ///
    /// # Errors
    /// Graph validation errors (none for the plain agent).
    pub fn compile(self) -> Result<CompiledGraph<S>, BuildError> {
        self.graph().compile()
    }

    /// Compiles the agent graph with options (checkpointer, store, interrupts).
    ///
    /// # Errors
    /// Graph validation errors.
    pub fn compile_with(self, options: CompileOptions) -> Result<CompiledGraph<S>, BuildError> {
        self.graph().compile_with(options)
    }
}

/// The model node of an agent: calls the model with the system prompt, the conversation
/// and the tools, and adds its reply (the supervisor uses it too).
pub(crate) struct ModelNode {
    /// `None`: the run's `RunContext<dyn ChatModel>`.
    pub(crate) model: Option<Arc<dyn ChatModel>>,
    pub(crate) tools: Vec<graphkit_llm::ToolSpec>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_iterations: usize,
}

impl ModelNode {
    /// The node: the model's reply as the node's update.
    pub(crate) async fn run<S: MessagesState>(
        &self,
        state: &S,
        ctx: &NodeContext,
    ) -> Result<NodeOutput<S>, BoxError> {
        let model = match &self.model {
            Some(model) => Arc::clone(model),
            None => ctx.require_context::<dyn ChatModel>()?,
        };
        Ok(NodeOutput::Update(self.call::<S>(&*model, state).await?))
    }

    async fn call<S: MessagesState>(
        &self,
        model: &dyn ChatModel,
        state: &S,
    ) -> Result<S::Update, graphkit_llm::LlmError> {
        let history = state.messages();
        let mut messages = Vec::with_capacity(history.len() + 1);
        if let Some(prompt) = &self.system_prompt {
            messages.push(Message::system(prompt.clone()));
        }
        messages.extend_from_slice(history);
        let request = ChatRequest::new(messages).with_tools(self.tools.clone());
        let mut reply = model.invoke_request(request).await?;
        if !reply.tool_calls.is_empty() && calls_this_turn(history) + 1 >= self.max_iterations {
            let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
            reply = AssistantMessage {
                id: reply.id.clone(),
                content: format!(
                    "Stopped: reached the limit of {} model calls for this turn (max_iterations) while the model still asked for tools ({}).",
                    self.max_iterations,
                    names.join(", ")
                ),
                ..AssistantMessage::default()
            };
        }
        Ok(S::messages_update(KeyedUpdate::upsert([
            Message::Assistant(reply),
        ])))
    }
}

/// Model calls since the last user message.
fn calls_this_turn(history: &[Message]) -> usize {
    history
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User(_)))
        .filter(|m| matches!(m, Message::Assistant(_)))
        .count()
}
