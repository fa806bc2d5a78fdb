//! # mcp_research — the MCP research agent with sub-agents and an SSE service (seed 004)
//!
//! A planner chooses batches of sub-agent calls; `execute_sub_agents` runs each batch in
//! parallel (bounded); `accumulate` merges the results (aggregations with same-key
//! buckets summed across tools, samples, findings, sources, chart configs);
//! `check_completion` loops back to planning or goes to synthesis, which writes the
//! report. Nine sub-agents sit in a [`SubAgentRegistry`]; the data ones query the MCP
//! tools of the events server ([`EventsSource`], by default the bundled
//! `graphkit-events-mcp`).
//!
//! The project's own MCP server and its data: [`dataset`], a synthetic dataset of 2,000
//! world events generated from a fixed seed, and [`events_server`], the MCP server whose
//! tools (`analyze_all_events`, `analyze_events_by_conclusion`) group, filter and sample
//! those events (binary `graphkit-events-mcp`, stdio or streamable HTTP).
//!
//! The [`Engine`] runs sessions (threads of the checkpointer) and streams the seed's
//! [`Marker`]s; [`service::router`] serves them as Server-Sent Events
//! (`POST /research`, `GET /research/status/{session_id}`) and [`web`] the page at `/`
//! that shows a run live; the CLI
//! (`graphkit-research mcp-research "query"`) prints them. Offline, [`offline_model`]
//! (a test double) plays the planner and the LLM sub-agents. Guide:
//! `docs/workflows/mcp-research.md`.

pub mod cli;
pub mod dataset;
mod engine;
pub mod events_server;
mod graph;
pub mod markdown;
mod marker;
mod nodes;
pub(crate) mod prompts;
pub mod service;
mod source;
mod standin;
mod state;
pub mod subagents;
pub mod web;

pub use engine::{Engine, EngineConfig, ResearchRequest, Session};

pub use graph::build_graph;

pub use marker::{CompleteStats, Marker};
pub(crate) use nodes::ResearchDeps;
pub use nodes::check_completion;

pub use source::{EventsSource, McpServerSpec, connect};

pub use standin::offline_model;

pub use state::{Bucket, Evidence, Finding, ResearchAgentState, ResearchPhase};
pub use subagents::{AgentContext, DataArgs, SubAgentRegistry, merge_buckets, select_tools};
