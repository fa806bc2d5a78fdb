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
//! A reader sees whole lines or nothing, whatever kill or full disk cut an append short:
//! see [`AuditLog`].
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
//!
//! // A process killed while appending leaves a torn last line: readers skip it, and
//! // reopening the file starts the next event on a line of its own.
//! use std::io::Write;
//! std::fs::OpenOptions::new().append(true).open(&path)?.write_all(br#"{"event":"node_st"#)?;
//! assert_eq!(AuditLog::read(&path)?.len(), 2);
//! AuditLog::open(&path)?.append(&json!({"event": "node_start", "node": "next"}))?;
//! let trail = AuditLog::read_checked(&path)?;
//! assert_eq!(trail.events.len(), 3);
//! assert_eq!(trail.torn.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::{Value, json};

use crate::error::{Result, ToolError};

/// The key and value that mark a line written by [`AuditLog`] itself after a torn line.
const MARKER_KEY: &str = "audit_log";
/// See [`MARKER_KEY`].
const MARKER_TORN: &str = "torn_line";
/// What a reopen writes after a torn line, before its newline (never in a JSON line).
const TORN_END: &[u8] = b"\t";

/// An append-only JSON Lines file, one event per line, synced to disk after each event.
///
/// Cheap to clone; clones append to the same file, one whole line at a time.
///
/// **Whole lines or nothing.** A reader counts only lines that end with a newline, and an
/// event's line is written with its newline in one write. A process killed in the middle of
/// that write (a large event, a `SIGKILL`) or a write that fails (a full disk) leaves the
/// start of a line without its end: a *torn line*. [`read`](Self::read) skips a torn
/// last line with a warning (it may also be a line being written right now). The next
/// [`open`](Self::open) of the file (or the next append after a failed one) ends the
/// torn line with a tab and a newline, then appends a marker line
/// `{"audit_log":"torn_line","offset":…,"bytes":…}` saying where it starts and how long it
/// is: the next events start on a line of their own, and the torn bytes stay in the file
/// as they were. A line that is not JSON and ends with that tab is a torn line; reading
/// skips it with a warning and reads everything else (a compact JSON line never holds a
/// raw tab, and the tab alone marks the line, so a kill during the repair itself leaves a
/// readable file too). A line that is not JSON and does not end so is reported as an error:
/// the file was damaged or edited, not torn by a kill. Markers are not events:
/// [`read_checked`](Self::read_checked) lists the torn lines apart.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
    file: Arc<Mutex<Appender>>,
}

#[derive(Debug)]
struct Appender {
    file: File,
    /// An append failed: part of its line may be in the file. The next append first ends
    /// that line (see [`end_torn_line`]).
    unsure: bool,
}

/// A line of the trail that is not an event: the start of a line whose write was cut
/// short (a killed process, a full disk).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// Its line number (1-based).
    pub line: usize,
    /// Its length in bytes.
    pub bytes: usize,
    /// `true` when it is the file's last line, without a newline: a write cut short that no
    /// process has reopened the file since (or a line being written right now).
    pub at_end: bool,
}

/// What [`AuditLog::read_checked`] found: the events, and the torn lines it skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditRead {
    /// The events, in order.
    pub events: Vec<Value>,
    /// The torn lines skipped.
    pub torn: Vec<TornLine>,
}

impl AuditLog {
    /// Opens `path` for appending, creating it and its parent directories when missing. A
    /// torn last line left by a process killed while appending is ended with a newline
    /// and followed by a marker line naming it (see [`AuditLog`]).
    ///
    /// # Errors
    /// [`ToolError::Io`] when the directory or the file cannot be created, opened, or its
    /// torn line ended.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| io("create", dir, source))?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(|source| io("open", &path, source))?;
        end_torn_line(&mut file)
            .map_err(|source| io("repair the torn last line of", &path, source))?;
        Ok(Self {
            path,
            file: Arc::new(Mutex::new(Appender {
                file,
                unsure: false,
            })),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `event` as one JSON line and waits until it is on disk (`fsync`).
    ///
    /// The call blocks for the write and the sync; events are small, so this is a few
    /// milliseconds on a local disk. The line and its newline go out in one write: a
    /// reader sees the whole line or none of it (a write cut short leaves a torn line,
    /// which readers skip, and which the next append ends first).
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
        let mut appender = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if appender.unsure {
            end_torn_line(&mut appender.file)
                .map_err(|source| io("repair the torn last line of", &self.path, source))?;
            appender.unsure = false;
        }
        let written = appender
            .file
            .write_all(&line)
            .map_err(|source| io("append to", &self.path, source))
            .and_then(|()| {
                appender
                    .file
                    .sync_data()
                    .map_err(|source| io("sync", &self.path, source))
            });
        if written.is_err() {
            appender.unsure = true;
        }
        written
    }

    /// Reads every event of the trail at `path`, in order. Torn lines (see [`AuditLog`])
    /// are skipped with a warning (`tracing`);
    /// [`read_checked`](Self::read_checked) lists them.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the file cannot be read; [`ToolError::Parse`] naming the line
    /// when a line is not valid JSON and is not a torn line.
    pub fn read(path: impl AsRef<Path>) -> Result<Vec<Value>> {
        let path = path.as_ref();
        let read = Self::read_checked(path)?;
        for torn in &read.torn {
            tracing::warn!(
                path = %path.display(),
                line = torn.line,
                bytes = torn.bytes,
                "skipped a torn line of the audit trail (a write cut short by a kill or a full disk)"
            );
        }
        Ok(read.events)
    }

    /// Reads the trail at `path`: its events in order, and the torn lines skipped (a
    /// last line without its newline; a line that a marker names as torn).
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_checked(path: impl AsRef<Path>) -> Result<AuditRead> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| io("read", path, source))?;
        let mut out = AuditRead::default();
        for (i, raw) in bytes.split_inclusive(|b| *b == b'\n').enumerate() {
            let Some(line) = raw.strip_suffix(b"\n") else {
                // The last line, without its newline: a write cut short, or in progress.
                if !raw.trim_ascii().is_empty() {
                    out.torn.push(TornLine {
                        line: i + 1,
                        bytes: raw.len(),
                        at_end: true,
                    });
                }
                break;
            };
            if line.trim_ascii().is_empty() {
                continue;
            }
            match serde_json::from_slice::<Value>(line) {
                Ok(value) if is_marker(&value) => {}
                Ok(value) => out.events.push(value),
                // Ended by a reopen after its write was cut short (see `AuditLog`).
                Err(_) if line.ends_with(TORN_END) => out.torn.push(TornLine {
                    line: i + 1,
                    bytes: line.len() - TORN_END.len(),
                    at_end: false,
                }),
                Err(e) => {
                    return Err(ToolError::Parse {
                        what: format!("line {} of the audit trail {}", i + 1, path.display()),
                        message: format!("{e} (not a torn line: the file was damaged or edited)"),
                    });
                }
            }
        }
        Ok(out)
    }
}

fn is_marker(value: &Value) -> bool {
    value.get(MARKER_KEY).and_then(Value::as_str) == Some(MARKER_TORN)
}

/// When `file` does not end with a newline, its last line is torn: ends it with a tab and a
/// newline and appends a marker line naming it, then syncs. Holds an exclusive `flock`
/// meanwhile where the file system has them, so two processes opening the trail at once do
/// not both end it.
fn end_torn_line(file: &mut File) -> std::io::Result<()> {
    use rustix::fs::{FlockOperation, flock};
    let locked = flock(&*file, FlockOperation::LockExclusive).is_ok();
    let ended = end_torn_line_locked(file);
    if locked {
        let _ = flock(&*file, FlockOperation::Unlock);
    }
    ended
}

fn end_torn_line_locked(file: &mut File) -> std::io::Result<()> {
    let len = file.seek(SeekFrom::End(0))?;
    if len == 0 {
        return Ok(());
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Where the torn line starts: after the last newline before it.
    let mut start = len;
    let mut chunk = vec![0u8; 64 * 1024];
    'search: while start > 0 {
        let from = start.saturating_sub(chunk.len() as u64);
        let size = usize::try_from(start - from).unwrap_or(chunk.len());
        file.seek(SeekFrom::Start(from))?;
        file.read_exact(&mut chunk[..size])?;
        for (i, byte) in chunk[..size].iter().enumerate().rev() {
            if *byte == b'\n' {
                start = from + i as u64 + 1;
                break 'search;
            }
        }
        start = from;
    }
    let mut tail = TORN_END.to_vec();
    tail.push(b'\n');
    serde_json::to_writer(
        &mut tail,
        &json!({MARKER_KEY: MARKER_TORN, "offset": start, "bytes": len - start,
                "note": "the line before this one was cut short (its writer was killed, or the disk was full); it is not an event"}),
    )?;
    tail.push(b'\n');
    file.write_all(&tail)?;
    file.sync_data()
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
    fn a_torn_last_line_is_skipped_and_the_events_before_it_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        let audit = AuditLog::open(&path).unwrap();
        audit.append(&json!({"seq": 0})).unwrap();
        audit
            .append(&json!({"seq": 1, "text": "ü".repeat(10)}))
            .unwrap();
        // A write cut short in the middle of a two-byte character.
        let whole = std::fs::read(&path).unwrap();
        let cut = whole.len() - 8;
        assert!(std::str::from_utf8(&whole[..cut]).is_err());
        std::fs::write(&path, &whole[..cut]).unwrap();

        let read = AuditLog::read_checked(&path).unwrap();
        assert_eq!(read.events, vec![json!({"seq": 0})]);
        assert_eq!(
            read.torn,
            vec![TornLine {
                line: 2,
                bytes: cut - whole.iter().position(|b| *b == b'\n').unwrap() - 1,
                at_end: true
            }]
        );
        assert_eq!(AuditLog::read(&path).unwrap(), vec![json!({"seq": 0})]);
    }

    #[test]
    fn reopening_ends_a_torn_line_with_a_marker_and_keeps_its_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        std::fs::write(&path, "{\"seq\":0}\n{\"seq\":1,\"pad").unwrap();
        let audit = AuditLog::open(&path).unwrap();
        audit.append(&json!({"seq": 1})).unwrap();
        // A second open finds the file whole: no second marker.
        AuditLog::open(&path)
            .unwrap()
            .append(&json!({"seq": 2}))
            .unwrap();

        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert_eq!(
            lines[1], "{\"seq\":1,\"pad\t",
            "the torn bytes stay as they were"
        );
        let marker: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(marker["audit_log"], "torn_line");
        assert_eq!(marker["offset"], 10);
        assert_eq!(marker["bytes"], 13);

        let read = AuditLog::read_checked(&path).unwrap();
        assert_eq!(
            read.events,
            vec![json!({"seq": 0}), json!({"seq": 1}), json!({"seq": 2})]
        );
        assert_eq!(
            read.torn,
            vec![TornLine {
                line: 2,
                bytes: 13,
                at_end: false
            }]
        );
    }

    #[test]
    fn a_line_cut_just_before_its_newline_is_a_whole_event_once_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trail.jsonl");
        std::fs::write(&path, "{\"seq\":0}").unwrap();
        assert!(AuditLog::read(&path).unwrap().is_empty());
        AuditLog::open(&path)
            .unwrap()
            .append(&json!({"seq": 1}))
            .unwrap();
        let read = AuditLog::read_checked(&path).unwrap();
        assert_eq!(read.events, vec![json!({"seq": 0}), json!({"seq": 1})]);
        assert!(read.torn.is_empty());
    }

    #[test]
    fn a_kill_during_the_repair_itself_still_leaves_a_readable_trail() {
        let dir = tempfile::tempdir().unwrap();
        // Cut after the repair's tab; after its tab and newline; in its marker.
        for (i, torn) in ["{\"se\t", "{\"se\t\n", "{\"se\t\n{\"audit_log\":\"to"]
            .into_iter()
            .enumerate()
        {
            let path = dir.path().join(format!("trail-{i}.jsonl"));
            std::fs::write(&path, format!("{{\"seq\":0}}\n{torn}")).unwrap();
            AuditLog::open(&path)
                .unwrap()
                .append(&json!({"seq": 1}))
                .unwrap();
            let read = AuditLog::read_checked(&path).unwrap();
            assert_eq!(
                read.events,
                vec![json!({"seq": 0}), json!({"seq": 1})],
                "{torn:?}"
            );
            assert!(!read.torn.is_empty() && read.torn.iter().all(|t| !t.at_end));
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
