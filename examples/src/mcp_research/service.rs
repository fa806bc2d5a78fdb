//! The HTTP service (axum): `POST /research` streams a session's markers as Server-Sent
//! Events, `GET /research/status/{session_id}` reports where it stands,
//! `GET /research/tools` lists the MCP tools, and `GET /` serves the page that shows a run
//! live ([`super::web`]). Build it with [`router`].
//!
//! Each marker is one SSE event whose `data:` is the marker's text; the markdown report
//! is one event with one `data:` line per markdown line. The session id comes in the
//! `X-Session-Id` header and in `RESEARCH_START:{"session_id":…}`. A client that goes
//! away does not stop the run.

use std::convert::Infallible;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::engine::{Engine, ResearchRequest};
use crate::shared::ExampleError;

/// The header carrying the session id of a `POST /research` answer.
pub(crate) const SESSION_HEADER: &str = "x-session-id";

/// The service's routes over `engine`: `POST /research`,
/// `GET /research/status/{session_id}`, `GET /research/tools`, and the web page
/// (`GET /`, `/app.js`, `/style.css`).
///
/// ```no_run
/// # async fn run(engine: graphkit_examples::mcp_research::Engine) -> std::io::Result<()> {
/// let app = graphkit_examples::mcp_research::service::router(engine);
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
/// axum::serve(listener, app).await
/// # }
/// ```
pub fn router(engine: Engine) -> Router {
    Router::new()
        .route("/research", post(research))
        .route("/research/status/{session_id}", get(status))
        .route("/research/tools", get(tools))
        .with_state(engine)
        .merge(super::web::routes())
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({ "error": message.into() }))).into_response()
}

async fn research(State(engine): State<Engine>, body: Bytes) -> Response {
    let request: ResearchRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("the body must be a JSON object with a `query` string: {e}"),
            );
        }
    };
    let session = match engine.start(request).await {
        Ok(session) => session,
        Err(e @ (ExampleError::Input { .. } | ExampleError::Model(_))) => {
            return error(StatusCode::BAD_REQUEST, e.to_string());
        }
        Err(e @ ExampleError::SessionBusy(_)) => {
            return error(StatusCode::CONFLICT, e.to_string());
        }
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let id = session.session_id.clone();
    let events = futures::stream::unfold(session.markers, |mut markers| async move {
        let marker = markers.recv().await?;
        let event: Result<Event, Infallible> = Ok(Event::default().data(marker.to_line()));
        Some((event, markers))
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response();
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

async fn status(State(engine): State<Engine>, Path(session_id): Path<String>) -> Response {
    match engine.status(&session_id).await {
        Ok(Some(status)) => axum::Json(status).into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            format!("no research session `{session_id}`; start one with POST /research"),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn tools(State(engine): State<Engine>) -> Response {
    match engine.source().list_tools().await {
        Ok(tools) => axum::Json(json!({
            "tools": tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description}))
                .collect::<Vec<_>>()
        }))
        .into_response(),
        Err(e) => error(
            StatusCode::BAD_GATEWAY,
            format!("cannot list the MCP tools: {e}"),
        ),
    }
}

/// Serves `router(engine)` on `listener` until the process ends.
///
/// # Errors
/// [`ExampleError::Io`] when serving fails.
pub async fn serve(engine: Engine, listener: tokio::net::TcpListener) -> Result<(), ExampleError> {
    let address = listener
        .local_addr()
        .map_or_else(|_| "?".into(), |a| a.to_string());
    axum::serve(listener, router(engine))
        .await
        .map_err(|e| ExampleError::io("serve on", std::path::Path::new(&address), e))
}
