//! The command-line options every `graphkit-research` workflow shares, flattened into each
//! workflow's subcommand; a workflow reads what it uses and refuses what it does not.

use std::path::PathBuf;

use clap::Args;

/// The options every `graphkit-research` workflow has (flattened into each subcommand).
#[derive(Debug, Args)]
pub struct CommonArgs {
    /// The model: `offline` (deterministic stand-in, the default) or a provider spec:
    /// openai:MODEL, anthropic:MODEL, ollama:MODEL, openai-compatible:BASE_URL#MODEL.
    /// Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY.
    #[arg(long, value_name = "SPEC", default_value = "offline")]
    pub model: String,

    /// The model that writes context summaries (default: the --model).
    #[arg(long, value_name = "SPEC")]
    pub summary_model: Option<String>,

    /// The run directory (default: graphkit-runs/<workflow>/<thread>; graphkit-runs/ is
    /// ignored by git). With --resume: the run to continue (found from --thread otherwise).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// The run's thread id (default: a new one). With --resume, the run to continue.
    #[arg(long, value_name = "ID")]
    pub thread: Option<String>,

    /// Continue the run --thread (or the run in --out) from its last checkpoints (after a
    /// crash, a kill or Ctrl-C); finished work is not redone. Options given now win;
    /// options left out (input, models, backend, limits) come from the run's run.json.
    #[arg(long)]
    pub resume: bool,

    /// Where checkpoints go: sqlite:PATH, postgres:URL (build with --features postgres) or
    /// memory (not resumable) [default: sqlite:<run dir>/checkpoints.sqlite]
    #[arg(long, value_name = "BACKEND")]
    pub checkpoint: Option<String>,

    /// How many units (bundles) run at once.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_concurrency: usize,

    /// The input file (JSON; see --print-input-schema) [default: the sample input shipped
    /// with the crate].
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,

    /// Print the JSON Schema of the input and exit.
    #[arg(long)]
    pub(crate) print_input_schema: bool,

    /// Print the workflow's graph as a Mermaid flowchart and exit.
    #[arg(long)]
    pub(crate) print_graph: bool,

    /// Machine-readable output: every node update and event as one JSON object per line on
    /// stdout (plain values: lists as lists), human text on stderr. Pipe it to jq.
    #[arg(long)]
    pub stream: bool,

    /// No progress on stderr (without a terminal, progress is plain lines).
    #[arg(long, short)]
    pub quiet: bool,

    /// The offline model waits this many milliseconds per reply (demos of progress and resume).
    #[arg(long, value_name = "MS", default_value_t = 0, hide = true)]
    pub(crate) offline_delay_ms: u64,

    /// Search this document directory (offline) instead of the default: the corpus shipped
    /// with the crate for the offline model, Tavily for real models when TAVILY_API_KEY is set.
    #[arg(long, value_name = "DIR")]
    pub corpus: Option<PathBuf>,
}

impl CommonArgs {
    /// The first of `flags` (a given-or-not test and the flag's name) that was given: for a
    /// workflow to refuse options it has no use for.
    pub(crate) fn first_given(flags: &[(bool, &'static str)]) -> Option<&'static str> {
        flags
            .iter()
            .find_map(|&(given, flag)| given.then_some(flag))
    }
}
