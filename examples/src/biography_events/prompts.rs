//! The prompts, and the structured replies they ask for. Data goes into the prompts in
//! tagged blocks (`<events>…</events>`, JSON or one item a line), which real models read
//! well and the offline stand-in reads exactly.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::event::{Event, EventDate};
use super::history::HistoryEntry;

/// `<tag>\nbody\n</tag>`.
pub fn block(tag: &str, body: &str) -> String {
    format!("<{tag}>\n{body}\n</{tag}>")
}

/// The body of the first `<tag>` block of `prompt` (empty when there is none).
pub(crate) fn read_block<'a>(prompt: &'a str, tag: &str) -> &'a str {
    let open = format!("<{tag}>\n");
    let close = format!("\n</{tag}>");
    prompt
        .split_once(&open)
        .and_then(|(_, rest)| rest.split_once(&close))
        .map_or("", |(body, _)| body)
}

/// The value of a `Name: value` line of `prompt`.
pub fn read_line<'a>(prompt: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    prompt
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or("")
        .trim()
}

/// The events as the prompts show them: without the passages and URLs the graph keeps for
/// the outputs (the model matches and completes events by their fields, not their quotes).
fn events_json(events: &[Event]) -> String {
    let shown: Vec<Event> = events
        .iter()
        .map(|e| Event {
            source_url: String::new(),
            passage: String::new(),
            also_read_from: Vec::new(),
            conflicts: e
                .conflicts
                .iter()
                .map(|c| super::event::Conflict {
                    passages: Vec::new(),
                    ..c.clone()
                })
                .collect(),
            ..e.clone()
        })
        .collect();
    serde_json::to_string_pretty(&shown).unwrap_or_else(|_| "[]".into())
}

// --- think_tool ----------------------------------------------------------------------------

/// think_tool's instructions (its system prompt), in the seed's words.
pub(crate) const THINK_INSTRUCTIONS: &str = "Review the tool's output and the recent messages: New info? Gaps? Recommend the next tool, or stop. \
Summarize new info from the output. Check the events and messages for gaps (e.g., missing dates). Recommend: next tool (or none), and the reason.";

/// The structured-output format name of think_tool's reply (graphkit-tools' `ReflectTool`).
pub const THINK_FORMAT: &str = "reflection";

/// The shape of think_tool's reply, as graphkit-tools' `ReflectTool` asks for it (format
/// [`THINK_FORMAT`]); the offline stand-in answers with it. (The seed: `{recommendation: 'url_crawler', reason: '...'}`, plus
/// the summary and gaps its prompt asks for).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ThinkOutput {
    /// The new information in the tool's output, in a sentence.
    pub summary: String,
    /// Gaps still open (missing dates, places, periods of the life).
    pub gaps: Vec<String>,
    /// The next tool: `url_crawler`, `further_event_research`, or `none` to stop.
    pub recommendation: String,
    /// Why.
    pub reason: String,
}

/// The think_tool prompt (the seed's: "Summarize new info from \[output\]. Check
/// events/messages for gaps (e.g., missing dates). Recommend: next tool (or none), reason.").
pub fn think(
    person: &str,
    tool: &HistoryEntry,
    recent: &[HistoryEntry],
    events: &[Event],
    uncrawled: usize,
    tool_calls: (u32, u32),
    deepen_from: usize,
) -> String {
    let recent: Vec<String> = recent
        .iter()
        .map(|e| {
            format!(
                "- {}({}): {}{}",
                e.tool,
                e.input,
                e.summary,
                e.think
                    .as_ref()
                    .map(|t| format!(" — think: {t}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    let full = events.iter().filter(|e| e.has_full_details()).count();
    format!(
        "You reflect after each tool call of a biography research supervisor that collects the dated life events of {person}.\n\
         Summarize new info from the tool's output. Check the events and the recent messages for gaps (e.g., missing dates or places). \
         Recommend the next tool, or none, and give the reason.\n\
         Tools: url_crawler (extracts events from the next biography page; only useful while uncrawled URLs remain), \
         further_event_research (targeted web searches that fill missing dates and places of known events; the usual choice from the deepening threshold on), none (stop: the events are complete enough).\n\n\
         Person: {person}\nTool: {}\nTool input: {}\nEvents: {}\nEvents with full details: {full}\nUncrawled URLs: {uncrawled}\nTool calls: {} of {}\nDeepening threshold: {deepen_from}\n\n{}\n\n{}\n\n{}\n\n\
         Answer with summary (one sentence), gaps (a list), recommendation (exactly one of url_crawler, further_event_research, none) and reason.",
        tool.tool,
        tool.input,
        events.len(),
        tool_calls.0,
        tool_calls.1,
        block("tool_output", &tool.summary),
        block("recent_messages", &recent.join("\n")),
        block(
            "events",
            &events
                .iter()
                .map(Event::line)
                .collect::<Vec<_>>()
                .join("\n")
        ),
    )
}

// --- incremental gap check and detail assessment -------------------------------------------

/// The incremental run's first check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GapCheck {
    /// `true` when nothing important is missing and research can stop at once.
    pub complete: bool,
    /// What is missing.
    pub gaps: Vec<String>,
}

/// The incremental run's gap check (the seed: "Prompt to check gaps in `initial_events` +
/// messages; skip if complete").
pub(crate) fn gap_check(person: &str, events: &[Event], history: &[HistoryEntry]) -> String {
    format!(
        "These are the known life events of {person}, given for an incremental research run, and the history of earlier research.\n\
         Check them for gaps: events missing a year, month, day or place, and major life events that are missing altogether (birth, education, first work, marriage, moves, awards, death).\n\
         Answer complete = true only when nothing important is missing; list the gaps otherwise.\n\n{}\n\n{}",
        block("events", &events_json(events)),
        block(
            "messages",
            &serde_json::to_string_pretty(history).unwrap_or_default()
        ),
    )
}

/// Which events have full details, according to the model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct DetailAssessment {
    /// The ids of the events whose year, month, day and place are all known and plausible.
    pub(crate) complete_event_ids: Vec<String>,
}

/// The "full details" judgement.
pub(crate) fn detail_assessment(person: &str, events: &[Event]) -> String {
    format!(
        "For each life event of {person} below, decide whether it has full details: an exact date (year, month and day) and a specific place, both plausible.\n\
         Answer with the ids of the events that do.\n\n{}",
        block("events", &events_json(events)),
    )
}

// --- url_crawler ---------------------------------------------------------------------------

/// A category per chunk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ChunkCategories {
    /// One category per chunk, in order: `life_event`, `works` or `other`.
    pub(crate) categories: Vec<String>,
}

/// The chunk categories allowed.
pub(crate) const CATEGORIES: [&str; 3] = ["life_event", "works", "other"];

/// Categorize the chunks of a page.
pub(crate) fn categorize(person: &str, chunks: &[String]) -> String {
    let lines: Vec<String> = chunks
        .iter()
        .enumerate()
        .map(|(i, c)| format!("[{}] {c}", i + 1))
        .collect();
    format!(
        "Below are the chunks of a biography page about {person}. Give each chunk one category: \
         life_event (it tells dated events of the person's life: birth, studies, moves, marriage, publications, awards, death), \
         works (it discusses the works without life events) or other.\n\
         Answer with categories: one per chunk, in order ({} chunks).\n\n{}",
        chunks.len(),
        block("chunks", &lines.join("\n")),
    )
}

/// Merge the life-event chunks into one events summary.
pub(crate) fn events_summary(person: &str, chunks: &[String]) -> String {
    format!(
        "From these passages about {person}, write every dated life event as `DATE - what happened`, in the order they happened, \
         separated by `; ` (e.g. `Dec 26, 1891 - Born in Yorkville; 1917 - Moved to Paris`). Keep the places. Write nothing else.\n\n{}",
        block(
            "passages",
            &chunks
                .iter()
                .map(|c| format!("- {c}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    )
}

/// One event as the crawler's last prompt writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ExtractedEvent {
    /// A short name (`Birth`, `Marriage`, `Move to Paris`).
    pub name: String,
    /// What happened, in one sentence.
    pub description: String,
    /// The date; unknown parts null.
    pub date: EventDate,
    /// The place, or null.
    pub location: Option<String>,
}

/// The crawler's structured events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ExtractedEvents {
    /// In chronological order.
    pub events: Vec<ExtractedEvent>,
}

/// Clean and order the summary into structured events.
pub fn structure_events(person: &str, summary: &str) -> String {
    format!(
        "Clean up this summary of life events of {person}: drop duplicates, order them by date, and write each as an event with \
         name (short, e.g. Birth, Marriage, Move to Paris), description (one sentence), date (year, month 1-12, day; null when unknown) and location (null when unknown).\n\n{}",
        block("events_summary", summary),
    )
}

// --- further_event_research ----------------------------------------------------------------

/// The events chosen for targeted research.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GapTargets {
    /// The chosen events, most important gap first.
    pub(crate) targets: Vec<super::state::GapTarget>,
}

/// Scan the events for gaps and pick the top `count`.
pub(crate) fn find_gaps(person: &str, events: &[Event], count: usize) -> String {
    let lines: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{} | missing: {}",
                e.line(),
                if e.missing().is_empty() {
                    "nothing".into()
                } else {
                    e.missing().join(", ")
                }
            )
        })
        .collect();
    format!(
        "Scan these life events of {person} for gaps (a missing year, month, day or place) and pick the {count} most important ones to research \
         (fewer if fewer have gaps). For each, give event_id, missing (the missing parts) and a web search query that would find them \
         (e.g. \"{person} marriage June 1924 details\").\n\nPerson: {person}\nTargets: {count}\n\n{}\n\n{}",
        block("events", &lines.join("\n")),
        block("events_json", &events_json(events)),
    )
}

/// What a targeted search says about one event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct EventUpdate {
    /// The event's id.
    pub(crate) event_id: String,
    /// The date as the pages give it (unknown parts null).
    pub date: EventDate,
    /// The place the pages give, or null.
    pub location: Option<String>,
    /// The event described with what the pages add (empty when they add nothing).
    pub description: String,
    /// The site the details come from.
    pub source: String,
}

/// Read the search results for one event.
pub(crate) fn event_update(
    person: &str,
    event: &Event,
    pages: &[(String, String, String)],
) -> String {
    let pages: Vec<String> = pages
        .iter()
        .map(|(url, site, text)| format!("Page: {url} (site: {site})\n{text}"))
        .collect();
    format!(
        "Below are web pages found for one life event of {person}. Using only what the pages say about this event, give its date \
         (year, month 1-12, day; null when the pages do not say), its place (null when they do not say), a description with the new details, \
         and the site they come from. Do not guess.\n\nEvent id: {}\n\n{}\n\n{}",
        event.id,
        block("event", &events_json(std::slice::from_ref(event))),
        block("pages", &pages.join("\n\n")),
    )
}

// --- merge ---------------------------------------------------------------------------------

/// Match new events to the known ones (the seed: "Match similar events semantically").
pub(crate) fn match_events(person: &str, known: &[Event], new: &[Event]) -> String {
    format!(
        "Merge new life events of {person} into the known ones. A new event matches a known one when both describe the same happening, \
         even in other words (\"Born in NYC 1891\" and \"Born in Yorkville to immigrants\" are the same birth). \
         For each new event that matches, give new_event (its number N), existing_id (the known event's id) and merged_description \
         (one description with the details of both, e.g. \"Born in NYC/Yorkville 1891 to immigrants\"). Leave unmatched new events out. New events are numbered from 1 in the order given.\n\n{}\n\n{}",
        block("known_events", &events_json(known)),
        block("new_events", &events_json(new)),
    )
}
