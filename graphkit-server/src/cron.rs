//! Cron schedules: the five-field expressions crons are written in (`minute hour
//! day-of-month month day-of-week`) and the time zones they are read in, and the next time
//! a schedule is due.
//!
//! The fields take `*`, numbers, ranges (`1-5`), steps (`*/15`, `10-50/20`), lists
//! (`1,15,30`) and, for months and weekdays, names (`jan`, `mon-fri`); a weekday of 7 is
//! Sunday, as 0. When both the day of the month and the day of the week are restricted, a
//! day matching either is due (as in Vixie cron). `@yearly`, `@monthly`, `@weekly`,
//! `@daily` and `@hourly` stand for their usual expressions.
//!
//! Time zones: UTC (`UTC`, `Etc/UTC`, `GMT`, `Z`), fixed offsets (`+02:00`, `-0530`,
//! `UTC+02:00`, the name Python gives a fixed-offset `tzinfo`) and IANA names
//! (`America/New_York`), read from the system's time zone database (`$TZDIR`, else
//! `/usr/share/zoneinfo`, `/usr/lib/zoneinfo`, `/etc/zoneinfo`; Debian's `tzdata`). A schedule
//! is read on the zone's wall clock: a wall-clock time that a jump forward skips (02:30 on
//! the night clocks go from 02:00 to 03:00) does not fire that day, and one that a jump back
//! repeats fires at both of its instants.
//!
//! ```
//! use graphkit_server::cron::{Schedule, TimeZone};
//! use graphkit_server::time::Timestamp;
//!
//! let schedule = Schedule::parse("30 9 * * mon-fri").unwrap();
//! // 1970-01-03 was a Saturday: the next weekday at 09:30 is Monday the 5th.
//! let saturday = Timestamp(2 * 86_400 * 1_000_000);
//! let next = schedule.next_after(saturday, TimeZone::UTC).unwrap();
//! assert_eq!(next.to_string(), "1970-01-05T09:30:00.000000+00:00");
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::ServerError;
use crate::time::{Timestamp, civil_from_days, days_from_civil};

const MINUTE_US: i64 = 60_000_000;
const DAY_MINUTES: i64 = 24 * 60;

/// How far ahead [`Schedule::next_after`] looks: a schedule that names a day which does not
/// come within this many years (`0 0 30 2 *`, February 30th) never fires.
const SEARCH_YEARS: i64 = 8;

/// A parsed cron schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    days_restricted: bool,
    weekdays_restricted: bool,
}

const MONTHS: &[&str] = &[
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Schedule {
    /// Parses a five-field expression or one of the `@` shorthands.
    ///
    /// # Errors
    /// A [`ServerError::Validation`] naming the field and the value that is wrong.
    pub fn parse(expression: &str) -> Result<Self, ServerError> {
        let expanded = match expression.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(ServerError::Validation(format!(
                "schedule {expression:?} has {} fields; write five: minute hour day-of-month month day-of-week (e.g. \"0 9 * * 1-5\")",
                fields.len()
            )));
        };
        let mut weekdays = parse_field(weekday, "day-of-week", 0, 7, WEEKDAYS)?;
        if weekdays & (1 << 7) != 0 {
            weekdays = (weekdays | 1) & !(1 << 7);
        }
        Ok(Self {
            minutes: parse_field(minute, "minute", 0, 59, &[])?,
            hours: parse_field(hour, "hour", 0, 23, &[])?,
            days: parse_field(day, "day-of-month", 1, 31, &[])?,
            months: parse_field(month, "month", 1, 12, MONTHS)?,
            weekdays,
            days_restricted: !day.starts_with('*'),
            weekdays_restricted: !weekday.starts_with('*'),
        })
    }

    fn day_matches(&self, day: u32, weekday: u32) -> bool {
        let by_day = self.days & (1 << day) != 0;
        let by_weekday = self.weekdays & (1 << weekday) != 0;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => by_day || by_weekday,
            _ => by_day && by_weekday,
        }
    }

    /// The first time after `after` (strictly; on a whole minute) at which the schedule is
    /// due when read in `zone`; `None` when it never is (within eight years).
    pub fn next_after(&self, after: Timestamp, zone: TimeZone) -> Option<Timestamp> {
        let first = after.micros().div_euclid(MINUTE_US) + 1;
        let limit = first + SEARCH_YEARS * 366 * DAY_MINUTES;
        match &zone.kind {
            Kind::Fixed(offset) => {
                let offset = i64::from(*offset);
                let local = self.next_local(first + offset, limit + offset)?;
                Some(Timestamp((local - offset) * MINUTE_US))
            }
            Kind::Named { zone, .. } => {
                // Read the schedule at one offset until the zone's offset next changes; a
                // due minute found past that change is looked for again at the new offset.
                let mut start = first;
                while start < limit {
                    let offset = offset_at(zone, start)?;
                    let due = self
                        .next_local(start + offset, limit + offset)
                        .map(|local| local - offset);
                    let horizon = due.unwrap_or(limit).min(limit);
                    match next_change(zone, start, offset, horizon) {
                        Some(change) if due.is_none_or(|due| due >= change) => start = change,
                        _ => return due.map(|due| Timestamp(due * MINUTE_US)),
                    }
                }
                None
            }
        }
    }

    /// The first local minute (minutes since the epoch on the wall clock) from `minute` on,
    /// before `limit`, at which the schedule is due.
    fn next_local(&self, mut minute: i64, limit: i64) -> Option<i64> {
        while minute < limit {
            let days = minute.div_euclid(DAY_MINUTES);
            let of_day = minute.rem_euclid(DAY_MINUTES);
            let (year, month, day) = civil_from_days(days);
            if self.months & (1 << month) == 0 {
                let (y, m) = if month == 12 {
                    (year + 1, 1)
                } else {
                    (year, month + 1)
                };
                minute = days_from_civil(y, m, 1) * DAY_MINUTES;
                continue;
            }
            // 1970-01-01 was a Thursday (4).
            let weekday = u32::try_from((days + 4).rem_euclid(7)).unwrap_or(0);
            if !self.day_matches(day, weekday) {
                minute = (days + 1) * DAY_MINUTES;
                continue;
            }
            let hour = of_day / 60;
            if self.hours & (1 << hour) == 0 {
                minute = days * DAY_MINUTES + (hour + 1) * 60;
                continue;
            }
            if self.minutes & (1 << (of_day % 60)) == 0 {
                minute += 1;
                continue;
            }
            return Some(minute);
        }
        None
    }
}

/// The offset from UTC, in whole minutes, of `zone` at the UTC minute `minute`.
fn offset_at(zone: &tz::TimeZone, minute: i64) -> Option<i64> {
    let local = zone.find_local_time_type(minute.checked_mul(60)?).ok()?;
    Some(i64::from(local.ut_offset()).div_euclid(60))
}

/// The first UTC minute after `start`, up to `until`, at which `zone`'s offset is no longer
/// `offset`. Zones change their offset at most a few times a year, so a day-by-day look
/// finds the day and a halving search the minute.
fn next_change(zone: &tz::TimeZone, start: i64, offset: i64, until: i64) -> Option<i64> {
    let differs = |minute: i64| offset_at(zone, minute) != Some(offset);
    let mut before = start;
    while before < until {
        let probe = (before + DAY_MINUTES).min(until);
        if differs(probe) {
            // `before` has `offset`, `probe` does not: the change lies in (before, probe].
            let (mut same, mut other) = (before, probe);
            while other - same > 1 {
                let middle = same + (other - same) / 2;
                if differs(middle) {
                    other = middle;
                } else {
                    same = middle;
                }
            }
            return Some(other);
        }
        before = probe;
    }
    None
}

/// One field as a bit set of the values it allows.
fn parse_field(
    field: &str,
    name: &str,
    low: u32,
    high: u32,
    names: &[&str],
) -> Result<u64, ServerError> {
    let wrong = |why: &str| {
        ServerError::Validation(format!(
            "the {name} field {field:?} {why}; it takes *, numbers {low}-{high}, ranges (a-b), steps (*/n) and lists (a,b)"
        ))
    };
    let value = |text: &str| -> Result<u32, ServerError> {
        let lower = text.to_ascii_lowercase();
        if let Some(i) = names.iter().position(|n| *n == lower) {
            let first = if name == "month" { 1 } else { 0 };
            return Ok(u32::try_from(i).unwrap_or(0) + first);
        }
        let n: u32 = text
            .parse()
            .map_err(|_| wrong(&format!("holds {text:?}, which is not a value")))?;
        if (low..=high).contains(&n) {
            Ok(n)
        } else {
            Err(wrong(&format!("holds {n}, outside {low}-{high}")))
        }
    };
    let mut bits = 0u64;
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .ok()
                    .filter(|s| *s >= 1)
                    .ok_or_else(|| wrong(&format!("has the step {step:?}")))?;
                (range, step)
            }
            None => (part, 1),
        };
        let (from, to) = if range == "*" {
            (low, high)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            // `5/15` means from 5 to the end in steps of 15.
            (v, if part.contains('/') { high } else { v })
        };
        if from > to {
            return Err(wrong(&format!(
                "has the range {from}-{to}, which runs backwards"
            )));
        }
        let mut v = from;
        while v <= to {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok(bits)
}

/// The time zone a schedule is read in: UTC, a fixed offset from it, or a named zone of the
/// system's time zone database.
#[derive(Debug, Clone, Default)]
pub struct TimeZone {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// Minutes east of UTC.
    Fixed(i32),
    /// An IANA zone, read once per process from the time zone database.
    Named {
        name: Arc<str>,
        zone: Arc<tz::TimeZone>,
    },
}

impl Default for Kind {
    fn default() -> Self {
        Self::Fixed(0)
    }
}

impl PartialEq for TimeZone {
    fn eq(&self, other: &Self) -> bool {
        match (&self.kind, &other.kind) {
            (Kind::Fixed(a), Kind::Fixed(b)) => a == b,
            (Kind::Named { name: a, .. }, Kind::Named { name: b, .. }) => a == b,
            _ => false,
        }
    }
}

impl Eq for TimeZone {}

/// The longest zone name read (the longest IANA name is about 30 characters).
const MAX_ZONE_NAME: usize = 64;
/// The largest time zone file read (they are a few kilobytes).
const MAX_ZONE_FILE: u64 = 256 * 1024;

impl TimeZone {
    /// UTC.
    pub const UTC: Self = Self {
        kind: Kind::Fixed(0),
    };

    /// Parses `UTC` (also `Etc/UTC`, `GMT`, `Z`), a fixed offset (`+02:00`, `-0530`,
    /// `UTC+02:00`) or an IANA zone name (`Europe/Paris`), which is read from the system's
    /// time zone database the first time this process meets it.
    ///
    /// # Errors
    /// A [`ServerError::Validation`] naming the zone, for a name that is not in the time zone
    /// database (or when the database is missing: the message says where it looked) and
    /// for anything else.
    pub fn parse(name: &str) -> Result<Self, ServerError> {
        let trimmed = name.trim();
        if let Some(offset) = fixed_offset(trimmed) {
            return Ok(Self {
                kind: Kind::Fixed(offset),
            });
        }
        let zone = named_zone(trimmed)?;
        Ok(Self {
            kind: Kind::Named {
                name: Arc::from(trimmed),
                zone,
            },
        })
    }
}

/// `UTC`-like names and fixed offsets, in minutes east of UTC.
fn fixed_offset(trimmed: &str) -> Option<i32> {
    if trimmed.is_empty() {
        return None;
    }
    let rest = ["Etc/UTC", "UTC", "GMT", "Etc/GMT", "Z"]
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix))
        .unwrap_or(trimmed);
    if rest.is_empty() {
        return Some(0);
    }
    let (sign, digits) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let (hours, minutes) = match digits.split_once(':') {
        Some((h, m)) => (h, m),
        None if digits.len() == 4 => digits.split_at(2),
        None => (digits, "0"),
    };
    let hours: i32 = hours.parse().ok()?;
    let minutes: i32 = minutes.parse().ok()?;
    if !(0..=14).contains(&hours) || !(0..60).contains(&minutes) {
        return None;
    }
    Some(sign * (hours * 60 + minutes))
}

/// The folders searched for zone files: `$TZDIR` first, then the usual system places.
fn zone_folders() -> Vec<PathBuf> {
    let mut folders: Vec<PathBuf> = std::env::var_os("TZDIR")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    folders.extend(
        ["/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/etc/zoneinfo"]
            .iter()
            .map(PathBuf::from),
    );
    folders
}

/// An IANA zone by name, read once per process. The name is client input: only names made
/// of the characters IANA names use, in segments that are not `.` or `..`, are looked up,
/// so a name can never reach a file outside the time zone folders.
fn named_zone(name: &str) -> Result<Arc<tz::TimeZone>, ServerError> {
    static ZONES: OnceLock<Mutex<HashMap<String, Arc<tz::TimeZone>>>> = OnceLock::new();
    let refused = |why: &str| {
        ServerError::Validation(format!(
            "timezone {name:?} {why}; give an IANA zone name (\"Europe/Paris\", \"America/New_York\"), \"UTC\" or a fixed offset (\"+02:00\")"
        ))
    };
    let well_formed = !name.is_empty()
        && name.len() <= MAX_ZONE_NAME
        && name.split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'.'))
        });
    if !well_formed {
        return Err(refused("is not a time zone name"));
    }
    let zones = ZONES.get_or_init(Mutex::default);
    if let Some(zone) = zones.lock().ok().and_then(|z| z.get(name).cloned()) {
        return Ok(zone);
    }
    let folders = zone_folders();
    let file = folders.iter().map(|folder| folder.join(name)).find(|path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= MAX_ZONE_FILE)
    });
    let Some(file) = file else {
        let looked: Vec<String> = folders.iter().map(|f| f.display().to_string()).collect();
        return Err(refused(&format!(
            "is not in the time zone database (looked in {}; install the system's tzdata package or set TZDIR if it is missing)",
            looked.join(", ")
        )));
    };
    let bytes = std::fs::read(&file)
        .map_err(|e| refused(&format!("could not be read from {}: {e}", file.display())))?;
    let zone = tz::TimeZone::from_tz_data(&bytes).map_err(|e| {
        refused(&format!(
            "is not a valid zone file ({}): {e}",
            file.display()
        ))
    })?;
    let zone = Arc::new(zone);
    if let Ok(mut zones) = zones.lock() {
        zones.insert(name.to_owned(), Arc::clone(&zone));
    }
    Ok(zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        // "YYYY-MM-DD HH:MM" in UTC.
        let (date, time) = text.split_once(' ').unwrap();
        let d: Vec<i64> = date.split('-').map(|p| p.parse().unwrap()).collect();
        let t: Vec<i64> = time.split(':').map(|p| p.parse().unwrap()).collect();
        let days = days_from_civil(
            d[0],
            u32::try_from(d[1]).unwrap(),
            u32::try_from(d[2]).unwrap(),
        );
        Timestamp((days * DAY_MINUTES + t[0] * 60 + t[1]) * MINUTE_US)
    }

    fn next(expr: &str, after: &str) -> String {
        Schedule::parse(expr)
            .unwrap()
            .next_after(at(after), TimeZone::UTC)
            .unwrap()
            .to_string()
    }

    #[test]
    fn every_minute_is_the_next_whole_minute() {
        assert_eq!(
            next("* * * * *", "2026-01-01 10:00"),
            "2026-01-01T10:01:00.000000+00:00"
        );
        let just_after = Timestamp(at("2026-01-01 10:00").micros() + 1);
        let n = Schedule::parse("* * * * *")
            .unwrap()
            .next_after(just_after, TimeZone::UTC);
        assert_eq!(n.unwrap().to_string(), "2026-01-01T10:01:00.000000+00:00");
    }

    #[test]
    fn steps_ranges_and_lists() {
        assert_eq!(
            next("*/15 * * * *", "2026-01-01 10:07"),
            "2026-01-01T10:15:00.000000+00:00"
        );
        assert_eq!(
            next("10-50/20 * * * *", "2026-01-01 10:31"),
            "2026-01-01T10:50:00.000000+00:00"
        );
        assert_eq!(
            next("0 9,17 * * *", "2026-01-01 09:00"),
            "2026-01-01T17:00:00.000000+00:00"
        );
        assert_eq!(
            next("5/20 * * * *", "2026-01-01 10:26"),
            "2026-01-01T10:45:00.000000+00:00"
        );
    }

    #[test]
    fn rolls_over_days_months_and_years() {
        assert_eq!(
            next("0 0 * * *", "2026-12-31 23:59"),
            "2027-01-01T00:00:00.000000+00:00"
        );
        assert_eq!(
            next("0 12 1 * *", "2026-01-31 13:00"),
            "2026-02-01T12:00:00.000000+00:00"
        );
        assert_eq!(
            next("@yearly", "2026-06-01 00:00"),
            "2027-01-01T00:00:00.000000+00:00"
        );
        // Leap day: the next February 29th after 2025.
        assert_eq!(
            next("0 0 29 feb *", "2025-01-01 00:00"),
            "2028-02-29T00:00:00.000000+00:00"
        );
    }

    #[test]
    fn weekdays_by_number_and_name_with_seven_as_sunday() {
        // 2026-01-01 is a Thursday.
        assert_eq!(
            next("0 9 * * mon-fri", "2026-01-02 10:00"),
            "2026-01-05T09:00:00.000000+00:00"
        );
        assert_eq!(
            next("0 9 * * 7", "2026-01-01 00:00"),
            "2026-01-04T09:00:00.000000+00:00"
        );
        assert_eq!(
            next("0 9 * * SUN", "2026-01-01 00:00"),
            "2026-01-04T09:00:00.000000+00:00"
        );
    }

    #[test]
    fn day_of_month_or_day_of_week_when_both_are_restricted() {
        // The 15th, or any Monday: Monday the 5th comes first.
        assert_eq!(
            next("0 0 15 * 1", "2026-01-01 00:00"),
            "2026-01-05T00:00:00.000000+00:00"
        );
        // Only the day of the month restricted: the weekday wildcard does not widen it.
        assert_eq!(
            next("0 0 15 * *", "2026-01-01 00:00"),
            "2026-01-15T00:00:00.000000+00:00"
        );
    }

    #[test]
    fn a_day_that_never_comes_never_fires() {
        let s = Schedule::parse("0 0 30 2 *").unwrap();
        assert_eq!(s.next_after(at("2026-01-01 00:00"), TimeZone::UTC), None);
    }

    #[test]
    fn fixed_offsets_shift_the_schedule() {
        let nine = Schedule::parse("0 9 * * *").unwrap();
        let plus_two = TimeZone::parse("+02:00").unwrap();
        let n = nine.next_after(at("2026-01-01 00:00"), plus_two).unwrap();
        assert_eq!(n.to_string(), "2026-01-01T07:00:00.000000+00:00");
        let minus = TimeZone::parse("UTC-05:30").unwrap();
        let n = nine
            .next_after(at("2026-01-01 00:00"), minus.clone())
            .unwrap();
        assert_eq!(n.to_string(), "2026-01-01T14:30:00.000000+00:00");
        assert_eq!(TimeZone::parse("-0530").unwrap(), minus);
        assert_eq!(TimeZone::parse("Etc/UTC").unwrap(), TimeZone::UTC);
    }

    /// The system's time zone database, or `None` after saying why the test is skipped.
    fn new_york() -> Option<TimeZone> {
        if !zone_folders()
            .iter()
            .any(|f| f.join("America/New_York").is_file())
        {
            eprintln!("skipped: no time zone database (install tzdata or set TZDIR)");
            return None;
        }
        Some(TimeZone::parse("America/New_York").expect("New York"))
    }

    #[test]
    fn named_zones_follow_daylight_saving() {
        let Some(ny) = new_york() else { return };
        let nine = Schedule::parse("0 9 * * *").unwrap();
        // Winter: EST, UTC-5; summer: EDT, UTC-4.
        let n = nine.next_after(at("2026-01-10 00:00"), ny.clone()).unwrap();
        assert_eq!(n.to_string(), "2026-01-10T14:00:00.000000+00:00");
        let n = nine.next_after(at("2026-07-10 00:00"), ny.clone()).unwrap();
        assert_eq!(n.to_string(), "2026-07-10T13:00:00.000000+00:00");
        // Across the change (2026-03-08, 02:00 EST -> 03:00 EDT): the 9:00 after the jump is
        // read at the new offset.
        let n = nine.next_after(at("2026-03-07 15:00"), ny.clone()).unwrap();
        assert_eq!(n.to_string(), "2026-03-08T13:00:00.000000+00:00");
        // 02:30 does not exist on the night of the jump: the next 02:30 is the day after.
        let half_past_two = Schedule::parse("30 2 * * *").unwrap();
        let n = half_past_two
            .next_after(at("2026-03-08 00:00"), ny.clone())
            .unwrap();
        assert_eq!(n.to_string(), "2026-03-09T06:30:00.000000+00:00");
        // 01:30 happens twice when clocks go back (2026-11-01, 02:00 EDT -> 01:00 EST).
        let half_past_one = Schedule::parse("30 1 * * *").unwrap();
        let first = half_past_one
            .next_after(at("2026-11-01 00:00"), ny.clone())
            .unwrap();
        assert_eq!(first.to_string(), "2026-11-01T05:30:00.000000+00:00");
        let again = half_past_one.next_after(first, ny.clone()).unwrap();
        assert_eq!(again.to_string(), "2026-11-01T06:30:00.000000+00:00");
        // Every 15 minutes across the jump forward: 01:45 EST is followed by 03:00 EDT.
        let quarter = Schedule::parse("*/15 * * * *").unwrap();
        let n = quarter.next_after(at("2026-03-08 06:45"), ny).unwrap();
        assert_eq!(n.to_string(), "2026-03-08T07:00:00.000000+00:00");
    }

    #[test]
    fn zone_names_that_are_paths_or_unknown_are_refused_by_name() {
        for bad in [
            "/etc/passwd",
            "../../etc/passwd",
            "America/../../../etc/passwd",
            "America//New_York",
            "Nowhere/Atlantis",
            "a\0b",
            "",
        ] {
            let e = TimeZone::parse(bad).unwrap_err().to_string();
            assert!(e.contains("timezone") && e.contains("IANA"), "{bad}: {e}");
        }
        let e = TimeZone::parse("Nowhere/Atlantis").unwrap_err().to_string();
        assert!(
            e.contains("Nowhere/Atlantis") && e.contains("looked in"),
            "{e}"
        );
    }

    #[test]
    fn bad_expressions_are_refused_by_name() {
        for bad in [
            "* * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "*/0 * * * *",
            "5-1 * * * *",
            "x * * * *",
        ] {
            assert!(Schedule::parse(bad).is_err(), "{bad} was accepted");
        }
        let e = Schedule::parse("61 * * * *").unwrap_err().to_string();
        assert!(e.contains("minute") && e.contains("61"), "{e}");
    }
}
