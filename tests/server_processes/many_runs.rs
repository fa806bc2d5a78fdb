//! Issue 15's load check: 200 background runs (two on each of 100 threads, enqueued)
//! created round-robin on three `graphkit-test-server` processes that share one PostgreSQL
//! schema. Every run must finish exactly once: nothing lost, nothing run twice, and each
//! thread's state must hold the writes of both its runs.
//!
//! Needs `GRAPHKIT_TEST_POSTGRES_URL`; skips (and says so) without it.

use std::collections::HashMap;

use super::one_at_a_time;
use futures::StreamExt;
use graphkit_tests::{
    Http, ServerProcess, drop_schema, eventually, fresh_schema, postgres_args, postgres_url,
};
use serde_json::json;

const BINARY: &str = env!("CARGO_BIN_EXE_graphkit-test-server");
const THREADS: usize = 100;
const RUNS_PER_THREAD: usize = 2;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_runs_on_three_processes_each_run_exactly_once() {
    let _alone = one_at_a_time().await;
    let Some(url) = postgres_url("server_many_runs") else {
        return;
    };
    let schema = fresh_schema("many");
    let args: Vec<&str> = postgres_args(&url, &schema)
        .into_iter()
        .chain(["--workers", "4"])
        .collect();
    let servers: Vec<ServerProcess> = (0..3)
        .map(|_| ServerProcess::start(BINARY, &args))
        .collect();
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let http = Http::default();

    let threads: Vec<String> = futures::stream::iter(0..THREADS)
        .map(|i| {
            let (http, base) = (http.clone(), bases[i % bases.len()].clone());
            async move {
                let thread = http.post(&format!("{base}/threads"), json!({})).await;
                thread["thread_id"].as_str().expect("thread_id").to_owned()
            }
        })
        .buffer_unordered(16)
        .collect()
        .await;

    // All 200 runs at once (16 requests in flight), spread over the three processes.
    let jobs: Vec<(usize, String)> = (0..RUNS_PER_THREAD)
        .flat_map(|round| threads.iter().map(move |t| (round, t.clone())))
        .enumerate()
        .map(|(i, (_, t))| (i, t))
        .collect();
    let created: Vec<(String, String)> = futures::stream::iter(jobs)
        .map(|(i, thread)| {
            let (http, base) = (http.clone(), bases[i % bases.len()].clone());
            async move {
                let run = http
                    .post(
                        &format!("{base}/threads/{thread}/runs"),
                        json!({"assistant_id": "tally", "input": {}, "multitask_strategy": "enqueue"}),
                    )
                    .await;
                (thread, run["run_id"].as_str().expect("run_id").to_owned())
            }
        })
        .buffered(16)
        .collect()
        .await;
    assert_eq!(created.len(), THREADS * RUNS_PER_THREAD);

    // Wait until every run has ended, asking any process.
    let runs: Vec<serde_json::Value> = eventually("all 200 runs to end", || {
        let (http, threads, bases) = (&http, &threads, &bases);
        async move {
            let listed: Vec<Vec<serde_json::Value>> =
                futures::stream::iter(threads.iter().enumerate())
                    .map(|(i, t)| async move {
                        let base = &bases[i % bases.len()];
                        let runs = http
                            .get(&format!("{base}/threads/{t}/runs?limit=100"))
                            .await;
                        runs.as_array().expect("runs").clone()
                    })
                    .buffer_unordered(16)
                    .collect()
                    .await;
            let all: Vec<serde_json::Value> = listed.into_iter().flatten().collect();
            all.iter()
                .all(|r| r["status"] != "pending" && r["status"] != "running")
                .then_some(all)
        }
    })
    .await;

    // Nothing lost: every created run is there, succeeded, on its first attempt.
    assert_eq!(runs.len(), THREADS * RUNS_PER_THREAD);
    let by_id: HashMap<&str, &serde_json::Value> = runs
        .iter()
        .map(|r| (r["run_id"].as_str().expect("run_id"), r))
        .collect();
    for (thread, run_id) in &created {
        let run = by_id
            .get(run_id.as_str())
            .expect("every created run exists");
        assert_eq!(run["thread_id"], json!(thread));
        assert_eq!(run["status"], "success", "{run}");
        assert_eq!(run["attempt"], 1, "{run}");
    }
    // Several processes did the work (informational: the queue decides who takes what).
    let workers: std::collections::HashSet<&str> = runs
        .iter()
        .filter_map(|r| r["worker_id"].as_str())
        .collect();
    eprintln!("runs were executed by {} worker process(es)", workers.len());

    // Nothing run twice: each thread's node ran exactly twice (once per run), and its state
    // holds both runs' writes.
    let tallies = http
        .post(
            &format!("{}/store/items/search", bases[0]),
            json!({"namespace_prefix": ["tally"], "limit": 10_000}),
        )
        .await;
    let mut per_thread: HashMap<String, usize> = HashMap::new();
    for item in tallies["items"].as_array().expect("items") {
        let thread = item["namespace"][1].as_str().expect("thread").to_owned();
        *per_thread.entry(thread).or_default() += 1;
    }
    assert_eq!(per_thread.len(), THREADS);
    assert!(
        per_thread.values().all(|&n| n == RUNS_PER_THREAD),
        "executions per thread: {per_thread:?}"
    );
    for (i, thread) in threads.iter().enumerate() {
        let base = &bases[i % bases.len()];
        let state = http.get(&format!("{base}/threads/{thread}/state")).await;
        assert_eq!(state["values"]["done"], json!(["work", "work"]), "{thread}");
    }

    drop(servers);
    drop_schema(&url, &schema).await;
}
