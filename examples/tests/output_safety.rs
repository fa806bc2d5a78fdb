//! Saving research outputs never loses data silently (issue 18, item 1): a write that
//! fails leaves no file, keeps the todo from ending completed, reaches the model, and
//! marks the bundle failed.

use std::path::Path;
use std::sync::Arc;

use graphkit::checkpoint::InMemorySaver;
use graphkit_examples::entity_intel::{
    EntitiesResearchDirections, EntityIntelOptions, Limits, TodoStatus, run_entity_intel,
    sample_input_path,
};
use graphkit_examples::shared::{RunDir, RunTarget, search};
use graphkit_llm::{AssistantMessage, ChatModel, FunctionModel, Message, ToolCall};
use serde_json::json;

/// A test double that writes every todo's output under a name too long for any file
/// system, and marks the todo completed in the same turn.
fn long_name_writer() -> FunctionModel {
    FunctionModel::new(|request| {
        if request.response_format.is_some() {
            return Ok(AssistantMessage::text(r#"{"todos": []}"#));
        }
        if request.tools.is_empty() {
            return Ok(AssistantMessage::text("summary"));
        }
        let reminder = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User(_) => Some(m.text().to_owned()),
                _ => None,
            })
            .unwrap_or_default();
        let Some(todo) = reminder
            .lines()
            .find_map(|l| l.strip_prefix("CURRENT TODO: "))
            .and_then(|l| l.split_whitespace().next())
            .filter(|id| *id != "none")
        else {
            return Ok(AssistantMessage::text("all done"));
        };
        Ok(AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new(
                    "agent_write_file",
                    json!({"filename": format!("{}.json", "k".repeat(5000)), "content": "{\"a\": 1}"}),
                ),
                ToolCall::new("todo_update", json!({"todo_id": todo, "status": "completed"})),
            ],
        ))
    })
    .with_name("long-name-writer (test double)")
}

fn options(dir: &Path, model: Arc<dyn ChatModel>) -> EntityIntelOptions {
    EntityIntelOptions {
        summary_model: Arc::clone(&model),
        model,
        search: search::corpus(&search::default_corpus_dir()).expect("corpus"),
        web: None,
        limits: Limits::default(),
        max_concurrency: 1,
        target: RunTarget::new(
            "long-names",
            RunDir::create(dir).expect("run dir"),
            Arc::new(InMemorySaver::new()),
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_that_cannot_be_saved_blocks_its_todo_and_fails_the_bundle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = EntitiesResearchDirections::from_file(&sample_input_path()).expect("sample");
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(1);
    input.bundles[0].entities[0].directions.truncate(1);
    let opts = options(dir.path(), Arc::new(long_name_writer()));
    let summary = run_entity_intel(&input, &opts).await.expect("run ends");

    assert!(!summary.succeeded(), "{summary:#?}");
    let report = &summary.bundles[0];
    assert_eq!(report.status, "failed", "{report:?}");
    let error = report.error.as_deref().unwrap_or_default();
    assert!(error.contains("could not be saved"), "{error}");
    assert!(error.contains("File name too long"), "{error}");
    assert_eq!(report.completed_todos, 0, "{report:?}");
    assert_eq!(report.blocked_todos, 1, "{report:?}");

    let out = dir.path().join(&input.bundles[0].bundle_id);
    let master: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("research_complete.json")).expect("master"),
    )
    .expect("json");
    let todo = &master["todoList"]["todos"][0];
    assert_eq!(todo["status"], TodoStatus::Blocked.as_str(), "{todo}");
    assert!(
        todo["notes"]
            .as_str()
            .unwrap_or_default()
            .contains("could not be saved"),
        "{todo}"
    );
    // Nothing but the master file: no 0-byte output, no temporary file.
    let names: Vec<String> = std::fs::read_dir(&out)
        .expect("bundle dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["research_complete.json"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_files_left_by_a_killed_process_are_removed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut input = EntitiesResearchDirections::from_file(&sample_input_path()).expect("sample");
    input.bundles.truncate(1);
    input.bundles[0].entities.truncate(1);
    input.bundles[0].entities[0].directions.truncate(1);
    let bundle_dir = dir.path().join(&input.bundles[0].bundle_id);
    std::fs::create_dir_all(&bundle_dir).expect("bundle dir");
    // What a process killed mid-write leaves (no process has pid u32::MAX).
    std::fs::write(dir.path().join("run_summary.tmp-4294967295"), "{").expect("write");
    std::fs::write(bundle_dir.join(".a.json.tmp-4294967295-0"), "{").expect("write");
    let model = Arc::new(graphkit_examples::entity_intel::offline_model());
    let summary = run_entity_intel(&input, &options(dir.path(), model))
        .await
        .expect("run");
    assert!(summary.succeeded(), "{summary:#?}");
    let leftovers: Vec<_> = [dir.path(), bundle_dir.as_path()]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("list"))
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
