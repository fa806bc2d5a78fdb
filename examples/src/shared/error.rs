//! [`ExampleError`]: what can go wrong when a workflow is set up or run.

use std::path::Path;

/// An error of the example workflows and the CLI. Messages say what went wrong and what
/// to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExampleError {
    /// The input file is not valid JSON for the workflow, or breaks one of its rules.
    #[error("invalid input {origin}: {message}")]
    Input {
        /// Where the input came from (a path).
        origin: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A file or directory could not be read or written.
    #[error("cannot {action} {path}: {error}")]
    Io {
        /// What was attempted.
        action: &'static str,
        /// The path.
        path: String,
        /// The underlying error.
        #[source]
        error: std::io::Error,
    },
    /// An option of the CLI or of a workflow is not usable.
    #[error("{0}")]
    Usage(String),
    /// `--resume` cannot continue the run: what is missing is named (the thread, the
    /// database, its write-ahead log, the run directory).
    #[error("cannot resume: {0}")]
    Resume(String),
    /// A research session is already running in this process (post it again once it
    /// ended, or read its status).
    #[error("session {0} is already running; follow it with GET /research/status/{0}")]
    SessionBusy(String),
    /// The run was stopped by Ctrl-C after its last step was checkpointed.
    #[error("interrupted")]
    Interrupted,
    /// A model could not be created or called.
    #[error("model: {0}")]
    Model(#[from] graphkit_llm::LlmError),
    /// The graph failed to run.
    #[error("graph: {0}")]
    Graph(#[from] graphkit::Error),
    /// The graph failed to build (a bug in the workflow: its structure is fixed).
    #[error("graph does not compile: {0}")]
    Build(#[from] graphkit::BuildError),
    /// A checkpointer or store used directly failed.
    #[error("storage: {0}")]
    Storage(#[from] graphkit::error::StorageError),
}

impl ExampleError {
    /// The process exit code for this error: 2 for bad usage, bad input, or a resume that
    /// cannot start (the command line must change; the message says what); 130 when
    /// interrupted; 1 for everything else (a backend that cannot be reached, an I/O or
    /// model failure: the same command may work later).
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::Usage(_) | Self::Input { .. } | Self::Resume(_) => 2,
            Self::Interrupted => 130,
            _ => 1,
        }
    }

    /// An I/O error about `path`.
    pub fn io(action: &'static str, path: &Path, error: std::io::Error) -> Self {
        Self::Io {
            action,
            path: path.display().to_string(),
            error,
        }
    }
}
