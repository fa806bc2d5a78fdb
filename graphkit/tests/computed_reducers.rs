//! The merge-by-computed-key and capped-history reducers: semantics, laws (property
//! tests), the derive, serde and checkpoint deltas.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::checkpoint::{CheckpointRecord, Checkpointer, InMemorySaver, ListOptions};
use graphkit::reducers::{Field, ReducerKind, StateUpdate, append_capped, merge_by};
use graphkit::{AppendUpdate, CompileOptions, END, Error, RunConfig, START, State, StateGraph};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

// --- merge by a computed key --------------------------------------------------------------

/// A fact: scholar references merge by their first present identifier, everything else
/// is appended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Fact {
    kind: Kind,
    arxiv_id: Option<String>,
    doi: Option<String>,
    title: Option<String>,
    body: u16,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Kind {
    ScholarReference,
    Finding,
}

fn reference_key(fact: &Fact) -> Option<String> {
    if fact.kind != Kind::ScholarReference {
        return None;
    }
    let arxiv = fact.arxiv_id.as_ref().map(|id| format!("arxiv:{id}"));
    let doi = || {
        fact.doi
            .as_ref()
            .map(|d| format!("doi:{}", d.to_lowercase()))
    };
    let title = || {
        fact.title
            .as_ref()
            .map(|t| format!("title:{}", t.to_lowercase()))
    };
    arxiv.or_else(doi).or_else(title)
}

fn reference(arxiv: Option<&str>, doi: Option<&str>, body: u16) -> Fact {
    Fact {
        kind: Kind::ScholarReference,
        arxiv_id: arxiv.map(Into::into),
        doi: doi.map(Into::into),
        title: None,
        body,
    }
}

fn finding(body: u16) -> Fact {
    Fact {
        kind: Kind::Finding,
        arxiv_id: None,
        doi: None,
        title: None,
        body,
    }
}

fn bodies(facts: &[Fact]) -> Vec<u16> {
    facts.iter().map(|f| f.body).collect()
}

#[test]
fn a_reference_with_a_known_key_replaces_it_in_place_and_others_append() {
    let mut facts = vec![
        reference(Some("2301.1"), None, 1),
        finding(2),
        reference(None, Some("10.1/X"), 3),
    ];
    merge_by(
        &mut facts,
        AppendUpdate::items([
            reference(None, Some("10.1/x"), 30), // same DOI, other case: replaces body 3
            finding(4),                          // another kind: appended
            reference(Some("2301.1"), None, 10), // same arXiv id: replaces body 1
            reference(Some("2401.9"), None, 5),  // new key: appended
        ]),
        reference_key,
    );
    assert_eq!(bodies(&facts), [10, 2, 30, 4, 5]);
}

#[test]
fn duplicates_inside_one_update_collapse_to_the_latest_at_the_first_position() {
    let mut facts = vec![finding(1)];
    merge_by(
        &mut facts,
        AppendUpdate::items([
            reference(Some("a"), None, 2),
            reference(Some("b"), None, 3),
            reference(Some("a"), None, 4),
        ]),
        reference_key,
    );
    assert_eq!(bodies(&facts), [1, 4, 3]);
}

#[test]
fn a_reference_without_any_key_is_appended_and_never_merged() {
    let keyless = |body| reference(None, None, body);
    let mut facts = Vec::new();
    merge_by(&mut facts, AppendUpdate::items([keyless(1)]), reference_key);
    merge_by(
        &mut facts,
        AppendUpdate::items([keyless(1), keyless(2)]),
        reference_key,
    );
    // Equal keyless references are not deduplicated: nothing identifies them.
    assert_eq!(bodies(&facts), [1, 1, 2]);
    // And a keyed reference never replaces a keyless one.
    merge_by(
        &mut facts,
        AppendUpdate::items([reference(Some("x"), None, 3)]),
        reference_key,
    );
    assert_eq!(bodies(&facts), [1, 1, 2, 3]);
}

#[test]
fn the_clear_sentinel_and_replace_work_as_for_append() {
    let mut facts = vec![reference(Some("a"), None, 1), finding(2)];
    merge_by(
        &mut facts,
        AppendUpdate::replace([reference(Some("a"), None, 3), reference(Some("a"), None, 4)]),
        reference_key,
    );
    assert_eq!(bodies(&facts), [4]);
    merge_by(&mut facts, AppendUpdate::clear(), reference_key);
    assert!(facts.is_empty());
}

fn facts() -> impl Strategy<Value = Vec<Fact>> {
    let fact = (0u8..4, 0u8..6, any::<u16>()).prop_map(|(shape, id, body)| match shape {
        0 => finding(body),
        1 => reference(Some(&id.to_string()), None, body),
        2 => reference(None, Some(&format!("10.{id}/A")), body),
        _ => reference(None, None, body), // keyless
    });
    prop::collection::vec(fact, 0..40)
}

/// The reference semantics, written as plainly as possible: a scan per item.
fn merge_by_scanning(list: &mut Vec<Fact>, items: Vec<Fact>) {
    for item in items {
        let key = reference_key(&item);
        let hit = key.as_ref().and_then(|k| {
            list.iter()
                .position(|x| reference_key(x).as_ref() == Some(k))
        });
        match hit {
            Some(i) => list[i] = item,
            None => list.push(item),
        }
    }
}

proptest! {
    #[test]
    fn merge_by_agrees_with_a_scan_per_item(start in facts(), items in facts()) {
        let mut base = Vec::new();
        merge_by(&mut base, AppendUpdate::items(start), reference_key);
        let mut indexed = base.clone();
        merge_by(&mut indexed, AppendUpdate::items(items.clone()), reference_key);
        let mut scanned = base;
        merge_by_scanning(&mut scanned, items);
        prop_assert_eq!(indexed, scanned);
    }

    #[test]
    fn merging_the_same_items_twice_changes_nothing_for_keyed_items(start in facts(), items in facts()) {
        let keyed: Vec<Fact> = items.into_iter().filter(|f| reference_key(f).is_some()).collect();
        let mut once = Vec::new();
        merge_by(&mut once, AppendUpdate::items(start), reference_key);
        merge_by(&mut once, AppendUpdate::items(keyed.clone()), reference_key);
        let mut twice = once.clone();
        merge_by(&mut twice, AppendUpdate::items(keyed), reference_key);
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn keys_stay_unique_positions_are_kept_and_the_last_write_wins(start in facts(), items in facts()) {
        let mut before = Vec::new();
        merge_by(&mut before, AppendUpdate::items(start), reference_key);
        let mut after = before.clone();
        merge_by(&mut after, AppendUpdate::items(items.clone()), reference_key);
        let keys: Vec<String> = after.iter().filter_map(reference_key).collect();
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), keys.len());
        // Items already present keep their position (only their value may change).
        for (i, old) in before.iter().enumerate() {
            prop_assert_eq!(reference_key(&after[i]), reference_key(old));
        }
        for item in items.iter().filter(|f| reference_key(f).is_some()) {
            let key = reference_key(item);
            let last = items.iter().rev().find(|f| reference_key(f) == key);
            prop_assert_eq!(after.iter().find(|f| reference_key(f) == key), last);
        }
    }

    #[test]
    fn items_without_a_key_are_always_appended_in_order(start in facts(), items in facts()) {
        let mut list = Vec::new();
        merge_by(&mut list, AppendUpdate::items(start), reference_key);
        let before: Vec<Fact> = list.iter().filter(|f| reference_key(f).is_none()).cloned().collect();
        merge_by(&mut list, AppendUpdate::items(items.clone()), reference_key);
        let unkeyed_after: Vec<Fact> = list.into_iter().filter(|f| reference_key(f).is_none()).collect();
        let added: Vec<Fact> = items.into_iter().filter(|f| reference_key(f).is_none()).collect();
        prop_assert_eq!(unkeyed_after, [before, added].concat());
    }
}

// --- capped history -----------------------------------------------------------------------

/// The summary keeps every folded entry, so the laws can check that nothing is lost.
fn keep_all(summary: Option<Vec<u32>>, folded: Vec<Vec<u32>>) -> Vec<u32> {
    let mut all = summary.unwrap_or_default();
    all.extend(folded.into_iter().flatten());
    all
}

#[test]
fn the_history_keeps_the_last_entries_behind_one_summary() {
    let mut folds = Vec::new();
    let mut fold = |summary: Option<String>, folded: Vec<String>| {
        folds.push((summary.clone(), folded.clone()));
        format!("{}+{}", summary.unwrap_or_default(), folded.join(""))
    };
    let mut history: Vec<String> = Vec::new();
    let entries = |xs: &[&str]| AppendUpdate::items(xs.iter().map(ToString::to_string));
    append_capped(&mut history, entries(&["a", "b", "c"]), 3, &mut fold);
    assert_eq!(history, ["a", "b", "c"]);
    append_capped(&mut history, entries(&["d"]), 3, &mut fold);
    assert_eq!(history, ["+a", "b", "c", "d"]);
    append_capped(&mut history, entries(&["e", "f"]), 3, &mut fold);
    assert_eq!(history, ["+a+bc", "d", "e", "f"]);
    append_capped(&mut history, AppendUpdate::default(), 3, &mut fold);
    assert_eq!(history.len(), 4);
    append_capped(
        &mut history,
        AppendUpdate::replace(["z".to_string()]),
        3,
        &mut fold,
    );
    assert_eq!(history, ["z"]);
    assert_eq!(
        folds,
        [
            (None, vec!["a".to_string()]),
            (
                Some("+a".to_string()),
                vec!["b".to_string(), "c".to_string()]
            ),
        ]
    );
}

#[test]
fn a_cap_of_zero_keeps_only_the_summary() {
    let mut history: Vec<Vec<u32>> = Vec::new();
    append_capped(
        &mut history,
        AppendUpdate::items([vec![1], vec![2]]),
        0,
        keep_all,
    );
    append_capped(&mut history, AppendUpdate::item(vec![3]), 0, keep_all);
    assert_eq!(history, [vec![1, 2, 3]]);
}

proptest! {
    #[test]
    fn a_capped_history_loses_nothing_and_holds_at_most_max_plus_one(
        max in 0usize..6,
        updates in prop::collection::vec(prop::collection::vec(any::<u32>(), 0..8), 0..12),
    ) {
        let mut history: Vec<Vec<u32>> = Vec::new();
        let mut pushed = Vec::new();
        for update in updates {
            pushed.extend(update.iter().copied());
            let entries = update.into_iter().map(|x| vec![x]);
            append_capped(&mut history, AppendUpdate::items(entries), max, keep_all);
            prop_assert!(history.len() <= max + 1);
            // The summary (the first entry when the list is longer than max) and the recent
            // entries are exactly what was pushed, in order: fold saw each dropped entry once.
            let everything: Vec<u32> = history.iter().flatten().copied().collect();
            prop_assert_eq!(&everything, &pushed);
            // Once something is folded, the entries after the summary are the last `max` pushes.
            if history.len() > max {
                let recent: Vec<u32> = history[1..].iter().flatten().copied().collect();
                prop_assert_eq!(&recent[..], &pushed[pushed.len() - max..]);
            }
        }
    }

    #[test]
    fn capping_a_then_b_equals_capping_a_concat_b_with_a_lossless_fold(
        max in 1usize..6,
        a in prop::collection::vec(any::<u32>(), 0..8),
        b in prop::collection::vec(any::<u32>(), 0..8),
    ) {
        // With a fold that keeps everything, applying a then b equals applying a ++ b.
        let wrap = |xs: &[u32]| xs.iter().map(|&x| vec![x]).collect::<Vec<_>>();
        let mut stepwise = Vec::new();
        append_capped(&mut stepwise, AppendUpdate::items(wrap(&a)), max, keep_all);
        append_capped(&mut stepwise, AppendUpdate::items(wrap(&b)), max, keep_all);
        let mut at_once = Vec::new();
        append_capped(&mut at_once, AppendUpdate::items(wrap(&[a, b].concat())), max, keep_all);
        prop_assert_eq!(stepwise, at_once);
    }
}

// --- the derive, serde and checkpoints ------------------------------------------------------

const HISTORY_CAP: usize = 2;

fn summarise(summary: Option<String>, folded: Vec<String>) -> String {
    let mut parts: Vec<String> = summary.into_iter().collect();
    parts.extend(folded);
    format!("[{}]", parts.join(" "))
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Research {
    #[reducer(merge_by = reference_key)]
    facts: Vec<Fact>,
    #[reducer(capped(max = HISTORY_CAP, fold = summarise))]
    history: Vec<String>,
    #[reducer(add)]
    step: u32,
}

#[test]
fn the_derive_declares_the_reducers_and_combines_builder_calls() {
    assert_eq!(
        Research::FIELDS[..2],
        [
            Field {
                name: "facts",
                reducer: ReducerKind::MergeBy
            },
            Field {
                name: "history",
                reducer: ReducerKind::Capped
            },
        ]
    );
    let update = ResearchUpdate::new()
        .facts(vec![reference(Some("a"), None, 1)])
        .facts(AppendUpdate::items([
            finding(2),
            reference(Some("a"), None, 3),
        ]))
        .history(vec!["h1".to_string(), "h2".to_string()])
        .history(vec!["h3".to_string()]);
    assert_eq!(update.written_fields(), ["facts", "history"]);
    let mut state = Research::default();
    state.apply_update(update).unwrap();
    assert_eq!(bodies(&state.facts), [3, 2]);
    assert_eq!(state.history, ["[h1]", "h2", "h3"]);
}

#[test]
fn the_updates_round_trip_through_serde_as_list_updates() {
    let update = ResearchUpdate::new()
        .facts(AppendUpdate::replace([reference(Some("a"), None, 1)]))
        .history(vec!["h".to_string()]);
    let json = serde_json::to_value(&update).unwrap();
    assert_eq!(json["history"], serde_json::json!(["h"]));
    assert_eq!(json["facts"]["clear"], serde_json::json!(true));
    let back: ResearchUpdate = serde_json::from_value(json).unwrap();
    let (mut a, mut b) = (Research::default(), Research::default());
    a.apply_update(update).unwrap();
    b.apply_update(back).unwrap();
    assert_eq!(a, b);
}

/// One node that adds a reference (re-found on every second step, so it merges), a
/// finding and a history entry per step.
fn research_graph(saver: Arc<dyn Checkpointer>, steps: u32) -> graphkit::CompiledGraph<Research> {
    let mut g = StateGraph::<Research>::new();
    g.add_node("work", |s: Arc<Research>| async move {
        let id = (s.step / 2).to_string();
        ResearchUpdate::new()
            .facts(vec![
                reference(Some(&id), None, u16::try_from(s.step).unwrap()),
                finding(1000 + u16::try_from(s.step).unwrap()),
            ])
            .history(vec![format!("step {}", s.step)])
            .step(1)
    })
    .add_edge(START, "work")
    .add_conditional_edges(
        "work",
        move |s: &Research| if s.step < steps { "work" } else { END },
        ["work", END],
    );
    g.compile_with(CompileOptions::new().checkpointer(saver))
        .unwrap()
}

#[tokio::test]
async fn checkpoint_deltas_replay_both_reducers_exactly() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = research_graph(saver.clone(), 9);
    let config = RunConfig::new().thread_id("t");
    let out = graph
        .invoke_with(ResearchUpdate::new(), config.clone())
        .await
        .unwrap()
        .into_state();

    // The final state, computed by hand.
    assert_eq!(out.step, 9);
    let references: Vec<u16> = out
        .facts
        .iter()
        .filter(|f| f.kind == Kind::ScholarReference)
        .map(|f| f.body)
        .collect();
    assert_eq!(references, [1, 3, 5, 7, 8]);
    assert_eq!(out.facts.len(), 5 + 9);
    assert_eq!(
        out.history,
        [
            "[[[[[[[step 0] step 1] step 2] step 3] step 4] step 5] step 6]",
            "step 7",
            "step 8"
        ]
    );

    // Most records are deltas of the step's updates; loading replays them.
    let records: Vec<CheckpointRecord> =
        saver.list("t", "", &ListOptions::default()).await.unwrap();
    assert!(
        records.iter().any(|r| !r.is_snapshot),
        "expected delta checkpoints"
    );
    let latest = graph.get_state(&config).await.unwrap();
    assert_eq!(latest.values, out);

    // Every earlier state rebuilt from the deltas equals a run stopped at that step.
    let history = graph
        .get_state_history(&config, &ListOptions::default())
        .await
        .unwrap();
    for snapshot in history.iter().filter(|s| s.values.step > 0) {
        let steps = snapshot.values.step;
        let fresh = research_graph(Arc::new(InMemorySaver::new()), steps)
            .invoke_with(ResearchUpdate::new(), RunConfig::new().thread_id("fresh"))
            .await
            .unwrap()
            .into_state();
        assert_eq!(snapshot.values, fresh, "state after step {steps}");
    }
}

#[tokio::test]
async fn two_overwrites_of_a_merge_by_or_capped_field_in_one_step_fail_like_append() {
    for field in ["facts", "history"] {
        let reset = move |name: &'static str| {
            move |_: Arc<Research>| async move {
                match field {
                    "facts" => ResearchUpdate::new().facts(AppendUpdate::replace([finding(1)])),
                    _ => ResearchUpdate::new().history(AppendUpdate::replace([name.to_string()])),
                }
            }
        };
        let mut g = StateGraph::<Research>::new();
        g.add_node("left", reset("left"))
            .add_node("right", reset("right"))
            .add_edge(START, "left")
            .add_edge(START, "right");
        let err = g
            .compile()
            .unwrap()
            .invoke(ResearchUpdate::new())
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::SecondOverwrite { field: f, first, second }
                if *f == field && first == "left" && second == "right"),
            "{field}: {err}"
        );
    }
}
