//! # graphkit-tools
//!
//! The tool layer of graphkit: the [`Tool`] trait and tools made from async fns
//! ([`tool_fn`], [`tool_fn_with_runtime`]); the [`ToolNode`] that runs the tool calls of
//! the last assistant message and merges their state updates; the [`tools_condition`]
//! router; a prebuilt [`ReactAgent`] and [`Supervisor`] (a model delegating to worker
//! graphs through handoff tools); [`GraphTool`], a compiled graph as a tool; prebuilt
//! tools (sandboxed files, a todo list kept in the graph state, think, web search, URL
//! fetch, Wikipedia, arXiv); an MCP client; and, with the `mcp-server` feature, an MCP
//! server for typed tools ([`mcp`]).
//!
//! Graph states are your own structs: implement [`MessagesState`] (one line with
//! [`messages_state!`]) so tools and the agent can find the conversation, or use the
//! ready-made [`AgentState`].
//!
//! ```
//! use std::sync::Arc;
//! use graphkit_llm::{AssistantMessage, ScriptedModel, ToolCall};
//! use graphkit_tools::{AgentState, ReactAgent, ToolError, tool_fn};
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let add = tool_fn("add", "Adds two integers.", |x: Add| async move { Ok((x.a + x.b).to_string()) });
//! // A test double that replays two replies; any `ChatModel` works here.
//! let model = ScriptedModel::new([
//!     AssistantMessage::with_tool_calls("", vec![ToolCall::new("add", json!({"a": 2, "b": 3}))]),
//!     AssistantMessage::text("2 + 3 = 5"),
//! ]);
//! let agent = ReactAgent::<AgentState>::new(model, (add,)).compile()?;
//! let done = agent.invoke(AgentState::user("What is 2 + 3?")).await?.into_state();
//! assert_eq!(done.messages[2].text(), "5"); // the tool's answer
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
//!
//! The guide page `docs/tools.md` explains each part; `docs/supervisor.md` and
//! `docs/agent-as-tool.md` cover the supervisor and graphs as tools.

mod agent;
mod agent_state;
mod audit;

pub mod error;
mod function;
mod graph_tool;

pub mod mcp;
mod node;
pub mod prebuilt;
mod state;
mod supervisor;
mod tool;

pub use agent::{AGENT_NODE, ReactAgent};
pub use agent_state::{AgentState, AgentStateUpdate};
pub use audit::{AuditLog, AuditRead, TornLine};
pub use error::ToolError;
pub use function::{FnTool, tool_fn, tool_fn_with_runtime};
pub use graph_tool::{GraphTool, reply_with_last_message};
pub use node::{OnToolError, TOOLS_NODE, ToolNode, tools_condition};
pub use prebuilt::fs::SandboxedFs;
pub use prebuilt::think::ThinkTool;
pub use prebuilt::todo::{Priority, TodoItem, TodoList, TodoState, TodoStatus, todo_tools};
pub use prebuilt::{remove_stale_temp_files, write_atomic};
pub use state::MessagesState;
pub use supervisor::{HANDOFF_PREFIX, OutputMode, SUPERVISOR_NODE, Supervisor, Worker};
pub use tool::{DynTool, IntoTools, Tool, ToolOutput, ToolRuntime, parse_args};

/// Makes an async fn a [`Tool`]: a unit struct of the function's name, for any state,
/// named after the function, described by its doc comment (what the model reads), its
/// parameters the arguments (their JSON Schema is derived from their types). The function
/// returns text (`String`, `&str`), a [`ToolOutput`], or a `Result` of those whose error is
/// shown to the model.
///
/// ```
/// use graphkit_tools::{AgentState, Tool, ToolNode, tool};
///
/// /// Send an email.
/// #[tool]
/// async fn send_email(to: String, body: String) -> String {
///     format!("Sent to {to}: {body}")
/// }
///
/// let node = ToolNode::<AgentState>::new((send_email,));
/// assert_eq!(Tool::<AgentState>::description(&send_email), "Send an email.");
/// assert_eq!(Tool::<AgentState>::parameters(&send_email)["required"], serde_json::json!(["to", "body"]));
/// # let _ = node;
/// ```
pub use graphkit_derive::tool;

/// docs/tools.md, compiled as doctests (the MCP block is compiled, not run).
#[cfg(doctest)]
#[doc = include_str!("../../docs/tools.md")]
pub struct ToolsDoctests;

/// docs/supervisor.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/supervisor.md")]
pub struct SupervisorDoctests;

/// docs/agent-as-tool.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/agent-as-tool.md")]
pub struct AgentAsToolDoctests;

/// docs/mcp-server.md, compiled and run as doctests.
#[cfg(all(doctest, feature = "mcp-server"))]
#[doc = include_str!("../../docs/mcp-server.md")]
pub struct McpServerDoctests;

/// Re-exports used by [`messages_state!`]. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use graphkit::{KeyedUpdate, State};
    pub use graphkit_llm::Message;

    /// What `#[tool]`'s generated code names.
    pub mod tool {
        pub use crate::{Tool, ToolError, ToolOutput, ToolRuntime, parse_args};
        pub use async_trait::async_trait;
        pub use graphkit::State;
        pub use graphkit_llm::schema_for;
        pub use schemars;
        pub use serde;
        pub use serde_json::Value;
    }
}
