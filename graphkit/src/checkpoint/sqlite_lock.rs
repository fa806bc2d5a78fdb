//! Thread locks in an SQLite file, as both of an [`SqliteSaver`](super::SqliteSaver)'s
//! connections take them (its pool, and its writer): a lock is a row naming the holding
//! run, process id and the process's start time, and a lock whose process is gone is taken
//! over.

use std::path::Path;

/// How errors of the SQLite checkpointer name it.
pub(super) const BACKEND: &str = "sqlite checkpointer";

/// Takes a free thread lock: (thread_id, run_id, pid, pid_start, acquired_at_ms).
pub(super) const LOCK_INSERT: &str = "INSERT INTO graphkit_thread_locks (thread_id, run_id, pid, pid_start, acquired_at_ms) \
     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (thread_id) DO NOTHING";
/// The holder of a thread's lock: (thread_id) → run_id, pid, pid_start.
pub(super) const LOCK_HOLDER: &str =
    "SELECT run_id, pid, pid_start FROM graphkit_thread_locks WHERE thread_id = ?1";
/// Takes over a dead holder's lock if it is unchanged: (run_id, pid, pid_start,
/// acquired_at_ms, thread_id, holder's run_id, holder's pid).
pub(super) const LOCK_TAKE_OVER: &str = "UPDATE graphkit_thread_locks SET run_id = ?1, pid = ?2, pid_start = ?3, acquired_at_ms = ?4 \
     WHERE thread_id = ?5 AND run_id = ?6 AND pid = ?7";
/// Releases a lock the run holds: (thread_id, run_id).
pub(super) const UNLOCK: &str =
    "DELETE FROM graphkit_thread_locks WHERE thread_id = ?1 AND run_id = ?2";

/// Who holds a lock another run asked for.
pub(super) enum LockHolder {
    /// The asking run itself (it locked the thread before).
    Us,
    /// A live process's run: the thread is busy.
    Alive,
    /// A run whose process is gone: the lock may be taken over.
    Gone,
}

impl LockHolder {
    pub(super) fn judge(holder_run: &str, holder: Holder, run_id: &str) -> Self {
        if holder_run == run_id {
            Self::Us
        } else if holder.is_alive() {
            Self::Alive
        } else {
            Self::Gone
        }
    }
}

/// Logs that `thread_id`'s lock was taken over from a dead process's run.
pub(super) fn took_over(thread_id: &str, dead_run: &str, holder: Holder) {
    tracing::warn!(
        thread_id,
        dead_run,
        pid = holder.pid,
        "took over the lock of a run whose process is gone"
    );
}

/// The process holding a thread lock: its pid, and its start time (in clock ticks since
/// boot, from `/proc/<pid>/stat`) so a recycled pid is not mistaken for the holder.
#[derive(Debug, Clone, Copy)]
pub(super) struct Holder {
    pub(super) pid: i64,
    pub(super) start: Option<i64>,
}

impl Holder {
    pub(super) fn current() -> Self {
        let pid = i64::from(std::process::id());
        Self {
            pid,
            start: process_start(pid),
        }
    }

    /// `false` only when the process is known to be gone. Where `/proc` does not exist
    /// (not Linux), liveness cannot be told, so every holder counts as alive.
    fn is_alive(&self) -> bool {
        if !Path::new("/proc/self").exists() {
            return true;
        }
        let Some(stat) = ProcStat::read(self.pid) else {
            return false; // no such process
        };
        // A killed process that its parent has not reaped yet is a zombie: gone all the same.
        !stat.zombie
            && self
                .start
                .is_none_or(|recorded| stat.start == Some(recorded))
    }
}

/// What `/proc/<pid>/stat` says about a process.
struct ProcStat {
    zombie: bool,
    /// Field 22, `starttime`.
    start: Option<i64>,
}

impl ProcStat {
    fn read(pid: i64) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: count from the last `)`.
        let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
        let state = fields.next()?;
        Some(Self {
            zombie: state == "Z" || state == "X",
            start: fields.nth(18).and_then(|s| s.parse().ok()),
        })
    }
}

fn process_start(pid: i64) -> Option<i64> {
    ProcStat::read(pid)?.start
}
