//! The demo graph `agent` the binary serves (and the client tests use), and `researcher`,
//! a graph that calls a tool inside a subgraph, for the streaming protocol's tests.
//!
//! State: `messages` (appended `{role, content}` items), `sleep` (seconds, last value,
//! default 0), `ask_human` (default false). START → `respond`, which sleeps `sleep`
//! seconds (cancellably: a cancelled run stops at once) and appends
//! `{"role": "assistant", "content": "echo: " + the last user message}`; then `human` if
//! `ask_human`, else END. `human` interrupts with `{"question": "approve?"}` and appends
//! `{"role": "human", "content": <the resume value>}`.

use std::sync::Arc;
use std::time::Duration;

use graphkit::{BuildError, CompiledGraph, END, Error, NodeContext, START, State, StateGraph};
use graphkit_llm::{ChatModel, FunctionModel, Message, ToolCall};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// One chat message of the demo: `{role, content}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChatMessage {
    /// `user`, `assistant` or `human`.
    pub role: String,
    /// The text.
    pub content: String,
}

/// The demo agent's state.
#[derive(State, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentState {
    /// The conversation (appended).
    #[reducer(append)]
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    /// Seconds `respond` sleeps before answering.
    #[serde(default)]
    pub sleep: f64,
    /// Ask a human (interrupt) after answering.
    #[serde(default)]
    pub ask_human: bool,
}

async fn respond(state: Arc<AgentState>, ctx: NodeContext) -> Result<AgentStateUpdate, Error> {
    if state.sleep > 0.0 {
        let pause = Duration::try_from_secs_f64(state.sleep).unwrap_or(Duration::MAX);
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = ctx.cancellation().cancelled() => return Err(Error::Cancelled),
        }
    }
    let last_user = state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == "user")
        .map_or("", |m| m.content.as_str());
    Ok(AgentStateUpdate::new().messages(vec![ChatMessage {
        role: "assistant".into(),
        content: format!("echo: {last_user}"),
    }]))
}

async fn human(_: Arc<AgentState>, ctx: NodeContext) -> Result<AgentStateUpdate, Error> {
    let answer: Value = ctx.interrupt(json!({"question": "approve?"}))?;
    let content = match answer {
        Value::String(text) => text,
        other => other.to_string(),
    };
    Ok(AgentStateUpdate::new().messages(vec![ChatMessage {
        role: "human".into(),
        content,
    }]))
}

/// The demo graph, compiled without storage (the server gives it its own).
///
/// # Errors
/// Never in practice: the graph is fixed and valid.
pub fn agent_graph() -> Result<CompiledGraph<AgentState>, BuildError> {
    let mut graph = StateGraph::<AgentState>::new();
    graph
        .add_node("respond", respond)
        .add_node("human", human)
        .add_edge(START, "respond")
        .add_conditional_edges(
            "respond",
            |s: &AgentState| if s.ask_human { "human" } else { END },
            ["human", END],
        )
        .add_edge("human", END);
    graph.compile()
}

/// The state of [`researcher_graph`]: a conversation of graphkit-llm messages.
#[derive(State, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchState {
    /// The conversation (merged by message id).
    #[reducer(merge_by_key)]
    #[serde(default)]
    pub messages: Vec<Message>,
}

/// A graph that calls a tool inside a subgraph, with a deterministic stand-in for a chat
/// model: START → `research` → END, where `research` is a subgraph `model` → `tools` →
/// `model` → END. `model` first asks the tool `lookup` about the last user message
/// (`{"topic": <text>}`), then answers with the tool's text; `tools` answers each `lookup`
/// call with `notes on <topic>`. What the streaming protocol's tests drive to see tool
/// calls, tool events and a subgraph's lifecycle.
///
/// # Errors
/// Never in practice: the graph is fixed and valid.
pub fn researcher_graph() -> Result<CompiledGraph<ResearchState>, BuildError> {
    // A stand-in for a chat model: a tool call first, then the tool's answer as the reply.
    let model = Arc::new(FunctionModel::from_tool_calls(|messages| {
        if messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            return Vec::new();
        }
        let topic = messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User(user) => Some(user.content.clone()),
                _ => None,
            })
            .unwrap_or_default();
        vec![ToolCall::new("lookup", json!({"topic": topic}))]
    }));
    let mut research = StateGraph::<ResearchState>::new();
    research
        .add_node("model", move |state: Arc<ResearchState>| {
            let model = Arc::clone(&model);
            async move {
                let reply = model
                    .invoke(&state.messages)
                    .await
                    .map_err(|e| Error::InvalidRunInput(e.to_string()))?;
                Ok::<_, Error>(ResearchStateUpdate::new().messages(vec![Message::Assistant(reply)]))
            }
        })
        .add_node("tools", lookup)
        .add_edge(START, "model")
        .add_conditional_edges(
            "model",
            |s: &ResearchState| {
                let calls = s.messages.last().map_or(&[][..], Message::tool_calls);
                if calls.is_empty() { END } else { "tools" }
            },
            ["tools", END],
        )
        .add_edge("tools", "model");
    let mut graph = StateGraph::<ResearchState>::new();
    graph
        .add_subgraph("research", research.compile()?)
        .add_edge(START, "research")
        .add_edge("research", END);
    graph.compile()
}

/// The tool node of [`researcher_graph`]: answers each `lookup` call of the last message.
async fn lookup(state: Arc<ResearchState>) -> ResearchStateUpdate {
    let calls = state.messages.last().map_or(&[][..], Message::tool_calls);
    let answers: Vec<Message> = calls
        .iter()
        .map(|call| {
            let topic = call.arguments["topic"].as_str().unwrap_or_default();
            Message::tool_result(call.id.clone(), format!("notes on {topic}"))
        })
        .collect();
    ResearchStateUpdate::new().messages(answers)
}
