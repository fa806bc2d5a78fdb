//! The integration tests of `graphkit-tools`, one binary (one link, one build of the
//! dependencies' generic code) with a module per file: `cargo test -p <crate> --test integration
//! <file>::` runs one file's tests.

mod audit_kill;
mod fetch_guard;
mod from_langgraph;
mod graph_tool;
mod local_corpus_queries;
mod mcp;
#[cfg(feature = "mcp-server")]
mod mcp_server;
mod prebuilt_local;
mod prebuilt_web;
mod react_agent;
mod reflect_tool;
mod sandbox_escape;
mod supervisor;
mod tool_node;
