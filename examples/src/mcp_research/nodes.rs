//! The nodes of the graph: `initialization` → `planning` → `execute_sub_agents` →
//! `accumulate` → `check_completion` (router) → `planning` | `synthesis` → END. Each
//! writes its [`Marker`]s to the run's stream as it goes.

use std::sync::Arc;

use futures::StreamExt;
use graphkit::RunContext;
use graphkit::error::BoxError;
use graphkit::{AppendUpdate, StreamWriter};
use graphkit_llm::{ChatModel, LlmError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::marker::{Marker, progress_for};
use super::prompts::{PLANNER, planner_request};
use super::source::EventsSource;
use super::state::{
    ChartConfig, ResearchAgentState, ResearchAgentStateUpdate, ResearchPhase, Source, SubAgentCall,
    SubAgentOutput, ToolSchema,
};
use super::subagents::{AgentContext, SubAgentRegistry, write_report};

/// Node names.
pub(crate) const INITIALIZATION: &str = "initialization";
/// The planner.
pub(crate) const PLANNING: &str = "planning";
/// Runs the batch.
pub(crate) const EXECUTE_SUB_AGENTS: &str = "execute_sub_agents";
/// Merges the batch's outputs.
pub(crate) const ACCUMULATE: &str = "accumulate";
/// Decides: plan again, synthesize, or end.
pub(crate) const CHECK_COMPLETION: &str = "check_completion";
/// Writes the report.
pub(crate) const SYNTHESIS: &str = "synthesis";

/// The one `next_action` the planner may choose.
pub(crate) const SYNTHESIZE: &str = "synthesize";

/// The most calls kept from one planner reply.
pub(crate) const MAX_CALLS_PER_BATCH: usize = 6;

/// What the nodes need: the model, the MCP tools, the sub-agents and the limits.
#[derive(Clone)]
pub struct ResearchDeps {
    /// The session's model (planner and LLM sub-agents).
    pub model: Arc<dyn ChatModel>,
    /// The MCP tools.
    pub source: Arc<dyn EventsSource>,
    /// The sub-agents.
    pub(crate) registry: SubAgentRegistry,
    /// Calls of one batch run at once.
    pub(crate) max_parallel_sub_agents: usize,
    /// Confidence at which the research goes to synthesis.
    pub(crate) confidence_threshold: f32,
}

impl std::fmt::Debug for ResearchDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResearchDeps")
            .field("model", &self.model.model_name())
            .field("registry", &self.registry)
            .field("max_parallel_sub_agents", &self.max_parallel_sub_agents)
            .field("confidence_threshold", &self.confidence_threshold)
            .finish_non_exhaustive()
    }
}

/// The planner's structured reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PlannerDecision {
    /// The batch: sub-agents to run in parallel now.
    #[schemars(length(max = 6))]
    pub(crate) sub_agent_calls: Vec<SubAgentCall>,
    /// `"synthesize"` to write the report now.
    #[serde(default)]
    pub(crate) next_action: Option<String>,
    /// How well the data collected so far answers the query (0-1).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// One sentence: why this batch.
    #[serde(default)]
    #[schemars(length(max = 400))]
    pub reasoning: String,
}

fn emit(writer: &StreamWriter, marker: Marker) {
    writer.custom(&marker);
}

/// `initialization`: MCP discovery; `enabled_tools` = the requested tools that exist (the
/// others dropped with a warning), or every tool when none was requested.
///
/// # Errors
/// When the MCP server cannot be reached, or none of the requested tools exists.
pub async fn initialization(
    state: Arc<ResearchAgentState>,
    writer: StreamWriter,
    deps: RunContext<ResearchDeps>,
) -> Result<ResearchAgentStateUpdate, BoxError> {
    emit(&writer, Marker::Phase(ResearchPhase::Planning));
    emit(&writer, Marker::thinking("Discovering MCP tools..."));
    let tools = deps.source.list_tools().await.map_err(|e| {
        format!("cannot list the MCP tools ({e}); check that the MCP server runs, then post the session again")
    })?;
    let available: Vec<ToolSchema> = tools
        .into_iter()
        .map(|t| ToolSchema {
            name: t.name,
            description: t.description,
            input_schema: t.input_schema,
        })
        .collect();
    let names: Vec<String> = available.iter().map(|t| t.name.clone()).collect();
    let enabled: Vec<String> = if state.requested_tools.is_empty() {
        names.clone()
    } else {
        let (known, unknown): (Vec<String>, Vec<String>) = state
            .requested_tools
            .iter()
            .cloned()
            .partition(|t| names.contains(t));
        if !unknown.is_empty() {
            emit(
                &writer,
                Marker::thinking(format!(
                    "Warning: ignoring unknown tools {} (the server offers {})",
                    unknown.join(", "),
                    names.join(", ")
                )),
            );
        }
        known
    };
    if enabled.is_empty() {
        return Err(format!(
            "none of the enabled tools exists on the MCP server (requested: {}; offered: {})",
            state.requested_tools.join(", "),
            names.join(", ")
        )
        .into());
    }
    emit(
        &writer,
        Marker::thinking(format!(
            "Found {} MCP tools; enabled: {}",
            available.len(),
            enabled.join(", ")
        )),
    );
    Ok(ResearchAgentStateUpdate::new()
        .available_tools(available)
        .enabled_tools(enabled)
        .current_phase(ResearchPhase::Planning))
}

/// `planning`: the planner's batch (unknown agents dropped with a warning), the next
/// iteration, `next_action`, and the confidence (the planner's estimate lowered by 0.05
/// per validation issue).
///
/// # Errors
/// When the model cannot be called at all (an unusable reply is an empty batch instead).
pub async fn planning(
    state: Arc<ResearchAgentState>,
    writer: StreamWriter,
    deps: RunContext<ResearchDeps>,
) -> Result<ResearchAgentStateUpdate, BoxError> {
    let iteration = state.iteration_count + 1;
    emit(&writer, Marker::Phase(ResearchPhase::Planning));
    emit(
        &writer,
        Marker::Progress(progress_for(
            ResearchPhase::Planning,
            iteration,
            state.max_iterations,
        )),
    );
    emit(
        &writer,
        Marker::thinking(if iteration == 1 {
            "Creating initial research plan...".to_owned()
        } else {
            format!(
                "Planning iteration {iteration} of {}...",
                state.max_iterations
            )
        }),
    );
    let request = planner_request(&state, &deps.registry.describe());
    let decision = Arc::clone(&deps.model)
        .with_options(
            graphkit_llm::CallOptions::new()
                .temperature(0.0)
                .max_tokens(1024),
        )
        .with_structured_output::<PlannerDecision>()
        .retries(2)
        .invoke(&[
            graphkit_llm::Message::system(PLANNER),
            graphkit_llm::Message::user(request),
        ])
        .await;
    let decision = match decision {
        Ok(decision) => decision,
        Err(
            LlmError::StructuredOutput { .. }
            | LlmError::StandIn { .. }
            | LlmError::MalformedResponse { .. },
        ) => {
            emit(
                &writer,
                Marker::thinking(
                    "The planner's reply was not a usable plan; this iteration runs no sub-agents",
                ),
            );
            PlannerDecision::default()
        }
        Err(LlmError::BudgetSpent { reason }) => {
            // The run's time budget is spent: no more planning, the report is written
            // from what was gathered (and says whose work it is).
            emit(
                &writer,
                Marker::thinking(format!(
                    "No plan for iteration {iteration}: {reason}. Synthesizing from what was gathered."
                )),
            );
            PlannerDecision {
                next_action: Some(SYNTHESIZE.to_owned()),
                ..PlannerDecision::default()
            }
        }
        Err(e) => return Err(format!("the planner's model failed: {e}").into()),
    };
    let mut calls = Vec::new();
    for call in decision.sub_agent_calls {
        if deps.registry.get(&call.agent_name).is_none() {
            emit(
                &writer,
                Marker::thinking(format!(
                    "Warning: ignoring unknown sub-agent `{}` (known: {})",
                    call.agent_name,
                    deps.registry.names().join(", ")
                )),
            );
        } else if calls.len() < MAX_CALLS_PER_BATCH {
            calls.push(call);
        }
    }
    let next_action = decision
        .next_action
        .filter(|a| a.trim().eq_ignore_ascii_case(SYNTHESIZE))
        .map(|_| SYNTHESIZE.to_owned());
    let planned: Vec<&str> = calls.iter().map(|c| c.agent_name.as_str()).collect();
    let reasoning = crate::shared::truncate(decision.reasoning.trim(), 300);
    emit(
        &writer,
        Marker::thinking(match (&next_action, planned.is_empty()) {
            (Some(_), true) => format!("Ready to synthesize. {reasoning}"),
            (Some(_), false) => {
                format!("Plan: {}, then synthesize. {reasoning}", planned.join(", "))
            }
            (None, true) => format!("No sub-agent calls planned. {reasoning}"),
            (None, false) => format!("Plan: {}. {reasoning}", planned.join(", ")),
        }),
    );
    let mut update = ResearchAgentStateUpdate::new()
        .iteration_count(iteration)
        .pending_sub_agent_calls(calls)
        .next_action(next_action)
        .current_phase(ResearchPhase::Planning);
    if let Some(confidence) = decision.confidence.filter(|c| c.is_finite()) {
        let lowered = confidence.clamp(0.0, 1.0) - 0.05 * state.validation.len() as f32;
        update = update.overall_confidence(lowered.max(0.0));
    }
    Ok(update)
}

/// `execute_sub_agents`: the batch, all calls concurrently (at most
/// `max_parallel_sub_agents` at once), outputs kept in batch order; `current_phase`
/// becomes the phase of the batch's last agent.
///
/// # Errors
/// When a data sub-agent cannot reach the MCP server (the session resumes from the last
/// checkpoint once it is back).
pub async fn execute_sub_agents(
    state: Arc<ResearchAgentState>,
    writer: StreamWriter,
    deps: RunContext<ResearchDeps>,
) -> Result<ResearchAgentStateUpdate, BoxError> {
    let calls = state.pending_sub_agent_calls.clone();
    let mut last_phase = None;
    for call in &calls {
        if let Some(agent) = deps.registry.get(&call.agent_name) {
            if last_phase != Some(agent.phase()) {
                emit(&writer, Marker::Phase(agent.phase()));
                last_phase = Some(agent.phase());
            }
            emit(
                &writer,
                Marker::thinking(format!("Executing {}...", agent.name())),
            );
        }
    }
    let ctx = AgentContext {
        state: Arc::clone(&state),
        model: Arc::clone(&deps.model),
        source: Arc::clone(&deps.source),
    };
    let outputs: Vec<Result<SubAgentOutput, super::subagents::SubAgentFailure>> =
        futures::stream::iter(calls.into_iter().map(|call| {
            let ctx = ctx.clone();
            let agent = deps.registry.get(&call.agent_name).cloned();
            run_call(agent, call, ctx)
        }))
        .buffered(deps.max_parallel_sub_agents.max(1))
        .collect()
        .await;
    let mut results = Vec::with_capacity(outputs.len());
    for output in outputs {
        let output = output.map_err(|e| e.to_string())?;
        emit(
            &writer,
            Marker::thinking(format!(
                "{}{}: {}",
                output.agent,
                if output.failed { " (no result)" } else { "" },
                output.note
            )),
        );
        results.push(output);
    }
    let mut update = ResearchAgentStateUpdate::new().batch_results(results);
    if let Some(phase) = last_phase {
        update = update.current_phase(phase);
    }
    Ok(update)
}

/// One call of a batch, owning what it needs (so the batch's futures are `'static`).
fn run_call(
    agent: Option<Arc<dyn super::subagents::SubAgent>>,
    call: SubAgentCall,
    ctx: AgentContext,
) -> futures::future::BoxFuture<'static, Result<SubAgentOutput, super::subagents::SubAgentFailure>>
{
    Box::pin(async move {
        match agent {
            Some(agent) => agent.run(&call.arguments, &ctx).await,
            None => Ok(super::subagents::failed(
                &call.agent_name,
                "unknown sub-agent",
            )),
        }
    })
}

/// `accumulate`: merges the batch's outputs into the state, charts the new aggregations,
/// counts the documents read; sends SOURCES and CHART_CONFIGS (cumulative) when they grow.
pub async fn accumulate(
    state: Arc<ResearchAgentState>,
    writer: StreamWriter,
) -> ResearchAgentStateUpdate {
    let mut update = ResearchAgentStateUpdate::new()
        .batch_results(Vec::new())
        .pending_sub_agent_calls(Vec::new());
    let results = &state.batch_results;
    let mut sub_questions = Vec::new();
    let mut perspectives = Vec::new();
    let mut aggregations = Vec::new();
    let mut samples = Vec::new();
    let mut findings = Vec::new();
    let mut validation = Vec::new();
    let mut gaps = None;
    let mut new_sources: Vec<Source> = Vec::new();
    let mut docs = 0u32;
    let mut synthesize = false;
    for result in results {
        sub_questions.extend(result.sub_questions.iter().cloned());
        perspectives.extend(result.perspectives.iter().cloned());
        aggregations.extend(result.aggregations.iter().cloned());
        samples.extend(result.samples.iter().cloned());
        findings.extend(result.findings.iter().cloned());
        validation.extend(result.validation.iter().cloned());
        if let Some(g) = &result.gaps {
            gaps = Some(g.clone());
        }
        for source in &result.sources {
            let known = state.extracted_sources.iter().any(|s| s.url == source.url)
                || new_sources.iter().any(|s| s.url == source.url);
            if !known {
                new_sources.push(source.clone());
            }
        }
        docs = docs.saturating_add(result.docs_processed);
        synthesize |= result.agent == "synthesizer" && !result.failed;
    }
    let charts: Vec<ChartConfig> = aggregations
        .iter()
        .filter(|a| !a.buckets.is_empty())
        .map(ChartConfig::from_aggregation)
        .collect();
    if !new_sources.is_empty() {
        let mut cumulative = state.extracted_sources.clone();
        cumulative.extend(new_sources.iter().cloned());
        emit(&writer, Marker::Sources(cumulative));
    }
    if !charts.is_empty() {
        let mut cumulative = state.chart_configs.clone();
        cumulative.extend(charts.iter().cloned());
        emit(&writer, Marker::ChartConfigs(cumulative));
    }
    if synthesize {
        update = update.next_action(Some(SYNTHESIZE.to_owned()));
    }
    if let Some(gaps) = gaps {
        update = update.gaps(gaps);
    }
    update
        .sub_questions(AppendUpdate::items(sub_questions))
        .perspectives(AppendUpdate::items(perspectives))
        .aggregation_results(AppendUpdate::items(aggregations))
        .samples(AppendUpdate::items(samples))
        .findings(AppendUpdate::items(findings))
        .validation(AppendUpdate::items(validation))
        .extracted_sources(AppendUpdate::items(new_sources))
        .chart_configs(AppendUpdate::items(charts))
        .docs_processed(docs)
}

/// `check_completion` (the router after the node of that name), in order: a report →
/// END; `next_action` synthesize, confidence ≥ `threshold`, or the last iteration →
/// synthesis; otherwise → planning.
pub fn check_completion(state: &ResearchAgentState, threshold: f32) -> &'static str {
    if state.final_report.is_some() {
        graphkit::END
    } else if state.next_action.as_deref() == Some(SYNTHESIZE)
        || state.overall_confidence >= threshold
        || state.iteration_count >= state.max_iterations
    {
        SYNTHESIS
    } else {
        PLANNING
    }
}

/// `synthesis`: the synthesizer's report, key findings and confidence; phase complete.
pub async fn synthesis(
    state: Arc<ResearchAgentState>,
    writer: StreamWriter,
    deps: RunContext<ResearchDeps>,
) -> ResearchAgentStateUpdate {
    emit(&writer, Marker::Phase(ResearchPhase::Synthesizing));
    emit(&writer, Marker::Progress(90));
    emit(
        &writer,
        Marker::thinking(format!(
            "Synthesizing the report from {} findings, {} aggregations and {} samples...",
            state.findings.len(),
            state.aggregation_results.len(),
            state.samples.len()
        )),
    );
    let (draft, problem) = write_report(&deps.model, &state).await;
    if let Some(problem) = problem {
        emit(
            &writer,
            Marker::thinking(format!(
                "The model's report was not usable ({problem}); composed it from the collected data"
            )),
        );
    }
    emit(&writer, Marker::Phase(ResearchPhase::Complete));
    emit(&writer, Marker::Progress(100));
    ResearchAgentStateUpdate::new()
        .final_report(Some(draft.markdown))
        .key_findings(draft.key_findings)
        .overall_confidence(draft.confidence)
        .current_phase(ResearchPhase::Complete)
}
