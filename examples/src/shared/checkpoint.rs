//! `--checkpoint sqlite:PATH|postgres:URL|memory`: where a run's checkpoints live.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use graphkit::checkpoint::{Checkpointer, InMemorySaver};

use super::ExampleError;

/// Where checkpoints are kept.
///
/// ```
/// use graphkit_examples::shared::CheckpointChoice;
///
/// assert_eq!("memory".parse::<CheckpointChoice>()?, CheckpointChoice::Memory);
/// assert_eq!("sqlite:run/cp.db".parse::<CheckpointChoice>()?, CheckpointChoice::Sqlite("run/cp.db".into()));
/// assert!("redis://x".parse::<CheckpointChoice>().is_err());
/// # Ok::<(), graphkit_examples::shared::ExampleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointChoice {
    /// A SQLite file (created if missing): survives a restart. The default, in the run
    /// directory.
    Sqlite(PathBuf),
    /// A PostgreSQL database (needs the `postgres` feature).
    Postgres(String),
    /// In memory: nothing survives the process, so `--resume` cannot work.
    Memory,
}

impl CheckpointChoice {
    /// `true` when checkpoints outlive the process.
    pub fn is_durable(&self) -> bool {
        !matches!(self, Self::Memory)
    }

    /// Opens the checkpointer (creating the SQLite file's directory).
    ///
    /// # Errors
    /// [`ExampleError::Graph`] when the database cannot be opened;
    /// [`ExampleError::Usage`] for PostgreSQL in a build without the `postgres` feature.
    pub async fn open(&self) -> Result<Arc<dyn Checkpointer>, ExampleError> {
        match self {
            Self::Memory => Ok(Arc::new(InMemorySaver::new())),
            Self::Sqlite(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| ExampleError::io("create", dir, e))?;
                }
                Ok(Arc::new(graphkit::checkpoint::SqliteSaver::open(path).await?))
            }
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => Ok(Arc::new(graphkit::checkpoint::PostgresSaver::connect(url).await?)),
            #[cfg(not(feature = "postgres"))]
            Self::Postgres(_) => Err(ExampleError::Usage(
                "this build has no PostgreSQL support; rebuild with `--features postgres` (cargo run -p graphkit-examples --features postgres ...)".into(),
            )),
        }
    }
}

impl std::str::FromStr for CheckpointChoice {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, ExampleError> {
        let s = s.trim();
        if s == "memory" {
            return Ok(Self::Memory);
        }
        if let Some(path) = s.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
            return Ok(Self::Sqlite(PathBuf::from(path)));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Self::Postgres(s.to_owned()));
        }
        if let Some(url) = s.strip_prefix("postgres:").filter(|u| !u.is_empty()) {
            return Ok(Self::Postgres(url.to_owned()));
        }
        Err(ExampleError::Usage(format!(
            "unknown checkpoint backend {s:?}: use sqlite:PATH, postgres:URL or memory"
        )))
    }
}

impl fmt::Display for CheckpointChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            Self::Postgres(url) => {
                write!(f, "postgres:{}", url.split('@').next_back().unwrap_or(url))
            }
            Self::Memory => f.write_str("memory"),
        }
    }
}
