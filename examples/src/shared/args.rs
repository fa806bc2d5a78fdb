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

    /// Seconds the run's real model calls may take in all [default: GRAPHKIT_RUN_BUDGET_SECS,
    /// else 420; 0: no limit]. Once spent, no further call is made (a call still waiting is
    /// abandoned) and the workflow's remaining steps use what was gathered, which the
    /// summary and report say. Each call also times out after GRAPHKIT_MODEL_TIMEOUT_SECS
    /// (180) and is retried GRAPHKIT_MODEL_RETRIES (2) times; a call waiting longer than
    /// GRAPHKIT_MODEL_SLOW_SECS (30) says so on stderr. The offline model is not held to it.
    #[arg(long, value_name = "SECS")]
    pub time_budget: Option<u64>,

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

    /// Run the workflow offline (in a temporary directory, removed after) and print one full
    /// prompt per model role as the JSON body the OpenAI API would get for `openai:gpt-4o`
    /// (messages, tools, and the response_format with the JSON schema), then exit. The
    /// workflow docs show this output.
    #[arg(long)]
    pub(crate) print_prompts: bool,

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
    /// The run's budget for real model calls: `--time-budget`, else
    /// [`BUDGET_VAR`](super::models::BUDGET_VAR), else
    /// [`DEFAULT_BUDGET_SECS`](super::models::DEFAULT_BUDGET_SECS); `None` for `0`.
    ///
    /// # Errors
    /// [`ExampleError::Usage`](super::ExampleError::Usage) when the variable is not a whole number.
    pub fn time_budget(&self) -> Result<Option<std::time::Duration>, super::ExampleError> {
        use super::models::{BUDGET_VAR, DEFAULT_BUDGET_SECS};
        let secs = match self.time_budget {
            Some(secs) => secs,
            None => match std::env::var(BUDGET_VAR) {
                Err(_) => DEFAULT_BUDGET_SECS,
                Ok(text) => text.trim().parse().map_err(|_| {
                    super::ExampleError::Usage(format!(
                        "{BUDGET_VAR}={text:?} is not a whole number of seconds"
                    ))
                })?,
            },
        };
        Ok((secs > 0).then(|| std::time::Duration::from_secs(secs)))
    }

    /// The first of `flags` (a given-or-not test and the flag's name) that was given: for a
    /// workflow to refuse options it has no use for.
    pub(crate) fn first_given(flags: &[(bool, &'static str)]) -> Option<&'static str> {
        flags
            .iter()
            .find_map(|&(given, flag)| given.then_some(flag))
    }
}
