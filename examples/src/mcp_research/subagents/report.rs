//! The [`Synthesizer`]: the report (markdown starting with `## Research Report`), its key
//! findings and the overall confidence. The synthesis node calls [`write_report`].

use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit_llm::ChatModel;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::llm::ask;
use super::{AgentContext, SubAgent, SubAgentFailure};
use crate::mcp_research::prompts::synthesis_request;
use crate::mcp_research::state::{
    AggregationResult, Finding, ResearchAgentState, ResearchPhase, Source, SubAgentOutput,
};

/// The heading every report starts with.
pub(crate) const REPORT_HEADING: &str = "## Research Report";

/// The synthesizer's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ReportDraft {
    /// The report in markdown, starting with `## Research Report`.
    #[schemars(length(max = 6000))]
    pub markdown: String,
    /// 2-5 key findings, one sentence each.
    #[schemars(length(max = 5))]
    pub(crate) key_findings: Vec<String>,
    /// How well the data answers the query (0-1).
    pub confidence: f32,
}

/// A report written from the data alone: the aggregations' numbers (largest buckets and
/// shares), the findings with their evidence, the sources. The offline stand-in's
/// synthesizer writes this; [`write_report`] uses it, saying so, when the model's reply is
/// unusable.
pub(crate) fn compose_report(
    query: &str,
    aggregations: &[AggregationResult],
    findings: &[Finding],
    sources: &[Source],
) -> ReportDraft {
    let mut md = format!("{REPORT_HEADING}\n\n**Question:** {query}\n\n### Key numbers\n\n");
    let mut key_findings = Vec::new();
    for aggregation in aggregations {
        let total = aggregation.total().max(1);
        let _ = writeln!(
            md,
            "Events by **{}** ({}{}; {} events, the {} largest groups shown):\n\n| {} | events | share |\n|---|---:|---:|",
            aggregation.field,
            aggregation.tool,
            aggregation
                .filters
                .as_ref()
                .map(|f| format!(", filters `{f}`"))
                .unwrap_or_default(),
            aggregation.total(),
            aggregation.buckets.len(),
            aggregation.field
        );
        for bucket in aggregation.buckets.iter().take(10) {
            let _ = writeln!(
                md,
                "| {} | {} | {:.1}% |",
                bucket.key,
                bucket.doc_count,
                bucket.doc_count as f64 * 100.0 / total as f64
            );
        }
        md.push('\n');
        if let Some(top) = aggregation.buckets.first() {
            let runner_up = aggregation
                .buckets
                .get(1)
                .map(|b| format!(", ahead of {} ({})", b.key, b.doc_count))
                .unwrap_or_default();
            key_findings.push(format!(
                "{} leads by {} with {} events{runner_up}.",
                top.key, aggregation.field, top.doc_count
            ));
        }
    }
    if let Some((a, b)) = period_pair(aggregations) {
        key_findings.insert(0, compare_periods(&mut md, a, b));
    }
    if !findings.is_empty() {
        md.push_str("### Findings\n\n");
        for finding in findings.iter().take(12) {
            let cited: Vec<&str> = finding.evidence.iter().map(|e| e.doc_id.as_str()).collect();
            let _ = writeln!(
                md,
                "- {}{}",
                finding.claim,
                if cited.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", cited.join(", "))
                }
            );
        }
        md.push('\n');
        if let Some(first) = findings.first() {
            key_findings.push(first.claim.clone());
        }
    }
    if !sources.is_empty() {
        md.push_str("### Sources\n\n");
        for source in sources.iter().take(15) {
            let _ = writeln!(md, "- [{}]({})", source.title, source.url);
        }
    }
    key_findings.truncate(5);
    let confidence = match (aggregations.is_empty(), findings.is_empty()) {
        (false, false) => 0.85,
        (false, true) => 0.7,
        (true, false) => 0.6,
        (true, true) => 0.2,
    };
    ReportDraft {
        markdown: md.trim_end().to_owned() + "\n",
        key_findings,
        confidence,
    }
}

/// The report of `state`: the model's ([`ReportDraft`]), starting with
/// `## Research Report` (added when missing), confidence clamped to 0-1. When the model's
/// reply is unusable, the report composed from the data ([`compose_report`]) with a line
/// saying so; the second value is then the reason.
pub(crate) async fn write_report(
    model: &Arc<dyn ChatModel>,
    state: &ResearchAgentState,
) -> (ReportDraft, Option<String>) {
    let (mut draft, problem) = model_report(model, state).await;
    limit_to_evidence(&mut draft, state);
    (draft, problem)
}

/// The graph's check on a report, whatever wrote it: when no event matched (no
/// aggregation counted any and no document was sampled), the report says that nothing was
/// found (or, when no aggregation ran at all, that nothing was gathered) and its
/// confidence is at most 0.1.
fn limit_to_evidence(draft: &mut ReportDraft, state: &ResearchAgentState) {
    let counted: u64 = state
        .aggregation_results
        .iter()
        .map(AggregationResult::total)
        .sum();
    if counted == 0 && state.samples.is_empty() && state.findings.is_empty() {
        // Nothing queried is not nothing found: say which.
        let why = if state.aggregation_results.is_empty() {
            format!(
                "**Nothing gathered:** no sub-agent collected any data in {} planning \
                 iteration(s) (the planner's plans could not be used, or the run's time budget \
                 ran out), so this report answers nothing; nothing below is evidence.",
                state.iteration_count
            )
        } else {
            "**Nothing found:** no event matched this question, so the data cannot answer it; \
             nothing below is evidence."
                .to_owned()
        };
        draft.markdown =
            draft
                .markdown
                .replacen(REPORT_HEADING, &format!("{REPORT_HEADING}\n\n{why}"), 1);
        draft.confidence = draft.confidence.min(0.1);
    }
}

async fn model_report(
    model: &Arc<dyn ChatModel>,
    state: &ResearchAgentState,
) -> (ReportDraft, Option<String>) {
    match ask::<ReportDraft>(model, synthesis_request(state)).await {
        Ok(mut draft) if !draft.markdown.trim().is_empty() => {
            if !draft.markdown.trim_start().starts_with(REPORT_HEADING) {
                draft.markdown = format!("{REPORT_HEADING}\n\n{}", draft.markdown.trim_start());
            }
            draft.confidence = if draft.confidence.is_finite() {
                draft.confidence.clamp(0.0, 1.0)
            } else {
                0.0
            };
            (draft, None)
        }
        Ok(_) => fallback(state, "the model wrote an empty report".into()),
        Err(problem) => fallback(state, problem),
    }
}

fn fallback(state: &ResearchAgentState, problem: String) -> (ReportDraft, Option<String>) {
    let mut draft = compose_report(
        &state.input,
        &state.aggregation_results,
        &state.findings,
        &state.extracted_sources,
    );
    draft.markdown = draft.markdown.replacen(
        REPORT_HEADING,
        &format!(
            "{REPORT_HEADING}\n\n*Composed from the collected data: the model's report was not usable ({}).*",
            problem.replace(['\n', '\r'], " ")
        ),
        1,
    );
    draft.confidence = draft.confidence.min(0.5);
    (draft, Some(problem))
}

/// Synthesizer: writes the report in the synthesis node. Called by the planner in a batch,
/// it asks for the synthesis (`next_action: synthesize`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Synthesizer;

#[async_trait]
impl SubAgent for Synthesizer {
    fn name(&self) -> &'static str {
        "synthesizer"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Synthesizing
    }

    fn description(&self) -> &'static str {
        "writes the final report from everything collected (prefer next_action \"synthesize\"). No arguments."
    }

    async fn run(
        &self,
        _arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        Ok(SubAgentOutput {
            agent: self.name().into(),
            note: format!(
                "the report will be written from {} findings and {} aggregations",
                ctx.state.findings.len(),
                ctx.state.aggregation_results.len()
            ),
            ..SubAgentOutput::default()
        })
    }
}

/// The `year` window of an aggregation's filters.
fn year_window(aggregation: &AggregationResult) -> Option<&Value> {
    aggregation.filters.as_ref()?.get("year")
}

/// A comparison of two periods among the aggregations: the first two that count the
/// same field with the same tools under filters that differ only in their `year` window.
fn period_pair(
    aggregations: &[AggregationResult],
) -> Option<(&AggregationResult, &AggregationResult)> {
    let without_year = |a: &AggregationResult| {
        let mut f = a.filters.clone().unwrap_or(Value::Null);
        if let Some(o) = f.as_object_mut() {
            o.remove("year");
        }
        f
    };
    aggregations.iter().enumerate().find_map(|(i, a)| {
        let window = year_window(a)?;
        aggregations[i + 1..]
            .iter()
            .find(|b| {
                b.field == a.field
                    && b.tool == a.tool
                    && year_window(b).is_some_and(|w| w != window)
                    && without_year(b) == without_year(a)
            })
            .map(|b| (a, b))
    })
}

/// A `year` filter as words: `before 2000`, `after 2010`, `since 2018`, `until 2010`,
/// `the 1990s`, `2010–2015`, `2019`.
pub(crate) fn period_label(window: &Value) -> String {
    let bound = |k: &str| window.get(k).and_then(Value::as_i64);
    match (bound("gte"), bound("gt"), bound("lte"), bound("lt")) {
        (Some(a), None, Some(b), None) if a % 10 == 0 && b == a + 9 => format!("the {a}s"),
        (Some(a), None, Some(b), None) => format!("{a}–{b}"),
        (Some(a), None, None, None) => format!("since {a}"),
        (None, Some(a), None, None) => format!("after {a}"),
        (None, None, Some(b), None) => format!("until {b}"),
        (None, None, None, Some(b)) => format!("before {b}"),
        _ => window.to_string(),
    }
}

/// Writes the comparison of two periods' counts (each group's events and share in each,
/// and the change of share) and returns its key finding.
fn compare_periods(md: &mut String, a: &AggregationResult, b: &AggregationResult) -> String {
    let (la, lb) = (
        year_window(a).map(period_label).unwrap_or_default(),
        year_window(b).map(period_label).unwrap_or_default(),
    );
    let (ta, tb) = (a.total(), b.total());
    let _ = writeln!(
        md,
        "### Comparison: {la} vs {lb}\n\nEvents by **{}**: {ta} {la}, {tb} {lb}. The periods may differ in length, so compare the shares.\n\n| {} | {la} | share | {lb} | share | change in share |\n|---|---:|---:|---:|---:|---:|",
        a.field, a.field
    );
    let mut keys: Vec<&str> = a.buckets.iter().map(|x| x.key.as_str()).collect();
    for x in &b.buckets {
        if !keys.contains(&x.key.as_str()) {
            keys.push(&x.key);
        }
    }
    let share = |n: u64, total: u64| n as f64 * 100.0 / total.max(1) as f64;
    // A group missing from a period's buckets has 0 events there when no group was cut.
    let count = |agg: &AggregationResult, key: &str| {
        agg.buckets
            .iter()
            .find(|x| x.key == key)
            .map(|x| x.doc_count)
            .or((agg.other_doc_count == 0).then_some(0))
    };
    for key in keys.iter().take(12) {
        let (ca, cb) = (count(a, key), count(b, key));
        let cell = |c: Option<u64>, t: u64| match c {
            Some(c) => (c.to_string(), format!("{:.1}%", share(c, t))),
            None => ("—".into(), "—".into()),
        };
        let ((na, sa), (nb, sb)) = (cell(ca, ta), cell(cb, tb));
        let change = match (ca, cb) {
            (Some(x), Some(y)) => {
                let change = share(y, tb) - share(x, ta);
                if change.abs() < 0.05 {
                    "0.0 pts".to_owned()
                } else {
                    format!("{change:+.1} pts")
                }
            }
            _ => "—".into(),
        };
        let _ = writeln!(md, "| {key} | {na} | {sa} | {nb} | {sb} | {change} |");
    }
    md.push('\n');
    let top = |agg: &AggregationResult| agg.buckets.first().map(|x| x.key.clone());
    match (top(a), top(b)) {
        (Some(x), Some(y)) if x == y => format!(
            "{x} leads by {} in both periods ({ta} events {la}, {tb} {lb}).",
            a.field
        ),
        (Some(x), Some(y)) => format!(
            "The largest {} group changed from {x} ({la}) to {y} ({lb}); {ta} events {la}, {tb} {lb}.",
            a.field
        ),
        _ => format!("{ta} events {la}, {tb} {lb}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp_research::state::Bucket;

    #[test]
    fn the_composed_report_states_the_real_numbers() {
        let aggregation = AggregationResult {
            tool: "analyze_all_events".into(),
            field: "country".into(),
            buckets: vec![
                Bucket {
                    key: "Norway".into(),
                    doc_count: 30,
                },
                Bucket {
                    key: "Chile".into(),
                    doc_count: 10,
                },
            ],
            other_doc_count: 0,
            filters: None,
        };
        let draft = compose_report("Which countries?", &[aggregation], &[], &[]);
        assert!(draft.markdown.starts_with(REPORT_HEADING));
        assert!(draft.markdown.contains("| Norway | 30 | 75.0% |"));
        assert_eq!(
            draft.key_findings,
            ["Norway leads by country with 30 events, ahead of Chile (10)."]
        );
    }
}
