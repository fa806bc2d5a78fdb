//! `graphkit-research`: runs graphkit's research workflows from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use graphkit_examples::entity_intel::{
    self, EntitiesResearchDirections, EntityIntelOptions, Limits, OfflineResearchModel,
    run_entity_intel,
};
use graphkit_examples::shared::time::{now_ms, rfc3339};
use graphkit_examples::shared::{
    CheckpointChoice, ExampleError, ModelChoice, Progress, RunDir, RunManifest,
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
}

/// Options every workflow has.
#[derive(Debug, Args)]
struct CommonArgs {
    /// The model: `offline` (deterministic stand-in, the default) or a provider spec:
    /// openai:MODEL, anthropic:MODEL, ollama:MODEL, openai-compatible:BASE_URL#MODEL.
    /// Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.
    #[arg(long, value_name = "SPEC", default_value = "offline")]
    model: String,

    /// The model that writes context summaries (default: the --model).
    #[arg(long, value_name = "SPEC")]
    summary_model: Option<String>,

    /// The run directory (default: graphkit-runs/<workflow>/<thread>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// The run's thread id (default: a new one). With --resume, the run to continue.
    #[arg(long, value_name = "ID")]
    thread: Option<String>,

    /// Continue the run --thread from its last checkpoints (after a crash or a kill);
    /// finished work is not redone. Input and models default to the run's run.json.
    #[arg(long, requires = "thread")]
    resume: bool,

    /// Where checkpoints go: sqlite:PATH, postgres:URL (build with --features postgres) or
    /// memory (not resumable) [default: sqlite:<run dir>/checkpoints.sqlite]
    #[arg(long, value_name = "BACKEND")]
    checkpoint: Option<String>,

    /// How many units (bundles) run at once.
    #[arg(long, value_name = "N", default_value_t = 3)]
    max_concurrency: usize,

    /// The input file (JSON; see --print-input-schema) [default: the sample input shipped
    /// with the crate].
    #[arg(long, value_name = "FILE")]
    input: Option<PathBuf>,

    /// Print the JSON Schema of the input and exit.
    #[arg(long)]
    print_input_schema: bool,

    /// Print the workflow's graph as a Mermaid flowchart and exit.
    #[arg(long)]
    print_graph: bool,

    /// Print every node update as a JSON line on stdout as it happens.
    #[arg(long)]
    stream: bool,

    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,

    /// The offline model waits this many milliseconds per reply (demos of progress and resume).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    offline_delay_ms: u64,

    /// Search this document directory (offline) instead of the default: the corpus shipped
    /// with the crate for the offline model, Tavily for real models when TAVILY_API_KEY is set.
    #[arg(long, value_name = "DIR")]
    corpus: Option<PathBuf>,
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

    /// Seconds allowed per todo before it is marked blocked.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    todo_timeout: u64,

    /// Output tokens per agent turn.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_tokens_per_turn: u32,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.workflow {
        Workflow::EntityIntel(args) => entity_intel_main(args).await,
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(2)
        }
    }
}

/// A new thread id: `ei-<utc time>-<pid>`.
fn new_thread(prefix: &str) -> String {
    let stamp: String = rfc3339(now_ms())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("{prefix}-{stamp}-{}", std::process::id())
}

async fn entity_intel_main(args: EntityIntelArgs) -> Result<bool, ExampleError> {
    let common = args.common;
    if common.print_input_schema {
        println!("{}", EntitiesResearchDirections::schema_json());
        return Ok(true);
    }
    if common.print_graph {
        let offline: Arc<dyn graphkit_llm::ChatModel> = Arc::new(OfflineResearchModel::new());
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
            },
            graphkit::CompileOptions::new(),
        )?;
        println!("{}", graph.draw_mermaid());
        return Ok(true);
    }
    let thread = common.thread.clone().unwrap_or_else(|| new_thread("ei"));
    let run_dir = RunDir::create(
        common
            .out
            .clone()
            .unwrap_or_else(|| RunDir::default_for("entity-intel", &thread)),
    )?;
    let manifest = RunManifest::read(run_dir.path())?;
    if common.resume && manifest.is_none() && common.input.is_none() {
        return Err(ExampleError::Usage(format!(
            "nothing to resume in {}: no run.json there; pass the same --out as the first run, or --input",
            run_dir.path().display()
        )));
    }

    // Input: --input, else the run's own (on resume), else the sample.
    let input = match (&common.input, &manifest) {
        (Some(path), _) => EntitiesResearchDirections::from_file(path)?,
        (None, Some(m)) if common.resume => EntitiesResearchDirections::from_json(
            &run_dir.join(RunManifest::FILE).display().to_string(),
            &m.input.to_string(),
        )?,
        _ => EntitiesResearchDirections::from_file(&entity_intel::sample_input_path())?,
    };
    let resumed_model = manifest
        .as_ref()
        .filter(|_| common.resume && common.model == "offline")
        .map(|m| m.model.clone());
    let model_spec = resumed_model.unwrap_or(common.model.clone());
    let summary_spec = common.summary_model.clone().or_else(|| {
        manifest
            .as_ref()
            .filter(|_| common.resume)
            .and_then(|m| m.summary_model.clone())
    });
    let checkpoint: CheckpointChoice = match &common.checkpoint {
        Some(spec) => spec.parse()?,
        None => match manifest.as_ref().filter(|_| common.resume) {
            Some(m) if !m.checkpoint.starts_with("postgres") => m.checkpoint.parse()?,
            _ => CheckpointChoice::Sqlite(run_dir.join("checkpoints.sqlite")),
        },
    };
    if common.resume && !checkpoint.is_durable() {
        return Err(ExampleError::Usage(
            "--resume needs durable checkpoints: use sqlite:PATH or postgres:URL".into(),
        ));
    }

    let offline: Arc<dyn graphkit_llm::ChatModel> = Arc::new(
        OfflineResearchModel::new().with_delay(Duration::from_millis(common.offline_delay_ms)),
    );
    let model = model_spec
        .parse::<ModelChoice>()?
        .build(Arc::clone(&offline))?;
    let summary_model = match &summary_spec {
        Some(spec) => spec.parse::<ModelChoice>()?.build(offline)?,
        None => Arc::clone(&model),
    };
    let is_offline = model_spec.parse::<ModelChoice>()?.is_offline();
    let (search, search_name) =
        graphkit_examples::shared::search::choose(common.corpus.as_deref(), is_offline)?;

    if !common.resume {
        let manifest = RunManifest {
            workflow: "entity-intel".into(),
            thread: thread.clone(),
            model: model_spec.clone(),
            summary_model: summary_spec.clone(),
            checkpoint: checkpoint.to_string(),
            created_at: rfc3339(now_ms()),
            input: serde_json::to_value(&input).unwrap_or_default(),
        };
        run_dir.write_json(RunManifest::FILE, &manifest)?;
    }
    let progress = Progress::new("todos", common.quiet);
    progress.note(
        "run",
        &format!(
            "entity-intel, thread {thread}, {} bundles / {} directions, model {model_spec}, search {search_name}, checkpoints {checkpoint}, outputs in {}",
            input.bundles.len(),
            input.total_directions(),
            run_dir.path().display()
        ),
    );
    let options = EntityIntelOptions {
        model,
        summary_model,
        search,
        limits: Limits {
            max_tool_calls_per_todo: args.max_tool_calls_per_todo,
            max_idle_turns_per_todo: args.max_idle_turns_per_todo,
            todo_timeout: Duration::from_secs(args.todo_timeout),
            max_tokens_per_turn: args.max_tokens_per_turn,
            ..Limits::default()
        },
        max_concurrency: common.max_concurrency,
        run_dir,
        checkpointer: checkpoint.open().await?,
        thread,
        resume: common.resume,
        stream: common.stream,
        progress,
    };
    let summary = run_entity_intel(&input, &options).await?;
    print!("{}", summary.render());
    println!(
        "summary: {}",
        options.run_dir.join("run_summary.json").display()
    );
    if !summary.succeeded() {
        eprintln!(
            "some bundles failed; continue with: graphkit-research entity-intel --resume --thread {}",
            summary.thread
        );
    }
    Ok(summary.succeeded())
}
