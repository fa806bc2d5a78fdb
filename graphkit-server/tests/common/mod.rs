//! Test harness: a server on 127.0.0.1:0 over a temporary SQLite file, and an SSE reader.
#![allow(dead_code)]

use std::sync::Arc;

use graphkit_server::backend::SqliteBackend;
use graphkit_server::{RunningServer, Server, demo};
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

pub struct TestServer {
    pub base: String,
    pub client: Client,
    pub server: Option<RunningServer>,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(|s| s).await
    }

    pub async fn start_with(configure: impl FnOnce(Server) -> Server) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend = SqliteBackend::open(dir.path().join("server.db"))
            .await
            .expect("open sqlite");
        let server = configure(
            Server::new()
                .graph("agent", demo::agent_graph().expect("demo graph"))
                .backend(Arc::new(backend)),
        );
        let running = server.start("127.0.0.1:0").await.expect("start");
        let addr = running.local_addr().expect("bound");
        Self {
            base: format!("http://{addr}"),
            client: graphkit_llm::http::client_builder()
                .build()
                .expect("an HTTP client"),
            server: Some(running),
            dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn post(&self, path: &str, body: Value) -> Response {
        self.client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request")
    }

    pub async fn get(&self, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request")
    }

    /// POST, expect `status`, return the JSON body.
    pub async fn post_json(&self, path: &str, body: Value, status: StatusCode) -> Value {
        let response = self.post(path, body).await;
        expect_json(response, status).await
    }

    pub async fn get_json(&self, path: &str, status: StatusCode) -> Value {
        expect_json(self.get(path).await, status).await
    }

    /// A new thread's id.
    pub async fn thread(&self) -> String {
        let thread = self
            .post_json("/threads", serde_json::json!({}), StatusCode::OK)
            .await;
        thread["thread_id"].as_str().expect("id").to_owned()
    }

    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

pub async fn expect_json(response: Response, status: StatusCode) -> Value {
    let got = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
}

/// One SSE event.
#[derive(Debug, Clone)]
pub struct Event {
    pub event: String,
    pub data: Value,
    pub id: Option<String>,
}

/// Reads SSE events from a response as they arrive.
pub struct SseReader {
    response: Response,
    buffer: String,
    pub raw: String,
}

impl SseReader {
    pub fn new(response: Response) -> Self {
        Self {
            response,
            buffer: String::new(),
            raw: String::new(),
        }
    }

    /// The next event (heartbeat comments skipped), or `None` when the stream ends.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(end) = self.buffer.find("\r\n\r\n") {
                let frame: String = self.buffer.drain(..end + 4).collect();
                if frame.starts_with(':') {
                    continue;
                }
                let mut event = Event {
                    event: String::new(),
                    data: Value::Null,
                    id: None,
                };
                for line in frame.split("\r\n").filter(|l| !l.is_empty()) {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event.event = name.to_owned();
                    } else if let Some(data) = line.strip_prefix("data: ") {
                        event.data = serde_json::from_str(data).expect("data is JSON");
                    } else if let Some(id) = line.strip_prefix("id: ") {
                        event.id = Some(id.to_owned());
                    } else {
                        panic!("unexpected SSE line {line:?}");
                    }
                }
                return Some(event);
            }
            match self.response.chunk().await.expect("chunk") {
                Some(bytes) => {
                    let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
                    self.raw.push_str(&text);
                    self.buffer.push_str(&text);
                }
                None => {
                    assert!(
                        self.buffer.trim().is_empty(),
                        "trailing bytes {:?}",
                        self.buffer
                    );
                    return None;
                }
            }
        }
    }

    /// Every remaining event.
    pub async fn collect(mut self) -> Vec<Event> {
        let mut events = Vec::new();
        while let Some(event) = self.next().await {
            events.push(event);
        }
        events
    }
}

/// `{"messages": [{"role": "user", "content": text}], ...extra}`.
pub fn user_input(text: &str, extra: Value) -> Value {
    let mut input = serde_json::json!({"messages": [{"role": "user", "content": text}]});
    if let (Some(map), Value::Object(more)) = (input.as_object_mut(), extra) {
        map.extend(more);
    }
    input
}
