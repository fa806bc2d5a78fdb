//! A capped list: keep the last entries, fold older ones into one summary entry.

use super::append::AppendUpdate;

/// Appends `update` to `list`, keeping at most `max` recent entries and folding older
/// ones into **one summary entry** at the front (`#[reducer(capped(max = N, fold = f))]`).
///
/// `fold(previous_summary, folded)` makes the new summary from the summary so far (`None`
/// the first time) and the entries leaving the window, oldest first. Every entry that
/// leaves the window is passed to `fold` exactly once, so nothing is lost unless `fold`
/// drops it. `fold` is only called when something leaves the window.
///
/// The list therefore holds the recent entries and, once anything has been folded, the
/// summary in front of them: at most `max + 1` entries, and the first entry is the summary
/// exactly when the list is longer than `max`. The clear sentinel empties the list (the
/// summary too). Keep `fold` pure, like every reducer: checkpoints replay it.
///
/// ```
/// use graphkit::AppendUpdate;
/// use graphkit::reducers::append_capped;
///
/// // The summary here just counts what it has absorbed.
/// fn fold(summary: Option<String>, folded: Vec<String>) -> String {
///     let before = summary.map_or(0, |s| s.trim_start_matches("summary of ").parse().unwrap_or(0));
///     format!("summary of {}", before + folded.len())
/// }
///
/// let mut history: Vec<String> = Vec::new();
/// append_capped(&mut history, AppendUpdate::items(["a", "b", "c"].map(String::from)), 2, fold);
/// assert_eq!(history, ["summary of 1", "b", "c"]);
/// append_capped(&mut history, AppendUpdate::item("d".to_string()), 2, fold);
/// assert_eq!(history, ["summary of 2", "c", "d"]);
/// ```
pub fn append_capped<T, F>(list: &mut Vec<T>, update: AppendUpdate<T>, max: usize, fold: F)
where
    F: FnOnce(Option<T>, Vec<T>) -> T,
{
    if update.clear {
        list.clear();
    }
    let has_summary = list.len() > max;
    list.extend(update.items);
    let first_recent = usize::from(has_summary);
    let first_kept = list.len().saturating_sub(max);
    if first_kept <= first_recent {
        return;
    }
    let folded: Vec<T> = list.drain(first_recent..first_kept).collect();
    let previous = has_summary.then(|| list.remove(0));
    let summary = fold(previous, folded);
    list.insert(0, summary);
}
