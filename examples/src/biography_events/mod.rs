//! The biography events workflow (seed 003): a supervisor graph that collects the dated
//! life events of an author. It always starts with `url_finder` (the author's pages on
//! Wikipedia, Britannica and Biography.com), crawls them by calling the `url_crawler`
//! graph as a tool while it has fewer than 5 events, then deepens them by calling the
//! `further_event_research` graph as a tool (targeted searches for missing dates and
//! places).
//! After each tool, `think_tool` reflects and recommends the next step; new events are
//! merged into the known ones (paraphrases matched, details merged preferring primary
//! sources, conflicts flagged). It stops after 5 tool calls, when think_tool says so,
//! when two calls changed nothing, when more than 80% of the events have full details,
//! or when nothing is left to crawl.
//!
//! Outputs (see [`runner`]): `events.json`, `history.json`, `run_summary.json` and
//! `timeline.md` in the run directory. Docs: `docs/workflows/biography-events.md`.

use std::sync::Arc;

use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::SearchBackend;

pub mod cli;
pub(crate) mod crawler;
pub mod event;
pub(crate) mod graph;
pub mod history;
pub mod merge;
pub mod offline;
pub mod prompts;
pub(crate) mod research;
pub mod runner;
pub mod state;
pub(crate) mod supervisor;
pub(crate) mod tools;
pub(crate) mod url_finder;

pub use event::{Event, EventDate};
pub use graph::build_graph;

pub use runner::{BiographyOptions, run_biography_events};
pub use state::{BiographyState, BiographyStateUpdate, Limits};
pub use url_finder::Sites;

/// What the nodes of the graph and of its tool graphs need.
#[derive(Clone)]
pub struct Deps {
    /// The model behind every prompt.
    pub model: Arc<dyn ChatModel>,
    /// The search backend (url_finder, crawling, targeted searches).
    pub search: Arc<dyn SearchBackend>,
    /// The authoritative sites, in priority order.
    pub sites: Sites,
}

impl std::fmt::Debug for Deps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("model", &self.model.model_name())
            .field("sites", &self.sites)
            .finish_non_exhaustive()
    }
}

/// The offline corpus of this workflow (`examples/corpora/biography/`): fictional authors
/// on three sites, plus news pages.
pub fn default_corpus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join("biography")
}

/// The author researched when none is given (fictional, in the offline corpus).
pub(crate) const DEFAULT_PERSON: &str = "Odile Marchetti";
