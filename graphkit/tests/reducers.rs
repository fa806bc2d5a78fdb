//! Reducer semantics and their laws (property tests).

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::collections::HashMap;

use graphkit::reducers::{
    Append, KeyedOp, KeyedVec, ListOp, MergeByKey, Reducer, StateUpdate, StepWrites,
};
use graphkit::{AppendUpdate, Error, Keyed, KeyedUpdate, State};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Doc {
    id: u8,
    body: u16,
}

impl Keyed for Doc {
    type Key = u8;
    fn key(&self) -> &u8 {
        &self.id
    }
}

fn concat<T: Clone>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().chain(b).cloned().collect()
}

fn docs() -> impl Strategy<Value = Vec<Doc>> {
    prop::collection::vec(
        (0u8..20, any::<u16>()).prop_map(|(id, body)| Doc { id, body }),
        0..40,
    )
}

proptest! {
    #[test]
    fn appending_a_then_b_equals_appending_a_concat_b(
        start in prop::collection::vec(any::<i32>(), 0..20),
        a in prop::collection::vec(any::<i32>(), 0..20),
        b in prop::collection::vec(any::<i32>(), 0..20),
    ) {
        let mut stepwise = start.clone();
        Append::reduce(&mut stepwise, AppendUpdate::items(a.clone()));
        Append::reduce(&mut stepwise, AppendUpdate::items(b.clone()));
        let mut at_once = start.clone();
        Append::reduce(&mut at_once, AppendUpdate::items(concat(&a, &b)));
        prop_assert_eq!(&stepwise, &at_once);
        prop_assert_eq!(stepwise, concat(&start, &concat(&a, &b)));
    }

    #[test]
    fn combining_append_updates_with_then_is_applying_them_in_order(
        start in prop::collection::vec(any::<i8>(), 0..10),
        ops in prop::collection::vec(prop_oneof![any::<i8>().prop_map(Some), Just(None)], 0..30),
    ) {
        let updates: Vec<AppendUpdate<i8>> = ops
            .iter()
            .map(|op| op.map_or_else(AppendUpdate::clear, AppendUpdate::item))
            .collect();
        let mut stepwise = start.clone();
        for u in updates.clone() {
            Append::reduce(&mut stepwise, u);
        }
        let combined = updates.into_iter().fold(AppendUpdate::default(), AppendUpdate::then);
        let mut at_once = start;
        Append::reduce(&mut at_once, combined);
        prop_assert_eq!(stepwise, at_once);
    }

    #[test]
    fn the_clear_sentinel_leaves_only_what_follows_it(
        start in prop::collection::vec(any::<i32>(), 0..20),
        before in prop::collection::vec(any::<i32>(), 0..20),
        after in prop::collection::vec(any::<i32>(), 0..20),
    ) {
        let ops = before.iter().copied().map(ListOp::Push)
            .chain(std::iter::once(ListOp::Clear))
            .chain(after.iter().copied().map(ListOp::Push));
        let mut list = start;
        Append::reduce(&mut list, AppendUpdate::from_ops(ops));
        prop_assert_eq!(list, after);
    }

    #[test]
    fn merge_by_key_is_idempotent_for_repeated_items(start in docs(), items in docs()) {
        let mut once = Vec::new();
        MergeByKey::reduce(&mut once, KeyedUpdate::upsert(start));
        MergeByKey::reduce(&mut once, KeyedUpdate::upsert(items.clone()));
        let mut twice = once.clone();
        MergeByKey::reduce(&mut twice, KeyedUpdate::upsert(items));
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn merge_by_key_keeps_keys_unique_and_last_write_wins(start in docs(), items in docs()) {
        // Start from a list without duplicate keys, as the reducer itself produces.
        let mut list = Vec::new();
        MergeByKey::reduce(&mut list, KeyedUpdate::upsert(start));
        MergeByKey::reduce(&mut list, KeyedUpdate::upsert(items.clone()));
        let mut keys: Vec<u8> = list.iter().map(|d| d.id).collect();
        keys.sort_unstable();
        keys.dedup();
        prop_assert_eq!(keys.len(), list.len());
        for item in &items {
            let last = items.iter().rev().find(|d| d.id == item.id);
            prop_assert_eq!(list.iter().find(|d| d.id == item.id), last);
        }
    }

    #[test]
    fn indexed_and_linear_merges_agree(
        start in prop::collection::vec((0u8..60, any::<u16>()).prop_map(|(id, body)| Doc { id, body }), 0..60),
        ops in prop::collection::vec(
            prop_oneof![
                (0u8..60, any::<u16>()).prop_map(|(id, body)| KeyedOp::Upsert(Doc { id, body })),
                (0u8..60).prop_map(KeyedOp::Remove),
                Just(KeyedOp::RemoveAll).prop_map(|o: KeyedOp<Doc>| o),
            ],
            0..60,
        ),
    ) {
        // Lists may repeat keys when built by hand; both paths must still agree.
        let base = start;
        // One op at a time keeps every merge below the indexing threshold (linear scan)...
        let mut linear = base.clone();
        for op in ops.clone() {
            MergeByKey::reduce(&mut linear, KeyedUpdate { ops: vec![op] });
        }
        // ...while all ops at once on a long list take the indexed path.
        let mut indexed = base;
        MergeByKey::reduce(&mut indexed, KeyedUpdate { ops });
        prop_assert_eq!(linear, indexed);
    }
}

proptest! {
    #[test]
    fn keyed_vec_merges_exactly_like_a_vec(
        start in docs(),
        ops in prop::collection::vec(
            prop_oneof![
                (0u8..20, any::<u16>()).prop_map(|(id, body)| KeyedOp::Upsert(Doc { id, body })),
                (0u8..20).prop_map(KeyedOp::Remove),
                Just(KeyedOp::RemoveAll).prop_map(|o: KeyedOp<Doc>| o),
            ],
            0..40,
        ),
    ) {
        let mut plain = Vec::new();
        MergeByKey::reduce(&mut plain, KeyedUpdate::upsert(start.clone()));
        let mut indexed: KeyedVec<Doc> = start.into_iter().collect();
        prop_assert_eq!(indexed.as_slice(), plain.as_slice());
        for op in ops {
            MergeByKey::reduce(&mut plain, KeyedUpdate { ops: vec![op.clone()] });
            MergeByKey::reduce(&mut indexed, KeyedUpdate { ops: vec![op] });
            prop_assert_eq!(indexed.as_slice(), plain.as_slice());
        }
        let json = serde_json::to_string(&indexed).unwrap();
        let back: KeyedVec<Doc> = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, indexed);
    }
}

#[test]
fn merge_by_key_replaces_in_place_appends_new_and_removes() {
    let mut docs = vec![
        Doc { id: 1, body: 10 },
        Doc { id: 2, body: 20 },
        Doc { id: 3, body: 30 },
    ];
    let update =
        KeyedUpdate::upsert([Doc { id: 2, body: 21 }, Doc { id: 4, body: 40 }]).and_remove(1);
    MergeByKey::reduce(&mut docs, update);
    assert_eq!(
        docs,
        [
            Doc { id: 2, body: 21 },
            Doc { id: 3, body: 30 },
            Doc { id: 4, body: 40 }
        ]
    );
    MergeByKey::reduce(&mut docs, KeyedUpdate::remove_all());
    assert!(docs.is_empty());
    MergeByKey::reduce(&mut docs, KeyedUpdate::replace([Doc { id: 9, body: 1 }]));
    assert_eq!(docs, [Doc { id: 9, body: 1 }]);
}

#[test]
fn merge_by_key_on_a_map_is_a_right_biased_union() {
    let mut map: HashMap<String, u32> = HashMap::from([("a".into(), 1), ("b".into(), 2)]);
    let update = KeyedUpdate::from(HashMap::from([
        ("b".to_string(), 20),
        ("c".to_string(), 30),
    ]));
    MergeByKey::reduce(&mut map, update);
    assert_eq!(
        map,
        HashMap::from([("a".into(), 1), ("b".into(), 20), ("c".into(), 30)])
    );
    MergeByKey::reduce(&mut map, KeyedUpdate::remove(["a".to_string()]));
    assert_eq!(map.len(), 2);
}

/// A hasher other than std's `RandomState` (this one is fixed-seed SipHash; a fast
/// hasher such as foldhash is used the same way).
type OtherHasher = std::hash::BuildHasherDefault<std::hash::DefaultHasher>;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Tally {
    #[reducer(merge_by_key)]
    by_name: HashMap<String, u32, OtherHasher>,
}

proptest! {
    #[test]
    fn a_map_field_with_any_hasher_is_the_right_biased_union_of_its_updates(
        updates in prop::collection::vec(
            prop::collection::vec(("[a-e]", any::<u32>()), 0..8),
            0..6,
        )
    ) {
        let mut tally = Tally::default();
        let mut expected = std::collections::BTreeMap::new();
        for (i, pairs) in updates.into_iter().enumerate() {
            // Every other update comes as a map with another hasher than the field's.
            let update = if i % 2 == 0 {
                TallyUpdate::new().by_name(pairs.iter().cloned().collect::<HashMap<String, u32>>())
            } else {
                TallyUpdate::new().by_name(pairs.clone())
            };
            for (name, n) in if i % 2 == 0 {
                // A map keeps the last value of a repeated key, as the merge does.
                pairs.into_iter().collect::<HashMap<_, _>>().into_iter().collect::<Vec<_>>()
            } else {
                pairs
            } {
                expected.insert(name, n);
            }
            tally.apply_update(update).unwrap();
        }
        let got: std::collections::BTreeMap<String, u32> = tally.by_name.into_iter().collect();
        prop_assert_eq!(got, expected);
    }
}

fn map_ops() -> impl Strategy<Value = Vec<KeyedOp<(u8, u16)>>> {
    prop::collection::vec(
        prop_oneof![
            8 => (0u8..30, any::<u16>()).prop_map(KeyedOp::Upsert),
            2 => (0u8..30).prop_map(KeyedOp::Remove),
            1 => Just(KeyedOp::RemoveAll),
        ],
        0..120,
    )
}

proptest! {
    #[test]
    fn merging_into_a_hash_map_matches_a_sorted_map_op_by_op(
        start in prop::collection::btree_map(0u8..30, any::<u16>(), 0..30),
        updates in prop::collection::vec(map_ops(), 0..6),
    ) {
        let mut map: HashMap<u8, u16> = start.clone().into_iter().collect();
        let mut model = start;
        for ops in updates {
            for op in ops.clone() {
                match op {
                    KeyedOp::Upsert((k, v)) => {
                        model.insert(k, v);
                    }
                    KeyedOp::Remove(k) => {
                        model.remove(&k);
                    }
                    KeyedOp::RemoveAll => model.clear(),
                }
            }
            MergeByKey::reduce(&mut map, KeyedUpdate { ops });
            let got: std::collections::BTreeMap<u8, u16> =
                map.iter().map(|(k, v)| (*k, *v)).collect();
            prop_assert_eq!(&got, &model);
        }
    }
}

fn keep_longest(current: &mut String, update: String) {
    if update.len() > current.len() {
        *current = update;
    }
}

fn bump(current: &mut u32, by: u8) {
    *current += u32::from(by) * 10;
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Everything {
    title: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(merge_by_key)]
    docs: Vec<Doc>,
    #[reducer(add)]
    count: i64,
    #[reducer(with = keep_longest)]
    longest: String,
    #[reducer(with = bump, update = u8)]
    scaled: u32,
}

#[test]
fn derived_update_applies_every_reducer() {
    let mut state = Everything::default();
    let update = EverythingUpdate::new()
        .title("t")
        .notes(vec!["a".to_string()])
        .notes(AppendUpdate::items(["b".to_string()]))
        .docs(vec![Doc { id: 1, body: 1 }])
        .count(2)
        .count(3)
        .longest("abc".to_string())
        .scaled(2u8);
    assert_eq!(
        update.written_fields(),
        ["title", "notes", "docs", "count", "longest", "scaled"]
    );
    state.apply_update(update).unwrap();
    state
        .apply_update(EverythingUpdate::new().longest("z".to_string()).count(-1))
        .unwrap();
    assert_eq!(state.title, "t");
    assert_eq!(state.notes, ["a", "b"]);
    assert_eq!(state.docs, [Doc { id: 1, body: 1 }]);
    assert_eq!(state.count, 4);
    assert_eq!(state.longest, "abc");
    assert_eq!(state.scaled, 20);
}

#[test]
fn update_serde_round_trip_skips_untouched_fields() {
    let update = EverythingUpdate::new()
        .title("x")
        .notes(AppendUpdate::replace(["n".to_string()]));
    let json = serde_json::to_value(&update).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"title": "x", "notes": {"clear": true, "items": ["n"]}})
    );
    let back: EverythingUpdate = serde_json::from_value(json).unwrap();
    assert_eq!(back.written_fields(), ["title", "notes"]);
    assert!(EverythingUpdate::new().is_empty());
}

#[test]
fn two_tasks_writing_one_last_value_field_in_a_step_is_an_error() {
    let mut state = Everything::default();
    let mut writes = StepWrites::default();
    writes.begin_task(0, &"alpha".into());
    state
        .apply(
            EverythingUpdate::new().title("a").notes(vec!["x".into()]),
            &mut writes,
        )
        .unwrap();
    // The same task writing again is fine.
    state
        .apply(EverythingUpdate::new().title("a2"), &mut writes)
        .unwrap();
    writes.begin_task(1, &"beta".into());
    // Reducer fields may be written by every task.
    state
        .apply(
            EverythingUpdate::new().notes(vec!["y".into()]).count(1),
            &mut writes,
        )
        .unwrap();
    let err = state
        .apply(EverythingUpdate::new().title("b"), &mut writes)
        .unwrap_err();
    match err {
        Error::InvalidConcurrentUpdate {
            field,
            first,
            second,
        } => {
            assert_eq!(
                (field, first.as_str(), second.as_str()),
                ("title", "alpha", "beta")
            );
        }
        other => panic!("unexpected error {other}"),
    }
}

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Plain {
    title: String,
    #[reducer(append)]
    notes: Vec<String>,
    #[reducer(add)]
    count: i64,
    #[reducer(with = keep_longest)]
    longest: String,
}

#[test]
fn a_whole_state_converts_into_an_update() {
    let state = Plain {
        title: "t".into(),
        notes: vec!["n".into()],
        count: 5,
        longest: "l".into(),
    };
    let mut fresh = Plain::default();
    fresh.apply_update(state.clone().into()).unwrap();
    assert_eq!(fresh.title, "t");
    assert_eq!(fresh.notes, ["n"]);
    assert_eq!(fresh, state);
}

#[test]
fn removing_a_key_that_is_not_there_is_an_error_naming_the_key() {
    let mut state = Everything::default();
    state
        .apply_update(EverythingUpdate::new().docs(vec![Doc { id: 1, body: 1 }]))
        .unwrap();
    let err = state
        .apply_update(EverythingUpdate::new().docs(KeyedUpdate::remove([7])))
        .unwrap_err();
    assert!(
        matches!(&err, Error::RemovedKeyNotFound { field: "docs", key } if key == "7"),
        "{err}"
    );
    assert_eq!(state.docs, [Doc { id: 1, body: 1 }], "nothing was applied");
}

#[test]
fn a_removal_sees_the_earlier_operations_of_its_own_update() {
    let mut state = Everything::default();
    // Upserted then removed in one update: present when the removal comes.
    state
        .apply_update(
            EverythingUpdate::new()
                .docs(KeyedUpdate::upsert([Doc { id: 3, body: 3 }]).and_remove(3)),
        )
        .unwrap();
    assert!(state.docs.is_empty());
    // Removed twice: the second removal finds nothing.
    state
        .apply_update(EverythingUpdate::new().docs(vec![Doc { id: 4, body: 4 }]))
        .unwrap();
    let err = state
        .apply_update(EverythingUpdate::new().docs(KeyedUpdate::remove([4, 4])))
        .unwrap_err();
    assert!(matches!(&err, Error::RemovedKeyNotFound { .. }), "{err}");
}

#[test]
fn a_second_overwrite_of_a_field_in_one_step_is_an_error_even_from_one_task() {
    let mut state = Everything::default();
    let mut writes = StepWrites::default();
    writes.begin_task(0, &"alpha".into());
    state
        .apply(
            EverythingUpdate::new().notes(AppendUpdate::replace(["a".to_string()])),
            &mut writes,
        )
        .unwrap();
    let err = state
        .apply(
            EverythingUpdate::new()
                .docs(KeyedUpdate::remove_all())
                .notes(AppendUpdate::clear()),
            &mut writes,
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::SecondOverwrite { field: "notes", first, second }
            if first == "alpha" && second == "alpha"),
        "{err}"
    );
}

/// Applies `updates` (task number, node, update) as the writes of one step, in the order given.
fn one_step(updates: Vec<(usize, &str, EverythingUpdate)>) -> Everything {
    let mut state = Everything {
        notes: vec!["old".into()],
        docs: vec![Doc { id: 1, body: 1 }],
        ..Everything::default()
    };
    let mut writes = StepWrites::default();
    for (task, name, update) in updates {
        writes.begin_task(task, &name.into());
        state.apply(update, &mut writes).unwrap();
    }
    state
}

#[test]
fn an_overwrite_wins_over_every_other_write_of_its_step_in_any_task_order() {
    let replace = || {
        EverythingUpdate::new()
            .notes(AppendUpdate::replace(["fresh".to_string()]))
            .docs(KeyedUpdate::remove_all().and_upsert(Doc { id: 9, body: 9 }))
    };
    let append = || {
        EverythingUpdate::new()
            .notes(vec!["sibling".to_string()])
            .docs(vec![Doc { id: 2, body: 2 }])
    };
    let before = one_step(vec![(0, "a", append()), (1, "b", replace())]);
    let after = one_step(vec![(0, "a", replace()), (1, "b", append())]);
    assert_eq!(before.notes, ["fresh"]);
    assert_eq!(before.docs, [Doc { id: 9, body: 9 }]);
    assert_eq!(
        after, before,
        "the order of the tasks does not change the result"
    );
}

#[test]
fn a_task_s_own_writes_after_its_overwrite_apply_in_order() {
    let state = one_step(vec![
        (
            0,
            "other",
            EverythingUpdate::new().notes(vec!["overwritten".to_string()]),
        ),
        (
            1,
            "writer",
            EverythingUpdate::new().notes(AppendUpdate::replace(["first".to_string()])),
        ),
        (
            1,
            "writer",
            EverythingUpdate::new().notes(vec!["second".to_string()]),
        ),
        (
            2,
            "late",
            EverythingUpdate::new().notes(vec!["dropped".to_string()]),
        ),
    ]);
    assert_eq!(state.notes, ["first", "second"]);
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(append)]
    lines: Vec<String>,
}

/// START fans out to `replacer` (replaces the list) and `appender` (appends to it).
async fn replace_beside_append(replacer: &str, appender: &str) -> Vec<String> {
    use std::sync::Arc;
    let mut graph = graphkit::StateGraph::<Log>::new();
    graph
        .add_node(replacer, |_: Arc<Log>| async {
            LogUpdate::new().lines(AppendUpdate::replace(["replaced".to_string()]))
        })
        .add_node(appender, |_: Arc<Log>| async {
            LogUpdate::new().lines(vec!["appended".to_string()])
        })
        .add_edge(graphkit::START, replacer)
        .add_edge(graphkit::START, appender);
    let graph = graph.compile().unwrap();
    let input = LogUpdate::new().lines(vec!["input".to_string()]);
    graph.invoke(input).await.unwrap().into_state().lines
}

#[tokio::test]
async fn a_replace_beside_an_append_gives_the_same_list_whatever_the_node_names() {
    // Tasks of a step apply in node order: "a..." before "z...", and the other way round.
    let replacer_first = replace_beside_append("a_replace", "z_append").await;
    let appender_first = replace_beside_append("z_replace", "a_append").await;
    assert_eq!(replacer_first, ["replaced"]);
    assert_eq!(appender_first, ["replaced"]);
}

#[test]
fn an_append_is_a_plain_list_in_json_and_the_older_object_form_still_reads() {
    let append = EverythingUpdate::new().notes(vec!["a".to_string(), "b".to_string()]);
    let json = serde_json::to_value(&append).unwrap();
    assert_eq!(json, serde_json::json!({"notes": ["a", "b"]}));
    let back: EverythingUpdate = serde_json::from_value(json).unwrap();
    assert_eq!(back.notes, append.notes);
    // What graphkit wrote before (checkpoints, pending writes) reads the same.
    let older: EverythingUpdate =
        serde_json::from_value(serde_json::json!({"notes": {"items": ["a", "b"]}})).unwrap();
    assert_eq!(older.notes, append.notes);
    let cleared: EverythingUpdate =
        serde_json::from_value(serde_json::json!({"notes": {"clear": true}})).unwrap();
    assert_eq!(cleared.notes, Some(AppendUpdate::clear()));
    // Anything else is refused with what an append looks like.
    let error =
        serde_json::from_value::<EverythingUpdate>(serde_json::json!({"notes": {"item": ["a"]}}))
            .unwrap_err();
    assert!(
        error.to_string().contains("unknown field `item`"),
        "{error}"
    );
    let error =
        serde_json::from_value::<EverythingUpdate>(serde_json::json!({"notes": "a"})).unwrap_err();
    assert!(
        error.to_string().contains("a list of items to append"),
        "{error}"
    );
}

#[test]
fn a_keyed_update_is_its_items_in_json_or_its_operations_when_it_removes() {
    let upserts = EverythingUpdate::new().docs(KeyedUpdate::upsert([Doc { id: 1, body: 2 }]));
    let json = serde_json::to_value(&upserts).unwrap();
    assert_eq!(json, serde_json::json!({"docs": [{"id": 1, "body": 2}]}));
    let back: EverythingUpdate = serde_json::from_value(json).unwrap();
    assert_eq!(back.docs, upserts.docs);

    let removes = KeyedUpdate::remove_all()
        .and_upsert(Doc { id: 1, body: 2 })
        .and_remove(1);
    let json = serde_json::to_value(EverythingUpdate::new().docs(removes.clone())).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"docs": {"ops": ["RemoveAll", {"Upsert": {"id": 1, "body": 2}}, {"Remove": 1}]}})
    );
    let back: EverythingUpdate = serde_json::from_value(json).unwrap();
    assert_eq!(back.docs, Some(removes));

    let error =
        serde_json::from_value::<EverythingUpdate>(serde_json::json!({"docs": 3})).unwrap_err();
    assert!(
        error.to_string().contains("a list of items to upsert"),
        "{error}"
    );
}

#[tokio::test]
async fn checkpoints_keep_storing_keyed_updates_as_their_operations() {
    use std::sync::Arc;

    use graphkit::checkpoint::{Checkpointer, InMemorySaver};
    use graphkit::{CompileOptions, RunConfig, START, StateGraph, SyncNode};

    let saver = Arc::new(InMemorySaver::new());
    let mut graph = StateGraph::<Everything>::new();
    graph
        .add_node(
            "add",
            SyncNode::new(|_: &Everything| {
                EverythingUpdate::new().docs(KeyedUpdate::upsert([Doc { id: 7, body: 1 }]))
            }),
        )
        .add_node(
            "edit",
            SyncNode::new(|_: &Everything| {
                EverythingUpdate::new().docs(KeyedUpdate::upsert([Doc { id: 7, body: 2 }]))
            }),
        )
        .add_edge(START, "add")
        .add_edge("add", "edit");
    let graph = graph
        .compile_with(CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new().thread_id("keyed");
    let done = graph
        .invoke_with(EverythingUpdate::new(), config.clone())
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.docs, [Doc { id: 7, body: 2 }]);
    // The step's delta holds the operations as graphkit has always stored them, so
    // threads saved by earlier versions load, and this one reloads the same.
    let newest = saver.get("keyed", "", None).await.unwrap().unwrap().record;
    assert!(!newest.is_snapshot);
    let payload = String::from_utf8(newest.payload).unwrap();
    assert!(
        payload.contains(r#""docs":[{"Upsert":{"id":7,"body":2}}]"#),
        "{payload}"
    );
    assert_eq!(
        graph.get_state(&config).await.unwrap().values.docs,
        done.docs
    );
}
