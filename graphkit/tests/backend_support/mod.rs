//! Helpers shared by the backend conformance suites.

#![allow(dead_code)] // each suite uses a part

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable that names the PostgreSQL server to test against.
pub const POSTGRES_URL_VAR: &str = "GRAPHKIT_TEST_POSTGRES_URL";

/// An id no other test (in this run, in a parallel run, or in an earlier run against the
/// same database) uses: `name`, the process id, the time and a counter.
pub fn unique(name: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{name}-{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The PostgreSQL URL to test against, or `None` after printing why the test is skipped.
pub fn postgres_url() -> Option<String> {
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            println!("skipping PostgreSQL conformance: {POSTGRES_URL_VAR} is not set");
            None
        }
    }
}
