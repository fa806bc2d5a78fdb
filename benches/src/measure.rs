//! What the suite reads from the OS: process CPU time, resident memory, load, the CPU.

use std::time::Duration;

/// CPU time of the whole process (all threads) so far.
pub fn process_cpu_time() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`), in MB (10^6 bytes).
fn status_mb(key: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kb: f64 = line
        .trim_start_matches(key)
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024.0 / 1_000_000.0)
}

/// Resident memory now, in MB; 0 where `/proc` is missing.
pub fn rss_mb() -> f64 {
    status_mb("VmRSS").unwrap_or(0.0)
}

/// Peak resident memory of this process so far (what `ru_maxrss` reports), in MB.
pub fn peak_rss_mb() -> f64 {
    status_mb("VmHWM").unwrap_or(0.0)
}

/// The 1, 5 and 15 minute load averages; zeros where `/proc` is missing.
pub fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut values = text.split_whitespace().map(|v| v.parse().unwrap_or(0.0));
    [
        values.next().unwrap_or(0.0),
        values.next().unwrap_or(0.0),
        values.next().unwrap_or(0.0),
    ]
}

/// The CPU's model name from `/proc/cpuinfo`.
pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Number of CPUs this process may use.
pub fn nproc() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
