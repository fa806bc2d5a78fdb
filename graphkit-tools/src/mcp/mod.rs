//! MCP, the Model Context Protocol, on the official Rust SDK (`rmcp`).
//!
//! - The client: [`McpClient`] connects to any MCP server over stdio (a child process) or
//!   streamable HTTP, lists its tools as plain data ([`McpToolInfo`]: name, description,
//!   input and output JSON Schemas) and calls them; [`McpClient::tools`] turns them into
//!   graphkit [`Tool`](crate::Tool)s. [`McpToolSet`] puts several servers behind one set.
//! - The server (feature `mcp-server`): `McpServer` serves typed tools (an args struct
//!   with a JSON Schema and an async handler returning a serializable value) over stdio or
//!   streamable HTTP. Guide: `docs/mcp-server.md`.
//!
//! ```no_run
//! # async fn run() -> Result<(), graphkit_tools::ToolError> {
//! use graphkit_tools::AgentState;
//! use graphkit_tools::mcp::McpClient;
//!
//! let server = McpClient::stdio("everything", "npx", ["-y", "@modelcontextprotocol/server-everything"]).await?;
//! let schemas = server.list_tools().await?;         // names, descriptions, JSON Schemas
//! let tools = server.tools::<AgentState>().await?; // each server tool as a graphkit Tool
//! # Ok(()) }
//! ```
//!
//! The SDK's types stay inside this module: tools are described by [`McpToolInfo`] and
//! results by [`McpCallResult`].

mod client;
#[cfg(feature = "mcp-server")]
mod server;
#[cfg(feature = "mcp-server")]
mod sessions;
mod toolset;

pub use client::{McpCallResult, McpClient, McpTool, McpToolInfo, McpTransport};
#[cfg(feature = "mcp-server")]
pub use server::{MCP_HTTP_PATH, McpHttpEndpoint, McpHttpServer, McpServer};
#[cfg(feature = "mcp-server")]
pub use sessions::{DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT};
pub use toolset::McpToolSet;
