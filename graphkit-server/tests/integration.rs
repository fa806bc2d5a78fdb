//! The integration tests of `graphkit-server`, one binary (one link, one build of the
//! dependencies' generic code) with a module per file: `cargo test -p <crate> --test integration
//! <file>::` runs one file's tests.

mod backend_contract;
mod bad_input;
mod common;
mod cors;
mod followers;
#[macro_use]
mod http_contract;
// After `http_contract`, whose `over_each_backend!` it uses.
mod event_streaming;
mod http_fuzz;
mod http_layer;
mod llm_messages;
mod mcp;
mod openapi;
mod runs;
mod startup;
mod subgraphs;
mod thread_stream;
mod threads_and_assistants;
