//! [`DueDiligenceState`]: the seed's `AgentState`, field for field (REQUIREMENTS §001).

use graphkit::State;
use serde::{Deserialize, Serialize};

use super::report_file::DueDiligenceReportFile;
use super::schemas::{
    ConnectionMappingOutput, Entity, Indicator, ReflectionOutput, Source, WebSearchOutput,
    normalize,
};
use super::termination::TerminationReason;

/// One search of one iteration (`search_memory` entry): the query, the model's structured
/// result or the error, and timing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchMemoryEntry {
    /// The depth it ran at.
    pub depth: u32,
    /// The query.
    pub query: String,
    /// The structured result (`None` when the search failed).
    pub output: Option<WebSearchOutput>,
    /// Why it failed.
    pub error: Option<String>,
    /// When it started (RFC 3339).
    pub(crate) started_at: String,
    /// How long it took.
    pub(crate) duration_ms: u64,
}

/// The audit record of one iteration (the seed's `SearchIterationData`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchIterationData {
    /// The depth.
    pub depth: u32,
    /// What the iteration was after (depth 0: broad coverage; later: the query strategy).
    pub(crate) goal: String,
    /// The queries executed.
    pub queries: Vec<String>,
    /// The search model.
    pub model: String,
    /// Entities first found in this iteration.
    pub(crate) entities_discovered: Vec<String>,
    /// Pages found.
    pub sources: Vec<Source>,
    /// Failed searches and other errors.
    pub errors: Vec<String>,
    /// When its first search started (RFC 3339).
    pub(crate) started_at: String,
    /// The sum of its searches' durations.
    pub(crate) duration_ms: u64,
}

/// The risk indicators found so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RiskIndicators {
    /// Red flags.
    pub red_flags: Vec<Indicator>,
    /// Neutral items.
    pub(crate) neutral: Vec<Indicator>,
    /// Positive items.
    pub positive: Vec<Indicator>,
}

impl RiskIndicators {
    /// Reducer: appends each list, skipping items whose text is already there.
    pub fn merge(current: &mut Self, update: Self) {
        fn extend(list: &mut Vec<Indicator>, new: Vec<Indicator>) {
            for item in new {
                let key = normalize(&item.text);
                if !key.is_empty() && !list.iter().any(|i| normalize(&i.text) == key) {
                    list.push(item);
                }
            }
        }
        extend(&mut current.red_flags, update.red_flags);
        extend(&mut current.neutral, update.neutral);
        extend(&mut current.positive, update.positive);
    }
}

/// The entity graph with what `map_connections` read from it.
pub(crate) type EntityGraph = ConnectionMappingOutput;

/// Reducer for `queries_executed`: appends, skipping queries already there (case and
/// whitespace normalized).
pub(crate) fn append_new_queries(current: &mut Vec<String>, update: Vec<String>) {
    for query in update {
        if !current.iter().any(|q| normalize(q) == normalize(&query)) {
            current.push(query);
        }
    }
}

/// The state of one due-diligence investigation (the seed's `AgentState`).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct DueDiligenceState {
    /// Unique per investigation; names the report and the audit trail.
    pub session_id: String,
    /// Who or what is investigated.
    pub subject: String,
    /// What the requester knows about the subject (may be empty).
    pub subject_context: String,
    /// When the investigation started (RFC 3339).
    pub start_time: String,
    /// Iterations done (incremented by `analyze_and_reflect` before routing).
    pub current_depth: u32,
    /// Iterations allowed.
    pub max_depth: u32,
    /// Queries per iteration allowed.
    pub max_queries_per_depth: u32,
    /// Iterations without a new entity that stop the loop.
    pub stagnation_threshold: u32,
    /// The queries of the current iteration (after deduplication).
    pub current_queries: Vec<String>,
    /// Every query executed, in order, without duplicates.
    #[reducer(with = append_new_queries)]
    pub queries_executed: Vec<String>,
    /// The latest reflection's recommendation.
    pub should_continue: bool,
    /// Why the loop stopped (set by the router's finalize path).
    pub termination_reason: Option<TerminationReason>,
    /// One entry per search, all iterations.
    #[reducer(append)]
    pub search_memory: Vec<SearchMemoryEntry>,
    /// One reflection per iteration.
    #[reducer(append)]
    pub reflection_memory: Vec<ReflectionOutput>,
    /// The merged entities (the merge step writes the whole list).
    pub discovered_entities: Vec<Entity>,
    /// The entity graph (written by `map_connections`).
    pub entity_graph: EntityGraph,
    /// Red flags, neutral and positive items (appended, deduplicated by text).
    #[reducer(with = RiskIndicators::merge)]
    pub risk_indicators: RiskIndicators,
    /// One audit record per iteration.
    #[reducer(append)]
    pub search_iterations: Vec<SearchIterationData>,
    /// The entity count after each iteration (for stagnation).
    #[reducer(append)]
    pub entity_count_history: Vec<u32>,
    /// Searches run.
    #[reducer(add)]
    pub search_count: u64,
    /// Errors recorded (failed searches, failed model calls).
    #[reducer(add)]
    pub error_count: u64,
    /// Iterations of the loop completed.
    #[reducer(add)]
    pub iteration_count: u64,
    /// Model calls.
    #[reducer(add)]
    pub model_calls: u64,
    /// Input tokens reported by the providers.
    #[reducer(add)]
    pub input_tokens: u64,
    /// Output tokens reported by the providers.
    #[reducer(add)]
    pub output_tokens: u64,
    /// Estimated cost in US dollars (models with a known price only).
    #[reducer(add)]
    pub estimated_cost_usd: f64,
    /// The report, once synthesized.
    pub report: Option<Box<DueDiligenceReportFile>>,
}

impl DueDiligenceState {
    /// The searches of iteration `depth`.
    pub(crate) fn searches_at(&self, depth: u32) -> impl Iterator<Item = &SearchMemoryEntry> {
        self.search_memory.iter().filter(move |s| s.depth == depth)
    }

    /// `true` when `query` was executed already (case and whitespace normalized).
    pub(crate) fn was_executed(&self, query: &str) -> bool {
        let key = normalize(query);
        self.queries_executed.iter().any(|q| normalize(q) == key)
    }
}
