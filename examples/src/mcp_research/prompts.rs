//! The prompts of the planner and the LLM sub-agents. Each user message carries labelled
//! lines (`Query:`, `Iteration:`) and one-line JSON sections (`AGGREGATIONS: [...]`), so
//! any model — and the offline stand-in — reads the same facts.

use serde::Serialize;

use super::state::{AggregationResult, Finding, ResearchAgentState, Source};

/// The planner's system prompt.
pub(crate) const PLANNER: &str = "You are the planner of a research agent over an events database reached through MCP tools. \
Each iteration you choose a batch of sub-agent calls. Calls in one batch run in parallel and cannot see each other's \
output: put dependent work in the next iteration. Typical flow: decompose the question and aggregate counts; then \
sample documents (the sampler extracts findings from them); then choose next_action \"synthesize\" when the data \
answers the question. Pass the question's conditions as the tools' own filters (countries, event types, conclusions, \
a year window). To compare two periods (\"before 2008 vs after 2016\", \"the 2000s compared with the 2010s\"), call the \
aggregator once per period with the same group_by and filters and that period's year filter. Use only the listed \
sub-agents and tools. Reply with JSON: sub_agent_calls, next_action \
(\"synthesize\" or null), confidence (0-1, how well the collected data answers the question), reasoning (one sentence).";

/// The system prompt of the LLM sub-agents.
pub(crate) const ANALYST: &str = "You are a careful research analyst. Use only the facts given. Reply in the requested JSON format, briefly.";

/// One line of JSON for a prompt section.
pub(crate) fn json_line(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".into())
}

/// The planner's request: the query, the iteration, the tools, the sub-agents (`agents`,
/// one `- name: description` line each) and a digest of the state.
pub(crate) fn planner_request(state: &ResearchAgentState, agents: &str) -> String {
    let tools: Vec<serde_json::Value> = state
        .available_tools
        .iter()
        .filter(|t| state.enabled_tools.contains(&t.name))
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    format!(
        "Query: {query}\nIteration: {iteration} of {max}\nEnabled tools: {enabled}\n\nSUB-AGENTS:\n{agents}\nTOOLS: {tools}\n\n\
         STATE:\nSub-questions: {questions}\nAggregations: {aggregations}\nSamples: {samples}\nFindings: {findings}\n\
         Validation issues: {issues}\nGaps: {gaps}\nAGGREGATED FIELDS: {fields}",
        query = state.input,
        iteration = state.iteration_count + 1,
        max = state.max_iterations,
        enabled = state.enabled_tools.join(", "),
        tools = json_line(&tools),
        questions = state.sub_questions.len(),
        aggregations = state.aggregation_results.len(),
        samples = state.samples.len(),
        findings = state.findings.len(),
        issues = state.validation.len(),
        gaps = json_line(&state.gaps),
        fields = json_line(
            &state
                .aggregation_results
                .iter()
                .map(|a| a.field.as_str())
                .collect::<Vec<_>>()
        ),
    )
}

/// The synthesizer's request: the query and the collected data as JSON lines.
pub(crate) fn synthesis_request(state: &ResearchAgentState) -> String {
    let findings: Vec<&Finding> = state.findings.iter().take(20).collect();
    let sources: Vec<&Source> = state.extracted_sources.iter().take(20).collect();
    format!(
        "Query: {}\nWrite the research report in markdown, starting with `## Research Report`, citing the numbers \
         of the aggregations and the findings. Each aggregation lists the filters it was counted under; when two \
         differ only in their year filter, compare the two periods group by group (counts and shares). Give 2-5 key \
         findings and your confidence (0-1).\n\
         AGGREGATIONS: {}\nFINDINGS: {}\nSOURCES: {}\nSUB-QUESTIONS: {}\nVALIDATION: {}",
        state.input,
        json_line(&aggregations_digest(&state.aggregation_results)),
        json_line(&findings),
        json_line(&sources),
        json_line(&state.sub_questions),
        json_line(&state.validation),
    )
}

/// Aggregations with at most 15 buckets each (prompts stay short).
pub(crate) fn aggregations_digest(aggregations: &[AggregationResult]) -> Vec<AggregationResult> {
    aggregations
        .iter()
        .map(|a| AggregationResult {
            tool: a.tool.clone(),
            field: a.field.clone(),
            buckets: a.buckets.iter().take(15).cloned().collect(),
            other_doc_count: a.other_doc_count
                + a.buckets.iter().skip(15).map(|b| b.doc_count).sum::<u64>(),
            filters: a.filters.clone(),
        })
        .collect()
}

/// The text after `label` on its line of `text`.
pub(crate) fn labelled<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .unwrap_or_default()
        .trim()
}

/// The JSON of the section `label` (one line) of `text`, or `T::default()`.
pub fn section<T: serde::de::DeserializeOwned + Default>(text: &str, label: &str) -> T {
    serde_json::from_str(labelled(text, label)).unwrap_or_default()
}
