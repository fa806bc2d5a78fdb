//! The supervisor's nodes (the seed's "Key Processes"): the incremental gap check,
//! url_finder, the merge after each data tool, think_tool after each tool, and the
//! decision (termination rules, then the next tool).

use std::sync::Arc;

use graphkit::NodeContext;
use graphkit::RunContext;
use graphkit::error::BoxError;
use graphkit_llm::{ChatModel, Message};
use serde_json::json;

use super::Deps;
use super::crawler::model;
use super::event::{Event, full_detail_ratio, sort_by_date};
use super::history::{HistoryEntry, HistoryUpdate};
use super::merge::{EventMatches, check_matches, merge_events};
use super::offline::obvious_matches;
use super::prompts::{self, DetailAssessment, GapCheck};
use super::state::{BiographyState, BiographyStateUpdate as Update};
use super::tools::{FURTHER_EVENT_RESEARCH, URL_CRAWLER, call_message};
use super::url_finder::find_urls;
use graphkit_tools::prebuilt::reflect::ReflectTool;

/// Node and tool names.
pub(crate) const CHECK_INITIAL_GAPS: &str = "check_initial_gaps";
/// Node and tool names.
pub(crate) const URL_FINDER: &str = "url_finder";
/// Node and tool names: the node that runs the supervisor's tool calls.
pub(crate) const TOOLS: &str = "tools";
/// Node and tool names.
pub(crate) const MERGE_EVENTS: &str = "merge_events";
/// Node and tool names.
pub(crate) const THINK_TOOL: &str = "think_tool";
/// Node and tool names.
pub(crate) const SUPERVISOR: &str = "supervisor";
/// Node and tool names.
pub(crate) const FINISH: &str = "finish";

/// `check_initial_gaps`: for an incremental run, asks whether the initial events have
/// gaps; none → the run stops with zero tool calls. Without initial events it does nothing.
pub(crate) async fn check_initial_gaps(
    state: Arc<BiographyState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let Some(initial) = state.initial_events.as_ref().filter(|e| !e.is_empty()) else {
        return Ok(Update::new());
    };
    let check = model(&deps, 512)
        .with_structured_output::<GapCheck>()
        .retries(2)
        .invoke(&[Message::user(prompts::gap_check(
            &state.person_to_research,
            initial,
            &state.messages,
        ))])
        .await;
    // A model that cannot answer does not get to stop the run: research goes on.
    let check = check.unwrap_or_else(|err| GapCheck {
        complete: false,
        gaps: vec![format!("gap check failed: {err}")],
    });
    // Backed by the deterministic check: "complete" with events lacking details is not believed.
    let lacking = initial.iter().filter(|e| !e.has_full_details()).count();
    let complete = check.complete && lacking == 0;
    let summary = if complete {
        format!("{} initial events, no gaps", initial.len())
    } else {
        format!(
            "{} initial events; gaps: {}",
            initial.len(),
            if check.gaps.is_empty() {
                format!("{lacking} events lack details")
            } else {
                check.gaps.join("; ")
            }
        )
    };
    ctx.writer()
        .custom(json!({"event": "gap_check", "complete": complete, "summary": summary}));
    let entry = HistoryEntry {
        tool: "check_gaps".into(),
        input: "initial_events".into(),
        summary,
        ..HistoryEntry::default()
    };
    let mut update = Update::new()
        .messages(HistoryUpdate::push(entry, state.limits.history_cap))
        .model_calls(1);
    if complete {
        update = update.stop_reason(Some(
            "the initial events have no gaps: nothing to research".into(),
        ));
    }
    Ok(update)
}

/// Where the run goes after the gap check.
pub(crate) fn after_gap_check(state: &BiographyState) -> &'static str {
    if state.stop_reason.is_some() {
        FINISH
    } else {
        URL_FINDER
    }
}

/// `url_finder`: the authoritative biography pages, best site first.
pub async fn url_finder(
    state: Arc<BiographyState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let limits = &state.limits;
    let person = &state.person_to_research;
    let urls = find_urls(
        deps.search.as_ref(),
        &deps.sites,
        person,
        limits.url_finder_results,
        limits.urls_kept,
    )
    .await
    .map_err(|e| format!("url_finder: {e}"))?;
    let entry = HistoryEntry {
        tool: URL_FINDER.into(),
        input: format!("{person} biography"),
        summary: format!("{} URLs: {}", urls.len(), urls.join(", ")),
        ..HistoryEntry::default()
    };
    report_call(&ctx, state.tool_calls + 1, &entry);
    Ok(Update::new()
        .urls(urls)
        .tool_calls(1)
        .events_changed_history(vec![false])
        .last_tool(entry))
}

fn report_call(ctx: &NodeContext, call: u32, entry: &HistoryEntry) {
    ctx.writer().custom(json!({"event": "tool_call", "call": call, "tool": entry.tool, "input": entry.input, "summary": entry.summary}));
}

/// The next URL to crawl, in priority order.
pub(crate) fn next_url(state: &BiographyState) -> Option<&String> {
    state.urls.iter().find(|u| !state.crawled.contains(u))
}

/// `merge_events`: merges the events the last data tool returned. Updates that carry a
/// known id (further_event_research) merge into that event; the others are matched by a
/// prompt (paraphrases), merged, or added.
pub(crate) async fn merge_events_node(
    state: Arc<BiographyState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let known = &state.events;
    let (by_id, others): (Vec<Event>, Vec<Event>) = state
        .pending_events
        .iter()
        .cloned()
        .partition(|e| !e.id.is_empty() && known.iter().any(|k| k.id == e.id));
    let mut events = known.clone();
    let before = events.clone();
    for update in &by_id {
        if let Some(slot) = events.iter_mut().find(|e| e.id == update.id) {
            let description =
                (!update.description.is_empty()).then_some(update.description.as_str());
            *slot = super::merge::merge_pair(slot, update, description);
        }
    }
    let mut model_calls = 0;
    let mut matched = 0;
    if !others.is_empty() {
        let matches = if events.is_empty() {
            EventMatches::default()
        } else {
            model_calls = 1;
            let (snapshot, count) = (events.clone(), others.len());
            let reply = model(&deps, 2048)
                .with_structured_output::<EventMatches>()
                .retries(2)
                .validate(move |m| check_matches(m, &snapshot, count))
                .invoke(&[Message::user(prompts::match_events(
                    &state.person_to_research,
                    &events,
                    &others,
                ))])
                .await;
            reply.unwrap_or_else(|err| {
                ctx.writer().custom(json!({"event": "warning", "message": format!("matching events failed ({err}); matching by name and year instead")}));
                obvious_matches(&events, &others)
            })
        };
        matched = matches.matches.len();
        events = merge_events(&events, &others, &matches).0;
    }
    // Whatever the matching said: a person is born once and dies once, so two births (or
    // deaths) from two sources are one event whose dates disagree, flagged as a conflict.
    events = super::merge::merge_once_in_a_life(events);
    // And a work is published once: two dates for one title are a conflict, not two events.
    events = super::merge::merge_same_work(events, &state.person_to_research);
    // A page that only confirms what is known (its name added to `also_read_from`) is no
    // change: the stop rule counts calls that add or change facts.
    let changed = !super::event::same_facts(&events, &before);
    let added = events.len() - before.len();
    let conflicts: usize = events.iter().map(|e| e.conflicts.len()).sum::<usize>()
        - before.iter().map(|e| e.conflicts.len()).sum::<usize>();
    let mut entry = state.last_tool.clone();
    entry.summary = format!(
        "{}; added {added} events, merged {} into known ones{}; {} events in all",
        entry.summary,
        matched + by_id.len(),
        if conflicts > 0 {
            format!(", {conflicts} new conflicts")
        } else {
            String::new()
        },
        events.len()
    );
    report_call(&ctx, state.tool_calls, &entry);
    Ok(Update::new()
        .events(events)
        .pending_events(Vec::new())
        .events_changed_history(vec![changed])
        .last_tool(entry)
        .model_calls(model_calls))
}

/// `think_tool`: reflects on the last tool's output and the recent history, and
/// recommends the next tool or none; the reflection joins the tool's history entry.
pub async fn think_tool(
    state: Arc<BiographyState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let recent_from = state.messages.len().saturating_sub(3);
    let uncrawled = state
        .urls
        .iter()
        .filter(|u| !state.crawled.contains(u))
        .count();
    let prompt = prompts::think(
        &state.person_to_research,
        &state.last_tool,
        &state.messages[recent_from..],
        &state.events,
        uncrawled,
        (state.tool_calls, state.limits.max_tool_calls),
        state.limits.min_events_for_deepening,
    );
    // graphkit-tools' ReflectTool: structured {summary, gaps, recommendation, reason},
    // the recommendation checked against the allowed set (asked again once).
    let reflect = ReflectTool::new(model(&deps, 512), [URL_CRAWLER, FURTHER_EVENT_RESEARCH])
        .with_name(THINK_TOOL)
        .with_instructions(prompts::THINK_INSTRUCTIONS);
    let (think, recommendation) = match reflect.reflect(&prompt).await {
        Ok(r) if r.rejected_recommendation.is_some() => {
            ctx.writer().custom(json!({"event": "warning", "message": format!(
                "think_tool recommended {:?}, which is not a tool; the supervisor decides by its rules",
                r.rejected_recommendation.unwrap_or_default()
            )}));
            (r.reason, None)
        }
        Ok(r) if r.gaps.is_empty() => (r.reason, Some(r.recommendation)),
        Ok(r) => (
            format!("{} (gaps: {})", r.reason, r.gaps.join("; ")),
            Some(r.recommendation),
        ),
        Err(err) => {
            ctx.writer().custom(json!({"event": "warning", "message": format!("think_tool failed ({err}); the supervisor decides by its rules")}));
            (format!("no reflection: {err}"), None)
        }
    };
    ctx.writer()
        .custom(json!({"event": "think", "recommendation": recommendation, "think": think}));
    let mut entry = state.last_tool.clone();
    entry.think = Some(think);
    entry.recommendation = recommendation;
    Ok(Update::new()
        .messages(HistoryUpdate::push(entry, state.limits.history_cap))
        .model_calls(1))
}

/// `supervisor`: applies the termination rules in order (tool calls, think's stop, no
/// change, full details), then picks the next tool: think's recommendation when it can
/// run, else fewer than the deepening threshold → url_crawler on the next URL, otherwise
/// further_event_research. Nothing to crawl with too few events stops the run. The choice
/// is issued as a tool call (an assistant message) that the `tools` node runs.
pub async fn supervisor(
    state: Arc<BiographyState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let (stop, next, model_calls) = decide(&state, &deps).await;
    if let Some(reason) = &stop {
        ctx.writer()
            .custom(json!({"event": "stop", "reason": reason}));
    }
    let mut update = Update::new().stop_reason(stop).model_calls(model_calls);
    if let Some(tool) = next {
        let url = next_url(&state).map(String::as_str);
        update = update.tool_messages(vec![call_message(&state, &tool, url)]);
    }
    Ok(update)
}

/// How many of the best-ranked pages are read before the run may stop for having enough
/// (Wikipedia and Britannica offline: a conflict between them is always seen).
const PAGES_READ_BEFORE_STOPPING: usize = 2;

async fn decide(state: &BiographyState, deps: &Deps) -> (Option<String>, Option<String>, u64) {
    let limits = &state.limits;
    let last = state.messages.last();
    if state.tool_calls >= limits.max_tool_calls {
        return (
            Some(format!(
                "reached the maximum of {} tool calls",
                limits.max_tool_calls
            )),
            None,
            0,
        );
    }
    // The two best-ranked pages url_finder found are read before the run decides it has
    // enough: the second may contradict (or correct) what the first said.
    let can_crawl = next_url(state).is_some();
    let must_crawl = state
        .urls
        .iter()
        .take(PAGES_READ_BEFORE_STOPPING)
        .any(|u| !state.crawled.contains(u));
    if let Some(entry) = last.filter(|e| e.recommendation.as_deref() == Some("none"))
        && !must_crawl
    {
        let why = entry.think.clone().unwrap_or_default();
        return (
            Some(format!("think_tool recommended stopping: {why}")),
            None,
            0,
        );
    }
    let window = limits.no_change_window;
    let history = &state.events_changed_history;
    if history.len() >= window && history[history.len() - window..].iter().all(|c| !c) {
        return (
            Some(format!(
                "no change to the events in the last {window} tool calls"
            )),
            None,
            0,
        );
    }
    let mut model_calls = 0;
    if !must_crawl && full_detail_ratio(&state.events) > limits.full_detail_ratio {
        // The deterministic check passed; the prompt confirms (it can only lower the share).
        model_calls = 1;
        let ratio = confirmed_ratio(state, deps).await;
        if ratio > limits.full_detail_ratio {
            return (
                Some(format!(
                    "{:.0}% of the events have full details (more than {:.0}%)",
                    ratio * 100.0,
                    limits.full_detail_ratio * 100.0
                )),
                None,
                model_calls,
            );
        }
    }
    let recommended = last.and_then(|e| e.recommendation.as_deref());
    let next = match recommended {
        Some(URL_CRAWLER) if can_crawl => URL_CRAWLER,
        Some("none") if must_crawl => URL_CRAWLER,
        Some(FURTHER_EVENT_RESEARCH) if !state.events.is_empty() => FURTHER_EVENT_RESEARCH,
        _ if state.events.len() >= limits.min_events_for_deepening => FURTHER_EVENT_RESEARCH,
        _ if can_crawl => URL_CRAWLER,
        _ => {
            return (
                Some(format!(
                    "no URLs left to crawl and only {} events (fewer than {})",
                    state.events.len(),
                    limits.min_events_for_deepening
                )),
                None,
                model_calls,
            );
        }
    };
    (None, Some(next.to_owned()), model_calls)
}

async fn confirmed_ratio(state: &BiographyState, deps: &Deps) -> f64 {
    let reply = model(deps, 512)
        .with_structured_output::<DetailAssessment>()
        .retries(1)
        .invoke(&[Message::user(prompts::detail_assessment(
            &state.person_to_research,
            &state.events,
        ))])
        .await;
    match reply {
        Ok(assessment) => {
            let full = state
                .events
                .iter()
                .filter(|e| e.has_full_details() && assessment.complete_event_ids.contains(&e.id))
                .count();
            full as f64 / state.events.len().max(1) as f64
        }
        // Without the model's judgement the deterministic share stands.
        Err(_) => full_detail_ratio(&state.events),
    }
}

/// Where the run goes after the supervisor's decision: `tools` to run its tool call, or
/// `finish` when it stopped.
pub fn route(state: &BiographyState) -> &'static str {
    if state.stop_reason.is_some() {
        FINISH
    } else {
        TOOLS
    }
}

/// `finish`: the events sorted by date (unknown dates last).
pub async fn finish(state: Arc<BiographyState>) -> Update {
    let mut events = state.events.clone();
    sort_by_date(&mut events);
    Update::new().events(events)
}
