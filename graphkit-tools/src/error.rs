//! [`ToolError`]: everything that can go wrong when a tool runs.

/// An error from a tool, the [`ToolNode`](crate::ToolNode), or a prebuilt tool's backend.
///
/// Its message is written for two readers: the model (the [`ToolNode`](crate::ToolNode)
/// turns it into a tool message by default) and the developer. It says what went wrong and,
/// where possible, what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The model called a tool that is not registered.
    #[error("unknown tool `{name}`; the available tools are: {available}")]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The registered names, comma-separated.
        available: String,
    },
    /// The arguments do not match the tool's schema.
    #[error(
        "invalid arguments for `{tool}`: {message}. Fix the arguments to match the tool's schema and call it again"
    )]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// What is wrong with them.
        message: String,
    },
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// A path was refused by the filesystem sandbox.
    #[error("path `{path}` refused: {reason}")]
    PathRefused {
        /// The path as given.
        path: String,
        /// Why.
        reason: String,
    },
    /// A filesystem operation failed.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was attempted (`read`, `write`, `list`).
        action: &'static str,
        /// The path as given.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Input or output above a configured size limit.
    #[error("{what} is {size} bytes, above the limit of {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A URL is malformed or uses an unsupported scheme.
    #[error("invalid URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Why.
        reason: String,
    },
    /// A URL points at an address the fetcher may not reach (private, loopback, ...).
    #[error("refused to fetch `{url}`: {reason}")]
    AddressRefused {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// An HTTP request got an error status.
    #[error("HTTP {status} from {url}{}", if body.is_empty() { String::new() } else { format!(": {body}") })]
    Http {
        /// The URL.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// An HTTP request failed before a response (connection, timeout, ...).
    #[error("request to {url} failed: {message}")]
    Request {
        /// The URL.
        url: String,
        /// What happened.
        message: String,
    },
    /// A response or document could not be parsed.
    #[error("cannot parse {what}: {message}")]
    Parse {
        /// What was being parsed.
        what: String,
        /// Why it failed.
        message: String,
    },
    /// A feature of this crate is needed but not compiled in, or a backend is not configured.
    #[error("{0}")]
    Unsupported(String),
    /// An MCP server failed, or the connection to it did.
    #[error("MCP server `{server}`: {message}")]
    Mcp {
        /// The server's name.
        server: String,
        /// What happened.
        message: String,
    },
    /// A graph called as a tool ([`GraphTool`](crate::GraphTool)) failed or paused.
    #[error("tool `{tool}` runs a graph that {message}")]
    Graph {
        /// The tool.
        tool: String,
        /// What happened to the graph, and what to do.
        message: String,
    },
    /// The [`ToolNode`](crate::ToolNode) found no assistant message to answer.
    #[error(
        "ToolNode expects the last message to be an assistant message with tool calls, found {found}; route to the tool node only when `tools_condition` says so"
    )]
    NoToolCalls {
        /// What it found instead.
        found: String,
    },
}

impl ToolError {
    /// A tool failure with this message (what a tool returns when its work fails).
    pub fn failed(message: impl std::fmt::Display) -> Self {
        Self::Failed(message.to_string())
    }
}

impl From<String> for ToolError {
    fn from(message: String) -> Self {
        Self::Failed(message)
    }
}

impl From<&str> for ToolError {
    fn from(message: &str) -> Self {
        Self::Failed(message.to_owned())
    }
}

impl From<graphkit_llm::LlmError> for ToolError {
    fn from(err: graphkit_llm::LlmError) -> Self {
        Self::Failed(err.to_string())
    }
}

/// Results of this crate.
///
/// Only at this path (`graphkit_tools::error::Result`), not at the crate root: `use graphkit_tools::*` keeps the
/// prelude's `Result`, and glob imports of several graphkit crates do not collide.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;
