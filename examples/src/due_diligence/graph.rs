//! The graph (the seed's `agents/graph.py`).

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, Input, NodeContext, START, StateGraph};

use super::nodes::{
    self, ANALYZE_AND_REFLECT, Deps, EXECUTE_SEARCH, GENERATE_QUERIES, INITIALIZE, MAP_CONNECTIONS,
    SYNTHESIZE_REPORT, SearchTask, fan_out_searches, route_after_reflection,
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
) -> Result<CompiledGraph<S>, graphkit::Error> {
    let d = [(); 6].map(|()| Arc::clone(&deps));
    let [d_init, d_queries, d_search, d_reflect, d_connect, d_report] = d;
    let mut graph = StateGraph::<S>::new();
    graph
        .add_node(INITIALIZE, move |state: Arc<S>| {
            nodes::initialize(state, Arc::clone(&d_init))
        })
        .add_node(GENERATE_QUERIES, move |state: Arc<S>, ctx: NodeContext| {
            nodes::generate_queries(state, ctx, Arc::clone(&d_queries))
        })
        .add_node(
            EXECUTE_SEARCH,
            move |state: Arc<S>, task: Input<SearchTask>| {
                nodes::execute_search(state, task, Arc::clone(&d_search))
            },
        )
        .add_node(
            ANALYZE_AND_REFLECT,
            move |state: Arc<S>, ctx: NodeContext| {
                nodes::analyze_and_reflect(state, ctx, Arc::clone(&d_reflect))
            },
        )
        .add_node(MAP_CONNECTIONS, move |state: Arc<S>| {
            nodes::map_connections(state, Arc::clone(&d_connect))
        })
        .add_node(SYNTHESIZE_REPORT, move |state: Arc<S>| {
            nodes::synthesize_report(state, Arc::clone(&d_report))
        })
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
    graph.compile_with(options)
}
