//! The prebuilt supervisor (LangGraph's `create_supervisor`): a model that delegates to
//! named worker graphs through handoff tools.

mod handoff;
mod worker;

use std::sync::Arc;

use graphkit::nodes::{Goto, NodeOptions, NodeOutput};
use graphkit::{
    BuildError, CompileOptions, CompiledGraph, END, Error, KeyedUpdate, NodeContext, START,
    StateGraph,
};
use graphkit_llm::{ChatModel, Message};

pub use handoff::HANDOFF_PREFIX;
pub use worker::Worker;

use crate::agent::ModelNode;
use crate::node::{TOOLS_NODE, ToolNode, tools_condition};
use crate::state::MessagesState;
use crate::tool::{DynTool, IntoTools};
use handoff::{HandoffRules, HandoffTool, handoff_back_messages, handoff_tool_name};
use worker::RunWorker;

/// The name of the supervisor's model node.
pub const SUPERVISOR_NODE: &str = "supervisor";

/// What a worker adds to the shared conversation when it hands control back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// Only the worker's last message (its answer). The default, as in LangGraph.
    #[default]
    LastMessage,
    /// Every message the worker added: its tool calls, tool results and answer.
    FullHistory,
}

/// A supervisor agent: a model that delegates work to named [`Worker`]s through handoff
/// tools, as LangGraph's `create_supervisor` does.
///
/// ```text
/// START → supervisor ─(tools_condition)→ tools ─(transfer_to_<w>)→ <w> → supervisor
///                   └→ END                   └─(other tools)────────────→ supervisor
/// ```
///
/// - The model sees one handoff tool per worker, `transfer_to_<worker>` (no arguments,
///   described by the worker's description), plus any [`tools`](Self::tools) of its own.
///   A handoff answers the call ("Successfully transferred to …") and routes to the
///   worker's node; a call to an unknown worker (`transfer_to_nobody`) is answered with
///   an error message naming the available tools, and the supervisor is called again.
/// - Several handoffs in one turn run those workers in parallel (one super-step). With
///   [`one_worker_per_turn`](Self::one_worker_per_turn) only the first runs; the others
///   are answered with an error saying to call them in a later turn.
/// - A worker runs inside its node's task (see [`Worker`]), and hands back the messages
///   it added per the [`OutputMode`], followed (by default) by a pair of messages that
///   record the handoff back (`transfer_back_to_supervisor`); then the supervisor's model
///   is called again. It ends the run by answering without tool calls.
/// - The workers' events reach the supervisor's stream under their namespace
///   (`"<worker>:<step>"`): model tokens and custom events always, updates, values and
///   task events with `RunConfig::subgraphs(true)`.
/// - It is an ordinary graph: compiled with a checkpointer, every step is checkpointed,
///   and a run that failed or was killed inside a worker resumes at that worker, without
///   running finished workers again (the interrupted worker runs again from its start).
///
/// ```
/// use graphkit_llm::{AssistantMessage, FunctionModel, Message, ScriptedModel, ToolCall};
/// use graphkit_tools::{AgentState, ReactAgent, Supervisor, Worker};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // Test doubles, not models: the worker always answers "42", the supervisor delegates
/// // once and then repeats the worker's answer.
/// let math = ReactAgent::<AgentState>::new(ScriptedModel::new([AssistantMessage::text("42")]), []).compile()?;
/// let boss = FunctionModel::new(|request| {
///     Ok(match request.messages.iter().rev().find(|m| m.role() == "assistant") {
///         None => AssistantMessage::with_tool_calls("", vec![ToolCall::new("transfer_to_math", json!({}))]),
///         Some(_) => AssistantMessage::text("The answer is 42."),
///     })
/// });
/// let team = Supervisor::new(boss, [Worker::new("math", "Does arithmetic.", math)]).compile()?;
/// let done = team.invoke(AgentState::user("6 * 7?")).await?.into_state();
/// let texts: Vec<&str> = done.messages.iter().map(Message::text).collect();
/// assert!(texts.contains(&"42"));
/// assert_eq!(texts.last(), Some(&"The answer is 42."));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub struct Supervisor<S: MessagesState> {
    model: Arc<dyn ChatModel>,
    workers: Vec<Worker<S>>,
    tools: Vec<DynTool<S>>,
    system_prompt: Option<String>,
    output_mode: OutputMode,
    one_worker_per_turn: bool,
    handoff_back_messages: bool,
    max_handoffs: usize,
}

impl<S: MessagesState> std::fmt::Debug for Supervisor<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("model", &self.model.model_name())
            .field("workers", &self.workers)
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .field("output_mode", &self.output_mode)
            .field("one_worker_per_turn", &self.one_worker_per_turn)
            .field("max_handoffs", &self.max_handoffs)
            .finish_non_exhaustive()
    }
}

impl<S: MessagesState> Supervisor<S> {
    /// A supervisor over `model` delegating to `workers`: last-message output, handoff-back
    /// messages, parallel handoffs allowed, at most 20 handoffs per user turn.
    pub fn new(
        model: impl ChatModel + 'static,
        workers: impl IntoIterator<Item = Worker<S>>,
    ) -> Self {
        Self::from_shared(Arc::new(model), workers)
    }

    /// [`new`](Self::new) with a shared model (what `init_chat_model` returns).
    pub fn from_shared(
        model: Arc<dyn ChatModel>,
        workers: impl IntoIterator<Item = Worker<S>>,
    ) -> Self {
        Self {
            model,
            workers: workers.into_iter().collect(),
            tools: Vec::new(),
            system_prompt: None,
            output_mode: OutputMode::default(),
            one_worker_per_turn: false,
            handoff_back_messages: true,
            max_handoffs: 20,
        }
    }

    /// Tools the supervisor may call itself, besides the handoffs.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoTools<S>) -> Self {
        self.tools.extend(tools.into_tools());
        self
    }

    /// A system prompt sent first on every supervisor model call (not stored in the
    /// state; workers do not see it).
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// What a worker hands back: its last message (default) or all it added.
    #[must_use]
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output_mode = mode;
        self
    }

    /// Delegates to at most one worker per supervisor turn: further handoffs in the same
    /// reply are refused with a message the model reads.
    #[must_use]
    pub fn one_worker_per_turn(mut self) -> Self {
        self.one_worker_per_turn = true;
        self
    }

    /// Whether to add the `transfer_back_to_supervisor` message pair after each worker
    /// (default `true`).
    #[must_use]
    pub fn handoff_back_messages(mut self, add: bool) -> Self {
        self.handoff_back_messages = add;
        self
    }

    /// At most `n` successful handoffs per user turn (default 20); later ones are refused
    /// with a message asking the model to answer with what it has.
    #[must_use]
    pub fn max_handoffs(mut self, n: usize) -> Self {
        self.max_handoffs = n;
        self
    }

    /// The supervisor as a graph, not yet compiled: nodes [`SUPERVISOR_NODE`],
    /// [`TOOLS_NODE`] and one per worker.
    ///
    /// # Errors
    /// [`BuildError::DuplicateNode`] when two workers share a name (or their handoff tool
    /// names collide, or a worker is named like a node or tool of the supervisor).
    pub fn graph(self) -> Result<StateGraph<S>, BuildError> {
        let handoffs = self.handoff_tools()?;
        let mut tools: Vec<DynTool<S>> = handoffs
            .into_iter()
            .map(|t| Arc::new(t) as DynTool<S>)
            .collect();
        tools.extend(self.tools);
        let tool_node = ToolNode::new(tools);
        let model_node = Arc::new(ModelNode {
            model: Some(self.model),
            tools: tool_node.specs(),
            system_prompt: self.system_prompt,
            // The handoff limit bounds the turn; the run's recursion limit bounds the rest.
            max_iterations: usize::MAX,
        });

        let mut destinations: Vec<String> = self.workers.iter().map(|w| w.name.clone()).collect();
        destinations.extend([SUPERVISOR_NODE.to_owned(), END.to_owned()]);

        let mut graph = StateGraph::<S>::new();
        graph
            .add_node(SUPERVISOR_NODE, move |state: Arc<S>, ctx: NodeContext| {
                let node = Arc::clone(&model_node);
                async move { node.run::<S>(&state, &ctx).await }
            })
            .add_node_with(
                TOOLS_NODE,
                move |state: Arc<S>, ctx: NodeContext| {
                    let node = tool_node.clone();
                    async move {
                        node.run(state, &ctx)
                            .await
                            .map(back_to_supervisor_unless_routed)
                    }
                },
                NodeOptions::new().destinations(destinations),
            )
            .add_edge(START, SUPERVISOR_NODE)
            .add_conditional_edges(SUPERVISOR_NODE, tools_condition::<S>, [TOOLS_NODE, END]);
        for worker in self.workers {
            let node = WorkerNode {
                name: Arc::from(worker.name.as_str()),
                run: worker.run,
                output_mode: self.output_mode,
                handoff_back: self.handoff_back_messages,
            };
            let node = Arc::new(node);
            graph
                .add_node(&worker.name, move |state: Arc<S>, ctx: NodeContext| {
                    let node = Arc::clone(&node);
                    async move { node.run(state, ctx).await }
                })
                .add_edge(worker.name.as_str(), SUPERVISOR_NODE);
        }
        Ok(graph)
    }

    /// Compiles the supervisor graph.
    ///
    /// # Errors
    /// As [`graph`](Self::graph), and graph validation errors.
    pub fn compile(self) -> Result<CompiledGraph<S>, BuildError> {
        self.graph()?.compile()
    }

    /// Compiles the supervisor graph with options (checkpointer, store, interrupts).
    ///
    /// # Errors
    /// As [`compile`](Self::compile).
    pub fn compile_with(self, options: CompileOptions) -> Result<CompiledGraph<S>, BuildError> {
        self.graph()?.compile_with(options)
    }

    /// One handoff tool per worker; refuses duplicate and colliding names.
    fn handoff_tools(&self) -> Result<Vec<HandoffTool>, BuildError> {
        let mut names: Vec<String> = Vec::with_capacity(self.workers.len());
        for worker in &self.workers {
            let name = &worker.name;
            let taken = name == SUPERVISOR_NODE
                || name == TOOLS_NODE
                || self.workers.iter().filter(|w| &w.name == name).count() > 1;
            if taken {
                return Err(BuildError::DuplicateNode(name.clone()));
            }
            let tool = handoff_tool_name(name);
            if names.contains(&tool) || self.tools.iter().any(|t| t.name() == tool) {
                return Err(BuildError::DuplicateNode(tool));
            }
            names.push(tool);
        }
        let rules = Arc::new(HandoffRules {
            names: names.clone(),
            one_per_turn: self.one_worker_per_turn,
            max_handoffs: self.max_handoffs,
        });
        Ok(self
            .workers
            .iter()
            .zip(names)
            .map(|(worker, name)| HandoffTool {
                name,
                worker: worker.name.clone(),
                description: format!(
                    "Hand the conversation to the worker `{}`: {}",
                    worker.name, worker.description
                ),
                rules: Arc::clone(&rules),
            })
            .collect())
    }
}

/// The tool node's output, routed back to the supervisor unless a tool routed it (a
/// handoff to a worker, or a user tool's own `Command`).
fn back_to_supervisor_unless_routed<S: MessagesState>(output: NodeOutput<S>) -> NodeOutput<S> {
    let back = || vec![Goto::from(SUPERVISOR_NODE)];
    match output {
        NodeOutput::Update(update) => NodeOutput::Writes {
            updates: vec![update],
            gotos: back(),
        },
        NodeOutput::Updates(updates) => NodeOutput::Writes {
            updates,
            gotos: back(),
        },
        NodeOutput::Writes { updates, gotos } if gotos.is_empty() => NodeOutput::Writes {
            updates,
            gotos: back(),
        },
        routed => routed,
    }
}

/// A worker as a node of the supervisor graph.
struct WorkerNode<S: MessagesState> {
    name: Arc<str>,
    run: Arc<dyn RunWorker<S>>,
    output_mode: OutputMode,
    handoff_back: bool,
}

impl<S: MessagesState> WorkerNode<S> {
    async fn run(&self, state: Arc<S>, ctx: NodeContext) -> Result<NodeOutput<S>, Error> {
        let result = self.run.run(state, &ctx).await?;
        let mut messages: Vec<Message> = match self.output_mode {
            OutputMode::FullHistory => result.added,
            OutputMode::LastMessage => result.added.into_iter().last().into_iter().collect(),
        };
        if self.handoff_back {
            messages.extend(handoff_back_messages(&self.name, SUPERVISOR_NODE));
        }
        let mut updates = vec![S::messages_update(KeyedUpdate::upsert(messages))];
        updates.extend(result.update);
        Ok(NodeOutput::Updates(updates))
    }
}
