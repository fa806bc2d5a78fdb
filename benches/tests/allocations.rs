//! The engine's heap allocations per super-step and per `Send` task, counted exactly (no
//! timing): a sequential step allocates nothing once the run is warm, and a concurrent
//! async `Send` task costs only its own allocations (packet, node future, update) and none
//! of the engine's.
//!
//! One test function only: the allocation counter is global to the process, so no other
//! test may run beside it.
#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::alloc::System;

use graphkit::RunInput;
use graphkit_benches::Mode;
use graphkit_benches::case::run_config;
use graphkit_benches::workloads::{fanout_send, sequential};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn allocations() -> usize {
    let stats = GLOBAL.stats();
    stats.allocations + stats.reallocations
}

/// Allocations of one run of `run` (after a warm-up run).
fn counted(mut run: impl FnMut()) -> usize {
    run();
    let before = allocations();
    run();
    allocations() - before
}

fn sequential_sync(n: usize) -> usize {
    let graph = sequential::graph(n, Mode::Sync).unwrap();
    counted(|| {
        let state = graph
            .invoke_blocking(RunInput::Update(sequential::input()), run_config())
            .unwrap()
            .into_state();
        assert_eq!(state.counter, n as i64);
    })
}

fn on_runtime<T>(future: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn sequential_async(n: usize) -> usize {
    let graph = sequential::graph(n, Mode::Async).unwrap();
    on_runtime(async {
        let mut total = 0;
        for round in 0..2 {
            let before = allocations();
            let state = graph
                .invoke_with(RunInput::Update(sequential::input()), run_config())
                .await
                .unwrap()
                .into_state();
            assert_eq!(state.counter, n as i64);
            if round == 1 {
                total = allocations() - before;
            }
        }
        total
    })
}

fn send_async(width: usize) -> usize {
    let graph = fanout_send::graph(Mode::Async).unwrap();
    on_runtime(async {
        let mut total = 0;
        for round in 0..2 {
            let input = fanout_send::MapReduceUpdate::new()
                .n(width as i64)
                .items(Vec::new())
                .total(0)
                .count(0);
            let before = allocations();
            let state = graph
                .invoke_with(RunInput::Update(input), run_config())
                .await
                .unwrap()
                .into_state();
            assert_eq!(state.count, width as i64);
            if round == 1 {
                total = allocations() - before;
            }
        }
        total
    })
}

#[test]
fn the_engine_allocates_nothing_per_sequential_step_and_nothing_of_its_own_per_send_task() {
    // Per step: the difference between a 400-step and a 100-step chain, over 300 steps.
    let sync_steps = sequential_sync(400) - sequential_sync(100);
    assert_eq!(sync_steps, 0, "allocations in 300 sync steps");
    // An async node's future is boxed by the node itself (one allocation per step).
    let async_steps = sequential_async(400) - sequential_async(100);
    assert_eq!(async_steps, 300, "allocations in 300 async steps");
    // Per Send task: the router's packet, the node's boxed future and the `vec![i]` of its
    // update: 3 (the target is a literal name: no allocation). The step's own buffers grow
    // by doubling (a few more).
    let tasks = send_async(1000) - send_async(100);
    assert!(
        (2700..2800).contains(&tasks),
        "{tasks} allocations for 900 async Send tasks, expected 3 each"
    );
}
