//! Issue 15's crash test: three `graphkit-test-server` processes on one PostgreSQL schema;
//! a run of the gated `steps` graph stands in `step_3` when the process executing it is
//! SIGKILLed. Another process must take the run over as attempt 2 (after the lease), finish
//! it with the same final state as an uninterrupted run, never run a completed step again,
//! and a stream client that reconnects with `Last-Event-ID` must see the events continue.
//!
//! Needs `GRAPHKIT_TEST_POSTGRES_URL`; skips (and says so) without it.

use super::{new_thread, one_at_a_time, open_gate, start_gated_run};
use graphkit_tests::{
    Event, Http, ServerProcess, drop_schema, eventually, fresh_schema, postgres_args, postgres_url,
};
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_graphkit-test-server");
const STEPS: [&str; 4] = ["step_1", "step_2", "step_3", "step_4"];

/// How many start and end markers each step left in the store for `thread`.
async fn executions(http: &Http, base: &str, thread: &str) -> Vec<(String, usize, usize)> {
    let found = http
        .post(
            &format!("{base}/store/items/search"),
            json!({"namespace_prefix": ["exec", thread], "limit": 1000}),
        )
        .await;
    let keys: Vec<String> = found["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["key"].as_str().expect("key").to_owned())
        .collect();
    let count = |step: &str, kind: &str| {
        keys.iter()
            .filter(|k| k.starts_with(&format!("{step}:{kind}:")))
            .count()
    };
    STEPS
        .iter()
        .map(|s| ((*s).to_owned(), count(s, "start"), count(s, "end")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_workers_run_finishes_elsewhere_as_attempt_two_without_redoing_steps() {
    let _alone = one_at_a_time().await;
    let Some(url) = postgres_url("server_crash_recovery") else {
        return;
    };
    let schema = fresh_schema("crash");
    // A short lease so the takeover comes soon; heartbeats every third of it.
    let args: Vec<&str> = postgres_args(&url, &schema)
        .into_iter()
        .chain(["--workers", "3", "--lease-secs", "6"])
        .collect();
    let mut servers: Vec<ServerProcess> = (0..3)
        .map(|_| ServerProcess::start(BINARY, &args))
        .collect();
    let http = Http::default();

    // The reference: the same graph, uninterrupted, on its own thread.
    let reference_thread = new_thread(&http, &servers[0].base).await;
    let reference = http
        .post(
            &format!("{}/threads/{reference_thread}/runs/wait", servers[0].base),
            json!({"assistant_id": "steps", "input": {}}),
        )
        .await;
    assert_eq!(reference["done"], json!(STEPS));

    // The run to crash: gated, resumable stream; steps 1 and 2 may pass at once.
    let first = &servers[1].base;
    let thread = new_thread(&http, first).await;
    open_gate(&http, first, &thread, "step_1").await;
    open_gate(&http, first, &thread, "step_2").await;
    let run_id = start_gated_run(&http, first, &thread).await;
    let run_path = format!("/threads/{thread}/runs/{run_id}");

    // Wait until step_3 has started and waits at its gate, and steps 1 and 2 are in the
    // thread's checkpoints (read from the database by another process); learn which process
    // executes the run.
    let worker_id = eventually("step_3 to start after steps 1 and 2 were saved", || {
        let (http, base, thread, run_path) = (&http, first, &thread, &run_path);
        async move {
            let counts = executions(http, base, thread).await;
            if counts[2].1 == 0 {
                return None;
            }
            let state = http.get(&format!("{base}/threads/{thread}/state")).await;
            if state["values"]["done"] != json!(["step_1", "step_2"]) {
                return None;
            }
            let run = http.get(&format!("{base}{run_path}")).await;
            assert_eq!(run["status"], "running");
            assert_eq!(run["attempt"], 1);
            run["worker_id"].as_str().map(str::to_owned)
        }
    })
    .await;
    let victim = servers
        .iter()
        .position(|s| s.runs_worker(&worker_id))
        .unwrap_or_else(|| panic!("no server process runs worker {worker_id}"));
    let survivor = (victim + 1) % servers.len();
    let survivor_base = servers[survivor].base.clone();

    // A client follows the run's stream on the process that is about to die.
    let mut stream = http
        .sse(
            &format!("{}{run_path}/stream", servers[victim].base),
            Some("0"),
        )
        .await;
    let mut seen: Vec<Event> = Vec::new();
    while !seen
        .iter()
        .any(|e| e.event == "updates" && e.data.get("step_2").is_some())
    {
        let event = stream
            .next()
            .await
            .expect("the stream ended before step_2's update");
        seen.push(event);
    }
    assert_eq!(seen[0].event, "metadata");
    assert_eq!(seen[0].data["attempt"], 1);

    servers[victim].kill();
    // The broken connection ends the stream (whatever was still buffered comes first).
    while let Some(event) = stream.next().await {
        seen.push(event);
    }
    let last_id = seen
        .last()
        .and_then(|e| e.id.clone())
        .expect("a resumable run's events carry ids");

    // Another process takes the run over as attempt 2.
    let taken = eventually("another process to take the run as attempt 2", || {
        let (http, base, run_path) = (&http, &survivor_base, &run_path);
        async move {
            let run = http.get(&format!("{base}{run_path}")).await;
            (run["attempt"] == 2 && run["status"] == "running").then_some(run)
        }
    })
    .await;
    let new_worker = taken["worker_id"].as_str().expect("worker_id");
    assert!(
        !servers[victim].runs_worker(new_worker),
        "the dead process cannot hold the run"
    );

    // The client reconnects to a live process where it left off.
    let mut resumed = http
        .sse(&format!("{survivor_base}{run_path}/stream"), Some(&last_id))
        .await;
    open_gate(&http, &survivor_base, &thread, "step_3").await;
    open_gate(&http, &survivor_base, &thread, "step_4").await;
    let mut after: Vec<Event> = Vec::new();
    while let Some(event) = resumed.next().await {
        after.push(event);
    }

    // The events continue: ids go on from the last one seen, the new attempt announces
    // itself, and the remaining steps follow.
    let ids: Vec<i64> = after
        .iter()
        .map(|e| {
            e.id.as_deref()
                .and_then(|id| id.parse().ok())
                .expect("numeric id")
        })
        .collect();
    let last: i64 = last_id.parse().expect("numeric id");
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]) && ids.first().is_some_and(|&f| f > last),
        "ids continue after {last}: {ids:?}"
    );
    assert!(
        after
            .iter()
            .any(|e| e.event == "metadata" && e.data["attempt"] == 2),
        "the new attempt's metadata event: {after:?}"
    );
    for step in ["step_3", "step_4"] {
        assert!(
            after
                .iter()
                .any(|e| e.event == "updates" && e.data.get(step).is_some()),
            "an update of {step} after the reconnect"
        );
    }
    assert!(
        !after
            .iter()
            .any(|e| e.event == "updates" && e.data.get("step_1").is_some()),
        "step_1 is not run again"
    );

    // The run finished on the survivor with the uninterrupted run's final state.
    let run = http.get(&format!("{survivor_base}{run_path}")).await;
    assert_eq!(run["status"], "success");
    assert_eq!(run["attempt"], 2);
    let state = http
        .get(&format!("{survivor_base}/threads/{thread}/state"))
        .await;
    let mut expected: Value = reference.clone();
    expected["gated"] = json!(true);
    assert_eq!(state["values"], expected);

    // No completed step ran twice: steps 1, 2 and 4 started and ended once; step_3, which
    // the crash interrupted, started in both attempts and ended once.
    let counts = executions(&http, &survivor_base, &thread).await;
    let expected_counts: Vec<(String, usize, usize)> = [(1, 1), (1, 1), (2, 1), (1, 1)]
        .iter()
        .zip(STEPS)
        .map(|(&(start, end), step)| (step.to_owned(), start, end))
        .collect();
    assert_eq!(counts, expected_counts);

    drop(servers);
    drop_schema(&url, &schema).await;
}
