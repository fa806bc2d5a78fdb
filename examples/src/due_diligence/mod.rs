//! # due_diligence — the Enhanced Due Diligence research agent (seed 001)
//!
//! A subject (person or organization) plus context goes through a reflection-driven loop:
//! `generate_queries` (strategy model) → `execute_search` (one `Send` per query, in
//! parallel, bounded) → `analyze_and_reflect` (reflection, then an LLM entity merge; the
//! depth is incremented before routing) → route, in the seed's order: max depth, reflection
//! stop, stagnation, else loop. Every finalize path goes through `map_connections` (the
//! entity graph) to `synthesize_report` (18 sections with risk assessment and metadata).
//! Outputs: `reports/{session_id}_report.json` and `.html`, the append-only JSONL audit
//! trail `audit/{session_id}.jsonl`, and `run_summary.json`.
//!
//! The guide page `docs/workflows/due-diligence.md` explains the graph, the state, the
//! models per role, the outputs, the evaluation and the limits.

mod cli;
pub mod evaluate;
mod evidence;
mod facts;
mod graph;
mod input;
mod nodes;
mod offline;
pub(crate) mod prompts;
pub(crate) mod report;
pub mod report_file;
mod runner;
pub mod schemas;
mod state;
mod termination;
mod trail;

pub use cli::{DueDiligenceArgs, run};
pub use graph::build_graph;

pub use input::{Investigation, corpus_dir, personas_path, read_personas};

pub use nodes::{
    Deps, SESSION_ID_KEY, SessionIds, default_prices, select_queries, should_continue_research,
};
pub use offline::offline_model;

pub use runner::{DueDiligenceOptions, DueDiligenceOutcome, run_due_diligence};
pub use state::DueDiligenceState;

pub use termination::TerminationReason;
pub use trail::AuditTrail;
