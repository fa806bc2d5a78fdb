//! The graph: initialization → planning → execute_sub_agents → accumulate →
//! check_completion → (planning | synthesis | END); synthesis → END.

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, START, StateGraph};

use super::nodes::{
    self, ACCUMULATE, CHECK_COMPLETION, EXECUTE_SUB_AGENTS, INITIALIZATION, PLANNING, ResearchDeps,
    SYNTHESIS,
};
use super::state::ResearchAgentState;

/// Builds the research graph over `deps`.
///
/// # Errors
/// [`graphkit::Error`] when the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    deps: Arc<ResearchDeps>,
    options: CompileOptions,
) -> Result<CompiledGraph<ResearchAgentState>, graphkit::BuildError> {
    let threshold = deps.confidence_threshold;
    let mut graph = StateGraph::<ResearchAgentState, ResearchDeps>::new();
    graph
        .add_node(INITIALIZATION, nodes::initialization)
        .add_node(PLANNING, nodes::planning)
        .add_node(EXECUTE_SUB_AGENTS, nodes::execute_sub_agents)
        .add_node(ACCUMULATE, nodes::accumulate)
        .add_node(CHECK_COMPLETION, |_: Arc<ResearchAgentState>| async {})
        .add_node(SYNTHESIS, nodes::synthesis)
        .add_edge(START, INITIALIZATION)
        .add_edge(INITIALIZATION, PLANNING)
        .add_edge(PLANNING, EXECUTE_SUB_AGENTS)
        .add_edge(EXECUTE_SUB_AGENTS, ACCUMULATE)
        .add_edge(ACCUMULATE, CHECK_COMPLETION)
        .add_conditional_edges(
            CHECK_COMPLETION,
            move |state: &ResearchAgentState| nodes::check_completion(state, threshold),
            [PLANNING, SYNTHESIS, END],
        )
        .add_edge(SYNTHESIS, END);
    // The nodes read the models, tools and settings as context.
    Ok(graph.compile_with(options)?.with_shared_context(deps))
}
