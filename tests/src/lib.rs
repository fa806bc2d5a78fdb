//! graphkit-tests: the workspace's cross-crate and end-to-end tests.
//!
//! The library holds their shared helpers: a fresh PostgreSQL schema per test, server
//! processes, and a small HTTP + SSE client. The tests themselves are the `[[test]]`
//! targets next to this crate's `Cargo.toml` (`server_scale_out.rs`, ...); the
//! `graphkit-test-server` binary is the server they start. [`webdriver`] drives headless
//! Chromium for the browser tests (examples' page test includes the same file).

pub mod webdriver;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;

/// How long any condition may take before a test gives up. Generous on purpose: the tests
/// poll for a state, never sleep for one, so a loaded machine only makes them slower.
pub const DEADLINE: Duration = Duration::from_secs(180);

/// The PostgreSQL URL from `GRAPHKIT_TEST_POSTGRES_URL`, or `None` after printing why the
/// test is skipped.
pub fn postgres_url(test: &str) -> Option<String> {
    match std::env::var("GRAPHKIT_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            eprintln!(
                "SKIPPED {test}: set GRAPHKIT_TEST_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to run it"
            );
            None
        }
    }
}

/// A schema name no other test or helper uses (short: the server's notify channels are
/// `<schema>.<name>`, at most 63 bytes).
pub fn fresh_schema(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let test: String = test
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(12)
        .collect();
    format!(
        "gk_{test}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )
}

/// Drops a test schema and everything in it.
#[cfg(feature = "postgres")]
pub async fn drop_schema(url: &str, schema: &str) {
    use sqlx::Connection;
    if let Ok(mut connection) = sqlx::PgConnection::connect(url).await {
        let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut connection)
            .await;
        let _ = connection.close().await;
    }
}

/// The arguments that put a server on PostgreSQL at `url`, in `schema`.
pub fn postgres_args<'a>(url: &'a str, schema: &'a str) -> [&'a str; 4] {
    ["--database", url, "--database-schema", schema]
}

/// One server process; SIGKILLed when dropped.
pub struct ServerProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The lines it logged (stderr), when started with [`start_logged`](Self::start_logged).
    log: Option<Arc<Mutex<Vec<String>>>>,
}

impl ServerProcess {
    /// Starts a server binary with `--listen 127.0.0.1:0` and `args`, and waits until it
    /// printed its address (`listening on http://ADDR`).
    pub fn start(binary: &str, args: &[&str]) -> Self {
        Self::spawn(binary, args, false)
    }

    /// [`start`](Self::start), keeping the lines the process logs (they still reach the
    /// test's stderr) for [`logged`](Self::logged).
    pub fn start_logged(binary: &str, args: &[&str]) -> Self {
        Self::spawn(binary, args, true)
    }

    fn spawn(binary: &str, args: &[&str], keep_log: bool) -> Self {
        let mut child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(if keep_log {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
        let log = child.stderr.take().map(|stderr| {
            let kept = Arc::new(Mutex::new(Vec::new()));
            let sink = Arc::clone(&kept);
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    eprintln!("{line}");
                    sink.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(line);
                }
            });
            kept
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.expect("server stdout");
            if let Some(rest) = line.split("listening on ").nth(1) {
                base = Some(rest.trim().to_owned());
                break;
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let Some(base) = base else {
            let _ = child.kill();
            panic!("{binary} exited before announcing its address");
        };
        Self { child, base, log }
    }

    /// Whether the process logged a line containing `needle` (only for a process started
    /// with [`start_logged`](Self::start_logged)).
    pub fn logged(&self, needle: &str) -> bool {
        self.log.as_ref().is_some_and(|log| {
            log.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .any(|line| line.contains(needle))
        })
    }

    /// Sends the process `signal` (`"STOP"`, `"CONT"`, ...) with `kill(1)`.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill -{signal}: {e}"));
        assert!(status.success(), "kill -{signal} {} failed", self.pid());
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether `worker_id` (as `GET /runs/{id}` shows it) is one of this process's workers:
    /// the server's worker ids are `<pid>-<uuid>`.
    pub fn runs_worker(&self, worker_id: &str) -> bool {
        worker_id
            .split_once('-')
            .is_some_and(|(pid, _)| pid == self.pid().to_string())
    }

    /// SIGKILL: the process gets no chance to clean up, as in a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A JSON HTTP client for one or more servers.
#[derive(Clone)]
pub struct Http {
    client: reqwest::Client,
}

impl Default for Http {
    fn default() -> Self {
        Self {
            client: graphkit_llm::http::client_builder()
                .timeout(Duration::from_secs(60))
                .build()
                .expect("reqwest client"),
        }
    }
}

impl Http {
    /// `POST url` with a JSON body; the JSON answer (the test fails on a non-2xx status).
    pub async fn post(&self, url: &str, body: Value) -> Value {
        let response = self
            .client
            .post(url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url}: {e}"));
        Self::json(url, response).await
    }

    /// `PUT url` with a JSON body, for endpoints that answer without a body (204).
    pub async fn put(&self, url: &str, body: Value) {
        let response = self
            .client
            .put(url)
            .json(&body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("PUT {url}: {e}"));
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "{url} answered {status}: {text}");
    }

    /// `GET url`; the JSON answer (the test fails on a non-2xx status).
    pub async fn get(&self, url: &str) -> Value {
        let response = self
            .client
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        Self::json(url, response).await
    }

    async fn json(url: &str, response: reqwest::Response) -> Value {
        let status = response.status();
        let text = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "{url} answered {status}: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url} sent no JSON ({e}): {text}"))
    }

    /// Opens an SSE stream with an optional `Last-Event-ID`.
    pub async fn sse(&self, url: &str, last_event_id: Option<&str>) -> Sse {
        let mut request = self.client.get(url).timeout(Duration::from_secs(3600));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        let response = request
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        assert!(
            response.status().is_success(),
            "{url} answered {}",
            response.status()
        );
        Sse {
            body: Box::pin(
                response
                    .bytes_stream()
                    .map(|chunk| chunk.map(|b| b.to_vec())),
            ),
            buffer: String::new(),
        }
    }
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Event {
    /// The event name (`message` when the server sent none).
    pub event: String,
    /// The data, parsed as JSON (a string when it is not JSON).
    pub data: Value,
    /// The `id:` field (sent for resumable runs).
    pub id: Option<String>,
}

/// A server-sent event stream being read.
pub struct Sse {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl Sse {
    /// The next event, or `None` when the server closed the stream (or the connection
    /// broke, which is how a killed server looks to a client). Comments are skipped.
    pub async fn next(&mut self) -> Option<Event> {
        loop {
            let normalized = self.buffer.replace("\r\n", "\n");
            if let Some(end) = normalized.find("\n\n") {
                let block = normalized[..end].to_owned();
                self.buffer = normalized[end + 2..].to_owned();
                let mut event = Event {
                    event: "message".to_owned(),
                    data: Value::Null,
                    id: None,
                };
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event.event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    } else if let Some(v) = line.strip_prefix("id:") {
                        event.id = Some(v.trim().to_owned());
                    }
                }
                if block.lines().all(|l| l.starts_with(':')) {
                    continue;
                }
                event.data = serde_json::from_str(&data).unwrap_or(Value::String(data));
                return Some(event);
            }
            self.buffer = normalized;
            match self.body.next().await {
                Some(Ok(chunk)) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Some(Err(_)) | None => return None,
            }
        }
    }
}

/// Polls `check` until it returns `Some`, failing the test with `what` after [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    let mut pause = Duration::from_millis(20);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "gave up after {DEADLINE:?} waiting for {what}"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(250));
    }
}
