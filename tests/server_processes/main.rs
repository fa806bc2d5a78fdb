//! Several `graphkit-test-server` processes on one PostgreSQL schema: one test binary (one
//! link) with a module per scenario. `cargo test -p graphkit-tests --features postgres --test
//! server_processes crash_recovery::` runs one of them.
//!
//! The scenarios run one at a time ([`one_at_a_time`]): each starts two or three server
//! processes, and four such groups at once on a 2-core machine only make every one slower.

mod crash_recovery;
mod fencing;
mod followers;
mod many_runs;

use graphkit_tests::Http;
use serde_json::json;
use tokio::sync::{Mutex, MutexGuard};

/// The lock every scenario holds while it runs (each test has a runtime of its own, and
/// tokio's lock works across them; a failed scenario releases it as it unwinds).
async fn one_at_a_time() -> MutexGuard<'static, ()> {
    static SCENARIOS: Mutex<()> = Mutex::const_new(());
    SCENARIOS.lock().await
}

/// A new thread, answered by the server at `base`.
async fn new_thread(http: &Http, base: &str) -> String {
    let thread = http.post(&format!("{base}/threads"), json!({})).await;
    thread["thread_id"].as_str().expect("thread_id").to_owned()
}

/// A background run of the gated `steps` graph on `thread` (each step waits for its gate,
/// [`open_gate`]), with a resumable `values` + `updates` stream; its run id.
async fn start_gated_run(http: &Http, base: &str, thread: &str) -> String {
    let run = http
        .post(
            &format!("{base}/threads/{thread}/runs"),
            json!({"assistant_id": "steps", "input": {"gated": true},
                   "stream_mode": ["values", "updates"], "stream_resumable": true}),
        )
        .await;
    run["run_id"].as_str().expect("run_id").to_owned()
}

/// Lets the test graph's `step` on `thread` go on: its node waits for this store item.
async fn open_gate(http: &Http, base: &str, thread: &str, step: &str) {
    http.put(
        &format!("{base}/store/items"),
        json!({"namespace": ["gate", thread], "key": step, "value": {}}),
    )
    .await;
}
