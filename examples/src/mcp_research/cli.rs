//! `graphkit-research mcp-research "query"` (prints the markers as they come; writes the
//! report, the run summary and the SSE transcript to the run directory) and
//! `graphkit-research mcp-research serve --listen 127.0.0.1:8080` (the HTTP service).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args, Subcommand};
use graphkit_llm::ChatModel;
use graphkit_tools::mcp::McpToolSet;
use serde_json::json;

use super::engine::{Engine, EngineConfig, ResearchRequest, new_session_id};
use super::source::{McpServerSpec, connect};
use super::standin::offline_model;
use super::state::ResearchAgentState;
use crate::shared::command::{self, Ending, Launch, Plan, Workflow};
use crate::shared::run_dir::{DEFAULT_ROOT, write_json_atomic, write_text_atomic};
use crate::shared::stream::emit_json_line;
use crate::shared::{
    CheckpointChoice, CommonArgs, ExampleError, ModelChoice, Progress, ProgressMode, RunSession,
    RunStatus,
};

/// The question researched when none is given.
pub(crate) const DEFAULT_QUERY: &str = "Which countries have the most events?";

/// The options of `mcp-research` (and of `mcp-research serve`) besides the common ones.
#[derive(Debug, Clone, Args)]
pub struct McpResearchOptions {
    /// An MCP server: stdio:COMMAND [ARGS] or http:URL (repeat for several) [default: the
    /// bundled graphkit-events-mcp next to this executable].
    #[arg(long = "mcp-server", value_name = "SPEC")]
    pub(crate) mcp_servers: Vec<String>,

    /// The MCP tools to use, comma-separated [default: every tool found].
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub enabled_tools: Vec<String>,

    /// The most planning iterations (1-50).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_iterations: u32,

    /// Sub-agent calls of one batch run at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub(crate) max_parallel_sub_agents: usize,

    /// The confidence at which the research goes to synthesis (0-1).
    #[arg(long, value_name = "X", default_value_t = 0.8)]
    pub(crate) confidence_threshold: f32,
}

/// `mcp-research [QUERY]` or `mcp-research serve`.
#[derive(Debug, Clone, Args)]
pub struct McpResearchArgs {
    /// The question [default: "Which countries have the most events?"].
    #[arg(value_name = "QUERY")]
    pub query: Option<String>,

    /// The research options.
    #[command(flatten)]
    pub options: McpResearchOptions,

    /// `serve`: the HTTP service.
    #[command(subcommand)]
    pub command: Option<McpResearchCommand>,
}

/// The subcommands of `mcp-research`.
#[derive(Debug, Clone, Subcommand)]
pub enum McpResearchCommand {
    /// The HTTP service: POST /research (SSE markers), GET /research/status/{session_id},
    /// GET /research/tools. Sessions live in --out (default
    /// graphkit-runs/mcp-research/service/sessions.sqlite) and survive a restart.
    Serve(ServeArgs),
    /// The bundled events MCP server on stdio (what `graphkit-events-mcp` serves), used
    /// when that binary is not built next to this one.
    #[command(name = "events-server", hide = true)]
    EventsServer,
}

/// `mcp-research serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The address to listen on (port 0: any free port; the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// The default model (`offline` or a provider spec); requests may name a provider.
    #[arg(long, value_name = "SPEC", default_value = "offline")]
    pub model: String,

    /// Where sessions are kept (sessions.sqlite) [default: graphkit-runs/mcp-research/service].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Where checkpoints go: sqlite:PATH, postgres:URL or memory [default: sqlite:<out>/sessions.sqlite].
    #[arg(long, value_name = "BACKEND")]
    pub checkpoint: Option<String>,

    /// The offline model waits this many milliseconds per reply (demos and tests).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    pub(crate) offline_delay_ms: u64,

    /// The research options.
    #[command(flatten)]
    pub options: McpResearchOptions,
}

fn offline(delay_ms: u64) -> Arc<dyn ChatModel> {
    Arc::new(offline_model().with_delay(Duration::from_millis(delay_ms)))
}

fn server_specs(specs: &[String]) -> Result<Vec<McpServerSpec>, ExampleError> {
    specs.iter().map(|s| s.parse()).collect()
}

fn check_options(options: &McpResearchOptions) -> Result<(), ExampleError> {
    if options.max_parallel_sub_agents == 0 {
        return Err(ExampleError::Usage(
            "--max-parallel-sub-agents must be at least 1".into(),
        ));
    }
    if !(0.0..=1.0).contains(&options.confidence_threshold) {
        return Err(ExampleError::Usage(
            "--confidence-threshold must be between 0 and 1".into(),
        ));
    }
    if !(1..=50).contains(&options.max_iterations) {
        return Err(ExampleError::Usage(
            "--max-iterations must be between 1 and 50".into(),
        ));
    }
    Ok(())
}

/// The subcommand: a research run, or `serve`.
///
/// # Errors
/// Bad options (exit 2), an MCP server that cannot be reached, a failed run.
pub async fn mcp_research_main(
    args: McpResearchArgs,
    common: CommonArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    command::run::<McpResearch>(args, common, matches).await
}

struct McpResearch;

struct McpResearchPlan {
    query: String,
    model_spec: String,
    specs: Vec<McpServerSpec>,
    source: Arc<McpToolSet>,
    enabled_tools: Vec<String>,
    max_iterations: u32,
    max_parallel: usize,
    threshold: f32,
    delay_ms: u64,
}

impl Workflow for McpResearch {
    const NAME: &'static str = "mcp-research";
    const UNIT: &'static str = "markers";
    type Args = McpResearchArgs;
    type Given = Vec<McpServerSpec>;
    type Plan = McpResearchPlan;

    async fn instead(
        args: &McpResearchArgs,
        _: &CommonArgs,
    ) -> Option<Result<RunStatus, ExampleError>> {
        match &args.command {
            Some(McpResearchCommand::Serve(serve)) => Some(serve_main(serve.clone()).await),
            Some(McpResearchCommand::EventsServer) => Some(
                super::events_server::serve_stdio()
                    .await
                    .map(|()| RunStatus::Finished)
                    .map_err(|e| ExampleError::Usage(format!("the events MCP server failed: {e}"))),
            ),
            None => None,
        }
    }

    fn refuse(common: &CommonArgs) -> Result<(), ExampleError> {
        match CommonArgs::first_given(&[
            (common.input.is_some(), "--input"),
            (common.corpus.is_some(), "--corpus"),
            (common.print_input_schema, "--print-input-schema"),
            (common.summary_model.is_some(), "--summary-model"),
        ]) {
            Some(flag) => Err(ExampleError::Usage(format!(
                "mcp-research does not take {flag}; give the question as an argument"
            ))),
            None => Ok(()),
        }
    }

    fn input_schema() -> String {
        String::new()
    }

    fn graph_drawing(_: &McpResearchArgs, _: &CommonArgs) -> Result<String, ExampleError> {
        graph_drawing()
    }

    fn thread(common: &CommonArgs) -> Option<String> {
        common
            .thread
            .clone()
            .or_else(|| (!common.resume).then(new_session_id))
    }

    fn check(args: &McpResearchArgs, common: &CommonArgs) -> Result<Self::Given, ExampleError> {
        check_options(&args.options)?;
        let specs = server_specs(&args.options.mcp_servers)?;
        common.model.parse::<ModelChoice>()?;
        if let Some(query) = &args.query {
            ResearchRequest::new(query.clone()).validate()?;
        }
        Ok(specs)
    }

    async fn plan(
        args: McpResearchArgs,
        common: &CommonArgs,
        specs: Vec<McpServerSpec>,
        session: &mut RunSession,
    ) -> Result<McpResearchPlan, ExampleError> {
        let query = match (&args.query, session.saved_input()) {
            (Some(query), _) => query.clone(),
            (None, Some(saved)) => saved["query"].as_str().unwrap_or(DEFAULT_QUERY).to_owned(),
            (None, None) => DEFAULT_QUERY.to_owned(),
        };
        let options = args.options;
        let model_spec: String = session.option("model", common.model.clone())?;
        let servers: Vec<String> = session.option("mcp_server", options.mcp_servers.clone())?;
        let enabled_tools: Vec<String> = session.option("enabled_tools", options.enabled_tools)?;
        let max_iterations: u32 = session.option("max_iterations", options.max_iterations)?;
        let max_parallel: usize =
            session.option("max_parallel_sub_agents", options.max_parallel_sub_agents)?;
        let threshold: f32 =
            session.option("confidence_threshold", options.confidence_threshold)?;
        let specs = if servers == options.mcp_servers {
            specs
        } else {
            server_specs(&servers)?
        };
        let source = connect(&specs).await?;
        Ok(McpResearchPlan {
            query,
            model_spec,
            specs,
            source,
            enabled_tools,
            max_iterations,
            max_parallel,
            threshold,
            // A demo knob, not part of the run: a resume uses its own (default none).
            delay_ms: common.offline_delay_ms,
        })
    }
}

impl Plan for McpResearchPlan {
    fn input(&self) -> serde_json::Value {
        json!({ "query": self.query, "enabled_tools": self.enabled_tools })
    }

    fn start_line(&self) -> (String, String) {
        let servers = if self.specs.is_empty() {
            "bundled".to_owned()
        } else {
            self.specs
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        (
            McpResearch::NAME.to_owned(),
            format!("model {}, MCP {servers}", self.model_spec),
        )
    }

    /// `mcp-research, session S, model M, MCP ..., checkpoints C, outputs in DIR`: no
    /// progress bars here, the markers are the progress.
    fn announce(&self, session: &RunSession, checkpoint: &CheckpointChoice, progress: &Progress) {
        if progress.mode() != ProgressMode::Quiet {
            let (what, details) = self.start_line();
            eprintln!(
                "{what}, session {}, {details}, checkpoints {checkpoint}, outputs in {}",
                session.thread(),
                session.dir().path().display()
            );
        }
    }

    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError> {
        let (session, common) = (launch.session, launch.common);
        let config = EngineConfig {
            default_model: self.model_spec.parse()?,
            offline: offline(self.delay_ms),
            max_parallel_sub_agents: self.max_parallel,
            confidence_threshold: self.threshold,
            default_max_iterations: self.max_iterations,
            ..EngineConfig::new(self.source.clone(), launch.checkpointer)
        };
        let engine = Engine::new(config)?;
        let request = ResearchRequest {
            query: self.query,
            session_id: Some(session.thread().to_owned()),
            enabled_tools: (!self.enabled_tools.is_empty()).then_some(self.enabled_tools),
            max_iterations: Some(self.max_iterations),
            ..ResearchRequest::default()
        };
        let mut started = engine.start(request).await?;
        let mut transcript = String::new();
        while let Some(marker) = started.markers.recv().await {
            let line = marker.to_line();
            for data in line.split('\n') {
                let _ = writeln!(transcript, "data: {data}");
            }
            transcript.push('\n');
            if common.stream {
                emit_json_line(&json!({"type": "marker", "name": marker.name(), "text": line}));
            } else if !common.quiet {
                crate::shared::stdout::print_line(&line);
            }
        }
        let outcome = started
            .finished
            .await
            .map_err(|e| ExampleError::Usage(format!("the research task failed: {e}")))?;
        write_text_atomic(&session.dir().join("sse.txt"), &transcript)?;
        self.source.close().await;
        match outcome {
            Ok(state) => {
                let lines = write_outputs(session.dir().path(), &state, engine.graph())?;
                let text = format!(
                    "{} iterations, {} documents, {} findings, {} sources, confidence {:.2}\n{}\n",
                    state.iteration_count,
                    state.docs_processed,
                    state.findings.len(),
                    state.extracted_sources.len(),
                    state.overall_confidence,
                    lines.join("\n")
                );
                Ok(Ending::Finish(RunStatus::Finished, text))
            }
            Err(message) => {
                let text = format!(
                    "the research failed: {message}\ntranscript: {}\n",
                    session.dir().join("sse.txt").display()
                );
                Ok(Ending::Finish(RunStatus::Failed, text))
            }
        }
    }
}

/// The graph as Mermaid (built over no server: drawing needs none).
fn graph_drawing() -> Result<String, ExampleError> {
    let graph = crate::mcp_research::build_graph(
        Arc::new(crate::mcp_research::ResearchDeps {
            model: offline(0),
            source: Arc::new(graphkit_tools::mcp::McpToolSet::new([])),
            registry: crate::mcp_research::SubAgentRegistry::standard(),
            max_parallel_sub_agents: 4,
            confidence_threshold: 0.8,
        }),
        graphkit::CompileOptions::new(),
    )?;
    Ok(graph.draw_mermaid())
}

/// Writes `report.md`, `run_summary.json` and `graph.mmd` into `dir`; returns the lines
/// to print about them.
///
/// # Errors
/// [`ExampleError::Io`] when a file cannot be written.
pub(crate) fn write_outputs(
    dir: &std::path::Path,
    state: &ResearchAgentState,
    graph: &graphkit::CompiledGraph<ResearchAgentState>,
) -> Result<Vec<String>, ExampleError> {
    write_text_atomic(
        &dir.join("report.md"),
        state.final_report.as_deref().unwrap_or_default(),
    )?;
    write_json_atomic(
        &dir.join("run_summary.json"),
        &json!({
            "session_id": state.conversation_id,
            "query": state.input,
            "complete": state.final_report.is_some(),
            "iterations": state.iteration_count,
            "docs_processed": state.docs_processed,
            "confidence": state.overall_confidence,
            "enabled_tools": state.enabled_tools,
            "sub_questions": state.sub_questions,
            "aggregation_results": state.aggregation_results,
            "findings": state.findings,
            "validation": state.validation,
            "gaps": state.gaps,
            "sources": state.extracted_sources,
            "chart_configs": state.chart_configs,
            "key_findings": state.key_findings,
        }),
    )?;
    write_text_atomic(&dir.join("graph.mmd"), &graph.draw_mermaid())?;
    Ok(vec![
        format!("report: {}", dir.join("report.md").display()),
        format!(
            "summary: {}  transcript: {}",
            dir.join("run_summary.json").display(),
            dir.join("sse.txt").display()
        ),
    ])
}

async fn serve_main(args: ServeArgs) -> Result<RunStatus, ExampleError> {
    check_options(&args.options)?;
    let specs = server_specs(&args.options.mcp_servers)?;
    let default_model: ModelChoice = args.model.parse()?;
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from(DEFAULT_ROOT)
            .join("mcp-research")
            .join("service")
    });
    let checkpoint: CheckpointChoice = match &args.checkpoint {
        Some(spec) => spec.parse()?,
        None => CheckpointChoice::Sqlite(out.join("sessions.sqlite")),
    };
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| ExampleError::Usage(format!("cannot listen on {}: {e}", args.listen)))?;
    let source = connect(&specs).await?;
    let checkpointer = checkpoint.open_for_run(None).await?;
    let config = EngineConfig {
        default_model,
        offline: offline(args.offline_delay_ms),
        max_parallel_sub_agents: args.options.max_parallel_sub_agents,
        confidence_threshold: args.options.confidence_threshold,
        default_max_iterations: args.options.max_iterations,
        ..EngineConfig::new(source, Arc::clone(&checkpointer.saver))
    };
    let engine = Engine::new(config)?;
    let address = listener
        .local_addr()
        .map_err(|e| ExampleError::Usage(format!("cannot read the listening address: {e}")))?;
    crate::shared::stdout::print_line(&format!(
        "listening on http://{address} (sessions: {checkpoint})"
    ));
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    super::service::serve(engine, listener).await?;
    checkpointer.close().await;
    Ok(RunStatus::Finished)
}
