//! Running one investigation: build the graph, run (or resume) its thread, write the run
//! summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use graphkit::{
    CompileOptions, Error as GraphError, RunConfig, RunInput, Scoped, StreamMode, StreamPayload,
};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;
use serde::Serialize;
use serde_json::{Value, json};

use super::graph::build_graph;
use super::input::Investigation;
use super::nodes::{Deps, SESSION_ID_KEY, SessionIds, default_prices};
use super::state::{DueDiligenceState, DueDiligenceStateUpdate};
use super::termination::TerminationReason;
use super::trail::{AuditTrail, audit_path};
use crate::shared::stream::{emit_json_line, plain_update};
use crate::shared::time::{now_ms, rfc3339};
use crate::shared::{ExampleError, Progress, RunTarget};

/// Everything a run needs besides the investigation.
#[derive(Clone)]
pub struct DueDiligenceOptions {
    /// Queries and reflection.
    pub strategy_model: Arc<dyn ChatModel>,
    /// Search extraction, entity merge, connections, report.
    pub search_model: Arc<dyn ChatModel>,
    /// The search backend.
    pub search: Arc<dyn SearchBackend>,
    /// Pages read per search (default 3).
    pub results_per_search: usize,
    /// Searches run at once (the seed's `max_concurrent_searches`, default 5).
    pub max_concurrent_searches: usize,
    /// The thread, checkpoints, resume, progress and Ctrl-C; `reports/`, `audit/` and
    /// `run_summary.json` go into its run directory.
    pub target: RunTarget,
    /// The session id (names the report and audit files): the same on every resume of
    /// the run, so a run killed before `initialize`'s step was saved keeps its audit file
    /// (the CLI keeps it in `run.json`). `None`: `initialize` makes one (a thread that
    /// already has one keeps it).
    pub session_id: Option<String>,
}

impl std::fmt::Debug for DueDiligenceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DueDiligenceOptions")
            .field("strategy_model", &self.strategy_model.model_name())
            .field("search_model", &self.search_model.model_name())
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// The run summary (`run_summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DueDiligenceSummary {
    /// `due-diligence`.
    pub workflow: String,
    /// The thread.
    pub thread: String,
    /// The session (names the report and audit files).
    pub session_id: String,
    /// The subject.
    pub subject: String,
    /// Why the loop stopped.
    pub termination_reason: Option<TerminationReason>,
    /// Iterations done.
    pub(crate) depth_reached: u32,
    /// Searches run (failed ones included).
    pub searches: u64,
    /// Entities found.
    pub entities: usize,
    /// Red flags found.
    pub red_flags: usize,
    /// The overall risk of the report.
    pub overall_risk: Option<String>,
    /// The JSON report.
    pub report_json: PathBuf,
    /// The HTML report.
    pub report_html: PathBuf,
    /// The audit trail.
    pub audit_trail: PathBuf,
    /// `true` when this process continued an existing thread.
    pub resumed: bool,
    /// When this process started (RFC 3339).
    pub(crate) started_at: String,
    /// Wall time of this process's part, in milliseconds.
    pub(crate) duration_ms: u64,
}

impl DueDiligenceSummary {
    /// The summary as text lines for the terminal.
    pub(crate) fn render(&self) -> String {
        format!(
            "due-diligence {} ({}): risk {}, {} red flag(s), {} entities, {} searches, depth {}, stopped by {}\n  report: {}\n  html:   {}\n  audit:  {}\n",
            self.subject,
            self.session_id,
            self.overall_risk.as_deref().unwrap_or("-"),
            self.red_flags,
            self.entities,
            self.searches,
            self.depth_reached,
            self.termination_reason
                .map_or("-".to_owned(), |r| r.to_string()),
            self.report_json.display(),
            self.report_html.display(),
            self.audit_trail.display()
        )
    }
}

/// What a finished run leaves: the final state and the summary.
#[derive(Debug, Clone)]
pub struct DueDiligenceOutcome {
    /// The final state (the report is in `state.report`).
    pub state: DueDiligenceState,
    /// The summary written to `run_summary.json`.
    pub summary: DueDiligenceSummary,
}

/// Runs (or, with `options.target.resume`, continues) the investigation on `options.target.thread`.
///
/// # Errors
/// [`ExampleError`] when the graph cannot be built or run, the thread exists without
/// `resume`, or an output cannot be written.
pub async fn run_due_diligence(
    investigation: &Investigation,
    options: &DueDiligenceOptions,
) -> Result<DueDiligenceOutcome, ExampleError> {
    investigation
        .validate()
        .map_err(|message| ExampleError::Input {
            origin: "the investigation".into(),
            message,
        })?;
    let started = Instant::now();
    let started_at = rfc3339(now_ms());
    let audit_dir = options.target.run_dir.join("audit");
    let deps = Arc::new(Deps {
        strategy_model: Arc::clone(&options.strategy_model),
        search_model: Arc::clone(&options.search_model),
        search: Arc::clone(&options.search),
        results_per_search: options.results_per_search.max(1),
        audit: AuditTrail::new(&audit_dir),
        prices: default_prices(),
        reports_dir: options.target.run_dir.join("reports"),
        sessions: SessionIds::FromState,
    });
    let graph = build_graph(
        deps,
        CompileOptions::new().checkpointer(Arc::clone(&options.target.checkpointer)),
    )?;
    let mut config = RunConfig::new();
    if let Some(session_id) = &options.session_id {
        config = config.with_value(SESSION_ID_KEY, session_id.as_str());
    }
    let config = config
        .thread_id(&options.target.thread)
        .max_concurrency(options.max_concurrent_searches.max(1))
        .recursion_limit(20 + 6 * usize::try_from(investigation.max_depth).unwrap_or(20))
        .cancellation(options.target.stop.immediate());

    let mut resumed = false;
    let input: RunInput<DueDiligenceState> = match graph.get_state(&config).await {
        Ok(_) if !options.target.resume => {
            return Err(ExampleError::Usage(format!(
                "thread {} already has a run; continue it with `--resume --thread {}`, or start a new one with another --thread",
                options.target.thread, options.target.thread
            )));
        }
        Ok(snapshot) if snapshot.is_done() && snapshot.step > 0 => {
            options
                .target
                .progress
                .note("run", "already finished; nothing to redo");
            return finish(
                snapshot.values,
                options,
                &audit_dir,
                true,
                started,
                started_at,
            );
        }
        Ok(_) => {
            resumed = true;
            options
                .target
                .progress
                .note("run", "resuming from the last checkpoint");
            RunInput::Continue
        }
        Err(GraphError::CheckpointNotFound { .. }) => DueDiligenceStateUpdate::new()
            .subject(investigation.subject.trim().to_owned())
            .subject_context(investigation.context.trim().to_owned())
            .max_depth(investigation.max_depth)
            .max_queries_per_depth(investigation.max_queries_per_depth)
            .stagnation_threshold(investigation.stagnation_threshold)
            .into(),
        Err(err) => return Err(err.into()),
    };

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
        let Some(event) = options.target.stop.next_event(&mut stream).await? else {
            break;
        };
        match event.payload {
            StreamPayload::Custom { node, payload } => {
                report_progress(&options.target.progress, &payload);
                if options.target.stream {
                    emit_json_line(&json!({"type": "event", "node": &*node, "event": payload}));
                }
            }
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } if options.target.stream => {
                let plain = plain_update::<DueDiligenceState>(&update);
                emit_json_line(&json!({"type": "update", "node": &*node, "update": plain}));
            }
            _ => {}
        }
    }
    let state = stream
        .into_final_state()
        .ok_or_else(|| ExampleError::Usage("the run ended without a final state".into()))?;
    finish(state, options, &audit_dir, resumed, started, started_at)
}

fn finish(
    state: DueDiligenceState,
    options: &DueDiligenceOptions,
    audit_dir: &std::path::Path,
    resumed: bool,
    started: Instant,
    started_at: String,
) -> Result<DueDiligenceOutcome, ExampleError> {
    let reports = options.target.run_dir.join("reports");
    let summary = DueDiligenceSummary {
        workflow: "due-diligence".into(),
        thread: options.target.thread.clone(),
        session_id: state.session_id.clone(),
        subject: state.subject.clone(),
        termination_reason: state.termination_reason,
        depth_reached: state.current_depth,
        searches: state.search_count,
        entities: state.discovered_entities.len(),
        red_flags: state.risk_indicators.red_flags.len(),
        overall_risk: state
            .report
            .as_ref()
            .map(|r| format!("{:?}", r.report.risk_assessment.overall_risk).to_lowercase()),
        report_json: reports.join(format!("{}_report.json", state.session_id)),
        report_html: reports.join(format!("{}_report.html", state.session_id)),
        audit_trail: audit_path(audit_dir, &state.session_id),
        resumed,
        started_at,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    options
        .target
        .run_dir
        .write_json("run_summary.json", &summary)?;
    Ok(DueDiligenceOutcome { state, summary })
}

fn report_progress(progress: &Progress, event: &Value) {
    let n = |k: &str| event[k].as_u64().unwrap_or(0);
    match event["event"].as_str() {
        Some("queries") => progress.note(
            &format!("depth {}", n("depth")),
            &format!(
                "{} new queries",
                event["queries"].as_array().map_or(0, Vec::len)
            ),
        ),
        Some("depth_done") => progress.note(
            &format!("depth {}", n("depth")),
            &format!(
                "{} searches ({} failed), {} entities ({} new), {} red flags -> {}",
                n("searches"),
                n("failed"),
                n("entities"),
                n("new_entities"),
                n("red_flags"),
                event["decision"].as_str().unwrap_or("?")
            ),
        ),
        _ => {}
    }
}
