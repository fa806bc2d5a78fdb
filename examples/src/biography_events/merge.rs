//! Merging new events into the known ones (the seed's "Merging New Events"): a model
//! decides which new events are paraphrases of known ones (and writes the merged
//! description); the rules here merge the details, prefer primary sources, flag
//! conflicts, keep the existing id, and add the unmatched events.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::event::{Conflict, Event, SourcePassage};

/// The model's matching of new events to known ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventMatches {
    /// One entry per new event that describes the same happening as a known event. New
    /// events not listed are added as new.
    pub matches: Vec<EventMatch>,
}

/// One new event matched to a known one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EventMatch {
    /// The new event's number (`N1` → 1).
    pub new_event: usize,
    /// The id of the known event it is the same as.
    pub existing_id: String,
    /// One description combining the details of both.
    pub merged_description: String,
}

/// Checks a matching against the lists it was made for.
///
/// # Errors
/// A message naming the bad entry (a new-event number out of range, an unknown id, a new
/// event matched twice).
pub(crate) fn check_matches(
    matches: &EventMatches,
    existing: &[Event],
    new: usize,
) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for m in &matches.matches {
        if m.new_event == 0 || m.new_event > new {
            return Err(format!(
                "new_event {} does not exist (use 1-{new})",
                m.new_event
            ));
        }
        if !existing.iter().any(|e| e.id == m.existing_id) {
            return Err(format!(
                "existing_id {:?} is not the id of a known event",
                m.existing_id
            ));
        }
        if !seen.insert(m.new_event) {
            return Err(format!(
                "new_event {} is matched twice; match it to one known event",
                m.new_event
            ));
        }
    }
    Ok(())
}

/// How much a source is trusted: Wikipedia first, then Britannica, then Biography.com,
/// then other sites; events without a source last (lower is better).
pub(crate) fn source_rank(source: &str) -> u8 {
    let s = source.to_lowercase();
    if s.contains("wikipedia") {
        0
    } else if s.contains("britannica") {
        1
    } else if s.contains("biography") {
        2
    } else if s.is_empty() {
        4
    } else {
        3
    }
}

/// Merges `new` into `existing` by `matches`; returns the merged list and whether it
/// differs from `existing`. Unmatched new events get fresh numeric ids.
pub fn merge_events(
    existing: &[Event],
    new: &[Event],
    matches: &EventMatches,
) -> (Vec<Event>, bool) {
    let mut merged = existing.to_vec();
    let mut next_id = merged
        .iter()
        .filter_map(|e| e.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    for (index, event) in new.iter().enumerate() {
        let matched = matches.matches.iter().find(|m| m.new_event == index + 1);
        match matched.and_then(|m| {
            merged
                .iter_mut()
                .find(|e| e.id == m.existing_id)
                .map(|e| (e, m))
        }) {
            Some((known, m)) => *known = merge_pair(known, event, Some(&m.merged_description)),
            None => {
                let mut added = event.clone();
                added.id = next_id.to_string();
                next_id += 1;
                merged.push(added);
            }
        }
    }
    let changed = !super::event::same_facts(&merged, existing);
    (merged, changed)
}

/// The events a life has once (by name, case-insensitive).
const ONCE_IN_A_LIFE: [&str; 2] = ["birth", "death"];

/// Merges the events a life has only once ([`ONCE_IN_A_LIFE`]) that appear more than
/// once into the first of them (by [`merge_pair`], so disagreeing dates or places are
/// flagged as conflicts), keeping the order of the others.
pub(crate) fn merge_once_in_a_life(events: Vec<Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for event in events {
        let once = ONCE_IN_A_LIFE
            .iter()
            .any(|n| event.name.eq_ignore_ascii_case(n));
        match out
            .iter_mut()
            .find(|e| once && e.name.eq_ignore_ascii_case(&event.name))
        {
            Some(first) => *first = merge_pair(first, &event, None),
            None => out.push(event),
        }
    }
    out
}

/// The titles a description names: runs of two or more capitalised words (`The Salt
/// Road`) that are not the person's name and do not follow `in`, `at`, `to` or `near`
/// (those are places: two books published in New York are two events).
fn titles_in(description: &str, person: &str) -> Vec<String> {
    let mut titles = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut place = false;
    let mut previous = "";
    let close = |run: &mut Vec<&str>, place: bool, titles: &mut Vec<String>| {
        let title = run.join(" ");
        if run.len() >= 2 && !place && !crate::shared::prose::names_in_full(&title, person) {
            titles.push(title);
        }
        run.clear();
    };
    for raw in description.split_whitespace() {
        let word = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let word = word.strip_suffix("'s").unwrap_or(word);
        if word.starts_with(char::is_uppercase) {
            if run.is_empty() {
                place = ["in", "at", "to", "near"].contains(&previous);
            }
            run.push(word);
        } else {
            close(&mut run, place, &mut titles);
        }
        if raw.ends_with([',', '.', ';', ':', ')']) {
            close(&mut run, place, &mut titles);
        }
        previous = word;
    }
    close(&mut run, place, &mut titles);
    titles
}

/// Merges events of one kind (name) from different sources whose descriptions name the
/// same work (`The Salt Road`, see [`titles_in`]) into the first of them, by
/// [`merge_pair`]: one book published once, so two sources giving two dates for it are a
/// flagged `date` conflict, not two events. The check is the graph's, whatever model
/// matched the events.
pub(crate) fn merge_same_work(events: Vec<Event>, person: &str) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::with_capacity(events.len());
    for event in events {
        let titles = titles_in(&event.description, person);
        let same = out.iter_mut().find(|known| {
            !titles.is_empty()
                && known.name.eq_ignore_ascii_case(&event.name)
                && (known.source != event.source || known.source_url != event.source_url)
                && titles_in(&known.description, person)
                    .iter()
                    .any(|t| titles.contains(t))
        });
        match same {
            Some(known) => *known = merge_pair(known, &event, None),
            None => out.push(event),
        }
    }
    out
}

/// Merges one new event into the known event it matches:
///
/// - the id and name of the known event are kept;
/// - the description is `merged_description` when the model wrote one, else the longer;
/// - each date part missing on one side is taken from the other; parts that disagree keep
///   the better source's value and are flagged as a `date` conflict;
/// - a missing location is filled; two different locations keep the better source's, and
///   are flagged as a `location` conflict when both are sourced and neither names the
///   other (an unsourced value is simply refined);
/// - the source becomes the better of the two (Wikipedia > Britannica > Biography.com >
///   other sites > none).
pub(crate) fn merge_pair(known: &Event, new: &Event, merged_description: Option<&str>) -> Event {
    let new_is_better = source_rank(&new.source) < source_rank(&known.source);
    let (better, other) = if new_is_better {
        (new, known)
    } else {
        (known, new)
    };
    let mut merged = known.clone();
    merged.source = better.source.clone();
    merged.source_url = better.source_url.clone();
    merged.passage = better.passage.clone();
    // Every page merged in stays named, with its passage: the kept page states only its part.
    merged.also_read_from = Vec::new();
    let pages = [other]
        .into_iter()
        .map(|e| SourcePassage {
            url: e.source_url.clone(),
            passage: e.passage.clone(),
        })
        .chain(known.also_read_from.iter().cloned())
        .chain(new.also_read_from.iter().cloned());
    for page in pages {
        if !page.url.is_empty()
            && page.url != merged.source_url
            && !merged.also_read_from.iter().any(|p| p.url == page.url)
        {
            merged.also_read_from.push(page);
        }
    }
    merged.description = match merged_description.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) => d.to_owned(),
        None if new.description.len() > known.description.len() => new.description.clone(),
        None => known.description.clone(),
    };

    let (b, o) = (better.date, other.date);
    let disagree = matches!((b.year, o.year), (Some(x), Some(y)) if x != y)
        || matches!((b.month, o.month), (Some(x), Some(y)) if x != y)
        || matches!((b.day, o.day), (Some(x), Some(y)) if x != y);
    merged.date.year = b.year.or(o.year);
    merged.date.month = b.month.or(o.month);
    merged.date.day = match (b.month, o.month) {
        // A day belongs to its month: when the months disagree, the better source's day.
        (Some(x), Some(y)) if x != y => b.day,
        (None, Some(_)) => o.day,
        _ => b.day.or(o.day),
    };
    if merged.date.validate().is_err() {
        merged.date.day = None;
    }
    if disagree && !both_unsourced(better, other) {
        flag(
            &mut merged,
            "date",
            (b.display(), better),
            (o.display(), other),
        );
    }

    merged.location = match (&better.location, &other.location) {
        (Some(x), Some(y)) if !x.eq_ignore_ascii_case(y) => {
            let refines = contains(x, y) || contains(y, x);
            if !refines && !better.source.is_empty() && !other.source.is_empty() {
                flag(
                    &mut merged,
                    "location",
                    (x.clone(), better),
                    (y.clone(), other),
                );
            }
            Some(x.clone())
        }
        (Some(x), _) => Some(x.clone()),
        (None, y) => y.clone(),
    };
    for conflict in &new.conflicts {
        if !merged.conflicts.contains(conflict) {
            merged.conflicts.push(conflict.clone());
        }
    }
    merged
}

fn both_unsourced(a: &Event, b: &Event) -> bool {
    a.source.is_empty() && b.source.is_empty()
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

/// Records that `kept` and `other` (each a value and the event it came from) disagree on
/// `field`, with both sources and the passages stating them.
fn flag(event: &mut Event, field: &str, kept: (String, &Event), other: (String, &Event)) {
    let passages = |e: &Event| e.passage.clone();
    if let Some(conflict) = event.conflicts.iter_mut().find(|c| c.field == field) {
        if !conflict.values.contains(&other.0) {
            conflict.values.push(other.0);
            conflict.sources.push(other.1.source.clone());
            conflict.passages.push(passages(other.1));
        }
        return;
    }
    event.conflicts.push(Conflict {
        field: field.to_owned(),
        values: vec![kept.0, other.0],
        sources: vec![kept.1.source.clone(), other.1.source.clone()],
        passages: vec![passages(kept.1), passages(other.1)],
    });
}

/// Combines two descriptions of one event word by word (the offline stand-in's way of
/// writing a merged description). With no common first word, the longer one. Otherwise the common beginning once, two differing place-like
/// words (capitalised) as `A/B`, then the rest of the first and the words of the second
/// it lacks. `Born in NYC 1891` + `Born in Yorkville to immigrants` →
/// `Born in NYC/Yorkville 1891 to immigrants`.
pub(crate) fn combine_descriptions(first: &str, second: &str) -> String {
    let a: Vec<&str> = first.split_whitespace().collect();
    let b: Vec<&str> = second.split_whitespace().collect();
    let common = a
        .iter()
        .zip(&b)
        .take_while(|(x, y)| x.eq_ignore_ascii_case(y))
        .count();
    if common == 0 {
        // Nothing to align on: the more detailed (longer) description.
        return if second.len() > first.len() {
            second
        } else {
            first
        }
        .trim()
        .to_owned();
    }
    let mut out: Vec<String> = a[..common].iter().map(|w| (*w).to_owned()).collect();
    let (rest_a, mut rest_b) = (&a[common..], &b[common..]);
    let capitalised = |w: &&str| w.chars().next().is_some_and(char::is_uppercase);
    match (rest_a.first(), rest_b.first()) {
        (Some(x), Some(y)) if capitalised(x) && capitalised(y) => {
            out.push(format!("{x}/{y}"));
            out.extend(rest_a[1..].iter().map(|w| (*w).to_owned()));
            rest_b = &rest_b[1..];
        }
        _ => out.extend(rest_a.iter().map(|w| (*w).to_owned())),
    }
    let norm = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let present: std::collections::HashSet<String> = out.iter().map(|w| norm(w)).collect();
    let missing: Vec<&str> = rest_b
        .iter()
        .copied()
        .filter(|w| !present.contains(&norm(w)))
        .collect();
    if !missing.is_empty() {
        if let Some(last) = out.last_mut() {
            *last = last.trim_end_matches('.').to_owned();
        }
        out.extend(missing.iter().map(|w| (*w).to_owned()));
    }
    out.join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn one_work_from_two_sources_with_two_years_is_one_event_with_a_date_conflict() {
        use crate::biography_events::event::EventDate;
        let event = |source: &str, description: &str, year: i32| Event {
            name: "Publication".into(),
            description: description.into(),
            source: source.into(),
            date: EventDate {
                year: Some(year),
                ..EventDate::default()
            },
            ..Event::default()
        };
        assert_eq!(
            titles_in(
                "Her novel The Salt Road was published in New York.",
                "Sunniva Brakstad"
            ),
            ["The Salt Road"]
        );
        let merged = merge_same_work(
            vec![
                event(
                    "Wikipedia",
                    "Her novel The Salt Road was published in 1962.",
                    1962,
                ),
                event("Britannica", "The Salt Road appeared in 1963.", 1963),
                event(
                    "Britannica",
                    "Sunniva Brakstad published Winter Ledger in 1970.",
                    1970,
                ),
            ],
            "Sunniva Brakstad",
        );
        assert_eq!(merged.len(), 2, "{merged:#?}");
        let conflict = &merged[0].conflicts[0];
        assert_eq!(conflict.field, "date");
        assert_eq!(conflict.values, ["1962", "1963"]);
        assert_eq!(conflict.sources, ["Wikipedia", "Britannica"]);
    }

    #[test]
    fn descriptions_combine_as_in_the_seed_example() {
        assert_eq!(
            combine_descriptions("Born in NYC 1891", "Born in Yorkville to immigrants"),
            "Born in NYC/Yorkville 1891 to immigrants"
        );
    }

    #[test]
    fn matched_events_keep_their_id_and_unmatched_ones_are_added() {
        let known = vec![Event {
            id: "7".into(),
            name: "Birth".into(),
            ..Event::default()
        }];
        let new = vec![
            Event {
                id: "x".into(),
                name: "Birth".into(),
                source: "Wikipedia".into(),
                ..Event::default()
            },
            Event {
                id: "y".into(),
                name: "Death".into(),
                source: "Wikipedia".into(),
                ..Event::default()
            },
        ];
        let matches = EventMatches {
            matches: vec![EventMatch {
                new_event: 1,
                existing_id: "7".into(),
                merged_description: String::new(),
            }],
        };
        let (merged, changed) = merge_events(&known, &new, &matches);
        assert!(changed);
        let ids: Vec<_> = merged
            .iter()
            .map(|e| (e.id.as_str(), e.name.as_str()))
            .collect();
        assert_eq!(ids, [("7", "Birth"), ("8", "Death")]);
    }

    #[test]
    fn a_day_is_never_combined_with_another_sources_month() {
        use super::super::event::EventDate;
        let known = Event {
            id: "1".into(),
            name: "Birth".into(),
            source: "Wikipedia".into(),
            date: EventDate {
                year: Some(1902),
                month: Some(3),
                day: None,
            },
            ..Event::default()
        };
        let new = Event {
            name: "Birth".into(),
            source: "Britannica".into(),
            date: EventDate::ymd(1902, 4, 16),
            ..Event::default()
        };
        let merged = merge_pair(&known, &new, None);
        assert_eq!(
            merged.date,
            EventDate {
                year: Some(1902),
                month: Some(3),
                day: None
            }
        );
        assert_eq!(merged.conflicts[0].field, "date");
        assert_eq!(merged.conflicts[0].sources, ["Wikipedia", "Britannica"]);
    }

    #[test]
    fn bad_matches_are_rejected_with_the_entry_named() {
        let known = vec![Event {
            id: "1".into(),
            name: "Birth".into(),
            ..Event::default()
        }];
        let bad = EventMatches {
            matches: vec![EventMatch {
                new_event: 1,
                existing_id: "9".into(),
                merged_description: String::new(),
            }],
        };
        assert!(
            check_matches(&bad, &known, 1)
                .unwrap_err()
                .contains("\"9\"")
        );
    }
}
