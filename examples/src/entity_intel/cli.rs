//! `graphkit-research entity-intel`: the workflow's own options and its command on the
//! common runner ([`crate::shared::command`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;

use super::input::EntitiesResearchDirections;
use super::nodes::{AgentDeps, Limits};
use super::offline::offline_model;
use super::output_folder::OutputFolder;
use super::runner::{EntityIntelOptions, run_entity_intel};
use super::tools::ToolDeps;
use super::web_tools::WebTools;
use crate::shared::command::{self, Ending, Launch, Plan, Workflow};
use crate::shared::{CommonArgs, ExampleError, ModelChoice, RunSession, RunStatus, search};

/// The options of `entity-intel` besides the common ones.
#[derive(Debug, Clone, Args)]
pub struct EntityIntelArgs {
    /// Tool calls allowed per todo before it is marked blocked.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub max_tool_calls_per_todo: u32,

    /// Model turns without a tool call allowed per todo before it is marked blocked.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub max_idle_turns_per_todo: u32,

    /// Seconds of work allowed per todo before it is marked blocked (time the run was
    /// down between a kill and --resume does not count).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub todo_timeout: u64,

    /// Output tokens per agent turn.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_tokens_per_turn: u32,
}

/// The command: prints the schema or the graph, or runs (or, with `--resume`, continues)
/// every bundle of the input.
///
/// # Errors
/// Bad input or options (exit 2), a resume that cannot start, a run that cannot start.
pub async fn entity_intel_main(
    args: EntityIntelArgs,
    common: CommonArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    command::run::<EntityIntel>(args, common, matches).await
}

struct EntityIntel;

struct EntityIntelPlan {
    input: EntitiesResearchDirections,
    model_spec: String,
    search_name: String,
    model: Arc<dyn ChatModel>,
    summary_model: Arc<dyn ChatModel>,
    search: Arc<dyn SearchBackend>,
    web: Option<WebTools>,
    limits: Limits,
    max_concurrency: usize,
}

impl Workflow for EntityIntel {
    const NAME: &'static str = "entity-intel";
    const UNIT: &'static str = "todos";
    type Args = EntityIntelArgs;
    type Given = Option<EntitiesResearchDirections>;
    type Plan = EntityIntelPlan;

    fn input_schema() -> String {
        EntitiesResearchDirections::schema_json()
    }

    fn graph_drawing(_: &EntityIntelArgs, _: &CommonArgs) -> Result<String, ExampleError> {
        let offline: Arc<dyn ChatModel> = Arc::new(offline_model());
        let graph = super::build_graph(
            AgentDeps {
                model: Arc::clone(&offline),
                tool_specs: Vec::new(),
                limits: Limits::default(),
            },
            &ToolDeps {
                search: search::corpus(&search::default_corpus_dir())?,
                summary_model: offline,
                summarize_after_messages: Limits::default().summarize_after_messages,
                web: Some(WebTools::default()),
                outputs: OutputFolder::FromState,
            },
            graphkit::CompileOptions::new(),
        )?;
        Ok(graph.draw_mermaid())
    }

    fn check(_: &EntityIntelArgs, common: &CommonArgs) -> Result<Self::Given, ExampleError> {
        let given = common
            .input
            .as_deref()
            .map(EntitiesResearchDirections::from_file)
            .transpose()?;
        common.model.parse::<ModelChoice>()?;
        if let Some(spec) = &common.summary_model {
            spec.parse::<ModelChoice>()?;
        }
        Ok(given)
    }

    async fn plan(
        args: EntityIntelArgs,
        common: &CommonArgs,
        given: Self::Given,
        session: &mut RunSession,
    ) -> Result<EntityIntelPlan, ExampleError> {
        // Input: --input, else the run's own (on resume), else the sample.
        let input = match (given, session.saved_input()) {
            (Some(input), _) => input,
            (None, Some(saved)) => EntitiesResearchDirections::from_json(
                &session.dir().join("run.json").display().to_string(),
                &saved.to_string(),
            )?,
            (None, None) => EntitiesResearchDirections::from_file(&super::sample_input_path())?,
        };
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

        let offline: Arc<dyn ChatModel> =
            Arc::new(offline_model().with_delay(Duration::from_millis(offline_delay_ms)));
        let model_choice = model_spec.parse::<ModelChoice>()?;
        let model = model_choice.build(Arc::clone(&offline))?;
        let summary_model = match &summary_spec {
            Some(spec) => spec.parse::<ModelChoice>()?.build(offline)?,
            None => Arc::clone(&model),
        };
        let (search, search_name) = search::choose(corpus.as_deref(), model_choice.is_offline())?;
        Ok(EntityIntelPlan {
            input,
            model_spec,
            search_name,
            model,
            summary_model,
            search,
            // Real models get the seed's other web tools; the offline stand-in the corpus only.
            web: (!model_choice.is_offline()).then(WebTools::default),
            limits,
            max_concurrency,
        })
    }
}

impl Plan for EntityIntelPlan {
    fn input(&self) -> serde_json::Value {
        serde_json::to_value(&self.input).unwrap_or_default()
    }

    fn start_line(&self) -> (String, String) {
        let details = format!(
            "{} bundles / {} directions, model {}, search {}",
            self.input.bundles.len(),
            self.input.total_directions(),
            self.model_spec,
            self.search_name
        );
        (EntityIntel::NAME.to_owned(), details)
    }

    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError> {
        let options = EntityIntelOptions {
            model: self.model,
            summary_model: self.summary_model,
            search: self.search,
            web: self.web,
            limits: self.limits,
            max_concurrency: self.max_concurrency,
            target: launch.target(),
        };
        let summary = run_entity_intel(&self.input, &options).await?;
        let unmet = summary.required_not_completed();
        if !summary.interrupted() && summary.succeeded() && !unmet.is_empty() {
            let why = format!(
                "{} required todo(s) were not completed: {}",
                unmet.len(),
                unmet.join("; ")
            );
            let status = launch.session.finish_unmet(
                &why,
                "its outputs and research_complete.json are written; each blocked todo says why in its notes (a per-todo limit, the model's failed calls, or the run's --time-budget); start a new run with more room or a stronger model",
                &launch.session.summary_text(&summary.render()),
                launch.common.stream,
            )?;
            return Ok(Ending::Reported(status));
        }
        let status = if summary.interrupted() {
            RunStatus::Interrupted
        } else if summary.succeeded() {
            RunStatus::Finished
        } else {
            RunStatus::Failed
        };
        Ok(Ending::Finish(
            status,
            launch.session.summary_text(&summary.render()),
        ))
    }
}
