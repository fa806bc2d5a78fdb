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
//! Time zones: UTC (`UTC`, `Etc/UTC`, `GMT`, `Z`) and fixed offsets (`+02:00`, `-0530`,
//! `UTC+02:00`, the name Python gives a fixed-offset `tzinfo`). Named zones with daylight
//! saving (`America/New_York`) would need the time zone database and are refused with an
//! error that names the zone.
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
        let offset = i64::from(zone.offset_minutes);
        // Local minutes since the epoch, starting at the minute after `after`.
        let mut minute = after.micros().div_euclid(MINUTE_US) + 1 + offset;
        let limit = minute + SEARCH_YEARS * 366 * DAY_MINUTES;
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
            return Some(Timestamp((minute - offset) * MINUTE_US));
        }
        None
    }
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

/// The time zone a schedule is read in: UTC or a fixed offset from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeZone {
    offset_minutes: i32,
}

impl TimeZone {
    /// UTC.
    pub const UTC: Self = Self { offset_minutes: 0 };

    /// Parses `UTC` (also `Etc/UTC`, `GMT`, `Z`) or a fixed offset (`+02:00`, `-0530`,
    /// `UTC+02:00`).
    ///
    /// # Errors
    /// A [`ServerError::Validation`] naming the zone, for named zones (`Europe/Paris`) and anything else.
    pub fn parse(name: &str) -> Result<Self, ServerError> {
        let refused = || {
            ServerError::Validation(format!(
                "timezone {name:?} is not supported: this server reads schedules in UTC or at a fixed offset (\"UTC\", \"+02:00\", \"-05:30\"); named zones with daylight saving need the time zone database, which it does not carry. Give the schedule in UTC or as an offset"
            ))
        };
        let trimmed = name.trim();
        let rest = ["Etc/UTC", "UTC", "GMT", "Etc/GMT", "Z"]
            .iter()
            .find_map(|prefix| trimmed.strip_prefix(prefix))
            .unwrap_or(trimmed);
        if rest.is_empty() {
            return Ok(Self::UTC);
        }
        let (sign, digits) = match rest.as_bytes()[0] {
            b'+' => (1, &rest[1..]),
            b'-' => (-1, &rest[1..]),
            _ => return Err(refused()),
        };
        let (hours, minutes) = match digits.split_once(':') {
            Some((h, m)) => (h, m),
            None if digits.len() == 4 => digits.split_at(2),
            None => (digits, "0"),
        };
        let hours: i32 = hours.parse().map_err(|_| refused())?;
        let minutes: i32 = minutes.parse().map_err(|_| refused())?;
        if !(0..=14).contains(&hours) || !(0..60).contains(&minutes) {
            return Err(refused());
        }
        Ok(Self {
            offset_minutes: sign * (hours * 60 + minutes),
        })
    }
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
        let n = nine.next_after(at("2026-01-01 00:00"), minus).unwrap();
        assert_eq!(n.to_string(), "2026-01-01T14:30:00.000000+00:00");
        assert_eq!(TimeZone::parse("-0530").unwrap(), minus);
        assert_eq!(TimeZone::parse("Etc/UTC").unwrap(), TimeZone::UTC);
    }

    #[test]
    fn named_zones_and_bad_expressions_are_refused_by_name() {
        let e = TimeZone::parse("America/New_York").unwrap_err().to_string();
        assert!(e.contains("America/New_York"), "{e}");
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
