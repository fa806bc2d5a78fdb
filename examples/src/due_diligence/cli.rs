//! `graphkit-research due-diligence`: the workflow's own options and the command's entry
//! point, [`run`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;

use super::evaluate;
use super::input::{Investigation, corpus_dir, personas_path, read_personas};
use super::nodes::Deps;
use super::offline::offline_model;
use super::runner::{DueDiligenceOptions, run_due_diligence};
use crate::shared::command::{self, Ending, Launch, Plan, Workflow};
use crate::shared::{
    CheckpointChoice, CommonArgs, ExampleError, ModelChoice, RunDir, RunSession, RunStatus,
    RunTarget,
};

/// The options of `graphkit-research due-diligence` (besides the common ones).
#[derive(Debug, Clone, Args)]
pub struct DueDiligenceArgs {
    /// The person or organization to investigate [default: with no --input, the first
    /// subject of the offline corpus].
    #[arg(value_name = "SUBJECT")]
    pub subject: Option<String>,

    /// What is known about the subject (role, country, why it is investigated).
    #[arg(long, value_name = "TEXT")]
    pub context: Option<String>,

    /// Iterations of search and reflection, 1 to 20 [default: 3, or the --input's].
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,

    /// Queries per iteration, 1 to 50 [default: 5, or the --input's].
    #[arg(long, value_name = "N")]
    pub max_queries_per_depth: Option<u32>,

    /// Searches run at once.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_concurrent_searches: usize,

    /// Iterations without a new entity that stop the research; 0 = off [default: 2, or the
    /// --input's].
    #[arg(long, value_name = "N")]
    pub stagnation_threshold: Option<u32>,

    /// The model for query generation and reflection [default: --model].
    #[arg(long, value_name = "SPEC")]
    pub strategy_model: Option<String>,

    /// The model for search extraction, entity merge, connection mapping and the report
    /// [default: --model].
    #[arg(long, value_name = "SPEC")]
    pub search_model: Option<String>,

    /// Pages read per search.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub results_per_search: usize,

    /// Output tokens allowed per model call (real models; bounds a weak model that would
    /// otherwise write until its context is full).
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub(crate) max_tokens_per_call: u32,

    /// Run every fictional persona of the offline corpus and print entity and red-flag
    /// recall per persona.
    #[arg(long)]
    pub evaluate: bool,
}

/// The command: prints the schema or the graph, evaluates, or runs (or, with `--resume`,
/// continues) one investigation through a [`RunSession`]. `matches` are the subcommand's
/// (they tell which options were given, so on `--resume` the others come from `run.json`).
/// Returns how the run ended (its exit code is the process's; Ctrl-C gives
/// [`RunStatus::Interrupted`] and prints the resume command).
///
/// # Errors
/// [`ExampleError`] for bad input or options (naming the field), or a failed run.
pub async fn run(
    common: CommonArgs,
    args: DueDiligenceArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    command::run::<DueDiligence>(args, common, matches).await
}

struct DueDiligence;

struct DueDiligencePlan {
    investigation: Investigation,
    strategy_spec: String,
    search_spec: String,
    search_name: String,
    strategy_model: Arc<dyn ChatModel>,
    search_model: Arc<dyn ChatModel>,
    search: Arc<dyn SearchBackend>,
    results_per_search: usize,
    max_concurrent_searches: usize,
    session_id: String,
}

impl Workflow for DueDiligence {
    const NAME: &'static str = "due-diligence";
    const UNIT: &'static str = "searches";
    type Args = DueDiligenceArgs;
    type Given = Option<Investigation>;
    type Plan = DueDiligencePlan;

    async fn instead(
        args: &DueDiligenceArgs,
        common: &CommonArgs,
    ) -> Option<Result<RunStatus, ExampleError>> {
        let printing = common.print_input_schema || common.print_graph;
        if args.evaluate && !printing {
            Some(evaluate_personas(common, args).await)
        } else {
            None
        }
    }

    fn input_schema() -> String {
        Investigation::schema_json()
    }

    fn graph_drawing(_: &DueDiligenceArgs, _: &CommonArgs) -> Result<String, ExampleError> {
        let offline: Arc<dyn ChatModel> = Arc::new(offline_model());
        let deps = Arc::new(Deps {
            strategy_model: Arc::clone(&offline),
            search_model: offline,
            search: crate::shared::search::corpus(&corpus_dir())?,
            results_per_search: 3,
            audit: super::trail::AuditTrail::new(std::env::temp_dir()),
            prices: super::nodes::default_prices(),
            reports_dir: std::env::temp_dir(),
            sessions: super::nodes::SessionIds::FromState,
        });
        let graph = super::graph::build_graph(deps, graphkit::CompileOptions::new())?;
        Ok(graph.draw_mermaid())
    }

    fn check(args: &DueDiligenceArgs, common: &CommonArgs) -> Result<Self::Given, ExampleError> {
        // Bad input or a bad model spec is reported before anything is created.
        let given = if common.resume && common.input.is_none() {
            None
        } else {
            Some(investigation_from(common, args)?)
        };
        for spec in [&args.strategy_model, &args.search_model]
            .into_iter()
            .flatten()
        {
            spec.parse::<ModelChoice>()?;
        }
        common.model.parse::<ModelChoice>()?;
        Ok(given)
    }

    async fn plan(
        args: DueDiligenceArgs,
        common: &CommonArgs,
        given: Option<Investigation>,
        session: &mut RunSession,
    ) -> Result<DueDiligencePlan, ExampleError> {
        // The investigation: given now (--input, SUBJECT, limits), else the run's own.
        let investigation = match (given, session.saved_input()) {
            (Some(investigation), _) => investigation,
            (None, Some(saved)) => {
                let mut investigation: Investigation = serde_json::from_value(saved.clone())
                    .map_err(|e| ExampleError::Input {
                        origin: session.dir().join("run.json").display().to_string(),
                        message: e.to_string(),
                    })?;
                if let Some(subject) = &args.subject {
                    investigation.subject = subject.clone();
                }
                apply_flags(&mut investigation, &args);
                investigation
                    .validate()
                    .map_err(|message| ExampleError::Input {
                        origin: "the command line".into(),
                        message,
                    })?;
                investigation
            }
            (None, None) => investigation_from(common, &args)?,
        };
        // Run-defining options: given now wins; on --resume the rest come from run.json.
        let model_spec: String = session.option("model", common.model.clone())?;
        let strategy_spec: String = session.option(
            "strategy_model",
            args.strategy_model
                .clone()
                .unwrap_or_else(|| model_spec.clone()),
        )?;
        let search_spec: String = session.option(
            "search_model",
            args.search_model
                .clone()
                .unwrap_or_else(|| model_spec.clone()),
        )?;
        let corpus: Option<PathBuf> = session.option(
            "corpus",
            common
                .corpus
                .as_deref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
        )?;
        let offline_delay_ms: u64 = session.option("offline_delay_ms", common.offline_delay_ms)?;
        let max_concurrent_searches: usize =
            session.option("max_concurrent_searches", args.max_concurrent_searches)?;
        let results_per_search: usize =
            session.option("results_per_search", args.results_per_search)?;
        let max_tokens_per_call: u32 =
            session.option("max_tokens_per_call", args.max_tokens_per_call)?;
        // Chosen once, kept in run.json: every resume gives `initialize` the same id, so a
        // run killed before its first step was saved keeps its audit file.
        let session_id: String = session.option("session_id", super::nodes::new_session_id())?;

        let offline: Arc<dyn ChatModel> =
            Arc::new(offline_model().with_delay(Duration::from_millis(offline_delay_ms)));
        let strategy_choice: ModelChoice = strategy_spec.parse()?;
        let search_choice: ModelChoice = search_spec.parse()?;
        let strategy_model = bounded(
            strategy_choice.build(Arc::clone(&offline))?,
            &strategy_choice,
            max_tokens_per_call,
        );
        let search_model = bounded(
            search_choice.build(offline)?,
            &search_choice,
            max_tokens_per_call,
        );
        let all_offline = strategy_choice.is_offline() && search_choice.is_offline();
        let tavily = std::env::var("TAVILY_API_KEY").is_ok_and(|k| !k.is_empty());
        let (search, search_name) = match &corpus {
            Some(dir) => crate::shared::search::choose(Some(dir), true)?,
            // Real models with a Tavily key search the web; otherwise this workflow's corpus.
            None if !all_offline && tavily => crate::shared::search::choose(None, false)?,
            None => crate::shared::search::choose(Some(&corpus_dir()), true)?,
        };
        Ok(DueDiligencePlan {
            investigation,
            strategy_spec,
            search_spec,
            search_name,
            strategy_model,
            search_model,
            search,
            results_per_search,
            max_concurrent_searches,
            session_id,
        })
    }
}

impl Plan for DueDiligencePlan {
    fn input(&self) -> serde_json::Value {
        serde_json::to_value(&self.investigation).unwrap_or_default()
    }

    fn start_line(&self) -> (String, String) {
        (
            format!("due-diligence {:?}", self.investigation.subject),
            format!(
                "max depth {}, strategy model {}, search model {}, search {}",
                self.investigation.max_depth,
                self.strategy_spec,
                self.search_spec,
                self.search_name
            ),
        )
    }

    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError> {
        let options = DueDiligenceOptions {
            strategy_model: self.strategy_model,
            search_model: self.search_model,
            search: self.search,
            results_per_search: self.results_per_search,
            max_concurrent_searches: self.max_concurrent_searches,
            target: launch.target(),
            session_id: Some(self.session_id),
        };
        let outcome = run_due_diligence(&self.investigation, &options).await?;
        Ok(Ending::Finish(
            RunStatus::Finished,
            launch.session.summary_text(&outcome.summary.render()),
        ))
    }
}

/// A real model with at most `max_tokens` output tokens per call (the stand-in as is).
fn bounded(model: Arc<dyn ChatModel>, choice: &ModelChoice, max_tokens: u32) -> Arc<dyn ChatModel> {
    if choice.is_offline() {
        return model;
    }
    Arc::new(model.with_options(graphkit_llm::CallOptions::new().max_tokens(max_tokens)))
}

/// The investigation from `--input` and the flags (flags win); with neither a subject nor
/// an input, the offline corpus's first subject (its subjects are listed on stderr).
fn investigation_from(
    common: &CommonArgs,
    args: &DueDiligenceArgs,
) -> Result<Investigation, ExampleError> {
    let mut investigation = match (&common.input, &args.subject) {
        (Some(path), _) => Investigation::from_file(path)?,
        (None, Some(subject)) => Investigation::new(subject.clone(), String::new()),
        (None, None) => {
            let personas = read_personas(&personas_path())?;
            eprintln!("no subject given; the offline corpus has these (fictional) subjects:");
            for p in &personas {
                eprintln!("  {:<20} {}", p.subject, p.context);
            }
            let first = personas.first().ok_or_else(|| {
                ExampleError::Usage(
                    "the personas file lists no subject; pass one: due-diligence \"Subject\""
                        .into(),
                )
            })?;
            eprintln!("running the first: {}", first.subject);
            Investigation::new(first.subject.clone(), first.context.clone())
        }
    };
    if let (Some(_), Some(subject)) = (&common.input, &args.subject) {
        investigation.subject = subject.clone();
    }
    apply_flags(&mut investigation, args);
    let origin = common.input.as_ref().map_or_else(
        || "the command line".to_owned(),
        |p| p.display().to_string(),
    );
    investigation
        .validate()
        .map_err(|message| ExampleError::Input { origin, message })?;
    Ok(investigation)
}

/// The investigation flags given on the command line (`--context` and the limits) over
/// `investigation`.
fn apply_flags(investigation: &mut Investigation, args: &DueDiligenceArgs) {
    if let Some(context) = &args.context {
        investigation.context = context.clone();
    }
    if let Some(n) = args.max_depth {
        investigation.max_depth = n;
    }
    if let Some(n) = args.max_queries_per_depth {
        investigation.max_queries_per_depth = n;
    }
    if let Some(n) = args.stagnation_threshold {
        investigation.stagnation_threshold = n;
    }
}

async fn evaluate_personas(
    common: &CommonArgs,
    args: &DueDiligenceArgs,
) -> Result<RunStatus, ExampleError> {
    let offline: Arc<dyn ChatModel> =
        Arc::new(offline_model().with_delay(Duration::from_millis(common.offline_delay_ms)));
    let personas = read_personas(&personas_path())?;
    let strategy: ModelChoice = args
        .strategy_model
        .clone()
        .unwrap_or_else(|| common.model.clone())
        .parse()?;
    let search_model: ModelChoice = args
        .search_model
        .clone()
        .unwrap_or_else(|| common.model.clone())
        .parse()?;
    let root = common.out.clone().unwrap_or_else(|| {
        RunDir::default_for(
            "due-diligence",
            &format!(
                "eval-{}",
                crate::shared::session::new_thread("due-diligence")
            ),
        )
    });
    let mut scores = Vec::new();
    for persona in &personas {
        let mut investigation =
            Investigation::new(persona.subject.clone(), persona.context.clone());
        if let Some(n) = args.max_depth {
            investigation.max_depth = n;
        }
        let options = DueDiligenceOptions {
            strategy_model: bounded(
                strategy.build(Arc::clone(&offline))?,
                &strategy,
                args.max_tokens_per_call,
            ),
            search_model: bounded(
                search_model.build(Arc::clone(&offline))?,
                &search_model,
                args.max_tokens_per_call,
            ),
            search: crate::shared::search::corpus(
                &common.corpus.clone().unwrap_or_else(corpus_dir),
            )?,
            results_per_search: args.results_per_search,
            max_concurrent_searches: args.max_concurrent_searches,
            target: RunTarget::new(
                persona.id.clone(),
                RunDir::create(root.join(&persona.id))?,
                CheckpointChoice::Memory.open().await?,
            ),
            session_id: None,
        };
        let outcome = run_due_diligence(&investigation, &options).await?;
        scores.push(evaluate::score(persona, &outcome.state));
    }
    crate::shared::stdout::print_text(&evaluate::render(&scores));
    RunDir::create(&root)?.write_json("evaluation.json", &scores)?;
    crate::shared::stdout::print_line(&format!("runs and evaluation.json in {}", root.display()));
    Ok(RunStatus::Finished)
}
