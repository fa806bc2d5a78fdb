//! The session store of the streamable HTTP server: rmcp's in-memory sessions, with a cap
//! on how many exist at once and an idle expiry (each session costs about 50 KB and a task
//! until it is closed or expires).

use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use tokio::sync::Mutex;

use crate::error::ToolError;

/// Sessions open at once when [`McpServer::max_sessions`](super::McpServer::max_sessions)
/// is not called.
pub const DEFAULT_MAX_SESSIONS: usize = 256;

/// How long a session may stay unused before it is closed, when
/// [`McpServer::session_idle_timeout`](super::McpServer::session_idle_timeout) is not called.
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest request body accepted, when
/// [`McpServer::max_request_bytes`](super::McpServer::max_request_bytes) is not called.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 * 1024 * 1024;

/// rmcp's [`LocalSessionManager`] that refuses a new session while `max` are open.
pub(super) struct BoundedSessions {
    server: String,
    max: usize,
    inner: LocalSessionManager,
    /// Held while a session is counted and created, so two at once cannot both take the
    /// last place.
    creating: Mutex<()>,
}

impl BoundedSessions {
    pub(super) fn new(server: String, max: usize, idle_timeout: Duration) -> Self {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(idle_timeout);
        // A client that opens a session and never initializes it holds it no longer.
        inner.session_config.init_timeout = Some(idle_timeout);
        Self {
            server,
            max,
            inner,
            creating: Mutex::new(()),
        }
    }

    /// The sessions open now.
    pub(super) async fn open(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// Whether a new session would be refused now.
    pub(super) async fn full(&self) -> bool {
        self.open().await >= self.max
    }

    /// The message a refused session gets.
    pub(super) fn full_message(&self) -> String {
        format!(
            "too many sessions: this server holds at most {} at once; close sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), or retry once idle ones have expired",
            self.max
        )
    }

    fn error(&self, error: impl std::fmt::Display) -> ToolError {
        ToolError::Mcp {
            server: self.server.clone(),
            message: error.to_string(),
        }
    }
}

impl SessionManager for BoundedSessions {
    type Error = ToolError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.creating.lock().await;
        if self.full().await {
            return Err(self.error(self.full_message()));
        }
        self.inner.create_session().await.map_err(|e| self.error(e))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner
            .initialize_session(id, message)
            .await
            .map_err(|e| self.error(e))
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await.map_err(|e| self.error(e))
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.inner
            .close_session(id)
            .await
            .map_err(|e| self.error(e))
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .create_stream(id, message)
            .await
            .map_err(|e| self.error(e))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner
            .accept_message(id, message)
            .await
            .map_err(|e| self.error(e))
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .create_standalone_stream(id)
            .await
            .map_err(|e| self.error(e))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner
            .resume(id, last_event_id)
            .await
            .map_err(|e| self.error(e))
    }
}
