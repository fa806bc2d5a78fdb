//! The graph (the seed's `agents/graph.py`).

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, START, StateGraph};

use super::nodes::{
    self, ANALYZE_AND_REFLECT, Deps, EXECUTE_SEARCH, GENERATE_QUERIES, INITIALIZE, MAP_CONNECTIONS,
    SYNTHESIZE_REPORT, fan_out_searches, route_after_reflection,
};
use super::state::DueDiligenceState as S;

/// Builds the due-diligence graph:
///
/// ```text
/// START → initialize → generate_queries ─(one Send per query)→ execute_search ×N → analyze_and_reflect
///                      generate_queries ─(no new query)→ analyze_and_reflect
/// analyze_and_reflect ─(continue)→ generate_queries
/// analyze_and_reflect ─(max depth | reflection stop | stagnation)→ map_connections → synthesize_report → END
/// ```
///
/// The searches of one iteration run in parallel, bounded by the run's
/// `RunConfig::max_concurrency` (`--max-concurrent-searches`).
///
/// # Errors
/// [`graphkit::Error`] if the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    deps: Arc<Deps>,
    options: CompileOptions,
) -> Result<CompiledGraph<S>, graphkit::BuildError> {
    let mut graph = StateGraph::<S, Deps>::new();
    graph
        .add_node(INITIALIZE, nodes::initialize)
        .add_node(GENERATE_QUERIES, nodes::generate_queries)
        .add_node(EXECUTE_SEARCH, nodes::execute_search)
        .add_node(ANALYZE_AND_REFLECT, nodes::analyze_and_reflect)
        .add_node(MAP_CONNECTIONS, nodes::map_connections)
        .add_node(SYNTHESIZE_REPORT, nodes::synthesize_report)
        .add_edge(START, INITIALIZE)
        .add_edge(INITIALIZE, GENERATE_QUERIES)
        .add_conditional_edges(
            GENERATE_QUERIES,
            fan_out_searches,
            [EXECUTE_SEARCH, ANALYZE_AND_REFLECT],
        )
        .add_edge(EXECUTE_SEARCH, ANALYZE_AND_REFLECT)
        .add_conditional_edges(
            ANALYZE_AND_REFLECT,
            route_after_reflection,
            [GENERATE_QUERIES, MAP_CONNECTIONS],
        )
        .add_edge(MAP_CONNECTIONS, SYNTHESIZE_REPORT)
        .add_edge(SYNTHESIZE_REPORT, END);
    // The nodes read the models, the search backend and the audit log as context.
    Ok(graph.compile_with(options)?.with_shared_context(deps))
}
