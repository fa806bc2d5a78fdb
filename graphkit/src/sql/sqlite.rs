//! Opening SQLite files: the settings every connection to a file shares, the pools of the
//! saver and the store, and retrying while another process holds the file.

use std::path::Path;
use std::time::{Duration, Instant};

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::backend_error;
use crate::error::StorageError;

/// How long a statement waits for another connection's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// When SQLite waits for the disk (its `synchronous` setting, in WAL mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SqliteSync {
    /// Every commit is on disk when it returns: a checkpoint survives a power loss.
    #[default]
    Full,
    /// Commits reach the disk at WAL checkpoints: a process crash loses nothing, a power
    /// loss may lose the last commits. Much faster per step.
    Normal,
}

impl SqliteSync {
    /// The value of SQLite's `synchronous` pragma.
    pub(crate) fn pragma(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::Normal => "NORMAL",
        }
    }
}

/// The options of every connection to a file: WAL, `sync`, a busy timeout, foreign keys.
fn connect_options(path: &Path, sync: SqliteSync) -> SqliteConnectOptions {
    let synchronous = match sync {
        SqliteSync::Full => SqliteSynchronous::Full,
        SqliteSync::Normal => SqliteSynchronous::Normal,
    };
    SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(synchronous)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
}

/// A pool on the file at `path` (created if missing) with [`connect_options`].
pub(crate) async fn open_pool(
    path: &Path,
    backend: &'static str,
    sync: SqliteSync,
) -> Result<SqlitePool, StorageError> {
    let options = connect_options(path, sync);
    let connect = || {
        SqlitePoolOptions::new()
            .max_connections(4)
            // A local file's connection does not go stale; pinging it before every
            // statement would add a round trip to SQLite's worker thread per checkpoint.
            .test_before_acquire(false)
            .connect_with(options.clone())
    };
    retry_while_locked(is_locked, connect)
        .await
        .map_err(|e| backend_error(backend, &format!("cannot open {}", path.display()), e))
}

/// One connection to a private in-memory database, kept open as long as the pool lives
/// (each connection to `:memory:` would otherwise see its own empty database).
pub(crate) async fn in_memory_pool(backend: &'static str) -> Result<SqlitePool, StorageError> {
    let options = SqliteConnectOptions::new().in_memory(true);
    SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await
        .map_err(|e| backend_error(backend, "cannot open an in-memory database", e))
}

/// Runs `attempt` again while SQLite reports the file busy or locked, until
/// [`BUSY_TIMEOUT`] has passed.
///
/// SQLite's own busy handler covers most statements, but not all of opening a file another
/// process is creating, converting to WAL or recovering: there SQLite returns "database is
/// locked" at once (it declines to wait where waiting could deadlock). Opening then starts
/// over, with a short, growing pause.
pub(crate) async fn retry_while_locked<T, E, F, Fut>(
    is_locked: fn(&E) -> bool,
    mut attempt: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let deadline = Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(5);
    loop {
        match attempt().await {
            Err(e) if is_locked(&e) && Instant::now() + pause < deadline => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(250));
            }
            outcome => return outcome,
        }
    }
}

/// `SQLITE_BUSY` or `SQLITE_LOCKED`, in any of their extended forms.
pub(crate) fn is_locked(error: &sqlx::Error) -> bool {
    const SQLITE_BUSY: i64 = 5;
    const SQLITE_LOCKED: i64 = 6;
    error
        .as_database_error()
        .and_then(|e| e.code())
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| matches!(code & 0xff, SQLITE_BUSY | SQLITE_LOCKED))
}
