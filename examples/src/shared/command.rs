//! The shape of a `graphkit-research` workflow command, written once in [`run`]: refuse
//! the options the workflow has no use for, print the input schema or the graph, check
//! what was given before anything is created, begin the session (a new run or
//! `--resume`), settle the input and the run-defining options, open the checkpointer,
//! record the start in `run.json`, announce it, run, and end the session with the summary
//! and the exit status. A workflow declares only what differs ([`Workflow`], [`Plan`]).

use std::sync::Arc;

use clap::ArgMatches;
use graphkit::checkpoint::Checkpointer;
use serde_json::Value;

use super::models::{ModelHealth, PromptLog, RunBudget};
use super::{
    CheckpointChoice, CommonArgs, ExampleError, GivenOptions, Progress, RunRequest, RunSession,
    RunStatus, RunTarget,
};

/// What one workflow's command declares; [`run`] does the rest.
pub(crate) trait Workflow {
    /// The subcommand and the folder of its runs (`entity-intel`).
    const NAME: &'static str;
    /// What its progress counts (`todos`).
    const UNIT: &'static str;
    /// Its options besides the common ones.
    type Args;
    /// What [`check`](Self::check) found on the command line (the input, if given).
    type Given;
    /// The run, its input and options settled.
    type Plan: Plan;

    /// A command that is not a run (`mcp-research serve`, `due-diligence --evaluate`).
    async fn instead(
        _args: &Self::Args,
        _common: &CommonArgs,
    ) -> Option<Result<RunStatus, ExampleError>> {
        None
    }

    /// Refuses the common options the workflow has no use for.
    fn refuse(_common: &CommonArgs) -> Result<(), ExampleError> {
        Ok(())
    }

    /// `--print-input-schema`: the JSON Schema of the input.
    fn input_schema() -> String;

    /// `--print-graph`: the graph as Mermaid.
    fn graph_drawing(args: &Self::Args, common: &CommonArgs) -> Result<String, ExampleError>;

    /// The thread of a new run: `--thread`, else a fresh id made by the session.
    fn thread(common: &CommonArgs) -> Option<String> {
        common.thread.clone()
    }

    /// Checks the input and options given, before anything is created.
    fn check(args: &Self::Args, common: &CommonArgs) -> Result<Self::Given, ExampleError>;

    /// Settles the input and the run-defining options in `session` (given now, else on
    /// `--resume` from `run.json`) and builds what the run needs.
    async fn plan(
        args: Self::Args,
        common: &CommonArgs,
        given: Self::Given,
        session: &mut RunSession,
    ) -> Result<Self::Plan, ExampleError>;
}

/// One run, ready to start.
pub(crate) trait Plan {
    /// The input as `run.json` records it.
    fn input(&self) -> Value;

    /// The `{what}` and `{details}` of the start line ([`RunSession::start_line`]).
    fn start_line(&self) -> (String, String);

    /// Prints the run's first line (on stderr, unless quiet).
    fn announce(&self, session: &RunSession, checkpoint: &CheckpointChoice, progress: &Progress) {
        let (what, details) = self.start_line();
        progress.note("run", &session.start_line(&what, &details, checkpoint));
    }

    /// Runs the workflow and says how the invocation ends.
    async fn run(self, launch: Launch<'_>) -> Result<Ending, ExampleError>;
}

/// What a [`Plan`] runs with.
pub(crate) struct Launch<'a> {
    /// The session (run directory, thread, resume).
    pub session: &'a RunSession,
    /// The common options.
    pub common: &'a CommonArgs,
    /// The open checkpointer (closed by [`run`] afterwards).
    pub checkpointer: Arc<dyn Checkpointer>,
    /// Progress on stderr.
    pub progress: Progress,
}

impl Launch<'_> {
    /// The run's target; installs the Ctrl-C handler.
    pub fn target(&self) -> RunTarget {
        RunTarget::of_session(
            self.session,
            Arc::clone(&self.checkpointer),
            self.common,
            self.progress.clone(),
        )
    }
}

/// How a run ended.
pub(crate) enum Ending {
    /// Record the status in `run.json` and print the summary ([`RunSession::finish`]).
    Finish(RunStatus, String),
    /// Recorded and reported already: the process exits with this status.
    Reported(RunStatus),
}

/// The command of workflow `W`. Ctrl-C ([`ExampleError::Interrupted`]) ends it as
/// [`RunStatus::Interrupted`] with the command that continues it; an error of the
/// started run is recorded in `run.json` ([`RunSession::record_failure`]).
///
/// # Errors
/// Bad options or input (exit 2), a resume that cannot start, a failed run.
pub(crate) async fn run<W: Workflow>(
    args: W::Args,
    common: CommonArgs,
    matches: &ArgMatches,
) -> Result<RunStatus, ExampleError> {
    if let Some(done) = W::instead(&args, &common).await {
        return done;
    }
    W::refuse(&common)?;
    if common.print_input_schema {
        super::stdout::print_line(&W::input_schema());
        return Ok(RunStatus::Finished);
    }
    if common.print_graph {
        super::stdout::print_line(&W::graph_drawing(&args, &common)?);
        return Ok(RunStatus::Finished);
    }
    let mut common = common;
    let prompts_dir = if common.print_prompts {
        Some(prompts_run(&mut common)?)
    } else {
        None
    };
    let given = W::check(&args, &common)?;
    let budget = common.time_budget()?;
    let mut session = RunSession::begin(RunRequest {
        thread: W::thread(&common),
        out: common.out.clone(),
        resume: common.resume,
        given: GivenOptions::from_matches(matches),
        ..RunRequest::new(W::NAME)
    })?;
    // Nothing is recorded until the run starts: a resume that cannot start leaves
    // `run.json` as it was.
    let plan = W::plan(args, &common, given, &mut session).await?;
    let checkpoint = session.checkpoint(common.checkpoint.as_deref())?;
    let checkpointer = checkpoint.open_for_run(session.resuming_thread()).await?;
    session.record_start(&checkpoint, plan.input())?;
    let progress = Progress::new(W::UNIT, common.quiet);
    plan.announce(&session, &checkpoint, &progress);
    let launch = Launch {
        session: &session,
        common: &common,
        checkpointer: Arc::clone(&checkpointer.saver),
        progress,
    };
    let calls_before = ModelHealth::process().counts();
    RunBudget::process().start(budget, common.quiet);
    let result = plan.run(launch).await;
    checkpointer.close().await;
    if let Some(dir) = prompts_dir {
        // The run was only the means to the prompts: its directory goes.
        let _ = std::fs::remove_dir_all(&dir);
        result?;
        super::stdout::print_text(&render_prompts(W::NAME));
        return Ok(RunStatus::Finished);
    }
    // The workflows carry on past a failed model call (a blocked todo, a fallback report):
    // a run in which every call failed is failed, and says why.
    let calls = ModelHealth::process().counts().since(&calls_before);
    let all_failed = calls.all_failed();
    if all_failed.is_none()
        && let Some(some) = calls.some_failed()
    {
        eprintln!("warning: {some}");
    }
    // A spent budget is said at the end, where it is read, and kept with the summary.
    let budget_note = RunBudget::process().spent_note();
    if let Some(note) = &budget_note {
        eprintln!("note: {note}");
    }
    let result = result.map(|ending| match (ending, &budget_note) {
        (Ending::Finish(status, text), Some(note)) => {
            Ending::Finish(status, format!("{text}note: {note}\n"))
        }
        (ending, _) => ending,
    });
    match result {
        Ok(Ending::Finish(status, text)) => match &all_failed {
            Some(why) if status != RunStatus::Interrupted => {
                session.finish_failed(why, &text, common.stream)
            }
            _ => session.finish(status, &text, common.stream),
        },
        Ok(Ending::Reported(status)) => {
            if let Some(why) = &all_failed {
                eprintln!("error: {why}");
                if status == RunStatus::Finished {
                    session.record_status(RunStatus::Failed)?;
                    return Ok(RunStatus::Failed);
                }
            }
            Ok(status)
        }
        Err(ExampleError::Interrupted) => session.finish(RunStatus::Interrupted, "", common.stream),
        Err(err) => {
            if let Some(why) = &all_failed {
                eprintln!("error: {why}");
            }
            session.record_failure(&err);
            Err(err)
        }
    }
}

/// Sets up `--print-prompts`: the offline models, recorded ([`PromptLog`]), a new
/// temporary run directory, in-memory checkpoints, no progress. Returns the directory.
fn prompts_run(common: &mut CommonArgs) -> Result<std::path::PathBuf, ExampleError> {
    let given = CommonArgs::first_given(&[
        (common.model != "offline", "--model"),
        (common.summary_model.is_some(), "--summary-model"),
        (common.resume, "--resume"),
        (common.out.is_some(), "--out"),
        (common.stream, "--stream"),
    ]);
    if let Some(flag) = given {
        return Err(ExampleError::Usage(format!(
            "--print-prompts runs the offline models in a temporary directory: leave out {flag}"
        )));
    }
    PromptLog::process().turn_on();
    let dir = std::env::temp_dir().join(format!(
        "graphkit-prompts-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    common.out = Some(dir.clone());
    common.checkpoint = Some("memory".into());
    common.quiet = true;
    common.offline_delay_ms = 0;
    common.max_concurrency = 1;
    Ok(dir)
}

/// The `--print-prompts` output: per role, a heading and the request body.
fn render_prompts(workflow: &str) -> String {
    let mut out = format!(
        "<!-- generated by `graphkit-research {workflow} --print-prompts`: one full request per model role, \
         as the OpenAI API (openai:gpt-4o) would get it -->\n"
    );
    for (role, body) in PromptLog::process().bodies() {
        out.push_str(&format!("\n#### Role: {role}\n\n```json\n{body}\n```\n"));
    }
    out
}
