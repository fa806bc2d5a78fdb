//! `graphkit-research biography-events`: the subcommand's own options and its main, on
//! the shared run infrastructure ([`RunSession`] for the run directory, `run.json` and
//! `--resume`; [`StopSignal`] for Ctrl-C; [`Progress`] and `--stream` JSON lines).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;
use serde_json::json;

use super::event::{Event, load_initial_events};
use super::offline::offline_model;
use super::runner::{BiographyOptions, run_biography_events};
use super::{DEFAULT_PERSON, Deps, Limits, Sites, build_graph, default_corpus_dir};
use crate::shared::command::{self, Ending, Launch, Plan, Workflow};
use crate::shared::{CommonArgs, ExampleError, ModelChoice, RunSession, RunStatus};

/// The workflow's name: the subcommand and the folder of its runs.
pub(crate) const WORKFLOW: &str = "biography-events";

/// The options of `biography-events` besides the common ones.
#[derive(Debug, Clone, Args)]
pub struct BiographyEventsArgs {
    /// The person to research [default: a fictional author of the offline corpus].
    pub person: Option<String>,

    /// Known events (JSON array) for an incremental run: checked for gaps first; no gaps,
    /// no tool calls.
    #[arg(long, value_name = "FILE")]
    pub(crate) initial_events: Option<PathBuf>,

    /// Tool calls before the run stops (think_tool not counted).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_tool_calls: u32,

    /// From this many events on, deepen (further_event_research) instead of crawling.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub(crate) deepening_threshold: usize,

    /// Stop when more than this share of events has full details.
    #[arg(long, value_name = "RATIO", default_value_t = 0.8)]
    pub(crate) full_detail_ratio: f64,

    /// Stop when the events did not change in this many consecutive tool calls.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub no_change_window: usize,

    /// History entries kept; older ones are folded into one summary entry.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub history_cap: usize,

    /// Events further_event_research researches per call (the seed: 3-5).
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub gap_targets: usize,
}

/// The subcommand: checks the input, starts or resumes the run, runs the graph, writes
/// the outputs. On `--resume`, options given now win and the others (the person, the
/// model, the search backend, the knobs) come from `run.json`.
///
/// # Errors
/// Bad input (exit 2: an empty name, an initial-events file that does not parse or holds
/// invalid dates, knobs out of range), a resume that cannot start, unusable options.
/// A run that fails midway is not an error: it returns [`RunStatus::Failed`] after
/// printing the command that continues it.
pub async fn biography_events_main(
    args: BiographyEventsArgs,
    common: CommonArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    command::run::<BiographyEvents>(args, common, matches).await
}

struct BiographyEvents;

/// What the command line gave: the person, the initial events, the knobs.
struct Given {
    person: Option<String>,
    initial: Option<Vec<Event>>,
    limits: Limits,
}

struct BiographyPlan {
    person: String,
    initial: Option<Vec<Event>>,
    limits: Limits,
    model_spec: String,
    search_name: String,
    model: Arc<dyn ChatModel>,
    search: Arc<dyn SearchBackend>,
    sites: Sites,
}

impl Workflow for BiographyEvents {
    const NAME: &'static str = WORKFLOW;
    const UNIT: &'static str = "tool calls";
    type Args = BiographyEventsArgs;
    type Given = Given;
    type Plan = BiographyPlan;

    fn input_schema() -> String {
        let schema = schemars::schema_for!(Vec<Event>);
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    }

    fn graph_drawing(_: &BiographyEventsArgs, common: &CommonArgs) -> Result<String, ExampleError> {
        let deps = Deps {
            model: offline_model(Duration::from_millis(common.offline_delay_ms)),
            search: crate::shared::search::corpus(&default_corpus_dir())?,
            sites: Sites::offline(),
        };
        Ok(build_graph(&deps, graphkit::CompileOptions::new())?.draw_mermaid())
    }

    fn check(args: &BiographyEventsArgs, common: &CommonArgs) -> Result<Given, ExampleError> {
        let person = args.person.as_deref().map(str::trim).map(str::to_owned);
        if person.as_deref() == Some("") {
            return Err(empty_person());
        }
        let initial = args
            .initial_events
            .as_deref()
            .or(common.input.as_deref())
            .map(load_initial_events)
            .transpose()?;
        let limits = Limits {
            max_tool_calls: args.max_tool_calls,
            min_events_for_deepening: args.deepening_threshold,
            full_detail_ratio: args.full_detail_ratio,
            no_change_window: args.no_change_window,
            history_cap: args.history_cap,
            gap_targets: args.gap_targets,
            ..Limits::default()
        };
        limits.validate().map_err(ExampleError::Usage)?;
        common.model.parse::<ModelChoice>()?;
        Ok(Given {
            person,
            initial,
            limits,
        })
    }

    async fn plan(
        _: BiographyEventsArgs,
        common: &CommonArgs,
        given: Given,
        session: &mut RunSession,
    ) -> Result<BiographyPlan, ExampleError> {
        let saved = session.saved_input().cloned();
        let person = match (given.person, &saved) {
            (Some(person), _) => person,
            (None, Some(saved)) => saved["person"].as_str().unwrap_or("").to_owned(),
            (None, None) => DEFAULT_PERSON.to_owned(),
        };
        if person.is_empty() {
            return Err(empty_person());
        }
        let initial = match (given.initial, &saved) {
            (Some(events), _) => Some(events),
            (None, Some(saved)) => serde_json::from_value(saved["initialEvents"].clone()).ok(),
            (None, None) => None,
        };
        let cli = given.limits;
        let limits = Limits {
            max_tool_calls: session.option("max_tool_calls", cli.max_tool_calls)?,
            min_events_for_deepening: session
                .option("deepening_threshold", cli.min_events_for_deepening)?,
            full_detail_ratio: session.option("full_detail_ratio", cli.full_detail_ratio)?,
            no_change_window: session.option("no_change_window", cli.no_change_window)?,
            history_cap: session.option("history_cap", cli.history_cap)?,
            gap_targets: session.option("gap_targets", cli.gap_targets)?,
            ..cli
        };
        limits.validate().map_err(ExampleError::Usage)?;
        let model_spec: String = session.option("model", common.model.clone())?;
        let choice = model_spec.parse::<ModelChoice>()?;
        let model = choice.build(offline_model(Duration::from_millis(
            common.offline_delay_ms,
        )))?;
        // The search backend: --corpus, else the one the run recorded, else the corpus for
        // the offline model (or without TAVILY_API_KEY) and the web otherwise.
        let corpus_flag: Option<PathBuf> = session.option("corpus", common.corpus.clone())?;
        let tavily = std::env::var("TAVILY_API_KEY").is_ok_and(|k| !k.is_empty());
        let corpus = match corpus_flag {
            // Recorded as `corpus`: a resume searches the same directory.
            Some(dir) => Some(dir),
            None => {
                let fresh = if choice.is_offline() || !tavily {
                    "corpus"
                } else {
                    "web"
                };
                let backend: String = session.option("search", fresh.to_owned())?;
                (backend != "web").then(default_corpus_dir)
            }
        };
        let (search, search_name) =
            crate::shared::search::choose(corpus.as_deref(), choice.is_offline())?;
        let sites = if corpus.is_some() {
            Sites::offline()
        } else {
            Sites::web()
        };
        Ok(BiographyPlan {
            person,
            initial,
            limits,
            model_spec,
            search_name,
            model,
            search,
            sites,
        })
    }
}

impl Plan for BiographyPlan {
    fn input(&self) -> serde_json::Value {
        json!({"person": self.person, "initialEvents": self.initial, "limits": self.limits})
    }

    fn start_line(&self) -> (String, String) {
        (
            format!("{WORKFLOW} for {}", self.person),
            format!("model {}, search {}", self.model_spec, self.search_name),
        )
    }

    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError> {
        let options = BiographyOptions {
            model: self.model,
            search: self.search,
            sites: self.sites,
            limits: self.limits,
            target: launch.target(),
        };
        let outcome = run_biography_events(&self.person, self.initial, &options).await;
        options.target.progress.end();
        let session = launch.session;
        match outcome {
            Ok((summary, _)) => {
                let outputs = session.dir();
                let text = format!(
                    "{}events: {}\ntimeline: {}\n",
                    summary.render(),
                    outputs.join("events.json").display(),
                    outputs.join("timeline.md").display()
                );
                Ok(Ending::Finish(RunStatus::Finished, text))
            }
            Err(err @ ExampleError::Graph(_)) => {
                session.record_status(RunStatus::Failed)?;
                eprintln!(
                    "the run stopped: {err}\ncontinue it with:\n  {}",
                    session.resume_command()
                );
                Ok(Ending::Reported(RunStatus::Failed))
            }
            Err(err) => Err(err),
        }
    }
}

fn empty_person() -> ExampleError {
    ExampleError::Usage(format!(
        "the person to research is empty; give a name, e.g. graphkit-research {WORKFLOW} \"{DEFAULT_PERSON}\""
    ))
}
