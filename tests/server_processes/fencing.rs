//! Issue 26 item 6, fencing across processes: two `graphkit-test-server` processes on one
//! PostgreSQL schema. The process executing a run of the gated `steps` graph is paused
//! (SIGSTOP, not killed) while `step_3` waits at its gate, past its lease. The other process
//! takes the run over as attempt 2, without the thread being busy, and finishes it. Then
//! the paused process resumes (SIGCONT) with the run still in its hands: its writes are
//! refused by the database, it says it stopped the run, and nothing of it lands (the run,
//! its events, the thread's state and checkpoints stay as attempt 2 left them).
//!
//! Needs `GRAPHKIT_TEST_POSTGRES_URL`; skips (and says so) without it.

use super::{new_thread, one_at_a_time, open_gate, start_gated_run};
use graphkit_tests::{
    Event, Http, ServerProcess, drop_schema, eventually, fresh_schema, postgres_args, postgres_url,
};
use serde_json::{Value, json};

const BINARY: &str = env!("CARGO_BIN_EXE_graphkit-test-server");

/// Everything a worker writes for a run, as another process reads it: the run, its whole
/// stream, the thread (status, values) and its checkpoint history.
async fn written(http: &Http, base: &str, thread: &str, run_id: &str) -> Value {
    let run = http
        .get(&format!("{base}/threads/{thread}/runs/{run_id}"))
        .await;
    let mut stream = http
        .sse(
            &format!("{base}/threads/{thread}/runs/{run_id}/stream"),
            Some("0"),
        )
        .await;
    let mut events: Vec<Event> = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event);
    }
    let thread_row = http.get(&format!("{base}/threads/{thread}")).await;
    let history = http
        .post(
            &format!("{base}/threads/{thread}/history"),
            json!({"limit": 1000}),
        )
        .await;
    let checkpoints: Vec<Value> = history
        .as_array()
        .expect("history")
        .iter()
        .map(|state| state["checkpoint"]["checkpoint_id"].clone())
        .collect();
    json!({
        "run": {"status": run["status"], "attempt": run["attempt"], "updated_at": run["updated_at"]},
        "events": events.iter().map(|e| json!([e.id, e.event, e.data])).collect::<Vec<_>>(),
        "thread": {"status": thread_row["status"], "values": thread_row["values"],
                   "updated_at": thread_row["updated_at"]},
        "checkpoints": checkpoints,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_worker_wakes_after_the_takeover_and_nothing_it_writes_lands() {
    let _alone = one_at_a_time().await;
    let Some(url) = postgres_url("server_fencing") else {
        return;
    };
    let schema = fresh_schema("fence");
    // A short lease so the takeover comes soon; heartbeats every third of it.
    let args: Vec<&str> = postgres_args(&url, &schema)
        .into_iter()
        .chain(["--workers", "2", "--lease-secs", "6"])
        .collect();
    let servers: Vec<ServerProcess> = (0..2)
        .map(|_| ServerProcess::start_logged(BINARY, &args))
        .collect();
    let http = Http::default();

    let first = servers[0].base.clone();
    let thread = new_thread(&http, &first).await;
    open_gate(&http, &first, &thread, "step_1").await;
    open_gate(&http, &first, &thread, "step_2").await;
    let run_id = start_gated_run(&http, &first, &thread).await;
    let run_path = format!("/threads/{thread}/runs/{run_id}");

    // Wait until steps 1 and 2 are saved and step_3 waits at its gate; learn who runs it.
    let worker_id = eventually("step_3 to wait after steps 1 and 2 were saved", || {
        let (http, base, thread, run_path) = (&http, &first, &thread, &run_path);
        async move {
            let state = http.get(&format!("{base}/threads/{thread}/state")).await;
            if state["values"]["done"] != json!(["step_1", "step_2"])
                || state["next"] != json!(["step_3"])
            {
                return None;
            }
            let run = http.get(&format!("{base}{run_path}")).await;
            assert_eq!(
                (&run["status"], &run["attempt"]),
                (&json!("running"), &json!(1))
            );
            run["worker_id"].as_str().map(str::to_owned)
        }
    })
    .await;
    let paused = servers
        .iter()
        .position(|s| s.runs_worker(&worker_id))
        .unwrap_or_else(|| panic!("no server process runs worker {worker_id}"));
    let other = &servers[1 - paused];

    // Paused, not dead: its connections stay open, its thread lock (were it one) held.
    servers[paused].signal("STOP");
    let taken = eventually("the other process to take the run as attempt 2", || {
        let (http, base, run_path) = (&http, &other.base, &run_path);
        async move {
            let run = http.get(&format!("{base}{run_path}")).await;
            (run["attempt"] == 2 && run["status"] == "running").then_some(run)
        }
    })
    .await;
    assert!(other.runs_worker(taken["worker_id"].as_str().expect("worker_id")));
    open_gate(&http, &other.base, &thread, "step_3").await;
    open_gate(&http, &other.base, &thread, "step_4").await;
    eventually("attempt 2 to finish the run", || {
        let (http, base, run_path) = (&http, &other.base, &run_path);
        async move {
            let run = http.get(&format!("{base}{run_path}")).await;
            assert_ne!(run["status"], "error", "attempt 2 failed: {run}");
            (run["status"] == "success").then_some(())
        }
    })
    .await;
    let finished = written(&http, &other.base, &thread, &run_id).await;
    assert_eq!(finished["run"]["attempt"], 2);
    assert_eq!(
        finished["thread"]["values"]["done"],
        json!(["step_1", "step_2", "step_3", "step_4"])
    );
    assert_eq!(finished["thread"]["status"], "idle");

    // The paused process wakes with the run in its hands and step_3's gate open: it goes
    // on until its first write, which the database refuses, and stops the run.
    servers[paused].signal("CONT");
    eventually("the resumed process to stop the run it lost", || {
        let process = &servers[paused];
        async move {
            process
                .logged("lost the run's lease; stopped it")
                .then_some(())
        }
    })
    .await;
    assert!(
        !other.logged("lost the run's lease"),
        "attempt 2 kept its lease"
    );
    let after = written(&http, &other.base, &thread, &run_id).await;
    assert_eq!(after, finished, "nothing the resumed worker wrote landed");
    // Both processes still serve.
    for server in &servers {
        assert_eq!(
            http.get(&format!("{}/ok", server.base)).await,
            json!({"ok": true})
        );
    }

    drop(servers);
    drop_schema(&url, &schema).await;
}
