//! Progress lines on stderr for long runs: one line whenever a unit of work finishes.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};

/// Counts done / total per group (a bundle, a section) and prints a line on each change:
///
/// ```text
/// [guest_mara_lindqvist_001] 3/5 todos done, 1 blocked
/// ```
///
/// Clones share the counts. A quiet progress prints nothing (tests use it).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    inner: Arc<Mutex<BTreeMap<String, Counts>>>,
    quiet: bool,
    unit: &'static str,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Counts {
    done: usize,
    blocked: usize,
    total: usize,
}

impl Progress {
    /// Progress counting `unit`s (`"todos"`), printed to stderr unless `quiet`.
    pub fn new(unit: &'static str, quiet: bool) -> Self {
        Self {
            inner: Arc::default(),
            quiet,
            unit,
        }
    }

    /// Sets a group's counts; prints a line when they changed.
    pub fn set(&self, group: &str, done: usize, blocked: usize, total: usize) {
        let counts = Counts {
            done,
            blocked,
            total,
        };
        let mut map = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if map.get(group) == Some(&counts) {
            return;
        }
        map.insert(group.to_owned(), counts);
        drop(map);
        if !self.quiet {
            let blocked = if blocked > 0 {
                format!(", {blocked} blocked")
            } else {
                String::new()
            };
            let _ = writeln!(
                std::io::stderr().lock(),
                "[{group}] {done}/{total} {} done{blocked}",
                self.unit
            );
        }
    }

    /// Prints a free-form line (unless quiet).
    pub fn note(&self, group: &str, line: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "[{group}] {line}");
        }
    }
}
