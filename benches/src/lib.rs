//! # graphkit-benches
//!
//! graphkit's performance, measured two ways:
//!
//! * **the workload suite** of `shared/bench/WORKLOADS.md`: the same graphs LangGraph runs,
//!   each checked by the checksum of its final state. The `workloads` binary runs every case
//!   by the spec's timing protocol (a fresh process per case and pass, warm-ups,
//!   interleaved passes) and prints one JSON line per case;
//! * **criterion benches** (`cargo bench -p graphkit-benches`) of the hot paths: reducers,
//!   super-steps of growing width, `Send` fan-out, conditional routing, streaming.
//!
//! This library holds the workloads ([`workloads`]), the case list ([`suite`]), the
//! protocol ([`harness`]) and the checksum helpers ([`checksum`]); `docs/benchmarks.md`
//! explains how to run them and what the figures are.

pub mod case;
pub mod checksum;
pub mod harness;
pub mod measure;
pub mod suite;
pub mod workloads;

pub use case::{BenchError, Case, Mode};
pub use checksum::{Checksum, csv, fnv};

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `case` once (no timing is asserted) and compares its checksum with the spec's.
    fn assert_reproduces_checksum(case: &Case) {
        let mut prepared = case
            .prepare()
            .unwrap_or_else(|e| panic!("{}: build failed: {e}", case.name));
        let sample = prepared
            .run()
            .unwrap_or_else(|e| panic!("{}: run failed: {e}", case.name));
        assert_eq!(
            sample.checksum.canonical(),
            case.expected.canonical(),
            "{}",
            case.name
        );
    }

    fn assert_workload(workload: &str) {
        let cases: Vec<Case> = suite::cases()
            .into_iter()
            .filter(|c| c.workload == workload)
            .collect();
        assert!(!cases.is_empty(), "no case for {workload}");
        for case in &cases {
            assert_reproduces_checksum(case);
        }
    }

    #[test]
    fn sequential_counts_every_node() {
        assert_workload("sequential");
    }

    #[test]
    fn fanout_static_applies_workers_in_name_order_and_joins_once() {
        assert_workload("fanout_static");
    }

    #[test]
    fn fanout_send_applies_sends_in_order_and_reduces_once() {
        assert_workload("fanout_send");
    }

    #[test]
    fn react_loop_merges_messages_by_id() {
        assert_workload("react_loop");
    }

    #[test]
    fn wide_state_runs_five_laps_of_the_ring() {
        assert_workload("wide_state");
    }

    #[test]
    fn reducer_append_and_merge_give_the_same_result_in_both_shapes() {
        assert_workload("reducer");
    }

    #[test]
    fn checkpointed_runs_reach_the_same_final_states() {
        assert_workload("checkpoint");
    }

    #[test]
    fn concurrent_invocations_stay_independent() {
        assert_workload("concurrent");
    }
}
