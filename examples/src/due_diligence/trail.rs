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
    searched: Mutex<HashSet<(String, u32, String)>>,
}

impl AuditTrail {
    /// Audit files go to `dir` (created on the first event).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            logs: Mutex::default(),
            searched: Mutex::default(),
        }
    }

    /// `true` the first time a search of `query` at `depth` is reported for `session_id`
    /// in this trail (the file's earlier events included): a resumed run that repeats a
    /// search killed before its result was saved logs it as `search_repeated`, not as a
    /// second `search`.
    pub(crate) fn first_search(&self, session_id: &str, depth: u32, query: &str) -> bool {
        if file_safe(session_id).is_err() {
            // Not a file name: there is no earlier file to read (`record` refuses it).
            return true;
        }
        let mut searched = self.searched.lock().unwrap_or_else(PoisonError::into_inner);
        if !searched.iter().any(|(s, _, _)| s == session_id) {
            for event in AuditLog::read(self.path(session_id)).unwrap_or_default() {
                if event["event"] == "search" {
                    let depth = u32::try_from(event["depth"].as_u64().unwrap_or(0)).unwrap_or(0);
                    let query = event["query"].as_str().unwrap_or("").to_owned();
                    searched.insert((session_id.to_owned(), depth, query));
                }
            }
            // Marks the session as loaded even when its file had no search yet.
            searched.insert((session_id.to_owned(), u32::MAX, String::new()));
        }
        searched.insert((session_id.to_owned(), depth, query.to_owned()))
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
