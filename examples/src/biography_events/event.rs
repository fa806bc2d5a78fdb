//! [`Event`]: one dated event of a life (the seed's event schema), with its date, its
//! conflicts, and the checks and ordering the outputs need.

use std::cmp::Ordering;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::shared::ExampleError;
use crate::shared::time::{MONTHS, month_number};

/// A date whose parts may each be unknown (the seed: "date {year/month/day nullable}").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventDate {
    /// The year, when known.
    pub year: Option<i32>,
    /// The month (1-12), when known.
    pub month: Option<u8>,
    /// The day of the month (1-31), when known.
    pub day: Option<u8>,
}

impl EventDate {
    /// A date with all three parts.
    pub fn ymd(year: i32, month: u8, day: u8) -> Self {
        Self {
            year: Some(year),
            month: Some(month),
            day: Some(day),
        }
    }

    /// `true` when year, month and day are all known.
    pub(crate) fn is_complete(&self) -> bool {
        self.year.is_some() && self.month.is_some() && self.day.is_some()
    }

    /// `true` when no part is known.
    pub(crate) fn is_unknown(&self) -> bool {
        self.year.is_none() && self.month.is_none() && self.day.is_none()
    }

    /// Checks the parts: month 1-12, a day that exists in its month (February 29 only in
    /// leap years when the year is known), and no day without a month.
    ///
    /// # Errors
    /// A message naming the bad part, e.g. `month 13 is not a month (use 1-12 or null)`.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(month) = self.month
            && !(1..=12).contains(&month)
        {
            return Err(format!("month {month} is not a month (use 1-12 or null)"));
        }
        if let Some(day) = self.day {
            let Some(month) = self.month else {
                return Err(format!(
                    "day {day} is given without a month; set the month or make the day null"
                ));
            };
            let max = days_in_month(self.year, month);
            if !(1..=max).contains(&day) {
                return Err(format!(
                    "day {day} does not exist in month {month} (1-{max})"
                ));
            }
        }
        Ok(())
    }

    /// Parses the dates the corpus and models write: `14 March 1902`, `March 14, 1902`,
    /// `Mar 1902`, `1902`, `1902-03-14`. Unknown text gives an unknown date.
    pub fn parse(text: &str) -> Self {
        let words: Vec<String> = text
            .split(|c: char| c.is_whitespace() || c == ',' || c == '.')
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut date = Self::default();
        for word in &words {
            if let [y, m, d] = word.split('-').collect::<Vec<_>>()[..]
                && let (Ok(y), Ok(m), Ok(d)) = (y.parse(), m.parse(), d.parse())
            {
                return Self::ymd(y, m, d);
            }
            if let Some(month) = month_number(word) {
                date.month.get_or_insert(month);
            } else if let Ok(number) = word.parse::<i32>() {
                if (1000..=2999).contains(&number) {
                    date.year.get_or_insert(number);
                } else if (1..=31).contains(&number) {
                    date.day.get_or_insert(number as u8);
                }
            }
        }
        if date.month.is_none() {
            date.day = None;
        }
        if date.validate().is_err() {
            date.day = None;
        }
        date
    }

    /// The date as text: `14 March 1902`, `March 1902`, `1902`, or `unknown date`.
    pub fn display(&self) -> String {
        let month = self
            .month
            .and_then(|m| MONTHS.get(usize::from(m).wrapping_sub(1)))
            .map(|m| (*m).to_owned());
        let year = self.year.map(|y| y.to_string());
        match (self.day, month, year) {
            (Some(d), Some(m), Some(y)) => format!("{d} {m} {y}"),
            (Some(d), Some(m), None) => format!("{d} {m}"),
            (None, Some(m), Some(y)) => format!("{m} {y}"),
            (None, Some(m), None) => m,
            (_, None, Some(y)) => y,
            _ => "unknown date".into(),
        }
    }

    /// Chronological order; unknown parts sort after known ones, unknown years last.
    pub fn chronological(&self, other: &Self) -> Ordering {
        let key = |d: &Self| {
            (
                d.year.is_none(),
                d.year,
                d.month.is_none(),
                d.month,
                d.day.is_none(),
                d.day,
            )
        };
        key(self).cmp(&key(other))
    }
}

fn days_in_month(year: Option<i32>, month: u8) -> u8 {
    match month {
        2 => match year {
            Some(y) if !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)) => 28,
            _ => 29,
        },
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Two sources disagree on one field of an event (the requirements' reading of the seed's
/// "flag conflicts").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Conflict {
    /// The field: `date` or `location`.
    pub field: String,
    /// The values found, the kept one first.
    pub values: Vec<String>,
    /// The source of each value, in the same order.
    pub sources: Vec<String>,
    /// The passage stating each value (empty where none was found), in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passages: Vec<String>,
}

/// One event of a life (the seed's schema: id, name, description, source, date,
/// location), plus the conflicts found while merging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Stable id: a merged event keeps the id of the event it was merged into.
    pub id: String,
    /// A short name (`Birth`, `Marriage`, `Publication of The Salt Ledger`).
    pub name: String,
    /// What happened.
    pub description: String,
    /// Where it was found (`Wikipedia`, `Britannica`, `Biography.com`, a news site); empty
    /// for events given without a source.
    #[serde(default)]
    pub source: String,
    /// When.
    #[serde(default)]
    pub date: EventDate,
    /// Where, when known.
    #[serde(default)]
    pub location: Option<String>,
    /// The URL of the page it was read from (the better source's, once merged); empty for
    /// events given without one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_url: String,
    /// The sentence of that page it was read from, found by the graph in the page's text
    /// (white space collapsed, see [`crate::shared::prose::quotes`]); empty when no
    /// sentence of the page states it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage: String,
    /// The other pages merged into this event (their details fill parts the first source
    /// lacks, or disagree with it), each with its passage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_read_from: Vec<SourcePassage>,
    /// Disagreements between sources found while merging.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<Conflict>,
}

/// A page an event was read from, and the sentence of it that states the event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourcePassage {
    /// The page's URL.
    pub url: String,
    /// The sentence (empty when none of the page states it as written).
    pub passage: String,
}

impl Event {
    /// Where the event was read: the URL and the passage of the page that states it,
    /// found by the graph in `text` (the page's text) from the event's description and
    /// year; no passage when no sentence of the page states it.
    pub(crate) fn read_from(mut self, url: &str, text: &str) -> Self {
        let statement = match self.date.year {
            Some(year) => format!("{} {year}", self.description),
            None => self.description.clone(),
        };
        self.source_url = url.to_owned();
        self.passage =
            crate::shared::prose::supporting_sentence(text, &statement).unwrap_or_default();
        self
    }

    /// Full details: year, month, day and location all known (the deterministic check
    /// behind the "> 80% of events have full details" rule).
    pub fn has_full_details(&self) -> bool {
        self.date.is_complete()
            && self
                .location
                .as_deref()
                .is_some_and(|l| !l.trim().is_empty())
    }

    /// What is missing: `day`, `month`, `year`, `location`.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.date.year.is_none() {
            missing.push("year");
        }
        if self.date.month.is_none() {
            missing.push("month");
        }
        if self.date.day.is_none() {
            missing.push("day");
        }
        if self.location.as_deref().is_none_or(|l| l.trim().is_empty()) {
            missing.push("location");
        }
        missing
    }

    /// One line for prompts and the timeline: `[3] 14 March 1902 — Birth (Trieste): ...`.
    pub fn line(&self) -> String {
        format!(
            "[{}] {} — {} ({}): {}{}",
            self.id,
            self.date.display(),
            self.name,
            self.location.as_deref().unwrap_or("location unknown"),
            self.description,
            if self.source.is_empty() {
                String::new()
            } else {
                format!(" [source: {}]", self.source)
            }
        )
    }
}

/// Whether two lists hold the same events, apart from the other pages each was read from
/// (a page confirming an event adds to `also_read_from` and changes no fact).
pub(crate) fn same_facts(a: &[Event], b: &[Event]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            Event {
                also_read_from: Vec::new(),
                ..x.clone()
            } == Event {
                also_read_from: Vec::new(),
                ..y.clone()
            }
        })
}

/// Sorts events by date, unknown dates last, then by id (numeric ids numerically).
pub(crate) fn sort_by_date(events: &mut [Event]) {
    events.sort_by(|a, b| {
        a.date
            .chronological(&b.date)
            .then_with(|| id_order(&a.id, &b.id))
    });
}

fn id_order(a: &str, b: &str) -> Ordering {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        _ => a.cmp(b),
    }
}

/// The share of events with full details (0 when there are none).
pub(crate) fn full_detail_ratio(events: &[Event]) -> f64 {
    if events.is_empty() {
        return 0.0;
    }
    events.iter().filter(|e| e.has_full_details()).count() as f64 / events.len() as f64
}

/// Checks a list of events given as input: names present, ids unique (blank ids are
/// numbered), dates valid.
///
/// # Errors
/// A message naming the event and the field.
pub(crate) fn validate_events(events: &mut [Event]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    let mut next = events
        .iter()
        .filter_map(|e| e.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    for (index, event) in events.iter_mut().enumerate() {
        if event.name.trim().is_empty() {
            return Err(format!(
                "event {index}: `name` is empty; give every event a name"
            ));
        }
        if event.id.trim().is_empty() {
            event.id = next.to_string();
            next += 1;
        }
        if !seen.insert(event.id.clone()) {
            return Err(format!(
                "event {index}: id {:?} is used twice; ids must be unique",
                event.id
            ));
        }
        event
            .date
            .validate()
            .map_err(|e| format!("event {index} ({:?}): date: {e}", event.id))?;
    }
    Ok(())
}

/// Reads `--initial-events FILE`: a JSON array of events (or `{"events": [...]}`).
///
/// # Errors
/// [`ExampleError::Io`] when the file cannot be read; [`ExampleError::Input`] when it is
/// not such JSON (naming the path inside the document) or an event is invalid.
pub(crate) fn load_initial_events(path: &Path) -> Result<Vec<Event>, ExampleError> {
    let text = std::fs::read_to_string(path).map_err(|e| ExampleError::io("read", path, e))?;
    parse_initial_events(&path.display().to_string(), &text)
}

/// Parses initial events from JSON text (see [`load_initial_events`]).
///
/// # Errors
/// [`ExampleError::Input`] naming `origin`.
pub fn parse_initial_events(origin: &str, text: &str) -> Result<Vec<Event>, ExampleError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Document {
        List(Vec<Event>),
        Object { events: Vec<Event> },
    }
    let input_error = |message: String| ExampleError::Input {
        origin: origin.to_owned(),
        message,
    };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        input_error(format!("not JSON ({e}); expected an array of events like [{{\"id\": \"1\", \"name\": \"Birth\", \"description\": \"...\", \"date\": {{\"year\": 1902, \"month\": 3, \"day\": 14}}, \"location\": \"Trieste\"}}]"))
    })?;
    let document: Document = if value.is_array() {
        serde_path_to_error::deserialize::<_, Vec<Event>>(value)
            .map(Document::List)
            .map_err(|e| input_error(format!("at `{}`: {}", e.path(), e.inner())))?
    } else {
        #[derive(Deserialize)]
        struct Wrapper {
            events: Vec<Event>,
        }
        serde_path_to_error::deserialize::<_, Wrapper>(value)
            .map(|w| Document::Object { events: w.events })
            .map_err(|e| {
                input_error(format!(
                    "at `{}`: {} (expected an array of events or {{\"events\": [...]}})",
                    e.path(),
                    e.inner()
                ))
            })?
    };
    let mut events = match document {
        Document::List(events) | Document::Object { events } => events,
    };
    validate_events(&mut events).map_err(input_error)?;
    Ok(events)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_date_forms_of_the_corpus() {
        assert_eq!(
            EventDate::parse("14 March 1902"),
            EventDate::ymd(1902, 3, 14)
        );
        assert_eq!(
            EventDate::parse("Dec 26, 1891"),
            EventDate::ymd(1891, 12, 26)
        );
        assert_eq!(EventDate::parse("1902-03-14"), EventDate::ymd(1902, 3, 14));
        let month_only = EventDate::parse("June 1931");
        assert_eq!(
            (month_only.year, month_only.month, month_only.day),
            (Some(1931), Some(6), None)
        );
        assert!(EventDate::parse("sometime").is_unknown());
    }

    #[test]
    fn month_13_and_impossible_days_are_rejected_with_the_part_named() {
        let bad = EventDate {
            year: Some(1900),
            month: Some(13),
            day: None,
        };
        assert!(bad.validate().unwrap_err().contains("month 13"));
        let feb = EventDate::ymd(1900, 2, 29);
        assert!(feb.validate().unwrap_err().contains("day 29"));
        assert!(EventDate::ymd(2000, 2, 29).validate().is_ok());
    }

    #[test]
    fn unknown_dates_sort_last() {
        let mut events = vec![
            Event {
                id: "1".into(),
                name: "Undated".into(),
                ..Event::default()
            },
            Event {
                id: "2".into(),
                name: "Later".into(),
                date: EventDate::parse("1950"),
                ..Event::default()
            },
            Event {
                id: "3".into(),
                name: "Earlier".into(),
                date: EventDate::parse("3 May 1920"),
                ..Event::default()
            },
        ];
        sort_by_date(&mut events);
        let names: Vec<_> = events.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["Earlier", "Later", "Undated"]);
    }
}
