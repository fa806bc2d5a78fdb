//! The one table of served endpoints: each [`Endpoint`] is a method, a path, its handler and
//! what the OpenAPI document says of it. The router is built from this table and the
//! document (`GET /openapi.json`) and the page (`GET /docs`) are drawn from it, so the
//! three cannot drift apart.

use std::sync::LazyLock;

use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, on};
use serde_json::{Map, Value, json};

use super::{Api, json_response};

/// A named field of a query or a body, with its JSON type (`string`, `integer`, `number`,
/// `boolean`, `object`, `array`, or `any`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub name: &'static str,
    pub kind: &'static str,
    pub required: bool,
}

/// An optional field.
pub(crate) const fn opt(name: &'static str, kind: &'static str) -> Field {
    Field {
        name,
        kind,
        required: false,
    }
}

/// A required field.
pub(crate) const fn req(name: &'static str, kind: &'static str) -> Field {
    Field {
        name,
        kind,
        required: true,
    }
}

/// A `&'static [Field]` from a list of [`opt`] and [`req`] calls (which a plain `&[...]`
/// would not promote to a static).
macro_rules! fields {
    ($($field:expr),* $(,)?) => {{
        const FIELDS: &[$crate::api::spec::Field] = &[$($field),*];
        FIELDS
    }};
}
pub(crate) use fields;

/// What an endpoint's request body is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BodyShape {
    /// No body.
    None,
    /// A JSON object with these fields.
    Object(&'static [Field]),
    /// A JSON list of objects with these fields.
    ListOf(&'static [Field]),
}

/// What an endpoint answers on success: the status, a description, and the content type
/// (`None`: no body).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    pub status: u16,
    pub description: &'static str,
    pub content: Option<&'static str>,
}

/// A JSON answer (200) described as `what`.
pub(crate) const fn json(what: &'static str) -> Answer {
    Answer {
        status: 200,
        description: what,
        content: Some("application/json"),
    }
}

/// 204, no body.
pub(crate) const NO_CONTENT: Answer = Answer {
    status: 204,
    description: "done; no body",
    content: None,
};

/// A server-sent event stream (200).
pub(crate) const SSE: Answer = Answer {
    status: 200,
    description: "the run's events as server-sent events",
    content: Some("text/event-stream"),
};

/// One served endpoint.
pub(crate) struct Endpoint {
    pub method: Method,
    /// The axum path, which is also the OpenAPI path template (`/threads/{id}`).
    pub path: &'static str,
    pub summary: &'static str,
    pub query: &'static [Field],
    pub body: BodyShape,
    pub answer: Answer,
    pub handler: MethodRouter<Api>,
}

impl Endpoint {
    fn with<H: Handler<T, Api>, T: 'static>(
        method: Method,
        filter: MethodFilter,
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self {
            method,
            path,
            summary,
            query: &[],
            body: BodyShape::None,
            answer: json("JSON"),
            handler: on(filter, handler),
        }
    }

    /// `GET path`, served by `handler`; it answers JSON unless [`Endpoint::answers`] says
    /// otherwise.
    pub(crate) fn get<H: Handler<T, Api>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self::with(Method::GET, MethodFilter::GET, path, summary, handler)
    }

    /// `POST path`, as [`Endpoint::get`].
    pub(crate) fn post<H: Handler<T, Api>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self::with(Method::POST, MethodFilter::POST, path, summary, handler)
    }

    /// `PUT path`, as [`Endpoint::get`].
    pub(crate) fn put<H: Handler<T, Api>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self::with(Method::PUT, MethodFilter::PUT, path, summary, handler)
    }

    /// `PATCH path`, as [`Endpoint::get`].
    pub(crate) fn patch<H: Handler<T, Api>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self::with(Method::PATCH, MethodFilter::PATCH, path, summary, handler)
    }

    /// `DELETE path`, as [`Endpoint::get`].
    pub(crate) fn delete<H: Handler<T, Api>, T: 'static>(
        path: &'static str,
        summary: &'static str,
        handler: H,
    ) -> Self {
        Self::with(Method::DELETE, MethodFilter::DELETE, path, summary, handler)
    }

    /// Its query parameters.
    pub(crate) fn query(mut self, fields: &'static [Field]) -> Self {
        self.query = fields;
        self
    }

    /// Its body: an object with `fields`.
    pub(crate) fn body(mut self, fields: &'static [Field]) -> Self {
        self.body = BodyShape::Object(fields);
        self
    }

    /// Its body: a list of objects with `fields`.
    pub(crate) fn list_body(mut self, fields: &'static [Field]) -> Self {
        self.body = BodyShape::ListOf(fields);
        self
    }

    /// What it answers on success.
    pub(crate) fn answers(mut self, answer: Answer) -> Self {
        self.answer = answer;
        self
    }
}

fn schema_of(kind: &str) -> Value {
    match kind {
        "any" => json!({}),
        kind => json!({ "type": kind }),
    }
}

fn object_schema(fields: &[Field]) -> Value {
    let properties: Map<String, Value> = fields
        .iter()
        .map(|f| (f.name.to_owned(), schema_of(f.kind)))
        .collect();
    let required: Vec<&str> = fields
        .iter()
        .filter(|f| f.required)
        .map(|f| f.name)
        .collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// The names in `{...}` of a path template.
fn path_params(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
}

fn operation(endpoint: &Endpoint) -> Value {
    let mut parameters: Vec<Value> = path_params(endpoint.path)
        .map(|name| {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}})
        })
        .collect();
    parameters.extend(endpoint.query.iter().map(|f| {
        json!({"name": f.name, "in": "query", "required": f.required, "schema": schema_of(f.kind)})
    }));
    let mut op = json!({
        "summary": endpoint.summary,
        "operationId": operation_id(endpoint),
        "parameters": parameters,
    });
    let body = match endpoint.body {
        BodyShape::None => None,
        BodyShape::Object(fields) => Some(object_schema(fields)),
        BodyShape::ListOf(fields) => Some(json!({"type": "array", "items": object_schema(fields)})),
    };
    if let Some(schema) = body {
        op["requestBody"] = json!({
            "required": true,
            "content": {"application/json": {"schema": schema}},
        });
    }
    let answer = endpoint.answer;
    let mut response = json!({ "description": answer.description });
    if let Some(content) = answer.content {
        response["content"] = json!({ content: {"schema": {}} });
    }
    op["responses"] = json!({
        answer.status.to_string(): response,
        "4XX": {"description": "refused: `{\"detail\": \"...\"}` says why"},
    });
    op
}

/// A unique id per operation: the method and the path's words (`post_threads_id_runs`).
fn operation_id(endpoint: &Endpoint) -> String {
    let words: Vec<&str> = endpoint
        .path
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    format!(
        "{}_{}",
        endpoint.method.as_str().to_ascii_lowercase(),
        words.join("_")
    )
}

/// The OpenAPI 3.1 document of `endpoints`.
pub(crate) fn document(endpoints: &[Endpoint]) -> Value {
    let mut paths = Map::new();
    for endpoint in endpoints {
        let item = paths
            .entry(endpoint.path.to_owned())
            .or_insert_with(|| json!({}));
        item[endpoint.method.as_str().to_ascii_lowercase()] = operation(endpoint);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "graphkit-server",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The LangGraph Platform (Agent Server) API subset this server serves; \
                            see docs/server.md. Errors are JSON {\"detail\": \"...\"}.",
        },
        "paths": paths,
    })
}

/// The document of the server's endpoints, built once.
static DOCUMENT: LazyLock<Value> = LazyLock::new(|| document(&super::endpoints()));

/// `GET /openapi.json`.
pub(super) async fn openapi() -> Response {
    json_response(StatusCode::OK, &*DOCUMENT)
}

/// `GET /docs`: a self-contained HTML page (no script, no external resource) listing the
/// endpoints of the document.
pub(super) async fn docs() -> Response {
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        page(&DOCUMENT),
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The names (and types) of an operation's parameters and body fields, for the page.
fn inputs(op: &Value) -> String {
    let mut parts: Vec<String> = op["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "query")
        .map(|p| {
            format!(
                "?{}: {}",
                p["name"].as_str().unwrap_or_default(),
                p["schema"]["type"].as_str().unwrap_or("any")
            )
        })
        .collect();
    let schema = &op["requestBody"]["content"]["application/json"]["schema"];
    let (list, object) = if schema["type"] == "array" {
        (true, &schema["items"])
    } else {
        (false, schema)
    };
    if let Some(properties) = object["properties"].as_object() {
        let fields: Vec<String> = properties
            .iter()
            .map(|(name, s)| format!("{name}: {}", s["type"].as_str().unwrap_or("any")))
            .collect();
        let fields = format!("{{{}}}", fields.join(", "));
        parts.push(if list { format!("[{fields}]") } else { fields });
    }
    escape(&parts.join(" "))
}

fn page(document: &Value) -> String {
    let mut rows = String::new();
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            rows.push_str(&format!(
                "<tr><td class=m>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>\n",
                escape(&method.to_ascii_uppercase()),
                escape(path),
                escape(op["summary"].as_str().unwrap_or_default()),
                inputs(op),
            ));
        }
    }
    format!(
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>\
         <title>graphkit-server API</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}}\
         .m{{font-weight:bold}}</style></head><body>\
         <h1>graphkit-server {}</h1>\
         <p>The endpoints this server serves (the LangGraph Platform API subset). \
         The machine-readable form is <a href=\"/openapi.json\">/openapi.json</a>. \
         Errors are JSON <code>{{\"detail\": \"...\"}}</code>.</p>\
         <table><tr><th>method</th><th>path</th><th>what</th><th>query / body</th></tr>\n{rows}</table>\
         </body></html>\n",
        escape(document["info"]["version"].as_str().unwrap_or_default()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_served_endpoint_once_and_nothing_else() {
        let endpoints = super::super::endpoints();
        let document = document(&endpoints);
        let mut documented: Vec<(String, String)> = document["paths"]
            .as_object()
            .expect("paths")
            .iter()
            .flat_map(|(path, item)| {
                item.as_object()
                    .expect("path item")
                    .keys()
                    .map(|m| (m.to_ascii_uppercase(), path.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        let mut served: Vec<(String, String)> = endpoints
            .iter()
            .map(|e| (e.method.to_string(), e.path.to_owned()))
            .collect();
        documented.sort();
        served.sort();
        let before = served.len();
        served.dedup();
        assert_eq!(before, served.len(), "an endpoint is in the table twice");
        assert_eq!(documented, served);
        let mut ids: Vec<String> = endpoints.iter().map(operation_id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), endpoints.len(), "operation ids are unique");
        for must in [
            ("GET", "/openapi.json"),
            ("GET", "/docs"),
            ("POST", "/threads/{tid}/runs/stream"),
            ("PUT", "/store/items"),
        ] {
            assert!(
                served.contains(&(must.0.to_owned(), must.1.to_owned())),
                "{must:?}"
            );
        }
    }

    #[test]
    fn the_page_escapes_and_has_no_script_or_external_resource() {
        let page = page(&document(&super::super::endpoints()));
        assert!(page.contains("<code>/threads/{id}/state</code>"));
        assert!(!page.contains("<script"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(
            page.contains("{assistant_id: string"),
            "body fields are listed"
        );
    }
}
