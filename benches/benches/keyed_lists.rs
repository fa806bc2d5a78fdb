//! Per-update cost of the merge-by-key reducers on a list that already holds `n` items,
//! through the derived `State::apply`: a static key (`Keyed`), a computed key
//! (`merge_by = key_fn`) and capped lists (`max = n`, every update a new key that evicts
//! the oldest), each on the indexed field type (`KeyedVec`, `MergeByVec`) and on a plain
//! `Vec` for comparison. The state lives across iterations, as it does across steps, so
//! an indexed list's cost is flat in `n` and a plain one's grows with it.
//!
//! `cargo bench -p graphkit-benches --bench keyed_lists`

#![allow(missing_docs)]

use std::cell::Cell;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use graphkit::State;
use graphkit::reducers::{KeyedVec, MergeByVec};
use graphkit_benches::workloads::react::{Message, Role};
use serde::{Deserialize, Serialize};

const SIZES: [usize; 4] = [100, 1_000, 10_000, 100_000];
/// Plain lists scan or re-key every item per update: at 100,000 items that is slow enough
/// to stop at 10,000.
const PLAIN_SIZES: [usize; 3] = [100, 1_000, 10_000];

fn message(i: usize) -> Message {
    Message {
        role: Role::Ai,
        id: format!("m-{i}"),
        content: String::new(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Fact {
    kind: String,
    doi: String,
}

fn fact(i: usize) -> Fact {
    Fact {
        kind: "scholar_reference".into(),
        doi: format!("10.1000/A{i}"),
    }
}

/// References are keyed by their lower-cased DOI (a computed, allocating key).
fn reference_key(fact: &Fact) -> Option<String> {
    (fact.kind == "scholar_reference").then(|| fact.doi.to_lowercase())
}

/// A placeholder cap the `max = ...` attributes read: set to `n` before each benchmark.
static CAP: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(usize::MAX);

fn cap() -> usize {
    CAP.load(std::sync::atomic::Ordering::Relaxed)
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Indexed {
    #[reducer(merge_by_key)]
    messages: KeyedVec<Message>,
    #[reducer(merge_by = reference_key)]
    facts: MergeByVec<Fact, String>,
    #[reducer(merge_by_key, max = cap())]
    capped_messages: KeyedVec<Message>,
    #[reducer(merge_by = reference_key, max = cap())]
    capped_facts: MergeByVec<Fact, String>,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Plain {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    #[reducer(merge_by = reference_key)]
    facts: Vec<Fact>,
    #[reducer(merge_by_key, max = cap())]
    capped_messages: Vec<Message>,
    #[reducer(merge_by = reference_key, max = cap())]
    capped_facts: Vec<Fact>,
}

/// One bench group: for each size, a state filled with `n` items by `fill`, then one
/// update per iteration made by `update(i)` (i counts on from `n`) and applied with `apply`.
fn group<S, U>(
    c: &mut Criterion,
    name: &str,
    sizes: &[usize],
    fill: impl Fn(usize) -> S,
    update: impl Fn(usize, usize) -> U,
    apply: impl Fn(&mut S, U),
) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(1));
    for &n in sizes {
        CAP.store(n, std::sync::atomic::Ordering::Relaxed);
        let mut state = fill(n);
        let next = Cell::new(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    let i = next.get();
                    next.set(i + 1);
                    update(n, i)
                },
                |update| apply(&mut state, update),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();
}

fn indexed(c: &mut Criterion) {
    let apply = |state: &mut Indexed, update: IndexedUpdate| {
        state.apply_update(update).expect("no last-value fields");
    };
    // An existing key each time, cycling through the list.
    group(
        c,
        "keyed_list/static/indexed",
        &SIZES,
        |n| Indexed {
            messages: (0..n).map(message).collect(),
            ..Indexed::default()
        },
        |n, i| IndexedUpdate::new().messages(vec![message(i % n)]),
        apply,
    );
    group(
        c,
        "keyed_list/computed/indexed",
        &SIZES,
        |n| {
            let mut state = Indexed::default();
            apply(
                &mut state,
                IndexedUpdate::new().facts((0..n).map(fact).collect::<Vec<_>>()),
            );
            state
        },
        |n, i| IndexedUpdate::new().facts(vec![fact(i % n)]),
        apply,
    );
    // A new key each time: the list stays at its cap `n` by evicting the oldest.
    group(
        c,
        "keyed_list/capped_static/indexed",
        &SIZES,
        |n| Indexed {
            capped_messages: (0..n).map(message).collect(),
            ..Indexed::default()
        },
        |_, i| IndexedUpdate::new().capped_messages(vec![message(i)]),
        apply,
    );
    group(
        c,
        "keyed_list/capped_computed/indexed",
        &SIZES,
        |n| {
            let mut state = Indexed::default();
            apply(
                &mut state,
                IndexedUpdate::new().capped_facts((0..n).map(fact).collect::<Vec<_>>()),
            );
            state
        },
        |_, i| IndexedUpdate::new().capped_facts(vec![fact(i)]),
        apply,
    );
}

fn plain(c: &mut Criterion) {
    let apply = |state: &mut Plain, update: PlainUpdate| {
        state.apply_update(update).expect("no last-value fields");
    };
    group(
        c,
        "keyed_list/static/vec",
        &PLAIN_SIZES,
        |n| Plain {
            messages: (0..n).map(message).collect(),
            ..Plain::default()
        },
        |n, i| PlainUpdate::new().messages(vec![message(i % n)]),
        apply,
    );
    group(
        c,
        "keyed_list/computed/vec",
        &PLAIN_SIZES,
        |n| Plain {
            facts: (0..n).map(fact).collect(),
            ..Plain::default()
        },
        |n, i| PlainUpdate::new().facts(vec![fact(i % n)]),
        apply,
    );
    group(
        c,
        "keyed_list/capped_static/vec",
        &PLAIN_SIZES,
        |n| Plain {
            capped_messages: (0..n).map(message).collect(),
            ..Plain::default()
        },
        |_, i| PlainUpdate::new().capped_messages(vec![message(i)]),
        apply,
    );
    group(
        c,
        "keyed_list/capped_computed/vec",
        &PLAIN_SIZES,
        |n| Plain {
            capped_facts: (0..n).map(fact).collect(),
            ..Plain::default()
        },
        |_, i| PlainUpdate::new().capped_facts(vec![fact(i)]),
        apply,
    );
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
}

criterion_group! {
    name = keyed_lists;
    config = config();
    targets = indexed, plain
}
criterion_main!(keyed_lists);
