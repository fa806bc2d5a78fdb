//! `GET /openapi.json` and `GET /docs`: the document lists what the router serves. Every
//! path and method it names is answered by that route's handler (never the fallback's
//! "no endpoint", never 405), and the page lists the same endpoints with no script and no
//! external resource.

use crate::common::{TestServer, expect_json};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// `path` with each `{param}` replaced by a fresh UUID (an id nothing has).
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|part| {
            if part.starts_with('{') {
                uuid::Uuid::new_v4().to_string()
            } else {
                part.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn operations(document: &Value) -> Vec<(String, String)> {
    let mut all = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            all.push((method.to_ascii_uppercase(), path.clone()));
        }
    }
    all
}

#[tokio::test]
async fn every_documented_endpoint_is_served_by_its_own_handler() {
    let s = TestServer::start().await;
    let document = s.get_json("/openapi.json", StatusCode::OK).await;
    assert!(
        document["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.")),
        "{}",
        document["openapi"]
    );
    let ops = operations(&document);
    assert!(ops.len() >= 45, "{} operations", ops.len());
    for (method, path) in &ops {
        let op = &document["paths"][path][method.to_ascii_lowercase()];
        assert!(
            op["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{method} {path}"
        );
        assert!(op["responses"].is_object(), "{method} {path}");
        let body = match &op["requestBody"]["content"]["application/json"]["schema"]["type"] {
            Value::String(t) if t == "array" => Some(json!([])),
            Value::String(_) => Some(json!({})),
            _ => None,
        };
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = s.client.request(method.clone(), s.url(&concrete(path)));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer = request.send().await.expect("send");
        let status = answer.status();
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{method} {path}");
        if status.is_client_error() {
            let detail = expect_json(answer, status).await["detail"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(
                !detail.starts_with("no endpoint"),
                "{method} {path} reached the fallback: {detail}"
            );
        }
    }
    // The reverse: a route the document does not name is the fallback's 404.
    let answer = s.get("/threads/search").await;
    let detail = expect_json(answer, StatusCode::METHOD_NOT_ALLOWED).await;
    assert!(detail["detail"].is_string(), "{detail}");
    assert!(
        !ops.contains(&("GET".to_owned(), "/threads/search".to_owned())),
        "GET /threads/search is not served"
    );
    s.stop().await;
}

#[tokio::test]
async fn the_docs_page_lists_the_documented_endpoints_and_loads_nothing() {
    let s = TestServer::start().await;
    let document = s.get_json("/openapi.json", StatusCode::OK).await;
    let answer = s.get("/docs").await;
    assert_eq!(answer.status(), StatusCode::OK);
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let page = answer.text().await.expect("page");
    for (method, path) in operations(&document) {
        let row = format!("<td class=m>{method}</td><td><code>{path}</code></td>");
        assert!(page.contains(&row), "the page lacks {method} {path}");
    }
    assert!(!page.contains("<script"), "no script");
    assert!(!page.contains("src="), "no external resource");
    assert!(
        !page.contains("https://") && !page.contains("http://"),
        "no external link"
    );
    s.stop().await;
}
