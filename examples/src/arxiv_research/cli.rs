//! `graphkit-research arxiv-research`: the subcommand's own options and its main.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{ArgMatches, Args};
use graphkit_llm::ChatModel;

use super::backend::{OfflineArxiv, OfflineArxivServer};
use super::graph::GraphDeps;
use super::nodes::{DEFAULT_MAX_CITATIONS, NodeDeps};
use super::runner::{
    ArxivResearchOptions, check_options, compiled, run_arxiv_research, write_artifacts,
};
use super::standin::offline_model;
use super::tools::DEFAULT_TOP_K;
use crate::shared::command::{self, Ending, Launch, Plan, Workflow};
use crate::shared::{CommonArgs, ExampleError, ModelChoice, RunSession, RunStatus};

/// The topic researched when none is given.
pub(crate) const DEFAULT_TOPIC: &str = "retrieval-augmented generation for question answering";

/// The options of `arxiv-research` besides the common ones.
#[derive(Debug, Clone, Args)]
pub struct ArxivResearchArgs {
    /// The research topic [default: "retrieval-augmented generation for question answering"].
    #[arg(value_name = "TOPIC")]
    pub topic: Option<String>,

    /// Search results per arxiv_search call (from the run config, never chosen by the model).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_TOP_K)]
    pub top_k: usize,

    /// K: new references the fact gate admits per plan step.
    #[arg(long, value_name = "K", default_value_t = DEFAULT_MAX_CITATIONS)]
    pub max_citations_per_step: u32,

    /// The most plan steps kept from the planner.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub max_steps: usize,

    /// The planner's model (default: --model).
    #[arg(long, value_name = "SPEC")]
    pub(crate) planner_model: Option<String>,

    /// The supervisor's model (default: --model).
    #[arg(long, value_name = "SPEC")]
    pub(crate) supervisor_model: Option<String>,

    /// The arxiv_agent worker's model (default: --model).
    #[arg(long, value_name = "SPEC")]
    pub(crate) worker_model: Option<String>,

    /// The expander's model (default: --summary-model, else --model).
    #[arg(long, value_name = "SPEC")]
    pub(crate) expander_model: Option<String>,

    /// The synthesizer's model (default: --model).
    #[arg(long, value_name = "SPEC")]
    pub(crate) synthesizer_model: Option<String>,

    /// Where papers come from: `offline` (the corpus in examples/fixtures/arxiv, or the
    /// papers.json given with --corpus, served from 127.0.0.1) or `live`
    /// (export.arxiv.org) [default: offline with the offline model or --corpus, live with a
    /// real one].
    #[arg(long, value_name = "BACKEND", value_parser = ["offline", "live"])]
    pub arxiv: Option<String>,
}

/// The models of the five roles.
struct RoleModels {
    planner: Arc<dyn ChatModel>,
    supervisor: Arc<dyn ChatModel>,
    worker: Arc<dyn ChatModel>,
    expander: Arc<dyn ChatModel>,
    synthesizer: Arc<dyn ChatModel>,
}

fn role_models(
    specs: &[Option<String>; 5],
    default: &str,
    offline: &Arc<dyn ChatModel>,
) -> Result<RoleModels, ExampleError> {
    let build = |spec: &Option<String>| -> Result<Arc<dyn ChatModel>, ExampleError> {
        spec.as_deref()
            .unwrap_or(default)
            .parse::<ModelChoice>()?
            .build(Arc::clone(offline))
    };
    Ok(RoleModels {
        planner: build(&specs[0])?,
        supervisor: build(&specs[1])?,
        worker: build(&specs[2])?,
        expander: build(&specs[3])?,
        synthesizer: build(&specs[4])?,
    })
}

/// The graph's dependencies for `models` and `arxiv`.
fn graph_deps(
    models: RoleModels,
    arxiv: graphkit_tools::prebuilt::arxiv::Arxiv,
    max_steps: usize,
) -> GraphDeps {
    GraphDeps {
        supervisor: models.supervisor,
        worker: models.worker,
        nodes: NodeDeps {
            planner: models.planner,
            expander: models.expander,
            synthesizer: models.synthesizer,
            arxiv,
            max_steps,
        },
        worker_max_iterations: 8,
    }
}

/// The subcommand: checks the options, starts or resumes the run, runs the graph,
/// writes the artifacts.
///
/// # Errors
/// Bad options (exit 2), a resume that cannot start, a failed run.
pub async fn arxiv_research_main(
    args: ArxivResearchArgs,
    common: CommonArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    command::run::<ArxivResearch>(args, common, matches).await
}

struct ArxivResearch;

struct ArxivResearchPlan {
    topic: String,
    model_spec: String,
    backend: String,
    top_k: usize,
    k: u32,
    max_concurrency: usize,
    deps: GraphDeps,
    /// The offline corpus served from 127.0.0.1, for as long as the run.
    server: Option<OfflineArxivServer>,
}

fn offline(common: &CommonArgs) -> Arc<dyn ChatModel> {
    Arc::new(offline_model(3).with_delay(Duration::from_millis(common.offline_delay_ms)))
}

impl Workflow for ArxivResearch {
    const NAME: &'static str = "arxiv-research";
    const UNIT: &'static str = "steps";
    type Args = ArxivResearchArgs;
    type Given = Option<String>;
    type Plan = ArxivResearchPlan;

    fn refuse(common: &CommonArgs) -> Result<(), ExampleError> {
        match CommonArgs::first_given(&[
            (common.input.is_some(), "--input"),
            (common.print_input_schema, "--print-input-schema"),
        ]) {
            Some(flag) => Err(ExampleError::Usage(format!(
                "arxiv-research does not take {flag}; give the topic as an argument"
            ))),
            None => Ok(()),
        }
    }

    fn input_schema() -> String {
        String::new()
    }

    fn graph_drawing(
        args: &ArxivResearchArgs,
        common: &CommonArgs,
    ) -> Result<String, ExampleError> {
        let models = role_models(&Default::default(), "offline", &offline(common))?;
        let deps = graph_deps(
            models,
            graphkit_tools::prebuilt::arxiv::Arxiv::new(),
            args.max_steps,
        );
        let graph = super::graph::build_graph(&deps, graphkit::CompileOptions::new())?;
        Ok(graph.draw_mermaid())
    }

    fn check(args: &ArxivResearchArgs, _: &CommonArgs) -> Result<Option<String>, ExampleError> {
        if let Some(topic) = &args.topic {
            check_options(
                topic,
                args.top_k,
                args.max_citations_per_step,
                args.max_steps,
            )?;
        }
        check_options("-", args.top_k, args.max_citations_per_step, args.max_steps)?;
        Ok(args.topic.clone())
    }

    async fn plan(
        args: ArxivResearchArgs,
        common: &CommonArgs,
        given_topic: Option<String>,
        session: &mut RunSession,
    ) -> Result<ArxivResearchPlan, ExampleError> {
        let topic: String = match (given_topic, session.saved_input()) {
            (Some(topic), _) => topic,
            (None, Some(saved)) => saved["topic"].as_str().unwrap_or(DEFAULT_TOPIC).to_owned(),
            (None, None) => DEFAULT_TOPIC.to_owned(),
        };
        let model_spec: String = session.option("model", common.model.clone())?;
        let summary_spec: Option<String> =
            session.option("summary_model", common.summary_model.clone())?;
        let specs: [Option<String>; 5] = [
            session.option("planner_model", args.planner_model)?,
            session.option("supervisor_model", args.supervisor_model)?,
            session.option("worker_model", args.worker_model)?,
            session
                .option("expander_model", args.expander_model)?
                .or(summary_spec),
            session.option("synthesizer_model", args.synthesizer_model)?,
        ];
        let top_k: usize = session.option("top_k", args.top_k)?;
        let k: u32 = session.option("max_citations_per_step", args.max_citations_per_step)?;
        let max_steps: usize = session.option("max_steps", args.max_steps)?;
        let max_concurrency: usize = session.option("max_concurrency", common.max_concurrency)?;
        let arxiv_backend: Option<String> = session.option("arxiv", args.arxiv)?;
        check_options(&topic, top_k, k, max_steps)?;

        let choice = model_spec.parse::<ModelChoice>()?;
        let models = role_models(&specs, &model_spec, &offline(common))?;
        // The offline corpus is served to the real arXiv client from 127.0.0.1.
        let corpus: Option<PathBuf> = session.option("corpus", common.corpus.clone())?;
        let offline_arxiv = arxiv_backend
            .as_deref()
            .map_or(choice.is_offline() || corpus.is_some(), |b| b == "offline");
        if corpus.is_some() && !offline_arxiv {
            return Err(ExampleError::Usage(
                "--corpus is a paper corpus served offline; it cannot be used with --arxiv live"
                    .into(),
            ));
        }
        let (server, arxiv, backend) = if offline_arxiv {
            let (papers, backend) = match &corpus {
                Some(path) => {
                    let file = if path.is_dir() {
                        path.join("papers.json")
                    } else {
                        path.clone()
                    };
                    (
                        OfflineArxiv::from_file(&file)?,
                        format!("the offline corpus {}", file.display()),
                    )
                }
                None => (
                    OfflineArxiv::shipped()?,
                    "the offline corpus (examples/fixtures/arxiv)".to_owned(),
                ),
            };
            let server = papers.serve().await?;
            let arxiv = server.client();
            (Some(server), arxiv, backend)
        } else {
            (
                None,
                graphkit_tools::prebuilt::arxiv::Arxiv::new(),
                "arXiv (export.arxiv.org)".to_owned(),
            )
        };
        Ok(ArxivResearchPlan {
            topic,
            model_spec,
            backend,
            top_k,
            k,
            max_concurrency,
            deps: graph_deps(models, arxiv, max_steps),
            server,
        })
    }
}

impl Plan for ArxivResearchPlan {
    fn input(&self) -> serde_json::Value {
        serde_json::json!({ "topic": self.topic })
    }

    fn start_line(&self) -> (String, String) {
        let details = format!(
            "topic \"{}\", model {}, search {}, top-k {}, K {}",
            self.topic, self.model_spec, self.backend, self.top_k, self.k
        );
        (ArxivResearch::NAME.to_owned(), details)
    }

    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError> {
        let target = launch.target();
        let options = ArxivResearchOptions {
            topic: self.topic,
            top_k: self.top_k,
            max_citations_per_step: self.k,
            deps: self.deps,
            checkpointer: target.checkpointer,
            thread: target.thread,
            max_concurrency: self.max_concurrency,
            stream: target.stream,
            progress: target.progress,
            stop: target.stop,
        };
        let result = run_arxiv_research(&options).await;
        options.progress.end();
        let state = result?;
        let graph = compiled(&options.deps, Arc::clone(&options.checkpointer))?;
        let lines = write_artifacts(launch.session.dir().path(), &state, &graph)?;
        drop(self.server);
        let references = state.facts.iter().filter(|f| f.is_reference()).count();
        let summarised = state
            .facts
            .iter()
            .filter(|f| f.is_reference() && f.extended_summary.is_some())
            .count();
        let text = format!(
            "{} plan steps, {references} references, {summarised} summarised\n{}\n",
            state.plan.as_ref().map_or(0, |p| p.steps.len()),
            lines.join("\n")
        );
        Ok(Ending::Finish(RunStatus::Finished, text))
    }
}
