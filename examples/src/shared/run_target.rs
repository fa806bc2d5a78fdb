//! [`RunTarget`]: where one run of a workflow goes and how it is driven — its thread, run
//! directory and checkpointer, whether it continues an earlier run, `--stream`, progress
//! and Ctrl-C. Every workflow's runner options carry one next to their own fields.

use std::sync::Arc;

use graphkit::checkpoint::Checkpointer;

use super::{CommonArgs, Progress, RunDir, RunSession, StopSignal};

/// The run fields every workflow's runner options share.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::checkpoint::InMemorySaver;
/// use graphkit_examples::shared::{RunDir, RunTarget};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let target = RunTarget::new("t1", RunDir::create(dir.path())?, Arc::new(InMemorySaver::new()));
/// assert!(!target.resume && !target.stream);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RunTarget {
    /// The run's thread id.
    pub thread: String,
    /// Where outputs go.
    pub run_dir: RunDir,
    /// Where checkpoints go.
    pub checkpointer: Arc<dyn Checkpointer>,
    /// Continue the thread instead of refusing to touch it.
    pub resume: bool,
    /// Print every node update as a JSON line on stdout (`--stream`).
    pub stream: bool,
    /// Progress lines on stderr.
    pub progress: Progress,
    /// Stops the run cleanly (Ctrl-C): the run stops once its step in progress is
    /// checkpointed, with [`ExampleError::Interrupted`](super::ExampleError::Interrupted).
    pub stop: StopSignal,
}

impl RunTarget {
    /// A new run on `thread` (not a resume), without JSON lines, progress or Ctrl-C: for
    /// tests and for runs driven from code.
    pub fn new(
        thread: impl Into<String>,
        run_dir: RunDir,
        checkpointer: Arc<dyn Checkpointer>,
    ) -> Self {
        Self {
            thread: thread.into(),
            run_dir,
            checkpointer,
            resume: false,
            stream: false,
            progress: Progress::default(),
            stop: StopSignal::new(),
        }
    }

    /// The target of a command-line run: the session's thread, run directory and resume,
    /// `--stream` from `common`, and a [`StopSignal`] on Ctrl-C (quiet with `--quiet`).
    /// Must be called inside a tokio runtime.
    pub(crate) fn of_session(
        session: &RunSession,
        checkpointer: Arc<dyn Checkpointer>,
        common: &CommonArgs,
        progress: Progress,
    ) -> Self {
        Self {
            thread: session.thread().to_owned(),
            run_dir: session.dir().clone(),
            checkpointer,
            resume: session.is_resume(),
            stream: common.stream,
            progress,
            stop: StopSignal::on_ctrl_c(common.quiet),
        }
    }
}

impl std::fmt::Debug for RunTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTarget")
            .field("thread", &self.thread)
            .field("run_dir", &self.run_dir)
            .field("resume", &self.resume)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}
