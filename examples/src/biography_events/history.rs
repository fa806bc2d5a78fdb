//! The supervisor's history (`messages` in the seed): one entry per tool call, capped, with
//! older entries folded into one summary entry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One tool call and the reflection after it (the seed: `{tool: "url_crawler", input:
/// "Wikipedia", summary: "Added 3 events", think: "Gaps in career—next: Britannica"}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryEntry {
    /// The tool (`url_finder`, `url_crawler`, `further_event_research`, `check_gaps`), or
    /// `summary` for the entry that folds older ones.
    pub tool: String,
    /// What it was given.
    pub input: String,
    /// What it did.
    pub summary: String,
    /// The think tool's reflection on it.
    #[serde(default)]
    pub think: Option<String>,
    /// The think tool's recommendation (a tool name or `none`).
    #[serde(default)]
    pub recommendation: Option<String>,
}

/// An update of the history: entries to append, and the cap to keep it under.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HistoryUpdate {
    /// Appended in order.
    pub entries: Vec<HistoryEntry>,
    /// At most this many entries are kept (0: no cap).
    pub cap: usize,
}

impl HistoryUpdate {
    /// Appends `entry`, keeping at most `cap` entries.
    pub fn push(entry: HistoryEntry, cap: usize) -> Self {
        Self {
            entries: vec![entry],
            cap,
        }
    }
}

/// The history's reducer: append, then, when longer than the cap, fold the oldest entries
/// (an earlier summary entry included) into one `summary` entry at the front, so the list
/// holds the summary plus the `cap - 1` latest entries. The fold is deterministic text,
/// not a model call, so replaying the updates always gives the same history.
pub(crate) fn append_capped(history: &mut Vec<HistoryEntry>, update: HistoryUpdate) {
    history.extend(update.entries);
    if update.cap == 0 || history.len() <= update.cap {
        return;
    }
    let keep_from = history.len() - (update.cap - 1);
    let folded: Vec<HistoryEntry> = history.drain(..keep_from).collect();
    let calls: usize = folded.iter().map(folded_calls).sum();
    let lines: Vec<String> = folded
        .iter()
        .map(|e| {
            if e.tool == "summary" {
                e.summary.clone()
            } else {
                format!("{}({}): {}", e.tool, e.input, e.summary)
            }
        })
        .collect();
    let summary = HistoryEntry {
        tool: "summary".into(),
        input: format!("{calls} earlier entries"),
        summary: lines.join("; "),
        think: folded.iter().rev().find_map(|e| e.think.clone()),
        recommendation: None,
    };
    history.insert(0, summary);
}

fn folded_calls(entry: &HistoryEntry) -> usize {
    if entry.tool == "summary" {
        entry
            .input
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(1)
    } else {
        1
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn entry(n: usize) -> HistoryEntry {
        HistoryEntry {
            tool: "url_crawler".into(),
            input: format!("url{n}"),
            summary: format!("added {n} events"),
            think: Some(format!("think {n}")),
            recommendation: None,
        }
    }

    #[test]
    fn history_is_capped_at_five_with_older_entries_folded_into_one_summary() {
        let mut history = Vec::new();
        for n in 1..=8 {
            append_capped(&mut history, HistoryUpdate::push(entry(n), 5));
            assert!(history.len() <= 5);
        }
        assert_eq!(history.len(), 5);
        assert_eq!(history[0].tool, "summary");
        assert_eq!(history[0].input, "4 earlier entries");
        for n in 1..=4 {
            assert!(
                history[0].summary.contains(&format!("url{n}")),
                "{}",
                history[0].summary
            );
        }
        let kept: Vec<_> = history[1..].iter().map(|e| e.input.clone()).collect();
        assert_eq!(kept, ["url5", "url6", "url7", "url8"]);
    }

    #[test]
    fn a_short_history_is_kept_as_is() {
        let mut history = Vec::new();
        for n in 1..=5 {
            append_capped(&mut history, HistoryUpdate::push(entry(n), 5));
        }
        assert!(history.iter().all(|e| e.tool == "url_crawler"));
    }
}
