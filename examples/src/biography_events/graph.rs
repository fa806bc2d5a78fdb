//! The supervisor graph, with the url_crawler and further_event_research subgraphs as
//! its tools.

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, NodeContext, START, StateGraph};

use super::Deps;
use super::crawler;
use super::history::HistoryEntry;
use super::research;
use super::state::{
    BiographyState, BiographyStateUpdate, CrawlState, CrawlStateUpdate, ResearchState,
    ResearchStateUpdate,
};
use super::supervisor::{
    self, CHECK_INITIAL_GAPS, FINISH, FURTHER_EVENT_RESEARCH, MERGE_EVENTS, SUPERVISOR, THINK_TOOL,
    URL_CRAWLER, URL_FINDER,
};

/// Builds the biography events graph.
///
/// ```text
/// START → check_initial_gaps ─→ url_finder | finish
/// url_finder → think_tool
/// url_crawler (subgraph) → merge_events → think_tool
/// further_event_research (subgraph) → merge_events
/// think_tool → supervisor ─→ url_crawler | further_event_research | finish
/// finish → END
/// ```
///
/// # Errors
/// [`graphkit::Error`] if the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    deps: &Deps,
    options: CompileOptions,
) -> Result<CompiledGraph<BiographyState>, graphkit::Error> {
    let crawler = crawler::build(deps)?;
    let research = research::build(deps)?;
    let sites = deps.sites.clone();
    let (d1, d2, d3, d4, d5) = (
        deps.clone(),
        deps.clone(),
        deps.clone(),
        deps.clone(),
        deps.clone(),
    );

    let mut graph = StateGraph::<BiographyState>::new();
    graph
        .add_node(
            CHECK_INITIAL_GAPS,
            move |s: Arc<BiographyState>, ctx: NodeContext| {
                supervisor::check_initial_gaps(s, ctx, d1.clone())
            },
        )
        .add_node(
            URL_FINDER,
            move |s: Arc<BiographyState>, ctx: NodeContext| {
                supervisor::url_finder(s, ctx, d2.clone())
            },
        )
        .add_subgraph_mapped(
            URL_CRAWLER,
            crawler,
            move |s: &BiographyState| {
                let url = supervisor::next_url(s).cloned().unwrap_or_default();
                CrawlStateUpdate::new()
                    .person(s.person_to_research.clone())
                    .source(sites.source_name(&url))
                    .url(url)
            },
            crawl_result,
        )
        .add_subgraph_mapped(
            FURTHER_EVENT_RESEARCH,
            research,
            |s: &BiographyState| {
                ResearchStateUpdate::new()
                    .person(s.person_to_research.clone())
                    .events(s.events.clone())
                    .gap_targets(s.limits.gap_targets)
            },
            research_result,
        )
        .add_node(
            MERGE_EVENTS,
            move |s: Arc<BiographyState>, ctx: NodeContext| {
                supervisor::merge_events_node(s, ctx, d3.clone())
            },
        )
        .add_node(
            THINK_TOOL,
            move |s: Arc<BiographyState>, ctx: NodeContext| {
                supervisor::think_tool(s, ctx, d4.clone())
            },
        )
        .add_node(
            SUPERVISOR,
            move |s: Arc<BiographyState>, ctx: NodeContext| {
                supervisor::supervisor(s, ctx, d5.clone())
            },
        )
        .add_node(FINISH, supervisor::finish)
        .add_edge(START, CHECK_INITIAL_GAPS)
        .add_conditional_edges(
            CHECK_INITIAL_GAPS,
            supervisor::after_gap_check,
            [URL_FINDER, FINISH],
        )
        .add_edge(URL_FINDER, THINK_TOOL)
        .add_edge(URL_CRAWLER, MERGE_EVENTS)
        .add_edge(FURTHER_EVENT_RESEARCH, MERGE_EVENTS)
        .add_edge(MERGE_EVENTS, THINK_TOOL)
        .add_edge(THINK_TOOL, SUPERVISOR)
        .add_conditional_edges(
            SUPERVISOR,
            supervisor::route,
            [URL_CRAWLER, FURTHER_EVENT_RESEARCH, FINISH],
        )
        .add_edge(FINISH, END);
    graph.compile_with(options)
}

/// url_crawler's result as the supervisor's update: the events to merge, the URL marked
/// crawled, one tool call.
fn crawl_result(child: &CrawlState) -> BiographyStateUpdate {
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
    BiographyStateUpdate::new()
        .pending_events(child.events.clone())
        .crawled(vec![child.url.clone()])
        .tool_calls(1)
        .last_tool(entry)
        .model_calls(child.model_calls)
}

/// further_event_research's result: the updated events (with their ids), one tool call.
fn research_result(child: &ResearchState) -> BiographyStateUpdate {
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
    BiographyStateUpdate::new()
        .pending_events(child.updates.clone())
        .tool_calls(1)
        .last_tool(entry)
        .model_calls(child.model_calls)
}
