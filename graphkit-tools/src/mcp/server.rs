//! [`McpServer`]: serve typed tools to any MCP client, over stdio or streamable HTTP
//! ([`McpHttpServer`]). Feature `mcp-server`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use graphkit::State;
use graphkit_llm::schema_for;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio_util::sync::CancellationToken;

use super::sessions::{
    BoundedSessions, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT,
};
use crate::error::ToolError;
use crate::tool::{DynTool, ToolOutput, ToolRuntime};

/// The path of the streamable HTTP endpoint.
pub const MCP_HTTP_PATH: &str = "/mcp";

/// An MCP server made of typed tools.
///
/// Each tool is an async fn of a `#[derive(Deserialize, JsonSchema)]` arguments struct
/// returning `Result<impl Serialize, ToolError>`. The server advertises the struct's JSON
/// Schema as the tool's input schema, and answers a call with the value as
/// `structuredContent` plus the same JSON as a text block (for clients that read text only).
/// A value that is not a JSON object is sent as `{"result": value}`, because MCP's
/// `structuredContent` is an object. When the value's type has an object schema (a derived
/// struct), it is also advertised as the tool's `outputSchema`.
///
/// Bad calls never bring the server down. Arguments that do not fit the struct (a missing
/// field, a wrong type, an argument the schema does not name), a handler that returns an
/// error (for instance a JSON string it cannot parse) and a handler that panics all come
/// back as a tool error (`isError: true`) whose text says what went wrong. An unknown tool
/// name is the protocol's error (JSON-RPC `-32602`, naming the tools there are).
///
/// Over HTTP the server bounds what clients can make it hold: at most
/// [`max_sessions`](Self::max_sessions) sessions at once (a new one beyond gets `503`),
/// each closed after [`session_idle_timeout`](Self::session_idle_timeout) unused, and
/// request bodies up to [`max_request_bytes`](Self::max_request_bytes) (`413` beyond).
/// The CPU time of a call is the tool's own: a tool whose work grows with its arguments
/// should cap them (`docs/security.md` lists the project's limits).
///
/// ```no_run
/// use graphkit_tools::ToolError;
/// use graphkit_tools::mcp::McpServer;
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First number.
///     a: i64,
///     /// Second number.
///     b: i64,
/// }
///
/// # async fn run() -> Result<(), ToolError> {
/// McpServer::new("calculator", "1.0.0")
///     .tool("add", "Adds two integers.", |args: AddArgs| async move {
///         Ok(json!({ "sum": args.a + args.b }))
///     })
///     .serve_stdio() // or .serve_http("127.0.0.1:3001") for http://127.0.0.1:3001/mcp
///     .await
/// # }
/// ```
pub struct McpServer {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<ServedTool>,
    page_size: Option<usize>,
    allowed_hosts: Option<Vec<String>>,
    max_sessions: usize,
    session_idle_timeout: Duration,
    max_request_bytes: usize,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("version", &self.version)
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// One tool as served: its description and its type-erased handler.
struct ServedTool {
    name: String,
    /// A name for people (`title` in `tools/list`).
    title: Option<String>,
    description: String,
    input_schema: Map<String, Value>,
    output_schema: Option<Map<String, Value>>,
    handler: Handler,
}

/// A tool's handler: JSON arguments in, an answer out.
type Handler = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Answer, ToolError>> + Send + Sync>;

/// What a handler produced.
enum Answer {
    /// A JSON value: sent as `structuredContent` and as text.
    Json(Value),
    /// Plain text (a graphkit [`Tool`](crate::Tool)'s non-JSON content): sent as text only.
    Text(String),
}

impl McpServer {
    /// A server that introduces itself to clients as `name` `version`.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: Vec::new(),
            page_size: None,
            allowed_hosts: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
        }
    }

    /// Instructions sent to clients at the handshake (how to use the tools together).
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Registers a typed tool: `handler` gets the arguments decoded into `A` and returns a
    /// serializable value, or a [`ToolError`] the client sees as a tool error.
    ///
    /// The value's type also implements `JsonSchema`: when its schema is an object (a
    /// derived struct), it is advertised as the tool's output schema, which clients may
    /// validate results against. `serde_json::Value` (from `json!`) advertises none.
    ///
    /// Tool names are checked when the server starts: 1 to 128 characters out of
    /// `A-Za-z0-9_-.`, each name once.
    #[must_use]
    pub fn tool<A, F, Fut, O>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
        O: Serialize + JsonSchema,
    {
        let name = name.into();
        let tool_name = name.clone();
        let handler: Handler = Arc::new(move |arguments: Value| {
            let args = match decode_arguments::<A>(&tool_name, arguments) {
                Ok(args) => args,
                Err(err) => return futures::future::ready(Err(err)).boxed(),
            };
            let result = handler(args);
            let tool_name = tool_name.clone();
            async move {
                let value = result.await?;
                serde_json::to_value(value).map(Answer::Json).map_err(|e| {
                    ToolError::failed(format!("the result of `{tool_name}` is not JSON: {e}"))
                })
            }
            .boxed()
        });
        self.tools.push(ServedTool {
            name,
            title: None,
            description: description.into(),
            input_schema: object_schema::<A>().unwrap_or_else(empty_object_schema),
            output_schema: object_schema::<O>(),
            handler,
        });
        self
    }

    /// Serves a graphkit [`Tool`](crate::Tool) as it is (its name, description and
    /// parameter schema).
    ///
    /// The tool runs outside any graph: it sees a default `S` as its state snapshot, no
    /// store and a disabled stream writer. Its text content is sent as text, and also as
    /// `structuredContent` when the text is a JSON object. A tool that answers with a graph
    /// state update or a `Command` cannot be served (an MCP client has no graph state): such
    /// a call is a tool error saying so.
    #[must_use]
    pub fn graph_tool<S: State + Default>(mut self, tool: DynTool<S>) -> Self {
        let name = tool.name().to_owned();
        let input_schema = match tool.parameters() {
            Value::Object(schema) => schema,
            _ => empty_object_schema(),
        };
        let description = tool.description().to_owned();
        let tool_name = name.clone();
        let handler: Handler = Arc::new(move |arguments: Value| {
            let tool = Arc::clone(&tool);
            let tool_name = tool_name.clone();
            async move {
                let runtime = ToolRuntime::detached(S::default(), "mcp", tool_name.as_str());
                match tool.call(arguments, runtime).await? {
                    ToolOutput::Content(text) => Ok(match serde_json::from_str(&text) {
                        Ok(Value::Object(object)) => Answer::Json(Value::Object(object)),
                        _ => Answer::Text(text),
                    }),
                    ToolOutput::Update { .. } | ToolOutput::Command(_) => {
                        Err(ToolError::Unsupported(format!(
                            "`{tool_name}` answers with a graph state update, which an MCP client cannot apply; serve tools that return content"
                        )))
                    }
                }
            }
            .boxed()
        });
        self.tools.push(ServedTool {
            name,
            title: None,
            description,
            input_schema,
            output_schema: None,
            handler,
        });
        self
    }

    /// Registers a tool described by a JSON Schema rather than a Rust type: `input_schema`
    /// is advertised as it is (`{"type": "object"}` when it is not an object schema), and
    /// `handler` gets the call's arguments as a JSON object and answers a JSON value (sent
    /// as [`tool`](Self::tool) sends one) or a [`ToolError`] the client sees as a tool error.
    ///
    /// This is for tools known only at run time, such as a server that serves each of its
    /// graphs as a tool. Arguments the schema does not name are refused before `handler`
    /// runs, as for typed tools; the rest of the checking is the handler's.
    ///
    /// ```
    /// use graphkit_tools::mcp::McpServer;
    /// use serde_json::json;
    ///
    /// let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    /// let server = McpServer::new("echo", "1.0.0").json_tool(
    ///     "echo",
    ///     "Answers its arguments.",
    ///     schema,
    ///     |arguments| async move { Ok(serde_json::Value::Object(arguments)) },
    /// );
    /// assert_eq!(server.tool_names().collect::<Vec<_>>(), ["echo"]);
    /// ```
    #[must_use]
    pub fn json_tool<F, Fut>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        F: Fn(Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, ToolError>> + Send + 'static,
    {
        let input_schema = match input_schema {
            Value::Object(schema) if schema.get("type") == Some(&json!("object")) => schema,
            _ => empty_object_schema(),
        };
        let handler: Handler = Arc::new(move |arguments: Value| {
            let arguments = match arguments {
                Value::Object(arguments) => arguments,
                _ => Map::new(),
            };
            handler(arguments)
                .map(|answer| answer.map(Answer::Json))
                .boxed()
        });
        self.tools.push(ServedTool {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            handler,
        });
        self
    }

    /// Gives the tool named `name` (registered before) a title: a name for people, which
    /// clients show instead of the tool's name (`title` in `tools/list`). A name no tool
    /// has is ignored.
    ///
    /// ```
    /// use graphkit_tools::mcp::McpServer;
    /// use serde_json::json;
    ///
    /// let server = McpServer::new("assistants", "1.0.0")
    ///     .json_tool("deep_research", "Researches a topic.", json!({"type": "object"}), |a| async move {
    ///         Ok(serde_json::Value::Object(a))
    ///     })
    ///     .tool_title("deep_research", "Deep research");
    /// assert_eq!(server.tool_names().collect::<Vec<_>>(), ["deep_research"]);
    /// ```
    #[must_use]
    pub fn tool_title(mut self, name: &str, title: impl Into<String>) -> Self {
        if let Some(tool) = self.tools.iter_mut().find(|t| t.name == name) {
            tool.title = Some(title.into());
        }
        self
    }

    /// Lists the tools `size` at a time (at least 1): `tools/list` answers the first page
    /// and a `nextCursor` whenever a page is full; the client passes it back as `cursor`
    /// for the next page (the cursor is the index of the page's first tool, in decimal).
    /// A cursor that is not one is refused as invalid params. Without it, every tool comes
    /// in one answer.
    #[must_use]
    pub fn page_size(mut self, size: usize) -> Self {
        self.page_size = Some(size.max(1));
        self
    }

    /// The `Host` header values the HTTP server accepts (names or `host:port`).
    ///
    /// Defaults to `localhost`, `127.0.0.1`, `::1` and the bound IP address: this guards a
    /// local server against DNS rebinding from a browser. A server reached under a public
    /// name must list that name here.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// The most HTTP sessions open at once (default 256, about 50 KB each). A client that
    /// asks for one more gets `503 Service Unavailable` saying so, until a session is closed
    /// (HTTP `DELETE`) or expires.
    #[must_use]
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long an HTTP session may stay unused before the server closes it (default one
    /// minute); a client that comes back later gets `404` and opens a new session
    /// (graphkit's [`McpClient`](super::McpClient) does so by itself). A session that
    /// never completes the `initialize` handshake is closed after the same time.
    #[must_use]
    pub fn session_idle_timeout(mut self, timeout: Duration) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// The largest HTTP request body accepted (default 4 MiB); a larger one gets
    /// `413 Payload Too Large`.
    #[must_use]
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// The names of the registered tools, in registration order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|tool| tool.name.as_str())
    }

    /// Serves MCP on this process's stdin and stdout until the client closes stdin.
    ///
    /// Nothing else may write to stdout meanwhile (log to stderr).
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when a tool name is invalid or taken twice, or the handshake
    /// fails.
    pub async fn serve_stdio(self) -> Result<(), ToolError> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves MCP over any byte stream pair (newline-delimited JSON-RPC, as on stdio) until
    /// the client closes it.
    ///
    /// # Errors
    /// As [`serve_stdio`](Self::serve_stdio).
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), ToolError>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let handler = self.into_handler()?;
        let name = handler.registry.name.clone();
        let running = handler
            .serve((reader, writer))
            .await
            .map_err(|e| server_error(&name, format!("the MCP handshake failed: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| server_error(&name, format!("the server task failed: {e}")))?;
        Ok(())
    }

    /// Binds `addr` and serves streamable HTTP at [`MCP_HTTP_PATH`] until the process ends.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when a tool name is invalid or taken twice, or `addr` cannot be
    /// bound.
    pub async fn serve_http(self, addr: impl ToSocketAddrs) -> Result<(), ToolError> {
        self.bind_http(addr).await?.run().await
    }

    /// Binds `addr` (port 0 picks a free port) and returns the server, not yet serving:
    /// read its [`url`](McpHttpServer::url), then [`run`](McpHttpServer::run) it.
    ///
    /// # Errors
    /// As [`serve_http`](Self::serve_http).
    pub async fn bind_http(self, addr: impl ToSocketAddrs) -> Result<McpHttpServer, ToolError> {
        let allowed_hosts = self.allowed_hosts.clone();
        let (max_sessions, idle_timeout) = (self.max_sessions, self.session_idle_timeout);
        let max_request_bytes = self.max_request_bytes;
        let handler = self.into_handler()?;
        let name = handler.registry.name.clone();
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| server_error(&name, format!("cannot bind the HTTP address: {e}")))?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| server_error(&name, format!("cannot read the bound address: {e}")))?;
        let allowed_hosts = allowed_hosts.unwrap_or_else(|| {
            let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"].map(Into::into).into();
            hosts.push(local_addr.ip().to_string());
            hosts
        });
        let shutdown = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts)
            .with_max_request_body_bytes(max_request_bytes)
            .with_cancellation_token(shutdown.clone());
        let sessions = Arc::new(BoundedSessions::new(
            name.clone(),
            max_sessions,
            idle_timeout,
        ));
        let service =
            StreamableHttpService::new(move || Ok(handler.clone()), Arc::clone(&sessions), config);
        Ok(McpHttpServer {
            name,
            listener,
            local_addr,
            service,
            sessions,
            shutdown,
        })
    }

    /// The server as a stateless streamable HTTP endpoint to mount in an HTTP server of
    /// your own (axum, hyper, ...): each POST is one JSON-RPC message answered with
    /// `application/json` (or `202` for a notification), no `Mcp-Session-Id` is issued, and
    /// `GET` and `DELETE` answer `405`, as the MCP specification allows a server without
    /// sessions to. [`allowed_hosts`](Self::allowed_hosts) applies when called (an empty
    /// list accepts every `Host`); without it only loopback names are accepted. The
    /// endpoint stops answering once `shutdown` is cancelled.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when a tool name is invalid or taken twice.
    pub fn into_http_endpoint(
        self,
        shutdown: CancellationToken,
    ) -> Result<McpHttpEndpoint, ToolError> {
        let allowed_hosts = self
            .allowed_hosts
            .clone()
            .unwrap_or_else(|| ["localhost", "127.0.0.1", "::1"].map(Into::into).into());
        let max_request_bytes = self.max_request_bytes;
        let (max_sessions, idle_timeout) = (self.max_sessions, self.session_idle_timeout);
        let handler = self.into_handler()?;
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(allowed_hosts)
            .with_max_request_body_bytes(max_request_bytes)
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_cancellation_token(shutdown);
        // No session is ever made: the store only satisfies the service's type.
        let sessions = Arc::new(BoundedSessions::new(
            handler.registry.name.clone(),
            max_sessions,
            idle_timeout,
        ));
        Ok(McpHttpEndpoint {
            service: StreamableHttpService::new(move || Ok(handler.clone()), sessions, config),
        })
    }

    /// Checks the tool names and freezes the tools into the handler rmcp serves.
    fn into_handler(self) -> Result<RegistryHandler, ToolError> {
        let mut by_name = HashMap::new();
        for (index, tool) in self.tools.iter().enumerate() {
            check_tool_name(&tool.name).map_err(|reason| server_error(&self.name, reason))?;
            if by_name.insert(tool.name.clone(), index).is_some() {
                return Err(server_error(
                    &self.name,
                    format!(
                        "two tools are named `{}`; give each tool its own name",
                        tool.name
                    ),
                ));
            }
        }
        Ok(RegistryHandler {
            registry: Arc::new(Registry {
                name: self.name,
                version: self.version,
                instructions: self.instructions,
                tools: self.tools,
                page_size: self.page_size,
                by_name,
            }),
        })
    }
}

/// A bound streamable HTTP MCP server: made by [`McpServer::bind_http`].
pub struct McpHttpServer {
    name: String,
    listener: TcpListener,
    local_addr: SocketAddr,
    service: StreamableHttpService<RegistryHandler, BoundedSessions>,
    sessions: Arc<BoundedSessions>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("name", &self.name)
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// The address it is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The endpoint clients connect to, e.g. `http://127.0.0.1:3001/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_HTTP_PATH}", self.local_addr)
    }

    /// Serves until the process ends.
    ///
    /// # Errors
    /// None today (a failed connection is logged and dropped); the `Result` leaves room for
    /// listener failures.
    pub async fn run(self) -> Result<(), ToolError> {
        self.run_until(std::future::pending()).await
    }

    /// Serves until `shutdown` completes, then closes every session and connection.
    ///
    /// # Errors
    /// As [`run`](Self::run).
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Result<(), ToolError> {
        let mut connections = tokio::task::JoinSet::new();
        let mut shutdown = std::pin::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _peer)) => stream,
                        Err(e) => {
                            // Out of file descriptors and the like: wait a little for
                            // connections to close rather than spinning.
                            tracing::warn!(server = %self.name, error = %e, "MCP HTTP accept failed");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let service = self.service.clone();
                    let sessions = Arc::clone(&self.sessions);
                    let name = self.name.clone();
                    connections.spawn(async move {
                        let routed = hyper::service::service_fn(move |request| {
                            route_request(service.clone(), Arc::clone(&sessions), request)
                        });
                        if let Err(e) = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(stream), routed)
                            .await
                        {
                            tracing::debug!(server = %name, error = %e, "MCP HTTP connection ended with an error");
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        self.shutdown.cancel();
        connections.shutdown().await;
        Ok(())
    }
}

/// A stateless streamable HTTP MCP endpoint to mount in your own HTTP server: made by
/// [`McpServer::into_http_endpoint`]. Cheap to clone.
#[derive(Clone)]
pub struct McpHttpEndpoint {
    service: StreamableHttpService<RegistryHandler, BoundedSessions>,
}

impl std::fmt::Debug for McpHttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpEndpoint").finish_non_exhaustive()
    }
}

impl McpHttpEndpoint {
    /// Answers one HTTP request to the endpoint (whatever path it was routed from).
    pub async fn handle<B>(
        &self,
        request: hyper::Request<B>,
    ) -> hyper::Response<BoxBody<Bytes, Infallible>>
    where
        B: hyper::body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        self.service.handle(request).await
    }
}

/// Sends requests for [`MCP_HTTP_PATH`] to rmcp's service; anything else is a 404. A
/// request that would open a session (a POST without `Mcp-Session-Id`) while the server
/// holds its most is answered `503` here, before its body is read. (Two such requests at
/// once may both pass this check; the session store refuses the second, with a `500`
/// carrying the same message.)
async fn route_request(
    mut service: StreamableHttpService<RegistryHandler, BoundedSessions>,
    sessions: Arc<BoundedSessions>,
    request: hyper::Request<Incoming>,
) -> Result<hyper::Response<BoxBody<Bytes, Infallible>>, Infallible> {
    if request.uri().path() != MCP_HTTP_PATH {
        return Ok(plain_response(
            hyper::StatusCode::NOT_FOUND,
            format!("not found: the MCP endpoint is {MCP_HTTP_PATH}"),
        ));
    }
    let opens_session = request.method() == hyper::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if opens_session && sessions.full().await {
        let mut response = plain_response(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            sessions.full_message(),
        );
        response.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("10"),
        );
        return Ok(response);
    }
    tower_service::Service::call(&mut service, request).await
}

/// A plain-text answer with `status`.
fn plain_response(
    status: hyper::StatusCode,
    text: String,
) -> hyper::Response<BoxBody<Bytes, Infallible>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// The frozen tools, shared by every session.
struct Registry {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<ServedTool>,
    page_size: Option<usize>,
    by_name: HashMap<String, usize>,
}

/// rmcp's view of the server: one per session, all sharing the [`Registry`].
#[derive(Clone)]
struct RegistryHandler {
    registry: Arc<Registry>,
}

impl RegistryHandler {
    fn describe(tool: &ServedTool) -> rmcp::model::Tool {
        let mut described = rmcp::model::Tool::new(
            tool.name.clone(),
            tool.description.clone(),
            Arc::new(tool.input_schema.clone()),
        );
        if let Some(title) = &tool.title {
            described = described.with_title(title.clone());
        }
        match &tool.output_schema {
            Some(schema) => described.with_raw_output_schema(Arc::new(schema.clone())),
            None => described,
        }
    }

    /// Runs the tool named in `request`: every failure past the lookup is a tool error.
    async fn run(&self, request: CallToolRequestParams) -> Result<CallToolResult, ErrorData> {
        let registry = &self.registry;
        let Some(tool) = registry
            .by_name
            .get(request.name.as_ref())
            .map(|&index| &registry.tools[index])
        else {
            let available: Vec<&str> = registry.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{}`; the available tools are: {}",
                    request.name,
                    available.join(", ")
                ),
                None,
            ));
        };
        let arguments = request.arguments.unwrap_or_default();
        if let Some(message) = unexpected_arguments(&tool.input_schema, &arguments) {
            let err = ToolError::InvalidArguments {
                tool: tool.name.clone(),
                message,
            };
            return Ok(tool_error(&err.to_string()));
        }
        let handler = Arc::clone(&tool.handler);
        let answer =
            std::panic::catch_unwind(AssertUnwindSafe(|| handler(Value::Object(arguments))));
        let answer = match answer {
            Ok(running) => AssertUnwindSafe(running).catch_unwind().await,
            Err(panic) => Err(panic),
        };
        Ok(match answer {
            Ok(Ok(answer)) => tool_success(answer),
            Ok(Err(err)) => tool_error(&err.to_string()),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "no message".into());
                tracing::error!(server = %registry.name, tool = %tool.name, panic = %what, "MCP tool panicked");
                tool_error(&format!(
                    "`{}` failed unexpectedly (it panicked: {what}); this is a bug in the tool, not in the arguments",
                    tool.name
                ))
            }
        })
    }
}

impl ServerHandler for RegistryHandler {
    fn get_info(&self) -> ServerConfig {
        let registry = &self.registry;
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(&registry.name, &registry.version));
        match &registry.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = &self.registry.tools;
        let Some(size) = self.registry.page_size else {
            return Ok(ListToolsResult::with_all_items(
                tools.iter().map(Self::describe).collect(),
            ));
        };
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| {
                ErrorData::invalid_params(
                    format!(
                        "the cursor {cursor:?} is not one this server gave; list from the start without a cursor"
                    ),
                    None,
                )
            })?,
        };
        let page: Vec<_> = tools
            .iter()
            .skip(start)
            .take(size)
            .map(Self::describe)
            .collect();
        let full = page.len() == size;
        let mut result = ListToolsResult::with_all_items(page);
        if full {
            result.next_cursor = Some((start + size).to_string());
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        let index = *self.registry.by_name.get(name)?;
        Some(Self::describe(&self.registry.tools[index]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.run(request).await.map(Into::into)
    }
}

/// A successful result: JSON as `structuredContent` (an object) plus the same JSON as text.
fn tool_success(answer: Answer) -> CallToolResult {
    match answer {
        Answer::Json(value) => {
            let structured = match value {
                Value::Object(_) => value,
                other => json!({ "result": other }),
            };
            let mut result =
                CallToolResult::success(vec![ContentBlock::text(structured.to_string())]);
            result.structured_content = Some(structured);
            result
        }
        Answer::Text(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
    }
}

/// A tool error the client reads (`isError: true`).
fn tool_error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Decodes the arguments into `A`, naming the offending field on failure.
fn decode_arguments<A: DeserializeOwned>(tool: &str, arguments: Value) -> Result<A, ToolError> {
    serde_path_to_error::deserialize(arguments).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            message: if path == "." {
                inner.to_string()
            } else {
                format!("`{path}`: {inner}")
            },
        }
    })
}

/// Names the arguments an object schema does not declare, unless it allows extra ones or
/// declares more through subschemas (a flattened enum gives `oneOf`, ...).
fn unexpected_arguments(
    schema: &Map<String, Value>,
    arguments: &Map<String, Value>,
) -> Option<String> {
    let declared = schema.get("properties")?.as_object()?;
    if !matches!(
        schema.get("additionalProperties"),
        None | Some(Value::Bool(false))
    ) {
        return None;
    }
    const MORE_PROPERTIES: [&str; 7] = [
        "oneOf",
        "anyOf",
        "allOf",
        "$ref",
        "if",
        "patternProperties",
        "dependentSchemas",
    ];
    if MORE_PROPERTIES.iter().any(|key| schema.contains_key(*key)) {
        return None;
    }
    let unexpected: Vec<String> = arguments
        .keys()
        .filter(|name| !declared.contains_key(*name))
        .map(|name| format!("`{name}`"))
        .collect();
    if unexpected.is_empty() {
        return None;
    }
    let accepted: Vec<String> = declared.keys().map(|name| format!("`{name}`")).collect();
    Some(format!(
        "unexpected argument{} {}; the accepted arguments are {}",
        if unexpected.len() == 1 { "" } else { "s" },
        unexpected.join(", "),
        if accepted.is_empty() {
            "none".to_owned()
        } else {
            accepted.join(", ")
        }
    ))
}

/// `T`'s JSON Schema when it describes an object (what MCP input and output schemas are).
fn object_schema<T: JsonSchema>() -> Option<Map<String, Value>> {
    match schema_for::<T>() {
        Value::Object(schema) if schema.get("type") == Some(&json!("object")) => Some(schema),
        _ => None,
    }
}

/// `{"type": "object"}`: the schema of a tool whose arguments have no object schema.
fn empty_object_schema() -> Map<String, Value> {
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema
}

/// MCP's tool name rule: 1 to 128 characters out of `A-Za-z0-9_-.`.
fn check_tool_name(name: &str) -> Result<(), String> {
    let valid_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if (1..=128).contains(&name.len()) && valid_chars {
        Ok(())
    } else {
        Err(format!(
            "the tool name `{name}` is invalid: use 1 to 128 characters out of A-Z, a-z, 0-9, `_`, `-` and `.`"
        ))
    }
}

fn server_error(server: &str, message: String) -> ToolError {
    ToolError::Mcp {
        server: server.to_owned(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn extra_arguments_are_named_with_the_accepted_ones() {
        let schema = object(json!({"type": "object", "properties": {"a": {}, "b": {}}}));
        let message = unexpected_arguments(&schema, &object(json!({"a": 1, "zz": 2})));
        assert_eq!(
            message.as_deref(),
            Some("unexpected argument `zz`; the accepted arguments are `a`, `b`")
        );
        assert_eq!(
            unexpected_arguments(&schema, &object(json!({"a": 1}))),
            None
        );
    }

    #[test]
    fn schemas_that_allow_or_declare_more_properties_accept_extra_arguments() {
        let open = object(
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
        );
        let flattened_enum = object(json!({
            "type": "object",
            "properties": {"query": {}},
            "oneOf": [{"properties": {"exact": {}}}, {"properties": {"distance": {}}}]
        }));
        let arguments = object(json!({"query": "x", "exact": true}));
        assert_eq!(unexpected_arguments(&open, &arguments), None);
        assert_eq!(unexpected_arguments(&flattened_enum, &arguments), None);
    }

    #[test]
    fn tool_names_follow_the_mcp_rule() {
        assert!(check_tool_name("analyze_events.v2-beta").is_ok());
        assert!(check_tool_name("").is_err());
        assert!(check_tool_name("two words").is_err());
        assert!(check_tool_name(&"x".repeat(129)).is_err());
    }
}
