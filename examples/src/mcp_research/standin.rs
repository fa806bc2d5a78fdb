//! The offline stand-in for the planner and the LLM sub-agents, built on
//! [`StandInModel`]: **a test double, not a language model**. It reads the same requests
//! a model gets and answers through the same paths (schema-checked structured replies),
//! following the seed's data flow: iteration 1 decomposer + aggregator, iteration 2
//! sampler (whose extraction reads the samples), iteration 3 `synthesize`. Its report is
//! composed from the real aggregation numbers in the request.

use graphkit_llm::{ChatRequest, StandInModel};
use serde_json::{Value, json};

use super::nodes::{PlannerDecision, SYNTHESIZE};
use super::prompts::{labelled, section};
use super::state::{
    AggregationResult, Evidence, Finding, Perspective, Source, SubAgentCall, SubQuestion,
};
use super::subagents::{
    Extraction, GapReport, PerspectiveList, ReportDraft, SubQuestionList, ValidationReport,
    compose_report,
};

/// The offline stand-in (see the module docs).
pub fn offline_model() -> StandInModel {
    StandInModel::new("mcp-research-offline")
        .on_structured(plan)
        .on_structured(|req: &ChatRequest| decompose(req.last_user_text()))
        .on_structured(|req: &ChatRequest| PerspectiveList {
            perspectives: perspectives(labelled(req.last_user_text(), "Query:")),
        })
        .on_structured(|req: &ChatRequest| extract(req.last_user_text()))
        .on_structured(|_: &ChatRequest| ValidationReport { issues: Vec::new() })
        .on_structured(|_: &ChatRequest| GapReport { gaps: Vec::new() })
        .on_structured(|req: &ChatRequest| report(req.last_user_text()))
        .on_text(|req: &ChatRequest| aggregation_note(req.last_user_text()))
}

/// The field a query asks about: event type, conclusion, year, else country.
pub(crate) fn field_for(query: &str) -> &'static str {
    let q = query.to_lowercase();
    if q.contains("type") || q.contains("kind") {
        "event_type"
    } else if q.contains("conclusion") || q.contains("outcome") {
        "conclusion"
    } else if q.contains("year") || q.contains("trend") || q.contains("over time") {
        "year"
    } else {
        "country"
    }
}

fn plan(req: &ChatRequest) -> PlannerDecision {
    let text = req.last_user_text();
    let query = labelled(text, "Query:");
    let iteration: u32 = labelled(text, "Iteration:")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let enabled: Vec<&str> = labelled(text, "Enabled tools:")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let tool = enabled
        .iter()
        .find(|t| **t == "analyze_all_events")
        .or(enabled.first())
        .copied()
        .unwrap_or_default();
    let field = field_for(query);
    let call = |agent: &str, arguments: Value| SubAgentCall {
        agent_name: agent.into(),
        arguments,
    };
    match iteration {
        1 => PlannerDecision {
            sub_agent_calls: vec![
                call("decomposer", json!({ "query": query })),
                call(
                    "aggregator",
                    json!({ "tool_name": tool, "group_by": field, "top_n": 10 }),
                ),
            ],
            next_action: None,
            confidence: Some(0.4),
            reasoning: format!(
                "(offline stand-in) decompose the question and count events by {field}"
            ),
        },
        2 => PlannerDecision {
            sub_agent_calls: vec![call(
                "sampler",
                json!({ "tool_name": tool, "group_by": field, "samples_per_bucket": 2, "top_n": 5 }),
            )],
            next_action: None,
            confidence: Some(0.6),
            reasoning: format!(
                "(offline stand-in) sample documents from the largest {field} buckets and extract findings"
            ),
        },
        _ => PlannerDecision {
            sub_agent_calls: Vec::new(),
            next_action: Some(SYNTHESIZE.into()),
            confidence: Some(0.85),
            reasoning: "(offline stand-in) the counts and samples answer the question".into(),
        },
    }
}

fn decompose(text: &str) -> SubQuestionList {
    let query = labelled(text, "Query:");
    let field = field_for(query).replace('_', " ");
    let questions = [
        format!("How are the events distributed by {field}?"),
        format!("Which {field} values have the most events?"),
        format!("What do typical events of the largest {field} groups report?"),
        "How confident can we be given the data available?".to_owned(),
    ];
    SubQuestionList {
        sub_questions: questions
            .into_iter()
            .enumerate()
            .map(|(i, question)| SubQuestion {
                id: format!("q{}", i + 1),
                question,
            })
            .collect(),
    }
}

fn perspectives(query: &str) -> Vec<Perspective> {
    [
        ("analyst", "the counts behind"),
        ("reporter", "the stories behind"),
        ("skeptic", "what could bias the data on"),
    ]
    .into_iter()
    .map(|(name, angle)| Perspective {
        name: name.into(),
        angle: format!("{angle}: {query}"),
    })
    .collect()
}

fn extract(text: &str) -> Extraction {
    let docs: Vec<Value> = section(text, "DOCUMENTS:");
    let findings = docs
        .iter()
        .take(6)
        .filter_map(|doc| {
            let id = doc["doc_id"].as_str()?;
            let body = doc["text"].as_str()?;
            let first = body.split(". ").next().unwrap_or(body).trim();
            Some(Finding {
                claim: crate::shared::truncate(first, 200),
                evidence: vec![Evidence {
                    doc_id: id.into(),
                    quote: crate::shared::truncate(body, 160),
                }],
                confidence: Some(0.7),
            })
        })
        .collect();
    Extraction { findings }
}

fn report(text: &str) -> ReportDraft {
    let aggregations: Vec<AggregationResult> = section(text, "AGGREGATIONS:");
    let findings: Vec<Finding> = section(text, "FINDINGS:");
    let sources: Vec<Source> = section(text, "SOURCES:");
    compose_report(labelled(text, "Query:"), &aggregations, &findings, &sources)
}

fn aggregation_note(text: &str) -> String {
    let aggregations: Vec<AggregationResult> = section(text, "AGGREGATION:");
    match aggregations
        .first()
        .and_then(|a| a.buckets.first().map(|b| (a, b)))
    {
        Some((a, top)) => format!(
            "{} has the most events by {} ({} of the {} counted).",
            top.key,
            a.field,
            top.doc_count,
            a.total()
        ),
        None => "The aggregation is empty.".into(),
    }
}
