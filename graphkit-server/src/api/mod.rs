//! The HTTP API: routes, shared helpers (body and query parsing, ids), and the middleware
//! for the API key, the body limit and JSON errors.

mod assistants;
mod crons;
mod event_normalizer;
mod event_socket;
mod event_streaming;
pub(crate) mod mcp;
mod runs;
mod spec;
mod state_shape;
mod store;
mod stream;
mod thread_stream;
mod threads;

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use uuid::Uuid;

use self::spec::{Answer, Endpoint};
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
    /// How long a request's whole body may take to arrive (408 and the connection closed).
    pub body_read_timeout: std::time::Duration,
    /// Cancelled when the server stops: open streams and waits end then.
    pub stop: tokio_util::sync::CancellationToken,
    /// Whether `POST /mcp` accepts every `Host` name (see [`mcp`]): the server listens on
    /// an address other than loopback.
    pub mcp_any_host: bool,
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

/// Every served endpoint: the table the router, `GET /openapi.json` and `GET /docs` are
/// built from.
pub(crate) fn endpoints() -> Vec<Endpoint> {
    let mut all = vec![
        Endpoint::get("/ok", "Health check", ok),
        Endpoint::get("/info", "Server version and served graphs", info),
        Endpoint::get("/metrics", "Prometheus metrics", metrics).answers(Answer {
            status: 200,
            description: "the Prometheus text format",
            content: Some("text/plain"),
        }),
        Endpoint::get("/openapi.json", "This OpenAPI document", spec::openapi),
        Endpoint::get("/docs", "The endpoints as an HTML page", spec::docs).answers(Answer {
            status: 200,
            description: "an HTML page",
            content: Some("text/html"),
        }),
        Endpoint::post(
            "/mcp",
            "MCP (streamable HTTP, stateless): the served graphs as tools",
            mcp::serve,
        )
        .body(spec::fields!(
            spec::req("jsonrpc", "string"),
            spec::req("method", "string"),
            spec::opt("id", "any"),
            spec::opt("params", "object"),
        ))
        .answers(Answer {
            status: 200,
            description: "the JSON-RPC answer (202 and no body for a notification)",
            content: Some("application/json"),
        }),
    ];
    all.extend(assistants::endpoints());
    all.extend(threads::endpoints());
    all.extend(runs::endpoints());
    all.extend(crons::endpoints());
    all.extend(store::endpoints());
    all.extend(thread_stream::endpoints());
    all.extend(event_streaming::endpoints(axum::routing::get(
        event_socket::socket,
    )));
    all
}

/// The router with every endpoint and the middleware. Besides the served [`endpoints`],
/// it routes only refusals: paths of the reference API this server does not serve, each
/// answered with a 4xx that names it.
pub(crate) fn router(api: Api) -> Router {
    let limit = api.body_limit;
    let served = endpoints()
        .into_iter()
        .fold(Router::new(), |router, e| router.route(e.path, e.handler));
    NOT_SERVED
        .iter()
        .fold(served, |router, &(path, what)| {
            router.route(path, any(move || async move { not_served(what) }))
        })
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
        "flags": {"assistants": true, "crons": true, "langsmith": false},
        "metadata": {},
    }))
    .into_response()
}

/// `GET /metrics`: Prometheus text (see [`crate::metrics`]).
async fn metrics(State(api): State<Api>) -> Result<Response> {
    let runs = api.backend().count_runs_by_status().await?;
    let (followers, followed_runs) = api.backend().feeds().followers();
    let text = crate::metrics::render(&crate::metrics::Snapshot {
        runs: &runs,
        durations: &api.shared.run_durations,
        followers,
        followed_runs,
    });
    Ok((
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        )],
        text,
    )
        .into_response())
}

/// Paths of the reference API this server does not serve, each with what it is there.
const NOT_SERVED: &[(&str, &str)] = &[
    (
        "/a2a/{assistant_id}",
        "the A2A (agent-to-agent) protocol (/a2a/{assistant_id})",
    ),
    (
        "/a2a/{assistant_id}/",
        "the A2A (agent-to-agent) protocol (/a2a/{assistant_id})",
    ),
    (
        "/a2a/{assistant_id}/.well-known/agent-card.json",
        "the A2A agent card (/a2a/{assistant_id}/.well-known/agent-card.json)",
    ),
    (
        "/a2a/{assistant_id}/.well-known/agent.json",
        "the A2A agent card (/a2a/{assistant_id}/.well-known/agent.json)",
    ),
    (
        "/.well-known/agent-card.json",
        "the A2A agent card (/.well-known/agent-card.json)",
    ),
    ("/profile", "profiling of the server process (GET /profile)"),
    (
        "/ui/{graph_id}",
        "generative UI components (POST /ui/{graph_id})",
    ),
];

/// The 404 of a path in [`NOT_SERVED`]: it names the feature, so a client learns it is
/// missing on purpose rather than mistyped.
fn not_served(what: &str) -> ServerError {
    ServerError::NotFound(format!(
        "{what} is not served by graphkit-server; see docs/server.md for the API subset it serves"
    ))
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

/// The API key check, reading the body, and JSON bodies for the errors axum answers itself
/// (a bad path, a wrong method): every error the clients see is `{"detail": ...}`.
///
/// The body is read whole here, before any handler runs, within the size limit and the read
/// timeout. So every answer, an error included, leaves the connection with nothing unread on
/// it (a handler that answers without its body, like the 404 of an unknown route, used to
/// leave it there, and the connection then closed under the client's next request); and an
/// answer given without reading the body (401, 408, 413) says `Connection: close` and
/// closes it.
async fn guard(State(api): State<Api>, request: Request, next: Next) -> Response {
    if let Some(key) = &api.api_key {
        let given = request
            .headers()
            .get("x-api-key")
            .and_then(|v| v.to_str().ok());
        if !given.is_some_and(|given| same_key(given.as_bytes(), key.as_bytes())) {
            let unread = !request.body().is_end_stream();
            let response = ServerError::Unauthorized.into_response();
            return if unread { closing(response) } else { response };
        }
    }
    if let Some(refusal) = nul_in_uri(request.uri()) {
        let unread = !request.body().is_end_stream();
        let response = refusal.into_response();
        return if unread { closing(response) } else { response };
    }
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > u64::try_from(api.body_limit).unwrap_or(u64::MAX)) {
        return closing(
            ServerError::PayloadTooLarge {
                limit: api.body_limit,
            }
            .into_response(),
        );
    }
    let body = match read_body(body, api.body_limit, api.body_read_timeout).await {
        Ok(body) => body,
        Err(error) => return closing(error.into_response()),
    };
    let response = next.run(Request::from_parts(parts, Body::from(body))).await;
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

/// The whole request body, at most `limit` bytes, arrived within `timeout`; else a 413, a
/// 408, or a 400 when the client broke off.
async fn read_body(body: Body, limit: usize, timeout: std::time::Duration) -> Result<Bytes> {
    use futures::StreamExt;
    let read = async {
        let mut chunks = body.into_data_stream();
        let mut whole: Option<Bytes> = None;
        let mut joined: Vec<u8> = Vec::new();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| {
                ServerError::BadRequest(format!("the request body could not be read: {e}"))
            })?;
            let so_far = whole.as_ref().map_or(joined.len(), Bytes::len);
            if so_far + chunk.len() > limit {
                return Err(ServerError::PayloadTooLarge { limit });
            }
            // One chunk (the common case) is kept as it came; more are joined.
            match whole.take() {
                None if joined.is_empty() => whole = Some(chunk),
                None => joined.extend_from_slice(&chunk),
                Some(first) => {
                    joined.extend_from_slice(&first);
                    joined.extend_from_slice(&chunk);
                }
            }
        }
        Ok(whole.unwrap_or_else(|| Bytes::from(joined)))
    };
    tokio::time::timeout(timeout, read)
        .await
        .unwrap_or(Err(ServerError::BodyTimeout { timeout }))
}

/// `response` with `Connection: close`: the server closes the connection after it, and the
/// client knows not to send another request on it.
fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Parses a JSON body (an empty body is `{}`), with a 422 that says where it is wrong: the
/// position of a syntax error, or the field (`after_seconds`, `input.messages[0]`) whose
/// value has the wrong type or cannot be stored (see [`unstorable`]).
pub(crate) fn parse_body<T: DeserializeOwned>(body: &Bytes) -> Result<T> {
    let text: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    let value: Value =
        serde_json::from_slice(text).map_err(|e| ServerError::MalformedBody(e.to_string()))?;
    if let Some((at, why)) = unstorable(&value) {
        let place = if at.is_empty() {
            "the body".to_owned()
        } else {
            format!("`{at}`")
        };
        return Err(ServerError::Validation(format!("{place} {why}")));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            ServerError::MalformedBody(e.inner().to_string())
        } else {
            ServerError::MalformedBody(format!("`{path}`: {}", e.inner()))
        }
    })
}

/// The largest magnitude of a number in a body. PostgreSQL keeps JSON numbers as exact
/// decimals and gives one near `f64::MAX` back as 309 digits, which no longer reads as a
/// number; every backend refuses the same numbers.
const MAX_NUMBER: f64 = 1e300;

/// Where in `value` something sits that the backends cannot all store and give back (a NUL
/// character, U+0000, in a string or key; a number beyond [`MAX_NUMBER`]), as a path
/// (`metadata.a`, `input.messages[0].content`; empty for the value itself) and why.
fn unstorable(value: &Value) -> Option<(String, &'static str)> {
    const NUL: &str = "holds a NUL character (U+0000), which the server does not store; remove it";
    const HUGE: &str =
        "is a number beyond 1e300 either way, which the server does not store; send a smaller one";
    match value {
        Value::String(s) => s.contains('\0').then(|| (String::new(), NUL)),
        Value::Number(n) => n
            .as_f64()
            .is_some_and(|f| f.abs() > MAX_NUMBER)
            .then(|| (String::new(), HUGE)),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            unstorable(item).map(|(rest, why)| (format!("[{i}]{}", dotted(&rest)), why))
        }),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            if key.contains('\0') {
                return Some((key.replace('\0', "\\0"), NUL));
            }
            unstorable(item).map(|(rest, why)| (format!("{key}{}", dotted(&rest)), why))
        }),
        _ => None,
    }
}

fn dotted(rest: &str) -> String {
    if rest.is_empty() || rest.starts_with('[') {
        rest.to_owned()
    } else {
        format!(".{rest}")
    }
}

/// The 422 for a NUL character in `place` (a query key, the path). Refused everywhere,
/// because PostgreSQL cannot store it in text or JSONB, and both backends must give the
/// same answer.
fn nul_refusal(place: &str) -> ServerError {
    ServerError::Validation(format!(
        "{place} holds a NUL character (U+0000), which the server does not store; remove it"
    ))
}

/// A 422 for a path or query that holds a NUL character (`%00`), naming where.
fn nul_in_uri(uri: &axum::http::Uri) -> Option<ServerError> {
    if uri.path().contains("%00") {
        return Some(nul_refusal("the path"));
    }
    query_pairs(uri.query())
        .into_iter()
        .find(|(k, v)| k.contains('\0') || v.contains('\0'))
        .map(|(k, _)| nul_refusal(&format!("`{}`", k.replace('\0', "\\0"))))
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

/// A boolean query value: `true`, `1`, `yes` are true; `false`, `0`, `no` and an absent or
/// empty value are false; anything else is a 422 naming `key`.
pub(crate) fn query_bool(pairs: &[(String, String)], key: &str) -> Result<bool> {
    let given = query_value(pairs, key).unwrap_or_default();
    match given.to_ascii_lowercase().as_str() {
        "" | "false" | "0" | "no" => Ok(false),
        "true" | "1" | "yes" => Ok(true),
        _ => Err(ServerError::Validation(format!(
            "{key} must be true or false, not {given:?}"
        ))),
    }
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

/// A time to live in minutes (`None` when absent or null): a number above 0 and at most a
/// century, or a 422 naming `field`.
pub(crate) fn ttl_minutes(field: &str, value: Option<&Value>) -> Result<Option<f64>> {
    const CENTURY: f64 = 100.0 * 366.0 * 24.0 * 60.0;
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_f64() {
            Some(m) if m > 0.0 && m <= CENTURY => Ok(Some(m)),
            _ => Err(ServerError::Validation(format!(
                "`{field}` must be a number of minutes above 0 and at most a century, not {v}"
            ))),
        },
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

/// `sort_order` from a search body: `true` for `"asc"`, `false` for `"desc"` or when absent;
/// anything else is a 422 naming both values.
pub(crate) fn ascending_of(body: &Map<String, Value>) -> Result<bool> {
    match text_field(body, "sort_order")? {
        None | Some("desc") => Ok(false),
        Some("asc") => Ok(true),
        Some(other) => Err(ServerError::Validation(format!(
            "sort_order must be \"asc\" or \"desc\", not {other:?}"
        ))),
    }
}

/// A whole number from 0 (`None` when absent or null), or a 422 naming `field`: a negative,
/// fractional, huge (`1e30`) or non-numeric value is refused, never replaced by a default.
pub(crate) fn count_field(field: &str, value: Option<&Value>) -> Result<Option<usize>> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| count_refusal(field, &v.to_string())),
    }
}

/// A whole number from 0 in the query (`default` when absent), or a 422 naming `key`; at
/// most 10,000 when `key` is `limit`.
pub(crate) fn query_count(pairs: &[(String, String)], key: &str, default: usize) -> Result<usize> {
    let n = match query_value(pairs, key) {
        None => default,
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| count_refusal(key, &format!("{v:?}")))?,
    };
    Ok(if key == "limit" { n.min(10_000) } else { n })
}

fn count_refusal(field: &str, given: &str) -> ServerError {
    ServerError::Validation(format!(
        "{field} must be a whole number from 0, not {given}"
    ))
}

/// A string field of a body (`None` when absent or null), or a 422 naming `key`.
pub(crate) fn text_field<'a>(body: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ServerError::Validation(format!(
            "`{key}` must be a string, not {other}"
        ))),
    }
}

/// An object field of a body (`None` when absent or null), or a 422 naming `key`.
pub(crate) fn object_field(
    body: &Map<String, Value>,
    key: &str,
) -> Result<Option<Map<String, Value>>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m.clone())),
        Some(_) => Err(ServerError::Validation(format!(
            "`{key}` must be an object"
        ))),
    }
}

/// Each of `items` as JSON with only the fields `select` names (`None`: all of them).
/// `select` is what a client sent (a body's list, or the query's values); a name that is
/// not one of `fields` is a 422 that lists them, never silently dropped.
pub(crate) fn select_fields<T: serde::Serialize>(
    items: &[T],
    select: Option<&[String]>,
    fields: &[&str],
) -> Result<Vec<Value>> {
    if let Some(bad) = select
        .unwrap_or_default()
        .iter()
        .find(|f| !fields.contains(&f.as_str()))
    {
        return Err(ServerError::Validation(format!(
            "`select` names {bad:?}, which is not a field; choose from {}",
            fields.join(", ")
        )));
    }
    items
        .iter()
        .map(|item| {
            let value = serde_json::to_value(item)
                .map_err(|e| ServerError::backend("encode the response", e))?;
            Ok(match (select, value) {
                (Some(select), Value::Object(mut all)) => Value::Object(
                    select
                        .iter()
                        .filter_map(|f| all.remove_entry(f.as_str()))
                        .collect(),
                ),
                (_, value) => value,
            })
        })
        .collect()
}

/// `select` of a body: `None` when absent, null or empty; a list of field names; anything
/// else a 422 (the names are checked by [`select_fields`]).
pub(crate) fn select_of(body: &Map<String, Value>) -> Result<Option<Vec<String>>> {
    let wrong = || ServerError::Validation("`select` must be a list of field names".into());
    match body.get("select") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) if items.is_empty() => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned).ok_or_else(wrong))
            .collect::<Result<Vec<_>>>()
            .map(Some),
        Some(_) => Err(wrong()),
    }
}

/// `select` of a query: its values, repeated (`select=a&select=b`, as Python sends them) or
/// one JSON list (`select=["a","b"]`); `None` when there are none.
pub(crate) fn query_select(pairs: &[(String, String)]) -> Result<Option<Vec<String>>> {
    let mut names = Vec::new();
    for (_, value) in pairs.iter().filter(|(k, v)| k == "select" && !v.is_empty()) {
        match serde_json::from_str::<Value>(value) {
            Ok(Value::Array(items)) => {
                for item in items {
                    let name = item.as_str().ok_or_else(|| {
                        ServerError::Validation("`select` must be a list of field names".into())
                    })?;
                    names.push(name.to_owned());
                }
            }
            _ => names.push(value.clone()),
        }
    }
    Ok((!names.is_empty()).then_some(names))
}
