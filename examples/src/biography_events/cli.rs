//! `graphkit-research biography-events`: from the command line's values to a run.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use super::event::load_initial_events;
use super::offline::offline_model;
use super::runner::{BiographyOptions, run_biography_events};
use super::{DEFAULT_PERSON, Deps, Limits, Sites, build_graph, default_corpus_dir};
use crate::shared::run_dir::RunStatus;
use crate::shared::time::{now_ms, rfc3339};
use crate::shared::{CheckpointChoice, ExampleError, ModelChoice, Progress, RunDir, RunManifest};

/// What the command line asked for.
#[derive(Debug, Clone, Default)]
pub struct CliRequest {
    /// The person (default: [`DEFAULT_PERSON`]; on `--resume`, the run's own).
    pub person: Option<String>,
    /// `--initial-events FILE`.
    pub initial_events: Option<PathBuf>,
    /// The knobs.
    pub limits: Limits,
    /// `--model`.
    pub model: String,
    /// `--out`.
    pub out: Option<PathBuf>,
    /// `--thread`.
    pub thread: Option<String>,
    /// `--resume`.
    pub resume: bool,
    /// `--checkpoint`.
    pub checkpoint: Option<String>,
    /// `--corpus`.
    pub corpus: Option<PathBuf>,
    /// `--print-graph`.
    pub print_graph: bool,
    /// `--print-input-schema`: the JSON Schema of `--initial-events`.
    pub print_input_schema: bool,
    /// `--stream`.
    pub stream: bool,
    /// `--quiet`.
    pub quiet: bool,
    /// The offline stand-in's delay per reply.
    pub offline_delay_ms: u64,
}

/// Runs the command; `Ok(true)` when the run finished.
///
/// # Errors
/// [`ExampleError`] for bad input (empty name, an initial-events file that does not
/// parse or holds invalid dates), unusable options, or a failed run.
pub async fn run(request: CliRequest) -> Result<bool, ExampleError> {
    if request.print_input_schema {
        let schema = schemars::schema_for!(Vec<super::Event>);
        println!(
            "{}",
            serde_json::to_string_pretty(&schema).unwrap_or_default()
        );
        return Ok(true);
    }
    let offline = offline_model(Duration::from_millis(request.offline_delay_ms));
    if request.print_graph {
        let deps = Deps {
            model: offline,
            search: crate::shared::search::corpus(&default_corpus_dir())?,
            sites: Sites::offline(),
        };
        println!(
            "{}",
            build_graph(&deps, graphkit::CompileOptions::new())?.draw_mermaid()
        );
        return Ok(true);
    }
    let thread = request.thread.clone().unwrap_or_else(new_thread);
    let run_dir = RunDir::create(
        request
            .out
            .clone()
            .unwrap_or_else(|| RunDir::default_for("biography-events", &thread)),
    )?;
    let manifest = RunManifest::read(run_dir.path())?.filter(|_| request.resume);
    if request.resume && manifest.is_none() {
        return Err(ExampleError::Usage(format!(
            "nothing to resume in {}: no run.json there; pass the same --out as the first run",
            run_dir.path().display()
        )));
    }
    let person = match (&request.person, &manifest) {
        (Some(p), _) => p.trim().to_owned(),
        (None, Some(m)) => m.input["person"].as_str().unwrap_or("").to_owned(),
        (None, None) => DEFAULT_PERSON.to_owned(),
    };
    if person.is_empty() {
        return Err(ExampleError::Usage("the person to research is empty; give a name, e.g. graphkit-research biography-events \"Odile Marchetti\"".into()));
    }
    let initial = request
        .initial_events
        .as_deref()
        .map(load_initial_events)
        .transpose()?;
    request.limits.validate().map_err(ExampleError::Usage)?;

    let model_spec = match &manifest {
        Some(m) if request.model == "offline" => m.model.clone(),
        _ => request.model.clone(),
    };
    let choice = model_spec.parse::<ModelChoice>()?;
    let model = choice.build(offline)?;
    let checkpoint: CheckpointChoice = match (&request.checkpoint, &manifest) {
        (Some(spec), _) => spec.parse()?,
        (None, Some(m)) if !m.checkpoint.starts_with("postgres") => m.checkpoint.parse()?,
        _ => CheckpointChoice::Sqlite(run_dir.join("checkpoints.sqlite")),
    };
    if request.resume && !checkpoint.is_durable() {
        return Err(ExampleError::Usage(
            "--resume needs durable checkpoints: use sqlite:PATH or postgres:URL".into(),
        ));
    }
    let tavily = std::env::var("TAVILY_API_KEY").is_ok_and(|k| !k.is_empty());
    let corpus = request
        .corpus
        .clone()
        .or_else(|| (choice.is_offline() || !tavily).then(default_corpus_dir));
    let (search, search_name) =
        crate::shared::search::choose(corpus.as_deref(), choice.is_offline())?;
    let sites = if corpus.is_some() {
        Sites::offline()
    } else {
        Sites::web()
    };

    let mut manifest = match manifest {
        Some(m) => m,
        None => RunManifest {
            workflow: "biography-events".into(),
            thread: thread.clone(),
            model: model_spec.clone(),
            summary_model: None,
            checkpoint: checkpoint.to_string(),
            created_at: rfc3339(now_ms()),
            input: json!({"person": person, "initialEvents": initial, "limits": request.limits}),
            options: serde_json::Map::new(),
            status: RunStatus::Running,
            pid: None,
            updated_at: String::new(),
        },
    };
    manifest.status = RunStatus::Running;
    manifest.pid = Some(std::process::id());
    manifest.updated_at = rfc3339(now_ms());
    run_dir.write_json(RunManifest::FILE, &manifest)?;
    let progress = Progress::new("tool calls", request.quiet);
    progress.note(
        "run",
        &format!(
            "biography-events for {person}, thread {thread}, model {model_spec}, search {search_name}, checkpoints {checkpoint}, outputs in {}",
            run_dir.path().display()
        ),
    );
    let options = BiographyOptions {
        model,
        search,
        sites,
        limits: request.limits.clone(),
        run_dir,
        checkpointer: checkpoint.open().await?,
        thread: thread.clone(),
        resume: request.resume,
        stream: request.stream,
        progress,
    };
    let outcome = run_biography_events(&person, initial, &options).await;
    manifest.status = if outcome.is_ok() {
        RunStatus::Finished
    } else {
        RunStatus::Failed
    };
    manifest.updated_at = rfc3339(now_ms());
    options.run_dir.write_json(RunManifest::FILE, &manifest)?;
    match outcome {
        Ok((summary, _)) => {
            print!("{}", summary.render());
            println!("events: {}", options.run_dir.join("events.json").display());
            println!(
                "timeline: {}",
                options.run_dir.join("timeline.md").display()
            );
            Ok(true)
        }
        Err(err @ ExampleError::Graph(_)) => {
            eprintln!(
                "the run stopped: {err}\ncontinue it with: graphkit-research biography-events --resume --thread {thread} --out {}",
                options.run_dir.path().display()
            );
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// A new thread id: `be-<utc time>-<pid>`.
fn new_thread() -> String {
    let stamp: String = rfc3339(now_ms())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("be-{stamp}-{}", std::process::id())
}
