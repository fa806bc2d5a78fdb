//! The `url_crawler` graph (seed §1), called by the supervisor as a tool: crawl a page
//! and chunk it → categorize the chunks → merge the life events into one
//! `events_summary` → clean and order it into structured events.

use std::sync::Arc;

use graphkit::RunContext;
use graphkit::error::BoxError;
use graphkit::{CompiledGraph, END, NodeContext, START, StateGraph};
use graphkit_llm::{BoundModel, CallOptions, ChatModel, Message};
use serde_json::json;

use super::Deps;
use super::event::Event;
use super::prompts::{self, CATEGORIES, ChunkCategories, ExtractedEvents};
use super::state::{CategorizedChunk, CrawlState, CrawlStateUpdate};

/// Node names.
pub(crate) const CRAWL_AND_CHUNK: &str = "crawl_and_chunk";
/// Node names.
pub(crate) const CATEGORIZE_CHUNKS: &str = "categorize_chunks";
/// Node names.
pub(crate) const SUMMARIZE_EVENTS: &str = "summarize_events";
/// Node names.
pub(crate) const STRUCTURE_EVENTS: &str = "structure_events";

/// Longest chunk, in bytes (longer paragraphs are split at sentence ends).
const MAX_CHUNK: usize = 1200;
/// Most chunks looked at per page.
const MAX_CHUNKS: usize = 40;

/// Builds the url_crawler graph (run as a tool, see [`super::tools`]).
///
/// # Errors
/// [`graphkit::Error`] if the graph does not validate (a bug).
pub fn build(deps: &Deps) -> Result<CompiledGraph<CrawlState>, graphkit::BuildError> {
    let mut graph = StateGraph::<CrawlState, Deps>::new();
    graph
        .add_node(CRAWL_AND_CHUNK, crawl_and_chunk)
        .add_node(CATEGORIZE_CHUNKS, categorize_chunks)
        .add_node(SUMMARIZE_EVENTS, summarize_events)
        .add_node(STRUCTURE_EVENTS, structure_events)
        .add_edge(START, CRAWL_AND_CHUNK)
        .add_edge(CRAWL_AND_CHUNK, CATEGORIZE_CHUNKS)
        .add_edge(CATEGORIZE_CHUNKS, SUMMARIZE_EVENTS)
        .add_edge(SUMMARIZE_EVENTS, STRUCTURE_EVENTS)
        .add_edge(STRUCTURE_EVENTS, END);
    // The nodes read the models and the crawler as context.
    Ok(graph.compile()?.with_context(deps.clone()))
}

/// The workflow's model at temperature 0 with an output budget.
pub fn model(deps: &Deps, max_tokens: u32) -> BoundModel<Arc<dyn ChatModel>> {
    Arc::clone(&deps.model).with_options(CallOptions::new().temperature(0.0).max_tokens(max_tokens))
}

async fn crawl_and_chunk(
    state: Arc<CrawlState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<CrawlStateUpdate, BoxError> {
    let pages = deps
        .search
        .extract(std::slice::from_ref(&state.url))
        .await?;
    let Some(page) = pages.into_iter().next() else {
        ctx.writer().custom(
            json!({"event": "warning", "message": format!("could not crawl {}", state.url)}),
        );
        return Ok(CrawlStateUpdate::new().chunks(Vec::new()));
    };
    if !super::url_finder::names_person(&page.content, &state.person) {
        ctx.writer()
            .custom(json!({"event": "warning", "message": format!(
            "{} does not name {} in full; its events are not used", state.url, state.person)}));
        return Ok(CrawlStateUpdate::new().chunks(Vec::new()));
    }
    Ok(CrawlStateUpdate::new().chunks(chunk(&page.content)))
}

/// Splits a page into paragraph chunks (headings and blank lines dropped, whitespace
/// collapsed, long paragraphs split at sentence ends).
pub fn chunk(content: &str) -> Vec<String> {
    let mut chunks = Vec::new();
    for paragraph in content.split("\n\n") {
        let text: String = paragraph
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() {
            continue;
        }
        let mut current = String::new();
        for sentence in text.split_inclusive(". ") {
            if current.len() + sentence.len() > MAX_CHUNK && !current.is_empty() {
                chunks.push(std::mem::take(&mut current).trim().to_owned());
            }
            current.push_str(sentence);
        }
        if !current.trim().is_empty() {
            chunks.push(current.trim().to_owned());
        }
    }
    chunks.truncate(MAX_CHUNKS);
    chunks
}

async fn categorize_chunks(
    state: Arc<CrawlState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<CrawlStateUpdate, BoxError> {
    if state.chunks.is_empty() {
        return Ok(CrawlStateUpdate::new().categorized(Vec::new()));
    }
    let count = state.chunks.len();
    let reply = model(&deps, 64 + 12 * count as u32)
        .with_structured_output::<ChunkCategories>()
        .retries(2)
        .validate(move |c| {
            if c.categories.len() != count {
                return Err(format!(
                    "give exactly {count} categories, one per chunk (got {})",
                    c.categories.len()
                ));
            }
            match c
                .categories
                .iter()
                .find(|x| !CATEGORIES.contains(&x.as_str()))
            {
                Some(bad) => Err(format!(
                    "category {bad:?} is not one of life_event, works, other"
                )),
                None => Ok(()),
            }
        })
        .invoke(&[Message::user(prompts::categorize(
            &state.person,
            &state.chunks,
        ))])
        .await;
    let categories = match reply {
        Ok(c) => c.categories,
        Err(err) => {
            // A weak model that cannot categorize: keep every chunk, the summary prompt
            // still reads only life events.
            ctx.writer().custom(json!({"event": "warning", "message": format!("categorizing failed ({err}); treating every chunk as a life event")}));
            vec!["life_event".to_owned(); count]
        }
    };
    let categorized = state
        .chunks
        .iter()
        .zip(categories)
        .map(|(text, category)| CategorizedChunk {
            text: text.clone(),
            category,
        })
        .collect();
    Ok(CrawlStateUpdate::new()
        .categorized(categorized)
        .model_calls(1))
}

async fn summarize_events(
    state: Arc<CrawlState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<CrawlStateUpdate, BoxError> {
    let life: Vec<String> = state
        .categorized
        .iter()
        .filter(|c| c.category == "life_event")
        .map(|c| c.text.clone())
        .collect();
    if life.is_empty() {
        return Ok(CrawlStateUpdate::new().events_summary(String::new()));
    }
    let reply = match model(&deps, 1024)
        .invoke(&[Message::user(prompts::events_summary(&state.person, &life))])
        .await
    {
        Ok(reply) => reply,
        // No summary, so no events from this page: said, not hidden.
        Err(err) => {
            ctx.writer().custom(json!({"event": "warning", "message": format!(
                "the model could not summarize the life events of {} ({err}); no events taken from it",
                state.url
            )}));
            return Ok(CrawlStateUpdate::new()
                .events_summary(String::new())
                .model_calls(1));
        }
    };
    Ok(CrawlStateUpdate::new()
        .events_summary(reply.content.trim().to_owned())
        .model_calls(1))
}

async fn structure_events(
    state: Arc<CrawlState>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<CrawlStateUpdate, BoxError> {
    if state.events_summary.trim().is_empty() {
        return Ok(CrawlStateUpdate::new().events(Vec::new()));
    }
    let reply = model(&deps, 2048)
        .with_structured_output::<ExtractedEvents>()
        .retries(2)
        .validate(|x| {
            for (i, e) in x.events.iter().enumerate() {
                if e.name.trim().is_empty() {
                    return Err(format!("events[{i}].name is empty"));
                }
                e.date
                    .validate()
                    .map_err(|m| format!("events[{i}].date: {m}"))?;
            }
            Ok(())
        })
        .invoke(&[Message::user(prompts::structure_events(
            &state.person,
            &state.events_summary,
        ))])
        .await;
    let extracted = match reply {
        Ok(x) => x.events,
        Err(err) => {
            ctx.writer().custom(json!({"event": "warning", "message": format!("structuring the events of {} failed: {err}", state.url)}));
            Vec::new()
        }
    };
    // The passage behind each event is looked up in the page itself (its chunks), not
    // taken from the model: a summary's wording is the model's, the page's is the source's.
    let page = state.chunks.join("\n\n");
    let events = extracted
        .into_iter()
        .map(|e| {
            Event {
                name: e.name,
                description: e.description,
                source: state.source.clone(),
                date: e.date,
                location: e.location.filter(|l| !l.trim().is_empty()),
                ..Event::default()
            }
            .read_from(&state.url, &page)
        })
        .collect();
    Ok(CrawlStateUpdate::new().events(events).model_calls(1))
}
