//! Test harness: a server on 127.0.0.1:0 over a temporary SQLite file, and an SSE reader.
#![allow(dead_code)]

use std::sync::Arc;

use graphkit_server::backend::{Backend, SqliteBackend};
use graphkit_server::{RunningServer, Server, demo};
use reqwest::{Client, Response, StatusCode};
use serde_json::Value;

pub struct TestServer {
    pub base: String,
    /// The server's backend, for what a test does behind the API (firing crons at a given
    /// time, sweeping expired rows).
    pub backend: Arc<dyn Backend>,
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
        Self::start_on(Arc::new(backend), dir, configure).await
    }

    /// A server on `backend` (`dir` is kept as long as the server).
    pub async fn start_on(
        backend: Arc<dyn Backend>,
        dir: tempfile::TempDir,
        configure: impl FnOnce(Server) -> Server,
    ) -> Self {
        let server = configure(
            Server::new()
                .graph("agent", demo::agent_graph().expect("demo graph"))
                .backend(Arc::clone(&backend)),
        );
        let running = server.start("127.0.0.1:0").await.expect("start");
        let addr = running.local_addr().expect("bound");
        Self {
            base: format!("http://{addr}"),
            backend,
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

    /// Reads until the server's next heartbeat comment, which it sends after a quiet
    /// while; panics if the stream ends first.
    pub async fn heartbeat(&mut self) {
        loop {
            if let Some(at) = self.buffer.find(": heartbeat\r\n\r\n") {
                self.buffer.drain(..at + ": heartbeat\r\n\r\n".len());
                return;
            }
            let bytes = self.response.chunk().await.expect("chunk");
            let bytes = bytes.expect("the stream ended before a heartbeat");
            let text = String::from_utf8(bytes.to_vec()).expect("utf-8");
            self.raw.push_str(&text);
            self.buffer.push_str(&text);
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

/// One answer read off a raw connection.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

/// A hand-written HTTP/1.1 client on one TCP connection, to send what a library would not
/// (a body shorter than its Content-Length, invalid UTF-8, raw paths) and to see what the
/// server does to the connection.
pub struct RawConnection {
    stream: tokio::net::TcpStream,
    buffer: Vec<u8>,
}

impl RawConnection {
    pub async fn open(addr: std::net::SocketAddr) -> Self {
        Self {
            stream: tokio::net::TcpStream::connect(addr).await.expect("connect"),
            buffer: Vec::new(),
        }
    }

    pub async fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    /// Reads more bytes; `false` at the end of the stream.
    async fn fill(&mut self) -> std::io::Result<bool> {
        use tokio::io::AsyncReadExt;
        let mut chunk = [0u8; 8192];
        let n = self.stream.read(&mut chunk).await?;
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(n > 0)
    }

    /// The next answer, or `None` if the connection ended (or broke) before one arrived.
    pub async fn response(&mut self) -> Option<RawResponse> {
        let head_end = loop {
            if let Some(at) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            if !self.fill().await.unwrap_or(false) {
                return None;
            }
        };
        let head = String::from_utf8(self.buffer[..head_end].to_vec()).expect("ASCII head");
        self.buffer.drain(..head_end + 4);
        let mut lines = head.split("\r\n");
        let status_line = lines.next().expect("status line");
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut response = RawResponse {
            status,
            headers,
            body: Vec::new(),
        };
        if let Some(length) = response.header("content-length") {
            let length: usize = length.parse().expect("content-length");
            while self.buffer.len() < length {
                if !self.fill().await.unwrap_or(false) {
                    return None;
                }
            }
            response.body = self.buffer.drain(..length).collect();
        } else if response
            .header("transfer-encoding")
            .is_some_and(|v| v.contains("chunked"))
        {
            loop {
                let line_end = loop {
                    if let Some(at) = self.buffer.windows(2).position(|w| w == b"\r\n") {
                        break at;
                    }
                    if !self.fill().await.unwrap_or(false) {
                        return None;
                    }
                };
                let size_text = String::from_utf8_lossy(&self.buffer[..line_end]).to_string();
                let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
                self.buffer.drain(..line_end + 2);
                while self.buffer.len() < size + 2 {
                    if !self.fill().await.unwrap_or(false) {
                        return None;
                    }
                }
                response.body.extend(self.buffer.drain(..size));
                self.buffer.drain(..2);
                if size == 0 {
                    break;
                }
            }
        }
        Some(response)
    }

    /// Whether the server closed the connection (reads to its end; bytes after the last
    /// answer make it `false`).
    pub async fn closed_by_server(&mut self) -> bool {
        matches!(self.fill().await, Ok(false) | Err(_)) && self.buffer.is_empty()
    }
}
