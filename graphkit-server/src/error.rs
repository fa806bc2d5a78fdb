//! [`ServerError`]: every failure of the server, with the HTTP status the official clients
//! expect and a JSON body `{"detail": "..."}`.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// What went wrong while serving a request, running a run, or talking to the backend.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A thread, run, assistant, checkpoint or item does not exist (404).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state, e.g. a run is in flight and the
    /// multitask strategy is `reject`, or a thread id is taken (409).
    #[error("{0}")]
    Conflict(String),
    /// The request is well-formed JSON but its values do not fit (422): a non-UUID id, an
    /// input that does not match the graph's state type, an unknown stream mode.
    #[error("{0}")]
    Validation(String),
    /// The request cannot be served as asked (400), e.g. a resume without a thread.
    #[error("{0}")]
    BadRequest(String),
    /// The body is not JSON, or not the JSON this endpoint takes (422 like the reference server;
    /// the message names the position).
    #[error("malformed request body: {0}")]
    MalformedBody(String),
    /// The body is larger than the server accepts (413).
    #[error("request body too large: the limit is {limit} bytes; send less data per request")]
    PayloadTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// The request body did not arrive in time (408; the connection is closed): a stalled
    /// client, or one that sent less than its `Content-Length`.
    #[error(
        "the request body did not arrive within {} s: send the whole body at once, as many bytes as Content-Length says",
        timeout.as_secs_f64()
    )]
    BodyTimeout {
        /// The configured body read timeout.
        timeout: std::time::Duration,
    },
    /// An API key is configured and the request did not carry it in `x-api-key` (401).
    #[error(
        "missing or wrong API key: send the key the server was started with in the `x-api-key` header"
    )]
    Unauthorized,
    /// A graph operation failed (its message says what to do).
    #[error(transparent)]
    Graph(#[from] graphkit::Error),
    /// A checkpointer or store failed, or refused a key (its message says what to do).
    #[error(transparent)]
    Storage(#[from] graphkit::error::StorageError),
    /// A worker's write for a run was refused: its claim's lease token is no longer the
    /// run's (the lease ran out and another attempt took the run, or the run ended or was
    /// deleted). The worker stops the run's execution and writes nothing more (409 if it
    /// ever reaches a client).
    #[error(
        "run {run_id}: this worker's lease is lost (another attempt took the run over, or it ended or was deleted); it stopped and wrote nothing more"
    )]
    LeaseLost {
        /// The run.
        run_id: uuid::Uuid,
    },
    /// The storage backend failed; retry, or check that the database is reachable.
    #[error("storage backend: {0}")]
    Backend(String),
    /// Starting the server failed (binding the address, opening the database).
    #[error("could not start the server: {0}")]
    Startup(String),
}

impl ServerError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) | Self::LeaseLost { .. } => StatusCode::CONFLICT,
            Self::Validation(_) | Self::MalformedBody(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::BodyTimeout { .. } => StatusCode::REQUEST_TIMEOUT,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Graph(error) => graph_error_status(error),
            Self::Storage(error) => storage_error_status(error),
            Self::Backend(_) | Self::Startup(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether this is a refusal of a write whose lease was lost ([`Self::LeaseLost`], or
    /// a fenced checkpoint write), as opposed to a failure.
    pub fn is_lease_lost(&self) -> bool {
        use graphkit::error::StorageError;
        match self {
            Self::LeaseLost { .. } | Self::Storage(StorageError::Fenced { .. }) => true,
            Self::Graph(error) => lost_lease(error),
            _ => false,
        }
    }

    /// A backend error from any displayable cause.
    pub fn backend(doing: &str, error: impl std::fmt::Display) -> Self {
        Self::Backend(format!(
            "{doing}: {}",
            without_source_position(&error.to_string())
        ))
    }
}

/// Whether a graph stopped because its fenced checkpointer refused a write (directly, or
/// inside a node or task).
pub(crate) fn lost_lease(error: &graphkit::Error) -> bool {
    use graphkit::Error as E;
    match error {
        E::Storage(graphkit::error::StorageError::Fenced { .. }) => true,
        E::NodeFailed { source, .. } | E::TaskFailed { source, .. } => {
            source.downcast_ref::<E>().is_some_and(lost_lease)
        }
        _ => false,
    }
}

/// Graph errors caused by the request map to 4xx, the rest to 500.
fn graph_error_status(error: &graphkit::Error) -> StatusCode {
    use graphkit::Error as E;
    match error {
        E::CheckpointNotFound { .. } => StatusCode::NOT_FOUND,
        E::ThreadBusy(_) => StatusCode::CONFLICT,
        E::UnknownNode { .. }
        | E::AmbiguousUpdate { .. }
        | E::InvalidRunInput(_)
        | E::InvalidRunConfig(_)
        | E::BadResume { .. }
        | E::InputType { .. }
        | E::Serde { .. }
        | E::SecondOverwrite { .. }
        | E::RemovedKeyNotFound { .. }
        | E::InvalidConcurrentUpdate { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        E::Storage(error) => storage_error_status(error),
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A refused store key is the request's fault (422); the rest is the server's (500).
fn storage_error_status(error: &graphkit::error::StorageError) -> StatusCode {
    match error {
        graphkit::error::StorageError::InvalidStoreKey(_) => StatusCode::UNPROCESSABLE_ENTITY,
        graphkit::error::StorageError::Fenced { .. } => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = serde_json::json!({ "detail": self.to_string() });
        (status, axum::Json(body)).into_response()
    }
}

/// The crate's result type.
///
/// Only at this path (`graphkit_server::error::Result`), not at the crate root: `use graphkit_server::*` keeps the
/// prelude's `Result`, and glob imports of several graphkit crates do not collide.
pub type Result<T, E = ServerError> = std::result::Result<T, E>;

/// A database error as a person reads it: the database's own message and its code
/// (`unable to open database file (code 14)`), without sqlx's wrapping or a C source
/// position.
pub(crate) fn database_error(error: &sqlx::Error) -> String {
    let text = match error {
        sqlx::Error::Database(db) => match db.code() {
            Some(code) => format!("{} (code {code})", db.message()),
            None => db.message().to_owned(),
        },
        other => other.to_string(),
    };
    without_source_position(&text)
}

/// `text` without the C source positions databases put in some messages (SQLite's `cannot
/// open file at line 768 of [1b37c146ee]`, PostgreSQL's `at line 1234`): they name a line
/// of the database's own code, which tells the reader nothing.
pub(crate) fn without_source_position(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" at line ") {
        let after = &rest[at + " at line ".len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
            continue;
        }
        out.push_str(&rest[..at]);
        rest = &after[digits..];
        // SQLite adds the source's check-in: ` of [1b37c146ee]`.
        if let Some(tail) = rest.strip_prefix(" of [")
            && let Some(end) = tail.find(']')
        {
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_positions_are_cut_from_database_messages() {
        assert_eq!(
            without_source_position("cannot open file at line 768 of [1b37c146ee]: /x.db"),
            "cannot open file: /x.db"
        );
        assert_eq!(
            without_source_position("database \"x\" does not exist at line 1234"),
            "database \"x\" does not exist"
        );
        // Text that only looks similar stays.
        assert_eq!(
            without_source_position("stopped at line end; at line x"),
            "stopped at line end; at line x"
        );
        let err = ServerError::backend("open", "disk I/O error at line 42 of [abc]");
        assert_eq!(err.to_string(), "storage backend: open: disk I/O error");
    }
}
