//! The case list of WORKLOADS.md §10, each with the checksum the spec gives for it.

use crate::case::{Case, Mode};
use crate::workloads::reducer::{Reducer, Shape};
use crate::workloads::{
    checkpoint, checkpoint_floor, concurrent, fanout_send, fanout_static, parity, react, reducer,
    sequential, wide_state,
};

const MODES: [Mode; 2] = [Mode::Sync, Mode::Async];

/// W2, W = 100 (§2).
pub const FANOUT_STATIC_100: &str = r#"{"len_items": 100, "sum_items": 4950, "total": 4950, "count": 100, "fnv_items": "7d0c1a5c6d426f9d"}"#;
/// W3, W = 1000 (§3).
pub const FANOUT_SEND_1000: &str = r#"{"len_items": 1000, "sum_items": 499500, "total": 499500, "count": 1000, "fnv_items": "fca586b7ac5dec09"}"#;
/// W4, K = 200 (§4).
pub const REACT_200: &str = r#"{"n_messages": 402, "n_human": 1, "n_ai": 201, "n_tool": 200, "content_chars": 2897, "fnv_messages": "43284773f9af3701"}"#;
/// W5, F = 100, S = 50 (§5).
pub const WIDE_STATE_100X50: &str = r#"{"step": 50, "sum_f": 7830, "fnv_f": "2e7143b6fe204392", "list_lens": [10,5,5,5,5,5,5,5,5], "sum_lists": 1225, "fnv_lists": "66871af50dd23fdc"}"#;
/// W6 append, both shapes (§6).
pub const REDUCER_APPEND_10K: &str =
    r#"{"len": 10000, "sum_v": 49995000, "fnv": "732662ea849ad783"}"#;
/// W6 merge, both shapes (§6).
pub const REDUCER_MERGE_10K: &str =
    r#"{"len": 5000, "sum_v": 37497500, "fnv": "d665b5dea3ce0ea7"}"#;
/// W8, C = 1000 (§8).
pub const CONCURRENT_1000: &str = r#"{"invocations": 1000, "sum_x": 1004000, "total_trace": 3000, "fnv_x": "4ce17194863d6a63", "all_traces_abc": true}"#;

/// Every case of §10 this build can run, in the spec's order, and graphkit's own
/// `cached_sequential_100_*` after W1, `deferred_fanout_100_*` and
/// `functional_tasks_100_async` after W2, `send_memory_100k_{async,by_hand}` after W3, and
/// the by-hand floors of `ckpt_sequential_100_*_sync` after W7.
///
/// Of W7 only the `memory` saver with `sync` durability runs (see [`checkpoint`] for why
/// the SQLite savers and the `async`/`exit` durabilities are not listed).
pub fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for n in [100, 1000] {
        for mode in MODES {
            cases.push(sequential::case(n, mode).expect_spec(&format!(r#"{{"counter": {n}}}"#)));
        }
    }
    // graphkit only: W1 with every node a cache hit (the node-caching hot path).
    for mode in MODES {
        cases.push(sequential::cached_case(100, mode).expect_spec(r#"{"counter": 100}"#));
    }
    for mode in MODES {
        cases.push(fanout_static::case(100, mode).expect_spec(FANOUT_STATIC_100));
    }
    // graphkit only: W2 with a deferred join, and W1 as functional-API task calls.
    for mode in MODES {
        cases.push(parity::deferred_case(100, mode).expect_spec(FANOUT_STATIC_100));
    }
    cases.push(parity::tasks_case(100).expect_spec(r#"{"counter": 100}"#));
    for mode in MODES {
        cases.push(fanout_send::case(1000, mode).expect_spec(FANOUT_SEND_1000));
    }
    // graphkit only: the peak memory of 100,000 async sends, and its floor by hand.
    cases.push(fanout_send::memory_case());
    cases.push(fanout_send::by_hand_case());
    for mode in MODES {
        cases.push(react::case(200, mode).expect_spec(REACT_200));
    }
    for mode in MODES {
        cases.push(wide_state::case(50, mode).expect_spec(WIDE_STATE_100X50));
    }
    for (kind, expected) in [
        (Reducer::Append, REDUCER_APPEND_10K),
        (Reducer::Merge, REDUCER_MERGE_10K),
    ] {
        for shape in [Shape::Loop, Shape::Fanout] {
            for mode in MODES {
                cases.push(reducer::case(kind, shape, mode).expect_spec(expected));
            }
        }
    }
    for (case, workload) in checkpoint::cases() {
        let expected = match workload {
            "sequential" => r#"{"counter": 100}"#,
            "react" => REACT_200,
            _ => WIDE_STATE_100X50,
        };
        cases.push(case.expect_spec(expected));
    }
    // graphkit only: the floors of the W1 checkpoint cases, the same rows inserted by hand.
    for saver in [checkpoint::Saver::Sqlite, checkpoint::Saver::SqliteNormal] {
        cases.push(checkpoint_floor::sqlite_case(saver).expect_spec(r#"{"counter": 100}"#));
    }
    for case in checkpoint_floor::postgres_cases() {
        cases.push(case.expect_spec(r#"{"counter": 100}"#));
    }
    let concurrent = [
        (concurrent::Work::Cpu, false),
        (concurrent::Work::Io5ms, false),
        (concurrent::Work::Cpu, true),
    ];
    for (work, memory) in concurrent {
        cases.push(concurrent::concurrent_case(1000, work, memory).expect_spec(CONCURRENT_1000));
    }
    cases.push(concurrent::serial_case(1000).expect_spec(CONCURRENT_1000));
    cases
}

/// `true` when `name` matches `pattern`: a `*` glob, or a substring when there is no `*`.
/// Several patterns can be given separated by commas.
pub fn matches(pattern: &str, name: &str) -> bool {
    pattern
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .any(|p| {
            if p.contains('*') {
                glob(p.as_bytes(), name.as_bytes())
            } else {
                name.contains(p)
            }
        })
}

fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((c, rest)) => text
            .split_first()
            .is_some_and(|(t, tail)| t == c && glob(rest, tail)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_literals_round_trip_to_the_same_text() {
        for case in cases() {
            let canonical = case.expected.canonical();
            assert!(
                !case.expected.entries().is_empty(),
                "{} has no expected checksum",
                case.name
            );
            let reparsed: crate::Checksum =
                serde_json::from_str(&canonical).expect("canonical text is JSON");
            assert_eq!(reparsed, case.expected, "{}", case.name);
        }
        let wide = crate::Checksum::new()
            .with("step", 50)
            .with("sum_f", 7830)
            .with("fnv_f", "2e7143b6fe204392")
            .with("list_lens", vec![10, 5, 5, 5, 5, 5, 5, 5, 5])
            .with("sum_lists", 1225)
            .with("fnv_lists", "66871af50dd23fdc");
        assert_eq!(wide.canonical(), WIDE_STATE_100X50);
    }

    #[test]
    fn case_names_are_unique_and_follow_the_spec() {
        let names: Vec<String> = cases().into_iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for expected in [
            "sequential_100_sync",
            "sequential_1000_async",
            "fanout_static_100_sync",
            "fanout_send_1000_async",
            "react_200_sync",
            "wide_state_100x50_async",
            "reducer_append_loop_10k_sync",
            "reducer_merge_fanout_10k_async",
            "concurrent_1000_cpu",
            "concurrent_1000_io5ms",
            "serial_1000_sync",
        ] {
            assert!(
                names.iter().any(|n| n == expected),
                "missing case {expected}"
            );
        }
    }

    #[test]
    fn patterns_match_by_substring_or_glob() {
        assert!(matches("react", "react_200_sync"));
        assert!(matches("reducer_*_sync", "reducer_merge_loop_10k_sync"));
        assert!(!matches("reducer_*_sync", "reducer_merge_loop_10k_async"));
        assert!(matches("nope,seq", "sequential_100_sync"));
        assert!(!matches("", "sequential_100_sync"));
    }
}
