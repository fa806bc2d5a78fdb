//! The timing protocol of WORKLOADS.md §9: one fresh process per case and pass, warm-ups,
//! timed runs, interleaved passes, and one §11 result line per case.

use std::io::Write;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::case::{AsyncRuntime, BenchError, Case, CheckpointStats, RUNTIME_ENV};
use crate::checksum::{Checksum, OrderedObject};
use crate::measure;

/// The runtime a child used, as it reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeReport {
    /// `current_thread` or `multi_thread`.
    pub flavor: String,
    /// Threads that run tasks.
    pub worker_threads: usize,
    /// The graphkit entry point the timer wraps.
    pub entry: String,
}

/// What one child process (one case, one pass) reports on its last stdout line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildReport {
    /// The case.
    pub name: String,
    /// Wall time of each timed run, in seconds.
    pub wall_s: Vec<f64>,
    /// Process CPU time of each timed run, in seconds.
    pub cpu_s: Vec<f64>,
    /// RSS after the graph was built, before the first run, in MB.
    pub rss_base_mb: f64,
    /// Peak RSS at the end of the process, in MB.
    pub rss_peak_mb: f64,
    /// The checksum of the last run.
    pub checksum: Checksum,
    /// Whether every run (warm-ups included) reproduced the expected checksum.
    pub checksum_ok: bool,
    /// The runtime the timed calls used.
    pub runtime: RuntimeReport,
    /// The 1-minute load average when the process started.
    pub loadavg_1m: f64,
    /// W7: what the last invocation persisted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_stats: Option<CheckpointStats>,
}

/// Runs one case in this process: build (untimed), warm-ups, timed runs, checksums.
pub fn run_child(case: &Case) -> Result<ChildReport, BenchError> {
    let loadavg_1m = measure::loadavg()[0];
    let mut prepared = case.prepare()?;
    let rss_base_mb = measure::rss_mb();
    let expected = case.expected.canonical();
    let mut checksum_ok = true;
    let mut last = Checksum::new();
    for _ in 0..case.warmup() {
        let sample = prepared.run()?;
        checksum_ok &= sample.checksum.canonical() == expected;
    }
    let mut wall_s = Vec::with_capacity(case.runs());
    let mut cpu_s = Vec::with_capacity(case.runs());
    for _ in 0..case.runs() {
        let sample = prepared.run()?;
        wall_s.push(sample.wall.as_secs_f64());
        cpu_s.push(sample.cpu.as_secs_f64());
        checksum_ok &= sample.checksum.canonical() == expected;
        last = sample.checksum;
    }
    let info = prepared.runtime();
    let checkpoint_stats = prepared.checkpoint_stats()?;
    Ok(ChildReport {
        name: case.name.clone(),
        wall_s,
        cpu_s,
        rss_base_mb,
        rss_peak_mb: measure::peak_rss_mb(),
        checksum: last,
        checksum_ok,
        runtime: RuntimeReport {
            flavor: info.flavor.to_owned(),
            worker_threads: info.worker_threads,
            entry: info.entry.to_owned(),
        },
        loadavg_1m,
        checkpoint_stats,
    })
}

/// Runs `case` in a fresh process (this executable with `--child NAME`).
pub fn spawn_child(case: &Case, runtime: AsyncRuntime) -> Result<ChildReport, BenchError> {
    let exe = std::env::current_exe()?;
    let output = Command::new(exe)
        .arg("--child")
        .arg(&case.name)
        .env(RUNTIME_ENV, runtime.as_str())
        .output()?;
    let child_error = |message: String| BenchError::Child {
        case: case.name.clone(),
        message,
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(child_error(format!(
            "exited with {}: {}",
            output.status,
            stderr.trim()
        )));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .last()
        .ok_or_else(|| child_error("printed nothing".to_owned()))?;
    serde_json::from_str(line).map_err(|e| child_error(format!("unreadable report ({e}): {line}")))
}

/// Quantile `q` (0..=1) of sorted `values`, interpolating linearly between neighbours.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let position = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = position.ceil() as usize;
    sorted[low] + (sorted[high] - sorted[low]) * (position - low as f64)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, 0.5)
}

/// `env` of a result line.
#[derive(Debug, Clone, Serialize)]
pub struct Env {
    /// CPU model.
    pub cpu: String,
    /// CPUs available.
    pub nproc: usize,
    /// Load averages when the line was written.
    pub loadavg: [f64; 3],
    /// The 1-minute load average when each pass of this case started.
    pub loadavg_1m_by_pass: Vec<f64>,
    /// The tokio runtime of the timed calls.
    pub runtime: RuntimeReport,
    /// graphkit's version.
    pub graphkit: &'static str,
    /// The compiler.
    pub rustc: &'static str,
    /// `release` or `debug`.
    pub profile: &'static str,
    /// The OS.
    pub os: &'static str,
}

/// One result line (WORKLOADS.md §11).
#[derive(Debug, Clone, Serialize)]
pub struct ResultLine {
    /// Case name.
    pub name: String,
    /// Always `graphkit`.
    #[serde(rename = "impl")]
    pub implementation: &'static str,
    /// Workload.
    pub workload: &'static str,
    /// Parameters.
    pub params: OrderedObject,
    /// `sync` or `async`.
    pub mode: &'static str,
    /// Saver.
    pub checkpointer: &'static str,
    /// Durability (W7).
    pub durability: Option<&'static str>,
    /// Timed runs over all passes.
    pub runs: usize,
    /// Warm-ups per pass.
    pub warmup: usize,
    /// Passes.
    pub passes: usize,
    /// Median wall time of all samples.
    pub median_s: f64,
    /// Fastest sample.
    pub min_s: f64,
    /// Slowest sample.
    pub max_s: f64,
    /// 25th percentile.
    pub p25_s: f64,
    /// 75th percentile.
    pub p75_s: f64,
    /// Median process CPU time.
    pub cpu_median_s: f64,
    /// Median of each pass.
    pub pass_medians_s: Vec<f64>,
    /// Super-steps per invocation.
    pub steps: u64,
    /// `median_s / steps` in µs.
    pub per_step_us: f64,
    /// Items per invocation.
    pub items: u64,
    /// What an item is.
    pub item_unit: &'static str,
    /// `median_s / items` in µs.
    pub per_item_us: f64,
    /// W8: invocations per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_per_s: Option<f64>,
    /// W7: what was persisted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint_stats: Option<CheckpointStats>,
    /// RSS before the first run (median over passes).
    pub rss_base_mb: f64,
    /// Peak RSS (max over passes).
    pub rss_peak_mb: f64,
    /// The final state's checksum.
    pub checksum: Checksum,
    /// Whether every run of every pass reproduced the spec's checksum.
    pub checksum_ok: bool,
    /// Machine and runtime.
    pub env: Env,
}

/// Folds the reports of every pass of `case` into its result line.
pub fn summarise(case: &Case, reports: &[ChildReport]) -> Option<ResultLine> {
    let last = reports.last()?;
    let mut all: Vec<f64> = reports
        .iter()
        .flat_map(|r| r.wall_s.iter().copied())
        .collect();
    all.sort_by(f64::total_cmp);
    let cpu: Vec<f64> = reports
        .iter()
        .flat_map(|r| r.cpu_s.iter().copied())
        .collect();
    let median_s = quantile(&all, 0.5);
    let per = |n: u64| {
        if n == 0 {
            0.0
        } else {
            median_s * 1e6 / n as f64
        }
    };
    Some(ResultLine {
        name: case.name.clone(),
        implementation: "graphkit",
        workload: case.workload,
        params: case.params.clone(),
        mode: case.mode.as_str(),
        checkpointer: case.checkpointer,
        durability: case.durability,
        runs: all.len(),
        warmup: case.warmup(),
        passes: reports.len(),
        median_s,
        min_s: all.first().copied().unwrap_or(0.0),
        max_s: all.last().copied().unwrap_or(0.0),
        p25_s: quantile(&all, 0.25),
        p75_s: quantile(&all, 0.75),
        cpu_median_s: median(&cpu),
        pass_medians_s: reports.iter().map(|r| median(&r.wall_s)).collect(),
        steps: case.steps,
        per_step_us: per(case.steps),
        items: case.items,
        item_unit: case.item_unit,
        per_item_us: per(case.items),
        throughput_per_s: (case.item_unit == "invocation" && median_s > 0.0)
            .then(|| case.items as f64 / median_s),
        checkpoint_stats: last.checkpoint_stats.clone(),
        rss_base_mb: median(&reports.iter().map(|r| r.rss_base_mb).collect::<Vec<_>>()),
        rss_peak_mb: reports.iter().map(|r| r.rss_peak_mb).fold(0.0, f64::max),
        checksum: last.checksum.clone(),
        checksum_ok: reports.iter().all(|r| r.checksum_ok),
        env: Env {
            cpu: measure::cpu_model(),
            nproc: measure::nproc(),
            loadavg: measure::loadavg(),
            loadavg_1m_by_pass: reports.iter().map(|r| r.loadavg_1m).collect(),
            runtime: last.runtime.clone(),
            graphkit: env!("CARGO_PKG_VERSION"),
            rustc: env!("GRAPHKIT_BENCH_RUSTC"),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            os: std::env::consts::OS,
        },
    })
}

/// serde_json formatting in the spec's style: `", "` and `": "` in objects, arrays compact
/// (so a `checksum` object is byte for byte the text WORKLOADS.md gives).
#[derive(Debug, Default)]
pub struct SpecFormatter;

impl serde_json::ser::Formatter for SpecFormatter {
    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            writer.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

/// A result line as JSON text in the spec's style.
pub fn to_json_line<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, SpecFormatter);
    value.serialize(&mut serializer)?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Runs `cases` by the protocol: `passes` interleaved passes, one process per case and
/// pass; writes one line per case to `out` after the last pass and progress to stderr.
/// Returns the number of cases that failed or missed their checksum.
pub fn run_suite(
    cases: &[Case],
    passes: usize,
    runtime: AsyncRuntime,
    out: &mut impl Write,
) -> Result<usize, BenchError> {
    let mut reports: Vec<Vec<ChildReport>> = vec![Vec::new(); cases.len()];
    let mut failed = vec![false; cases.len()];
    for pass in 1..=passes {
        eprintln!("pass {pass}/{passes} (load {:.2})", measure::loadavg()[0]);
        for (i, case) in cases.iter().enumerate() {
            if failed[i] {
                continue;
            }
            match spawn_child(case, runtime) {
                Ok(report) => {
                    eprintln!(
                        "  {:<36} median {:>10.1} µs{}",
                        case.name,
                        median(&report.wall_s) * 1e6,
                        if report.checksum_ok {
                            ""
                        } else {
                            "  CHECKSUM MISMATCH"
                        }
                    );
                    reports[i].push(report);
                }
                Err(error) => {
                    eprintln!("  {:<36} FAILED: {error}", case.name);
                    failed[i] = true;
                }
            }
        }
    }
    let mut bad = 0;
    for ((case, reports), failed) in cases.iter().zip(&reports).zip(failed) {
        match summarise(case, reports).filter(|_| !failed) {
            Some(line) => {
                bad += usize::from(!line.checksum_ok);
                writeln!(
                    out,
                    "{}",
                    to_json_line(&line).map_err(std::io::Error::other)?
                )?;
            }
            None => {
                bad += 1;
                let error = serde_json::json!({"name": case.name, "impl": "graphkit", "error": "the case failed", "checksum_ok": false});
                writeln!(
                    out,
                    "{}",
                    to_json_line(&error).map_err(std::io::Error::other)?
                )?;
            }
        }
        out.flush()?;
    }
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let values = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&values, 0.5), 2.5);
        assert_eq!(quantile(&values, 0.25), 1.75);
        assert_eq!(quantile(&values, 0.0), 1.0);
        assert_eq!(quantile(&values, 1.0), 4.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn result_lines_print_checksums_as_the_spec_writes_them() -> Result<(), serde_json::Error> {
        let checksum = Checksum::new()
            .with("list_lens", vec![10, 5])
            .with("step", 50);
        let line = to_json_line(&serde_json::json!({"checksum": checksum}))?;
        assert_eq!(line, r#"{"checksum": {"list_lens": [10,5], "step": 50}}"#);
        Ok(())
    }
}
