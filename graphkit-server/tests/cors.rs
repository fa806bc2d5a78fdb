//! CORS: off by default; with origins listed, a browser page on one of them may call the
//! server (preflight answered without the API key, the run id headers readable), and a page
//! on any other origin gets no CORS headers. A malformed origin stops the start.

use std::sync::Arc;

use crate::common;

use common::{TestServer, expect_json};
use graphkit_server::Server;
use graphkit_server::backend::SqliteBackend;
use reqwest::{Method, StatusCode};
use serde_json::json;

const PAGE: &str = "http://localhost:5173";

async fn preflight(s: &TestServer, origin: &str) -> reqwest::Response {
    s.client
        .request(Method::OPTIONS, s.url("/threads/search"))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type,x-api-key")
        .send()
        .await
        .expect("preflight")
}

#[tokio::test]
async fn listed_origins_may_call_from_a_browser_and_others_may_not() {
    let s = TestServer::start_with(|server| server.cors_origins([PAGE]).api_key("sesame")).await;

    // The preflight carries no key (browsers never send it there) and is answered.
    let allowed = preflight(&s, PAGE).await;
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let headers = allowed.headers();
    assert_eq!(headers["access-control-allow-origin"], PAGE);
    let methods = headers["access-control-allow-methods"]
        .to_str()
        .expect("ascii");
    assert!(
        methods.contains("POST") && methods.contains("DELETE"),
        "{methods}"
    );
    let asked = headers["access-control-allow-headers"]
        .to_str()
        .expect("ascii");
    assert!(asked.contains("x-api-key"), "{asked}");

    // The request itself still needs the key, and its answer is readable by the page.
    let response = s
        .client
        .post(s.url("/threads/search"))
        .header("origin", PAGE)
        .header("x-api-key", "sesame")
        .json(&json!({}))
        .send()
        .await
        .expect("search");
    assert_eq!(response.headers()["access-control-allow-origin"], PAGE);
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(exposed.contains("content-location"), "{exposed}");
    expect_json(response, StatusCode::OK).await;
    let keyless = s
        .client
        .post(s.url("/threads/search"))
        .header("origin", PAGE)
        .json(&json!({}))
        .send()
        .await
        .expect("search");
    // Refused, and the page can read why.
    assert_eq!(keyless.headers()["access-control-allow-origin"], PAGE);
    expect_json(keyless, StatusCode::UNAUTHORIZED).await;

    // Another origin gets no CORS headers: the browser keeps the answer from its page.
    let other = preflight(&s, "http://evil.test").await;
    assert!(other.headers().get("access-control-allow-origin").is_none());
    s.stop().await;
}

#[tokio::test]
async fn without_origins_no_page_on_another_origin_is_allowed() {
    let s = TestServer::start().await;
    let response = preflight(&s, PAGE).await;
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    let plain = s
        .client
        .get(s.url("/ok"))
        .header("origin", PAGE)
        .send()
        .await
        .expect("ok");
    assert!(plain.headers().get("access-control-allow-origin").is_none());
    s.stop().await;
}

#[tokio::test]
async fn a_malformed_origin_stops_the_start_with_the_origin_named() {
    for bad in [
        "localhost:5173",
        "ftp://files.test",
        "http://",
        "http://a.test/path",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend = SqliteBackend::open(dir.path().join("server.db"))
            .await
            .expect("open sqlite");
        let started = Server::new()
            .graph(
                "agent",
                graphkit_server::demo::agent_graph().expect("demo graph"),
            )
            .backend(Arc::new(backend))
            .cors_origins([bad])
            .start("127.0.0.1:0")
            .await;
        let Err(error) = started else {
            panic!("{bad:?} was accepted as an origin");
        };
        assert!(error.to_string().contains(bad), "{error}");
    }
}
