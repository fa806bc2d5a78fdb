//! The supervisor graph, with the url_crawler and further_event_research graphs as its
//! tools (run by the `tools` node).

use graphkit::{CompileOptions, CompiledGraph, END, START, StateGraph};

use super::Deps;
use super::state::BiographyState;
use super::supervisor::{
    self, CHECK_INITIAL_GAPS, FINISH, MERGE_EVENTS, SUPERVISOR, THINK_TOOL, TOOLS, URL_FINDER,
};
use super::tools::tool_node;

/// Builds the biography events graph.
///
/// ```text
/// START → check_initial_gaps ─→ url_finder | finish
/// url_finder → think_tool
/// think_tool → supervisor ─→ tools | finish
/// tools (url_crawler | further_event_research, graphs as tools) → merge_events → think_tool
/// finish → END
/// ```
///
/// The supervisor issues its choice as a tool call; the `tools` node runs the called
/// graph (see [`tool_node`]), whose output mapping writes the events to merge.
///
/// # Errors
/// [`graphkit::BuildError`] if the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    deps: &Deps,
    options: CompileOptions,
) -> Result<CompiledGraph<BiographyState>, graphkit::BuildError> {
    let tools = tool_node(deps)?;

    let mut graph = StateGraph::<BiographyState, Deps>::new();
    graph
        .add_node(CHECK_INITIAL_GAPS, supervisor::check_initial_gaps)
        .add_node(URL_FINDER, supervisor::url_finder)
        .add_node(TOOLS, tools)
        .add_node(MERGE_EVENTS, supervisor::merge_events_node)
        .add_node(THINK_TOOL, supervisor::think_tool)
        .add_node(SUPERVISOR, supervisor::supervisor)
        .add_node(FINISH, supervisor::finish)
        .add_edge(START, CHECK_INITIAL_GAPS)
        .add_conditional_edges(
            CHECK_INITIAL_GAPS,
            supervisor::after_gap_check,
            [URL_FINDER, FINISH],
        )
        .add_edge(URL_FINDER, THINK_TOOL)
        .add_edge(TOOLS, MERGE_EVENTS)
        .add_edge(MERGE_EVENTS, THINK_TOOL)
        .add_edge(THINK_TOOL, SUPERVISOR)
        .add_conditional_edges(SUPERVISOR, supervisor::route, [TOOLS, FINISH])
        .add_edge(FINISH, END);
    // The supervisor's nodes read the models and the crawler as context.
    Ok(graph.compile_with(options)?.with_context(deps.clone()))
}
