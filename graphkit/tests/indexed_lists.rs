//! The indexed merge-by-key lists (`KeyedVec`, `MergeByVec`) against naive reference
//! models: random upserts, removals, clears and caps, with checkpoint round trips (serde)
//! in between; the derive's `max = N`; the key function running once per item.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::cell::Cell;

use graphkit::reducers::{KeyedOp, KeyedVec, MergeByKey, MergeByVec, Reducer};
use graphkit::{AppendUpdate, Keyed, KeyedUpdate, State};
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

/// One step of a random history of a static-key list.
#[derive(Clone, Debug)]
enum StaticStep {
    Update(Vec<KeyedOp<Doc>>),
    Cap(usize),
    Checkpoint,
}

fn keyed_op() -> impl Strategy<Value = KeyedOp<Doc>> {
    prop_oneof![
        6 => (0u8..24, any::<u16>()).prop_map(|(id, body)| KeyedOp::Upsert(Doc { id, body })),
        3 => (0u8..24).prop_map(KeyedOp::Remove),
        1 => Just(KeyedOp::RemoveAll),
    ]
}

fn static_step() -> impl Strategy<Value = StaticStep> {
    prop_oneof![
        6 => prop::collection::vec(keyed_op(), 0..6).prop_map(StaticStep::Update),
        2 => (0usize..12).prop_map(StaticStep::Cap),
        1 => Just(StaticStep::Checkpoint),
    ]
}

/// The reference: a plain list, scanned for every op.
fn naive_keyed(model: &mut Vec<Doc>, ops: Vec<KeyedOp<Doc>>) {
    for op in ops {
        match op {
            KeyedOp::Upsert(doc) => match model.iter_mut().find(|d| d.id == doc.id) {
                Some(old) => *old = doc,
                None => model.push(doc),
            },
            KeyedOp::Remove(id) => model.retain(|d| d.id != id),
            KeyedOp::RemoveAll => model.clear(),
        }
    }
}

fn keep_last<T>(model: &mut Vec<T>, max: usize) {
    let excess = model.len().saturating_sub(max);
    model.drain(..excess);
}

/// A serde round trip, as a checkpoint does: the JSON is a plain list.
fn round_trip<T: Serialize + for<'de> Deserialize<'de>>(value: &T) -> T {
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn keyed_vec_with_caps_and_checkpoints_matches_a_naive_list(
        steps in prop::collection::vec(static_step(), 0..60),
    ) {
        let mut list: KeyedVec<Doc> = KeyedVec::new();
        let mut model: Vec<Doc> = Vec::new();
        for step in steps {
            match step {
                StaticStep::Update(ops) => {
                    naive_keyed(&mut model, ops.clone());
                    MergeByKey::reduce(&mut list, KeyedUpdate { ops });
                }
                StaticStep::Cap(max) => {
                    keep_last(&mut model, max);
                    list.keep_last(max);
                }
                StaticStep::Checkpoint => {
                    let json = serde_json::to_string(&list).unwrap();
                    prop_assert_eq!(&json, &serde_json::to_string(&model).unwrap());
                    list = serde_json::from_str(&json).unwrap();
                }
            }
            prop_assert_eq!(list.as_slice(), model.as_slice());
            for id in 0..24u8 {
                prop_assert_eq!(list.get(&id), model.iter().find(|d| d.id == id));
                prop_assert_eq!(list.contains_key(&id), model.iter().any(|d| d.id == id));
            }
        }
        let back: KeyedVec<Doc> = round_trip(&list);
        prop_assert_eq!(&back, &list);
        prop_assert_eq!(list.into_vec(), model);
    }

    #[test]
    fn keyed_vec_remove_returns_the_item_and_keeps_the_index(
        start in prop::collection::vec((0u8..24, any::<u16>()), 0..30),
        evicted in 0usize..10,
        removed in prop::collection::vec(0u8..24, 0..30),
    ) {
        let docs = start.into_iter().map(|(id, body)| Doc { id, body });
        let mut list: KeyedVec<Doc> = docs.collect();
        let mut model = list.as_slice().to_vec();
        let max = model.len().saturating_sub(evicted);
        list.keep_last(max);
        keep_last(&mut model, max);
        for id in removed {
            let expected = model.iter().position(|d| d.id == id).map(|i| model.remove(i));
            prop_assert_eq!(list.remove(&id), expected);
            prop_assert_eq!(list.as_slice(), model.as_slice());
            for doc in &model {
                prop_assert_eq!(list.get(&doc.id), Some(doc));
            }
        }
    }
}

// --- computed keys ------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Fact {
    /// Only references merge; notes are appended.
    reference: bool,
    id: u8,
    body: u16,
}

fn fact_key(fact: &Fact) -> Option<u8> {
    fact.reference.then_some(fact.id)
}

fn fact() -> impl Strategy<Value = Fact> {
    (prop::bool::weighted(0.8), 0u8..24, any::<u16>()).prop_map(|(reference, id, body)| Fact {
        reference,
        id,
        body,
    })
}

#[derive(Clone, Debug)]
enum ComputedStep {
    Update(AppendUpdate<Fact>),
    Cap(usize),
    Checkpoint,
}

fn computed_step() -> impl Strategy<Value = ComputedStep> {
    prop_oneof![
        6 => (prop::bool::weighted(0.1), prop::collection::vec(fact(), 0..6))
            .prop_map(|(clear, items)| ComputedStep::Update(AppendUpdate { clear, items })),
        2 => (0usize..12).prop_map(ComputedStep::Cap),
        1 => Just(ComputedStep::Checkpoint),
    ]
}

/// The reference: every key of the list computed again for every item; the first item
/// with a key takes the update.
fn naive_merge_by(model: &mut Vec<Fact>, update: AppendUpdate<Fact>) {
    if update.clear {
        model.clear();
    }
    for item in update.items {
        let slot =
            fact_key(&item).and_then(|k| model.iter().position(|old| fact_key(old) == Some(k)));
        match slot {
            Some(i) => model[i] = item,
            None => model.push(item),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The start list is built by hand, so it may repeat keys (as a list restored from a
    /// checkpoint written by a plain `Vec` field may).
    #[test]
    fn merge_by_vec_with_caps_and_checkpoints_matches_a_naive_list(
        start in prop::collection::vec(fact(), 0..20),
        steps in prop::collection::vec(computed_step(), 0..60),
    ) {
        let mut list: MergeByVec<Fact, u8> = MergeByVec::from(start.clone());
        let mut model = start;
        for step in steps {
            match step {
                ComputedStep::Update(update) => {
                    naive_merge_by(&mut model, update.clone());
                    list.merge(update, fact_key);
                }
                ComputedStep::Cap(max) => {
                    keep_last(&mut model, max);
                    list.keep_last(max);
                }
                ComputedStep::Checkpoint => {
                    let json = serde_json::to_string(&list).unwrap();
                    prop_assert_eq!(&json, &serde_json::to_string(&model).unwrap());
                    list = serde_json::from_str(&json).unwrap();
                }
            }
            prop_assert_eq!(list.as_slice(), model.as_slice());
        }
        let back: MergeByVec<Fact, u8> = round_trip(&list);
        prop_assert_eq!(&back, &list);
        prop_assert_eq!(list.into_vec(), model);
    }
}

// --- through the derive -------------------------------------------------------------------

const CAP: usize = 5;

/// The indexed field types, capped.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Indexed {
    #[reducer(merge_by_key, max = CAP)]
    docs: KeyedVec<Doc>,
    #[reducer(merge_by = fact_key, max = CAP)]
    facts: MergeByVec<Fact, u8>,
}

/// The same fields as plain lists.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Plain {
    #[reducer(merge_by_key, max = CAP)]
    docs: Vec<Doc>,
    #[reducer(merge_by = fact_key, max = CAP)]
    facts: Vec<Fact>,
}

proptest! {
    #[test]
    fn derived_capped_indexed_state_matches_plain_lists_and_survives_checkpoints(
        updates in prop::collection::vec(
            (prop::collection::vec(keyed_op(), 0..4), prop::collection::vec(fact(), 0..4), any::<bool>()),
            0..40,
        ),
    ) {
        let mut indexed = Indexed::default();
        let mut plain = Plain::default();
        for (ops, facts, checkpoint) in updates {
            // Removals of absent keys are refused in a step; keep them to present keys.
            let ops: Vec<_> = ops
                .into_iter()
                .filter(|op| !matches!(op, KeyedOp::Remove(id) if !plain.docs.iter().any(|d| d.id == *id)))
                .collect();
            let update = |ops: Vec<KeyedOp<Doc>>, facts: Vec<Fact>| {
                (KeyedUpdate { ops }, AppendUpdate::items(facts))
            };
            let (docs, items) = update(ops.clone(), facts.clone());
            let plain_result = plain.apply_update(PlainUpdate::new().docs(docs).facts(items));
            let (docs, items) = update(ops, facts);
            let indexed_result = indexed.apply_update(IndexedUpdate::new().docs(docs).facts(items));
            prop_assert_eq!(plain_result.is_ok(), indexed_result.is_ok());
            prop_assert!(indexed.docs.len() <= CAP && indexed.facts.len() <= CAP);
            prop_assert_eq!(
                serde_json::to_value(&indexed).unwrap(),
                serde_json::to_value(&plain).unwrap()
            );
            if checkpoint {
                indexed = round_trip(&indexed);
            }
        }
    }
}

#[test]
fn a_computed_key_runs_once_per_item_however_many_updates() {
    thread_local! {
        static CALLS: Cell<usize> = const { Cell::new(0) };
    }
    fn counted_key(fact: &Fact) -> Option<u8> {
        CALLS.with(|calls| calls.set(calls.get() + 1));
        fact_key(fact)
    }
    let fact = |id: u8, body| Fact {
        reference: true,
        id,
        body,
    };
    let mut list: MergeByVec<Fact, u8> = MergeByVec::new();
    for i in 0..1000u16 {
        list.merge(AppendUpdate::item(fact((i % 200) as u8, i)), counted_key);
    }
    assert_eq!(list.len(), 200);
    assert_eq!(CALLS.with(Cell::get), 1000);

    // A restored list computes its keys once, at its first merge.
    let mut restored: MergeByVec<Fact, u8> = round_trip(&list);
    CALLS.with(|calls| calls.set(0));
    for i in 0..10u16 {
        restored.merge(AppendUpdate::item(fact(i as u8, 5000 + i)), counted_key);
    }
    assert_eq!(CALLS.with(Cell::get), 200 + 10);
    assert_eq!(restored[3], fact(3, 5003));
}

#[test]
fn a_capped_keyed_list_drops_the_oldest_and_forgets_their_keys() {
    let doc = |id, body| Doc { id, body };
    let mut state = Indexed::default();
    let ids = 0..8u8;
    state
        .apply_update(IndexedUpdate::new().docs(ids.map(|id| doc(id, 0)).collect::<Vec<_>>()))
        .unwrap();
    assert_eq!(
        state.docs.iter().map(|d| d.id).collect::<Vec<_>>(),
        [3, 4, 5, 6, 7]
    );
    assert!(state.docs.get(&2).is_none());
    // An upsert of an evicted key appends it again (and evicts the oldest).
    state
        .apply_update(IndexedUpdate::new().docs(vec![doc(1, 9), doc(5, 9)]))
        .unwrap();
    assert_eq!(
        state
            .docs
            .iter()
            .map(|d| (d.id, d.body))
            .collect::<Vec<_>>(),
        [(4, 0), (5, 9), (6, 0), (7, 0), (1, 9)]
    );
    assert_eq!(
        serde_json::to_string(&state.docs).unwrap(),
        r#"[{"id":4,"body":0},{"id":5,"body":9},{"id":6,"body":0},{"id":7,"body":0},{"id":1,"body":9}]"#
    );
}
