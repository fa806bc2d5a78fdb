//! The entity-intel workflow end to end: offline run, context resets, blocked todos, bad
//! input, SIGKILL and resume, and a weak real model (gated on `GRAPHKIT_TEST_LLM_URL`).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use graphkit::checkpoint::{Checkpointer, InMemorySaver};
use graphkit_examples::entity_intel::{
    EntitiesResearchDirections, EntityIntelOptions, Limits, RunSummary, TodoStatus, offline_model,
    run_entity_intel, sample_input_path,
};
use graphkit_examples::shared::{RunDir, RunTarget, search};
use graphkit_llm::{AssistantMessage, ChatModel, FunctionModel, ToolCall};
use serde_json::{Value, json};

fn sample() -> EntitiesResearchDirections {
    EntitiesResearchDirections::from_file(&sample_input_path()).expect("the sample input parses")
}

fn options(
    dir: &Path,
    model: Arc<dyn ChatModel>,
    saver: Arc<dyn Checkpointer>,
    thread: &str,
) -> EntityIntelOptions {
    EntityIntelOptions {
        summary_model: Arc::clone(&model),
        model,
        search: search::corpus(&search::default_corpus_dir()).expect("corpus"),
        web: None,
        limits: Limits::default(),
        max_concurrency: 3,
        target: RunTarget::new(thread, RunDir::create(dir).expect("run dir"), saver),
    }
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()))
}

/// `research_complete.json` without the fields that legitimately differ between runs.
fn comparable(mut master: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in ["timestamp", "createdAt", "updatedAt", "filepath"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut master);
    master
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_run_completes_every_todo_with_findings_blocks_the_one_with_none_and_writes_valid_files()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = sample();
    assert!(input.bundles.len() >= 3 && input.total_directions() >= 12);
    let opts = options(
        dir.path(),
        Arc::new(offline_model()),
        Arc::new(InMemorySaver::new()),
        "e2e",
    );
    let summary = run_entity_intel(&input, &opts).await.expect("run");

    assert!(summary.succeeded(), "{summary:#?}");
    for (bundle, report) in input.bundles.iter().zip(&summary.bundles) {
        // The sample's Tidewell Tracker app is in no source: its todo is blocked, with a
        // note saying nothing was found, not reported as completed.
        let nothing_found = usize::from(bundle.bundle_id == "guest_ines_okafor_003");
        assert_eq!(
            report.completed_todos,
            bundle.total_directions() - nothing_found,
            "{report:?}"
        );
        assert_eq!(report.blocked_todos, nothing_found);
        // The graph found every value the stand-in reported in the passage of its source.
        assert!(report.verified_values > 0, "{report:?}");
        assert_eq!(report.unverified_values, 0, "{report:?}");
        // One context reset per completed todo: the write tool summarized every time.
        assert_eq!(
            report.context_checkpoints,
            bundle.total_directions() as u64,
            "{report:?}"
        );

        let out = dir.path().join(&bundle.bundle_id);
        let master = read_json(&out.join("research_complete.json"));
        assert_eq!(master["bundleId"], bundle.bundle_id.as_str());
        assert_eq!(
            master["completedTodos"],
            bundle.total_directions() - nothing_found
        );
        assert_eq!(master["checkpointCount"], bundle.total_directions());
        let todos = master["todoList"]["todos"].as_array().expect("todos");
        for todo in todos {
            if todo["entityName"] == "Tidewell Tracker" {
                assert_eq!(todo["status"], "blocked", "{todo}");
                assert!(
                    todo["notes"]
                        .as_str()
                        .is_some_and(|n| n.contains("No source about Tidewell Tracker")),
                    "{todo}"
                );
            } else {
                assert_eq!(todo["status"], "completed", "{todo}");
            }
            let id = todo["id"].as_str().expect("id");
            assert!(
                id.starts_with(&format!("{}_", bundle.bundle_id)),
                "seed id convention: {id}"
            );
            let file = read_json(&out.join(todo["outputFile"].as_str().expect("outputFile")));
            assert_eq!(file["todoId"], id);
        }
        assert_eq!(
            master["completedResearch"].as_array().map(Vec::len),
            Some(todos.len())
        );
    }
    // Facts come from the corpus pages about the entity, not from the look-alike company.
    let identity = read_json(
        &dir.path()
            .join("guest_mara_lindqvist_001/biz_halvard_biosciences_businessIdentityOverview.json"),
    );
    assert_eq!(
        identity["fields"]["legalName"]["value"],
        "Halvard Biosciences AB"
    );
    assert_eq!(identity["fields"]["foundedYear"]["value"], "2014");

    let run_summary = read_json(&dir.path().join("run_summary.json"));
    assert_eq!(run_summary["bundles"].as_array().map(Vec::len), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_tool_replaces_the_history_with_system_prompt_and_summary() {
    use graphkit::{CompileOptions, RunConfig};
    use graphkit_examples::entity_intel::{
        AgentDeps, EntityIntelResearchStateUpdate, ToolDeps, build_graph,
    };

    let dir = tempfile::tempdir().expect("tempdir");
    let input = sample();
    let bundle = &input.bundles[1];
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    let graph = build_graph(
        AgentDeps {
            model: Arc::clone(&model),
            tool_specs: vec![],
            limits: Limits::default(),
        },
        &ToolDeps {
            search: search::corpus(&search::default_corpus_dir()).expect("corpus"),
            summary_model: model,
            summarize_after_messages: Limits::default().summarize_after_messages,
            web: None,
            outputs: graphkit_examples::entity_intel::OutputFolder::FromState,
        },
        CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())),
    )
    .expect("graph");
    let done = graph
        .invoke_with(
            EntityIntelResearchStateUpdate::new()
                .research_directions(input.single_bundle(bundle))
                .output_directory(dir.path().display().to_string()),
            RunConfig::new().thread_id("reset"),
        )
        .await
        .expect("run")
        .into_state();
    // After the last write: exactly the system prompt and one checkpoint summary.
    assert_eq!(done.messages.len(), 2, "{:#?}", done.messages);
    assert_eq!(done.messages[0].role(), "system");
    assert!(
        done.messages[1].text().starts_with("[RESEARCH CHECKPOINT]"),
        "{}",
        done.messages[1].text()
    );
    assert!(
        done.todo_list
            .todos
            .iter()
            .all(|t| t.status == TodoStatus::Completed)
    );
}

/// A model that searches forever and never writes: every todo must end blocked.
fn endless_searcher() -> FunctionModel {
    FunctionModel::new(|request| {
        if request.response_format.is_some() {
            // Todo generation: an empty list; the directions fill it in.
            return Ok(AssistantMessage::text(r#"{"todos": []}"#));
        }
        if request.tools.is_empty() {
            return Ok(AssistantMessage::text("Searched a lot, found nothing."));
        }
        Ok(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("web_search", json!({"query": "anything"}))],
        ))
    })
    .with_name("endless-searcher (test double)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_todo_that_can_never_complete_ends_blocked_instead_of_looping() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = sample();
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(2);
    let mut opts = options(
        dir.path(),
        Arc::new(endless_searcher()),
        Arc::new(InMemorySaver::new()),
        "stuck",
    );
    opts.limits.max_tool_calls_per_todo = 4;
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");

    let report = &summary.bundles[0];
    assert_eq!(report.status, "finished", "{report:?}");
    assert_eq!(report.completed_todos, 0);
    assert_eq!(report.blocked_todos, input.total_directions());
    let master = read_json(
        &dir.path()
            .join(&report.bundle_id)
            .join("research_complete.json"),
    );
    for todo in master["todoList"]["todos"].as_array().expect("todos") {
        assert_eq!(todo["status"], "blocked");
        assert!(
            todo["notes"]
                .as_str()
                .is_some_and(|n| n.contains("4 tool calls")),
            "{todo}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_calls_tools_ends_blocked_after_its_idle_turns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = sample();
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(1);
    let chatty = FunctionModel::from_text(|_| "I would love to help with that research!".into())
        .with_name("chatty (test double)");
    let opts = options(
        dir.path(),
        Arc::new(chatty),
        Arc::new(InMemorySaver::new()),
        "idle",
    );
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");
    assert_eq!(
        summary.bundles[0].blocked_todos,
        input.total_directions(),
        "{summary:#?}"
    );
    assert!(
        dir.path()
            .join(&summary.bundles[0].bundle_id)
            .join("research_complete.json")
            .exists()
    );
}

#[test]
fn malformed_directions_give_an_error_naming_the_field() {
    let mut value: Value =
        serde_json::from_str(&std::fs::read_to_string(sample_input_path()).expect("sample"))
            .expect("json");
    value["bundles"][1]["entities"][0]["directions"][0]["priority"] = json!("URGENT");
    let err = EntitiesResearchDirections::from_json("bad.json", &value.to_string())
        .expect_err("invalid")
        .to_string();
    assert!(
        err.contains("bundles[1].entities[0].directions[0].priority"),
        "{err}"
    );
    assert!(err.contains("URGENT"), "{err}");

    value["bundles"][1]["entities"][0]["directions"][0]["priority"] = json!("HIGH");
    value["bundles"][0]["entities"][0]
        .as_object_mut()
        .expect("entity")
        .remove("name");
    let err = EntitiesResearchDirections::from_json("bad.json", &value.to_string())
        .expect_err("invalid")
        .to_string();
    assert!(
        err.contains("bundles[0].entities[0]") && err.contains("`name`"),
        "{err}"
    );

    let err = EntitiesResearchDirections::from_json("bad.json", r#"{"bundles": []}"#)
        .expect_err("empty")
        .to_string();
    assert!(err.contains("bundles"), "{err}");
}

#[test]
fn the_cli_reports_malformed_input_with_the_field_and_exit_code_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"bundles": [{"bundleId": "b1", "entities": [{"entityType": "ROBOT", "name": "X", "directions": []}]}]}"#)
        .expect("write");
    let out = Process::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir.path())
        .args(["entity-intel", "--input"])
        .arg(&bad)
        .arg("--out")
        .arg(dir.path().join("run"))
        .output()
        .expect("run the CLI");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        !dir.path().join("run").exists(),
        "bad input creates no run directory"
    );
    assert!(
        stderr.contains("bundles[0].entities[0].entityType"),
        "{stderr}"
    );
}

/// Waits (bounded) until `ready` holds: synchronisation with the child, not timing.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn cli(run_dir: &Path, thread: &str, extra: &[&str]) -> Process {
    let mut cmd = Process::new(env!("CARGO_BIN_EXE_graphkit-research"));
    // The default root of runs (graphkit-runs/) goes to the test's directory.
    cmd.current_dir(run_dir.parent().unwrap_or(run_dir));
    cmd.args([
        "entity-intel",
        "--quiet",
        "--offline-delay-ms",
        "20",
        "--thread",
        thread,
        "--max-concurrency",
        "1",
    ])
    .arg("--out")
    .arg(run_dir)
    .args(extra);
    cmd
}

#[test]
fn killed_mid_run_resumes_without_redoing_completed_todos_and_matches_an_uninterrupted_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = dir.path().join("reference");
    let status = cli(&reference, "ref", &[])
        .stdout(Stdio::null())
        .status()
        .expect("reference run");
    assert!(status.success());

    // Start a run and SIGKILL it once some, but not all, todo files exist.
    let run = dir.path().join("killed");
    let mut child = cli(&run, "kill", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let written = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .flat_map(|b| {
                        std::fs::read_dir(b.path())
                            .into_iter()
                            .flatten()
                            .flatten()
                            .map(|f| f.path())
                    })
                    .filter(|p| p.extension().is_some_and(|e| e == "json"))
                    .collect()
            })
            .unwrap_or_default()
    };
    wait_until("some todo files", || {
        written(&run).len() >= 3 || child.try_wait().ok().flatten().is_some()
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let finished_early = run.join("run_summary.json").exists();

    let before: Vec<(PathBuf, std::time::SystemTime)> = written(&run)
        .into_iter()
        .filter(|p| !p.ends_with("research_complete.json"))
        .filter_map(|p| {
            std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()
                .map(|t| (p, t))
        })
        .collect();
    let out = cli(&run, "kill", &["--resume"]).output().expect("resume");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    if !finished_early {
        // Completed todos were not redone: their files were not written again. (The file of
        // the todo whose step was cut short may be written again; at most one per bundle.)
        let rewritten = before
            .iter()
            .filter(|(p, t)| {
                std::fs::metadata(p)
                    .and_then(|m| m.modified())
                    .is_ok_and(|now| now != *t)
            })
            .count();
        assert!(
            rewritten <= 3,
            "{rewritten} of {} files were written again",
            before.len()
        );
    }
    let summary: Value = read_json(&run.join("run_summary.json"));
    for (bundle, reference_bundle) in [
        "guest_mara_lindqvist_001",
        "guest_tobias_achebe_002",
        "guest_ines_okafor_003",
    ]
    .iter()
    .map(|b| (run.join(b), reference.join(b)))
    {
        let resumed = comparable(read_json(&bundle.join("research_complete.json")));
        let expected = comparable(read_json(&reference_bundle.join("research_complete.json")));
        assert_eq!(resumed, expected, "bundle {}", bundle.display());
    }
    assert_eq!(summary["bundles"].as_array().map(Vec::len), Some(3));
}

#[test]
fn resume_refuses_a_run_directory_without_a_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cli(&dir.path().join("nothing"), "ghost", &["--resume"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to resume"));
}

#[test]
fn print_input_schema_prints_the_directions_schema() {
    let out = Process::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .args(["entity-intel", "--print-input-schema"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let schema: Value = serde_json::from_slice(&out.stdout).expect("schema is JSON");
    assert!(schema["properties"]["bundles"].is_object(), "{schema}");
}

/// A weak real model (the local llama.cpp server) must not break the run: it ends on its
/// own within its limits and writes the outputs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weak_real_model_ends_within_limits_and_writes_outputs() {
    let Some(spec) = common::local_model_spec() else {
        return;
    };
    let model = graphkit_llm::init_chat_model(&spec).expect("model");
    let dir = tempfile::tempdir().expect("tempdir");
    // One todo: each model turn reads a long prompt on one CPU thread, so the test's time
    // is counted in turns (CI runs it on every change; issue 28 asks for it bounded).
    let mut input = sample();
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(1);
    input.bundles[0].entities[0].directions.truncate(1);
    input.total_directions = None;
    let mut opts = options(dir.path(), model, Arc::new(InMemorySaver::new()), "weak");
    opts.limits.max_tokens_per_turn = 128;
    opts.limits.max_idle_turns_per_todo = 2;
    let summary: RunSummary = run_entity_intel(&input, &opts).await.expect("the run ends");
    let report = &summary.bundles[0];
    assert_eq!(report.status, "finished", "{report:?}");
    assert_eq!(
        report.completed_todos + report.blocked_todos,
        report.total_todos,
        "{report:?}"
    );
    let master = read_json(
        &dir.path()
            .join(&report.bundle_id)
            .join("research_complete.json"),
    );
    assert_eq!(master["totalTodos"], input.total_directions());
    assert!(dir.path().join("run_summary.json").exists());
}

#[test]
fn input_in_the_seeds_own_shape_with_typed_sub_bundles_and_total_directions_is_accepted() {
    let text = r#"{
      "totalDirections": 3,
      "bundles": [{
        "bundleId": "guest_ilan_sobel_001",
        "guest": {"name": "Ilan Sobel", "directions": [
          {"key": "roleAffiliationConfirmation", "objective": "Confirm the role.", "priority": "HIGH"}]},
        "businesses": [{"entityName": "BioHarvest", "directions": [
          {"key": "businessIdentityOverview", "objective": "Legal identity."}]}],
        "products": [{"canonicalName": "Vinia", "directions": [
          {"key": "productCanonicalIdentity", "objective": "What it is.", "optional": true}]}]
      }]
    }"#;
    let input = EntitiesResearchDirections::from_json("seed.json", text).expect("seed shape");
    let entities = &input.bundles[0].entities;
    assert_eq!(entities.len(), 3);
    assert_eq!(entities[0].name, "Ilan Sobel");
    assert_eq!(
        serde_json::to_value(entities[1].entity_type).expect("json"),
        json!("BUSINESS")
    );
    assert_eq!(
        serde_json::to_value(entities[2].entity_type).expect("json"),
        json!("PRODUCT")
    );
    let wrong = text.replace("\"totalDirections\": 3", "\"totalDirections\": 5");
    let err = EntitiesResearchDirections::from_json("seed.json", &wrong)
        .expect_err("count mismatch")
        .to_string();
    assert!(
        err.contains("totalDirections") && err.contains('3'),
        "{err}"
    );
}

/// A one-bundle, one-entity input.
fn small_input() -> EntitiesResearchDirections {
    let mut input = sample();
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(1);
    input.total_directions = None;
    input
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_todo_marked_completed_without_its_file_does_not_count_as_completed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = small_input();
    // Marks the todo of the reminder completed, never writes.
    let lazy = FunctionModel::new(|request| {
        if request.response_format.is_some() {
            return Ok(AssistantMessage::text(r#"{"todos": []}"#));
        }
        if request.tools.is_empty() {
            return Ok(AssistantMessage::text("Summary."));
        }
        let reminder = request
            .messages
            .last()
            .map(|m| m.text().to_owned())
            .unwrap_or_default();
        let id = reminder
            .lines()
            .find_map(|l| l.strip_prefix("CURRENT TODO: "))
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or("none")
            .to_owned();
        Ok(AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new(
                "todo_update",
                json!({"todo_id": id, "status": "completed"}),
            )],
        ))
    })
    .with_name("lazy completer (test double)");
    let mut opts = options(
        dir.path(),
        Arc::new(lazy),
        Arc::new(InMemorySaver::new()),
        "lazy",
    );
    opts.limits.max_tool_calls_per_todo = 3;
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");
    let report = &summary.bundles[0];
    assert_eq!(report.completed_todos, 0, "{report:?}");
    assert_eq!(report.blocked_todos, input.total_directions(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_at_the_token_cap_is_asked_again_with_room_and_saved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = small_input();
    // Below 2,000 output tokens the reply is cut (finish_reason `length`); with room it is
    // the complete write + completion.
    let cramped = FunctionModel::new(|request| {
        if request.response_format.is_some() {
            return Ok(AssistantMessage::text(r#"{"todos": []}"#));
        }
        if request.tools.is_empty() {
            return Ok(AssistantMessage::text("Summary."));
        }
        let reminder = request.messages.last().map(|m| m.text().to_owned()).unwrap_or_default();
        let todo: Value = reminder
            .lines()
            .find_map(|l| l.strip_prefix("CURRENT TODO (JSON): "))
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        if request.options.max_tokens.unwrap_or(0) < 2000 {
            let mut cut = AssistantMessage::text("{\"fields\": {\"legal");
            cut.finish_reason = Some("length".into());
            return Ok(cut);
        }
        Ok(AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("agent_write_file", json!({
                    "filename": todo["outputFile"], "content": "{\"fields\": {}}", "description": "d"})),
                ToolCall::new("todo_update", json!({"todo_id": todo["id"], "status": "completed"})),
            ],
        ))
    })
    .with_name("cramped writer (test double)");
    let opts = options(
        dir.path(),
        Arc::new(cramped),
        Arc::new(InMemorySaver::new()),
        "cap",
    );
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");
    let report = &summary.bundles[0];
    // Every write was saved (one context reset each); its empty findings verify nothing,
    // so the todos end blocked rather than completed.
    assert_eq!(report.context_checkpoints, input.total_directions() as u64);
    assert_eq!(report.blocked_todos, input.total_directions(), "{report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_optional_direction_that_hits_a_limit_is_skipped_not_blocked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = small_input();
    for direction in &mut input.bundles[0].entities[0].directions {
        direction.optional = true;
    }
    let mut opts = options(
        dir.path(),
        Arc::new(endless_searcher()),
        Arc::new(InMemorySaver::new()),
        "optional",
    );
    opts.limits.max_tool_calls_per_todo = 2;
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");
    let report = &summary.bundles[0];
    assert_eq!(report.blocked_todos, 0, "{report:?}");
    let master = read_json(
        &dir.path()
            .join(&report.bundle_id)
            .join("research_complete.json"),
    );
    for todo in master["todoList"]["todos"].as_array().expect("todos") {
        assert_eq!(todo["status"], "skipped", "{todo}");
    }
    assert_eq!(
        master["skippedTodos"].as_array().map(Vec::len),
        Some(input.total_directions())
    );
}

#[test]
fn the_reminder_gives_the_current_todo_with_its_candidate_sources_and_the_prompt_does_not_ask_for_calls_the_node_made()
 {
    use graphkit_examples::entity_intel::{EntityIntelResearchState, prompts};
    let input = sample();
    let mut state = EntityIntelResearchState {
        candidate_sources: input.candidate_sources.clone(),
        ..Default::default()
    };
    let (list, _) = graphkit_examples::entity_intel::todo::reconcile(
        &input.single_bundle(&input.bundles[0]),
        &Default::default(),
        "now",
    );
    state.todo_list = list;
    let halvard = state
        .todo_list
        .todos
        .iter()
        .find(|t| t.entity_name == "Halvard Biosciences")
        .expect("a Halvard todo")
        .clone();
    let reminder = prompts::reminder(&state, Some(&halvard));
    assert!(
        reminder.contains("https://halvard-bio.example/about"),
        "{reminder}"
    );
    assert!(
        reminder.contains(&format!("\"id\":\"{}\"", halvard.id)),
        "{reminder}"
    );
    let system = prompts::system_prompt("today");
    assert!(system.contains("already marked in_progress"), "{system}");
    assert!(!system.contains("Mark it as in_progress"), "{system}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offline_stand_in_finds_answers_written_in_prose_for_an_input_the_sample_lacks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = r#"{"bundles": [{"bundleId": "guest_tobias_achebe_009", "entities": [
        {"entityType": "BUSINESS", "name": "Corvane Labs", "directions": [
          {"key": "fundingHistory", "objective": "Find Corvane Labs' funding rounds and who led them.",
           "fieldsToExtract": ["rounds", "leadInvestors"]}]}]}]}"#;
    let input = EntitiesResearchDirections::from_json("funding.json", text).expect("input");
    let opts = options(
        dir.path(),
        Arc::new(offline_model()),
        Arc::new(InMemorySaver::new()),
        "prose",
    );
    let summary = run_entity_intel(&input, &opts).await.expect("run");
    assert!(summary.succeeded(), "{summary:#?}");
    let found = read_json(
        &dir.path()
            .join("guest_tobias_achebe_009/biz_corvane_labs_fundingHistory.json"),
    );
    let value = |field: &str| {
        found["fields"][field]["value"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    assert!(
        value("leadInvestors").contains("Fenbridge Ventures"),
        "{found:#}"
    );
    assert!(
        value("rounds").contains("Series B") && value("rounds").contains("28 million"),
        "{found:#}"
    );
}

#[test]
fn real_model_runs_get_the_seeds_page_fetch_site_map_and_wikipedia_tools() {
    use graphkit_examples::entity_intel::{ToolDeps, WebTools, research_tools};
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    let deps = |web| ToolDeps {
        search: search::corpus(&search::default_corpus_dir()).expect("corpus"),
        summary_model: Arc::clone(&model),
        summarize_after_messages: 0,
        web,
        outputs: graphkit_examples::entity_intel::OutputFolder::FromState,
    };
    let names = |deps: &ToolDeps| -> Vec<String> {
        research_tools(deps)
            .iter()
            .map(|t| t.spec().name.clone())
            .collect()
    };
    let online = names(&deps(Some(WebTools::default())));
    for tool in [
        "fetch_url",
        "site_map",
        "wikipedia_search",
        "wikipedia_summary",
        "web_search",
    ] {
        assert!(
            online.iter().any(|n| n == tool),
            "{tool} missing from {online:?}"
        );
    }
    let offline = names(&deps(None));
    assert!(!offline.iter().any(|n| n == "fetch_url"), "{offline:?}");
}

/// A scripted model (a test double, not a model): for each todo of Mara Lindqvist it writes
/// its output at once, with one value whose passage her profile holds and others whose
/// passages it does not (or whose value is not in the passage), and marks it completed.
fn scripted_writer() -> FunctionModel {
    FunctionModel::new(|request| {
        if request.response_format.is_some() {
            return Ok(AssistantMessage::text(r#"{"todos": []}"#));
        }
        if request.tools.is_empty() {
            return Ok(AssistantMessage::text("Summary."));
        }
        let reminder = request
            .messages
            .last()
            .map(|m| m.text().to_owned())
            .unwrap_or_default();
        let todo: Value = reminder
            .lines()
            .find_map(|l| l.strip_prefix("CURRENT TODO (JSON): "))
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        let page = "corpus://mara-lindqvist-profile.md";
        let fields = if todo["directionKey"] == "roleAffiliationConfirmation" {
            json!({
                // Right: the line is on the page and holds the value.
                "currentRole": {"value": "Chief Scientific Officer", "sourceUrl": page,
                    "passage": "Current role: Chief Scientific Officer and co-founder, Halvard Biosciences"},
                // Wrong: the page says no such thing.
                "affiliation": {"value": "Lund University", "sourceUrl": page,
                    "passage": "Mara Lindqvist is a professor at Lund University."},
                "location": {"value": null, "note": "not found"},
            })
        } else {
            json!({
                // A passage from another page.
                "education": {"value": "PhD, Karolinska Institutet", "sourceUrl": page,
                    "passage": "She earned her PhD at Karolinska Institutet."},
                // The passage is on the page, but the value is not in it.
                "previousRoles": {"value": "research director, Nordgen Plant Bank", "sourceUrl": page,
                    "passage": "Previous roles: postdoctoral fellow, Uppsala University (2011-2014); research associate, Nordgen Plant Bank (2006-2007)"},
            })
        };
        Ok(AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("todo_update", json!({"todo_id": todo["id"], "status": "completed"})),
                ToolCall::new("agent_write_file", json!({
                    "filename": todo["outputFile"], "description": "findings",
                    "content": json!({"fields": fields}).to_string()})),
            ],
        ))
    })
    .with_name("scripted writer (test double)")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_whose_passage_is_not_in_the_cited_source_are_marked_unverified_and_a_todo_with_none_verified_is_not_completed()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = small_input();
    let opts = options(
        dir.path(),
        Arc::new(scripted_writer()),
        Arc::new(InMemorySaver::new()),
        "verify",
    );
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");
    let report = &summary.bundles[0];
    assert_eq!(report.verified_values, 1, "{report:?}");
    assert_eq!(report.unverified_values, 3, "{report:?}");
    assert_eq!(report.completed_todos, 1, "{report:?}");
    assert_eq!(report.blocked_todos, 1, "{report:?}");

    let out = dir.path().join(&report.bundle_id);
    let master = read_json(&out.join("research_complete.json"));
    assert_eq!(master["verification"]["verifiedValues"], 1);
    assert_eq!(master["verification"]["unverifiedValues"], 3);
    assert_eq!(master["verification"]["missingFields"], 1);
    for todo in master["todoList"]["todos"].as_array().expect("todos") {
        let notes = todo["notes"].as_str().unwrap_or_default();
        if todo["directionKey"] == "roleAffiliationConfirmation" {
            assert_eq!(todo["status"], "completed", "{todo}");
            assert!(
                notes.contains(
                    "affiliation (the passage is not in corpus://mara-lindqvist-profile.md)"
                ),
                "{notes}"
            );
        } else {
            assert_eq!(todo["status"], "blocked", "{todo}");
            assert!(
                notes.contains("no field of its output could be verified"),
                "{notes}"
            );
            assert!(
                notes.contains("`research director, Nordgen Plant Bank` is not in its passage"),
                "{notes}"
            );
        }
    }
    // The files say what the report says: the wrong value is no longer a value.
    let role = read_json(
        &out.join(
            master["todoList"]["todos"][0]["outputFile"]
                .as_str()
                .expect("outputFile"),
        ),
    );
    assert_eq!(
        role["fields"]["currentRole"]["value"],
        "Chief Scientific Officer"
    );
    assert_eq!(role["fields"]["currentRole"]["verified"], true);
    assert_eq!(role["fields"]["affiliation"]["value"], Value::Null);
    assert_eq!(
        role["fields"]["affiliation"]["unverifiedValue"],
        "Lund University"
    );
    assert_eq!(role["fields"]["affiliation"]["verified"], false);
    let shown = &master["researchOutputs"][0]["output"]["fields"]["affiliation"];
    assert_eq!(shown["value"], Value::Null, "{shown}");
}
