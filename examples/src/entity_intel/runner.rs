//! Running the bundles: one graph run (one thread) per bundle, at most
//! `max_concurrency` at once (the seed's semaphore), resumable, with a run summary.

use std::sync::Arc;
use std::time::Instant;

use graphkit::{
    CompileOptions, CompiledGraph, Error as GraphError, RunConfig, RunInput, Scoped, StreamMode,
    StreamPayload,
};
use graphkit_llm::ChatModel;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::graph::build_graph;
use super::input::{EntitiesResearchDirections, EntityBundle};
use super::nodes::{AgentDeps, Limits, RUN_SESSION_KEY, new_session_id};
use super::state::{EntityIntelResearchState, EntityIntelResearchStateUpdate};
use super::todo::TodoStatus;
use super::tools::ToolDeps;
use crate::shared::stream::{emit_json_line, plain_update};
use crate::shared::time::{now_ms, rfc3339};
use crate::shared::{ExampleError, Progress, RunTarget};
use graphkit_tools::prebuilt::search::SearchBackend;

/// Everything a run needs besides its input.
#[derive(Clone)]
pub struct EntityIntelOptions {
    /// The research model (agent turns and todo generation).
    pub model: Arc<dyn ChatModel>,
    /// The model that writes checkpoint summaries inside `agent_write_file`.
    pub summary_model: Arc<dyn ChatModel>,
    /// The backend of the search and extract tools.
    pub search: Arc<dyn SearchBackend>,
    /// The seed's other web tools (page fetch, site map, Wikipedia); `None` offline.
    pub web: Option<super::web_tools::WebTools>,
    /// Per-todo limits.
    pub limits: Limits,
    /// Bundles researched at once.
    pub max_concurrency: usize,
    /// The thread, run directory, checkpoints, resume, progress and Ctrl-C. Bundle `b`
    /// runs on thread `{thread}--{b}` and writes into the run directory's subdirectory
    /// `b`; `resume` continues the bundles' threads; a stop also keeps bundles not started
    /// yet from starting.
    pub target: RunTarget,
}

impl std::fmt::Debug for EntityIntelOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntityIntelOptions")
            .field("model", &self.model.model_name())
            .field("summary_model", &self.summary_model.model_name())
            .field("limits", &self.limits)
            .field("max_concurrency", &self.max_concurrency)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// What happened to one bundle.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BundleSummary {
    /// The bundle.
    pub bundle_id: String,
    /// Its thread.
    pub thread_id: String,
    /// `finished`, `failed` (see `error`), or `interrupted` (stopped by Ctrl-C after a
    /// checkpoint; `--resume` continues it).
    pub status: String,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where its files are.
    pub output_directory: String,
    /// Todos in its list.
    pub total_todos: usize,
    /// Todos completed.
    pub completed_todos: usize,
    /// Todos blocked.
    pub blocked_todos: usize,
    /// The required (not optional) todos that did not complete: `ID (blocked: REASON)`.
    /// A run with any exits non-zero (its artifacts are written all the same).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_not_completed: Vec<String>,
    /// Reported values the graph verified in their cited sources (`verify_findings`).
    pub verified_values: usize,
    /// Reported values the graph could not verify: left out of the findings (moved to
    /// `unverifiedValue` in the files), each with the reason.
    pub unverified_values: usize,
    /// Tool calls made by the model.
    pub tool_calls: u64,
    /// Model calls.
    pub(crate) model_calls: u64,
    /// Context resets by `agent_write_file` (the state's `checkpoint_count`).
    pub context_checkpoints: u64,
    /// Input tokens reported by the provider (0 when it reports none).
    pub(crate) input_tokens: u64,
    /// Output tokens reported by the provider.
    pub(crate) output_tokens: u64,
    /// `true` when this process continued a thread that existed before.
    pub resumed: bool,
}

/// The run summary (`run_summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    /// The workflow.
    pub workflow: String,
    /// The run's thread id.
    pub thread: String,
    /// The run directory.
    pub(crate) run_directory: String,
    /// The research model.
    pub model: String,
    /// The summary model.
    pub summary_model: String,
    /// When this process started the run (RFC 3339).
    pub(crate) started_at: String,
    /// Wall time of this process's part of the run, in milliseconds.
    pub(crate) duration_ms: u64,
    /// Per bundle.
    pub bundles: Vec<BundleSummary>,
}

impl RunSummary {
    /// `true` when every bundle finished.
    pub fn succeeded(&self) -> bool {
        self.bundles.iter().all(|b| b.status == "finished")
    }

    /// The required todos of every bundle that did not complete (`BUNDLE: ID (blocked:
    /// REASON)`): the run did not do what it had to, though every bundle finished.
    pub fn required_not_completed(&self) -> Vec<String> {
        self.bundles
            .iter()
            .flat_map(|b| {
                b.required_not_completed
                    .iter()
                    .map(move |todo| format!("{}: {todo}", b.bundle_id))
            })
            .collect()
    }

    /// `true` when a stop request (Ctrl-C) left a bundle unfinished.
    pub fn interrupted(&self) -> bool {
        self.bundles.iter().any(|b| b.status == "interrupted")
    }

    /// A sum over the bundles.
    pub fn total(&self, f: impl Fn(&BundleSummary) -> u64) -> u64 {
        self.bundles.iter().map(f).sum()
    }

    /// The summary as text lines for the terminal.
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "entity-intel run {} ({} s, model {}):\n",
            self.thread,
            self.duration_ms / 1000,
            self.model
        );
        for b in &self.bundles {
            out.push_str(&format!(
                "  {:<34} {:>2}/{:<2} completed, {} blocked, {} values verified in their sources, {} unverified, {} tool calls, {} context checkpoints{}\n",
                b.bundle_id,
                b.completed_todos,
                b.total_todos,
                b.blocked_todos,
                b.verified_values,
                b.unverified_values,
                b.tool_calls,
                b.context_checkpoints,
                b.error.as_ref().map(|e| format!(" — FAILED: {e}")).unwrap_or_default()
            ));
        }
        let tokens = self.total(|b| b.input_tokens + b.output_tokens);
        out.push_str(&format!(
            "  total: {}/{} todos completed, {} blocked, {} values verified, {} unverified (left out of the findings), {} tool calls, {} model calls, tokens {}\n",
            self.total(|b| b.completed_todos as u64),
            self.total(|b| b.total_todos as u64),
            self.total(|b| b.blocked_todos as u64),
            self.total(|b| b.verified_values as u64),
            self.total(|b| b.unverified_values as u64),
            self.total(|b| b.tool_calls),
            self.total(|b| b.model_calls),
            if tokens == 0 { "not reported".to_owned() } else { tokens.to_string() }
        ));
        out.push_str(&format!("outputs: {}\n", self.run_directory));
        out
    }
}

/// Runs every bundle of `input` and writes `run_summary.json` into the run directory.
///
/// # Errors
/// [`ExampleError`] when the graph cannot be built, a thread exists without `resume`, or
/// the summary cannot be written. A bundle whose run fails is reported in the summary
/// (status `failed`) and does not stop the others.
pub async fn run_entity_intel(
    input: &EntitiesResearchDirections,
    options: &EntityIntelOptions,
) -> Result<RunSummary, ExampleError> {
    let started = Instant::now();
    let started_at = rfc3339(now_ms());
    let graph = build_graph(
        AgentDeps {
            model: Arc::clone(&options.model),
            tool_specs: Vec::new(),
            limits: options.limits.clone(),
        },
        &ToolDeps {
            search: Arc::clone(&options.search),
            summary_model: Arc::clone(&options.summary_model),
            summarize_after_messages: options.limits.summarize_after_messages,
            web: options.web.clone(),
            outputs: super::OutputFolder::FromState,
        },
        CompileOptions::new().checkpointer(Arc::clone(&options.target.checkpointer)),
    )?;

    // Refuse to overwrite an existing run before anything starts; refuse to "resume" a
    // run whose checkpoints are not there (that would silently be a fresh run).
    let mut existing = 0;
    for bundle in &input.bundles {
        let thread = bundle_thread(&options.target.thread, &bundle.bundle_id);
        if thread_exists(&graph, &thread).await? {
            if !options.target.resume {
                return Err(ExampleError::Usage(format!(
                    "thread {} already has a run; continue it with `--resume --thread {}`, or start a new one with another --thread",
                    thread, options.target.thread
                )));
            }
            existing += 1;
        }
    }
    if options.target.resume && existing == 0 {
        return Err(ExampleError::Resume(format!(
            "the checkpoint backend holds no checkpoints of thread {} (none of its bundle threads {}): the database is empty or belongs to another run; pass the run's own --checkpoint, or start a new run without --resume",
            options.target.thread,
            bundle_thread(&options.target.thread, "BUNDLE")
        )));
    }

    let semaphore = Arc::new(Semaphore::new(options.max_concurrency.max(1)));
    let runs = input.bundles.iter().map(|bundle| {
        let (graph, semaphore) = (graph.clone(), Arc::clone(&semaphore));
        async move {
            let _permit = semaphore.acquire().await;
            run_bundle(&graph, input, bundle, options).await
        }
    });
    let bundles = futures::future::join_all(runs).await;
    options.target.progress.end();

    let summary = RunSummary {
        workflow: "entity-intel".into(),
        thread: options.target.thread.clone(),
        run_directory: options.target.run_dir.path().display().to_string(),
        model: options.model.model_name().to_owned(),
        summary_model: options.summary_model.model_name().to_owned(),
        started_at,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        bundles,
    };
    options
        .target
        .run_dir
        .write_json("run_summary.json", &summary)?;
    if options.target.stream {
        emit_json_line(&json!({"type": "summary", "summary": summary}));
    }
    Ok(summary)
}

/// How often plain progress says what is still running (a slow model call).
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(15);

/// The thread id of a bundle.
pub(crate) fn bundle_thread(thread: &str, bundle_id: &str) -> String {
    format!("{thread}--{bundle_id}")
}

async fn thread_exists(
    graph: &CompiledGraph<EntityIntelResearchState>,
    thread: &str,
) -> Result<bool, ExampleError> {
    match graph.get_state(&RunConfig::new().thread_id(thread)).await {
        Ok(_) => Ok(true),
        Err(GraphError::CheckpointNotFound { .. }) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

async fn run_bundle(
    graph: &CompiledGraph<EntityIntelResearchState>,
    input: &EntitiesResearchDirections,
    bundle: &EntityBundle,
    options: &EntityIntelOptions,
) -> BundleSummary {
    let thread = bundle_thread(&options.target.thread, &bundle.bundle_id);
    let output_directory = options.target.run_dir.join(&bundle.bundle_id);
    let output_directory = std::path::absolute(&output_directory).unwrap_or(output_directory);
    // A process killed while saving an output leaves its temporary file; the output itself
    // kept its previous content.
    if let Err(err) = graphkit_tools::remove_stale_temp_files(&output_directory)
        && err.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %err, dir = %output_directory.display(), "could not remove stale temporary files");
    }
    let mut summary = BundleSummary {
        bundle_id: bundle.bundle_id.clone(),
        thread_id: thread.clone(),
        status: "failed".into(),
        error: None,
        output_directory: output_directory.display().to_string(),
        total_todos: bundle.total_directions(),
        completed_todos: 0,
        blocked_todos: 0,
        required_not_completed: Vec::new(),
        verified_values: 0,
        unverified_values: 0,
        tool_calls: 0,
        model_calls: 0,
        context_checkpoints: 0,
        input_tokens: 0,
        output_tokens: 0,
        resumed: false,
    };
    if options.target.stop.is_requested() {
        summary.status = "interrupted".into();
        return summary;
    }
    match drive(
        graph,
        input,
        bundle,
        options,
        &thread,
        &output_directory,
        &mut summary,
    )
    .await
    {
        Ok(state) => {
            let list = &state.todo_list;
            let unsaved: Vec<String> = state
                .unsaved_outputs()
                .map(|f| format!("{}: {}", f.filename, f.error))
                .collect();
            if unsaved.is_empty() {
                summary.status = "finished".into();
            } else {
                summary.error = Some(format!(
                    "{} research output(s) could not be saved: {}",
                    unsaved.len(),
                    unsaved.join("; ")
                ));
            }
            summary.total_todos = list.todos.len();
            summary.completed_todos = list.count(TodoStatus::Completed);
            summary.blocked_todos = list.count(TodoStatus::Blocked);
            summary.required_not_completed = list
                .todos
                .iter()
                .filter(|t| !t.optional && t.status != TodoStatus::Completed)
                .map(|t| match t.notes.trim() {
                    "" => format!("{} ({})", t.id, t.status.as_str()),
                    notes => format!("{} ({}: {notes})", t.id, t.status.as_str()),
                })
                .collect();
            summary.verified_values = state.findings_check.verified();
            summary.unverified_values = state.findings_check.unverified();
            summary.tool_calls = state.tool_calls;
            summary.model_calls = state.model_calls;
            summary.context_checkpoints = state.checkpoint_count;
            summary.input_tokens = state.input_tokens;
            summary.output_tokens = state.output_tokens;
            options.target.progress.set(
                &bundle.bundle_id,
                summary.completed_todos,
                summary.blocked_todos,
                summary.total_todos,
            );
        }
        Err(ExampleError::Interrupted) => {
            options
                .target
                .progress
                .note(&bundle.bundle_id, "stopped after its last checkpoint");
            summary.status = "interrupted".into();
        }
        Err(err) => {
            options
                .target
                .progress
                .note(&bundle.bundle_id, &format!("failed: {err}"));
            summary.error = Some(err.to_string());
        }
    }
    options.target.progress.finish(&bundle.bundle_id);
    summary
}

async fn drive(
    graph: &CompiledGraph<EntityIntelResearchState>,
    input: &EntitiesResearchDirections,
    bundle: &EntityBundle,
    options: &EntityIntelOptions,
    thread: &str,
    output_directory: &std::path::Path,
    summary: &mut BundleSummary,
) -> Result<EntityIntelResearchState, ExampleError> {
    let directions = bundle.total_directions();
    let config = RunConfig::new()
        .thread_id(thread)
        .recursion_limit(100 + directions * 60)
        .with_value(RUN_SESSION_KEY, new_session_id())
        .cancellation(options.target.stop.immediate());
    let here = output_directory.display().to_string();
    let run_input: RunInput<EntityIntelResearchState> = match graph.get_state(&config).await {
        Ok(snapshot) if snapshot.is_done() && snapshot.step > 0 => {
            // Finished before: nothing to redo.
            summary.resumed = true;
            options
                .target
                .progress
                .note(&bundle.bundle_id, "already finished");
            return Ok(snapshot.values);
        }
        Ok(snapshot) => {
            summary.resumed = true;
            options
                .target
                .progress
                .note(&bundle.bundle_id, "resuming from the last checkpoint");
            if snapshot.values.output_directory != here {
                // The run folder was moved or copied: write the rest of the outputs here.
                graph
                    .update_state(
                        &config,
                        EntityIntelResearchStateUpdate::new().output_directory(here.clone()),
                        graphkit::UpdateAs::LastWriter,
                    )
                    .await?;
            }
            RunInput::Continue
        }
        Err(GraphError::CheckpointNotFound { .. }) => EntityIntelResearchStateUpdate::new()
            .episode(input.episode.clone())
            .candidate_sources(input.candidate_sources.clone())
            .research_directions(input.single_bundle(bundle))
            .output_directory(output_directory.display().to_string())
            .into(),
        Err(err) => return Err(err.into()),
    };
    std::fs::create_dir_all(output_directory)
        .map_err(|e| ExampleError::io("create", output_directory, e))?;

    let group = bundle.bundle_id.as_str();
    // The tools the model asked for last: what the `tools` node is running.
    let mut called_tools = String::new();
    let mut stream = graph.stream_with(
        run_input,
        config,
        [
            StreamMode::Updates,
            StreamMode::Custom,
            StreamMode::Tasks,
            StreamMode::Checkpoints,
        ],
    );
    let mut heartbeat =
        tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    loop {
        // A stop request is honoured at the next checkpoint: the step in progress is saved.
        let event = tokio::select! {
            event = options.target.stop.next_event(&mut stream) => event?,
            _ = heartbeat.tick() => {
                options.target.progress.heartbeat(group);
                continue;
            }
        };
        let Some(event) = event else { break };
        match event.payload {
            StreamPayload::Custom { node, payload } => {
                report(&options.target.progress, group, &payload);
                if options.target.stream {
                    emit_json_line(
                        &json!({"type": "event", "bundle": group, "node": &*node, "event": payload}),
                    );
                }
            }
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } => {
                let plain = plain_update::<EntityIntelResearchState>(&update);
                let count = |k: &str| plain[k].as_u64().unwrap_or(0);
                options.target.progress.usage(
                    group,
                    count("model_calls"),
                    count("input_tokens") + count("output_tokens"),
                );
                if let Some(todo) = plain["current_todo_id"].as_str() {
                    options.target.progress.current(group, todo);
                }
                if let Some(names) = last_tool_calls(&plain) {
                    called_tools = names;
                }
                if options.target.stream {
                    emit_json_line(
                        &json!({"type": "update", "bundle": group, "node": &*node, "update": plain}),
                    );
                }
            }
            StreamPayload::Task(task) => {
                if matches!(task.kind, graphkit::streaming::TaskEventKind::Start) {
                    let what = match &*task.node {
                        super::nodes::RESEARCH_AGENT => "research_agent: model call".to_owned(),
                        super::nodes::GENERATE_TODOS => "generate_todos: model call".to_owned(),
                        graphkit_tools::TOOLS_NODE if !called_tools.is_empty() => {
                            format!("tools: {called_tools}")
                        }
                        node => format!("{node} running"),
                    };
                    options.target.progress.activity(group, &what);
                }
            }
            _ => {}
        }
    }
    stream.into_final_state().ok_or_else(|| {
        ExampleError::Usage(format!(
            "the run of {} ended without a final state",
            bundle.bundle_id
        ))
    })
}

/// The names of the tool calls of the last assistant message in a plain update
/// (`web_search, web_extract`), if it has any.
fn last_tool_calls(plain: &Value) -> Option<String> {
    let last = plain["messages"].as_array()?.last()?;
    let names: Vec<&str> = last["tool_calls"]
        .as_array()?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

fn report(progress: &Progress, bundle: &str, event: &Value) {
    let count = |k: &str| usize::try_from(event[k].as_u64().unwrap_or(0)).unwrap_or(0);
    match event["event"].as_str() {
        Some("progress") => progress.set(bundle, count("done"), count("blocked"), count("total")),
        Some("todo_blocked") => progress.note(
            bundle,
            &format!("blocked {}: {}", event["todoId"].as_str().unwrap_or("?"), event["reason"].as_str().unwrap_or("")),
        ),
        Some("warning") => {
            progress.note(bundle, &format!("warning: {}", crate::shared::truncate(event["message"].as_str().unwrap_or(""), 300)))
        }
        Some("findings_verified") if count("unverified") > 0 => progress.note(
            bundle,
            &format!(
                "{} value(s) verified in their sources; {} could not be verified and are left out of the findings",
                count("verified"),
                count("unverified")
            ),
        ),
        Some("todos_generated") if count("filledIn") > 0 || count("dropped") > 0 => progress.note(
            bundle,
            &format!(
                "todo list: {} todos ({} filled in from the directions, {} generated todos dropped)",
                count("total"),
                count("filledIn"),
                count("dropped")
            ),
        ),
        _ => {}
    }
}
