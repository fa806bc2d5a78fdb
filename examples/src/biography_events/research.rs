//! The `further_event_research` graph (seed §2), called by the supervisor as a tool:
//! scan the events for gaps and pick the top 3-5 → run a targeted web search for each →
//! read the updates from the pages found (the supervisor merges them by its rules).

use std::sync::Arc;

use graphkit::RunContext;
use graphkit::error::BoxError;
use graphkit::{CompiledGraph, END, NodeContext, START, StateGraph};
use graphkit_llm::{ChatModel, Message};
use serde_json::json;

use super::Deps;
use super::crawler::model;
use super::event::Event;
use super::prompts::{self, EventUpdate, GapTargets};
use super::state::{GapFinding, GapTarget, ResearchState, ResearchStateUpdate};

/// Node names.
pub(crate) const FIND_GAPS: &str = "find_gaps";
/// Node names.
pub(crate) const SEARCH_GAPS: &str = "search_gaps";
/// Node names.
pub(crate) const EXTRACT_UPDATES: &str = "extract_updates";

/// Search hits read per target, and the page text kept of each.
const PAGES_PER_TARGET: usize = 2;
const PAGE_CHARS: usize = 4000;

/// Builds the further_event_research graph (run as a tool, see [`super::tools`]).
///
/// # Errors
/// [`graphkit::Error`] if the graph does not validate (a bug).
pub fn build(deps: &Deps) -> Result<CompiledGraph<ResearchState>, graphkit::BuildError> {
    let mut graph = StateGraph::<ResearchState, Deps>::new();
    graph
        .add_node(FIND_GAPS, find_gaps)
        .add_node(SEARCH_GAPS, search_gaps)
        .add_node(EXTRACT_UPDATES, extract_updates)
        .add_edge(START, FIND_GAPS)
        .add_edge(FIND_GAPS, SEARCH_GAPS)
        .add_edge(SEARCH_GAPS, EXTRACT_UPDATES)
        .add_edge(EXTRACT_UPDATES, END);
    // The nodes read the models and the crawler as context.
    Ok(graph.compile()?.with_context(deps.clone()))
}

async fn find_gaps(
    state: Arc<ResearchState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<ResearchStateUpdate, BoxError> {
    let with_gaps: Vec<&Event> = state
        .events
        .iter()
        .filter(|e| !e.missing().is_empty())
        .collect();
    if with_gaps.is_empty() {
        return Ok(ResearchStateUpdate::new().targets(Vec::new()));
    }
    let count = state.gap_targets.max(1);
    let known: Vec<String> = state.events.iter().map(|e| e.id.clone()).collect();
    let reply = model(&deps, 1024)
        .with_structured_output::<GapTargets>()
        .retries(2)
        .validate(move |t| {
            if t.targets.is_empty() || t.targets.len() > count {
                return Err(format!(
                    "pick between 1 and {count} targets (got {})",
                    t.targets.len()
                ));
            }
            for (i, target) in t.targets.iter().enumerate() {
                if !known.contains(&target.event_id) {
                    return Err(format!(
                        "targets[{i}].event_id {:?} is not the id of an event",
                        target.event_id
                    ));
                }
                if target.query.trim().is_empty() {
                    return Err(format!("targets[{i}].query is empty"));
                }
            }
            Ok(())
        })
        .invoke(&[Message::user(prompts::find_gaps(
            &state.person,
            &state.events,
            count,
        ))])
        .await;
    let mut targets = match reply {
        Ok(t) => t.targets,
        Err(err) => {
            // The deterministic reading of "missing date or location": the first events
            // that lack something, with a query built from the event.
            ctx.writer().custom(json!({"event": "warning", "message": format!("choosing gaps failed ({err}); researching the first events with gaps")}));
            with_gaps
                .iter()
                .take(count)
                .map(|e| GapTarget {
                    event_id: e.id.clone(),
                    missing: e.missing().iter().map(|m| (*m).to_owned()).collect(),
                    query: format!(
                        "{} {} {} details",
                        state.person,
                        e.name.to_lowercase(),
                        e.date.display()
                    ),
                })
                .collect()
        }
    };
    let mut seen = std::collections::HashSet::new();
    targets.retain(|t| seen.insert(t.event_id.clone()));
    Ok(ResearchStateUpdate::new().targets(targets).model_calls(1))
}

async fn search_gaps(
    state: Arc<ResearchState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<ResearchStateUpdate, BoxError> {
    let mut results = Vec::new();
    for target in &state.targets {
        ctx.writer()
            .custom(json!({"event": "search", "query": target.query}));
        let hits = match deps.search.search(&target.query, PAGES_PER_TARGET).await {
            Ok(hits) => hits,
            Err(err) => {
                ctx.writer().custom(json!({"event": "warning", "message": format!("search {:?} failed: {err}", target.query)}));
                Vec::new()
            }
        };
        let urls: Vec<String> = hits.iter().map(|h| h.url.clone()).collect();
        let pages = deps.search.extract(&urls).await.unwrap_or_default();
        // A page that does not name the person in full is about someone else.
        let pages = pages
            .into_iter()
            .filter(|p| super::url_finder::names_person(&p.content, &state.person))
            .map(|p| {
                let site = deps.sites.source_name(&p.url);
                (p.url, site, crate::shared::truncate(&p.content, PAGE_CHARS))
            })
            .collect();
        results.push(GapFinding {
            target: target.clone(),
            pages,
        });
    }
    Ok(ResearchStateUpdate::new().results(results))
}

async fn extract_updates(
    state: Arc<ResearchState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<ResearchStateUpdate, BoxError> {
    let mut updates = Vec::new();
    let mut calls = 0;
    for finding in &state.results {
        let Some(event) = state
            .events
            .iter()
            .find(|e| e.id == finding.target.event_id)
        else {
            continue;
        };
        if finding.pages.is_empty() {
            continue;
        }
        let id = event.id.clone();
        calls += 1;
        let reply = model(&deps, 512)
            .with_structured_output::<EventUpdate>()
            .retries(2)
            .validate(move |u| {
                if u.event_id != id {
                    return Err(format!("event_id must be {id:?}"));
                }
                u.date.validate().map_err(|m| format!("date: {m}"))
            })
            .invoke(&[Message::user(prompts::event_update(
                &state.person,
                event,
                &finding.pages,
            ))])
            .await;
        match reply {
            Ok(update) if !update.date.is_unknown() || update.location.is_some() => {
                // The page the update was read from: the one of its site, else the first.
                let page = finding
                    .pages
                    .iter()
                    .find(|(_, site, _)| !update.source.is_empty() && *site == update.source)
                    .unwrap_or(&finding.pages[0]);
                let updated = Event {
                    id: event.id.clone(),
                    name: event.name.clone(),
                    description: update.description,
                    source: if update.source.is_empty() { page.1.clone() } else { update.source },
                    date: update.date,
                    location: update.location.filter(|l| !l.trim().is_empty()),
                    ..Event::default()
                };
                updates.push(updated.read_from(&page.0, &page.2));
            }
            Ok(_) => {}
            Err(err) => ctx.writer().custom(json!({"event": "warning", "message": format!("reading the pages for {:?} failed: {err}", event.name)})),
        }
    }
    Ok(ResearchStateUpdate::new()
        .updates(updates)
        .model_calls(calls))
}
