//! The sub-agents that use the model only: [`Decomposer`], [`PerspectiveAgent`],
//! [`Extractor`], [`Validator`], [`GapAnalyzer`]; each asks for a typed, schema-checked
//! reply.

use std::sync::Arc;

use async_trait::async_trait;
use graphkit_llm::{CallOptions, ChatModel, Message};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AgentContext, SubAgent, SubAgentFailure, failed, from_reply};
use crate::mcp_research::prompts::{ANALYST, json_line};
use crate::mcp_research::state::{
    Finding, Perspective, ResearchPhase, SubAgentOutput, SubQuestion, ValidationIssue,
};

/// Asks `model` for a `T` (temperature 0, at most 1,024 tokens, one retry with the
/// problems shown); the error is a short reason for the THINKING log.
pub(crate) async fn ask<T: JsonSchema + DeserializeOwned>(
    model: &Arc<dyn ChatModel>,
    request: String,
) -> Result<T, String> {
    Arc::clone(model)
        .with_options(CallOptions::new().temperature(0.0).max_tokens(1024))
        .with_structured_output::<T>()
        .retries(1)
        .invoke(&[Message::system(ANALYST), Message::user(request)])
        .await
        .map_err(|e| crate::shared::truncate(&e.to_string(), 300))
}

/// The decomposer's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct SubQuestionList {
    /// 2-6 sub-questions, ids `q1`, `q2`, ...
    #[schemars(length(min = 1, max = 6))]
    pub(crate) sub_questions: Vec<SubQuestion>,
}

/// The perspective agent's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct PerspectiveList {
    /// 2-5 research angles.
    #[schemars(length(min = 1, max = 5))]
    pub(crate) perspectives: Vec<Perspective>,
}

/// The extractor's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Extraction {
    /// Claims backed by the documents given (at most 8).
    #[schemars(length(max = 8))]
    pub findings: Vec<Finding>,
}

/// The validator's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ValidationReport {
    /// Contradictions or unsupported claims, by finding index (none when all is well).
    #[schemars(length(max = 10))]
    pub issues: Vec<ValidationIssue>,
}

/// The gap analyzer's reply.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub(crate) struct GapReport {
    /// What the research does not cover yet (at most 5).
    #[schemars(length(max = 5))]
    pub gaps: Vec<String>,
}

/// The `query` argument, or the session's query.
fn query_arg(arguments: &Value, ctx: &AgentContext) -> String {
    arguments["query"]
        .as_str()
        .filter(|q| !q.trim().is_empty())
        .unwrap_or(&ctx.state.input)
        .to_owned()
}

/// The findings the model extracts from `documents` (`(doc_id, text)`); evidence naming
/// other documents and empty claims are dropped.
///
/// # Errors
/// The reason the model's reply was not usable.
pub(crate) async fn extract_findings(
    model: &Arc<dyn ChatModel>,
    query: &str,
    documents: &[(String, String)],
) -> Result<Vec<Finding>, String> {
    if documents.is_empty() {
        return Ok(Vec::new());
    }
    let docs: Vec<Value> = documents
        .iter()
        .map(|(id, text)| serde_json::json!({"doc_id": id, "text": crate::shared::truncate(text, 600)}))
        .collect();
    let extraction: Extraction = ask(
        model,
        format!(
            "Query: {query}\nExtract the claims these documents support that bear on the query, each with the doc_id and a short quote as evidence.\nDOCUMENTS: {}",
            json_line(&docs)
        ),
    )
    .await?;
    Ok(extraction
        .findings
        .into_iter()
        .filter(|f| !f.claim.trim().is_empty())
        .map(|mut f| {
            f.evidence
                .retain(|e| documents.iter().any(|(id, _)| *id == e.doc_id));
            f.confidence = f.confidence.map(|c| c.clamp(0.0, 1.0));
            f
        })
        .collect())
}

/// Decomposer: the query as 2-6 sub-questions (`q1`, `q2`, ...). Argument: `query`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Decomposer;

#[async_trait]
impl SubAgent for Decomposer {
    fn name(&self) -> &'static str {
        "decomposer"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Decomposing
    }

    fn description(&self) -> &'static str {
        "breaks the query into sub-questions. Arguments: query."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let query = query_arg(arguments, ctx);
        let reply: SubQuestionList = match ask(
            &ctx.model,
            format!("Query: {query}\nBreak the query into 2-6 sub-questions with ids q1, q2, ..."),
        )
        .await
        {
            Ok(reply) => reply,
            Err(problem) => return Ok(failed(self.name(), problem)),
        };
        let sub_questions: Vec<SubQuestion> = reply
            .sub_questions
            .into_iter()
            .filter(|q| !q.question.trim().is_empty())
            .enumerate()
            .map(|(at, q)| SubQuestion {
                id: if q.id.trim().is_empty() {
                    format!("q{}", at + 1)
                } else {
                    q.id
                },
                question: q.question,
            })
            .collect();
        Ok(SubAgentOutput {
            agent: self.name().into(),
            note: format!("{} sub-questions", sub_questions.len()),
            sub_questions,
            ..SubAgentOutput::default()
        })
    }
}

/// Perspective: research angles or personas for the query. Argument: `query`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PerspectiveAgent;

#[async_trait]
impl SubAgent for PerspectiveAgent {
    fn name(&self) -> &'static str {
        "perspective"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Planning
    }

    fn description(&self) -> &'static str {
        "proposes research angles or personas for the query. Arguments: query."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let query = query_arg(arguments, ctx);
        let reply = ask::<PerspectiveList>(
            &ctx.model,
            format!("Query: {query}\nPropose 2-5 research angles (name and angle)."),
        )
        .await;
        Ok(from_reply(self.name(), reply, |reply| SubAgentOutput {
            note: format!("{} perspectives", reply.perspectives.len()),
            perspectives: reply.perspectives,
            ..SubAgentOutput::default()
        }))
    }
}

/// Extractor: findings from documents: `doc_ids` among the samples, or the latest
/// samples (at most 10).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Extractor;

#[async_trait]
impl SubAgent for Extractor {
    fn name(&self) -> &'static str {
        "extractor"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Extracting
    }

    fn description(&self) -> &'static str {
        "extracts claims with evidence from sampled documents of earlier iterations. Arguments: doc_ids (optional; default: the latest samples)."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let samples = &ctx.state.samples;
        let wanted: Vec<&str> = arguments["doc_ids"]
            .as_array()
            .map(|ids| ids.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let documents: Vec<(String, String)> = if wanted.is_empty() {
            samples
                .iter()
                .rev()
                .take(10)
                .map(|s| (s.doc_id.clone(), s.content.clone()))
                .collect()
        } else {
            samples
                .iter()
                .filter(|s| wanted.contains(&s.doc_id.as_str()))
                .take(10)
                .map(|s| (s.doc_id.clone(), s.content.clone()))
                .collect()
        };
        if documents.is_empty() {
            return Ok(failed(
                self.name(),
                "no sampled documents to read yet; call the sampler in an earlier iteration",
            ));
        }
        let reply = extract_findings(&ctx.model, &ctx.state.input, &documents).await;
        Ok(from_reply(self.name(), reply, |findings| SubAgentOutput {
            note: format!(
                "{} findings from {} documents",
                findings.len(),
                documents.len()
            ),
            findings,
            ..SubAgentOutput::default()
        }))
    }
}

/// Validator: contradictions and unsupported claims among the findings.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Validator;

#[async_trait]
impl SubAgent for Validator {
    fn name(&self) -> &'static str {
        "validator"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Validating
    }

    fn description(&self) -> &'static str {
        "checks the findings so far for contradictions. No arguments."
    }

    async fn run(
        &self,
        _arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let findings = &ctx.state.findings;
        if findings.is_empty() {
            return Ok(failed(self.name(), "no findings to validate yet"));
        }
        let numbered: Vec<Value> = findings
            .iter()
            .enumerate()
            .map(|(i, f)| serde_json::json!({"finding_idx": i, "claim": f.claim, "evidence": f.evidence.len()}))
            .collect();
        let reply = ask::<ValidationReport>(
            &ctx.model,
            format!(
                "Query: {}\nList contradictions between findings and claims without evidence (finding_idx, issue); none if all is consistent.\nFINDINGS: {}",
                ctx.state.input,
                json_line(&numbered)
            ),
        )
        .await;
        Ok(from_reply(self.name(), reply, |report| {
            let issues: Vec<ValidationIssue> = report
                .issues
                .into_iter()
                .filter(|i| i.finding_idx < findings.len())
                .collect();
            SubAgentOutput {
                note: format!("{} issues in {} findings", issues.len(), findings.len()),
                validation: issues,
                ..SubAgentOutput::default()
            }
        }))
    }
}

/// Gap analyzer: what the research does not cover yet (shown to the planner).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct GapAnalyzer;

#[async_trait]
impl SubAgent for GapAnalyzer {
    fn name(&self) -> &'static str {
        "gap_analyzer"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Planning
    }

    fn description(&self) -> &'static str {
        "lists what the research does not cover yet. No arguments."
    }

    async fn run(
        &self,
        _arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let state = &ctx.state;
        let fields: Vec<&str> = state
            .aggregation_results
            .iter()
            .map(|a| a.field.as_str())
            .collect();
        let reply = ask::<GapReport>(
            &ctx.model,
            format!(
                "Query: {}\nWhat does the research not cover yet?\nSUB-QUESTIONS: {}\nAGGREGATED FIELDS: {}\nFINDINGS: {}",
                state.input,
                json_line(&state.sub_questions),
                json_line(&fields),
                state.findings.len()
            ),
        )
        .await;
        Ok(from_reply(self.name(), reply, |report| SubAgentOutput {
            note: format!("{} gaps", report.gaps.len()),
            gaps: Some(report.gaps),
            ..SubAgentOutput::default()
        }))
    }
}
