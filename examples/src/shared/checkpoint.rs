//! `--checkpoint sqlite:PATH|postgres:URL|memory`: where a run's checkpoints live.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use graphkit::checkpoint::{Checkpointer, InMemorySaver, SqliteSaver};

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
    /// `resuming = Some(thread)`, for a resume of `thread`: a SQLite file is first opened
    /// read-only and SQLite is asked whether it is usable ([`check_sqlite_database`]); a
    /// resume is refused only when SQLite says it is not (or the file is missing), never
    /// from file sizes or from which `-wal` file exists, and never with a fresh database.
    ///
    /// # Errors
    /// [`ExampleError::Resume`] when SQLite finds the file unusable; as [`open`](Self::open).
    pub(crate) async fn open_for_run(
        &self,
        resuming: Option<&str>,
    ) -> Result<OpenCheckpointer, ExampleError> {
        match (self, resuming) {
            (Self::Sqlite(path), Some(thread)) => {
                let (checked, thread) = (path.clone(), thread.to_owned());
                tokio::task::spawn_blocking(move || check_sqlite_database(&checked, &thread))
                    .await
                    .map_err(|e| {
                        ExampleError::Resume(format!("checking {}: {e}", path.display()))
                    })??;
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

/// Asks SQLite whether the checkpoint database at `path` can be resumed from, before
/// anything opens it for writing: the file is opened read-only (nothing is created,
/// checkpointed or removed, so a refused resume leaves the run folder as it was) and
/// SQLite answers three questions:
///
/// 1. `PRAGMA quick_check`: is the file, read through its write-ahead log if there is one,
///    a sound database? (Pages SQLite has not yet copied from `-wal` into the file count
///    as there: a file shorter than its header says after a full disk is fine when the
///    log holds the rest.)
/// 2. The schema: does it hold graphkit's checkpoint tables?
/// 3. The last checkpoint: can the newest checkpoint of `thread` (or of its per-bundle
///    threads `thread--…`) be read, payload included?
///
/// A missing `-wal` file is not a reason to refuse: after a clean close, or after any
/// other program opened and closed the file (the `sqlite3` shell), the log is folded into
/// the file and removed; if it was deleted by hand, the file still holds a consistent,
/// older state, and the run continues from its last checkpoint there. Whether the thread
/// has checkpoints at all is the workflow's question (a new run, or a refusal naming the
/// thread).
///
/// # Errors
/// [`ExampleError::Resume`] naming the file and what SQLite said.
pub(crate) fn check_sqlite_database(path: &Path, thread: &str) -> Result<(), ExampleError> {
    // A read-only connection to a WAL database creates the `-wal` and `-shm` files when
    // they are missing; those it created (empty) are removed once it is closed.
    let (wal, shm) = (sidecar(path, "-wal"), sidecar(path, "-shm"));
    let (had_wal, had_shm) = (wal.exists(), shm.exists());
    let checked = ask_sqlite(path, thread);
    if !had_wal && std::fs::metadata(&wal).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&wal);
    }
    if !had_shm {
        let _ = std::fs::remove_file(&shm);
    }
    checked
}

/// `path` with `suffix` appended to its file name (`checkpoints.sqlite-wal`).
fn sidecar(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The questions of [`check_sqlite_database`], on a read-only connection closed on return.
fn ask_sqlite(path: &Path, thread: &str) -> Result<(), ExampleError> {
    use rusqlite::{Connection, OpenFlags, OptionalExtension};

    let shown = path.display();
    let len = match std::fs::metadata(path) {
        Ok(meta) => meta.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ExampleError::Resume(format!(
                "the checkpoint database {shown} is missing; it holds the run's progress (copy it back into the run folder, or pass --checkpoint with where it is)"
            )));
        }
        Err(e) => return Err(ExampleError::io("read", path, e)),
    };
    let restore = "restore it (with its -wal file, if there is one) from a copy of the run folder, or start a new run without --resume";
    let unusable = |what: String| {
        ExampleError::Resume(format!(
            "SQLite cannot use the checkpoint database {shown}: {what}{}; {restore}",
            size_note(path, len)
        ))
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| unusable(e.to_string()))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| unusable(e.to_string()))?;

    // 1. Is it a sound database?
    let problems: Vec<String> = conn
        .prepare("PRAGMA quick_check(5)")
        .and_then(|mut statement| {
            statement
                .query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| unusable(e.to_string()))?;
    if problems != ["ok"] {
        return Err(unusable(format!(
            "its quick_check reports {}",
            problems.join("; ")
        )));
    }

    // 2. Does it hold checkpoints?
    let tables: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' \
             AND name IN ('graphkit_checkpoints', 'graphkit_checkpoint_writes')",
            [],
            |row| row.get(0),
        )
        .map_err(|e| unusable(e.to_string()))?;
    if tables < 2 {
        let wal = sidecar(path, "-wal");
        let no_log = std::fs::metadata(&wal).map_or(true, |m| m.len() == 0);
        return Err(ExampleError::Resume(if len == 0 && no_log {
            format!(
                "the checkpoint database {shown} is empty (0 bytes, no tables): the run's checkpoints are gone; {restore}"
            )
        } else if no_log {
            format!(
                "{shown} holds no graphkit checkpoint tables, and there is no write-ahead log {} next to it: if the run was killed before SQLite copied its log into the file, its checkpoints are in that log (copy it back next to the database); otherwise {restore}, or pass --checkpoint with where the run's checkpoints are",
                wal.display()
            )
        } else {
            format!(
                "{shown} holds no graphkit checkpoint tables: it is not the run's checkpoint database; {restore}, or pass --checkpoint with where the run's checkpoints are"
            )
        }));
    }

    // 3. Can the thread's last checkpoint be read?
    conn.query_row(
        "SELECT length(payload), payload FROM graphkit_checkpoints \
         WHERE thread_id = ?1 OR substr(thread_id, 1, length(?1) + 2) = ?1 || '--' \
         ORDER BY created_at_ms DESC, rowid DESC LIMIT 1",
        [thread],
        |row| {
            let _: Vec<u8> = row.get(1)?;
            row.get::<_, i64>(0)
        },
    )
    .optional()
    .map_err(|e| {
        unusable(format!(
            "the last checkpoint of thread {thread} cannot be read: {e}"
        ))
    })?;
    Ok(())
}

/// `" (the file is N bytes; its header counts M)"` when the database file is shorter than
/// its header says (a detail for a refusal, never a reason for one: after a full disk the
/// rest may be in the write-ahead log).
fn size_note(path: &Path, len: u64) -> String {
    use std::io::Read;
    let mut head = [0u8; 100];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    if read.is_err() || !head.starts_with(b"SQLite format 3\0") {
        return String::new();
    }
    let page_size = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([head[28], head[29], head[30], head[31]]));
    let expected = page_size * pages;
    if len < expected {
        format!(" (the file is {len} bytes; its header counts {expected})")
    } else {
        String::new()
    }
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
