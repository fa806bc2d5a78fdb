//! [`AuditLog`]: an append-only JSON Lines audit trail, synced to disk after every event.
//!
//! Compliance workflows keep an immutable record of what a run did: every node start and
//! end, model call, search, routing decision and error. An [`AuditLog`] writes each event
//! as one JSON line at the end of a file opened in append mode and `fsync`s it before
//! returning, so an event that was appended survives a crash or a `SIGKILL` of the process.
//! Reopening the file later (a resumed run) appends after what is there; nothing is ever
//! rewritten or truncated.
//!
//! Clones share one file handle behind a lock, so nodes running in parallel (the tasks of
//! a map-reduce step) can append to the same trail: their lines never interleave.
//!
//! ```
//! use graphkit_tools::AuditLog;
//! use serde_json::json;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("audit/session-1.jsonl");
//! let audit = AuditLog::open(&path)?;
//! audit.append(&json!({"event": "node_start", "node": "initialize"}))?;
//! audit.append(&json!({"event": "node_end", "node": "initialize"}))?;
//!
//! let events = AuditLog::read(&path)?;
//! assert_eq!(events.len(), 2);
//! assert_eq!(events[1]["event"], "node_end");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Result, ToolError};

/// An append-only JSON Lines file, one event per line, synced to disk after each event.
///
/// Cheap to clone; clones append to the same file, one whole line at a time.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    file: Arc<Mutex<File>>,
}

impl AuditLog {
    /// Opens `path` for appending, creating it and its parent directories when missing.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the directory or the file cannot be created or opened.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| io("create", dir, source))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|source| io("open", &path, source))?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(file)),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `event` as one JSON line and waits until it is on disk (`fsync`).
    ///
    /// The call blocks for the write and the sync; events are small, so this is a few
    /// milliseconds on a local disk.
    ///
    /// # Errors
    /// [`ToolError::Parse`] when `event` cannot be serialized (a map with non-string keys);
    /// [`ToolError::Io`] when the write or the sync fails.
    pub fn append(&self, event: &impl Serialize) -> Result<()> {
        let mut line = serde_json::to_vec(event).map_err(|e| ToolError::Parse {
            what: "an audit event".into(),
            message: e.to_string(),
        })?;
        line.push(b'\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        file.write_all(&line)
            .map_err(|source| io("append to", &self.path, source))?;
        file.sync_data()
            .map_err(|source| io("sync", &self.path, source))
    }

    /// Reads every event of the trail at `path`, in order.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the file cannot be read; [`ToolError::Parse`] naming the line
    /// when a line is not valid JSON.
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Value>> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| io("read", path, source))?;
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(i, line)| {
                serde_json::from_str(line).map_err(|e| ToolError::Parse {
                    what: format!("line {} of the audit trail {}", i + 1, path.display()),
                    message: e.to_string(),
                })
            })
            .collect()
    }
}

fn io(action: &'static str, path: &Path, source: std::io::Error) -> ToolError {
    ToolError::Io {
        action,
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_appended_in_order_one_json_line_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        let audit = AuditLog::open(&path).unwrap();
        for i in 0..5 {
            audit
                .append(&json!({"seq": i, "text": "line\nbreak"}))
                .unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 5);
        for (i, line) in text.lines().enumerate() {
            let event: Value = serde_json::from_str(line).unwrap();
            assert_eq!(event["seq"], i);
        }
    }

    #[test]
    fn reopening_appends_after_the_existing_events() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/trail.jsonl");
        AuditLog::open(&path)
            .unwrap()
            .append(&json!({"run": 1}))
            .unwrap();
        AuditLog::open(&path)
            .unwrap()
            .append(&json!({"run": 2}))
            .unwrap();
        let events = AuditLog::read(&path).unwrap();
        assert_eq!(events, vec![json!({"run": 1}), json!({"run": 2})]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writers_never_interleave_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        let audit = AuditLog::open(&path).unwrap();
        let writers = (0..8).map(|writer| {
            let audit = audit.clone();
            tokio::spawn(async move {
                for seq in 0..25 {
                    let padding = "x".repeat(500);
                    audit
                        .append(&json!({"writer": writer, "seq": seq, "padding": padding}))
                        .unwrap();
                }
            })
        });
        for handle in futures::future::join_all(writers).await {
            handle.unwrap();
        }
        let events = AuditLog::read(&path).unwrap();
        assert_eq!(events.len(), 200);
        for writer in 0..8 {
            let seqs: Vec<u64> = events
                .iter()
                .filter(|e| e["writer"] == writer)
                .map(|e| e["seq"].as_u64().unwrap())
                .collect();
            assert_eq!(seqs, (0..25).collect::<Vec<_>>(), "writer {writer}");
        }
    }

    #[test]
    fn a_corrupt_line_is_reported_with_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        std::fs::write(&path, "{\"ok\":1}\nnot json\n").unwrap();
        let err = AuditLog::read(&path).unwrap_err().to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
