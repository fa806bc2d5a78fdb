//! The graph: `generate_todos` → `research_agent` ⇄ `tools` → `finalize_output`.

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, Provides, START, StateGraph};
use graphkit_tools::{TOOLS_NODE, ToolNode};

use super::nodes::{
    self, AgentDeps, FINALIZE_OUTPUT, GENERATE_TODOS, RESEARCH_AGENT, should_continue_or_finalize,
};
use super::output_folder::OutputFolder;
use super::state::EntityIntelResearchState;
use super::tools::{ToolDeps, research_tools};
use super::verify::{self, SourceReader, VERIFY_FINDINGS};

/// What the graph's nodes read: the agent's model, tools and limits, and where outputs go.
#[derive(Provides)]
pub struct GraphDeps {
    #[provide]
    agent: Arc<AgentDeps>,
    #[provide]
    outputs: Arc<OutputFolder>,
    #[provide]
    sources: Arc<SourceReader>,
}

/// Builds the entity-intel research graph (one bundle per run).
///
/// ```text
/// START → generate_todos → research_agent ─(should_continue_or_finalize)→ tools | research_agent | verify_findings
///                          tools ─(should_continue_or_finalize)→ research_agent | verify_findings (| tools)
/// verify_findings → finalize_output → END
/// ```
///
/// `verify_findings` reads every cited source again through `tools.search` and checks each
/// reported value against its passage before the report is written.
///
/// The tool node runs all tool calls of a turn concurrently and merges their state updates
/// through the reducers, so `todo_update` + `agent_write_file` land together.
///
/// # Errors
/// [`graphkit::Error`] if the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    agent: AgentDeps,
    tools: &ToolDeps,
    options: CompileOptions,
) -> Result<CompiledGraph<EntityIntelResearchState>, graphkit::BuildError> {
    let tool_node = ToolNode::new(research_tools(tools)).max_concurrency(4);
    let agent = AgentDeps {
        tool_specs: tool_node.specs(),
        ..agent
    };

    let mut graph = StateGraph::<EntityIntelResearchState, GraphDeps>::new();
    graph
        .add_node(GENERATE_TODOS, nodes::generate_todos)
        .add_node(RESEARCH_AGENT, nodes::research_agent)
        .add_node(TOOLS_NODE, tool_node)
        .add_node(VERIFY_FINDINGS, verify::verify_findings)
        .add_node(FINALIZE_OUTPUT, nodes::finalize_output)
        .add_edge(START, GENERATE_TODOS)
        .add_edge(GENERATE_TODOS, RESEARCH_AGENT)
        .add_conditional_edges(
            RESEARCH_AGENT,
            should_continue_or_finalize,
            [TOOLS_NODE, RESEARCH_AGENT, VERIFY_FINDINGS],
        )
        .add_conditional_edges(
            TOOLS_NODE,
            should_continue_or_finalize,
            [TOOLS_NODE, RESEARCH_AGENT, VERIFY_FINDINGS],
        )
        .add_edge(VERIFY_FINDINGS, FINALIZE_OUTPUT)
        .add_edge(FINALIZE_OUTPUT, END);
    // The nodes read the models and where outputs go as context.
    Ok(graph.compile_with(options)?.with_context(GraphDeps {
        agent: Arc::new(agent),
        outputs: Arc::new(tools.outputs.clone()),
        sources: Arc::new(SourceReader(Arc::clone(&tools.search))),
    }))
}
