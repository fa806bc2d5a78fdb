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
    // Made from the server's run id (kept when another process takes the run over).
    let run_id = session
        .strip_prefix("dd-")
        .expect("a due-diligence session id");
    assert!(
        run_id.len() == 36 && run_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'),
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

#[tokio::test]
async fn due_diligence_refuses_a_session_id_a_client_turned_into_a_path() {
    let s = WorkflowServer::start().await;
    let thread = s.new_thread().await;
    let input = json!({
        "subject": "Orrin Castellane",
        "max_depth": 1,
        "max_queries_per_depth": 3,
        "stagnation_threshold": 2
    });
    let paused = s
        .post_json(
            &format!("/threads/{thread}/runs/wait"),
            json!({"assistant_id": DUE_DILIGENCE, "input": input, "interrupt_before": ["synthesize_report"]}),
            StatusCode::OK,
        )
        .await;
    assert!(
        paused["report"].is_null(),
        "paused before the report: {paused}"
    );
    s.post_json(
        &format!("/threads/{thread}/runs/wait"),
        json!({
            "assistant_id": DUE_DILIGENCE,
            "command": {"update": {"session_id": "../escaped"}},
        }),
        StatusCode::OK,
    )
    .await;
    let runs = s.get_json(&format!("/threads/{thread}/runs")).await;
    assert_eq!(runs[0]["status"], "error", "{runs}");
    let files = s.dir.path().join("files").join(DUE_DILIGENCE);
    for escaped in [
        "escaped.jsonl",
        "escaped_report.json",
        "escaped_report.html",
    ] {
        assert!(!files.join(escaped).exists(), "{escaped} was written");
    }
    s.stop().await;
}
