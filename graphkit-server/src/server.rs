//! [`Server`]: register graphs, choose a backend, then serve HTTP and run workers.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use graphkit::{CompiledGraph, State};
use schemars::JsonSchema;
use serde_json::{Map, Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::api::{Api, router};
use crate::backend::{AssistantRecord, Backend, IfExists, SqliteBackend};
use crate::error::{Result, ServerError};
use crate::graph::{SharedGraph, TypedGraph};
use crate::ids::system_assistant_id;
use crate::time::Timestamp;
use crate::worker::{Shared, WorkerSettings, new_worker_id, run_workers};

/// Request bodies above this size get 413 unless [`Server::body_limit`] says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 10 * 1024 * 1024;

/// How long a request's whole body may take to arrive, from the end of its headers, unless
/// [`Server::body_read_timeout`] says otherwise: 10 MiB (the body limit) at about 3 Mbit/s.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A graphkit server: graphs served over the LangGraph Platform API.
///
/// ```no_run
/// use graphkit_server::{Server, demo};
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// Server::new()
///     .graph("agent", demo::agent_graph()?)
///     .serve("127.0.0.1:2024")
///     .await?;
/// # Ok(()) }
/// ```
///
/// Each graph gets a system assistant (id `uuid5(NAMESPACE, graph_id)`, as the reference
/// server). Graphs run on the backend's checkpointer and store, whatever they were
/// compiled with. Without [`backend`](Self::backend), an SQLite file
/// `graphkit-server.db` in the working directory is used.
pub struct Server {
    graphs: HashMap<String, SharedGraph>,
    backend: Option<Arc<dyn Backend>>,
    api_key: Option<String>,
    cors_origins: Vec<String>,
    workers: usize,
    serve_http: bool,
    body_limit: usize,
    body_read_timeout: Duration,
    settings: WorkerSettings,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut graphs: Vec<&String> = self.graphs.keys().collect();
        graphs.sort();
        f.debug_struct("Server")
            .field("graphs", &graphs)
            .field("backend", &self.backend)
            .field("api_key", &self.api_key.as_ref().map(|_| "set"))
            .field("cors_origins", &self.cors_origins)
            .field("workers", &self.workers)
            .field("serve_http", &self.serve_http)
            .field("body_limit", &self.body_limit)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("settings", &self.settings)
            .finish()
    }
}

impl Server {
    /// No graphs yet; 10 concurrent runs per process; no API key.
    pub fn new() -> Self {
        Self {
            graphs: HashMap::new(),
            backend: None,
            api_key: None,
            cors_origins: Vec::new(),
            workers: 10,
            serve_http: true,
            body_limit: DEFAULT_BODY_LIMIT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            settings: WorkerSettings::default(),
        }
    }

    /// Serves `graph` as `graph_id`, with its state's JSON Schema (from schemars) as the
    /// assistant's schemas.
    #[must_use]
    pub fn graph<S: State + JsonSchema>(self, graph_id: &str, graph: CompiledGraph<S>) -> Self {
        let schema = serde_json::to_value(schemars::schema_for!(S)).unwrap_or(Value::Null);
        self.graph_with_schema(graph_id, graph, schema)
    }

    /// Serves `graph` as `graph_id` for a state without a JSON Schema (the schemas
    /// endpoint answers `null`).
    #[must_use]
    pub fn graph_without_schema<S: State>(self, graph_id: &str, graph: CompiledGraph<S>) -> Self {
        self.graph_with_schema(graph_id, graph, Value::Null)
    }

    fn graph_with_schema<S: State>(
        mut self,
        graph_id: &str,
        graph: CompiledGraph<S>,
        schema: Value,
    ) -> Self {
        // Recorded on the graph too, so its same-state subgraphs are described by it.
        let graph = if schema.is_null() {
            graph
        } else {
            graph.with_state_schema(schema.clone())
        };
        let typed: SharedGraph = Arc::new(TypedGraph { graph, schema });
        self.graphs.insert(graph_id.to_owned(), typed);
        self
    }

    /// The storage: SQLite ([`SqliteBackend`]) or, with the `postgres` feature, PostgreSQL.
    #[must_use]
    pub fn backend(mut self, backend: Arc<dyn Backend>) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Refuses every request without this key in the `x-api-key` header (401).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Lets web pages on these origins call the server from a browser (CORS): each an origin
    /// such as `http://localhost:5173`, or `*` for any. Off by default, so that no page a
    /// user happens to visit can drive the server on their machine; a page on another
    /// origin needs its origin listed. Preflight requests are answered without the API key
    /// (browsers never send it there); every other request still needs it.
    ///
    /// ```
    /// let server = graphkit_server::Server::new().cors_origins(["http://localhost:5173"]);
    /// ```
    #[must_use]
    pub fn cors_origins<I, O>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = O>,
        O: Into<String>,
    {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// How many runs this process executes at once (0: none; the process only serves HTTP).
    #[must_use]
    pub fn workers(mut self, count: usize) -> Self {
        self.workers = count;
        self
    }

    /// Only run workers (no HTTP): [`serve`](Self::serve) then ignores its address.
    #[must_use]
    pub fn workers_only(mut self, on: bool) -> Self {
        self.serve_http = !on;
        self
    }

    /// The largest request body accepted (413 above it).
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// How long a request's whole body may take to arrive after its headers (default
    /// [`DEFAULT_BODY_READ_TIMEOUT`]). A body still incomplete then (a slow or stalled
    /// client, or one that sent less than its `Content-Length`) gets 408 and its connection
    /// is closed, so no client can hold a connection by never finishing a body.
    #[must_use]
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Lease, heartbeat, sweep and retry settings of the workers.
    #[must_use]
    pub fn worker_settings(mut self, settings: WorkerSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Binds `addr` and serves until the process is stopped (Ctrl-C or SIGTERM stop it
    /// gracefully: runs in progress go back to the queue).
    ///
    /// # Errors
    /// [`ServerError::Startup`] if the address cannot be bound or the storage opened.
    pub async fn serve(self, addr: impl tokio::net::ToSocketAddrs) -> Result<()> {
        let running = self.start(addr).await?;
        if let Some(addr) = running.local_addr() {
            tracing::info!(%addr, "graphkit-server listening");
        }
        shutdown_signal().await;
        tracing::info!("stopping: runs in progress go back to the queue");
        running.shutdown().await;
        Ok(())
    }

    /// Binds `addr` and starts serving in the background: for tests and for hosts that
    /// run the server next to other work. Bind port 0 and read
    /// [`RunningServer::local_addr`].
    ///
    /// # Errors
    /// [`ServerError::Startup`] if the address cannot be bound or the storage opened.
    pub async fn start(self, addr: impl tokio::net::ToSocketAddrs) -> Result<RunningServer> {
        if self.graphs.is_empty() {
            return Err(ServerError::Startup(
                "no graph registered: add one with Server::graph(\"id\", compiled_graph)".into(),
            ));
        }
        // Checked before anything starts: a bad origin must not leave workers running.
        let cors = cors_layer(&self.cors_origins)?;
        let backend = match self.backend {
            Some(backend) => backend,
            None => Arc::new(SqliteBackend::open("graphkit-server.db").await?) as Arc<dyn Backend>,
        };
        // The graphs run on the backend's checkpointer and store.
        let (saver, store) = (backend.checkpointer(), backend.store());
        let graphs: HashMap<String, SharedGraph> = self
            .graphs
            .into_iter()
            .map(|(id, graph)| (id, graph.rebind(Arc::clone(&saver), Arc::clone(&store))))
            .collect();
        register_assistants(&*backend, &graphs).await?;
        let shared = Arc::new(Shared {
            backend,
            graphs,
            settings: self.settings,
            run_durations: Default::default(),
        });
        let stop = CancellationToken::new();
        let mut tasks = Vec::new();
        let worker_id = (self.workers > 0).then(new_worker_id);
        if let Some(id) = &worker_id {
            tasks.push(tokio::spawn(run_workers(
                Arc::clone(&shared),
                id.clone(),
                self.workers,
                stop.clone(),
            )));
        }
        let mut local_addr = None;
        if self.serve_http {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|e| ServerError::Startup(format!("bind the listen address: {e}")))?;
            local_addr = listener.local_addr().ok();
            let api = Api {
                shared,
                api_key: self.api_key.map(Into::into),
                body_limit: self.body_limit,
                body_read_timeout: self.body_read_timeout,
                stop: stop.clone(),
                mcp_any_host: !local_addr.is_some_and(|addr| addr.ip().is_loopback()),
            };
            let app = router(api);
            let app = match cors {
                Some(cors) => app.layer(cors),
                None => app,
            };
            let stop_http = stop.clone();
            // Every answer leaves at once: without TCP_NODELAY, a response written in two
            // parts (head, then body) waits for the client's delayed ACK of the first,
            // about 40 ms on Linux, which was most of a short run's latency.
            let listener = listener.tap_io(|tcp| {
                if let Err(error) = tcp.set_nodelay(true) {
                    tracing::debug!(%error, "TCP_NODELAY could not be set on a connection");
                }
            });
            tasks.push(tokio::spawn(async move {
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop_http.cancelled().await })
                    .await;
                if let Err(error) = served {
                    tracing::error!(%error, "the HTTP server stopped");
                }
            }));
        }
        Ok(RunningServer {
            local_addr,
            worker_id,
            stop,
            tasks,
        })
    }
}

/// Creates the system assistant of each graph that has none yet. One that exists is left as
/// it is: a client may have updated it (a new version) or set another version latest.
async fn register_assistants(
    backend: &dyn Backend,
    graphs: &HashMap<String, SharedGraph>,
) -> Result<()> {
    for graph_id in graphs.keys() {
        let now = Timestamp::now();
        let mut metadata = Map::new();
        metadata.insert("created_by".into(), json!("system"));
        let assistant = AssistantRecord {
            assistant_id: system_assistant_id(graph_id),
            graph_id: graph_id.clone(),
            config: json!({}),
            context: json!({}),
            metadata,
            name: graph_id.clone(),
            description: None,
            created_at: now,
            updated_at: now,
            version: 1,
        };
        backend
            .create_assistant(&assistant, IfExists::DoNothing)
            .await?;
    }
    Ok(())
}

/// A server started with [`Server::start`].
#[derive(Debug)]
pub struct RunningServer {
    local_addr: Option<SocketAddr>,
    worker_id: Option<String>,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address (`None` for a workers-only server).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    /// The id this process's workers record in the runs they hold (`None` without workers).
    pub fn worker_id(&self) -> Option<&str> {
        self.worker_id.as_deref()
    }

    /// Stops taking requests and runs; runs in progress go back to the queue.
    pub async fn shutdown(self) {
        self.stop.cancel();
        for task in self.tasks {
            let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
        }
    }
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// The CORS layer for `origins` (none when the list is empty), or a startup error naming an
/// origin that is not one.
fn cors_layer(origins: &[String]) -> Result<Option<tower_http::cors::CorsLayer>> {
    use axum::http::{HeaderName, HeaderValue, Method, header};
    use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return Ok(None);
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let mut values = Vec::new();
        for origin in origins {
            let origin_only = origin.trim_end_matches('/');
            let well_formed = match origin_only.split_once("://") {
                Some(("http" | "https", host)) => !host.is_empty() && !host.contains('/'),
                _ => false,
            };
            let value = HeaderValue::from_str(origin_only)
                .ok()
                .filter(|_| well_formed);
            values.push(value.ok_or_else(|| {
                ServerError::Startup(format!(
                    "CORS origin {origin:?} is not an origin: write scheme, host and port, as http://localhost:5173, or * for any"
                ))
            })?);
        }
        AllowOrigin::list(values)
    };
    Ok(Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([
                Method::GET,
                Method::POST,
                Method::PUT,
                Method::PATCH,
                Method::DELETE,
                Method::OPTIONS,
            ])
            .allow_headers(AllowHeaders::mirror_request())
            // The SDKs read the run id from these on a stream or a background run.
            .expose_headers([
                header::CONTENT_LOCATION,
                header::LOCATION,
                HeaderName::from_static("x-pagination-next"),
            ])
            .max_age(std::time::Duration::from_secs(600)),
    ))
}
