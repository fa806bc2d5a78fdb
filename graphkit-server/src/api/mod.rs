//! The HTTP API: routes, shared helpers (body and query parsing, ids), and the middleware
//! for the API key, the body limit and JSON errors.

mod assistants;
mod runs;
mod store;
mod stream;
mod threads;

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::de::DeserializeOwned;
use serde_json::Value;
use uuid::Uuid;

use crate::backend::{AssistantRecord, Backend};
use crate::error::{Result, ServerError};
use crate::ids::{parse_uuid, system_assistant_id};
use crate::worker::Shared;

/// What every handler gets.
#[derive(Clone)]
pub(crate) struct Api {
    pub shared: Arc<Shared>,
    pub api_key: Option<Arc<str>>,
    pub body_limit: usize,
    /// Cancelled when the server stops: open streams and waits end then.
    pub stop: tokio_util::sync::CancellationToken,
}

impl Api {
    pub(crate) fn backend(&self) -> &Arc<dyn Backend> {
        &self.shared.backend
    }

    /// An assistant by UUID or by graph id (its system assistant).
    pub(crate) async fn assistant(&self, id: &str) -> Result<AssistantRecord> {
        let uuid = match Uuid::try_parse(id) {
            Ok(uuid) => uuid,
            Err(_) if self.shared.graphs.contains_key(id) => system_assistant_id(id),
            Err(_) => {
                return Err(ServerError::NotFound(format!(
                    "Assistant '{id}' not found: it is neither an assistant id nor a served graph ({})",
                    self.shared.graph_ids().join(", ")
                )));
            }
        };
        self.backend()
            .get_assistant(uuid)
            .await?
            .ok_or_else(|| ServerError::NotFound(format!("Assistant '{id}' not found")))
    }
}

/// The router with every endpoint and the middleware.
pub(crate) fn router(api: Api) -> Router {
    let limit = api.body_limit;
    Router::new()
        .route("/ok", get(ok))
        .route("/info", get(info))
        .merge(assistants::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(store::routes())
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(api.clone(), guard))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(api)
}

async fn ok() -> Response {
    axum::Json(serde_json::json!({"ok": true})).into_response()
}

async fn info(State(api): State<Api>) -> Response {
    axum::Json(serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "server": "graphkit-server",
        "graphs": api.shared.graph_ids(),
        "flags": {"assistants": true, "crons": false, "langsmith": false},
        "metadata": {},
    }))
    .into_response()
}

async fn not_found(request: Request) -> ServerError {
    ServerError::NotFound(format!(
        "no endpoint {} {}; see docs/server.md for the API subset served",
        request.method(),
        request.uri().path()
    ))
}

/// Whether `given` is the server's key, in time that does not depend on where the two first
/// differ (a plain `==` stops at the first wrong byte, which lets a client time its way to
/// the key). The length may show; the key's bytes do not.
fn same_key(given: &[u8], key: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    given.len() == key.len() && bool::from(given.ct_eq(key))
}

/// The API key check, and JSON bodies for the errors axum answers itself (a body over
/// the limit, a bad path): every error the clients see is `{"detail": ...}`.
async fn guard(State(api): State<Api>, request: Request, next: Next) -> Response {
    if let Some(key) = &api.api_key {
        let given = request
            .headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok());
        if !given.is_some_and(|given| same_key(given.as_bytes(), key.as_bytes())) {
            return ServerError::Unauthorized.into_response();
        }
    }
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return ServerError::PayloadTooLarge {
            limit: api.body_limit,
        }
        .into_response();
    }
    let body = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let detail = String::from_utf8_lossy(&body).trim().to_owned();
    let detail = if detail.is_empty() {
        status.canonical_reason().unwrap_or("error").to_owned()
    } else {
        detail
    };
    (status, axum::Json(serde_json::json!({ "detail": detail }))).into_response()
}

/// Parses a JSON body (an empty body is `{}`), with a 422 that says where it is wrong.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T> {
    let text: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    serde_json::from_slice(text).map_err(|e| ServerError::MalformedBody(e.to_string()))
}

/// A path id that must be a UUID (422 otherwise, as the reference server).
pub(crate) fn uuid_param(what: &str, value: &str) -> Result<Uuid> {
    parse_uuid(what, value)
}

/// The query string as (key, value) pairs, repeated keys kept.
pub(crate) fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// The last value of a query key.
pub(crate) fn query_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A boolean query value: `true`, `1` and `yes` are true.
pub(crate) fn query_bool(pairs: &[(String, String)], key: &str) -> bool {
    query_value(pairs, key)
        .is_some_and(|v| matches!(v.to_ascii_lowercase().as_str(), "true" | "1" | "yes"))
}

/// A JSON response with a status.
pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => Response::builder()
            .status(status)
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(Body::from(body))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Err(e) => ServerError::backend("encode the response", e).into_response(),
    }
}

/// 204 No Content.
pub(crate) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// A 422 when a request asks for something this server does not do yet (`field` given and
/// not null), so that it is never silently ignored: `what` says what would not happen.
pub(crate) fn refuse_unsupported(field: &str, value: Option<&Value>, what: &str) -> Result<()> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(_) => Err(ServerError::Validation(format!(
            "`{field}` is not supported by this server yet ({what}); leave it out"
        ))),
    }
}

/// `limit` from a body value (default `default` when absent or null), at most 10,000;
/// anything but a whole number from 0 is a 422 that names the field.
pub(crate) fn limit_of(value: Option<&Value>, default: usize) -> Result<usize> {
    Ok(count_field("limit", value)?.unwrap_or(default).min(10_000))
}

/// `offset` from a body value (0 when absent or null); validated as [`limit_of`] is.
pub(crate) fn offset_of(value: Option<&Value>) -> Result<usize> {
    Ok(count_field("offset", value)?.unwrap_or(0))
}

/// A whole number from 0 (`None` when absent or null), or a 422 naming `field`: a negative,
/// fractional, huge (`1e30`) or non-numeric value is refused, never replaced by a default.
fn count_field(field: &str, value: Option<&Value>) -> Result<Option<usize>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| {
                ServerError::Validation(format!("{field} must be a whole number from 0, not {v}"))
            }),
    }
}
