//! `--checkpoint sqlite:PATH|postgres:URL|memory`: where a run's checkpoints live.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use graphkit::checkpoint::{Checkpointer, InMemorySaver, SqliteSaver};

use super::ExampleError;
use super::run_dir::RunStatus;

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
    pub(crate) fn is_durable(&self) -> bool {
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

/// An open checkpointer, closed cleanly with [`close`](Self::close) at the end of a run
/// (SQLite then folds its write-ahead log into the database file).
pub(crate) struct OpenCheckpointer {
    /// The checkpointer.
    pub saver: Arc<dyn Checkpointer>,
    sqlite: Option<SqliteSaver>,
}

impl fmt::Debug for OpenCheckpointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenCheckpointer")
            .field("sqlite", &self.sqlite.is_some())
            .finish_non_exhaustive()
    }
}

impl OpenCheckpointer {
    /// Closes the database: SQLite checkpoints its write-ahead log into the file and
    /// removes it, so the database file alone holds the run.
    pub async fn close(self) {
        if let Some(sqlite) = self.sqlite {
            sqlite.close().await;
        }
    }
}

impl CheckpointChoice {
    /// The backend as `run.json` records it: a SQLite path inside `run_dir` relative to
    /// it (`sqlite:checkpoints.sqlite`), other paths absolute; a PostgreSQL URL with its
    /// password replaced by `***` (never stored).
    pub(crate) fn to_manifest(&self, run_dir: &Path) -> String {
        match self {
            Self::Sqlite(path) => {
                let absolute = std::path::absolute(path).unwrap_or_else(|_| path.clone());
                let dir = std::path::absolute(run_dir).unwrap_or_else(|_| run_dir.to_path_buf());
                let stored = absolute
                    .strip_prefix(&dir)
                    .map_or(absolute.clone(), Path::to_path_buf);
                format!("sqlite:{}", stored.display())
            }
            Self::Postgres(url) => format!("postgres:{}", redact_password(url)),
            Self::Memory => "memory".into(),
        }
    }

    /// The backend recorded in a `run.json` of `run_dir`: relative SQLite paths are
    /// resolved against `run_dir` (where the run folder is now).
    ///
    /// # Errors
    /// [`ExampleError::Usage`] for an unknown backend, or a PostgreSQL URL whose password
    /// was not stored (pass `--checkpoint` again).
    pub(crate) fn from_manifest(recorded: &str, run_dir: &Path) -> Result<Self, ExampleError> {
        match recorded.parse::<Self>()? {
            Self::Sqlite(path) if path.is_relative() => Ok(Self::Sqlite(run_dir.join(path))),
            Self::Postgres(url) if url.contains(":***@") => Err(ExampleError::Usage(format!(
                "run.json does not keep the PostgreSQL password of {url}; pass --checkpoint postgres:URL with the password again"
            ))),
            other => Ok(other),
        }
    }

    /// Opens the checkpointer for a new run (creating the SQLite file), or, with
    /// `resuming = Some(status)` (the status of the run that last wrote the database, see
    /// [`RunSession::checkpoint_status`](super::RunSession::checkpoint_status)), checks first that the
    /// run's checkpoints are really there: a missing, empty or truncated SQLite file, or
    /// a missing write-ahead log of a run that was killed, is an error naming the file,
    /// never a fresh database.
    ///
    /// # Errors
    /// [`ExampleError::Resume`] for the checks above; as [`open`](Self::open).
    pub(crate) async fn open_for_run(
        &self,
        resuming: Option<RunStatus>,
    ) -> Result<OpenCheckpointer, ExampleError> {
        match (self, resuming) {
            (Self::Sqlite(path), Some(status)) => {
                check_sqlite_file(path, status)?;
                let sqlite = SqliteSaver::open(path).await.map_err(|e| {
                    ExampleError::Resume(format!(
                        "cannot open the checkpoint database {}: {e}",
                        path.display()
                    ))
                })?;
                Ok(OpenCheckpointer {
                    saver: Arc::new(sqlite.clone()),
                    sqlite: Some(sqlite),
                })
            }
            (Self::Sqlite(path), None) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir).map_err(|e| ExampleError::io("create", dir, e))?;
                }
                let sqlite = SqliteSaver::open(path).await?;
                Ok(OpenCheckpointer {
                    saver: Arc::new(sqlite.clone()),
                    sqlite: Some(sqlite),
                })
            }
            _ => Ok(OpenCheckpointer {
                saver: self.open().await?,
                sqlite: None,
            }),
        }
    }
}

/// The checks of a SQLite checkpoint file before a resume.
fn check_sqlite_file(path: &Path, status: RunStatus) -> Result<(), ExampleError> {
    let shown = path.display();
    let header = std::fs::File::open(path).and_then(|file| {
        use std::io::Read;
        let len = file.metadata()?.len();
        let mut head = Vec::with_capacity(100);
        file.take(100).read_to_end(&mut head)?;
        Ok((head, len))
    });
    let (bytes, actual) = match header {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ExampleError::Resume(format!(
                "the checkpoint database {shown} is missing; it holds the run's progress (copy it back into the run folder, or pass --checkpoint with where it is)"
            )));
        }
        Err(e) => return Err(ExampleError::io("read", path, e)),
    };
    if actual == 0 {
        return Err(ExampleError::Resume(format!(
            "the checkpoint database {shown} is empty (0 bytes): the run's checkpoints are gone; restore the file from a copy, or start a new run without --resume"
        )));
    }
    if !bytes.starts_with(b"SQLite format 3\0") || bytes.len() < 100 {
        return Err(ExampleError::Resume(format!(
            "the checkpoint database {shown} is not a SQLite database (damaged or truncated); restore it from a copy of the run folder"
        )));
    }
    let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([
        bytes[28], bytes[29], bytes[30], bytes[31],
    ]));
    let expected = page_size * pages;
    let size_is_valid = bytes[92..96] == bytes[24..28];
    if size_is_valid && actual < expected {
        return Err(ExampleError::Resume(format!(
            "the checkpoint database {shown} is truncated: {actual} bytes of {expected}; restore it from a copy of the run folder"
        )));
    }
    let wal = PathBuf::from(format!("{}-wal", path.display()));
    let wal_mode = bytes[18] == 2;
    if wal_mode && status == RunStatus::Running && !wal.exists() {
        return Err(ExampleError::Resume(format!(
            "the write-ahead log {} is missing: the run was stopped without closing {shown}, so its latest checkpoints are in that file; copy it (and {shown}-shm) next to the database",
            wal.display()
        )));
    }
    Ok(())
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_json_keeps_sqlite_paths_relative_and_postgres_urls_without_passwords() {
        let dir = Path::new("/runs/a");
        let inside = CheckpointChoice::Sqlite(dir.join("checkpoints.sqlite"));
        assert_eq!(inside.to_manifest(dir), "sqlite:checkpoints.sqlite");
        assert_eq!(
            CheckpointChoice::from_manifest("sqlite:checkpoints.sqlite", Path::new("/moved/b"))
                .ok(),
            Some(CheckpointChoice::Sqlite(
                "/moved/b/checkpoints.sqlite".into()
            ))
        );
        let outside = CheckpointChoice::Sqlite("/data/cp.sqlite".into());
        assert_eq!(outside.to_manifest(dir), "sqlite:/data/cp.sqlite");

        let pg = CheckpointChoice::Postgres("postgres://app:secret@db:5432/x".into());
        let recorded = pg.to_manifest(dir);
        assert_eq!(recorded, "postgres:postgres://app:***@db:5432/x");
        assert!(CheckpointChoice::from_manifest(&recorded, dir).is_err());
        let no_password =
            CheckpointChoice::Postgres("postgres://postgres@127.0.0.1:5432/test".into());
        assert_eq!(
            CheckpointChoice::from_manifest(&no_password.to_manifest(dir), dir).ok(),
            Some(no_password)
        );
    }
}
