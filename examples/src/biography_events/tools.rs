//! The supervisor's tools: the `url_crawler` and `further_event_research` graphs, each
//! offered as a [`GraphTool`] and run by the `tools` node ([`ToolNode`]) when the
//! supervisor calls it. Their output mappings turn the child's final state into the
//! supervisor's update: the events to merge, the URL crawled, one tool call.

use graphkit_llm::{AssistantMessage, Message, ToolCall};
use graphkit_tools::{GraphTool, OnToolError, ToolNode, ToolOutput, ToolRuntime};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::Deps;
use super::crawler;
use super::history::HistoryEntry;
use super::research;
use super::state::{
    BiographyState, BiographyStateUpdate, CrawlState, CrawlStateUpdate, ResearchState,
    ResearchStateUpdate,
};

/// The tool that crawls one page (a [`GraphTool`] over the `url_crawler` graph).
pub(crate) const URL_CRAWLER: &str = "url_crawler";
/// The tool that deepens known events (a [`GraphTool`] over the `further_event_research`
/// graph).
pub(crate) const FURTHER_EVENT_RESEARCH: &str = "further_event_research";

/// The arguments of `url_crawler`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct CrawlArgs {
    /// The page to crawl (one of url_finder's URLs).
    pub url: String,
}

/// The arguments of `further_event_research`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ResearchArgs {
    /// How many of the known events to deepen with targeted searches (the seed: 3-5).
    pub gap_targets: usize,
}

/// The `tools` node: runs the supervisor's last tool call. A failing tool fails the run
/// (it resumes from the checkpoint before the call) rather than answering the
/// supervisor, whose decisions are rules, not a model that could read the error.
///
/// # Errors
/// [`graphkit::BuildError`] if a tool graph does not validate (a bug).
pub fn tool_node(deps: &Deps) -> Result<ToolNode<BiographyState>, graphkit::BuildError> {
    let sites = deps.sites.clone();
    let url_crawler = GraphTool::new(
        URL_CRAWLER,
        "Crawls one biography page: splits it into chunks, keeps the chunks about life \
         events, and extracts the dated events.",
        crawler::build(deps)?,
        move |args: CrawlArgs, rt: &ToolRuntime<BiographyState>| {
            CrawlStateUpdate::new()
                .person(rt.state().person_to_research.clone())
                .source(sites.source_name(&args.url))
                .url(args.url)
        },
        |done: CrawlState, _rt: &ToolRuntime<BiographyState>| {
            let (update, reply) = crawl_result(&done);
            Ok(ToolOutput::update(update, reply))
        },
    );
    let further_event_research = GraphTool::new(
        FURTHER_EVENT_RESEARCH,
        "Deepens the known events: picks the ones missing dates or places, runs a \
         targeted search for each, and returns the updated events.",
        research::build(deps)?,
        |args: ResearchArgs, rt: &ToolRuntime<BiographyState>| {
            ResearchStateUpdate::new()
                .person(rt.state().person_to_research.clone())
                .events(rt.state().events.clone())
                .gap_targets(args.gap_targets)
        },
        |done: ResearchState, _rt: &ToolRuntime<BiographyState>| {
            let (update, reply) = research_result(&done);
            Ok(ToolOutput::update(update, reply))
        },
    );
    Ok(ToolNode::new((url_crawler, further_event_research)).on_error(OnToolError::FailNode))
}

/// The supervisor's call of `tool` (`url_crawler` on `url`, or `further_event_research`)
/// as an assistant message; the call id counts the run's tool calls (`call_2`).
pub(crate) fn call_message(state: &BiographyState, tool: &str, url: Option<&str>) -> Message {
    let arguments = match url {
        Some(url) if tool == URL_CRAWLER => json!({ "url": url }),
        _ => json!({ "gap_targets": state.limits.gap_targets }),
    };
    let call = ToolCall::new(tool, arguments).with_id(format!("call_{}", state.tool_calls + 1));
    AssistantMessage::with_tool_calls("", vec![call]).into()
}

/// url_crawler's result as the supervisor's update (the events to merge, the URL marked
/// crawled, one tool call) and its reply.
fn crawl_result(child: &CrawlState) -> (BiographyStateUpdate, String) {
    let entry = HistoryEntry {
        tool: URL_CRAWLER.into(),
        input: format!("{} ({})", child.source, child.url),
        summary: format!(
            "{} events from {} chunks ({} about life events)",
            child.events.len(),
            child.chunks.len(),
            child
                .categorized
                .iter()
                .filter(|c| c.category == "life_event")
                .count()
        ),
        ..HistoryEntry::default()
    };
    let reply = entry.summary.clone();
    let update = BiographyStateUpdate::new()
        .pending_events(child.events.clone())
        .crawled(vec![child.url.clone()])
        .tool_calls(1)
        .last_tool(entry)
        .model_calls(child.model_calls);
    (update, reply)
}

/// further_event_research's result (the updated events, with their ids; one tool call)
/// and its reply.
fn research_result(child: &ResearchState) -> (BiographyStateUpdate, String) {
    let names: Vec<String> = child
        .targets
        .iter()
        .filter_map(|t| {
            child
                .events
                .iter()
                .find(|e| e.id == t.event_id)
                .map(|e| e.name.clone())
        })
        .collect();
    let entry = HistoryEntry {
        tool: FURTHER_EVENT_RESEARCH.into(),
        input: names.join(", "),
        summary: format!(
            "{} targeted searches, {} events updated",
            child.targets.len(),
            child.updates.len()
        ),
        ..HistoryEntry::default()
    };
    let reply = entry.summary.clone();
    let update = BiographyStateUpdate::new()
        .pending_events(child.updates.clone())
        .tool_calls(1)
        .last_tool(entry)
        .model_calls(child.model_calls);
    (update, reply)
}
