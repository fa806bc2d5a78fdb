//! Reducer throughput through the derived `State::apply` (what the scheduler calls): append,
//! merge-by-key (on a list of messages and on a map), merge by a computed key, capped
//! history, add and last value, at growing sizes.
//!
//! `cargo bench -p graphkit-benches --bench reducers`
#![allow(missing_docs)]

use std::collections::HashMap;
use std::hint::black_box;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use graphkit::reducers::StepWrites;
use graphkit::{KeyedUpdate, State};
use graphkit_benches::workloads::react::{Message, Role};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Fields {
    #[reducer(append)]
    list: Vec<i64>,
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    #[reducer(merge_by_key)]
    map: HashMap<String, i64>,
    #[reducer(add)]
    total: i64,
    last: i64,
}

const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

fn message(i: usize) -> Message {
    Message {
        role: Role::Ai,
        id: format!("m-{i}"),
        content: String::new(),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

fn apply(state: &mut Fields, update: FieldsUpdate) {
    state
        .apply(update, &mut StepWrites::default())
        .expect("no concurrent last-value writes");
}

/// Append `n` items in one update to a list that already holds `n`.
fn append(c: &mut Criterion) {
    let mut group = c.benchmark_group("reducer/append");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let base = Fields {
            list: (0..n as i64).collect(),
            ..Fields::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    (
                        base.clone(),
                        FieldsUpdate::new().list((0..n as i64).collect::<Vec<_>>()),
                    )
                },
                |(mut state, update)| {
                    apply(&mut state, update);
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// Merge-by-key on a message list: one new message into a history of `n` (the react
/// loop's pattern; O(1) would be flat across sizes), and `n` upserts (half of them
/// replacing) into a history of `n`.
fn merge_by_key_list(c: &mut Criterion) {
    let mut group = c.benchmark_group("reducer/merge_by_key_list/one_new_message_into");
    for n in SIZES {
        group.throughput(Throughput::Elements(1));
        let base = Fields {
            messages: (0..n).map(message).collect(),
            ..Fields::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || (base.clone(), FieldsUpdate::new().messages(vec![message(n)])),
                |(mut state, update)| {
                    apply(&mut state, update);
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
    let mut group = c.benchmark_group("reducer/merge_by_key_list/batch");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let base = Fields {
            messages: (0..n).map(message).collect(),
            ..Fields::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    (
                        base.clone(),
                        FieldsUpdate::new()
                            .messages((n / 2..n + n / 2).map(message).collect::<Vec<_>>()),
                    )
                },
                |(mut state, update)| {
                    apply(&mut state, update);
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// Merge-by-key on a map: `n` upserts (half replacing) into a map of `n`.
fn merge_by_key_map(c: &mut Criterion) {
    let mut group = c.benchmark_group("reducer/merge_by_key_map");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let base = Fields {
            map: (0..n).map(|i| (format!("k-{i}"), i as i64)).collect(),
            ..Fields::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    let pairs = (n / 2..n + n / 2).map(|i| (format!("k-{i}"), i as i64));
                    (
                        base.clone(),
                        FieldsUpdate::new().map(KeyedUpdate::upsert(pairs)),
                    )
                },
                |(mut state, update)| {
                    apply(&mut state, update);
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Fact {
    kind: String,
    doi: Option<String>,
    title: String,
}

/// Scholar references are keyed by their lower-cased DOI, else their title; notes are not.
fn reference_key(fact: &Fact) -> Option<String> {
    (fact.kind == "scholar_reference").then(|| {
        fact.doi
            .as_ref()
            .map_or_else(|| fact.title.to_lowercase(), |doi| doi.to_lowercase())
    })
}

fn fold_history(summary: Option<String>, folded: Vec<String>) -> String {
    let mut summary = summary.unwrap_or_default();
    summary.push_str(&folded.concat());
    summary
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    #[reducer(merge_by = reference_key)]
    facts: Vec<Fact>,
    #[reducer(capped(max = 5, fold = fold_history))]
    history: Vec<String>,
}

fn fact(i: usize) -> Fact {
    Fact {
        kind: if i.is_multiple_of(2) {
            "scholar_reference"
        } else {
            "note"
        }
        .into(),
        doi: Some(format!("10.1000/{i}")),
        title: format!("Paper {i}"),
    }
}

/// Merge by a computed key: one new reference into `n` facts (the key of every fact is
/// computed once: O(n)), and `n` facts (half replacing) into `n`; and one entry onto a
/// history capped at 5 after `n` entries.
fn merge_by_and_capped(c: &mut Criterion) {
    let mut group = c.benchmark_group("reducer/merge_by/one_new_reference_into");
    for n in SIZES {
        group.throughput(Throughput::Elements(1));
        let base = Research {
            facts: (0..n).map(fact).collect(),
            ..Research::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || (base.clone(), ResearchUpdate::new().facts(vec![fact(2 * n)])),
                |(mut state, update)| {
                    state.apply_update(update).expect("no last-value fields");
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
    let mut group = c.benchmark_group("reducer/merge_by/batch");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let base = Research {
            facts: (0..n).map(fact).collect(),
            ..Research::default()
        };
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    let update = (n / 2..n + n / 2).map(fact).collect::<Vec<_>>();
                    (base.clone(), ResearchUpdate::new().facts(update))
                },
                |(mut state, update)| {
                    state.apply_update(update).expect("no last-value fields");
                    state
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
    let mut group = c.benchmark_group("reducer/capped/entries");
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched(
                || {
                    (0..n)
                        .map(|i| ResearchUpdate::new().history(vec![i.to_string()]))
                        .collect::<Vec<_>>()
                },
                |updates| {
                    let mut state = Research::default();
                    for update in updates {
                        state.apply_update(update).expect("no last-value fields");
                    }
                    black_box(state.history.len())
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

/// `n` separate updates of an add field, and of a last-value field (one step each).
fn add_and_last_value(c: &mut Criterion) {
    for (name, make) in [
        (
            "reducer/add",
            (|i: i64| FieldsUpdate::new().total(i)) as fn(i64) -> FieldsUpdate,
        ),
        ("reducer/last_value", |i: i64| FieldsUpdate::new().last(i)),
    ] {
        let mut group = c.benchmark_group(name);
        for n in SIZES {
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
                b.iter_batched(
                    || (0..n as i64).map(make).collect::<Vec<_>>(),
                    |updates| {
                        let mut state = Fields::default();
                        for update in updates {
                            apply(&mut state, update);
                        }
                        black_box(state.total + state.last)
                    },
                    BatchSize::LargeInput,
                );
            });
        }
        group.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_secs(1))
}

criterion_group! {
    name = reducers;
    config = config();
    targets = append, merge_by_key_list, merge_by_key_map, merge_by_and_capped, add_and_last_value
}
criterion_main!(reducers);
