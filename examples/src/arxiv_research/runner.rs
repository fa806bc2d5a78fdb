//! Running the graph on one thread (new or resumed), with progress per plan step, and
//! writing the artifacts: `report.md`, `facts.json`, `plan.json`, `graph.mmd`,
//! `graph.dot` (and `graph.png` when Graphviz's `dot` is installed).

use std::path::Path;
use std::sync::Arc;

use graphkit::checkpoint::Checkpointer;
use graphkit::{
    CompileOptions, CompiledGraph, Error as GraphError, RunConfig, RunInput, Scoped, StreamMode,
    StreamPayload,
};
use serde_json::{Value, json};

use super::graph::{GraphDeps, build_graph};
use super::nodes::{EXPANDER, FACT_GATE, MAX_CITATIONS_KEY, STEP_ITERATOR};
use super::state::{FactKind, ResearchState, ResearchStateUpdate};
use super::tools::TOP_K_KEY;
use crate::shared::run_dir::{write_json_atomic, write_text_atomic};
use crate::shared::stream::{emit_json_line, plain_update};
use crate::shared::{ExampleError, Progress, StopSignal};

/// What one run needs.
pub struct ArxivResearchOptions {
    /// The research topic.
    pub topic: String,
    /// Search results per `arxiv_search` call (run config `top_k`).
    pub top_k: usize,
    /// K: new references admitted per plan step (run config `max_citations_per_step`).
    pub max_citations_per_step: u32,
    /// Models, the arXiv client, the step cap.
    pub deps: GraphDeps,
    /// Where checkpoints go.
    pub checkpointer: Arc<dyn Checkpointer>,
    /// The thread id.
    pub thread: String,
    /// Papers summarised at once.
    pub max_concurrency: usize,
    /// `--stream`: JSON lines on stdout.
    pub stream: bool,
    /// Progress on stderr.
    pub progress: Progress,
    /// Ctrl-C.
    pub stop: StopSignal,
}

impl std::fmt::Debug for ArxivResearchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArxivResearchOptions")
            .field("topic", &self.topic)
            .field("top_k", &self.top_k)
            .field("max_citations_per_step", &self.max_citations_per_step)
            .field("thread", &self.thread)
            .finish_non_exhaustive()
    }
}

/// Checks the run-defining options before anything is created.
///
/// # Errors
/// [`ExampleError::Usage`] for an empty topic, `K = 0`, `top_k = 0` or `max_steps = 0`.
pub fn check_options(
    topic: &str,
    top_k: usize,
    k: u32,
    max_steps: usize,
) -> Result<(), ExampleError> {
    if topic.trim().is_empty() {
        return Err(ExampleError::Usage(
            "the topic is empty; give a research topic, e.g. `arxiv-research \"speculative decoding\"`".into(),
        ));
    }
    if k == 0 {
        return Err(ExampleError::Usage(
            "--max-citations-per-step must be at least 1 (0 would admit no paper and leave nothing to report)".into(),
        ));
    }
    if top_k == 0 || top_k > 50 {
        return Err(ExampleError::Usage(
            "--top-k must be between 1 and 50 (arXiv returns at most 50 results per query)".into(),
        ));
    }
    if max_steps == 0 {
        return Err(ExampleError::Usage("--max-steps must be at least 1".into()));
    }
    Ok(())
}

/// The graph compiled with `checkpointer`.
///
/// # Errors
/// [`ExampleError::Graph`] when it does not build (a bug).
pub fn compiled(
    deps: &GraphDeps,
    checkpointer: Arc<dyn Checkpointer>,
) -> Result<CompiledGraph<ResearchState>, ExampleError> {
    Ok(build_graph(
        deps,
        CompileOptions::new().checkpointer(checkpointer),
    )?)
}

/// Runs (or resumes) the research on `options.thread` and returns the final state.
///
/// # Errors
/// [`ExampleError::Interrupted`] after Ctrl-C (the last step is checkpointed);
/// [`ExampleError::Graph`] when a node fails (bad feed, planner without a plan, ...).
pub async fn run_arxiv_research(
    options: &ArxivResearchOptions,
) -> Result<ResearchState, ExampleError> {
    let graph = compiled(&options.deps, Arc::clone(&options.checkpointer))?;
    let max_steps = options.deps.nodes.max_steps;
    let config = RunConfig::new()
        .thread_id(options.thread.clone())
        .recursion_limit(40 + max_steps * 12)
        .max_concurrency(options.max_concurrency.max(1))
        .with_value(TOP_K_KEY, options.top_k)
        .with_value(MAX_CITATIONS_KEY, options.max_citations_per_step)
        .cancellation(options.stop.immediate());
    let group = "arxiv";
    let input: RunInput<ResearchState> = match graph.get_state(&config).await {
        Ok(snapshot) if snapshot.is_done() && snapshot.step > 0 => {
            options.progress.note(group, "already finished");
            return Ok(snapshot.values);
        }
        Ok(_) => {
            options
                .progress
                .note(group, "resuming from the last checkpoint");
            RunInput::Continue
        }
        Err(GraphError::CheckpointNotFound { .. }) => ResearchStateUpdate::new()
            .topic(options.topic.clone())
            .into(),
        Err(err) => return Err(err.into()),
    };
    let mut stream = graph.stream_with(
        input,
        config,
        [
            StreamMode::Updates,
            StreamMode::Tasks,
            StreamMode::Checkpoints,
        ],
    );
    let (mut steps_done, mut total_steps, mut expanded) = (0, 0, 0);
    loop {
        let Some(event) = options.stop.next_event(&mut stream).await? else {
            break;
        };
        match event.payload {
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } => {
                let plain = plain_update::<ResearchState>(&update);
                if let Some(steps) = plain["plan"]["steps"].as_array() {
                    total_steps = steps.len();
                }
                report_update(
                    &options.progress,
                    group,
                    &node,
                    &plain,
                    &mut steps_done,
                    total_steps,
                );
                if options.stream {
                    emit_json_line(&json!({"type": "update", "node": &*node, "update": plain}));
                }
            }
            // Summaries finish one by one inside the expander's super-step (each saved as
            // a pending write at once); the step's updates come when all are done.
            StreamPayload::Task(task)
                if &*task.node == EXPANDER
                    && matches!(task.kind, graphkit::streaming::TaskEventKind::End { .. }) =>
            {
                expanded += 1;
                options
                    .progress
                    .note(group, &format!("expander: {expanded} paper(s) summarised"));
            }
            _ => {}
        }
    }
    stream
        .into_final_state()
        .ok_or_else(|| ExampleError::Usage("the run ended without a final state".into()))
}

fn report_update(
    progress: &Progress,
    group: &str,
    node: &str,
    plain: &Value,
    steps_done: &mut usize,
    total: usize,
) {
    match node {
        STEP_ITERATOR => {
            let text = plain["messages"][0]["content"].as_str().unwrap_or_default();
            let head = text.lines().next().unwrap_or_default();
            let task = text
                .lines()
                .find_map(|l| l.strip_prefix("Task: "))
                .unwrap_or_default();
            progress.note(group, &format!("{head}: {task}"));
            progress.set(group, *steps_done, 0, total);
        }
        FACT_GATE => {
            *steps_done += 1;
            let admitted = plain["facts"].as_array().map_or(0, |f| {
                f.iter()
                    .filter(|f| f["kind"] == "scholar_reference")
                    .count()
            });
            progress.note(
                group,
                &format!("fact gate: {admitted} new reference(s) admitted"),
            );
            progress.set(group, *steps_done, 0, total);
        }
        EXPANDER => {
            if let Some(fact) = plain["facts"].as_array().and_then(|f| f.first()) {
                let title = fact["title"].as_str().unwrap_or("a paper");
                let source = fact["summary_source"].as_str().unwrap_or("failed");
                progress.note(group, &format!("summarised ({source}): {title}"));
            }
        }
        _ => {}
    }
}

/// Writes `report.md`, `facts.json`, `plan.json`, `graph.mmd`, `graph.dot` (and
/// `graph.png` with Graphviz) into `dir`; returns the lines to print about them.
///
/// # Errors
/// [`ExampleError::Io`] when a file cannot be written.
pub(crate) fn write_artifacts(
    dir: &Path,
    state: &ResearchState,
    graph: &CompiledGraph<ResearchState>,
) -> Result<Vec<String>, ExampleError> {
    let report = state
        .facts
        .iter()
        .rev()
        .find(|f| f.kind == FactKind::Draft)
        .map_or("", |f| f.content.as_str());
    write_text_atomic(&dir.join("report.md"), report)?;
    write_json_atomic(&dir.join("facts.json"), &state.facts)?;
    write_json_atomic(&dir.join("plan.json"), &state.plan)?;
    write_text_atomic(&dir.join("graph.mmd"), &graph.draw_mermaid())?;
    let dot_path = dir.join("graph.dot");
    write_text_atomic(&dot_path, &graph.draw_dot())?;
    let mut lines = vec![
        format!("report: {}", dir.join("report.md").display()),
        format!(
            "facts: {}  plan: {}",
            dir.join("facts.json").display(),
            dir.join("plan.json").display()
        ),
        format!(
            "graph: {} and {}",
            dir.join("graph.mmd").display(),
            dot_path.display()
        ),
    ];
    let png = dir.join("graph.png");
    match std::process::Command::new("dot")
        .arg("-Tpng")
        .arg(&dot_path)
        .arg("-o")
        .arg(&png)
        .status()
    {
        Ok(status) if status.success() => lines.push(format!("graph image: {}", png.display())),
        _ => lines.push(
            "graph.png not written: Graphviz `dot` is not installed (apt-get install graphviz, or brew install graphviz), or paste graph.mmd into https://mermaid.live".into(),
        ),
    }
    Ok(lines)
}
