//! The run directory: where a run's outputs, checkpoints and summary go.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::ExampleError;

/// The default root of run directories, under the current directory (ignored by git in
/// this repository).
pub const DEFAULT_ROOT: &str = "graphkit-runs";

/// A run's output directory (`--out`, by default `graphkit-runs/<workflow>/<thread>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    root: PathBuf,
}

impl RunDir {
    /// The directory `root` (created).
    ///
    /// # Errors
    /// [`ExampleError::Io`] when it cannot be created.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self, ExampleError> {
        let root = root.into();
        std::fs::create_dir_all(&root)
            .map_err(|e| ExampleError::io("create the run directory", &root, e))?;
        // Half-written files of a process killed mid-write (their targets are intact).
        graphkit_tools::remove_stale_temp_files(&root)
            .map_err(|e| ExampleError::io("clean up", &root, e))?;
        Ok(Self { root })
    }

    /// An existing run directory (nothing is created).
    ///
    /// # Errors
    /// [`ExampleError::Usage`] when `root` is not a directory.
    pub(crate) fn open_existing(root: impl Into<PathBuf>) -> Result<Self, ExampleError> {
        let root = root.into();
        if !root.is_dir() {
            return Err(ExampleError::Usage(format!(
                "the run directory {} does not exist",
                root.display()
            )));
        }
        Ok(Self { root })
    }

    /// The default location of a run: `graphkit-runs/<workflow>/<thread>` under the
    /// current directory.
    pub(crate) fn default_for(workflow: &str, thread: &str) -> PathBuf {
        PathBuf::from(DEFAULT_ROOT).join(workflow).join(thread)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// A path inside it.
    pub fn join(&self, relative: impl AsRef<Path>) -> PathBuf {
        self.root.join(relative)
    }

    /// Writes `value` as pretty JSON to `relative`, atomically (a temporary file renamed
    /// into place), so a killed process never leaves half a file.
    ///
    /// # Errors
    /// [`ExampleError::Io`] when the file cannot be written.
    pub(crate) fn write_json(
        &self,
        relative: impl AsRef<Path>,
        value: &impl Serialize,
    ) -> Result<PathBuf, ExampleError> {
        let path = self.root.join(relative);
        write_json_atomic(&path, value)?;
        Ok(path)
    }
}

/// Writes `value` as pretty JSON to `path` through a temporary file and a rename.
///
/// # Errors
/// [`ExampleError::Io`] when the file cannot be written.
pub(crate) fn write_json_atomic(path: &Path, value: &impl Serialize) -> Result<(), ExampleError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ExampleError::io("serialize", path, std::io::Error::other(e)))?;
    write_text_atomic(path, &text)
}

/// Writes `text` to `path` through a temporary file and a rename (parents created). On
/// failure `path` keeps its previous content and the temporary file is removed
/// ([`graphkit_tools::write_atomic`]).
///
/// # Errors
/// [`ExampleError::Io`] when the file cannot be written.
pub(crate) fn write_text_atomic(path: &Path, text: &str) -> Result<(), ExampleError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| ExampleError::io("create", dir, e))?;
    }
    graphkit_tools::write_atomic(path, text.as_bytes())
        .map_err(|e| ExampleError::io("write", path, e))
}

/// Where a run stands, as recorded in `run.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// A process is running it, or was until it was killed (see [`RunManifest::pid`]).
    #[default]
    Running,
    /// Every unit finished.
    Finished,
    /// At least one unit failed; `--resume` continues it.
    Failed,
    /// Stopped by Ctrl-C after checkpointing; `--resume` continues it.
    Interrupted,
}

impl RunStatus {
    /// The process exit code for a run that ended so: 0 finished, 1 failed (or still
    /// running), 130 interrupted (as a shell reports SIGINT).
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Finished => 0,
            Self::Failed | Self::Running => 1,
            Self::Interrupted => 130,
        }
    }

    /// The status as shown by `graphkit-research runs`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
        }
    }
}

/// `run.json`: what a run was started with, so `--resume` can continue it with the same
/// input, models and options, and where it stands.
///
/// Paths are stored relative to the run directory where they are inside it (the SQLite
/// checkpoints: `sqlite:checkpoints.sqlite`), so a moved or copied run folder resumes from
/// its own database.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunManifest {
    /// The workflow (`entity-intel`).
    pub workflow: String,
    /// The run's thread id.
    pub thread: String,
    /// The `--model` spec.
    pub model: String,
    /// The `--summary-model` spec, when one was given.
    #[serde(default)]
    pub summary_model: Option<String>,
    /// The `--checkpoint` backend (a SQLite path relative to the run directory when the
    /// file is inside it; a PostgreSQL URL without its password).
    pub checkpoint: String,
    /// When the run started (RFC 3339).
    pub created_at: String,
    /// The input, as given.
    pub input: serde_json::Value,
    /// Every run-defining option's value, by its CLI name (`max_concurrency`,
    /// `todo_timeout`, ...): what `--resume` uses for options it is not given.
    #[serde(default)]
    pub options: serde_json::Map<String, serde_json::Value>,
    /// Where the run stands.
    #[serde(default)]
    pub status: RunStatus,
    /// The process that last ran it.
    #[serde(default)]
    pub pid: Option<u32>,
    /// When the status last changed (RFC 3339).
    #[serde(default)]
    pub(crate) updated_at: String,
}

impl RunManifest {
    /// The manifest's file name in the run directory.
    pub(crate) const FILE: &'static str = "run.json";

    /// Reads the manifest of the run in `dir`, if there is one.
    ///
    /// # Errors
    /// [`ExampleError::Io`] for an unreadable file; [`ExampleError::Input`] for a corrupt one.
    pub fn read(dir: &Path) -> Result<Option<Self>, ExampleError> {
        let path = dir.join(Self::FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| ExampleError::Input {
                    origin: path.display().to_string(),
                    message: format!("{e} (run.json is written by graphkit-research; restore it from a copy of the run folder)"),
                }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(ExampleError::io("read", &path, e)),
        }
    }

    /// Writes the manifest into `dir` (atomically).
    ///
    /// # Errors
    /// [`ExampleError::Io`] when it cannot be written.
    pub fn write(&self, dir: &Path) -> Result<(), ExampleError> {
        write_json_atomic(&dir.join(Self::FILE), self)
    }

    /// `true` when a process that last ran it is alive (Linux: `/proc/PID` exists and it
    /// is not this process).
    pub(crate) fn process_alive(&self) -> bool {
        self.pid.is_some_and(|pid| {
            pid != std::process::id() && Path::new("/proc").join(pid.to_string()).exists()
        })
    }
}
