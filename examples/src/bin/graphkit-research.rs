//! `graphkit-research`: runs graphkit's research workflows from the command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use graphkit_examples::arxiv_research;
use graphkit_examples::biography_events;
use graphkit_examples::entity_intel;
use graphkit_examples::shared::run_dir::DEFAULT_ROOT;
use graphkit_examples::shared::runs::{list_runs, render_runs};
use graphkit_examples::shared::{CommonArgs, RunStatus};

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
    EntityIntel(EntityIntelCli),

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
struct EntityIntelCli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    args: entity_intel::EntityIntelArgs,
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
            Workflow::EntityIntel(cli) => {
                entity_intel::entity_intel_main(cli.args, cli.common, &sub).await
            }
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
                graphkit_examples::shared::stdout::print_text(&render_runs(
                    &list_runs(&args.root),
                    &args.root,
                ));
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
