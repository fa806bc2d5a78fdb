//! The states of the supervisor graph and of its two tool graphs.

use graphkit::State;
use graphkit_llm::Message;
use serde::{Deserialize, Serialize};

use super::event::Event;
use super::history::{HistoryEntry, HistoryUpdate, append_capped};

/// The knobs of a run (the seed's numbers are the defaults). Kept in the state, so a
/// resumed run uses the numbers it started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Tool calls (url_finder, url_crawler, further_event_research; not think_tool)
    /// before the run stops.
    pub max_tool_calls: u32,
    /// From this many events on, the supervisor deepens instead of crawling.
    pub min_events_for_deepening: usize,
    /// Stop when more than this share of events has full details.
    pub full_detail_ratio: f64,
    /// Stop when `events` did not change in this many consecutive tool calls.
    pub no_change_window: usize,
    /// History entries kept; older ones are folded into one summary entry.
    pub history_cap: usize,
    /// Search results url_finder looks at.
    pub url_finder_results: usize,
    /// URLs url_finder keeps.
    pub urls_kept: usize,
    /// Events further_event_research researches per call (the seed: 3-5).
    pub gap_targets: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tool_calls: 5,
            min_events_for_deepening: 5,
            full_detail_ratio: 0.8,
            no_change_window: 2,
            history_cap: 5,
            url_finder_results: 5,
            urls_kept: 3,
            gap_targets: 5,
        }
    }
}

impl Limits {
    /// Checks the knobs.
    ///
    /// # Errors
    /// A message naming the knob and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_tool_calls == 0 {
            return Err("--max-tool-calls must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.full_detail_ratio) {
            return Err("--full-detail-ratio must be between 0 and 1".into());
        }
        if self.no_change_window == 0 {
            return Err("--no-change-window must be at least 1".into());
        }
        if self.history_cap < 2 {
            return Err(
                "--history-cap must be at least 2 (a summary entry plus the latest)".into(),
            );
        }
        if !(1..=10).contains(&self.gap_targets) {
            return Err("--gap-targets must be between 1 and 10 (the seed uses 3-5)".into());
        }
        if self.urls_kept == 0 || self.url_finder_results == 0 {
            return Err("url_finder needs at least 1 result and 1 kept URL".into());
        }
        Ok(())
    }
}

/// The supervisor's state (the seed's "State Definition", plus what the flow needs to
/// decide: the URLs, the calls made, whether each call changed the events, why it stopped).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct BiographyState {
    /// The person (`"Odile Marchetti"`).
    pub person_to_research: String,
    /// The merged events (written whole by the merge step).
    pub events: Vec<Event>,
    /// Events given for an incremental run.
    pub(crate) initial_events: Option<Vec<Event>>,
    /// The history, capped (see [`append_capped`]).
    #[reducer(with = append_capped, update = HistoryUpdate)]
    pub messages: Vec<HistoryEntry>,
    /// url_finder's URLs, in priority order.
    pub urls: Vec<String>,
    /// URLs crawled so far.
    #[reducer(append)]
    pub crawled: Vec<String>,
    /// Tool calls made (think_tool not counted).
    #[reducer(add)]
    pub tool_calls: u32,
    /// Per tool call: did `events` change?
    #[reducer(append)]
    pub events_changed_history: Vec<bool>,
    /// Why the run stopped.
    pub stop_reason: Option<String>,
    /// The supervisor's tool calls (assistant messages calling `url_crawler` or
    /// `further_event_research`) and the tools' replies; the `tools` node runs the last
    /// call.
    #[reducer(merge_by_key)]
    pub tool_messages: Vec<Message>,
    /// The last tool's name, input and output, for think_tool.
    pub(crate) last_tool: HistoryEntry,
    /// Events a data tool returned, waiting to be merged.
    pub(crate) pending_events: Vec<Event>,
    /// The knobs.
    pub limits: Limits,
    /// Model calls made (all roles, tool graphs included).
    #[reducer(add)]
    pub(crate) model_calls: u64,
}

graphkit_tools::messages_state!(BiographyState, tool_messages);

/// A chunk of a crawled page and its category.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CategorizedChunk {
    /// The chunk's text.
    pub text: String,
    /// `life_event`, `works`, or `other`.
    pub(crate) category: String,
}

/// The url_crawler graph's state (seed §1).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct CrawlState {
    /// The person.
    pub person: String,
    /// The page.
    pub url: String,
    /// The site's name, recorded as each event's source.
    pub source: String,
    /// The page split into chunks.
    pub chunks: Vec<String>,
    /// The chunks with their category.
    pub(crate) categorized: Vec<CategorizedChunk>,
    /// The life events as one string (`"14 March 1902 - Born in Trieste; ..."`).
    pub(crate) events_summary: String,
    /// The structured events.
    pub events: Vec<Event>,
    /// Model calls made.
    #[reducer(add)]
    pub(crate) model_calls: u64,
}

/// One event chosen for targeted research.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GapTarget {
    /// The event's id.
    pub(crate) event_id: String,
    /// What is missing (`day`, `location`, ...).
    pub missing: Vec<String>,
    /// The web search to run (`"Odile Marchetti marriage June 1931 details"`).
    pub query: String,
}

/// What a targeted search found for one target.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GapFinding {
    /// The target.
    pub target: GapTarget,
    /// The pages found: `(url, site name, text)`.
    pub pages: Vec<(String, String, String)>,
}

/// The further_event_research graph's state (seed §2).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResearchState {
    /// The person.
    pub person: String,
    /// The events to deepen.
    pub events: Vec<Event>,
    /// How many events to research.
    pub gap_targets: usize,
    /// The events chosen, with their queries.
    pub(crate) targets: Vec<GapTarget>,
    /// What the searches found.
    pub results: Vec<GapFinding>,
    /// Updated events (same ids as the targets).
    pub updates: Vec<Event>,
    /// Model calls made.
    #[reducer(add)]
    pub(crate) model_calls: u64,
}
