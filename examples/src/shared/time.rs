//! Timestamps without a date library: milliseconds since the epoch and RFC 3339 text.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `ms` as UTC RFC 3339 text, e.g. `2025-03-01T12:00:00Z`.
pub(crate) fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The English month names, January first.
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The month a word names, 1 to 12: its full name or a prefix of three letters or more
/// (`mar`, `Sept`), in any case.
pub(crate) fn month_number(word: &str) -> Option<u8> {
    if word.len() < 3 {
        return None;
    }
    MONTHS
        .iter()
        .position(|m| {
            m.as_bytes()
                .get(..word.len())
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case(word.as_bytes()))
        })
        .and_then(|i| u8::try_from(i + 1).ok())
}

/// Whether a word is a month's full name, in any case.
pub(crate) fn is_month_name(word: &str) -> bool {
    MONTHS.iter().any(|m| m.eq_ignore_ascii_case(word))
}

/// The current date as `Month D, YYYY` (for prompts).
pub(crate) fn today_long() -> String {
    let (y, m, d) = civil_from_days(now_ms().div_euclid(86_400_000));
    let month = usize::try_from(m - 1)
        .ok()
        .and_then(|i| MONTHS.get(i))
        .copied()
        .unwrap_or("January");
    format!("{month} {d}, {y}")
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_are_read_from_names_and_prefixes_in_any_case() {
        assert_eq!(month_number("march"), Some(3));
        assert_eq!(month_number("Sept"), Some(9));
        assert_eq!(month_number("DEC"), Some(12));
        assert_eq!(month_number("ma"), None);
        assert_eq!(month_number("marched"), None);
        assert_eq!(month_number("é"), None);
        assert!(is_month_name("May"));
        assert!(is_month_name("november"));
        assert!(!is_month_name("nov"));
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_709_294_400_000), "2024-03-01T12:00:00Z");
    }
}
