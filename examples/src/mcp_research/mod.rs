//! # mcp_research — the MCP research agent (seed 004)
//!
//! The project's own MCP server and its data: [`dataset`], a synthetic dataset of 2,000
//! world events generated from a fixed seed, and [`events_server`], the MCP server whose
//! tools (`analyze_all_events`, `analyze_events_by_conclusion`) group, filter and sample
//! those events (binary `graphkit-events-mcp`, stdio or streamable HTTP).

pub mod dataset;
pub mod events_server;
