//! W4 `react_loop`: a fake agent and a tool node exchanging messages K times, merged by id
//! (LangGraph's `add_messages`).

use std::sync::Arc;

use graphkit::reducers::KeyedVec;
use graphkit::{CompiledGraph, END, Keyed, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

use crate::case::{Case, Mode, graph_case};
use crate::checksum::{Checksum, fnv};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    Human,
    /// The (fake) model.
    Ai,
    /// A tool's result.
    Tool,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Ai => "ai",
            Self::Tool => "tool",
        }
    }
}

/// A tool call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchArgs {
    /// The search query.
    pub query: String,
}

/// A tool call of an AI message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id, answered by a tool message's `tool_call_id`.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub args: SearchArgs,
}

/// A chat message, keyed by `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    #[serde(rename = "type")]
    pub role: Role,
    /// Unique id: messages merge by it.
    pub id: String,
    /// The text.
    pub content: String,
    /// The tool calls (AI messages only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call this message answers (tool messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Keyed for Message {
    type Key = String;

    fn key(&self) -> &String {
        &self.id
    }
}

/// W4's state: the message history.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    /// Merged by message id; a `KeyedVec` indexes ids, so a merge is O(1) per message.
    #[reducer(merge_by_key)]
    pub messages: KeyedVec<Message>,
}

/// The fake model: a tool call for the first `rounds` turns, then `done`.
fn agent(state: &Chat, rounds: usize) -> ChatUpdate {
    let k = state.messages.len().saturating_sub(1) / 2;
    let message = if k < rounds {
        Message {
            role: Role::Ai,
            id: format!("ai-{k}"),
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("call-{k}"),
                name: "search".to_owned(),
                args: SearchArgs {
                    query: format!("q{k}"),
                },
            }],
            tool_call_id: None,
        }
    } else {
        Message {
            role: Role::Ai,
            id: format!("ai-{k}"),
            content: "done".to_owned(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    };
    ChatUpdate::new().messages(vec![message])
}

/// One tool message per tool call of the last message.
fn tools(state: &Chat) -> ChatUpdate {
    let calls = state.messages.last().map_or(&[][..], |m| &m.tool_calls[..]);
    let results: Vec<Message> = calls
        .iter()
        .map(|call| Message {
            role: Role::Tool,
            id: format!("tool-{}", call.id),
            content: format!("result for {}", call.args.query),
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
        })
        .collect();
    ChatUpdate::new().messages(results)
}

fn route(state: &Chat) -> &'static str {
    if state
        .messages
        .last()
        .is_some_and(|m| !m.tool_calls.is_empty())
    {
        "tools"
    } else {
        END
    }
}

/// `START → agent →? (tools | END)`, `tools → agent`.
pub fn builder(rounds: usize, mode: Mode) -> StateGraph<Chat> {
    let mut graph = StateGraph::<Chat>::new();
    match mode {
        Mode::Sync => graph
            .add_node(
                "agent",
                SyncNode::new(move |state: &Chat| agent(state, rounds)),
            )
            .add_node("tools", SyncNode::new(tools)),
        Mode::Async => graph
            .add_node("agent", move |state: Arc<Chat>| async move {
                agent(&state, rounds)
            })
            .add_node("tools", |state: Arc<Chat>| async move { tools(&state) }),
    };
    graph
        .add_edge(START, "agent")
        .add_conditional_edges("agent", route, ["tools", END])
        .add_edge("tools", "agent");
    graph
}

/// [`builder`], compiled.
pub fn graph(rounds: usize, mode: Mode) -> Result<CompiledGraph<Chat>, graphkit::BuildError> {
    builder(rounds, mode).compile()
}

/// `{messages: [{type: human, id: "h0", content: "hi?"}]}`.
pub fn input() -> ChatUpdate {
    ChatUpdate::new().messages(vec![Message {
        role: Role::Human,
        id: "h0".to_owned(),
        content: "hi?".to_owned(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }])
}

/// `"{type}|{id}|{content}|{ref}"` lines joined by `\n`, hashed, plus counts.
pub fn checksum(state: &Chat) -> Checksum {
    let count = |role: Role| state.messages.iter().filter(|m| m.role == role).count();
    let lines: Vec<String> = state
        .messages
        .iter()
        .map(|m| {
            let reference = match m.role {
                Role::Ai => m
                    .tool_calls
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
                Role::Tool => m.tool_call_id.clone().unwrap_or_default(),
                Role::Human => String::new(),
            };
            format!("{}|{}|{}|{}", m.role.as_str(), m.id, m.content, reference)
        })
        .collect();
    Checksum::new()
        .with("n_messages", state.messages.len())
        .with("n_human", count(Role::Human))
        .with("n_ai", count(Role::Ai))
        .with("n_tool", count(Role::Tool))
        .with(
            "content_chars",
            state
                .messages
                .iter()
                .map(|m| m.content.chars().count())
                .sum::<usize>(),
        )
        .with("fnv_messages", fnv(&lines.join("\n")))
}

/// The case `react_{rounds}_{mode}`.
pub fn case(rounds: usize, mode: Mode) -> Case {
    graph_case(
        format!("react_{rounds}_{}", mode.as_str()),
        "react_loop",
        mode,
        move |mode| graph(rounds, mode),
        input,
        checksum,
    )
    .param("K", rounds as i64)
    .steps(2 * rounds as u64 + 1)
    .items(2 * rounds as u64 + 1, "node")
}
