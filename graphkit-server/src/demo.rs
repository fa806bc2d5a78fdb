//! The demo graph `agent` the binary serves (and the client tests use).
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
