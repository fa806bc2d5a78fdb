//! Wall-clock time as the stored records keep it. Below `checkpoint/`, `store/` and `sql/`,
//! which all stamp rows with it.

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
