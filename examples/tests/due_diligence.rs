//! The due-diligence workflow (seed 001), offline: end to end, routing order, dedup,
//! failed searches, kill and resume, bad input, evaluation.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use graphkit::checkpoint::{Checkpointer, SqliteSaver};
use graphkit_examples::due_diligence::{
    DueDiligenceOptions, DueDiligenceOutcome, DueDiligenceState, Investigation, TerminationReason,
    corpus_dir, evaluate, offline_model, personas_path, read_personas, run_due_diligence,
    select_queries, should_continue_research,
};
use graphkit_examples::shared::{RunDir, RunTarget};
use graphkit_llm::ChatModel;
use graphkit_tools::AuditLog;
use graphkit_tools::ToolError;
use graphkit_tools::prebuilt::search::{ExtractedPage, LocalCorpus, SearchBackend, SearchResult};
use serde_json::Value;

fn corpus() -> Arc<dyn SearchBackend> {
    Arc::new(LocalCorpus::open(corpus_dir()).expect("corpus"))
}

fn options(
    dir: &Path,
    search: Arc<dyn SearchBackend>,
    checkpointer: Arc<dyn Checkpointer>,
    resume: bool,
) -> DueDiligenceOptions {
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    DueDiligenceOptions {
        strategy_model: Arc::clone(&model),
        search_model: model,
        search,
        results_per_search: 3,
        max_concurrent_searches: 5,
        target: RunTarget {
            resume,
            ..RunTarget::new("t1", RunDir::create(dir).expect("run dir"), checkpointer)
        },
        session_id: None,
    }
}

async fn run(investigation: Investigation) -> (tempfile::TempDir, DueDiligenceOutcome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let saver = Arc::new(graphkit::checkpoint::InMemorySaver::new());
    let outcome = run_due_diligence(&investigation, &options(dir.path(), corpus(), saver, false))
        .await
        .expect("run");
    (dir, outcome)
}

fn investigation(subject: &str, max_depth: u32, stagnation: u32) -> Investigation {
    Investigation {
        max_depth,
        stagnation_threshold: stagnation,
        ..Investigation::new(subject, "")
    }
}

fn audit_events(outcome: &DueDiligenceOutcome) -> Vec<Value> {
    AuditLog::read(&outcome.summary.audit_trail).expect("audit trail")
}

#[tokio::test]
async fn offline_run_writes_the_18_section_report_html_audit_trail_and_summary() {
    let (dir, outcome) = run(investigation("Orrin Castellane", 5, 2)).await;
    let state = &outcome.state;
    assert_eq!(
        state.termination_reason,
        Some(TerminationReason::ReflectionStop)
    );
    assert_eq!(state.current_depth, 3, "depths 0, 1 and 2 ran");

    // Facts reachable only through depth-1 queries were found.
    let names: Vec<&str> = state
        .discovered_entities
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    for name in [
        "Orrin Castellane",
        "Blackfen Holdings Ltd",
        "Merrow Trade SA",
        "Idris Fenwick",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let subject = &state.discovered_entities[0];
    assert!(
        subject.aliases.iter().any(|a| a == "O. Castellane"),
        "{:?}",
        subject.aliases
    );
    let first_depth_of = |name: &str| {
        state
            .discovered_entities
            .iter()
            .find(|e| e.name == name)
            .unwrap()
            .first_seen_depth
    };
    assert_eq!(first_depth_of("Idris Fenwick"), 1);
    assert_eq!(first_depth_of("Varro Maritime Authority"), 2);

    // The JSON report: 18 sections plus metadata.
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(&outcome.summary.report_json).unwrap())
            .unwrap();
    let sections = json
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| *k != "metadata" && *k != "evidence")
        .count();
    assert_eq!(sections, 18);
    assert_eq!(json["risk_assessment"]["overall_risk"], "high");
    assert_eq!(json["red_flags"].as_array().unwrap().len(), 2);
    assert_eq!(json["metadata"]["termination_reason"], "reflection_stop");
    assert_eq!(
        json["metadata"]["models"]["strategy"],
        "offline-due-diligence"
    );
    assert_eq!(
        json["metadata"]["statistics"]["searches"],
        state.search_count
    );
    assert!(
        state
            .entity_graph
            .edges
            .iter()
            .any(|e| e.source == "Blackfen Holdings Ltd" && e.target == "Merrow Trade SA")
    );
    assert!(!state.entity_graph.suspicious_connections.is_empty());

    // The HTML report: self-contained, risk level and graph at the top.
    let html = std::fs::read_to_string(&outcome.summary.report_html).unwrap();
    assert!(html.contains("Overall risk: HIGH"));
    assert!(html.contains("<svg") && html.contains("Blackfen Holdings Ltd"));
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));

    // The audit trail: every node's start and end, each search once, model calls, routing.
    let events = audit_events(&outcome);
    let count = |kind: &str| events.iter().filter(|e| e["event"] == kind).count();
    assert_eq!(count("search") as u64, state.search_count);
    assert_eq!(count("routing"), 3);
    assert!(count("model_call") > 10);
    for node in [
        "initialize",
        "generate_queries",
        "analyze_and_reflect",
        "map_connections",
        "synthesize_report",
    ] {
        assert!(
            events
                .iter()
                .any(|e| e["event"] == "node_end" && e["node"] == node),
            "{node}"
        );
    }
    assert!(
        events
            .iter()
            .all(|e| e["session_id"] == state.session_id.as_str() && e["ts"].is_string())
    );
    assert!(dir.path().join("run_summary.json").exists());
}

#[tokio::test]
async fn max_depth_is_checked_before_the_reflection() {
    // At depth 2 the reflection recommends stopping, but max depth (3) is checked first.
    let (_dir, outcome) = run(investigation("Orrin Castellane", 3, 2)).await;
    assert_eq!(
        outcome.state.termination_reason,
        Some(TerminationReason::MaxDepth)
    );
    assert_eq!(outcome.state.current_depth, 3);
    assert!(!outcome.state.should_continue);

    let (_dir, outcome) = run(investigation("Orrin Castellane", 1, 2)).await;
    assert_eq!(
        outcome.state.termination_reason,
        Some(TerminationReason::MaxDepth)
    );
    assert_eq!(outcome.state.search_iterations.len(), 1);
    assert!(
        outcome.state.report.is_some(),
        "max depth also finalizes through the report"
    );
}

#[tokio::test]
async fn stagnation_stops_a_run_that_finds_no_new_entities() {
    // Depth 1 (the tram depot page) adds no entity while the reflection still has a lead.
    let (_dir, outcome) = run(investigation("Teodor Vasquel", 5, 1)).await;
    let state = &outcome.state;
    assert_eq!(
        state.termination_reason,
        Some(TerminationReason::Stagnation)
    );
    assert!(state.should_continue, "the reflection wanted to go on");
    assert_eq!(state.entity_count_history, [3, 3]);
    assert!(state.report.is_some());

    // With the default threshold (2) the same subject goes on and finds the shell company.
    let (_dir, outcome) = run(investigation("Teodor Vasquel", 5, 2)).await;
    assert_eq!(
        outcome.state.termination_reason,
        Some(TerminationReason::ReflectionStop)
    );
    assert!(
        outcome
            .state
            .discovered_entities
            .iter()
            .any(|e| e.name == "Caldera Nominees Ltd")
    );
}

#[test]
fn routing_checks_max_depth_then_reflection_then_stagnation() {
    use TerminationReason::*;
    let stagnant = [3, 3, 3];
    assert_eq!(
        should_continue_research(3, 3, false, &stagnant, 1),
        Some(MaxDepth)
    );
    assert_eq!(
        should_continue_research(2, 3, false, &stagnant, 1),
        Some(ReflectionStop)
    );
    assert_eq!(
        should_continue_research(2, 3, true, &stagnant, 2),
        Some(Stagnation)
    );
    assert_eq!(should_continue_research(2, 3, true, &[3, 5], 1), None);
    assert_eq!(
        should_continue_research(1, 3, true, &[3], 1),
        None,
        "one iteration cannot stagnate"
    );
    assert_eq!(
        should_continue_research(2, 3, true, &stagnant, 0),
        None,
        "0 turns stagnation off"
    );
}

#[test]
fn queries_are_deduplicated_and_red_flag_queries_come_first() {
    let mut state = DueDiligenceState {
        subject: "Orrin Castellane".into(),
        current_depth: 1,
        max_queries_per_depth: 3,
        queries_executed: vec!["Orrin Castellane biography".into()],
        ..DueDiligenceState::default()
    };
    state
        .risk_indicators
        .red_flags
        .push(graphkit_examples::due_diligence::schemas::Indicator {
            text: "Merrow Trade SA was designated".into(),
            source: String::new(),
        });
    let picked = select_queries(
        &state,
        vec![
            "  orrin   CASTELLANE biography ".into(),
            "Harlow Bunkering claim".into(),
            "harlow bunkering CLAIM".into(),
            "Merrow Trade SA designation".into(),
            "".into(),
            "Castellane yacht".into(),
            "Castellane art".into(),
        ],
    );
    assert_eq!(
        picked,
        [
            "Merrow Trade SA designation",
            "Harlow Bunkering claim",
            "Castellane yacht"
        ]
    );
}

/// **Test double.** The corpus, except that queries containing `fail_on` fail, and the
/// `block_at`-th search (1-based) never returns (a process killed mid-search).
struct FaultySearch {
    inner: LocalCorpus,
    fail_on: Option<&'static str>,
    block_at: Option<usize>,
    calls: AtomicUsize,
    blocked: Arc<tokio::sync::Notify>,
}

impl FaultySearch {
    fn new(fail_on: Option<&'static str>, block_at: Option<usize>) -> Self {
        Self {
            inner: LocalCorpus::open(corpus_dir()).expect("corpus"),
            fail_on,
            block_at,
            calls: AtomicUsize::new(0),
            blocked: Arc::default(),
        }
    }
}

#[async_trait]
impl SearchBackend for FaultySearch {
    async fn search(&self, query: &str, max: usize) -> Result<Vec<SearchResult>, ToolError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if Some(call) == self.block_at {
            self.blocked.notify_one();
            std::future::pending::<()>().await;
        }
        if self.fail_on.is_some_and(|f| query.contains(f)) {
            return Err(ToolError::failed(
                "search backend unavailable (test double)",
            ));
        }
        self.inner.search(query, max).await
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<ExtractedPage>, ToolError> {
        self.inner.extract(urls).await
    }
}

#[tokio::test]
async fn a_failed_search_is_recorded_and_the_others_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let search = Arc::new(FaultySearch::new(Some("legal"), None));
    let saver = Arc::new(graphkit::checkpoint::InMemorySaver::new());
    let outcome = run_due_diligence(
        &investigation("Orrin Castellane", 5, 2),
        &options(dir.path(), search, saver, false),
    )
    .await
    .unwrap();
    let state = &outcome.state;
    let failed: Vec<_> = state
        .search_memory
        .iter()
        .filter(|s| s.error.is_some())
        .collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].query.contains("legal"));
    assert_eq!(state.search_iterations[0].queries.len(), 4);
    assert_eq!(state.search_iterations[0].errors.len(), 1);
    assert!(state.error_count >= 1);
    assert_eq!(
        state.termination_reason,
        Some(TerminationReason::ReflectionStop)
    );
    let events = audit_events(&outcome);
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "search" && e["ok"] == false)
    );
}

fn comparable(state: &DueDiligenceState) -> Value {
    let mut report = serde_json::to_value(state.report.as_deref().expect("report")).expect("json");
    let meta = report["metadata"].as_object_mut().expect("metadata");
    for volatile in ["session_id", "start_time", "end_time"] {
        meta.remove(volatile);
    }
    report
}

#[tokio::test]
async fn a_killed_run_resumes_without_repeating_searches_and_writes_the_same_report() {
    let (_dir, reference) = run(investigation("Orrin Castellane", 5, 2)).await;

    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("checkpoints.sqlite");
    // First process: one search at a time; the third search hangs, and the run is killed.
    let search = Arc::new(FaultySearch::new(None, Some(3)));
    let blocked = Arc::clone(&search.blocked);
    let mut first = options(
        dir.path(),
        search,
        Arc::new(SqliteSaver::open(&db).await.unwrap()),
        false,
    );
    first.max_concurrent_searches = 1;
    let task = tokio::spawn(async move {
        let _ = run_due_diligence(&investigation("Orrin Castellane", 5, 2), &first).await;
    });
    blocked.notified().await;
    task.abort();
    let _ = task.await;

    // Second process: same database and run directory.
    let second = options(
        dir.path(),
        corpus(),
        Arc::new(SqliteSaver::open(&db).await.unwrap()),
        true,
    );
    let outcome = run_due_diligence(&investigation("Orrin Castellane", 5, 2), &second)
        .await
        .unwrap();
    assert!(outcome.summary.resumed);
    assert_eq!(comparable(&outcome.state), comparable(&reference.state));

    let events = audit_events(&outcome);
    let mut searched: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "search")
        .map(|e| e["query"].as_str().unwrap())
        .collect();
    let total = searched.len();
    searched.sort_unstable();
    searched.dedup();
    assert_eq!(searched.len(), total, "a search was repeated: {searched:?}");
    assert_eq!(total as u64, reference.state.search_count);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "node_end" && e["node"] == "initialize")
            .count(),
        1
    );
    // The search the first process was killed in ran again, and says so; nothing else did.
    let starts: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "node_start" && e["node"] == "execute_search")
        .collect();
    let reruns: Vec<&&Value> = starts.iter().filter(|e| e["rerun"] == true).collect();
    assert_eq!(reruns.len(), 1, "{reruns:?}");
    assert_eq!(reruns[0]["earlier_starts"], 1);
    let query = reruns[0]["query"].as_str().expect("query");
    assert_eq!(
        starts.iter().filter(|e| e["query"] == query).count(),
        2,
        "{starts:?}"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["event"] == "model_call" && e["rerun"] == true)
            .all(|e| e["node"] == "execute_search")
    );
}

/// **Test double**: an in-memory checkpointer that saves the run's input, then never
/// finishes saving anything else (the first step's result): the run stops there as a kill
/// between a node's audit events and the save of its step would stop it.
#[derive(Debug)]
struct StopAtFirstTaskSave {
    inner: Arc<graphkit::checkpoint::InMemorySaver>,
    saved: AtomicUsize,
    reached: Arc<tokio::sync::Notify>,
}

impl StopAtFirstTaskSave {
    async fn stop(&self) -> Result<(), graphkit::error::StorageError> {
        self.reached.notify_one();
        std::future::pending().await
    }
}

#[async_trait]
impl Checkpointer for StopAtFirstTaskSave {
    async fn put(
        &self,
        record: graphkit::checkpoint::CheckpointRecord,
    ) -> Result<(), graphkit::error::StorageError> {
        if self.saved.fetch_add(1, Ordering::SeqCst) > 0 {
            return self.stop().await;
        }
        self.inner.put(record).await
    }

    async fn put_writes(
        &self,
        _: &str,
        _: &str,
        _: &str,
        _: Vec<graphkit::checkpoint::PendingWrite>,
    ) -> Result<(), graphkit::error::StorageError> {
        self.stop().await
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<graphkit::checkpoint::CheckpointTuple>, graphkit::error::StorageError> {
        self.inner
            .get(thread_id, checkpoint_ns, checkpoint_id)
            .await
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &graphkit::checkpoint::ListOptions,
    ) -> Result<Vec<graphkit::checkpoint::CheckpointRecord>, graphkit::error::StorageError> {
        self.inner.list(thread_id, checkpoint_ns, options).await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), graphkit::error::StorageError> {
        self.inner.delete_thread(thread_id).await
    }

    async fn delete_run(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<u64, graphkit::error::StorageError> {
        self.inner.delete_run(thread_id, run_id).await
    }

    async fn try_lock_thread(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<bool, graphkit::error::StorageError> {
        self.inner.try_lock_thread(thread_id, run_id).await
    }

    async fn unlock_thread(
        &self,
        thread_id: &str,
        run_id: &str,
    ) -> Result<(), graphkit::error::StorageError> {
        self.inner.unlock_thread(thread_id, run_id).await
    }
}

#[tokio::test]
async fn a_run_stopped_before_initialize_was_saved_keeps_its_session_and_audit_file() {
    let dir = tempfile::tempdir().unwrap();
    let saver = Arc::new(graphkit::checkpoint::InMemorySaver::new());
    let reached = Arc::new(tokio::sync::Notify::new());
    let mut first = options(
        dir.path(),
        corpus(),
        Arc::new(StopAtFirstTaskSave {
            inner: Arc::clone(&saver),
            saved: AtomicUsize::new(0),
            reached: Arc::clone(&reached),
        }),
        false,
    );
    first.session_id = Some("dd-kept-1".into());
    let task = tokio::spawn(async move {
        let _ = run_due_diligence(&investigation("Orrin Castellane", 2, 2), &first).await;
    });
    // initialize ran and audited; its result is never saved: stop the run there.
    reached.notified().await;
    task.abort();
    let _ = task.await;
    let audit = dir.path().join("audit");
    let files = || {
        std::fs::read_dir(&audit)
            .unwrap()
            .flatten()
            .map(|f| f.file_name().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(files(), ["dd-kept-1.jsonl"]);

    // The resume (the CLI gives the id run.json kept): initialize runs again, same id.
    let mut second = options(dir.path(), corpus(), saver, true);
    second.session_id = Some("dd-kept-1".into());
    let outcome = run_due_diligence(&investigation("Orrin Castellane", 2, 2), &second)
        .await
        .unwrap();
    assert_eq!(outcome.state.session_id, "dd-kept-1");
    assert_eq!(files(), ["dd-kept-1.jsonl"], "no orphan audit file");
    let events = audit_events(&outcome);
    let initialize: Vec<&Value> = events
        .iter()
        .filter(|e| e["node"] == "initialize")
        .collect();
    assert_eq!(initialize.len(), 4, "{initialize:?}");
    assert!(initialize[..2].iter().all(|e| e.get("rerun").is_none()));
    assert!(initialize[2..].iter().all(|e| e["rerun"] == true));
    assert_eq!(initialize[2]["event"], "node_start");
    assert_eq!(initialize[2]["earlier_starts"], 1);
}

#[tokio::test]
async fn bad_input_names_the_field() {
    let err = |text: &str| {
        Investigation::from_json("input.json", text)
            .unwrap_err()
            .to_string()
    };
    assert!(err(r#"{"subject": ""}"#).contains("`subject` is empty"));
    assert!(err(r#"{"subject": "X", "max_depth": 0}"#).contains("`max_depth` is 0"));
    assert!(err(r#"{"subject": "X", "max_depth": 1000}"#).contains("`max_depth` is 1000"));
    assert!(err(r#"{"subject": "X", "max_depth": "deep"}"#).contains("field `max_depth`"));
    assert!(err(r#"{"subjekt": "X"}"#).contains("subjekt"));
    assert!(err(r#"{"subject": "X""#).contains("input.json"));

    // The runner refuses an invalid investigation before anything runs.
    let dir = tempfile::tempdir().unwrap();
    let saver = Arc::new(graphkit::checkpoint::InMemorySaver::new());
    let bad = Investigation {
        max_depth: 0,
        ..Investigation::new("X", "")
    };
    let error = run_due_diligence(&bad, &options(dir.path(), corpus(), saver, false))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("max_depth"), "{error}");
}

#[tokio::test]
async fn evaluation_recalls_every_expected_entity_and_red_flag_offline() {
    for persona in read_personas(&personas_path()).unwrap() {
        let (_dir, outcome) = run(Investigation::new(
            persona.subject.clone(),
            persona.context.clone(),
        ))
        .await;
        let score = evaluate::score(&persona, &outcome.state);
        assert_eq!(score.entity_recall(), 1.0, "{score:?}");
        assert_eq!(score.red_flag_recall(), 1.0, "{score:?}");
    }
}

#[tokio::test]
async fn the_entity_intel_corpus_does_not_see_the_due_diligence_corpus() {
    let entity_intel =
        LocalCorpus::open(graphkit_examples::shared::search::default_corpus_dir()).unwrap();
    let hits = entity_intel
        .search("Castellane Blackfen Quellbright Vasquel", 20)
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    let ours = LocalCorpus::open(corpus_dir()).unwrap();
    assert!(
        ours.search("Castellane", 5)
            .await
            .unwrap()
            .iter()
            .all(|h| !h.url.contains("README"))
    );
}

#[tokio::test]
async fn a_round_with_no_new_query_goes_straight_to_reflection() {
    use graphkit_examples::due_diligence::schemas::{ReflectionOutput, SearchQueriesList};
    use graphkit_llm::{AssistantMessage, FunctionModel, ResponseFormat};
    // A strategy model that proposes the same query every round and always wants more.
    let strategy = FunctionModel::new(|request| {
        let format = request
            .response_format
            .as_ref()
            .expect("structured request");
        let reply = if format.name == ResponseFormat::for_type::<SearchQueriesList>().name {
            serde_json::json!({"queries": ["Orrin Castellane biography"]})
        } else {
            assert_eq!(
                format.name,
                ResponseFormat::for_type::<ReflectionOutput>().name
            );
            serde_json::json!({"analysis_summary": "", "should_continue": true, "reasoning": "more", "query_strategy": "- Orrin Castellane biography"})
        };
        Ok(AssistantMessage::text(reply.to_string()))
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let saver = Arc::new(graphkit::checkpoint::InMemorySaver::new());
    let mut opts = options(dir.path(), corpus(), saver, false);
    opts.strategy_model = Arc::new(strategy);
    let outcome = run_due_diligence(&investigation("Orrin Castellane", 5, 1), &opts)
        .await
        .expect("run");
    let state = &outcome.state;
    assert_eq!(state.queries_executed, ["Orrin Castellane biography"]);
    assert_eq!(
        state.search_iterations[1].queries.len(),
        0,
        "depth 1 searched nothing"
    );
    assert_eq!(
        state.termination_reason,
        Some(TerminationReason::Stagnation)
    );
    assert!(
        audit_events(&outcome)
            .iter()
            .any(|e| e["event"] == "no_new_queries")
    );
}

#[test]
fn the_guide_shows_the_graph_as_drawn() {
    use graphkit_examples::due_diligence::{
        AuditTrail, Deps, SessionIds, build_graph, default_prices,
    };
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    let deps = Deps {
        strategy_model: Arc::clone(&model),
        search_model: model,
        search: corpus(),
        results_per_search: 3,
        audit: AuditTrail::new(std::env::temp_dir()),
        prices: default_prices(),
        reports_dir: std::env::temp_dir(),
        sessions: SessionIds::FromState,
    };
    let graph = build_graph(Arc::new(deps), graphkit::CompileOptions::new()).expect("graph");
    let guide = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/workflows/due-diligence.md"),
    )
    .expect("guide");
    assert!(
        guide.contains(graph.draw_mermaid().trim()),
        "update the Mermaid block of docs/workflows/due-diligence.md"
    );
}

fn cli(run_dir: &Path, thread: &str, extra: &[&str]) -> std::process::Command {
    cli_with_delay(run_dir, thread, extra, 30)
}

/// [`cli`] with model calls of `delay_ms` each.
fn cli_with_delay(
    run_dir: &Path,
    thread: &str,
    extra: &[&str],
    delay_ms: u64,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"));
    cmd.args([
        "due-diligence",
        "Orrin Castellane",
        "--quiet",
        "--max-depth",
        "5",
    ])
    .args(["--offline-delay-ms", &delay_ms.to_string()])
    .args(["--max-concurrent-searches", "1", "--thread", thread])
    .arg("--out")
    .arg(run_dir)
    .args(extra)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    cmd
}

/// Waits until the audit trail in `run_dir` records two searches, or `child` has exited.
fn wait_for_two_searches(run_dir: &Path, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while events_in(run_dir)
        .iter()
        .filter(|e| e["event"] == "search")
        .count()
        < 2
        && child.try_wait().ok().flatten().is_none()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "gave up waiting for searches"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn events_in(run_dir: &Path) -> Vec<Value> {
    std::fs::read_dir(run_dir.join("audit"))
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|f| AuditLog::read(f.path()).unwrap_or_default())
        .collect()
}

fn report_in(run_dir: &Path) -> Value {
    let reports = std::fs::read_dir(run_dir.join("reports")).expect("reports");
    let path = reports
        .flatten()
        .map(|f| f.path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a report");
    let mut report: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("report")).expect("json");
    let meta = report["metadata"].as_object_mut().expect("metadata");
    for volatile in ["session_id", "start_time", "end_time"] {
        meta.remove(volatile);
    }
    report
}

#[test]
fn sigkill_mid_search_then_resume_from_the_cli_finishes_without_repeating_searches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = dir.path().join("reference");
    assert!(
        cli(&reference, "ref", &[])
            .status()
            .expect("reference run")
            .success()
    );

    let run = dir.path().join("killed");
    let mut child = cli(&run, "kill", &[]).spawn().expect("spawn");
    wait_for_two_searches(&run, &mut child);
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    assert!(
        cli(&run, "kill", &["--resume"])
            .status()
            .expect("resume")
            .success()
    );
    assert_eq!(report_in(&run), report_in(&reference));
    let events = events_in(&run);
    let mut searched: Vec<(u64, &str)> = events
        .iter()
        .filter(|e| e["event"] == "search")
        .map(|e| {
            (
                e["depth"].as_u64().unwrap_or(0),
                e["query"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let total = searched.len();
    searched.sort_unstable();
    searched.dedup();
    assert_eq!(
        searched.len(),
        total,
        "a search event repeats: {searched:?}"
    );
    assert_eq!(
        total,
        events_in(&reference)
            .iter()
            .filter(|e| e["event"] == "search")
            .count()
    );
}

/// Where a kill lands in one process of the loop: after its `n`-th line on stdout (a
/// node's update or an event: updates come at the end of a step), after its `n`-th event
/// line (an event is emitted by a node that is still running), or after its `n`-th
/// `node_start` event (a node has started, its start is in the audit trail, and a model
/// call of 150 ms is ahead of it: its step is not saved when the kill lands).
#[derive(Debug, Clone, Copy)]
enum KillAfter {
    Lines(usize),
    Events(usize),
    Starts(usize),
}

/// Runs `cli(.., extra)` with `--stream` and SIGKILLs it at `at`, synchronised on the
/// child's output. Returns `false` when the run ended first.
fn kill_at(run_dir: &Path, thread: &str, extra: &[&str], at: KillAfter) -> bool {
    use std::io::BufRead;
    // Model calls of 150 ms: the child cannot run far past the line the kill waits for
    // while this process, perhaps busy with other tests, reads it.
    let mut child = cli_with_delay(run_dir, thread, extra, 150)
        .arg("--stream")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (mut lines, mut events, mut starts) = (0, 0, 0);
    for line in std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
    {
        lines += 1;
        events += usize::from(line.contains(r#""type":"event""#));
        starts += usize::from(line.contains(r#""event":"node_start""#));
        let reached = match at {
            KillAfter::Lines(n) => lines == n,
            KillAfter::Events(n) => events == n,
            KillAfter::Starts(n) => starts == n,
        };
        if reached {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            return true;
        }
    }
    let status = child.wait().expect("wait");
    assert!(status.success(), "the run failed: {status}");
    false
}

#[test]
fn sigkill_loop_keeps_one_session_one_readable_audit_file_and_marks_the_reruns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = dir.path().join("reference");
    assert!(
        cli(&reference, "ref", &[])
            .status()
            .expect("reference run")
            .success()
    );

    // A new run killed in its second node, then resumes killed at varied points of their
    // own output — inside a node that has started, after an event, between steps (after an
    // update) — over and over until one finishes on its own.
    let run = dir.path().join("killed");
    let schedule = [
        KillAfter::Starts(2),
        KillAfter::Lines(1),
        KillAfter::Starts(3),
        KillAfter::Events(2),
        KillAfter::Starts(1),
        KillAfter::Lines(3),
        KillAfter::Events(1),
        KillAfter::Starts(2),
        KillAfter::Lines(2),
        KillAfter::Starts(1),
    ];
    let mut kills = 0;
    for (i, at) in schedule.into_iter().cycle().take(30).enumerate() {
        let extra: &[&str] = if i == 0 { &[] } else { &["--resume"] };
        if !kill_at(&run, "loop", extra, at) {
            break;
        }
        kills += 1;
    }
    assert!(kills >= 3, "only {kills} kills landed before the run ended");
    assert!(
        cli(&run, "loop", &["--resume"])
            .status()
            .expect("resume")
            .success()
    );
    assert_eq!(report_in(&run), report_in(&reference));

    // One session from the first process to the last: one audit file, named by it.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("run_summary.json")).expect("summary"),
    )
    .expect("json");
    let session = summary["sessionId"].as_str().expect("session id");
    assert_eq!(run_json(&run)["options"]["session_id"], session);
    let files: Vec<String> = std::fs::read_dir(run.join("audit"))
        .expect("audit dir")
        .flatten()
        .map(|f| f.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, [format!("{session}.jsonl")], "an orphan audit file");

    // Every line reads (a torn one is marked and skipped), every event is the session's.
    let trail = AuditLog::read_checked(run.join("audit").join(&files[0])).expect("the trail reads");
    assert!(trail.torn.iter().all(|t| !t.at_end), "{:?}", trail.torn);
    let events = trail.events;
    assert!(events.iter().all(|e| e["session_id"] == session));

    // Each start of a node (at a depth, for a query) after the first is marked a re-run,
    // with how many came before; and the kills made some.
    let mut starts: std::collections::BTreeMap<(String, u64, String), Vec<&Value>> =
        std::collections::BTreeMap::new();
    for event in events.iter().filter(|e| e["event"] == "node_start") {
        let key = (
            event["node"].as_str().unwrap_or("").to_owned(),
            event["depth"].as_u64().unwrap_or(0),
            event["query"].as_str().unwrap_or("").to_owned(),
        );
        starts.entry(key).or_default().push(event);
    }
    let mut reruns = 0;
    for (key, group) in &starts {
        assert!(group[0].get("rerun").is_none(), "{key:?}: {:?}", group[0]);
        for (n, start) in group.iter().enumerate().skip(1) {
            assert_eq!(start["rerun"], true, "{key:?}: {start}");
            assert_eq!(start["earlier_starts"], n, "{key:?}: {start}");
            reruns += 1;
        }
    }
    assert!(
        reruns > 0,
        "no node ran again after {kills} kills: {starts:?}"
    );
    let repeated: Vec<&Value> = events.iter().filter(|e| e["event"] == "search").collect();
    let mut queries: Vec<(u64, &str)> = repeated
        .iter()
        .map(|e| {
            (
                e["depth"].as_u64().unwrap_or(0),
                e["query"].as_str().unwrap_or(""),
            )
        })
        .collect();
    let total = queries.len();
    queries.sort_unstable();
    queries.dedup();
    assert_eq!(queries.len(), total, "a search event repeats");
    eprintln!(
        "{kills} kills, {reruns} node re-runs marked, {} events",
        events.len()
    );
}

fn run_json(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("run.json")).expect("run.json"))
        .expect("json")
}

#[test]
fn resume_uses_the_options_saved_in_run_json_unless_given_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let bin = env!("CARGO_BIN_EXE_graphkit-research");
    let first = std::process::Command::new(bin)
        .args(["due-diligence", "Orrin Castellane", "--quiet"])
        .args(["--max-depth", "1", "--results-per-search", "2"])
        .args(["--max-concurrent-searches", "1", "--thread", "opts"])
        .arg("--out")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("first run");
    assert!(first.success());
    let saved = run_json(&run);
    assert_eq!(saved["workflow"], "due-diligence");
    assert_eq!(saved["status"], "finished");
    assert_eq!(saved["input"]["subject"], "Orrin Castellane");
    assert_eq!(saved["input"]["max_depth"], 1);
    assert_eq!(saved["options"]["results_per_search"], 2);
    assert_eq!(saved["options"]["strategy_model"], "offline");

    // No subject, depth or results per search now: they come from run.json; the
    // concurrency given again wins.
    let resumed = std::process::Command::new(bin)
        .args(["due-diligence", "--quiet", "--resume", "--thread", "opts"])
        .args(["--max-concurrent-searches", "2"])
        .arg("--out")
        .arg(&run)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("resume");
    assert!(resumed.success());
    let after = run_json(&run);
    assert_eq!(after["input"], saved["input"]);
    assert_eq!(after["options"]["results_per_search"], 2);
    assert_eq!(after["options"]["max_concurrent_searches"], 2);
    assert_eq!(after["options"]["search_model"], "offline");
    assert_eq!(after["createdAt"], saved["createdAt"]);
    assert_eq!(after["status"], "finished");
}

#[test]
fn ctrl_c_stops_at_a_checkpoint_exits_130_prints_the_resume_command_and_resume_finishes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("stopped");
    let mut child = cli(&run, "ctrlc", &[])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    wait_for_two_searches(&run, &mut child);
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let stopped = child.wait_with_output().expect("wait");
    let text = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(130), "{text}");
    assert!(
        text.contains("graphkit-research due-diligence --resume --thread ctrlc --out"),
        "{text}"
    );
    assert_eq!(run_json(&run)["status"], "interrupted");

    assert!(
        cli(&run, "ctrlc", &["--resume"])
            .status()
            .expect("resume")
            .success()
    );
    assert_eq!(run_json(&run)["status"], "finished");
}
