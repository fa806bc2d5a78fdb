//! [`McpClient`]: one connection to an MCP server, and [`McpTool`], one of its tools as a
//! graphkit [`Tool`].

use std::sync::Arc;

use async_trait::async_trait;
use graphkit::State;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::error::ToolError;
use crate::tool::{DynTool, Tool, ToolOutput, ToolRuntime};

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// Start `command args...` and speak MCP over its stdin/stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP at this URL (e.g. `http://127.0.0.1:3001/mcp`).
    Http {
        /// The endpoint.
        url: String,
    },
}

/// A tool as the server describes it: plain data (serializable), for prompts, state fields
/// and tool pickers.
///
/// ```
/// use graphkit_tools::mcp::McpToolInfo;
/// use serde_json::json;
///
/// let info = McpToolInfo {
///     name: "echo".into(),
///     description: "Echoes the message.".into(),
///     input_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}}),
///     output_schema: None,
/// };
/// assert_eq!(serde_json::to_value(&info).unwrap()["input_schema"]["type"], "object");
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct McpToolInfo {
    /// Its name (in an [`McpToolSet`](super::McpToolSet), the name the set exposes).
    pub name: String,
    /// Its description (empty when the server gave none).
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments, as the server sent it.
    pub input_schema: Value,
    /// The JSON Schema of its structured result, when the server declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCallResult {
    /// The text blocks of the content, joined by newlines (other blocks are described
    /// briefly, e.g. `[image: image/png]`).
    pub text: String,
    /// The structured content, when the tool returned one.
    pub structured: Option<Value>,
    /// `true` when the server says the tool failed.
    pub is_error: bool,
}

/// A connection to one MCP server.
///
/// Cheap to share (`Arc`); calls may run concurrently. When the connection is found
/// closed (the server process died, the HTTP session ended), the client reconnects once
/// and retries the request; if that fails too, the error says so. Turn this off with
/// [`reconnect`](Self::reconnect) to fail at once.
pub struct McpClient {
    name: String,
    transport: McpTransport,
    reconnect: std::sync::atomic::AtomicBool,
    service: Mutex<Option<Connection>>,
}

struct Connection {
    /// Shared with the requests in flight, so the lock is held only to find or replace it.
    service: Arc<RunningService<RoleClient, ()>>,
    pid: Option<u32>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

fn service_error(server: &str, err: &ServiceError) -> ToolError {
    ToolError::Mcp {
        server: server.to_owned(),
        message: err.to_string(),
    }
}

fn is_connection_error(err: &ServiceError) -> bool {
    matches!(
        err,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

impl McpClient {
    /// Starts a stdio server and connects to it.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when the program cannot start or the MCP handshake fails.
    pub async fn stdio<I, A>(
        name: impl Into<String>,
        command: impl Into<String>,
        args: I,
    ) -> Result<Arc<Self>, ToolError>
    where
        I: IntoIterator<Item = A>,
        A: Into<String>,
    {
        let transport = McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
        };
        Self::connect(name, transport).await
    }

    /// Connects to a streamable HTTP server.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when the server cannot be reached or the handshake fails.
    pub async fn http(
        name: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Arc<Self>, ToolError> {
        Self::connect(name, McpTransport::Http { url: url.into() }).await
    }

    /// Connects over any [`McpTransport`].
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when the connection or the handshake fails.
    pub async fn connect(
        name: impl Into<String>,
        transport: McpTransport,
    ) -> Result<Arc<Self>, ToolError> {
        let client = Self {
            name: name.into(),
            transport,
            reconnect: true.into(),
            service: Mutex::new(None),
        };
        let connection = client.open().await?;
        *client.service.lock().await = Some(connection);
        Ok(Arc::new(client))
    }

    /// Whether to reconnect once when the connection is found closed (default: yes).
    pub fn reconnect(&self, on: bool) {
        self.reconnect
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// The server's name as given.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id of a stdio server (for monitoring), while connected.
    pub async fn server_pid(&self) -> Option<u32> {
        self.service.lock().await.as_ref().and_then(|c| c.pid)
    }

    async fn open(&self) -> Result<Connection, ToolError> {
        let err = |message: String| ToolError::Mcp {
            server: self.name.clone(),
            message,
        };
        match &self.transport {
            McpTransport::Stdio { command, args, env } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
                let (child, _) = TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .map_err(|e| err(format!("cannot start `{command}`: {e}")))?;
                let pid = child.id();
                let service = ()
                    .serve(child)
                    .await
                    .map_err(|e| err(format!("the MCP handshake with `{command}` failed: {e}")))?;
                Ok(Connection {
                    service: Arc::new(service),
                    pid,
                })
            }
            McpTransport::Http { url } => {
                // rmcp builds its own reqwest client: it needs the TLS provider too.
                graphkit_llm::http::install_tls_provider();
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                let service = ()
                    .serve(transport)
                    .await
                    .map_err(|e| err(format!("cannot connect to {url}: {e}")))?;
                Ok(Connection {
                    service: Arc::new(service),
                    pid: None,
                })
            }
        }
    }

    /// Runs `request` on the live connection, reconnecting once if it is closed.
    ///
    /// The connection lock is held only to find (or replace) the connection, never across
    /// a request, so calls to one server run concurrently.
    async fn with_service<T, F>(&self, request: F) -> Result<T, ToolError>
    where
        F: for<'a> Fn(
            &'a RunningService<RoleClient, ()>,
        ) -> futures::future::BoxFuture<'a, Result<T, ServiceError>>,
    {
        let reconnect = self.reconnect.load(std::sync::atomic::Ordering::Relaxed);
        let service = self.live_service(reconnect).await?;
        match request(&service).await {
            Ok(value) => Ok(value),
            Err(e) if is_connection_error(&e) && reconnect => {
                tracing::warn!(server = %self.name, error = %e, "MCP connection lost; reconnecting once");
                let fresh = self.replace_connection(&service, &e).await?;
                request(&fresh)
                    .await
                    .map_err(|e| service_error(&self.name, &e))
            }
            Err(e) if is_connection_error(&e) => {
                let mut guard = self.service.lock().await;
                if guard
                    .as_ref()
                    .is_some_and(|c| Arc::ptr_eq(&c.service, &service))
                {
                    *guard = None;
                }
                Err(ToolError::Mcp {
                    server: self.name.clone(),
                    message: format!("the connection was lost: {e}"),
                })
            }
            Err(e) => Err(service_error(&self.name, &e)),
        }
    }

    /// The current connection, opened again first if it is found closed (and `reconnect`).
    async fn live_service(
        &self,
        reconnect: bool,
    ) -> Result<Arc<RunningService<RoleClient, ()>>, ToolError> {
        let mut guard = self.service.lock().await;
        let closed = guard
            .as_ref()
            .is_none_or(|c| c.service.is_closed() || c.service.is_transport_closed());
        if closed {
            if !reconnect {
                return Err(ToolError::Mcp {
                    server: self.name.clone(),
                    message:
                        "the connection is closed (the server stopped) and reconnecting is off"
                            .into(),
                });
            }
            *guard = Some(self.open().await.map_err(|e| ToolError::Mcp {
                server: self.name.clone(),
                message: format!("the server stopped and could not be restarted: {e}"),
            })?);
        }
        guard
            .as_ref()
            .map(|c| Arc::clone(&c.service))
            .ok_or_else(|| ToolError::Mcp {
                server: self.name.clone(),
                message: "not connected".into(),
            })
    }

    /// After `failed` lost its connection: a new connection, unless a concurrent call has
    /// already replaced it (then that one).
    async fn replace_connection(
        &self,
        failed: &Arc<RunningService<RoleClient, ()>>,
        cause: &ServiceError,
    ) -> Result<Arc<RunningService<RoleClient, ()>>, ToolError> {
        let mut guard = self.service.lock().await;
        if let Some(current) = guard.as_ref()
            && !Arc::ptr_eq(&current.service, failed)
        {
            return Ok(Arc::clone(&current.service));
        }
        let fresh = self.open().await.map_err(|re| ToolError::Mcp {
            server: self.name.clone(),
            message: format!("the connection was lost ({cause}) and could not be restarted: {re}"),
        })?;
        let service = Arc::clone(&fresh.service);
        *guard = Some(fresh);
        Ok(service)
    }

    /// The server's tools.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] on protocol or connection failure.
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        let tools = self.with_service(|s| Box::pin(s.list_all_tools())).await?;
        Ok(tools
            .into_iter()
            .map(|t| McpToolInfo {
                name: t.name.to_string(),
                description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                input_schema: Value::Object((*t.input_schema).clone()),
                output_schema: t
                    .output_schema
                    .map(|schema| Value::Object((*schema).clone())),
            })
            .collect())
    }

    /// Calls the tool `name` with `arguments` (a JSON object, or null for none).
    ///
    /// A tool that fails on the server side is not an `Err` here: the result has
    /// `is_error: true` (the [`Tool`] wrapper turns it into a [`ToolError`]).
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] when `arguments` is not an object;
    /// [`ToolError::Mcp`] on protocol or connection failure (unknown tools included).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<McpCallResult, ToolError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments {
                    tool: name.to_owned(),
                    message: format!("expected a JSON object, got {other}"),
                });
            }
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let result = self
            .with_service(|s| Box::pin(s.call_tool(params.clone())))
            .await?;
        let text = result
            .content
            .iter()
            .map(|block| match block.as_text() {
                Some(t) => t.text.clone(),
                None => {
                    let value = serde_json::to_value(block).unwrap_or(Value::Null);
                    let kind = value
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("content");
                    let mime = value
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default();
                    format!("[{kind}{mime}]")
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        Ok(McpCallResult {
            text,
            structured: result.structured_content,
            is_error: result.is_error.unwrap_or(false),
        })
    }

    /// The server's tools as graphkit [`Tool`]s (schemas passed through unchanged).
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub async fn tools<S: State>(self: &Arc<Self>) -> Result<Vec<DynTool<S>>, ToolError> {
        Ok(self
            .list_tools()
            .await?
            .into_iter()
            .map(|info| Arc::new(McpTool::new(Arc::clone(self), info)) as DynTool<S>)
            .collect())
    }

    /// Stops the connection (and a stdio server process).
    pub async fn close(&self) {
        if let Some(connection) = self.service.lock().await.take() {
            match Arc::try_unwrap(connection.service) {
                Ok(mut service) => {
                    let _ = service.close().await;
                }
                // Calls are in flight: cancel the connection; they fail as closed.
                Err(shared) => shared.cancellation_token().cancel(),
            }
        }
    }
}

/// One server tool as a graphkit [`Tool`]: made by [`McpClient::tools`] and
/// [`McpToolSet::tools`](super::McpToolSet::tools).
#[derive(Debug)]
pub struct McpTool {
    client: Arc<McpClient>,
    info: McpToolInfo,
    /// The name the model calls it by (the server's name, or a prefixed one in a set).
    name: String,
}

impl McpTool {
    pub(super) fn new(client: Arc<McpClient>, info: McpToolInfo) -> Self {
        Self {
            name: info.name.clone(),
            client,
            info,
        }
    }

    /// The same tool under another name (the server still gets its own name).
    pub(super) fn renamed(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// The server's description of the tool (with the server's own name).
    pub fn info(&self) -> &McpToolInfo {
        &self.info
    }

    /// The server this tool belongs to.
    pub fn server(&self) -> &str {
        self.client.name()
    }
}

#[async_trait]
impl<S: State> Tool<S> for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.info.description
    }

    fn parameters(&self) -> Value {
        self.info.input_schema.clone()
    }

    async fn call(
        &self,
        args: Value,
        _runtime: ToolRuntime<S>,
    ) -> Result<ToolOutput<S>, ToolError> {
        let args = match args {
            Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
            other => other,
        };
        let result = self.client.call_tool(&self.info.name, args).await?;
        if result.is_error {
            return Err(ToolError::failed(format!(
                "`{}` failed on MCP server `{}`: {}",
                self.info.name, self.client.name, result.text
            )));
        }
        Ok(ToolOutput::Content(match &result.structured {
            None => result.text,
            Some(structured) if result.text.is_empty() => structured.to_string(),
            // The text is already the structured content as JSON (as the spec recommends):
            // once is enough for the model.
            Some(structured)
                if serde_json::from_str::<Value>(&result.text).ok().as_ref()
                    == Some(structured) =>
            {
                result.text
            }
            Some(structured) => format!("{}\n\nstructured content: {structured}", result.text),
        }))
    }
}
