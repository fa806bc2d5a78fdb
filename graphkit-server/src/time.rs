//! [`Timestamp`]: microseconds since the Unix epoch, shown as ISO-8601 with offset
//! (`2026-11-23T06:21:15.853308+00:00`), the form the reference server sends.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

/// A point in time, in microseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The current time.
    pub fn now() -> Self {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
        Self(micros)
    }

    /// From milliseconds since the epoch (graphkit's checkpoint times).
    pub fn from_millis(ms: i64) -> Self {
        Self(ms.saturating_mul(1000))
    }

    /// This time plus `duration`.
    #[must_use]
    pub fn plus(self, duration: Duration) -> Self {
        Self(
            self.0
                .saturating_add(i64::try_from(duration.as_micros()).unwrap_or(i64::MAX)),
        )
    }

    /// Microseconds since the epoch.
    pub fn micros(self) -> i64 {
        self.0
    }

    /// Parses an ISO-8601 date and time as Python's `isoformat()` and JavaScript's
    /// `toISOString()` write them: `2026-12-02T05:30:00`, with optional fractional seconds
    /// and an optional `Z` or `±HH:MM` offset (none: UTC); `None` for anything else.
    ///
    /// ```
    /// use graphkit_server::time::Timestamp;
    /// let t = Timestamp::parse_iso("2026-11-23T08:21:15.853308+02:00").unwrap();
    /// assert_eq!(t.to_string(), "2026-11-23T06:21:15.853308+00:00");
    /// assert!(Timestamp::parse_iso("tomorrow").is_none());
    /// ```
    pub fn parse_iso(text: &str) -> Option<Self> {
        let text = text.trim();
        let number = |s: &str| -> Option<i64> {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        };
        let (date, rest) = text.split_at_checked(10)?;
        let mut parts = date.split('-');
        let (year, month, day) = (
            number(parts.next()?)?,
            number(parts.next()?)?,
            number(parts.next()?)?,
        );
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        let rest = rest.strip_prefix(['T', 't', ' ']).unwrap_or(rest);
        let (clock, offset_minutes) = if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
            (clock, 0)
        } else if let Some(at) = rest.rfind(['+', '-']) {
            let (clock, zone) = rest.split_at(at);
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (h, m) = zone[1..].split_once(':').unwrap_or((&zone[1..], "00"));
            (clock, sign * (number(h)? * 60 + number(m)?))
        } else {
            (rest, 0)
        };
        let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
        let mut hms = hms.split(':');
        let hour = hms
            .next()
            .filter(|h| !h.is_empty())
            .map_or(Some(0), number)?;
        let minute = hms.next().map_or(Some(0), number)?;
        let second = hms.next().map_or(Some(0), number)?;
        if hour > 23 || minute > 59 || second > 60 {
            return None;
        }
        let micros = if fraction.is_empty() {
            0
        } else {
            let digits: String = fraction.chars().chain("000000".chars()).take(6).collect();
            number(&digits)?
        };
        let days = days_from_civil(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?);
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
        Some(Self(seconds.checked_mul(1_000_000)?.checked_add(micros)?))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.0.div_euclid(1_000_000);
        let micros = self.0.rem_euclid(1_000_000);
        let days = secs.div_euclid(86_400);
        let of_day = secs.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        write!(
            f,
            "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
            of_day / 3600,
            of_day % 3600 / 60,
            of_day % 60
        )
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// (year, month, day) in the proleptic Gregorian calendar to days since 1970-01-01 (the
/// inverse of [`civil_from_days`], Howard Hinnant's `days_from_civil`).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_iso_8601_with_offset() {
        assert_eq!(Timestamp(0).to_string(), "1970-01-01T00:00:00.000000+00:00");
        // 2026-11-23T06:21:15.853308Z
        assert_eq!(
            Timestamp(1_795_414_875_853_308).to_string(),
            "2026-11-23T06:21:15.853308+00:00"
        );
        assert_eq!(
            Timestamp(951_782_400_000_001).to_string(),
            "2000-02-29T00:00:00.000001+00:00"
        );
    }

    #[test]
    fn days_from_civil_inverts_civil_from_days() {
        for days in [-800_000, -1, 0, 1, 59, 10_956, 20_454, 2_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
