//! The integration tests of `examples`, one binary (one link, one build of the
//! dependencies' generic code) with a module per file: `cargo test -p <crate> --test integration
//! <file>::` runs one file's tests.

mod arxiv_research;
mod biography_events;
mod biography_events_cli;
mod cli_errors;
mod common;
mod due_diligence;
mod entity_intel;
mod mcp_events_server;
mod mcp_research;
mod mcp_research_web;
mod output_safety;
mod real_model;
mod research_cli;
mod served_workflows;
mod unseen_inputs;
mod workflow_prompts;
