//! `GET /metrics`: the server's state in the Prometheus text format (version 0.0.4), written
//! here without a metrics crate.
//!
//! Two kinds of figures: what the backend holds, shared by every process on it (runs by
//! status, the queue depth), and what this process saw (how long its workers took on the
//! runs they ended, how many clients follow a run's stream here now).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::backend::RunStatus;

/// The upper bounds, in seconds, of the run duration histogram's buckets (`+Inf` follows).
const DURATION_BUCKETS: [f64; 12] = [
    0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// How long this process's workers took on the runs they ended (success, error or
/// cancelled), from the claim to the end; a run released at shutdown or lost to the sweeper
/// is not counted. A Prometheus histogram kept in atomics.
#[derive(Debug, Default)]
pub(crate) struct RunDurations {
    /// Attempts per bucket (not cumulative; made so when written).
    buckets: [AtomicU64; DURATION_BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl RunDurations {
    /// Records one run that took `took`.
    pub(crate) fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        if let Some(i) = DURATION_BUCKETS.iter().position(|le| seconds <= *le) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// What one `/metrics` answer reports.
pub(crate) struct Snapshot<'a> {
    /// Runs in the backend per status (statuses without runs may be left out).
    pub runs: &'a [(RunStatus, u64)],
    /// How long this process's workers took on the runs they ended.
    pub durations: &'a RunDurations,
    /// Clients following a run's stream in this process now.
    pub followers: usize,
    /// Runs with at least one follower in this process now.
    pub followed_runs: usize,
}

/// The Prometheus text of `snapshot`.
pub(crate) fn render(snapshot: &Snapshot<'_>) -> String {
    let mut out = String::new();
    let count_of = |status: RunStatus| {
        snapshot
            .runs
            .iter()
            .find(|(s, _)| *s == status)
            .map_or(0, |(_, n)| *n)
    };
    header(
        &mut out,
        "graphkit_server_runs",
        "Runs in the backend by status, over every process that shares it.",
        "gauge",
    );
    for status in RunStatus::ALL {
        let _ = writeln!(
            out,
            "graphkit_server_runs{{status=\"{}\"}} {}",
            status.as_str(),
            count_of(status)
        );
    }
    header(
        &mut out,
        "graphkit_server_queue_depth",
        "Pending runs: queued for a worker, delayed ones included.",
        "gauge",
    );
    let _ = writeln!(
        out,
        "graphkit_server_queue_depth {}",
        count_of(RunStatus::Pending)
    );

    let d = snapshot.durations;
    header(
        &mut out,
        "graphkit_server_run_duration_seconds",
        "Time this process's workers took on the runs they ended, from claim to end.",
        "histogram",
    );
    let mut cumulative = 0;
    for (le, bucket) in DURATION_BUCKETS.iter().zip(&d.buckets) {
        cumulative += bucket.load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "graphkit_server_run_duration_seconds_bucket{{le=\"{le}\"}} {cumulative}"
        );
    }
    let count = d.count.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "graphkit_server_run_duration_seconds_bucket{{le=\"+Inf\"}} {count}"
    );
    let sum = d.sum_micros.load(Ordering::Relaxed);
    let _ = writeln!(
        out,
        "graphkit_server_run_duration_seconds_sum {}.{:06}",
        sum / 1_000_000,
        sum % 1_000_000
    );
    let _ = writeln!(out, "graphkit_server_run_duration_seconds_count {count}");

    header(
        &mut out,
        "graphkit_server_stream_followers",
        "Clients following a run's stream in this process now (streams, joins, waits).",
        "gauge",
    );
    let _ = writeln!(
        out,
        "graphkit_server_stream_followers {}",
        snapshot.followers
    );
    header(
        &mut out,
        "graphkit_server_followed_runs",
        "Runs with at least one follower in this process now.",
        "gauge",
    );
    let _ = writeln!(
        out,
        "graphkit_server_followed_runs {}",
        snapshot.followed_runs
    );
    out
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_inf_is_the_count() {
        let durations = RunDurations::default();
        durations.record(Duration::from_millis(5));
        durations.record(Duration::from_millis(300));
        durations.record(Duration::from_secs(1000));
        let text = render(&Snapshot {
            runs: &[(RunStatus::Pending, 2), (RunStatus::Success, 5)],
            durations: &durations,
            followers: 3,
            followed_runs: 1,
        });
        let line = |prefix: &str| {
            text.lines()
                .find(|l| l.starts_with(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
                .to_owned()
        };
        assert_eq!(
            line("graphkit_server_run_duration_seconds_bucket{le=\"0.01\"}"),
            "graphkit_server_run_duration_seconds_bucket{le=\"0.01\"} 1"
        );
        assert!(line("graphkit_server_run_duration_seconds_bucket{le=\"0.5\"}").ends_with(" 2"));
        assert!(line("graphkit_server_run_duration_seconds_bucket{le=\"300\"}").ends_with(" 2"));
        assert!(line("graphkit_server_run_duration_seconds_bucket{le=\"+Inf\"}").ends_with(" 3"));
        assert_eq!(
            line("graphkit_server_run_duration_seconds_sum"),
            "graphkit_server_run_duration_seconds_sum 1000.305000"
        );
        assert!(line("graphkit_server_runs{status=\"success\"}").ends_with(" 5"));
        assert!(line("graphkit_server_runs{status=\"error\"}").ends_with(" 0"));
        assert_eq!(
            line("graphkit_server_queue_depth"),
            "graphkit_server_queue_depth 2"
        );
        assert_eq!(
            line("graphkit_server_stream_followers"),
            "graphkit_server_stream_followers 3"
        );
        // Every sample line belongs to a family declared with # TYPE before it.
        let mut declared = Vec::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap_or_default().to_owned());
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap_or_default();
                assert!(
                    declared.iter().any(|d| name.starts_with(d.as_str())),
                    "{name} has no TYPE line"
                );
            }
        }
    }
}
