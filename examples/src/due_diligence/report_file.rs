//! The report file (`reports/{session_id}_report.json`): the 18 sections, the graph's
//! evidence check, and metadata.

use serde::{Deserialize, Serialize};

use super::schemas::{DueDiligenceReport, SourceEvidence};
use super::termination::TerminationReason;

/// The saved report: the model's 18 sections, flattened, and the run's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DueDiligenceReportFile {
    /// The 18 sections.
    #[serde(flatten)]
    pub report: DueDiligenceReport,
    /// Where each entity is named in the sources, and the facts they disagree on (the
    /// graph's check, not the model's; each red flag's passages are in the flag itself).
    #[serde(default)]
    pub evidence: SourceEvidence,
    /// Models, statistics, timing, tokens and cost.
    pub metadata: ReportMetadata,
}

/// The models of each role.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelsUsed {
    /// Queries and reflection.
    pub strategy: String,
    /// Search extraction, entity merge, connections and the report.
    pub search: String,
}

/// Counts over the investigation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Statistics {
    /// Iterations of the loop.
    pub iterations: u64,
    /// Queries executed.
    pub queries: usize,
    /// Searches run.
    pub searches: u64,
    /// Searches that failed.
    pub(crate) failed_searches: usize,
    /// Entities discovered.
    pub entities: usize,
    /// Distinct pages found.
    pub sources: usize,
    /// Red flags found.
    pub red_flags: usize,
    /// Errors recorded.
    pub errors: u64,
}

/// Model usage totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Model calls.
    pub(crate) model_calls: u64,
    /// Input tokens reported by the providers (0 when they report none).
    pub(crate) input_tokens: u64,
    /// Output tokens.
    pub(crate) output_tokens: u64,
    /// Estimated cost in US dollars, for models with a known price.
    pub(crate) estimated_cost_usd: f64,
}

/// The report's metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReportMetadata {
    /// The session.
    pub session_id: String,
    /// The subject.
    pub subject: String,
    /// The context given.
    pub(crate) subject_context: String,
    /// The models per role.
    pub models: ModelsUsed,
    /// Iterations done.
    pub(crate) depth_reached: u32,
    /// Iterations allowed.
    pub max_depth: u32,
    /// Why the loop stopped.
    pub termination_reason: Option<TerminationReason>,
    /// Counts.
    pub statistics: Statistics,
    /// When the investigation started.
    pub start_time: String,
    /// When the report was written.
    pub end_time: String,
    /// Model usage.
    pub usage: UsageTotals,
}
