//! Progress of long runs on stderr: live bars (`indicatif`) on a terminal, plain line logs
//! otherwise (`--quiet` prints nothing).
//!
//! Per group (a bundle, a section): units done / total, the current unit (a todo), what is
//! running (a node, a tool), model calls and tokens so far, elapsed time. The live bar
//! ticks on its own, so a slow model shows activity at once, not only when a unit ends.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressMode {
    /// Nothing.
    Quiet,
    /// One line per change of counts, current unit, or a note (logs, pipes, tests).
    Lines,
    /// Live bars, redrawn in place (a terminal).
    Live,
}

/// Progress of a run, shared by its tasks (clones share everything).
///
/// ```text
/// ⠋ [guest_mara_lindqvist_001] 3/5 todos · tools: web_search · 9 model calls, 4.1k tokens · biz_halvard_biosciences_businessHistory [00:00:42]
/// ```
#[derive(Debug, Clone)]
pub struct Progress {
    inner: Arc<Mutex<Groups>>,
    multi: Option<MultiProgress>,
    mode: ProgressMode,
    unit: &'static str,
}

impl Default for Progress {
    fn default() -> Self {
        Self::with_mode("units", ProgressMode::Quiet)
    }
}

#[derive(Debug, Default)]
struct Groups(BTreeMap<String, Group>);

#[derive(Debug, Default)]
struct Group {
    done: usize,
    blocked: usize,
    total: usize,
    current: String,
    activity: String,
    activity_since: Option<std::time::Instant>,
    model_calls: u64,
    tokens: u64,
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress counting `unit`s (`"todos"`): nothing when `quiet`, live bars when stderr
    /// is a terminal, plain lines otherwise.
    pub fn new(unit: &'static str, quiet: bool) -> Self {
        let mode = if quiet {
            ProgressMode::Quiet
        } else if std::io::stderr().is_terminal() {
            ProgressMode::Live
        } else {
            ProgressMode::Lines
        };
        Self::with_mode(unit, mode)
    }

    /// Progress shown in `mode`.
    pub fn with_mode(unit: &'static str, mode: ProgressMode) -> Self {
        let multi = (mode == ProgressMode::Live)
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()));
        Self {
            inner: Arc::default(),
            multi,
            mode,
            unit,
        }
    }

    /// How it is shown.
    pub fn mode(&self) -> ProgressMode {
        self.mode
    }

    /// Sets a group's counts; a plain line when they changed.
    pub fn set(&self, group: &str, done: usize, blocked: usize, total: usize) {
        let line = self.update(group, |g| {
            let changed = (g.done, g.blocked, g.total) != (done, blocked, total);
            (g.done, g.blocked, g.total) = (done, blocked, total);
            changed
        });
        if line {
            let blocked = if blocked > 0 {
                format!(", {blocked} blocked")
            } else {
                String::new()
            };
            self.line(
                group,
                &format!("{done}/{total} {} done{blocked}", self.unit),
            );
        }
    }

    /// The unit being worked on (a todo id); a plain line when it changes.
    pub fn current(&self, group: &str, unit: &str) {
        if self.update(group, |g| {
            let changed = g.current != unit;
            g.current = unit.to_owned();
            changed
        }) && !unit.is_empty()
        {
            self.line(group, &format!("working on {unit}"));
        }
    }

    /// What is running now (`research_agent: model call`, `tools: web_search`): shown on
    /// the live bar only.
    pub fn activity(&self, group: &str, what: &str) {
        self.update(group, |g| {
            g.activity = what.to_owned();
            g.activity_since = Some(std::time::Instant::now());
            false
        });
    }

    /// In line mode, a line saying what is still running and for how long (call it every
    /// few seconds while a group works, so a slow model shows activity in logs too); the
    /// live bar ticks on its own, and quiet prints nothing.
    pub(crate) fn heartbeat(&self, group: &str) {
        if self.mode != ProgressMode::Lines {
            return;
        }
        let line = {
            let groups = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            groups.0.get(group).and_then(|g| {
                let since = g.activity_since?.elapsed().as_secs();
                (!g.activity.is_empty())
                    .then(|| format!("still working: {} ({since} s)", g.activity))
            })
        };
        if let Some(line) = line {
            let _ = writeln!(std::io::stderr().lock(), "[{group}] {line}");
        }
    }

    /// Adds model calls and tokens to a group's totals (shown on the live bar and in the
    /// final line).
    pub fn usage(&self, group: &str, model_calls: u64, tokens: u64) {
        self.update(group, |g| {
            g.model_calls += model_calls;
            g.tokens += tokens;
            false
        });
    }

    /// Ends a group's live bar, leaving its last line.
    pub fn finish(&self, group: &str) {
        let mut groups = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = groups.0.get_mut(group) {
            entry.activity = "ended".to_owned();
            entry.current.clear();
            let message = describe(self.unit, group, entry);
            if let Some(bar) = entry.bar.take() {
                bar.finish_with_message(message);
            }
        }
    }

    /// Ends the live display (after every group finished), so the next output starts on
    /// a line of its own.
    pub fn end(&self) {
        if self.mode == ProgressMode::Live {
            let _ = writeln!(std::io::stderr().lock());
        }
    }

    /// Prints a free-form line (unless quiet), above the live bars.
    pub fn note(&self, group: &str, line: &str) {
        match (&self.multi, self.mode) {
            (_, ProgressMode::Quiet) => {}
            (Some(multi), _) => {
                let _ = multi.println(format!("[{group}] {line}"));
            }
            (None, _) => {
                let _ = writeln!(std::io::stderr().lock(), "[{group}] {line}");
            }
        }
    }

    /// A plain line in line mode; nothing otherwise (the bar shows it).
    fn line(&self, group: &str, line: &str) {
        if self.mode == ProgressMode::Lines {
            let _ = writeln!(std::io::stderr().lock(), "[{group}] {line}");
        }
    }

    /// Applies `change` to the group and redraws its bar; returns what `change` returned
    /// (whether a plain line is due).
    fn update(&self, group: &str, change: impl FnOnce(&mut Group) -> bool) -> bool {
        let mut groups = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = groups.0.entry(group.to_owned()).or_default();
        let due = change(entry);
        if let Some(multi) = &self.multi {
            let message = describe(self.unit, group, entry);
            let bar = entry.bar.get_or_insert_with(|| {
                let bar = multi.add(ProgressBar::new(0));
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{prefix}] {pos}/{len} {wide_msg} [{elapsed_precise}]",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(group.to_owned());
                bar.enable_steady_tick(Duration::from_millis(150));
                bar
            });
            bar.set_length(entry.total as u64);
            bar.set_position(entry.done as u64);
            bar.set_message(message);
        }
        due
    }
}

fn describe(unit: &str, group: &str, g: &Group) -> String {
    // Short facts first: a narrow terminal cuts the end (the todo id).
    let mut parts = vec![unit.to_owned()];
    if g.blocked > 0 {
        parts.push(format!("{} blocked", g.blocked));
    }
    if !g.activity.is_empty() {
        parts.push(g.activity.clone());
    }
    parts.push(format!(
        "{} model calls, {} tokens",
        g.model_calls,
        if g.tokens >= 10_000 {
            format!("{:.1}k", g.tokens as f64 / 1000.0)
        } else {
            g.tokens.to_string()
        }
    ));
    if !g.current.is_empty() {
        // Todo ids start with the group (the bundle id), already shown as the prefix.
        let short = g
            .current
            .strip_prefix(group)
            .map_or(g.current.as_str(), |rest| rest.trim_start_matches('_'));
        parts.push(short.to_owned());
    }
    parts.join(" · ")
}
