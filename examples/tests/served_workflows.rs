//! The workflows on graphkit-server (feature `server`): `graphkit-research-server` lists
//! them, they run to success over real HTTP on their offline models and local data, and
//! where they write files is the server's choice, never a client's.
#![cfg(feature = "server")]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use graphkit_examples::served::{
    self, ARXIV_RESEARCH, BIOGRAPHY_EVENTS, BundledWorkflows, DUE_DILIGENCE, ENTITY_INTEL,
    MCP_RESEARCH,
};
use graphkit_server::backend::SqliteBackend;
use graphkit_server::{RunningServer, Server, demo};
use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};

/// The body of `response` as JSON, after checking its status.
async fn expect_json(response: Response, status: StatusCode) -> Value {
    let got = response.status();
    let text = response.text().await.expect("body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text:?}"))
}

/// An in-process server with the demo graph and the workflows on a temporary SQLite file.
struct WorkflowServer {
    base: String,
    client: Client,
    running: RunningServer,
    services: BundledWorkflows,
    dir: tempfile::TempDir,
}

impl WorkflowServer {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let backend = SqliteBackend::open(dir.path().join("server.db"))
            .await
            .expect("open sqlite");
        let (server, services) = served::register(
            Server::new().graph("agent", demo::agent_graph().expect("demo")),
            &dir.path().join("files"),
        )
        .await
        .expect("register the workflows");
        let running = server
            .backend(Arc::new(backend))
            .start("127.0.0.1:0")
            .await
            .expect("start");
        let addr = running.local_addr().expect("bound");
        Self {
            base: format!("http://{addr}"),
            client: graphkit_llm::http::client_builder()
                .build()
                .expect("an HTTP client"),
            running,
            services,
            dir,
        }
    }

    async fn post_json(&self, path: &str, body: Value, status: StatusCode) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("request");
        expect_json(response, status).await
    }

    async fn new_thread(&self) -> String {
        self.post_json("/threads", json!({}), StatusCode::OK).await["thread_id"]
            .as_str()
            .expect("thread id")
            .to_owned()
    }

    async fn get_json(&self, path: &str) -> Value {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request");
        expect_json(response, StatusCode::OK).await
    }

    async fn stop(self) {
        self.running.shutdown().await;
        self.services.shutdown().await;
    }
}

/// The `graphkit-research-server` binary on port 0; killed on drop.
struct Binary(Child);

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_binary_lists_the_demo_and_every_workflow() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphkit-research-server"))
        .args(["--listen", "127.0.0.1:0", "--workers", "1", "--database"])
        .arg(dir.path().join("server.db"))
        .arg("--workflows-dir")
        .arg(dir.path().join("files"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the binary");
    let stdout = child.stdout.take().expect("stdout");
    let binary = Binary(child);
    // Blocks until the binary has bound its address (or exited: then the line is empty).
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).map(|_| line)
    })
    .await
    .expect("reader")
    .expect("read stdout");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("the binary did not start: {line:?}"))
        .to_owned();

    let response = graphkit_llm::http::client_builder()
        .build()
        .expect("an HTTP client")
        .post(format!("{base}/assistants/search"))
        .json(&json!({"limit": 100}))
        .send()
        .await
        .expect("search");
    let found = expect_json(response, StatusCode::OK).await;
    let mut graphs: Vec<&str> = found
        .as_array()
        .expect("list")
        .iter()
        .map(|a| a["graph_id"].as_str().expect("graph_id"))
        .collect();
    graphs.sort_unstable();
    assert_eq!(
        graphs,
        [
            "agent",
            ARXIV_RESEARCH,
            BIOGRAPHY_EVENTS,
            DUE_DILIGENCE,
            ENTITY_INTEL,
            MCP_RESEARCH
        ]
    );
    drop(binary);
}

#[tokio::test]
async fn arxiv_research_runs_on_a_thread_to_success_with_its_report() {
    let s = WorkflowServer::start().await;
    let thread = s.new_thread().await;
    let topic = "retrieval-augmented generation for question answering";
    let state = s
        .post_json(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": ARXIV_RESEARCH, "input": {"topic": topic}}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(state["done"], true, "final state: {state}");
    let drafts: Vec<&Value> = state["facts"]
        .as_array()
        .expect("facts")
        .iter()
        .filter(|f| f["kind"] == "draft")
        .collect();
    assert_eq!(drafts.len(), 1, "one report: {state}");
    let report = drafts[0]["content"].as_str().expect("report text");
    assert!(report.starts_with(&format!("# {topic}")), "{report}");
    assert!(report.contains("## Sources"), "{report}");
    let last_message = state["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("messages");
    assert_eq!(
        last_message["content"], report,
        "the report is the last message"
    );
    assert!(
        state["facts"]
            .as_array()
            .expect("facts")
            .iter()
            .any(|f| f["kind"] == "scholar_reference"),
        "papers came from the offline corpus: {state}"
    );

    let runs = s.get_json(&format!("/threads/{thread}/runs")).await;
    assert_eq!(runs[0]["status"], "success", "{runs}");
    let t = s.get_json(&format!("/threads/{thread}")).await;
    assert_eq!(t["status"], "idle");
    s.stop().await;
}

#[tokio::test]
async fn mcp_research_runs_stateless_to_success_with_its_report() {
    let s = WorkflowServer::start().await;
    let state = s
        .post_json(
            "/runs/wait",
            json!({
                "assistant_id": MCP_RESEARCH,
                "input": {"input": "Which countries had the most events?", "max_iterations": 2}
            }),
            StatusCode::OK,
        )
        .await;
    let report = state["final_report"]
        .as_str()
        .unwrap_or_else(|| panic!("no report: {state}"));
    assert!(!report.trim().is_empty());
    assert_eq!(state["current_phase"], "complete", "{state}");
    assert!(
        !state["available_tools"]
            .as_array()
            .expect("tools")
            .is_empty(),
        "the tools came from the events MCP server: {state}"
    );
    s.stop().await;
}

#[tokio::test]
async fn due_diligence_runs_stateless_to_success_with_its_report() {
    let s = WorkflowServer::start().await;
    let state = s
        .post_json(
            "/runs/wait",
            json!({
                "assistant_id": DUE_DILIGENCE,
                "input": {
                    "subject": "Orrin Castellane",
                    "max_depth": 1,
                    "max_queries_per_depth": 3,
                    "stagnation_threshold": 2
                }
            }),
            StatusCode::OK,
        )
        .await;
    assert!(state["report"].is_object(), "no report: {state}");
    assert!(state["search_count"].as_u64().unwrap_or(0) > 0, "{state}");
    let session = state["session_id"].as_str().expect("session id");
    // Made from the server's thread id (a stateless run's temporary thread).
    let thread_id = session
        .strip_prefix("dd-")
        .expect("a due-diligence session id");
    assert!(
        thread_id.len() == 36 && thread_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
        "{session}"
    );
    let reports = s
        .dir
        .path()
        .join("files")
        .join(DUE_DILIGENCE)
        .join("reports");
    let written: Vec<_> = std::fs::read_dir(&reports)
        .expect("the reports directory")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(session))
        .collect();
    assert!(
        !written.is_empty(),
        "the report files of {session} in {}",
        reports.display()
    );
    s.stop().await;
}

#[tokio::test]
async fn biography_events_runs_stateless_to_success_with_its_events() {
    let s = WorkflowServer::start().await;
    let state = s
        .post_json(
            "/runs/wait",
            json!({
                "assistant_id": BIOGRAPHY_EVENTS,
                "input": {"person_to_research": "Odile Marchetti"}
            }),
            StatusCode::OK,
        )
        .await;
    let events = state["events"].as_array().expect("events");
    assert!(!events.is_empty(), "no events: {state}");
    assert!(state["stop_reason"].is_string(), "{state}");
    assert!(
        !state["crawled"].as_array().expect("crawled").is_empty(),
        "pages came from the offline corpus: {state}"
    );
    s.stop().await;
}

#[tokio::test]
async fn entity_intel_writes_its_outputs_under_the_servers_folder_for_the_thread() {
    let s = WorkflowServer::start().await;
    let sample: Value = serde_json::from_str(
        &std::fs::read_to_string(graphkit_examples::entity_intel::sample_input_path())
            .expect("sample input"),
    )
    .expect("sample JSON");
    let bundle = sample["bundles"][0].clone();
    // A client naming a folder of its own: the served graph ignores it.
    let elsewhere = s.dir.path().join("elsewhere");
    let thread = s.new_thread().await;
    let state = s
        .post_json(
            &format!("/threads/{thread}/runs/wait"),
            json!({
                "assistant_id": ENTITY_INTEL,
                "input": {
                    "episode": sample["episode"],
                    "research_directions": {"bundles": [bundle]},
                    "output_directory": elsewhere.display().to_string(),
                },
                "config": {"recursion_limit": 1000},
            }),
            StatusCode::OK,
        )
        .await;
    assert!(
        state["completed_todos"].as_u64().unwrap_or(0) > 0,
        "{state}"
    );
    let outputs = s.dir.path().join("files").join(ENTITY_INTEL).join(&thread);
    assert!(
        outputs.join("research_complete.json").is_file(),
        "research_complete.json in {}: {state}",
        outputs.display()
    );
    for research in state["completed_research"].as_array().expect("research") {
        let path = research["filepath"].as_str().expect("filepath");
        assert!(
            std::path::Path::new(path).starts_with(&outputs),
            "{path} is not under {}",
            outputs.display()
        );
    }
    assert!(!elsewhere.exists(), "the client's folder was written");
    s.stop().await;
}

// ------------------------------------------------------------- client input naming paths

/// Where a client puts a value: a run's `input`, `command.update` of a paused run, a state
/// update (`POST /threads/{id}/state`) before continuing, `config.configurable`, `context`,
/// `metadata`, the id of a thread it creates (`POST /threads`) or the thread of a run
/// (`POST /threads/{id}/runs/wait` with `if_not_exists: "create"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    ThreadId,
    ThreadPath,
    Input,
    CommandUpdate,
    StateUpdate,
    Configurable,
    Context,
    Metadata,
}

/// One field of one workflow a client can set.
#[derive(Debug, Clone, Copy)]
struct Field {
    graph: &'static str,
    place: Place,
    name: &'static str,
}

const fn field(graph: &'static str, place: Place, name: &'static str) -> Field {
    Field { graph, place, name }
}

/// Every field of the bundled workflows that names (or once named) a session, folder or
/// file, and each workflow's text inputs; for the updates, the state fields that name files.
const FIELDS: &[Field] = &[
    field(DUE_DILIGENCE, Place::Input, "subject"),
    field(DUE_DILIGENCE, Place::Input, "subject_context"),
    field(DUE_DILIGENCE, Place::Input, "session_id"),
    field(DUE_DILIGENCE, Place::CommandUpdate, "session_id"),
    field(DUE_DILIGENCE, Place::StateUpdate, "session_id"),
    field(
        DUE_DILIGENCE,
        Place::Configurable,
        "due_diligence_session_id",
    ),
    field(DUE_DILIGENCE, Place::Context, "due_diligence_session_id"),
    field(DUE_DILIGENCE, Place::Metadata, "session_id"),
    field(DUE_DILIGENCE, Place::Metadata, "run_id"),
    field(DUE_DILIGENCE, Place::ThreadId, "thread_id"),
    field(DUE_DILIGENCE, Place::ThreadPath, "thread_id"),
    field(ENTITY_INTEL, Place::Input, "output_directory"),
    // The parts of the todos' file names and ids.
    field(
        ENTITY_INTEL,
        Place::Input,
        "/research_directions/bundles/0/bundleId",
    ),
    field(
        ENTITY_INTEL,
        Place::Input,
        "/research_directions/bundles/0/entities/0/name",
    ),
    field(
        ENTITY_INTEL,
        Place::Input,
        "/research_directions/bundles/0/entities/0/directions/0/key",
    ),
    field(ENTITY_INTEL, Place::CommandUpdate, "output_directory"),
    field(ENTITY_INTEL, Place::StateUpdate, "output_directory"),
    field(ENTITY_INTEL, Place::Configurable, "thread_id"),
    field(ENTITY_INTEL, Place::Context, "thread_id"),
    field(ENTITY_INTEL, Place::Metadata, "thread_id"),
    field(ENTITY_INTEL, Place::ThreadId, "thread_id"),
    field(ENTITY_INTEL, Place::ThreadPath, "thread_id"),
    field(ARXIV_RESEARCH, Place::Input, "topic"),
    field(ARXIV_RESEARCH, Place::Metadata, "thread_id"),
    field(MCP_RESEARCH, Place::Input, "input"),
    field(BIOGRAPHY_EVENTS, Place::Input, "person_to_research"),
];

/// The folders of the path tests, in the server's temporary directory: `files/` is the
/// workflows dir; `outside/` is where an escape would land; `link` is a symlink to
/// `outside/`, made outside the workflows dir.
struct Sandbox {
    outside: std::path::PathBuf,
    link: std::path::PathBuf,
}

impl Sandbox {
    fn new(s: &WorkflowServer) -> Self {
        let outside = s.dir.path().join("outside");
        std::fs::create_dir(&outside).expect("outside/");
        let link = s.dir.path().join("link");
        std::os::unix::fs::symlink(&outside, &link).expect("a symlink to outside/");
        Self { outside, link }
    }

    /// The values a client might use to name a path: an absolute one, `..` climbing out of
    /// any folder (to `outside/` from wherever it is resolved), a bare `..`, a relative
    /// one (the server's working directory), through the symlink and the symlink itself,
    /// and a NUL character.
    fn payloads(&self) -> Vec<(&'static str, String)> {
        let absolute = self.outside.join("absolute");
        let climb = format!(
            "{}{}",
            "../".repeat(24),
            self.outside
                .join("dotdot")
                .display()
                .to_string()
                .trim_start_matches('/')
        );
        vec![
            ("absolute", absolute.display().to_string()),
            ("dot-dot", climb),
            ("parent", "..".to_owned()),
            ("relative", "gk-escaped-relative/x".to_owned()),
            (
                "through a symlink",
                self.link.join("via").display().to_string(),
            ),
            ("a symlink", self.link.display().to_string()),
            ("NUL", "gk\0escaped".to_owned()),
        ]
    }

    /// Everything under `outside/` (through the symlink too).
    fn escaped(&self) -> Vec<String> {
        std::fs::read_dir(&self.outside)
            .expect("outside/")
            .filter_map(Result::ok)
            .map(|e| e.path().display().to_string())
            .collect()
    }
}

/// A workflow's input for the path tests (small: one research direction for entity-intel).
fn path_test_input(graph: &str) -> Value {
    match graph {
        DUE_DILIGENCE => json!({
            "subject": "Orrin Castellane", "max_depth": 1,
            "max_queries_per_depth": 2, "stagnation_threshold": 2
        }),
        ENTITY_INTEL => {
            let sample: Value = serde_json::from_str(
                &std::fs::read_to_string(graphkit_examples::entity_intel::sample_input_path())
                    .expect("sample input"),
            )
            .expect("sample JSON");
            let mut bundle = sample["bundles"][0].clone();
            bundle["entities"] = json!([bundle["entities"][0].clone()]);
            bundle["entities"][0]["directions"] = json!([bundle["entities"][0]["directions"][0]]);
            json!({"episode": sample["episode"], "research_directions": {"bundles": [bundle]}})
        }
        ARXIV_RESEARCH => json!({"topic": "retrieval-augmented generation"}),
        MCP_RESEARCH => {
            json!({"input": "Which countries had the most events?", "max_iterations": 1})
        }
        BIOGRAPHY_EVENTS => json!({"person_to_research": "Odile Marchetti"}),
        other => panic!("no input for {other}"),
    }
}

/// The node a paused run stops before, for the updates (the first that writes files).
fn pause_before(graph: &str) -> &'static str {
    match graph {
        DUE_DILIGENCE => "generate_queries",
        ENTITY_INTEL => "research_agent",
        other => panic!("no update cases for {other}"),
    }
}

/// How one attempt ended: refused (status and body) or run on a thread.
enum Outcome {
    Refused(StatusCode, String),
    Ran(String),
}

impl WorkflowServer {
    /// `POST path` with `body`; `Err((status, body))` unless 2xx.
    async fn try_post(&self, path: &str, body: Value) -> Result<Value, (StatusCode, String)> {
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = response.status();
        let text = response.text().await.expect("body");
        if status.is_success() {
            Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
        } else {
            Err((status, text))
        }
    }

    /// `POST path` as written (an HTTP client would resolve `%2E%2E` in it as `..`, as
    /// URLs do), on a connection of its own; the status and the body.
    async fn raw_post(&self, path: &str, body: &Value) -> (StatusCode, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let addr = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let body = body.to_string();
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("the answer");
        let answer = String::from_utf8_lossy(&answer);
        let status = answer
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .and_then(|code| StatusCode::from_u16(code).ok())
            .unwrap_or_else(|| panic!("no status line: {answer}"));
        let text = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, text.to_owned())
    }

    /// Sets `field` to `value` the way its place says and runs the workflow to its end.
    async fn attempt(&self, field: Field, value: &str) -> Outcome {
        let graph = field.graph;
        match field.place {
            Place::ThreadId => {
                return match self.try_post("/threads", json!({"thread_id": value})).await {
                    Ok(created) => {
                        Outcome::Ran(created["thread_id"].as_str().unwrap_or_default().to_owned())
                    }
                    Err((status, text)) => Outcome::Refused(status, text),
                };
            }
            Place::ThreadPath => {
                let encoded: String = value.bytes().map(|b| format!("%{b:02X}")).collect();
                let body = json!({
                    "assistant_id": graph, "if_not_exists": "create",
                    "input": path_test_input(graph), "config": {"recursion_limit": 1000},
                });
                let (status, text) = self
                    .raw_post(&format!("/threads/{encoded}/runs/wait"), &body)
                    .await;
                return if status.is_success() {
                    Outcome::Ran(value.to_owned())
                } else {
                    Outcome::Refused(status, text)
                };
            }
            _ => {}
        }
        let thread = self.new_thread().await;
        let mut input = path_test_input(graph);
        let mut body = json!({"assistant_id": graph, "config": {"recursion_limit": 1000}});
        match field.place {
            // A name starting with `/` is a JSON pointer into the input.
            Place::Input => match input.pointer_mut(field.name) {
                Some(at) => *at = value.into(),
                None => input[field.name] = value.into(),
            },
            Place::Configurable => body["config"]["configurable"] = json!({field.name: value}),
            Place::Context => body["context"] = json!({field.name: value}),
            Place::Metadata => body["metadata"] = json!({field.name: value}),
            Place::CommandUpdate | Place::StateUpdate | Place::ThreadId | Place::ThreadPath => {}
        }
        let runs = format!("/threads/{thread}/runs/wait");
        let last = match field.place {
            Place::CommandUpdate | Place::StateUpdate => {
                let mut pause = body.clone();
                pause["input"] = input;
                pause["interrupt_before"] = json!([pause_before(graph)]);
                self.try_post(&runs, pause).await.expect("the run pauses");
                if field.place == Place::CommandUpdate {
                    body["command"] = json!({"update": {field.name: value}});
                } else {
                    let update = json!({"values": {field.name: value}});
                    if let Err((status, text)) = self
                        .try_post(&format!("/threads/{thread}/state"), update)
                        .await
                    {
                        return Outcome::Refused(status, text);
                    }
                    body["input"] = Value::Null;
                }
                self.try_post(&runs, body).await
            }
            _ => {
                body["input"] = input;
                self.try_post(&runs, body).await
            }
        };
        match last {
            Ok(_) => Outcome::Ran(thread),
            Err((status, text)) => Outcome::Refused(status, text),
        }
    }
}

/// The tempdir's entries besides the database, `files/`, `outside/` and `link`.
fn strays(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("the server's directory")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            !name.starts_with("server.db") && !["files", "outside", "link"].contains(&name.as_str())
        })
        .collect()
}

#[tokio::test]
async fn no_client_input_names_a_path_the_workflows_write() {
    let s = WorkflowServer::start().await;
    let sandbox = Sandbox::new(&s);
    let files = s.dir.path().join("files");
    let attempts: Vec<(Field, &'static str, String)> = FIELDS
        .iter()
        .flat_map(|f| {
            sandbox
                .payloads()
                .into_iter()
                .map(move |(what, p)| (*f, what, p))
        })
        .collect();
    let outcomes = futures::future::join_all(
        attempts
            .iter()
            .map(|(field, _, payload)| s.attempt(*field, payload)),
    )
    .await;

    for ((field, what, payload), outcome) in attempts.iter().zip(outcomes) {
        let case = format!(
            "{} {:?} `{}` = {what} ({payload:?})",
            field.graph, field.place, field.name
        );
        // The server refuses NUL (it cannot store it) and any thread id but a UUID; it
        // ignores the rest.
        let refusable =
            *what == "NUL" || matches!(field.place, Place::ThreadId | Place::ThreadPath);
        match outcome {
            Outcome::Refused(status, text) => {
                assert!(refusable, "{case}: refused: {status} {text}");
                assert!(status.is_client_error(), "{case}: {status} {text}");
                // "thread ID", "`command.update.session_id`", "the path" (a NUL in it).
                let named = text.to_lowercase().replace(' ', "_");
                let last = field.name.rsplit('/').next().unwrap_or(field.name);
                assert!(
                    named.contains(&last.to_lowercase())
                        || (field.place == Place::ThreadPath && named.contains("the_path")),
                    "{case}: the refusal names no field: {text}"
                );
            }
            Outcome::Ran(thread) => {
                assert!(!refusable, "{case}: accepted");
                // Ignored: every run ends well, and the files are where the server says.
                let runs = s.get_json(&format!("/threads/{thread}/runs")).await;
                for run in runs.as_array().expect("runs") {
                    assert_eq!(run["status"], "success", "{case}: {run}");
                }
                match field.graph {
                    DUE_DILIGENCE => {
                        let dd = files.join(DUE_DILIGENCE);
                        let session = format!("dd-{thread}");
                        assert!(
                            dd.join("audit").join(format!("{session}.jsonl")).is_file(),
                            "{case}: no audit file for {session}"
                        );
                        assert!(
                            dd.join("reports")
                                .join(format!("{session}_report.json"))
                                .is_file(),
                            "{case}: no report for {session}"
                        );
                    }
                    ENTITY_INTEL => {
                        let outputs = files.join(ENTITY_INTEL).join(&thread);
                        assert!(
                            outputs.join("research_complete.json").is_file(),
                            "{case}: no research_complete.json in {}",
                            outputs.display()
                        );
                    }
                    _ => {}
                }
            }
        }
    }
    assert_eq!(
        sandbox.escaped(),
        Vec::<String>::new(),
        "written outside the workflows dir"
    );
    assert_eq!(
        strays(s.dir.path()),
        Vec::<String>::new(),
        "written next to the workflows dir"
    );
    let cwd = std::env::current_dir().expect("working directory");
    assert!(
        !cwd.join("gk-escaped-relative").exists(),
        "written in the working directory"
    );
    let audit = files.join(DUE_DILIGENCE).join("audit");
    for entry in std::fs::read_dir(&audit)
        .expect("the audit folder")
        .filter_map(Result::ok)
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(
            name.starts_with("dd-") && name.ends_with(".jsonl"),
            "audit file {name}"
        );
    }
    s.stop().await;
}
