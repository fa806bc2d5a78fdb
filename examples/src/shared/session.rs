//! [`RunSession`]: one invocation of a workflow from the command line — where its run
//! directory is, which options it runs with, its `run.json`, and the command that resumes
//! it.
//!
//! A workflow's `main` calls, in order: [`RunSession::begin`] (finds or creates the run
//! directory; a failed `--resume` creates nothing), [`RunSession::option`] for each
//! run-defining option (the value given now wins; on `--resume` an option left out comes
//! from `run.json`), [`RunSession::checkpoint`], [`RunSession::record_start`], and at the
//! end [`RunSession::record_status`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::run_dir::{DEFAULT_ROOT, RunDir, RunManifest, RunStatus, write_text_atomic};
use super::time::{now_ms, rfc3339};
use super::{CheckpointChoice, ExampleError};

/// The names of the options given on the command line (clap argument ids, e.g.
/// `max_concurrency`), as opposed to left at their defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenOptions(BTreeSet<String>);

impl GivenOptions {
    /// The options a subcommand's matches got from the command line.
    pub(crate) fn from_matches(matches: &clap::ArgMatches) -> Self {
        Self(
            matches
                .ids()
                .filter(|id| {
                    matches.value_source(id.as_str())
                        == Some(clap::parser::ValueSource::CommandLine)
                })
                .map(|id| id.as_str().to_owned())
                .collect(),
        )
    }

    /// `true` when `name` was given.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

/// What a command line asks for.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The workflow (`entity-intel`): the subcommand and the folder under the root.
    pub workflow: &'static str,
    /// Where default run directories go ([`DEFAULT_ROOT`] under the current directory).
    pub root: PathBuf,
    /// `--thread`.
    pub thread: Option<String>,
    /// `--out`.
    pub out: Option<PathBuf>,
    /// `--resume`.
    pub resume: bool,
    /// The options given on the command line.
    pub given: GivenOptions,
}

impl RunRequest {
    /// A request with the default root.
    pub fn new(workflow: &'static str) -> Self {
        Self {
            workflow,
            root: PathBuf::from(DEFAULT_ROOT),
            thread: None,
            out: None,
            resume: false,
            given: GivenOptions::default(),
        }
    }
}

/// One invocation of a workflow: a new run, or the continuation of one.
///
/// ```
/// use graphkit_examples::shared::{RunRequest, RunSession, RunStatus};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let root = tempfile::tempdir()?;
/// let mut session = RunSession::begin(RunRequest {
///     root: root.path().into(),
///     thread: Some("t1".into()),
///     ..RunRequest::new("due-diligence")
/// })?;
/// let max_depth: u32 = session.option("max_depth", 3)?; // run.json's value on --resume
/// let checkpoint = session.checkpoint(None)?; // sqlite:<run dir>/checkpoints.sqlite
/// session.record_start(&checkpoint, serde_json::json!({"topic": "x"}))?;
/// // ... run the graph, with a StopSignal for Ctrl-C ...
/// session.record_status(RunStatus::Interrupted)?;
/// assert_eq!(max_depth, 3);
/// assert_eq!(session.resume_command(), "graphkit-research due-diligence --resume --thread t1");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct RunSession {
    workflow: &'static str,
    root: PathBuf,
    thread: String,
    dir: RunDir,
    previous: Option<RunManifest>,
    given: GivenOptions,
    options: Map<String, Value>,
}

impl RunSession {
    /// Finds the run to resume, or creates the directory of a new run.
    ///
    /// A new run gets `--thread` (or a fresh id) and `--out` (or
    /// `ROOT/<workflow>/<thread>`); a run started with an `--out` elsewhere is noted in
    /// `ROOT/<workflow>/<thread>.location`, so `--resume --thread ID` finds it.
    ///
    /// # Errors
    /// [`ExampleError::Resume`] when there is no run to resume (saying which `--out` to
    /// pass); nothing is created then. [`ExampleError::Io`] when a directory cannot be
    /// created.
    pub fn begin(request: RunRequest) -> Result<Self, ExampleError> {
        let RunRequest {
            workflow,
            root,
            thread,
            out,
            resume,
            given,
        } = request;
        if resume {
            let (dir, previous) = locate(workflow, &root, thread.as_deref(), out.as_deref())?;
            return Ok(Self {
                workflow,
                root,
                thread: previous.thread.clone(),
                dir,
                previous: Some(previous),
                given,
                options: Map::new(),
            });
        }
        let thread = thread.unwrap_or_else(|| new_thread(workflow));
        let default = root.join(workflow).join(&thread);
        let dir = RunDir::create(out.clone().unwrap_or_else(|| default.clone()))?;
        if out.is_some() && !same_path(dir.path(), &default) {
            let location = root.join(workflow).join(format!("{thread}.location"));
            let target = std::path::absolute(dir.path()).unwrap_or_else(|_| dir.path().into());
            write_text_atomic(&location, &format!("{}\n", target.display()))?;
        }
        Ok(Self {
            workflow,
            root,
            thread,
            dir,
            previous: None,
            given,
            options: Map::new(),
        })
    }

    /// The run's thread id.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The run directory.
    pub fn dir(&self) -> &RunDir {
        &self.dir
    }

    /// `true` when this invocation continues an earlier run.
    pub(crate) fn is_resume(&self) -> bool {
        self.previous.is_some()
    }

    /// What [`CheckpointChoice::open_for_run`] needs: `None` for a new run, the thread
    /// on `--resume` (its database is checked before the run continues).
    pub(crate) fn resuming_thread(&self) -> Option<&str> {
        self.is_resume().then_some(self.thread.as_str())
    }

    /// The input the earlier run recorded (on `--resume`).
    pub(crate) fn saved_input(&self) -> Option<&Value> {
        self.previous.as_ref().map(|m| &m.input)
    }

    /// The value of the run-defining option `name` (its clap id): `cli_value` when it was
    /// given on the command line or this is a new run; on `--resume` without it, the value
    /// `run.json` recorded (or `cli_value`, the default, when it recorded none). The value
    /// used is recorded for the next `run.json`.
    ///
    /// # Errors
    /// [`ExampleError::Input`] when `run.json` holds a value of the wrong type.
    pub fn option<T: Serialize + DeserializeOwned>(
        &mut self,
        name: &str,
        cli_value: T,
    ) -> Result<T, ExampleError> {
        let saved = self
            .previous
            .as_ref()
            .filter(|_| !self.given.contains(name))
            .and_then(|m| saved_option(m, name));
        let value = match saved {
            Some(saved) => serde_json::from_value(saved).map_err(|e| ExampleError::Input {
                origin: self.dir.join(RunManifest::FILE).display().to_string(),
                message: format!("option `{name}`: {e}"),
            })?,
            None => cli_value,
        };
        if let Ok(json) = serde_json::to_value(&value) {
            self.options.insert(name.to_owned(), json);
        }
        Ok(value)
    }

    /// The checkpoint backend: `--checkpoint` when given; on `--resume`, the one
    /// `run.json` recorded (a PostgreSQL run resumes from PostgreSQL; a SQLite path is
    /// resolved inside the run folder, wherever it now is); else SQLite in the run
    /// directory.
    ///
    /// # Errors
    /// [`ExampleError::Usage`] for an unknown backend or `--resume` with `memory`.
    pub fn checkpoint(&mut self, cli: Option<&str>) -> Result<CheckpointChoice, ExampleError> {
        let choice = match (cli, &self.previous) {
            (Some(spec), _) => spec.parse()?,
            (None, Some(previous)) => {
                CheckpointChoice::from_manifest(&previous.checkpoint, self.dir.path())?
            }
            (None, None) => CheckpointChoice::Sqlite(self.dir.join("checkpoints.sqlite")),
        };
        if self.is_resume() && !choice.is_durable() {
            return Err(ExampleError::Usage(
                "--resume needs durable checkpoints: use sqlite:PATH or postgres:URL".into(),
            ));
        }
        Ok(choice)
    }

    /// Writes `run.json` for this invocation: status `running`, this process's id, the
    /// options used, the input; `createdAt` is kept on a resume.
    ///
    /// # Errors
    /// [`ExampleError::Io`] when it cannot be written.
    pub fn record_start(
        &self,
        checkpoint: &CheckpointChoice,
        input: Value,
    ) -> Result<(), ExampleError> {
        let text = |name: &str| {
            self.options
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let now = rfc3339(now_ms());
        let manifest = RunManifest {
            workflow: self.workflow.to_owned(),
            thread: self.thread.clone(),
            model: text("model").unwrap_or_else(|| "offline".into()),
            summary_model: text("summary_model"),
            checkpoint: checkpoint.to_manifest(self.dir.path()),
            created_at: self
                .previous
                .as_ref()
                .map_or_else(|| now.clone(), |m| m.created_at.clone()),
            input,
            options: self.options.clone(),
            status: RunStatus::Running,
            pid: Some(std::process::id()),
            updated_at: now,
        };
        manifest.write(self.dir.path())
    }

    /// Records how the run ended in `run.json`.
    ///
    /// # Errors
    /// [`ExampleError::Io`] when it cannot be read or written.
    pub fn record_status(&self, status: RunStatus) -> Result<(), ExampleError> {
        let Some(mut manifest) = RunManifest::read(self.dir.path())? else {
            return Ok(());
        };
        manifest.status = status;
        manifest.updated_at = rfc3339(now_ms());
        manifest.write(self.dir.path())
    }

    /// Records that this invocation ended with `error`: a resume that could not start
    /// (an [`ExampleError::Resume`]) leaves `run.json` as it was; anything else marks
    /// the run failed. Errors writing `run.json` are ignored: `error` is what to report.
    pub(crate) fn record_failure(&self, error: &ExampleError) {
        let _ = match (error, &self.previous) {
            (ExampleError::Resume(_), Some(previous)) => previous.write(self.dir.path()),
            _ => self.record_status(RunStatus::Failed),
        };
    }

    /// Ends the invocation: records `status` in `run.json`, prints `summary` (to stdout,
    /// or to stderr with `--stream`, whose stdout carries JSON lines only), and for a
    /// failed or interrupted run the exact command that continues it. Returns `status`
    /// (its [`exit_code`](RunStatus::exit_code) is the process's).
    ///
    /// # Errors
    /// [`ExampleError::Io`] when `run.json` cannot be written.
    pub fn finish(
        &self,
        status: RunStatus,
        summary: &str,
        stream: bool,
    ) -> Result<RunStatus, ExampleError> {
        self.record_status(status)?;
        if stream {
            eprint!("{summary}");
        } else {
            super::stdout::print_text(summary);
        }
        match status {
            RunStatus::Interrupted => eprintln!(
                "interrupted; every finished step is checkpointed. Continue with:\n  {}",
                self.resume_command()
            ),
            RunStatus::Failed | RunStatus::Running => eprintln!(
                "some units failed; continue with:\n  {}",
                self.resume_command()
            ),
            RunStatus::Finished => {}
        }
        Ok(status)
    }

    /// Ends an invocation whose every model call failed: records the run as failed,
    /// prints `summary` as [`finish`](Self::finish) does, then `why` (the last error).
    /// The steps that ran without the model are done (todos blocked, a fallback report), so
    /// the advice is a new run once the model answers, not a resume. Returns
    /// [`RunStatus::Failed`].
    ///
    /// # Errors
    /// [`ExampleError::Io`] when `run.json` cannot be written.
    pub(crate) fn finish_failed(
        &self,
        why: &str,
        summary: &str,
        stream: bool,
    ) -> Result<RunStatus, ExampleError> {
        self.finish_unmet(
            why,
            "its steps ran without answers from the model (a resume would not redo them); start a new run once the model answers again",
            summary,
            stream,
        )
    }

    /// Ends an invocation whose run ended but left something it had to do undone (in
    /// entity-intel, a required todo blocked): records the run as failed, prints `summary`
    /// as [`finish`](Self::finish) does, then `why` and `advice`. Every artifact the run
    /// wrote stays. Returns [`RunStatus::Failed`].
    ///
    /// # Errors
    /// [`ExampleError::Io`] when `run.json` cannot be written.
    pub(crate) fn finish_unmet(
        &self,
        why: &str,
        advice: &str,
        summary: &str,
        stream: bool,
    ) -> Result<RunStatus, ExampleError> {
        self.record_status(RunStatus::Failed)?;
        if stream {
            eprint!("{summary}");
        } else {
            super::stdout::print_text(summary);
        }
        eprintln!("error: {why}\nthe run is recorded as failed: {advice}");
        Ok(RunStatus::Failed)
    }

    /// The line that opens a run's progress: `{what}, thread T, {details}, checkpoints C,
    /// outputs in DIR`.
    pub(crate) fn start_line(
        &self,
        what: &str,
        details: &str,
        checkpoint: &CheckpointChoice,
    ) -> String {
        format!(
            "{what}, thread {}, {details}, checkpoints {checkpoint}, outputs in {}",
            self.thread,
            self.dir.path().display()
        )
    }

    /// The text that ends a run writing `run_summary.json`: `rendered` (the summary for
    /// the terminal), then the summary file's path.
    pub(crate) fn summary_text(&self, rendered: &str) -> String {
        format!(
            "{rendered}summary: {}\n",
            self.dir.join("run_summary.json").display()
        )
    }

    /// The exact command that continues this run.
    pub fn resume_command(&self) -> String {
        resume_command(self.workflow, &self.root, &self.thread, self.dir.path())
    }
}

/// `graphkit-research WORKFLOW --resume --thread T [--out DIR]` (`--out` when the run is
/// not in its default place under `root`).
pub fn resume_command(workflow: &str, root: &Path, thread: &str, dir: &Path) -> String {
    let mut command = format!(
        "graphkit-research {workflow} --resume --thread {}",
        shell_word(thread)
    );
    if !same_path(dir, &root.join(workflow).join(thread)) {
        command.push_str(&format!(
            " --out {}",
            shell_word(&dir.display().to_string())
        ));
    }
    command
}

/// Finds the run `--resume` asks for. Creates nothing.
fn locate(
    workflow: &str,
    root: &Path,
    thread: Option<&str>,
    out: Option<&Path>,
) -> Result<(RunDir, RunManifest), ExampleError> {
    let dir = match (out, thread) {
        (Some(out), _) => out.to_path_buf(),
        (None, None) => {
            return Err(ExampleError::Usage(
                "--resume needs --thread ID (or --out DIR of the run)".into(),
            ));
        }
        (None, Some(thread)) => {
            let default = root.join(workflow).join(thread);
            let location = root.join(workflow).join(format!("{thread}.location"));
            if default.join(RunManifest::FILE).is_file() {
                default
            } else if let Ok(text) = std::fs::read_to_string(&location) {
                let recorded = PathBuf::from(text.trim());
                if !recorded.join(RunManifest::FILE).is_file() {
                    return Err(ExampleError::Resume(format!(
                        "thread {thread} was started with --out {}, which no longer holds a run.json; if you moved the run folder, pass --out NEW_DIR",
                        recorded.display()
                    )));
                }
                recorded
            } else {
                return Err(ExampleError::Resume(format!(
                    "no run of thread {thread} in {} and no record of one started elsewhere; if it was started with --out DIR, pass --resume --thread {thread} --out DIR",
                    default.display()
                )));
            }
        }
    };
    let Some(manifest) = RunManifest::read(&dir)? else {
        return Err(ExampleError::Resume(format!(
            "nothing to resume in {}: no run.json there; pass the --out of the run to continue",
            dir.display()
        )));
    };
    if manifest.workflow != workflow {
        return Err(ExampleError::Resume(format!(
            "{} holds a {} run, not {workflow}; use `graphkit-research {} --resume ...`",
            dir.display(),
            manifest.workflow,
            manifest.workflow
        )));
    }
    if let Some(thread) = thread.filter(|t| *t != manifest.thread) {
        return Err(ExampleError::Resume(format!(
            "{} holds thread {}, not {thread}; pass --thread {} (or the --out of thread {thread})",
            dir.display(),
            manifest.thread,
            manifest.thread
        )));
    }
    Ok((RunDir::open_existing(dir)?, manifest))
}

/// What `run.json` recorded for option `name` (older manifests: the model fields).
fn saved_option(manifest: &RunManifest, name: &str) -> Option<Value> {
    manifest.options.get(name).cloned().or_else(|| match name {
        "model" => Some(Value::String(manifest.model.clone())),
        "summary_model" => Some(
            manifest
                .summary_model
                .clone()
                .map_or(Value::Null, Value::String),
        ),
        _ => None,
    })
}

/// A new thread id: `<prefix>-<utc time>-<pid>`, the prefix made of the workflow's initials
/// (`ei` for entity-intel).
pub fn new_thread(workflow: &str) -> String {
    let prefix: String = workflow
        .split('-')
        .filter_map(|w| w.chars().next())
        .collect();
    let stamp: String = rfc3339(now_ms())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    format!("{prefix}-{stamp}-{}", std::process::id())
}

fn same_path(a: &Path, b: &Path) -> bool {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    abs(a) == abs(b)
}

/// `word` quoted for a POSIX shell when it needs quoting.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+".contains(c))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_command_names_out_only_for_runs_outside_the_default_place() {
        let root = Path::new("graphkit-runs");
        assert_eq!(
            resume_command(
                "entity-intel",
                root,
                "t1",
                Path::new("graphkit-runs/entity-intel/t1")
            ),
            "graphkit-research entity-intel --resume --thread t1"
        );
        assert_eq!(
            resume_command("entity-intel", root, "t1", Path::new("/tmp/my run")),
            "graphkit-research entity-intel --resume --thread t1 --out '/tmp/my run'"
        );
    }
}
