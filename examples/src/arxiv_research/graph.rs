//! The graph: planner → step_iterator → supervisor → fact_gate → advance →
//! {step_iterator | expander (one `Send` per paper) | synthesizer}; expander →
//! synthesizer → finish → END.

use std::sync::Arc;

use graphkit::{CompileOptions, CompiledGraph, END, START, StateGraph};
use graphkit_llm::{CallOptions, ChatModel};
use graphkit_tools::{OutputMode, ReactAgent, Supervisor, Worker};

use super::nodes::{
    self, ADVANCE, ARXIV_AGENT, EXPANDER, FACT_GATE, FINISH, NodeDeps, PLANNER, STEP_ITERATOR,
    SUPERVISOR, SYNTHESIZER,
};
use super::prompts;
use super::state::{ResearchState, ResearchStateUpdate};
use super::tools::worker_tools;

/// What the graph is built from: the models of the supervisor and the worker, and the
/// nodes' dependencies.
#[derive(Clone)]
pub struct GraphDeps {
    /// The supervisor's model.
    pub supervisor: Arc<dyn ChatModel>,
    /// The worker's model (`arxiv_agent`).
    pub worker: Arc<dyn ChatModel>,
    /// Planner, expander and synthesizer models, the arXiv client, the step cap.
    pub nodes: NodeDeps,
    /// The most model turns of the worker per step.
    pub worker_max_iterations: usize,
}

/// Builds the supervisor team: the supervisor model with one handoff tool to
/// `arxiv_agent`, a ReAct worker over [`worker_tools`]. The worker starts from the
/// conversation (and topic, plan, step) and hands back its last message and its
/// `pending_facts`.
///
/// # Errors
/// [`graphkit::Error`] when the graph does not validate (a bug).
pub(crate) fn build_supervisor(
    deps: &GraphDeps,
) -> Result<CompiledGraph<ResearchState>, graphkit::BuildError> {
    // Every reply is bounded, so a weak model cannot talk forever; once the run's time
    // budget is spent the agents' turns end without a tool call (the step's note says so)
    // instead of failing the run.
    let bounded = |model: &Arc<dyn ChatModel>| -> Arc<dyn ChatModel> {
        crate::shared::models::empty_when_spent(Arc::new(
            Arc::clone(model).with_options(CallOptions::new().temperature(0.0).max_tokens(1024)),
        ))
    };
    let worker = ReactAgent::<ResearchState>::from_shared(
        bounded(&deps.worker),
        worker_tools(&deps.nodes.arxiv),
    )
    .system_prompt(prompts::WORKER)
    .max_iterations(deps.worker_max_iterations)
    .compile()?;
    let worker = Worker::mapped(
        ARXIV_AGENT,
        "Searches arXiv for the current plan step and records at most 3 papers.",
        worker,
        |s: &ResearchState| {
            ResearchStateUpdate::new()
                .messages(s.messages.clone())
                .topic(s.topic.clone())
                .plan(s.plan.clone())
                .step_idx(s.step_idx)
        },
        |done: &ResearchState| ResearchStateUpdate::new().pending_facts(done.pending_facts.clone()),
    );
    Supervisor::from_shared(bounded(&deps.supervisor), [worker])
        .system_prompt(prompts::SUPERVISOR)
        .output_mode(OutputMode::LastMessage)
        .one_worker_per_turn()
        .max_handoffs(1)
        .compile()
}

/// Builds the arXiv research graph.
///
/// # Errors
/// [`graphkit::Error`] when the graph does not validate (a bug) or the options are unusable.
pub fn build_graph(
    deps: &GraphDeps,
    options: CompileOptions,
) -> Result<CompiledGraph<ResearchState>, graphkit::BuildError> {
    let supervisor = build_supervisor(deps)?;
    let mut graph = StateGraph::<ResearchState, NodeDeps>::new();
    graph
        .add_node(PLANNER, nodes::planner)
        .add_node(STEP_ITERATOR, nodes::step_iterator)
        .add_subgraph(SUPERVISOR, supervisor)
        .add_node(FACT_GATE, nodes::fact_gate)
        .add_node(ADVANCE, nodes::advance)
        .add_node(EXPANDER, nodes::expander)
        .add_node(SYNTHESIZER, nodes::synthesizer)
        .add_node(FINISH, nodes::finish)
        .add_edge(START, PLANNER)
        .add_edge(PLANNER, STEP_ITERATOR)
        .add_edge(STEP_ITERATOR, SUPERVISOR)
        .add_edge(SUPERVISOR, FACT_GATE)
        .add_edge(FACT_GATE, ADVANCE)
        .add_conditional_edges(
            ADVANCE,
            nodes::after_advance,
            [STEP_ITERATOR, EXPANDER, SYNTHESIZER],
        )
        .add_edge(EXPANDER, SYNTHESIZER)
        .add_edge(SYNTHESIZER, FINISH)
        .add_edge(FINISH, END);
    // The planner, expander and synthesizer read their models and corpus as context.
    Ok(graph
        .compile_with(options)?
        .with_context(deps.nodes.clone()))
}
