//! [`AuditTrail`]: the per-session JSONL audit files (`audit/{session_id}.jsonl`) on top
//! of graphkit-tools' [`AuditLog`].

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use graphkit_tools::AuditLog;
use serde_json::{Value, json};

use crate::shared::time::{now_ms, rfc3339};

/// One append-only audit file per session, in a directory. Every event gets `ts`,
/// `session_id` and `depth` besides its own fields, and is on disk before `record`
/// returns.
#[derive(Debug)]
pub struct AuditTrail {
    dir: PathBuf,
    logs: Mutex<HashMap<String, AuditLog>>,
    /// Per session: what its file (as read once) and this process recorded so far.
    known: Mutex<HashMap<String, Known>>,
}

/// The searches and node starts of one session's trail.
#[derive(Debug, Default)]
struct Known {
    /// `(depth, query)` of every `search` event.
    searches: HashSet<(u32, String)>,
    /// `(node, depth, query)` of every `node_start` event, with how many there are.
    starts: HashMap<(String, u32, String), u32>,
}

impl Known {
    /// What the trail file at `path` holds (nothing when it cannot be read).
    fn read(path: &Path) -> Self {
        let mut known = Self::default();
        for event in AuditLog::read(path).unwrap_or_default() {
            let depth = u32::try_from(event["depth"].as_u64().unwrap_or(0)).unwrap_or(0);
            let query = event["query"].as_str().unwrap_or("").to_owned();
            match event["event"].as_str() {
                Some("search") => {
                    known.searches.insert((depth, query));
                }
                Some("node_start") => {
                    let node = event["node"].as_str().unwrap_or("").to_owned();
                    *known.starts.entry((node, depth, query)).or_default() += 1;
                }
                _ => {}
            }
        }
        known
    }
}

impl AuditTrail {
    /// Audit files go to `dir` (created on the first event).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            logs: Mutex::default(),
            known: Mutex::default(),
        }
    }

    /// `true` the first time a search of `query` at `depth` is reported for `session_id`
    /// in this trail (the file's earlier events included): a resumed run that repeats a
    /// search killed before its result was saved logs it as `search_repeated`, not as a
    /// second `search`.
    pub(crate) fn first_search(&self, session_id: &str, depth: u32, query: &str) -> bool {
        self.with_known(session_id, |known| {
            known.searches.insert((depth, query.to_owned()))
        })
        .unwrap_or(true)
    }

    /// Counts a start of `node` at `depth` (for `query`, a search's) in `session_id`'s
    /// trail and returns how many starts of it the trail held before (the file's earlier
    /// events included): more than 0 means the node runs again — after a resume, the
    /// nodes of the step a process was killed in run again from their start.
    pub(crate) fn count_start(
        &self,
        session_id: &str,
        node: &str,
        depth: u32,
        query: Option<&str>,
    ) -> u32 {
        self.with_known(session_id, |known| {
            let count = known
                .starts
                .entry((node.to_owned(), depth, query.unwrap_or("").to_owned()))
                .or_default();
            *count += 1;
            *count - 1
        })
        .unwrap_or(0)
    }

    /// Runs `f` on what `session_id`'s trail holds (read from its file the first time);
    /// `None` when the id cannot name a file (there is no earlier file; `record` refuses it).
    fn with_known<T>(&self, session_id: &str, f: impl FnOnce(&mut Known) -> T) -> Option<T> {
        let session_id = file_safe(session_id).ok()?;
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = known
            .entry(session_id.to_owned())
            .or_insert_with(|| Known::read(&self.path(session_id)));
        Some(f(entry))
    }

    /// The audit file of `session_id`.
    pub fn path(&self, session_id: &str) -> PathBuf {
        audit_path(&self.dir, session_id)
    }

    /// Appends `event` (`node_start`, `model_call`, `search`, ...) with `fields`.
    ///
    /// # Errors
    /// The audit file cannot be opened or written (a compliance trail that cannot be
    /// written stops the node).
    pub fn record(
        &self,
        session_id: &str,
        depth: u32,
        event: &str,
        fields: Value,
    ) -> Result<(), graphkit_tools::ToolError> {
        let session_id = file_safe(session_id)?;
        // What the file held before this process wrote to it, read before the first write.
        self.with_known(session_id, |_| ());
        let log = {
            let mut logs = self.logs.lock().unwrap_or_else(PoisonError::into_inner);
            match logs.get(session_id) {
                Some(log) => log.clone(),
                None => {
                    let log = AuditLog::open(self.path(session_id))?;
                    logs.insert(session_id.to_owned(), log.clone());
                    log
                }
            }
        };
        let mut line = json!({
            "ts": rfc3339(now_ms()),
            "session_id": session_id,
            "depth": depth,
            "event": event,
        });
        if let (Some(line), Value::Object(fields)) = (line.as_object_mut(), fields) {
            line.extend(fields);
        }
        log.append(&line)
    }
}

/// `session_id` when it can name a file: ASCII letters, digits, `-` and `_` (what
/// `initialize` makes). The id lives in the state, which the clients of a served graph can
/// write (`command.update`, `POST /threads/{id}/state`), so it must not be able to name a
/// path outside the folder the graph was given (`../x`, `/etc/x`).
///
/// # Errors
/// [`ToolError::PathRefused`](graphkit_tools::ToolError::PathRefused) for any other id.
pub(crate) fn file_safe(session_id: &str) -> Result<&str, graphkit_tools::ToolError> {
    if !session_id.is_empty()
        && session_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(session_id)
    } else {
        Err(graphkit_tools::ToolError::PathRefused {
            path: session_id.to_owned(),
            reason: "a session id names files: only ASCII letters, digits, `-` and `_`".into(),
        })
    }
}

/// `dir/{session_id}.jsonl`.
pub(crate) fn audit_path(dir: &Path, session_id: &str) -> PathBuf {
    dir.join(format!("{session_id}.jsonl"))
}
