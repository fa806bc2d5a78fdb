//! [`ResearchAgentState`]: the seed's state (REQUIREMENTS 004, "State"), its item types and
//! the keys its merged lists deduplicate by.

use graphkit::State;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The research phases of the seed's `ResearchPhase` (their SSE names are snake case).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResearchPhase {
    /// The planner decides the next batch of sub-agent calls.
    #[default]
    Planning,
    /// The decomposer splits the query into sub-questions.
    Decomposing,
    /// The aggregator computes counts over the MCP tools.
    Aggregating,
    /// The sampler fetches representative documents.
    Sampling,
    /// The scanner reads matching documents for findings.
    Scanning,
    /// Findings are extracted from documents.
    Extracting,
    /// The validator checks findings for contradictions.
    Validating,
    /// The synthesizer writes the report.
    Synthesizing,
    /// The report is written.
    Complete,
}

impl ResearchPhase {
    /// The phase's wire name (`planning`, ...), as in `PHASE:planning`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Planning => "planning",
            Self::Decomposing => "decomposing",
            Self::Aggregating => "aggregating",
            Self::Sampling => "sampling",
            Self::Scanning => "scanning",
            Self::Extracting => "extracting",
            Self::Validating => "validating",
            Self::Synthesizing => "synthesizing",
            Self::Complete => "complete",
        }
    }
}

/// A tool as MCP discovery describes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The JSON Schema of its arguments.
    #[serde(default)]
    pub input_schema: Value,
}

/// One call the planner asks for: a sub-agent by name and its arguments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubAgentCall {
    /// The sub-agent (`aggregator`, `sampler`, `scanner`, `decomposer`, `perspective`,
    /// `extractor`, `synthesizer`, `validator`, `gap_analyzer`).
    #[schemars(length(max = 40))]
    pub(crate) agent_name: String,
    /// Its arguments (see each agent's description in the planner prompt).
    #[serde(default)]
    pub arguments: Value,
}

/// A sub-question of the query (decomposer).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubQuestion {
    /// `q1`, `q2`, ...
    pub id: String,
    /// The question.
    pub question: String,
}

/// A research angle (perspective agent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Perspective {
    /// A short name for the angle or persona.
    pub name: String,
    /// What it looks at.
    pub(crate) angle: String,
}

/// One bucket of an aggregation: a value of the grouped field and how many documents
/// have it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket {
    /// The field's value.
    pub key: String,
    /// How many documents have it.
    pub doc_count: u64,
}

/// An aggregation result: the buckets of `field`, from `tool` (for several tools merged,
/// their names joined by `+`, same-key buckets summed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AggregationResult {
    /// The tool (or tools, joined by `+`).
    pub tool: String,
    /// The grouped field.
    pub field: String,
    /// The buckets, largest first.
    pub buckets: Vec<Bucket>,
    /// Documents in buckets not listed (cut by `top_n`).
    #[serde(default)]
    pub(crate) other_doc_count: u64,
    /// The filters the documents were counted under (as the call gave them), when any: two
    /// aggregations of one field under two time windows are a comparison of the periods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Value>,
}

impl AggregationResult {
    /// The documents counted: the buckets listed and the others.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.doc_count).sum::<u64>() + self.other_doc_count
    }
}

/// A sampled document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// The document id (`_id`).
    pub(crate) doc_id: String,
    /// Its text (title and summary).
    pub content: String,
    /// The bucket it was sampled from.
    pub(crate) stratum: String,
    /// The tool that returned it.
    pub tool: String,
}

/// The key samples merge by: tool and document.
pub(crate) fn sample_key(sample: &Sample) -> Option<(String, String)> {
    Some((sample.tool.clone(), sample.doc_id.clone()))
}

/// A quote backing a finding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Evidence {
    /// The document quoted.
    pub(crate) doc_id: String,
    /// The quote.
    #[schemars(length(max = 400))]
    pub quote: String,
}

/// A claim with its evidence.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The claim.
    #[schemars(length(max = 400))]
    pub claim: String,
    /// The documents that back it.
    #[serde(default)]
    #[schemars(length(max = 5))]
    pub evidence: Vec<Evidence>,
    /// How sure the extractor is (0-1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f32>,
}

/// A problem the validator found with a finding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationIssue {
    /// The index of the finding in `findings`.
    pub(crate) finding_idx: usize,
    /// What is wrong (a contradiction, missing evidence).
    pub issue: String,
}

/// A source for the UI sidebar.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The document's title.
    pub title: String,
    /// Its URL.
    pub url: String,
}

/// The key sources merge by: the URL.
pub(crate) fn source_key(source: &Source) -> Option<String> {
    Some(source.url.clone())
}

/// The key sub-questions merge by: the id.
pub(crate) fn question_key(question: &SubQuestion) -> Option<String> {
    Some(question.id.clone())
}

/// A chart drawn from an aggregation (Chart.js-style:
/// `{type:"bar", title, data:{labels, datasets:[{label, data}]}}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartConfig {
    /// Always `bar`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The chart's title.
    pub title: String,
    /// Labels and datasets.
    pub data: ChartData,
}

/// The data of a [`ChartConfig`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartData {
    /// The bucket keys.
    pub labels: Vec<String>,
    /// One dataset: the counts.
    pub datasets: Vec<ChartDataset>,
}

/// A dataset of a [`ChartData`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartDataset {
    /// What is counted.
    pub label: String,
    /// The counts, in label order.
    pub data: Vec<u64>,
}

impl ChartConfig {
    /// The bar chart of an aggregation.
    pub(crate) fn from_aggregation(aggregation: &AggregationResult) -> Self {
        Self {
            kind: "bar".into(),
            title: format!("Events by {} ({})", aggregation.field, aggregation.tool),
            data: ChartData {
                labels: aggregation.buckets.iter().map(|b| b.key.clone()).collect(),
                datasets: vec![ChartDataset {
                    label: "events".into(),
                    data: aggregation.buckets.iter().map(|b| b.doc_count).collect(),
                }],
            },
        }
    }
}

/// What one sub-agent call produced: the parts of the state it adds to (each agent fills
/// the parts its result type has), plus a note for the THINKING log. `accumulate` merges
/// these into the state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubAgentOutput {
    /// The agent that ran.
    pub agent: String,
    /// A one-line account of what it did (or why it did nothing).
    pub note: String,
    /// `true` when the call could not do its work (bad arguments, an MCP tool error, an
    /// unusable model reply); the run goes on.
    #[serde(default)]
    pub failed: bool,
    /// Decomposer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) sub_questions: Vec<SubQuestion>,
    /// Perspective.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) perspectives: Vec<Perspective>,
    /// Aggregator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregations: Vec<AggregationResult>,
    /// Sampler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
    /// Extractor, scanner, sampler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// Validator.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) validation: Vec<ValidationIssue>,
    /// Gap analyzer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<Vec<String>>,
    /// Documents behind the sources (sampler, scanner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// Documents read (hits and samples).
    #[serde(default)]
    pub docs_processed: u32,
}

/// The state of one research session (the seed's `ResearchAgentState`).
///
/// Reducers: `sub_questions` merge by id, `samples` by tool and document, and
/// `extracted_sources` by URL (a later item with the same key replaces the earlier in
/// place); `perspectives`, `aggregation_results`, `findings`, `validation` and
/// `chart_configs` append; `docs_processed` adds; everything else keeps its last value.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResearchAgentState {
    /// The query.
    pub input: String,
    /// The session id (`research-{uuid}`), also the checkpointer thread.
    pub conversation_id: String,
    /// `anthropic`, `openai`, `ollama`, `offline` or a full model spec, as requested.
    pub llm_provider: String,
    /// The model, as requested (empty: the provider's default).
    pub llm_model: String,
    /// The most planning iterations.
    pub max_iterations: u32,
    /// The tools the sub-agents may use: the request's selection, or every tool found.
    pub enabled_tools: Vec<String>,
    /// What the user asked for (kept to resolve `enabled_tools` at initialization).
    pub requested_tools: Vec<String>,
    /// The tools found by MCP discovery.
    pub available_tools: Vec<ToolSchema>,
    /// Where the research stands.
    pub current_phase: ResearchPhase,
    /// Planning iterations so far.
    pub iteration_count: u32,
    /// The batch the planner chose.
    pub pending_sub_agent_calls: Vec<SubAgentCall>,
    /// The outputs of the last batch, for `accumulate`.
    pub batch_results: Vec<SubAgentOutput>,
    /// `Some("synthesize")` when the planner chose to write the report.
    pub next_action: Option<String>,
    /// The query's sub-questions.
    #[reducer(merge_by = question_key)]
    pub sub_questions: Vec<SubQuestion>,
    /// Research angles.
    #[reducer(append)]
    pub perspectives: Vec<Perspective>,
    /// Aggregations, in the order they were computed.
    #[reducer(append)]
    pub aggregation_results: Vec<AggregationResult>,
    /// Sampled documents.
    #[reducer(merge_by = sample_key)]
    pub samples: Vec<Sample>,
    /// Claims with evidence.
    #[reducer(append)]
    pub findings: Vec<Finding>,
    /// The validator's issues.
    #[reducer(append)]
    pub validation: Vec<ValidationIssue>,
    /// Missing coverage (gap analyzer), shown to the planner.
    pub gaps: Vec<String>,
    /// Sources for the sidebar.
    #[reducer(merge_by = source_key)]
    pub extracted_sources: Vec<Source>,
    /// Charts from the aggregations.
    #[reducer(append)]
    pub chart_configs: Vec<ChartConfig>,
    /// Documents read so far.
    #[reducer(add)]
    pub docs_processed: u32,
    /// The report (markdown starting with `## Research Report`).
    pub final_report: Option<String>,
    /// The report's key findings.
    pub key_findings: Vec<String>,
    /// How confident the research is (0-1): the planner's estimate lowered by the
    /// validator's issues, then the synthesizer's.
    pub overall_confidence: f32,
}
