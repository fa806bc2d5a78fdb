//! A chat page built on the official JS SDK's React hook `useStream`
//! (`@langchain/langgraph-sdk/react` 2.0.0), bundled from npm with esbuild at test time, in
//! headless Chromium against a graphkit-server process: the page submits a message, the
//! demo graph `agent` stops at its `human` interrupt, the page shows the interrupt's
//! question, the test clicks "resume" (the page submits `command: {resume}`) and the final
//! state appears on the page and in the server's thread state.
//!
//! The page (`web/usestream/`) is served from its own origin on 127.0.0.1 and calls the
//! server across origins, so the server runs with `--cors-origin` set to that origin.
//!
//! Needs what `.ci/run` installs: the page's packages (`npm install` of
//! `web/usestream/package.json` into `target/usestream-web`, exported as
//! `GRAPHKIT_USESTREAM_WEB`, the `node_modules` folder), `node`, and Debian's `chromium`
//! and `chromium-driver` (`GRAPHKIT_CHROMEDRIVER`; `GRAPHKIT_CHROMIUM` overrides the browser,
//! `/usr/bin/chromium` by default). Without them the test prints why it skips.
//!
//! Waiting is on observable state: a WebDriver script resolves from a MutationObserver when
//! the page shows the awaited element (bounded by the session's script timeout); nothing
//! sleeps.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use graphkit_tests::webdriver::{Chromedriver, Session};
use graphkit_tests::{Http, ServerProcess};
use serde_json::{Value, json};

/// The server binary with the demo graph `agent`.
const SERVER: &str = env!("CARGO_BIN_EXE_graphkit-test-server");

/// What the page sends, and what the demo graph answers.
const MESSAGE: &str = "hello from the useStream page";

/// The page's `node_modules`, chromedriver and chromium, or `None` after printing why the
/// test skips.
fn configured(test: &str) -> Option<(PathBuf, String, String)> {
    let Some(modules) = std::env::var_os("GRAPHKIT_USESTREAM_WEB").filter(|v| !v.is_empty()) else {
        eprintln!(
            "SKIPPED {test}: set GRAPHKIT_USESTREAM_WEB to the node_modules folder of \
             tests/web/usestream/package.json (bash .ci/run installs it into \
             target/usestream-web and sets it)"
        );
        return None;
    };
    let Some(driver) = std::env::var("GRAPHKIT_CHROMEDRIVER")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!(
            "SKIPPED {test}: GRAPHKIT_CHROMEDRIVER is not set (install Debian's chromium and \
             chromium-driver and set it to /usr/bin/chromedriver, as .ci/run does)"
        );
        return None;
    };
    let chromium =
        std::env::var("GRAPHKIT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    Some((PathBuf::from(modules), driver, chromium))
}

/// The page's sources.
fn page_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("web/usestream")
}

/// Bundles `app.jsx` with the page's `build.mjs` (esbuild from `modules`); answers the script.
fn bundle(modules: &Path, out: &Path) -> Vec<u8> {
    let outfile = out.join("app.js");
    let output = Command::new("node")
        .arg(page_dir().join("build.mjs"))
        .arg(modules)
        .arg(&outfile)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node for the page's build: {e}"));
    assert!(
        output.status.success(),
        "the page did not build ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read(&outfile).expect("the bundled page script")
}

/// One file the page server answers: path, content type, body.
type PageFile = (&'static str, &'static str, Vec<u8>);

/// Serves `files` on 127.0.0.1 at a port of the system's choosing (a thread per
/// connection, `Connection: close`); answers the origin, `http://127.0.0.1:PORT`.
fn serve_page(files: Vec<PageFile>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let origin = format!("http://{}", listener.local_addr().expect("local address"));
    let files = Arc::new(files);
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let files = Arc::clone(&files);
            std::thread::spawn(move || answer(stream, &files));
        }
    });
    origin
}

/// Reads one request's head and answers the file its path names, or 404.
fn answer(mut stream: TcpStream, files: &[PageFile]) {
    // A browser may open a connection it never uses; do not hold its thread for good.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .split('?')
        .next()
        .unwrap_or("/");
    let (status, content_type, body): (&str, &str, &[u8]) =
        match files.iter().find(|(name, _, _)| *name == path) {
            Some((_, content_type, body)) => ("200 OK", content_type, body),
            None => ("404 Not Found", "text/plain", b"not found"),
        };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.write_all(body);
}

/// Waits until the page shows `#error` or `selector`, and answers `"error: ..."` or the
/// text of `selector`'s element (bounded by the session's script timeout).
async fn shown(session: &Session, selector: &str) -> String {
    let condition = format!(
        "(() => {{
           const error = document.querySelector('#error');
           if (error) return 'error: ' + error.textContent;
           const found = document.querySelector({selector:?});
           return found && found.textContent ? found.textContent : null;
         }})()"
    );
    let value = session
        .wait_for(&condition)
        .await
        .unwrap_or_else(|e| panic!("the page never showed {selector}: {e}"));
    value.as_str().unwrap_or_default().to_owned()
}

/// The page's messages as `role|content`.
async fn page_messages(session: &Session) -> Vec<String> {
    let listed = session
        .execute(
            "return [...document.querySelectorAll('#messages li')]
               .map((li) => li.dataset.role + '|' + li.textContent);",
        )
        .await
        .expect("read the page's messages");
    serde_json::from_value(listed).expect("a list of strings")
}

/// The messages of a thread state's values as `role|content`.
fn state_messages(state: &Value) -> Vec<String> {
    state["values"]["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("no messages in {state}"))
        .iter()
        .map(|m| {
            format!(
                "{}|{}",
                m["role"].as_str().unwrap_or_default(),
                m["content"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test]
async fn a_use_stream_page_runs_to_an_interrupt_and_resumes_in_a_browser() {
    let test = "a_use_stream_page_runs_to_an_interrupt_and_resumes_in_a_browser";
    let Some((modules, driver, chromium)) = configured(test) else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let script = bundle(&modules, dir.path());
    let html = std::fs::read(page_dir().join("index.html")).expect("index.html");
    let origin = serve_page(vec![
        ("/", "text/html; charset=utf-8", html),
        ("/app.js", "text/javascript; charset=utf-8", script),
    ]);
    let database = dir.path().join("server.db").display().to_string();
    let server = ServerProcess::start(SERVER, &["--database", &database, "--cors-origin", &origin]);

    let driver = Chromedriver::start(&driver, Duration::from_secs(60)).expect("chromedriver");
    let session = Session::chromium(&driver, &chromium)
        .await
        .expect("a headless Chromium session");
    session
        .navigate(&format!("{origin}/?api={}", server.base))
        .await
        .expect("open the page");

    // Submit: the run answers, then stops at the `human` node's interrupt.
    let input = session.find("#message").await.expect("the message box");
    session.type_into(&input, MESSAGE).await.expect("type");
    let send = session.find("#send").await.expect("the send button");
    session.click(&send).await.expect("send");
    let question = shown(&session, "#question").await;
    assert_eq!(question, "approve?", "the interrupt's question");
    let echo = format!("echo: {MESSAGE}");
    assert_eq!(
        page_messages(&session).await,
        [format!("user|{MESSAGE}"), format!("assistant|{echo}")]
    );
    let thread = session
        .execute("return document.querySelector('#status').dataset.thread;")
        .await
        .expect("the page's thread id");
    let thread = thread.as_str().expect("a thread id").to_owned();
    assert!(!thread.is_empty(), "the page has no thread id");
    let http = Http::default();
    let state_url = format!("{}/threads/{thread}/state", server.base);
    let paused = http.get(&state_url).await;
    assert_eq!(paused["next"], json!(["human"]), "{paused}");

    // Resume: the page submits `command: {resume: "approved"}`; the run ends.
    let resume = session.find("#resume").await.expect("the resume button");
    session.click(&resume).await.expect("resume");
    let human = shown(&session, "#messages li[data-role=human]").await;
    assert_eq!(human, "approved", "the resume value in the final state");
    let settled = session
        .wait_for(
            "document.querySelector('#status').dataset.loading === 'false' \
             && !document.querySelector('#interrupt')",
        )
        .await;
    assert!(settled.is_ok(), "the page did not settle: {settled:?}");
    let wanted = [
        format!("user|{MESSAGE}"),
        format!("assistant|{echo}"),
        "human|approved".to_owned(),
    ];
    assert_eq!(page_messages(&session).await, wanted);
    let done = http.get(&state_url).await;
    assert_eq!(done["next"], json!([]), "{done}");
    assert_eq!(state_messages(&done), wanted, "{done}");
    let runs = http
        .get(&format!("{}/threads/{thread}/runs", server.base))
        .await;
    let statuses: Vec<&str> = runs
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["status"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(statuses, ["success", "success"], "{runs}");

    session.close().await.expect("close the browser");
    drop(server);
}
