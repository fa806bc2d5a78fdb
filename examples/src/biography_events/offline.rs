//! The offline stand-in (a test double, not a model) for the biography workflow. It
//! answers each prompt of the graph by what it asks for — reading the prompt's tagged
//! blocks with plain text rules — so an offline run takes the real graph paths: the
//! seed's example flow url_finder → think → crawl (Wikipedia) → think → crawl
//! (Britannica) → think → further_event_research → think (stop).

use std::sync::Arc;
use std::time::Duration;

use graphkit_llm::{ChatModel, ChatRequest, StandInModel};

use super::event::{Event, EventDate};
use super::merge::{EventMatch, EventMatches, combine_descriptions};
use super::prompts::{
    self, ChunkCategories, DetailAssessment, EventUpdate, ExtractedEvent, ExtractedEvents,
    GapCheck, GapTargets, ThinkOutput, read_block, read_line,
};
use super::state::GapTarget;

/// Event names and the words that announce them in a sentence (the stand-in's notion of
/// "the same kind of event", standing in for a model's reading of paraphrases).
const EVENT_KINDS: &[(&str, &[&str])] = &[
    ("Birth", &["born", "birth"]),
    ("Death", &["died", "death"]),
    ("Marriage", &["married", "marriage", "wed"]),
    ("Education", &["studied", "graduated", "enrolled"]),
    ("Award", &["prize", "award", "awarded", "medal"]),
    ("Move", &["moved", "settled", "emigrated", "relocated"]),
    (
        "Publication",
        &["published", "novel", "collection", "appeared", "debut"],
    ),
];

/// The offline stand-in for every prompt of the biography workflow, waiting `delay`
/// before each reply.
pub fn offline_model(delay: Duration) -> Arc<dyn ChatModel> {
    Arc::new(stand_in().with_delay(delay))
}

/// The name the stand-in answers as (and the run summary records as the model).
pub const STAND_IN_NAME: &str = "biography-offline";

/// The stand-in itself (tests replace single handlers with `on_structured`).
pub fn stand_in() -> StandInModel {
    StandInModel::new(STAND_IN_NAME)
        .on_structured_json(prompts::THINK_FORMAT, |request| {
            serde_json::to_value(think(request)).map_err(|e| e.to_string())
        })
        .on_structured(gap_check)
        .on_structured(detail_assessment)
        .on_structured(categorize)
        .on_structured(structure_events)
        .on_structured(find_gaps)
        .on_structured(event_update)
        .on_structured(match_events)
        .on_text(events_summary)
}

fn text(request: &ChatRequest) -> &str {
    request.last_user_text()
}

fn events_in(prompt: &str, tag: &str) -> Vec<Event> {
    serde_json::from_str(read_block(prompt, tag)).unwrap_or_default()
}

fn think(request: &ChatRequest) -> ThinkOutput {
    let prompt = text(request);
    let number = |name: &str| read_line(prompt, name).parse::<usize>().unwrap_or(0);
    let (tool, events, uncrawled) = (
        read_line(prompt, "Tool"),
        number("Events"),
        number("Uncrawled URLs"),
    );
    let deepen_from = number("Deepening threshold").max(1);
    let (recommendation, reason) = if tool == "further_event_research" {
        (
            "none",
            "Complete: the targeted searches filled the gaps they could".to_owned(),
        )
    } else if tool == "url_finder" && uncrawled > 0 {
        (
            "url_crawler",
            format!("Good URLs found ({uncrawled})—crawl the top one"),
        )
    } else if events >= deepen_from {
        (
            "further_event_research",
            format!("Now {events} events (≥{deepen_from}); deepen details with targeted searches"),
        )
    } else if uncrawled > 0 {
        (
            "url_crawler",
            format!("{events} events; <{deepen_from} total—crawl the next page"),
        )
    } else if events > 0 {
        (
            "further_event_research",
            "No pages left to crawl; deepen the events found".to_owned(),
        )
    } else {
        ("none", "Nothing found and nothing left to crawl".to_owned())
    };
    ThinkOutput {
        summary: format!("{tool} done; {events} events"),
        gaps: Vec::new(),
        recommendation: recommendation.into(),
        reason,
    }
}

fn gap_check(request: &ChatRequest) -> GapCheck {
    let events = events_in(text(request), "events");
    let gaps: Vec<String> = events
        .iter()
        .filter(|e| !e.has_full_details())
        .map(|e| format!("{} lacks {}", e.name, e.missing().join(", ")))
        .collect();
    GapCheck {
        complete: gaps.is_empty() && !events.is_empty(),
        gaps,
    }
}

fn detail_assessment(request: &ChatRequest) -> DetailAssessment {
    let events = events_in(text(request), "events");
    DetailAssessment {
        complete_event_ids: events
            .iter()
            .filter(|e| e.has_full_details())
            .map(|e| e.id.clone())
            .collect(),
    }
}

fn categorize(request: &ChatRequest) -> ChunkCategories {
    let categories = read_block(text(request), "chunks")
        .lines()
        .map(|line| {
            let chunk = line.split_once("] ").map_or(line, |(_, c)| c);
            if sentences(chunk).any(|s| parse_sentence(s).is_some()) {
                "life_event"
            } else if ["novel", "poem", "work", "style", "prose"]
                .iter()
                .any(|w| chunk.to_lowercase().contains(w))
            {
                "works"
            } else {
                "other"
            }
            .to_owned()
        })
        .collect();
    ChunkCategories { categories }
}

fn events_summary(request: &ChatRequest) -> String {
    read_block(text(request), "passages")
        .lines()
        .flat_map(|line| sentences(line.trim_start_matches("- ")).collect::<Vec<_>>())
        .filter_map(|s| {
            parse_sentence(s).map(|e| format!("{} - {}", e.date.display(), s.replace(';', ",")))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn structure_events(request: &ChatRequest) -> ExtractedEvents {
    let mut events: Vec<ExtractedEvent> = Vec::new();
    for entry in read_block(text(request), "events_summary").split("; ") {
        let Some((date, sentence)) = entry.split_once(" - ") else {
            continue;
        };
        let Some(mut event) = parse_sentence(sentence) else {
            continue;
        };
        let date = EventDate::parse(date);
        if !date.is_unknown() {
            event.date = date;
        }
        if !events
            .iter()
            .any(|e| e.name == event.name && e.date == event.date)
        {
            events.push(event);
        }
    }
    events.sort_by(|a, b| a.date.chronological(&b.date));
    ExtractedEvents { events }
}

fn find_gaps(request: &ChatRequest) -> GapTargets {
    let prompt = text(request);
    let person = read_line(prompt, "Person");
    let count = read_line(prompt, "Targets").parse::<usize>().unwrap_or(3);
    let targets = events_in(prompt, "events_json")
        .iter()
        .filter(|e| !e.missing().is_empty())
        .take(count)
        .map(|e| GapTarget {
            event_id: e.id.clone(),
            missing: e.missing().iter().map(|m| (*m).to_owned()).collect(),
            query: format!(
                "{person} {} {} details",
                e.name.to_lowercase(),
                if e.date.is_unknown() {
                    String::new()
                } else {
                    e.date.display()
                }
            )
            .replace("  ", " "),
        })
        .collect();
    GapTargets { targets }
}

fn event_update(request: &ChatRequest) -> EventUpdate {
    let prompt = text(request);
    let event = events_in(prompt, "event")
        .into_iter()
        .next()
        .unwrap_or_default();
    let mut update = EventUpdate {
        event_id: event.id.clone(),
        ..EventUpdate::default()
    };
    let mut site = "";
    for line in read_block(prompt, "pages").lines() {
        if let Some(rest) = line.strip_prefix("Page: ") {
            site = rest
                .rsplit_once("(site: ")
                .map_or("", |(_, s)| s.trim_end_matches(')'));
            continue;
        }
        for sentence in sentences(line) {
            let Some(found) = parse_sentence(sentence) else {
                continue;
            };
            let same_year = event.date.year.is_none() || found.date.year == event.date.year;
            if found.name == event.name
                && same_year
                && (found.location.is_some() || found.date.is_complete())
            {
                update.date = found.date;
                update.location = found.location;
                update.description = sentence.to_owned();
                update.source = site.to_owned();
                return update;
            }
        }
    }
    update
}

fn match_events(request: &ChatRequest) -> EventMatches {
    let prompt = text(request);
    obvious_matches(
        &events_in(prompt, "known_events"),
        &events_in(prompt, "new_events"),
    )
}

/// Matches new events to known ones of the same kind (name) whose years do not differ,
/// each known event at most once, with [`combine_descriptions`] as the merged description.
pub fn obvious_matches(known: &[Event], new: &[Event]) -> EventMatches {
    let mut used = std::collections::HashSet::new();
    let mut matches = Vec::new();
    for (index, event) in new.iter().enumerate() {
        let found = known.iter().find(|k| {
            !used.contains(&k.id)
                && k.name.eq_ignore_ascii_case(&event.name)
                && match (k.date.year, event.date.year) {
                    (Some(a), Some(b)) => a == b,
                    _ => true,
                }
        });
        if let Some(k) = found {
            used.insert(k.id.clone());
            matches.push(EventMatch {
                new_event: index + 1,
                existing_id: k.id.clone(),
                merged_description: combine_descriptions(&k.description, &event.description),
            });
        }
    }
    EventMatches { matches }
}

fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(". ")
        .map(|s| s.trim().trim_end_matches('.'))
        .filter(|s| !s.is_empty())
}

/// Reads one sentence as an event: it needs a year (1000-2999) and a word announcing a
/// kind of event; the date is read around the year, the place after `in`/`at` (or `to`
/// for a move).
pub(crate) fn parse_sentence(sentence: &str) -> Option<ExtractedEvent> {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let clean = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let year_at = words.iter().position(|w| {
        clean(w)
            .parse::<i32>()
            .is_ok_and(|y| (1000..=2999).contains(&y))
    })?;
    let lower: Vec<String> = words.iter().map(|w| clean(w)).collect();
    let name = EVENT_KINDS
        .iter()
        .find(|(_, triggers)| lower.iter().any(|w| triggers.contains(&w.as_str())))
        .map(|(name, _)| *name)?;
    let from = year_at.saturating_sub(2);
    let date = EventDate::parse(&words[from..=year_at].join(" "));
    let mut location = None;
    let prepositions: &[&str] = if name == "Move" {
        &["in", "at", "to"]
    } else {
        &["in", "at"]
    };
    for (i, word) in words.iter().enumerate() {
        if !prepositions.contains(word) {
            continue;
        }
        let place: Vec<&str> = words[i + 1..]
            .iter()
            .take_while(|w| {
                let c = clean(w);
                w.chars().next().is_some_and(char::is_uppercase)
                    && EventDate::parse(&c).is_unknown()
                    && c != "the"
            })
            .copied()
            .collect();
        if !place.is_empty() {
            let mut text = place.join(" ");
            text = text
                .trim_end_matches(|c: char| !c.is_alphanumeric())
                .to_owned();
            location = Some(text);
            break;
        }
    }
    Some(ExtractedEvent {
        name: name.into(),
        description: sentence.trim().to_owned(),
        date,
        location,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_corpus_sentence_reads_as_an_event_with_date_and_place() {
        let event =
            parse_sentence("On 14 March 1902, Odile Marchetti was born in Trieste").unwrap();
        assert_eq!(event.name, "Birth");
        assert_eq!(event.date, EventDate::ymd(1902, 3, 14));
        assert_eq!(event.location.as_deref(), Some("Trieste"));
        let moved = parse_sentence("In 1934 she moved to Paris").unwrap();
        assert_eq!(
            (moved.name.as_str(), moved.location.as_deref()),
            ("Move", Some("Paris"))
        );
        assert!(parse_sentence("Her prose is spare").is_none());
    }

    #[test]
    fn the_prompts_blocks_reach_the_stand_in() {
        let prompt = prompts::find_gaps(
            "A",
            &[Event {
                id: "1".into(),
                name: "Birth".into(),
                ..Event::default()
            }],
            3,
        );
        assert_eq!(events_in(&prompt, "events_json").len(), 1);
    }
}
