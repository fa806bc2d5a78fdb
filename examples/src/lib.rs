//! # graphkit-examples
//!
//! The research workflows of graphkit as example graphs, built only on the public API of
//! `graphkit`, `graphkit-llm` and `graphkit-tools`, and the `graphkit-research` CLI that
//! runs them:
//!
//! ```text
//! cargo run -p graphkit-examples --bin graphkit-research -- entity-intel
//! ```
//!
//! Every workflow runs offline by default: a document corpus written for the project
//! (`examples/corpus/`, fictional entities) behind the search and extract tools, SQLite
//! checkpoints in the run directory, and a deterministic offline stand-in for the model.
//! `--model openai:gpt-4o` (or any graphkit-llm spec) runs the same graph on a real model.
//!
//! - [`shared`]: model and checkpointer selection, the corpus, run directories, progress.
//! - [`entity_intel`]: the entity-intel research agent (seed 000).
//! - [`arxiv_research`]: the plan-driven arXiv deep research workflow (seed 002).
//! - [`biography_events`]: the author biography events supervisor (seed 003).
//! - [`due_diligence`]: the Enhanced Due Diligence research agent (seed 001).
//! - [`mcp_research`]: the MCP research agent with sub-agents and an SSE service (seed 004),
//!   and its events MCP server.
//! - `served` (feature `server`): the workflows registered on a `graphkit_server::Server`,
//!   served by the `graphkit-research-server` binary.

pub mod arxiv_research;
pub mod biography_events;
pub mod due_diligence;
pub mod entity_intel;
pub mod mcp_research;
#[cfg(feature = "server")]
pub mod served;
pub mod shared;

/// The guide page `docs/workflows/arxiv-research.md`, compiled so its examples stay true.
#[doc = include_str!("../../docs/workflows/arxiv-research.md")]
#[cfg(doctest)]
pub(crate) struct ArxivResearchGuide;
