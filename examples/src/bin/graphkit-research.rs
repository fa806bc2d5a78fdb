//! `graphkit-research`: runs graphkit's research workflows from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use graphkit_examples::arxiv_research;
use graphkit_examples::biography_events;
use graphkit_examples::entity_intel::{
    self, EntitiesResearchDirections, EntityIntelOptions, Limits, run_entity_intel,
};
use graphkit_examples::shared::run_dir::DEFAULT_ROOT;
use graphkit_examples::shared::runs::{list_runs, render_runs};
use graphkit_examples::shared::{
    CommonArgs, ExampleError, GivenOptions, ModelChoice, Progress, RunRequest, RunSession,
    RunStatus, RunTarget,
};

/// Runs graphkit's research workflows: stateful agent graphs with checkpoints, tools and
/// bounded parallelism.
///
/// Every workflow runs offline by default: no key, no network. A document corpus written
/// for the project stands behind the search tools, a deterministic offline stand-in plays
/// the model, and checkpoints go to SQLite in the run directory. Pass --model with a
/// provider spec to use a real model.
#[derive(Debug, Parser)]
#[command(name = "graphkit-research", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    workflow: Workflow,
}

#[derive(Debug, Subcommand)]
enum Workflow {
    /// Entity-intel research agent: research directions -> todo list -> research agent <->
    /// tools loop (search, extract, write file, todo tools) -> research_complete.json per bundle.
    ///
    /// Each bundle of the input is researched by its own graph run (thread `THREAD--BUNDLE`),
    /// at most --max-concurrency at once. Writing a file summarizes and resets the agent's
    /// conversation. Outputs: one JSON file per completed todo and research_complete.json
    /// in RUN_DIR/BUNDLE/, run_summary.json and run.json in RUN_DIR.
    #[command(name = "entity-intel")]
    EntityIntel(EntityIntelArgs),

    /// arXiv deep research (plan-driven): planner -> per plan step a supervisor hands the
    /// step to an arXiv worker (search, add references) -> fact gate (at most K new
    /// references per step) -> expander (PDF or abstract -> 150-300-word summaries) ->
    /// synthesizer (Context, Techniques, Evidence, Limitations, Implications, numbered
    /// sources). Outputs in RUN_DIR: report.md, facts.json, plan.json, graph.mmd, graph.dot.
    #[command(name = "arxiv-research")]
    ArxivResearch(ArxivResearchCli),

    /// Enhanced Due Diligence research agent: initialize -> generate_queries -> parallel
    /// execute_search (one Send per query) -> analyze_and_reflect -> (max depth | reflection
    /// stop | stagnation) -> map_connections -> synthesize_report (18 sections).
    ///
    /// Outputs in RUN_DIR: reports/SESSION_report.json and .html, audit/SESSION.jsonl (append-only
    /// audit trail), run_summary.json and run.json. With no SUBJECT and no --input, lists the
    /// offline corpus's (fictional) subjects and runs the first.
    #[command(name = "due-diligence")]
    DueDiligence(DueDiligenceCommand),

    /// Biography events (seed 003): a supervisor collects the dated life events of an
    /// author — url_finder, then the url_crawler subgraph (< 5 events) or the
    /// further_event_research subgraph (>= 5), think_tool after each call, events merged
    /// (paraphrases matched, conflicts flagged). Outputs: events.json, history.json,
    /// run_summary.json and timeline.md in RUN_DIR.
    #[command(name = "biography-events")]
    BiographyEvents(BiographyEventsCli),

    /// MCP research agent (seed 004): initialization (MCP tool discovery) -> planning ->
    /// execute_sub_agents (a batch of the nine sub-agents in parallel) -> accumulate ->
    /// check_completion -> planning | synthesis. Prints the SSE markers as they come.
    ///
    /// Outputs in RUN_DIR: report.md, run_summary.json, sse.txt (the SSE transcript),
    /// graph.mmd, run.json. `mcp-research serve --listen ADDR` runs the HTTP service
    /// (POST /research, GET /research/status/{session_id}).
    #[command(name = "mcp-research")]
    McpResearch(McpResearchCli),

    /// List past runs (under graphkit-runs/, and those started with --out elsewhere) with
    /// their status and the command that resumes them.
    Runs(RunsArgs),
}

#[derive(Debug, Args)]
struct RunsArgs {
    /// The root of the run directories.
    #[arg(long, value_name = "DIR", default_value = DEFAULT_ROOT)]
    root: PathBuf,
}

#[derive(Debug, Args)]
struct DueDiligenceCommand {
    #[command(flatten)]
    common: CommonArgs,

    #[command(flatten)]
    args: graphkit_examples::due_diligence::DueDiligenceArgs,
}

#[derive(Debug, Args)]
struct ArxivResearchCli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    args: arxiv_research::ArxivResearchArgs,
}

#[derive(Debug, Args)]
struct EntityIntelArgs {
    #[command(flatten)]
    common: CommonArgs,

    /// Tool calls allowed per todo before it is marked blocked.
    #[arg(long, value_name = "N", default_value_t = 10)]
    max_tool_calls_per_todo: u32,

    /// Model turns without a tool call allowed per todo before it is marked blocked.
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_idle_turns_per_todo: u32,

    /// Seconds of work allowed per todo before it is marked blocked (time the run was
    /// down between a kill and --resume does not count).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    todo_timeout: u64,

    /// Output tokens per agent turn.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_tokens_per_turn: u32,
}

#[derive(Debug, Args)]
struct McpResearchCli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    args: graphkit_examples::mcp_research::cli::McpResearchArgs,
}

#[derive(Debug, Args)]
struct BiographyEventsCli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    args: biography_events::cli::BiographyEventsArgs,
}

fn main() -> ExitCode {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    // Built with `--features otel`, OTEL_EXPORTER_OTLP_ENDPOINT also exports the spans.
    let _logging = graphkit_examples::shared::logging::init("graphkit-research");
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let sub = matches
        .subcommand()
        .map(|(_, m)| m.clone())
        .unwrap_or_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.workflow {
            Workflow::EntityIntel(args) => entity_intel_main(args, &sub).await,
            Workflow::ArxivResearch(cli) => {
                arxiv_research::arxiv_research_main(cli.args, cli.common, &sub).await
            }
            Workflow::DueDiligence(cmd) => {
                graphkit_examples::due_diligence::run(cmd.common, cmd.args, &sub).await
            }
            Workflow::BiographyEvents(cli) => {
                biography_events::cli::biography_events_main(cli.args, cli.common, &sub).await
            }
            Workflow::McpResearch(cli) => {
                graphkit_examples::mcp_research::cli::mcp_research_main(cli.args, cli.common, &sub)
                    .await
            }
            Workflow::Runs(args) => {
                print!("{}", render_runs(&list_runs(&args.root), &args.root));
                Ok(RunStatus::Finished)
            }
        }
    });
    match result {
        Ok(status) => ExitCode::from(status.exit_code()),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

async fn entity_intel_main(
    args: EntityIntelArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    let common = args.common;
    if common.print_input_schema {
        println!("{}", EntitiesResearchDirections::schema_json());
        return Ok(RunStatus::Finished);
    }
    if common.print_graph {
        let offline: Arc<dyn graphkit_llm::ChatModel> = Arc::new(entity_intel::offline_model());
        let graph = entity_intel::build_graph(
            entity_intel::AgentDeps {
                model: Arc::clone(&offline),
                tool_specs: Vec::new(),
                limits: Limits::default(),
            },
            &entity_intel::ToolDeps {
                search: graphkit_examples::shared::search::corpus(
                    &graphkit_examples::shared::search::default_corpus_dir(),
                )?,
                summary_model: offline,
                summarize_after_messages: Limits::default().summarize_after_messages,
                web: Some(entity_intel::WebTools::default()),
                outputs: entity_intel::OutputFolder::FromState,
            },
            graphkit::CompileOptions::new(),
        )?;
        println!("{}", graph.draw_mermaid());
        return Ok(RunStatus::Finished);
    }
    // Bad input or a bad model spec is reported before anything is created.
    let given_input = common
        .input
        .as_deref()
        .map(EntitiesResearchDirections::from_file)
        .transpose()?;
    common.model.parse::<ModelChoice>()?;
    if let Some(spec) = &common.summary_model {
        spec.parse::<ModelChoice>()?;
    }
    let mut session = RunSession::begin(RunRequest {
        thread: common.thread.clone(),
        out: common.out.clone(),
        resume: common.resume,
        given: GivenOptions::from_matches(matches),
        ..RunRequest::new("entity-intel")
    })?;

    // Input: --input, else the run's own (on resume), else the sample.
    let input = match (given_input, session.saved_input()) {
        (Some(input), _) => input,
        (None, Some(saved)) => EntitiesResearchDirections::from_json(
            &session.dir().join("run.json").display().to_string(),
            &saved.to_string(),
        )?,
        (None, None) => EntitiesResearchDirections::from_file(&entity_intel::sample_input_path())?,
    };
    // Run-defining options: given now wins; on --resume the rest come from run.json.
    let model_spec: String = session.option("model", common.model.clone())?;
    let summary_spec: Option<String> =
        session.option("summary_model", common.summary_model.clone())?;
    let corpus: Option<PathBuf> = session.option(
        "corpus",
        common
            .corpus
            .as_deref()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
    )?;
    let max_concurrency: usize = session.option("max_concurrency", common.max_concurrency)?;
    let offline_delay_ms: u64 = session.option("offline_delay_ms", common.offline_delay_ms)?;
    let limits = Limits {
        max_tool_calls_per_todo: session
            .option("max_tool_calls_per_todo", args.max_tool_calls_per_todo)?,
        max_idle_turns_per_todo: session
            .option("max_idle_turns_per_todo", args.max_idle_turns_per_todo)?,
        todo_timeout: Duration::from_secs(session.option("todo_timeout", args.todo_timeout)?),
        max_tokens_per_turn: session.option("max_tokens_per_turn", args.max_tokens_per_turn)?,
        ..Limits::default()
    };
    let checkpoint = session.checkpoint(common.checkpoint.as_deref())?;

    let offline: Arc<dyn graphkit_llm::ChatModel> =
        Arc::new(entity_intel::offline_model().with_delay(Duration::from_millis(offline_delay_ms)));
    let model_choice = model_spec.parse::<ModelChoice>()?;
    let model = model_choice.build(Arc::clone(&offline))?;
    let summary_model = match &summary_spec {
        Some(spec) => spec.parse::<ModelChoice>()?.build(offline)?,
        None => Arc::clone(&model),
    };
    let (search, search_name) =
        graphkit_examples::shared::search::choose(corpus.as_deref(), model_choice.is_offline())?;
    let checkpointer = checkpoint.open_for_run(session.checkpoint_status()).await?;

    session.record_start(
        &checkpoint,
        serde_json::to_value(&input).unwrap_or_default(),
    )?;
    let progress = Progress::new("todos", common.quiet);
    progress.note(
        "run",
        &session.start_line(
            "entity-intel",
            &format!(
                "{} bundles / {} directions, model {model_spec}, search {search_name}",
                input.bundles.len(),
                input.total_directions()
            ),
            &checkpoint,
        ),
    );
    let options = EntityIntelOptions {
        model,
        summary_model,
        search,
        // Real models get the seed's other web tools; the offline stand-in the corpus only.
        web: (!model_choice.is_offline()).then(entity_intel::WebTools::default),
        limits,
        max_concurrency,
        target: RunTarget::of_session(&session, Arc::clone(&checkpointer.saver), &common, progress),
    };
    let result = run_entity_intel(&input, &options).await;
    drop(options);
    checkpointer.close().await;
    let summary = match result {
        Ok(summary) => summary,
        Err(err) => {
            session.record_failure(&err);
            return Err(err);
        }
    };
    let status = if summary.interrupted() {
        RunStatus::Interrupted
    } else if summary.succeeded() {
        RunStatus::Finished
    } else {
        RunStatus::Failed
    };
    session.finish(
        status,
        &session.summary_text(&summary.render()),
        common.stream,
    )
}
