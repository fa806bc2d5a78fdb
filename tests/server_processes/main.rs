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

/// Lets the test graph's `step` on `thread` go on: its node waits for this store item.
async fn open_gate(http: &Http, base: &str, thread: &str, step: &str) {
    http.put(
        &format!("{base}/store/items"),
        json!({"namespace": ["gate", thread], "key": step, "value": {}}),
    )
    .await;
}
