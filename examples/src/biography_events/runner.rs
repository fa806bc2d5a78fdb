//! Running the workflow for one person: the thread (new, or resumed after a crash), the
//! progress lines, and the outputs — `events.json` (sorted by date, unknown dates last),
//! `history.json`, `run_summary.json` and `timeline.md`.

use std::sync::Arc;
use std::time::Instant;

use graphkit::{
    CompileOptions, CompiledGraph, Error as GraphError, RunConfig, RunInput, Scoped, StreamMode,
    StreamPayload,
};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;
use serde::Serialize;
use serde_json::{Value, json};

use super::event::{Event, full_detail_ratio, sort_by_date};
use super::graph::build_graph;
use super::state::{BiographyState, BiographyStateUpdate, Limits};
use super::{Deps, Sites};
use crate::shared::stream::{emit_json_line, plain_update};
use crate::shared::time::{now_ms, rfc3339};
use crate::shared::{ExampleError, Progress, RunDir, RunTarget};

/// Everything a run needs besides the person and the initial events.
#[derive(Clone)]
pub struct BiographyOptions {
    /// The model behind every prompt.
    pub model: Arc<dyn ChatModel>,
    /// The search backend.
    pub search: Arc<dyn SearchBackend>,
    /// The authoritative sites for url_finder.
    pub sites: Sites,
    /// The knobs.
    pub limits: Limits,
    /// The thread, run directory, checkpoints, resume, progress and Ctrl-C; with
    /// `stream`, the tool graphs' updates are printed too.
    pub target: RunTarget,
}

impl std::fmt::Debug for BiographyOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BiographyOptions")
            .field("model", &self.model.model_name())
            .field("limits", &self.limits)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The run summary (`run_summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BiographyRunSummary {
    /// `biography-events`.
    pub workflow: String,
    /// The thread.
    pub thread: String,
    /// The person researched.
    pub person: String,
    /// The model.
    pub model: String,
    /// Tool calls made (url_finder, url_crawler, further_event_research).
    pub tool_calls: u32,
    /// The tools called, in order.
    pub tools: Vec<String>,
    /// Why the run stopped.
    pub stop_reason: String,
    /// Events found.
    pub events: usize,
    /// Events with full details (year, month, day and place).
    pub(crate) events_with_full_details: usize,
    /// Their share (0-1).
    pub full_detail_share: f64,
    /// Events with a conflict between sources.
    pub(crate) events_with_conflicts: usize,
    /// URLs url_finder kept, and those crawled.
    pub urls: Vec<String>,
    /// URLs crawled.
    pub crawled: Vec<String>,
    /// Model calls made.
    pub(crate) model_calls: u64,
    /// Real model calls of this process's part that failed (their retries spent, or the
    /// run's time budget spent); the offline stand-in's are not counted.
    pub model_calls_failed: u64,
    /// `true` when this process continued an earlier run of the thread.
    pub resumed: bool,
    /// When this process started (RFC 3339).
    pub(crate) started_at: String,
    /// Wall time of this process's part, in milliseconds.
    pub(crate) duration_ms: u64,
    /// The run directory.
    pub(crate) run_directory: String,
}

impl BiographyRunSummary {
    /// The summary as text for the terminal.
    pub(crate) fn render(&self) -> String {
        format!(
            "biography-events run {} for {} (model {}):\n  {} tool calls ({}); stopped: {}\n  {} events, {} with full details ({:.0}%), {} with conflicts\noutputs: {}\n",
            self.thread,
            self.person,
            self.model,
            self.tool_calls,
            self.tools.join(" → "),
            self.stop_reason,
            self.events,
            self.events_with_full_details,
            self.full_detail_share * 100.0,
            self.events_with_conflicts,
            self.run_directory
        )
    }
}

/// Researches `person` (with `initial_events` for an incremental run) and writes the
/// outputs into the run directory.
///
/// # Errors
/// [`ExampleError::Usage`] for an empty name, unusable knobs, or a thread that exists
/// without `resume`; [`ExampleError::Graph`] when the run fails (the thread can then be
/// resumed); [`ExampleError::Interrupted`] after a stop (Ctrl-C; the last step is
/// checkpointed); [`ExampleError::Io`] when an output cannot be written.
pub async fn run_biography_events(
    person: &str,
    initial_events: Option<Vec<Event>>,
    options: &BiographyOptions,
) -> Result<(BiographyRunSummary, BiographyState), ExampleError> {
    let person = person.trim();
    if person.is_empty() && !options.target.resume {
        return Err(ExampleError::Usage("the person to research is empty; give a name, e.g. graphkit-research biography-events \"Odile Marchetti\"".into()));
    }
    options.limits.validate().map_err(ExampleError::Usage)?;
    let started = Instant::now();
    let health_before = crate::shared::models::ModelHealth::process().counts();
    let started_at = rfc3339(now_ms());
    let deps = Deps {
        model: Arc::clone(&options.model),
        search: Arc::clone(&options.search),
        sites: options.sites.clone(),
    };
    let graph = build_graph(
        &deps,
        CompileOptions::new().checkpointer(Arc::clone(&options.target.checkpointer)),
    )?;
    let config = RunConfig::new()
        .thread_id(&options.target.thread)
        .recursion_limit(200)
        .subgraphs(true)
        .cancellation(options.target.stop.immediate());

    let mut resumed = false;
    let input: Option<RunInput<BiographyState>> = match graph.get_state(&config).await {
        Ok(_) if !options.target.resume => {
            return Err(ExampleError::Usage(format!(
                "thread {} already has a run; continue it with `--resume --thread {0}`, or start a new one with another --thread",
                options.target.thread
            )));
        }
        Ok(snapshot) if snapshot.is_done() && snapshot.step > 0 => {
            resumed = true;
            options
                .target
                .progress
                .note("run", "already finished; writing the outputs again");
            None
        }
        Ok(_) => {
            resumed = true;
            options
                .target
                .progress
                .note("run", "resuming from the last checkpoint");
            Some(RunInput::Continue)
        }
        Err(GraphError::CheckpointNotFound { .. }) => {
            if person.is_empty() {
                return Err(ExampleError::Usage(format!(
                    "nothing to resume on thread {}; start a run with a person's name",
                    options.target.thread
                )));
            }
            let mut update = BiographyStateUpdate::new()
                .person_to_research(person.to_owned())
                .limits(options.limits.clone())
                .initial_events(initial_events.clone());
            if let Some(events) = initial_events {
                update = update.events(events);
            }
            Some(update.into())
        }
        Err(err) => return Err(err.into()),
    };

    let state = match input {
        None => graph.get_state(&config).await?.values,
        Some(input) => stream_run(&graph, input, config, options).await?,
    };

    let mut summary = summarize(&state, options, resumed, started_at, started);
    summary.model_calls_failed = crate::shared::models::ModelHealth::process()
        .counts()
        .since(&health_before)
        .failed;
    write_outputs(&state, &summary, &options.target.run_dir)?;
    Ok((summary, state))
}

/// Runs the graph from `input`, reporting progress (and with `--stream` every update as a
/// JSON line), until it ends or a stop is asked for.
async fn stream_run(
    graph: &CompiledGraph<BiographyState>,
    input: RunInput<BiographyState>,
    config: RunConfig,
    options: &BiographyOptions,
) -> Result<BiographyState, ExampleError> {
    let stop = &options.target.stop;
    let mut stream = graph.stream_with(
        input,
        config,
        [
            StreamMode::Updates,
            StreamMode::Custom,
            StreamMode::Checkpoints,
        ],
    );
    loop {
        let Some(event) = stop.next_event(&mut stream).await? else {
            break;
        };
        let namespace: Vec<&str> = event.namespace.iter().map(|s| &**s).collect();
        match event.payload {
            StreamPayload::Custom { payload, .. } => report(&options.target.progress, &payload),
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } if options.target.stream => {
                let plain = plain_update::<BiographyState>(&update);
                emit_json_line(
                    &json!({"type": "update", "namespace": namespace, "node": &*node, "update": plain}),
                );
            }
            StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(update),
                ..
            } if options.target.stream => {
                emit_json_line(
                    &json!({"type": "update", "namespace": namespace, "node": &*node, "update": update}),
                );
            }
            _ => {}
        }
    }
    stream
        .into_final_state()
        .ok_or_else(|| ExampleError::Usage("the run ended without a final state".into()))
}

fn summarize(
    state: &BiographyState,
    options: &BiographyOptions,
    resumed: bool,
    started_at: String,
    started: Instant,
) -> BiographyRunSummary {
    let full = state.events.iter().filter(|e| e.has_full_details()).count();
    let mut tools: Vec<String> = Vec::new();
    for entry in &state.messages {
        if entry.tool == "summary" {
            tools.push(format!("({})", entry.input));
        } else if entry.tool != "check_gaps" {
            tools.push(entry.tool.clone());
        }
    }
    BiographyRunSummary {
        workflow: "biography-events".into(),
        thread: options.target.thread.clone(),
        person: state.person_to_research.clone(),
        model: options.model.model_name().to_owned(),
        tool_calls: state.tool_calls,
        tools,
        stop_reason: state
            .stop_reason
            .clone()
            .unwrap_or_else(|| "not finished".into()),
        events: state.events.len(),
        events_with_full_details: full,
        full_detail_share: full_detail_ratio(&state.events),
        events_with_conflicts: state
            .events
            .iter()
            .filter(|e| !e.conflicts.is_empty())
            .count(),
        urls: state.urls.clone(),
        crawled: state.crawled.clone(),
        model_calls: state.model_calls,
        model_calls_failed: 0,
        resumed,
        started_at,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        run_directory: options.target.run_dir.path().display().to_string(),
    }
}

fn write_outputs(
    state: &BiographyState,
    summary: &BiographyRunSummary,
    run_dir: &RunDir,
) -> Result<(), ExampleError> {
    let mut events = state.events.clone();
    sort_by_date(&mut events);
    run_dir.write_json("events.json", &events)?;
    run_dir.write_json("history.json", &state.messages)?;
    run_dir.write_json("run_summary.json", summary)?;
    crate::shared::run_dir::write_text_atomic(
        &run_dir.join("timeline.md"),
        &timeline(&events, summary),
    )
}

/// The readable timeline (`timeline.md`): one row per event in date order, then the
/// conflicts between sources.
pub fn timeline(events: &[Event], summary: &BiographyRunSummary) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = format!(
        "# Timeline: {}\n\n{} events, {} with full details ({:.0}%). {} tool calls; stopped: {}.\n\n| Date | Event | Place | Source | What happened |\n|---|---|---|---|---|\n",
        summary.person,
        summary.events,
        summary.events_with_full_details,
        summary.full_detail_share * 100.0,
        summary.tool_calls,
        cell(&summary.stop_reason)
    );
    if summary.events == 0 {
        // Pages read but nothing taken from them because the model failed is not nothing found.
        let why = if !summary.crawled.is_empty() && summary.model != super::offline::STAND_IN_NAME {
            format!(
                "**Nothing extracted:** {} page(s) were read, but the model took no dated event of {} from them (its replies were unusable, which the run's warnings name, or {} of its calls failed, the run's time budget included). This is not evidence that the pages name no such event.\n\n",
                summary.crawled.len(),
                summary.person,
                summary.model_calls_failed
            )
        } else {
            format!(
                "**Nothing found:** no page on the sites searched names {} in full.\n\n",
                summary.person
            )
        };
        out.insert_str(out.find("| Date |").unwrap_or(out.len()), &why);
    }
    if summary.model == super::offline::STAND_IN_NAME {
        out.insert_str(
            out.find("| Date |").unwrap_or(out.len()),
            "*Written by the offline stand-in (a deterministic program, not a model) from the local corpus.*\n\n",
        );
    }
    for e in events {
        out.push_str(&format!(
            "| {} | {}{} | {} | {} | {} |\n",
            e.date.display(),
            cell(&e.name),
            if e.conflicts.is_empty() { "" } else { " ⚠" },
            cell(e.location.as_deref().unwrap_or("—")),
            cell(if e.source.is_empty() {
                "—"
            } else {
                &e.source
            }),
            cell(&e.description)
        ));
    }
    if events.iter().any(|e| !e.source_url.is_empty()) {
        out.push_str("\n## Where each event was read\n\n");
        for e in events.iter().filter(|e| !e.source_url.is_empty()) {
            let quote = if e.passage.is_empty() {
                "no sentence of the page states it as written".to_owned()
            } else {
                format!("“{}”", e.passage)
            };
            out.push_str(&format!(
                "- {} ({}): {quote} — {}\n",
                e.name,
                e.date.display(),
                e.source_url
            ));
            for other in &e.also_read_from {
                let quote = if other.passage.is_empty() {
                    "no sentence of the page states it as written".to_owned()
                } else {
                    format!("“{}”", other.passage)
                };
                out.push_str(&format!("  - also: {quote} — {}\n", other.url));
            }
        }
    }
    let conflicted: Vec<&Event> = events.iter().filter(|e| !e.conflicts.is_empty()).collect();
    if !conflicted.is_empty() {
        out.push_str("\n## Conflicts between sources\n\n");
        for e in conflicted {
            for c in &e.conflicts {
                let pairs: Vec<String> = c
                    .values
                    .iter()
                    .zip(&c.sources)
                    .enumerate()
                    .map(|(i, (v, s))| {
                        let quote = c
                            .passages
                            .get(i)
                            .filter(|p| !p.is_empty())
                            .map(|p| format!(": “{p}”"))
                            .unwrap_or_default();
                        format!(
                            "{v} ({}{quote})",
                            if s.is_empty() { "no source" } else { s }
                        )
                    })
                    .collect();
                out.push_str(&format!(
                    "- {} — {}: {} (kept the first)\n",
                    e.name,
                    c.field,
                    pairs.join(" vs ")
                ));
            }
        }
    }
    out
}

fn report(progress: &Progress, event: &Value) {
    let text = |k: &str| event[k].as_str().unwrap_or("").to_owned();
    match event["event"].as_str() {
        Some("tool_call") => progress.note(
            &format!("tool call {}", event["call"].as_u64().unwrap_or(0)),
            &format!(
                "{}({}): {}",
                text("tool"),
                crate::shared::truncate(&text("input"), 120),
                crate::shared::truncate(&text("summary"), 300)
            ),
        ),
        Some("think") => progress.note(
            "think",
            &format!(
                "{} — {}",
                event["recommendation"].as_str().unwrap_or("(none given)"),
                crate::shared::truncate(&text("think"), 300)
            ),
        ),
        Some("stop") => progress.note("stop", &text("reason")),
        Some("gap_check") => progress.note("gap check", &text("summary")),
        Some("search") => progress.note("search", &text("query")),
        Some("warning") => {
            progress.note("warning", &crate::shared::truncate(&text("message"), 300))
        }
        _ => {}
    }
}
