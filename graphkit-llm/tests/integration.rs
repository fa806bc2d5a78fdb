//! The integration tests of `graphkit-llm`, one binary (one link, one build of the
//! dependencies' generic code) with a module per file: `cargo test -p <crate> --test integration
//! <file>::` runs one file's tests.

mod anthropic;
mod common;
mod context_model;
mod graph_stream;
mod hostile_servers;
mod local_llm;
mod ollama;
mod openai;
mod reliability;
mod standin_graph;
mod structured;
