//! A small W3C WebDriver client over reqwest, and the chromedriver process it talks to:
//! just the commands the page tests use (session, navigate, find, click, type, execute,
//! screenshot). Used by graphkit-tests' `server_usestream` and, through `#[path]`, by the
//! examples' MCP research page test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

/// The key of an element reference in W3C WebDriver answers.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver child process on a port it chose itself (`--port=0`). On drop it ends
/// the sessions opened through it (so no browser outlives a failed test), then is killed.
pub struct Chromedriver {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    port: u16,
    sessions: Mutex<Vec<String>>,
}

impl Chromedriver {
    /// Starts `binary --port=0` and reads the port from its start line, waiting at most
    /// `deadline` for it.
    pub fn start(binary: &str, deadline: Duration) -> Result<Self, String> {
        let mut child = Command::new(binary)
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("start {binary}: {e}"))?;
        let stdout = child.stdout.take().ok_or("chromedriver has no stdout")?;
        let (port_tx, port_rx) = mpsc::channel();
        // Read the start line, then keep draining so chromedriver never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("started successfully on port ").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = port_tx.send(port);
                }
            }
        });
        let mut driver = Chromedriver {
            child,
            url: String::new(),
            port: 0,
            sessions: Mutex::new(Vec::new()),
        };
        let port = port_rx
            .recv_timeout(deadline)
            .map_err(|_| format!("{binary} did not report its port within {deadline:?}"))?;
        driver.port = port
            .parse()
            .map_err(|_| format!("{binary} reported the port {port:?}"))?;
        driver.url = format!("http://127.0.0.1:{port}");
        Ok(driver)
    }
}

impl Drop for Chromedriver {
    fn drop(&mut self) {
        let sessions =
            std::mem::take(&mut *self.sessions.lock().unwrap_or_else(|e| e.into_inner()));
        for id in sessions {
            // A plain blocking DELETE (drop cannot await); errors only mean it is gone.
            if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
                let request = format!(
                    "DELETE /session/{id} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
                );
                // chromedriver answers once the browser has quit; the start of the answer
                // is enough (it may keep the connection open).
                if stream.write_all(request.as_bytes()).is_ok() {
                    let _ = stream.read(&mut [0u8; 512]);
                }
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One WebDriver session (one headless browser), deleted by [`Session::close`].
pub struct Session {
    http: reqwest::Client,
    base: String,
}

impl Session {
    /// Opens headless Chromium (`chromium` is the browser binary) through `driver`.
    pub async fn chromium(driver: &Chromedriver, chromium: &str) -> Result<Self, String> {
        let http = graphkit_llm::http::client_builder()
            .build()
            .expect("an HTTP client");
        let capabilities = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": chromium,
                        "args": [
                            "--headless=new",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-dev-shm-usage",
                            "--window-size=1280,1500",
                        ],
                    },
                    "timeouts": { "script": 180_000, "pageLoad": 60_000, "implicit": 0 },
                }
            }
        });
        let answer = send(
            &http,
            reqwest::Method::POST,
            &format!("{}/session", driver.url),
            Some(capabilities),
        )
        .await?;
        let id = answer["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no sessionId in {answer}"))?;
        driver
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id.to_owned());
        Ok(Session {
            base: format!("{}/session/{id}", driver.url),
            http,
        })
    }

    async fn command(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        send(&self.http, method, &format!("{}{path}", self.base), body).await
    }

    /// Loads `url` and waits for the document to load.
    pub async fn navigate(&self, url: &str) -> Result<(), String> {
        self.command(reqwest::Method::POST, "/url", Some(json!({ "url": url })))
            .await
            .map(drop)
    }

    /// The element matching a CSS selector.
    pub async fn find(&self, css: &str) -> Result<String, String> {
        let found = self
            .command(
                reqwest::Method::POST,
                "/element",
                Some(json!({ "using": "css selector", "value": css })),
            )
            .await?;
        found[ELEMENT_KEY]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("no element reference for {css:?} in {found}"))
    }

    /// Types `text` into an element.
    pub async fn type_into(&self, element: &str, text: &str) -> Result<(), String> {
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/value"),
            Some(json!({ "text": text })),
        )
        .await
        .map(drop)
    }

    /// Clears an input or textarea.
    pub async fn clear(&self, element: &str) -> Result<(), String> {
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/clear"),
            Some(json!({})),
        )
        .await
        .map(drop)
    }

    /// Clicks an element.
    pub async fn click(&self, element: &str) -> Result<(), String> {
        self.command(
            reqwest::Method::POST,
            &format!("/element/{element}/click"),
            Some(json!({})),
        )
        .await
        .map(drop)
    }

    /// Sets the browser window's size in CSS pixels.
    pub async fn set_window_size(&self, width: u64, height: u64) -> Result<(), String> {
        self.command(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        )
        .await
        .map(drop)
    }

    /// Runs a synchronous script (a function body) and returns its value.
    pub async fn execute(&self, script: &str) -> Result<Value, String> {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// Runs an asynchronous script: it gets a callback as its last argument and the command
    /// answers when it is called (or fails at the session's script timeout).
    pub async fn execute_async(&self, script: &str) -> Result<Value, String> {
        self.command(
            reqwest::Method::POST,
            "/execute/async",
            Some(json!({ "script": script, "args": [] })),
        )
        .await
    }

    /// Waits, without polling, until the JavaScript expression `condition` is truthy: a
    /// MutationObserver re-checks it on every DOM change. Answers the expression's value;
    /// fails at the session's script timeout.
    pub async fn wait_for(&self, condition: &str) -> Result<Value, String> {
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const check = () => {{ const value = ({condition}); if (value) {{ done(value); return true; }} return false; }};
             if (!check()) {{
               const observer = new MutationObserver(() => {{ if (check()) observer.disconnect(); }});
               observer.observe(document.documentElement, {{ subtree: true, childList: true, attributes: true, characterData: true }});
             }}"
        );
        self.execute_async(&script).await
    }

    /// A PNG screenshot of the viewport.
    pub async fn screenshot(&self) -> Result<Vec<u8>, String> {
        let encoded = self
            .command(reqwest::Method::GET, "/screenshot", None)
            .await?;
        let text = encoded
            .as_str()
            .ok_or_else(|| format!("screenshot is not a string: {encoded}"))?;
        decode_base64(text)
    }

    /// Ends the session (closes the browser).
    pub async fn close(self) -> Result<(), String> {
        self.command(reqwest::Method::DELETE, "", None)
            .await
            .map(drop)
    }
}

/// One WebDriver command: answers the `value` of the reply, or its error as text.
async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let mut request = http.request(method.clone(), url);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request
        .send()
        .await
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = response.status();
    let reply: Value = response
        .json()
        .await
        .map_err(|e| format!("{method} {url}: reply is not JSON: {e}"))?;
    let value = reply.get("value").cloned().unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(format!(
            "{method} {url}: {status} {}: {}",
            value["error"].as_str().unwrap_or("error"),
            value["message"].as_str().unwrap_or("")
        ));
    }
    Ok(value)
}

/// Standard base64 (with padding) to bytes.
fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(text.len() / 4 * 3);
    let mut buffer = 0u32;
    let mut bits = 0;
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        let digit = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return Err(format!("not base64: {:?}", c as char)),
        };
        buffer = (buffer << 6) | u32::from(digit);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            bytes.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Ok(bytes)
}

#[test]
fn base64_decodes_what_it_should() {
    assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
    assert_eq!(decode_base64("aGVsbG8h").unwrap(), b"hello!");
    assert_eq!(decode_base64("iVBORw0KGgo=").unwrap(), b"\x89PNG\r\n\x1a\n");
    assert!(decode_base64("a*b=").is_err());
}
