//! The MCP research agent (seed 004): the marker sequence, status during and after a run,
//! multi-tool merging, the HTTP API's 400/404, an MCP server dying mid-run, a killed
//! service resuming its session, and a weak real model.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit::checkpoint::{Checkpointer, InMemorySaver};
use graphkit_examples::mcp_research::{
    CompleteStats, Engine, EngineConfig, EventsSource, Marker, ResearchPhase, ResearchRequest,
    offline_model, service,
};
use graphkit_llm::{AssistantMessage, ChatModel, ChatRequest};
use graphkit_tools::ToolError;
use graphkit_tools::mcp::{McpCallResult, McpToolInfo};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// **Test double**: a canned events source with two tools over eight fixed events, so
/// engine tests need no server process. `analyze_all_events` counts every event;
/// `analyze_events_by_conclusion` only those with the `conclusion` argument (default
/// `confirmed`).
#[derive(Debug, Default)]
struct CannedEvents;

const EVENTS: [(&str, &str, &str, &str, i64); 8] = [
    ("ev-1", "Norway", "flood", "confirmed", 2021),
    ("ev-2", "Norway", "storm", "confirmed", 2022),
    ("ev-3", "Norway", "flood", "disputed", 2023),
    ("ev-4", "Chile", "quake", "confirmed", 2021),
    ("ev-5", "Chile", "quake", "disputed", 2022),
    ("ev-6", "Kenya", "drought", "confirmed", 2020),
    ("ev-7", "Kenya", "flood", "confirmed", 2024),
    ("ev-8", "Peru", "storm", "disputed", 2019),
];

fn source_of(e: &(&str, &str, &str, &str, i64)) -> Value {
    json!({"country": e.1, "event_type": e.2, "conclusion": e.3, "year": e.4,
           "title": format!("{} {} {}", e.1, e.2, e.4),
           "summary": format!("A {} in {} in {}.", e.2, e.1, e.4),
           "url": format!("https://events.example/{}", e.0)})
}

impl CannedEvents {
    fn answer(tool: &str, args: &Value) -> Value {
        let conclusion = args["conclusion"].as_str().unwrap_or("confirmed");
        let events: Vec<_> = EVENTS
            .iter()
            .filter(|e| tool == "analyze_all_events" || e.3 == conclusion)
            .collect();
        let field = args["group_by"].as_str().unwrap_or("country");
        let per_bucket = args["samples_per_bucket"].as_u64().unwrap_or(0) as usize;
        let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for e in &events {
            let source = source_of(e);
            let key = match &source[field] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            groups
                .entry(key)
                .or_default()
                .push(json!({"_id": e.0, "_source": source}));
        }
        let mut buckets: Vec<Value> = groups
            .iter()
            .map(|(key, hits)| {
                json!({"key": key, "doc_count": hits.len(),
                       "samples": {"hits": {"hits": hits.iter().take(per_bucket).collect::<Vec<_>>()}}})
            })
            .collect();
        buckets.sort_by_key(|b| std::cmp::Reverse(b["doc_count"].as_u64()));
        let hits: Vec<Value> = events
            .iter()
            .map(|e| json!({"_id": e.0, "_source": source_of(e)}))
            .collect();
        json!({"aggregations": {"group_by": {"buckets": buckets}}, "hits": {"hits": hits}})
    }
}

#[async_trait]
impl EventsSource for CannedEvents {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        Ok(["analyze_all_events", "analyze_events_by_conclusion"]
            .into_iter()
            .map(|name| McpToolInfo {
                name: name.into(),
                description: format!("{name} (canned test double)"),
                input_schema: json!({"type": "object"}),
                output_schema: None,
            })
            .collect())
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallResult, ToolError> {
        Ok(McpCallResult {
            text: String::new(),
            structured: Some(Self::answer(name, &arguments)),
            is_error: false,
        })
    }
}

/// **Test double**: the offline stand-in behind a gate; each model call waits for a
/// permit, so a test can look at a session while it is parked mid-run.
#[derive(Debug)]
struct GatedModel {
    inner: graphkit_llm::StandInModel,
    gate: Arc<Semaphore>,
}

#[async_trait]
impl ChatModel for GatedModel {
    fn model_name(&self) -> &str {
        "gated-offline-stand-in"
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage, graphkit_llm::LlmError> {
        if let Ok(permit) = self.gate.acquire().await {
            permit.forget();
        }
        self.inner.chat(request).await
    }
}

fn engine_over(source: Arc<dyn EventsSource>, checkpointer: Arc<dyn Checkpointer>) -> Engine {
    Engine::new(EngineConfig::new(source, checkpointer)).expect("the graph builds")
}

async fn collect(mut markers: tokio::sync::mpsc::UnboundedReceiver<Marker>) -> Vec<Marker> {
    let mut all = Vec::new();
    while let Some(marker) = markers.recv().await {
        all.push(marker);
    }
    all
}

/// The markers' names with repeats of THINKING collapsed (THINKING texts are free).
/// The stdout of a CLI run, which must have succeeded (else its stderr is shown).
fn stdout_of_success(output: &std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The report a run's markers carry.
fn report_in(markers: &[Marker]) -> &str {
    markers
        .iter()
        .find_map(|m| match m {
            Marker::MarkdownContent(report) => Some(report.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no report: {markers:?}"))
}

/// The stats of the RESEARCH_COMPLETE marker a finished run's markers end with.
fn stats_in(markers: &[Marker]) -> &CompleteStats {
    match markers.last() {
        Some(Marker::ResearchComplete(stats)) => stats,
        _ => panic!("no RESEARCH_COMPLETE: {markers:?}"),
    }
}

fn shape(markers: &[Marker]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in markers {
        let item = match m {
            Marker::Phase(p) => format!("PHASE:{}", p.as_str()),
            Marker::Progress(p) => format!("PROGRESS:{p}"),
            other => other.name().to_owned(),
        };
        if item == "THINKING" && out.last().is_some_and(|l| l == "THINKING") {
            continue;
        }
        out.push(item);
    }
    out
}

/// The marker sequence of the offline flow (THINKING runs collapsed).
const GOLDEN: [&str; 29] = [
    "RESEARCH_START",
    "PHASE:planning",
    "THINKING",
    "PROGRESS:5",
    "THINKING",
    "PHASE:decomposing",
    "THINKING",
    "PHASE:aggregating",
    "THINKING",
    "CHART_CONFIGS",
    "PHASE:planning",
    "PROGRESS:13",
    "THINKING",
    "PHASE:sampling",
    "THINKING",
    "SOURCES",
    "PHASE:planning",
    "PROGRESS:21",
    "THINKING",
    "PHASE:synthesizing",
    "PROGRESS:90",
    "THINKING",
    "PHASE:complete",
    "PROGRESS:100",
    "FINAL_RESPONSE_START",
    "MARKDOWN_CONTENT_START",
    "MARKDOWN",
    "MARKDOWN_CONTENT_END",
    "RESEARCH_COMPLETE",
];

#[tokio::test]
async fn offline_session_streams_the_seed_markers_in_order() {
    let engine = engine_over(Arc::new(CannedEvents), Arc::new(InMemorySaver::new()));
    let session = engine
        .start(ResearchRequest::new(
            "Which countries have the most events?",
        ))
        .await
        .expect("starts");
    assert!(session.session_id.starts_with("research-"));
    let id = session.session_id.clone();
    let markers = collect(session.markers).await;
    assert_eq!(shape(&markers), GOLDEN);
    assert_eq!(
        markers[0],
        Marker::ResearchStart {
            session_id: id.clone()
        }
    );
    assert!(markers.contains(&Marker::Thinking(
        "Creating initial research plan...".into()
    )));
    assert!(markers.contains(&Marker::Thinking("Executing aggregator...".into())));
    let report = report_in(&markers);
    // The stand-in's report carries the real counts: Norway 3 of 8, Chile 2, Kenya 2.
    assert!(report.starts_with("## Research Report"), "{report}");
    assert!(report.contains("| Norway | 3 | 37.5% |"), "{report}");
    let stats = stats_in(&markers);
    assert_eq!(stats.iterations, 3);
    // Four countries, two samples per bucket at most: 2 + 2 + 2 + 1.
    assert_eq!(stats.docs_processed, 7);
    assert!((stats.confidence - 0.85).abs() < 1e-6);
    let Some(Marker::ChartConfigs(charts)) = markers
        .iter()
        .find(|m| matches!(m, Marker::ChartConfigs(_)))
    else {
        panic!("no chart");
    };
    assert_eq!(charts[0].kind, "bar");
    assert_eq!(charts[0].data.labels[0], "Norway");
    assert_eq!(charts[0].data.datasets[0].data[0], 3);
}

#[tokio::test]
async fn status_is_reported_during_and_after_a_run() {
    let gate = Arc::new(Semaphore::new(0));
    let config = EngineConfig {
        default_model: "openai:unused".parse().expect("spec"),
        ..EngineConfig::new(Arc::new(CannedEvents), Arc::new(InMemorySaver::new()))
    };
    // The request names the offline provider; the gated stand-in plays it.
    let config = EngineConfig {
        offline: Arc::new(GatedModel {
            inner: offline_model(),
            gate: Arc::clone(&gate),
        }),
        ..config
    };
    let engine = Engine::new(config).expect("builds");
    assert!(
        engine
            .status("research-none")
            .await
            .expect("reads")
            .is_none()
    );
    let mut session = engine
        .start(ResearchRequest {
            llm_provider: Some("offline".into()),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("starts");
    let id = session.session_id.clone();
    // Parked in the planner's first model call.
    while let Some(marker) = session.markers.recv().await {
        if marker == Marker::Thinking("Creating initial research plan...".into()) {
            break;
        }
    }
    let during = engine.status(&id).await.expect("reads").expect("known");
    assert!(during.running);
    assert!(!during.complete);
    assert_eq!(during.phase, ResearchPhase::Planning);
    assert_eq!(during.iteration, 0);
    // A second start of a running session is refused.
    let again = engine
        .start(ResearchRequest {
            session_id: Some(id.clone()),
            ..ResearchRequest::new("again")
        })
        .await;
    assert!(matches!(
        again,
        Err(graphkit_examples::shared::ExampleError::SessionBusy(_))
    ));
    gate.add_permits(1_000);
    let rest = collect(session.markers).await;
    assert!(matches!(rest.last(), Some(Marker::ResearchComplete(_))));
    session.finished.await.expect("joins").expect("finishes");
    let after = engine.status(&id).await.expect("reads").expect("known");
    assert!(!after.running);
    assert!(after.complete);
    assert_eq!(after.phase, ResearchPhase::Complete);
    assert_eq!(after.progress, 100);
    assert_eq!(after.iteration, 3);
    assert_eq!(after.docs_processed, 7);
    assert!(after.findings_count > 0);
}

#[tokio::test]
async fn a_dropped_receiver_does_not_stop_the_run() {
    let engine = engine_over(Arc::new(CannedEvents), Arc::new(InMemorySaver::new()));
    let session = engine
        .start(ResearchRequest::new(
            "Which countries have the most events?",
        ))
        .await
        .expect("starts");
    let id = session.session_id.clone();
    drop(session.markers);
    let state = session.finished.await.expect("joins").expect("finishes");
    assert!(state.final_report.is_some());
    assert!(
        engine
            .status(&id)
            .await
            .expect("reads")
            .expect("known")
            .complete
    );
}

#[tokio::test]
async fn multi_tool_aggregation_sums_same_key_buckets() {
    use graphkit_examples::mcp_research::{AgentContext, ResearchAgentState, SubAgentRegistry};
    let source: Arc<dyn EventsSource> = Arc::new(CannedEvents);
    let state = ResearchAgentState {
        input: "q".into(),
        enabled_tools: vec![
            "analyze_all_events".into(),
            "analyze_events_by_conclusion".into(),
        ],
        ..ResearchAgentState::default()
    };
    let ctx = AgentContext {
        state: Arc::new(state),
        model: Arc::new(offline_model()),
        source,
    };
    let aggregator = SubAgentRegistry::standard();
    let aggregator = aggregator.get("aggregator").expect("registered");
    let run = |args: Value| {
        let ctx = ctx.clone();
        async move { aggregator.run(&args, &ctx).await.expect("runs") }
    };
    let all = run(json!({"use_all_enabled": true, "group_by": "country"})).await;
    let names = run(json!({"tool_names": ["analyze_all_events", "analyze_events_by_conclusion"], "group_by": "country"})).await;
    let one = run(json!({"tool_name": "analyze_all_events", "group_by": "country"})).await;
    let merged = &all.aggregations[0];
    assert_eq!(
        merged.tool,
        "analyze_all_events+analyze_events_by_conclusion"
    );
    assert_eq!(names.aggregations, all.aggregations);
    // Every event once, plus the confirmed ones again: Norway 3+2, Kenya 2+2, Chile 2+1, Peru 1+0.
    let counts: Vec<(&str, u64)> = merged
        .buckets
        .iter()
        .map(|b| (b.key.as_str(), b.doc_count))
        .collect();
    assert_eq!(
        counts,
        [("Norway", 5), ("Kenya", 4), ("Chile", 3), ("Peru", 1)]
    );
    assert_eq!(one.aggregations[0].total(), 8);
    // A tool that is not enabled is dropped with a note; none left is a failed call.
    let unknown = run(json!({"tool_name": "logs_tool"})).await;
    assert!(unknown.failed);
    assert!(unknown.note.contains("logs_tool"), "{}", unknown.note);
}

#[tokio::test]
async fn unknown_enabled_tools_are_dropped_with_a_warning_and_none_left_is_an_error() {
    let engine = engine_over(Arc::new(CannedEvents), Arc::new(InMemorySaver::new()));
    let session = engine
        .start(ResearchRequest {
            enabled_tools: Some(vec!["analyze_all_events".into(), "logs_tool".into()]),
            max_iterations: Some(3),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    assert!(markers.iter().any(
        |m| matches!(m, Marker::Thinking(t) if t.starts_with("Warning: ignoring unknown tools logs_tool"))
    ));
    assert!(matches!(markers.last(), Some(Marker::ResearchComplete(_))));
    let session = engine
        .start(ResearchRequest {
            enabled_tools: Some(vec!["logs_tool".into()]),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    let Some(Marker::Error { message }) = markers.last() else {
        panic!("no ERROR marker: {markers:?}");
    };
    assert!(message.contains("none of the enabled tools"), "{message}");
}

/// Starts the service on 127.0.0.1 (port 0) and returns its base URL.
async fn serve(engine: Engine) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, service::router(engine)).await;
    });
    format!("http://{address}")
}

/// The SSE events of a response body, each event's `data:` lines joined by `\n`.
async fn sse_events(response: reqwest::Response) -> Vec<String> {
    let body = response.text().await.expect("body");
    body.split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .collect()
}

#[tokio::test]
async fn the_http_api_answers_400_for_invalid_requests_404_for_unknown_sessions_and_streams_sse() {
    let base = serve(engine_over(
        Arc::new(CannedEvents),
        Arc::new(InMemorySaver::new()),
    ))
    .await;
    let client = graphkit_llm::http::client_builder()
        .build()
        .expect("an HTTP client");
    for body in [
        json!({}),
        json!({"query": "  "}),
        json!({"query": "q", "llm_provider": "cohere"}),
        json!({"query": "q", "max_iterations": 0}),
        json!({"query": "q", "max_iterations": 51}),
        json!({"query": "q", "session_id": "bad id/../x"}),
    ] {
        let response = client
            .post(format!("{base}/research"))
            .json(&body)
            .send()
            .await
            .expect("answers");
        assert_eq!(response.status(), 400, "{body}");
        assert!(response.headers().get("content-type").is_some_and(|v| {
            v.to_str()
                .unwrap_or_default()
                .starts_with("application/json")
        }));
        let error: Value = response.json().await.expect("json");
        assert!(
            error["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{error}"
        );
    }
    let not_json = client
        .post(format!("{base}/research"))
        .body("{query")
        .send()
        .await
        .expect("answers");
    assert_eq!(not_json.status(), 400);

    let missing = client
        .get(format!("{base}/research/status/research-nope"))
        .send()
        .await
        .expect("answers");
    assert_eq!(missing.status(), 404);
    assert!(missing.json::<Value>().await.expect("json")["error"].is_string());

    let response = client
        .post(format!("{base}/research"))
        .json(&json!({"query": "Which countries have the most events?", "session_id": "research-http-1"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response
            .headers()
            .get("x-session-id")
            .and_then(|v| v.to_str().ok()),
        Some("research-http-1")
    );
    assert!(response.headers().get("content-type").is_some_and(|v| {
        v.to_str()
            .unwrap_or_default()
            .starts_with("text/event-stream")
    }));
    let events = sse_events(response).await;
    assert_eq!(
        events[0],
        r#"RESEARCH_START:{"session_id":"research-http-1"}"#
    );
    let start = events
        .iter()
        .position(|e| e == "MARKDOWN_CONTENT_START:")
        .expect("markdown start");
    assert!(events[start + 1].starts_with("## Research Report\n"));
    assert_eq!(events[start + 2], "MARKDOWN_CONTENT_END:");
    assert!(
        events
            .last()
            .is_some_and(|e| e.starts_with("RESEARCH_COMPLETE:{\"iterations\":3,"))
    );

    let status: Value = client
        .get(format!("{base}/research/status/research-http-1"))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(status["complete"], true);
    assert_eq!(status["phase"], "complete");
    assert_eq!(status["progress"], 100);
    assert_eq!(status["iteration"], 3);

    let tools: Value = client
        .get(format!("{base}/research/tools"))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(tools["tools"][0]["name"], "analyze_all_events");
}

#[tokio::test]
async fn many_sessions_run_concurrently() {
    let engine = engine_over(Arc::new(CannedEvents), Arc::new(InMemorySaver::new()));
    let mut sessions = Vec::new();
    for i in 0..6 {
        sessions.push(
            engine
                .start(ResearchRequest {
                    session_id: Some(format!("research-many-{i}")),
                    ..ResearchRequest::new("Which event types are most common?")
                })
                .await
                .expect("starts"),
        );
    }
    for session in sessions {
        let markers = collect(session.markers).await;
        let Some(Marker::ResearchComplete(stats)) = markers.last() else {
            panic!("{} did not complete", session.session_id);
        };
        assert_eq!(stats.iterations, 3);
    }
}

const EVENTS_MCP: &str = env!("CARGO_BIN_EXE_graphkit-events-mcp");
const CLI: &str = env!("CARGO_BIN_EXE_graphkit-research");

async fn bundled_server() -> Arc<graphkit_tools::mcp::McpClient> {
    graphkit_tools::mcp::McpClient::stdio("events", EVENTS_MCP, Vec::<String>::new())
        .await
        .expect("the bundled events MCP server starts")
}

#[tokio::test]
async fn offline_research_over_the_bundled_server_reports_its_real_counts() {
    let client = bundled_server().await;
    let source: Arc<dyn EventsSource> =
        Arc::new(graphkit_tools::mcp::McpToolSet::new([Arc::clone(&client)]));
    let engine = engine_over(source, Arc::new(InMemorySaver::new()));
    let session = engine
        .start(ResearchRequest::new(
            "Which countries have the most events?",
        ))
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    assert_eq!(shape(&markers), GOLDEN);
    let report = report_in(&markers);
    // The dataset's counts (checked against a reference count in mcp_events_server.rs).
    assert!(report.contains("| United States | 333 |"), "{report}");
    assert!(report.contains("| India | 231 |"), "{report}");
    assert!(report.contains("2000 events"), "{report}");
    let stats = stats_in(&markers);
    assert_eq!(stats.iterations, 3);
    // Five largest countries, two samples each.
    assert_eq!(stats.docs_processed, 10);
    client.close().await;
}

/// **Test double**: the real events server behind a switch that kills the server process
/// (SIGKILL) just before the first sampling call goes out, as a crash mid-run would.
#[derive(Debug)]
struct KillBeforeSampling {
    client: Arc<graphkit_tools::mcp::McpClient>,
    killed: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl EventsSource for KillBeforeSampling {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        self.client.list_tools().await
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallResult, ToolError> {
        if arguments.get("samples_per_bucket").is_some()
            && !self.killed.swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            let pid = self
                .client
                .server_pid()
                .await
                .expect("a stdio server has a pid");
            let status = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status()
                .expect("kill runs");
            assert!(status.success());
        }
        self.client.call_tool(name, arguments).await
    }
}

#[tokio::test]
async fn mcp_server_dying_mid_run_ends_with_an_error_marker_and_the_session_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sessions.sqlite");
    let client = bundled_server().await;
    client.reconnect(false);
    let saver = graphkit::checkpoint::SqliteSaver::open(&db)
        .await
        .expect("db");
    let engine = engine_over(
        Arc::new(KillBeforeSampling {
            client: Arc::clone(&client),
            killed: false.into(),
        }),
        Arc::new(saver.clone()),
    );
    let session = engine
        .start(ResearchRequest {
            session_id: Some("research-mcp-dies".into()),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    let Some(Marker::Error { message }) = markers.last() else {
        panic!("no ERROR marker: {markers:?}");
    };
    assert!(message.contains("MCP server"), "{message}");
    assert!(message.contains("research-mcp-dies"), "{message}");
    assert!(
        !markers
            .iter()
            .any(|m| matches!(m, Marker::FinalResponseStart))
    );
    assert!(session.finished.await.expect("joins").is_err());
    let status = engine
        .status("research-mcp-dies")
        .await
        .expect("reads")
        .expect("the session is kept");
    assert!(!status.complete);
    assert_eq!(
        status.iteration, 2,
        "iteration 1 and the plan of 2 are saved"
    );
    drop(engine);
    saver.pool().close().await;

    // The server is back (a new process): the same session continues and finishes.
    let saver = graphkit::checkpoint::SqliteSaver::open(&db)
        .await
        .expect("db");
    let client = bundled_server().await;
    let engine = engine_over(
        Arc::new(graphkit_tools::mcp::McpToolSet::new([Arc::clone(&client)])),
        Arc::new(saver),
    );
    let session = engine
        .start(ResearchRequest {
            session_id: Some("research-mcp-dies".into()),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("resumes");
    let markers = collect(session.markers).await;
    assert!(markers.iter().any(
        |m| matches!(m, Marker::Thinking(t) if t.starts_with("Resuming session research-mcp-dies"))
    ));
    // The first iteration is not run again: one aggregation, one chart.
    assert!(!markers.contains(&Marker::Thinking("Executing aggregator...".into())));
    let stats = stats_in(&markers);
    assert_eq!(stats.iterations, 3);
    let state = session.finished.await.expect("joins").expect("finishes");
    assert_eq!(state.aggregation_results.len(), 1);
    client.close().await;
}

/// Reads the child's stdout until the line starting with `prefix`.
fn read_line_starting(out: &mut impl std::io::BufRead, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("reads");
        assert!(n > 0, "the process ended before printing `{prefix}`");
        if line.starts_with(prefix) {
            return line.trim_end().to_owned();
        }
    }
}

fn start_service(out_dir: &std::path::Path, delay_ms: u64) -> (std::process::Child, String) {
    let mut child = std::process::Command::new(CLI)
        .args(["mcp-research", "serve", "--listen", "127.0.0.1:0", "--out"])
        .arg(out_dir)
        .args(["--offline-delay-ms", &delay_ms.to_string(), "--mcp-server"])
        .arg(format!("stdio:{EVENTS_MCP}"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the service starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut reader = std::io::BufReader::new(stdout);
    let line = read_line_starting(&mut reader, "listening on ");
    let url = line
        .trim_start_matches("listening on ")
        .split_whitespace()
        .next()
        .expect("url")
        .to_owned();
    (child, url)
}

#[tokio::test]
async fn a_killed_service_keeps_its_sessions_and_resumes_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every model reply takes ten minutes: the session parks in its first planning call.
    let (mut first, base) = start_service(dir.path(), 600_000);
    let client = graphkit_llm::http::client_builder()
        .build()
        .expect("an HTTP client");
    let mut response = client
        .post(format!("{base}/research"))
        .json(&json!({"query": "Which countries have the most events?", "session_id": "research-killed"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(response.status(), 200);
    let mut seen = String::new();
    while !seen.contains("data: THINKING:Creating initial research plan...") {
        let chunk = response
            .chunk()
            .await
            .expect("reads")
            .expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    first.kill().expect("SIGKILL");
    first.wait().expect("reaped");

    let (mut second, base) = start_service(dir.path(), 0);
    let status: Value = client
        .get(format!("{base}/research/status/research-killed"))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(status["complete"], false);
    assert_eq!(status["running"], false);
    assert_eq!(status["phase"], "planning");
    assert_eq!(status["iteration"], 0);
    let response = client
        .post(format!("{base}/research"))
        .json(&json!({"query": "Which countries have the most events?", "session_id": "research-killed"}))
        .send()
        .await
        .expect("answers");
    let events = sse_events(response).await;
    assert!(
        events
            .iter()
            .any(|e| e.starts_with("THINKING:Resuming session research-killed"))
    );
    assert!(
        events
            .last()
            .is_some_and(|e| e.starts_with("RESEARCH_COMPLETE:{\"iterations\":3,")),
        "{events:?}"
    );
    let status: Value = client
        .get(format!("{base}/research/status/research-killed"))
        .send()
        .await
        .expect("answers")
        .json()
        .await
        .expect("json");
    assert_eq!(status["complete"], true);
    second.kill().expect("stops");
    second.wait().expect("reaped");
}

#[test]
fn the_cli_prints_the_markers_and_writes_the_report_summary_and_transcript() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let output = std::process::Command::new(CLI)
        .args([
            "mcp-research",
            "Which countries have the most events?",
            "--out",
        ])
        .arg(&run)
        .output()
        .expect("runs");
    let stdout = stdout_of_success(&output);
    assert!(
        stdout.starts_with("RESEARCH_START:{\"session_id\":\"research-"),
        "{stdout}"
    );
    assert!(stdout.contains("\nCHART_CONFIGS:[{\"type\":\"bar\""));
    assert!(stdout.contains("\nRESEARCH_COMPLETE:{\"iterations\":3,\"docs_processed\":10,"));
    let report = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(report.starts_with("## Research Report"));
    assert!(report.contains("| United States | 333 |"));
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("run_summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(summary["iterations"], 3);
    assert_eq!(summary["complete"], true);
    let transcript = std::fs::read_to_string(run.join("sse.txt")).expect("sse.txt");
    assert!(transcript.starts_with("data: RESEARCH_START:"));
    assert!(
        transcript.contains("data: MARKDOWN_CONTENT_START:\n\ndata: ## Research Report\ndata: \n")
    );
}

#[test]
fn a_killed_cli_run_resumes_with_resume() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let mut child = std::process::Command::new(CLI)
        .args([
            "mcp-research",
            "Which event types are most common?",
            "--offline-delay-ms",
            "600000",
            "--out",
        ])
        .arg(&run)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("runs");
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    read_line_starting(&mut out, "THINKING:Creating initial research plan...");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let mut rest = String::new();
    let _ = out.read_line(&mut rest);

    let output = std::process::Command::new(CLI)
        .args(["mcp-research", "--resume", "--out"])
        .arg(&run)
        .output()
        .expect("resumes");
    let stdout = stdout_of_success(&output);
    assert!(
        stdout.contains("THINKING:Resuming session research-"),
        "{stdout}"
    );
    assert!(
        stdout.contains("RESEARCH_COMPLETE:{\"iterations\":3,"),
        "{stdout}"
    );
    let report = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(report.contains("Events by **event_type**"), "{report}");
}

#[tokio::test]
async fn a_weak_local_model_ends_the_research_within_its_limits() {
    // About three minutes on the local model: the planner and the sub-agents write long
    // replies (no token cap in the workflow yet; see issue 25).
    let Some(spec) = common::slow_local_model_spec() else {
        return;
    };
    let client = bundled_server().await;
    let config = EngineConfig {
        default_model: spec.parse().expect("spec"),
        ..EngineConfig::new(
            Arc::new(graphkit_tools::mcp::McpToolSet::new([Arc::clone(&client)])),
            Arc::new(InMemorySaver::new()),
        )
    };
    let engine = Engine::new(config).expect("builds");
    let session = engine
        .start(ResearchRequest {
            max_iterations: Some(1),
            ..ResearchRequest::new("Which countries have the most events?")
        })
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    let state = session
        .finished
        .await
        .expect("joins")
        .expect("the run ends with a report");
    assert_eq!(state.iteration_count, 1);
    let report = state.final_report.expect("report");
    assert!(report.starts_with("## Research Report"), "{report}");
    assert!((0.0..=1.0).contains(&state.overall_confidence));
    assert!(matches!(markers.last(), Some(Marker::ResearchComplete(_))));
    client.close().await;
}

#[tokio::test]
async fn a_spent_time_budget_sends_the_research_to_synthesis_and_the_report_says_nothing_was_gathered()
 {
    let spent: Arc<dyn ChatModel> = Arc::new(graphkit_llm::FunctionModel::new(|_| {
        Err(graphkit_llm::LlmError::BudgetSpent {
            reason: "the run's time budget of 60 s for model calls is spent".into(),
        })
    }));
    let client = bundled_server().await;
    let config = EngineConfig {
        offline: spent,
        ..EngineConfig::new(
            Arc::new(graphkit_tools::mcp::McpToolSet::new([Arc::clone(&client)])),
            Arc::new(InMemorySaver::new()),
        )
    };
    let engine = Engine::new(config).expect("builds");
    let session = engine
        .start(ResearchRequest::new(
            "Which countries have the most events?",
        ))
        .await
        .expect("starts");
    let markers = collect(session.markers).await;
    let state = session
        .finished
        .await
        .expect("joins")
        .expect("the run ends with a report, not an error");
    // The first planning saw the budget spent and went straight to synthesis.
    assert_eq!(state.iteration_count, 1);
    let report = state.final_report.expect("report");
    assert!(report.contains("**Nothing gathered:**"), "{report}");
    assert!(report.contains("time budget"), "{report}");
    assert!(matches!(markers.last(), Some(Marker::ResearchComplete(_))));
    client.close().await;
}
