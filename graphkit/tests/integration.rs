//! The integration tests of `graphkit`, one binary (one link, one build of the
//! dependencies' generic code) with a module per file: `cargo test -p <crate> --test integration
//! <file>::` runs one file's tests. The tracing tests have binaries of their own: a tracing
//! subscriber set for one test thread is seen by the callsites of every test in the process.

mod backend_support;
mod building;
mod checkpoint_conformance;
mod compile_fail;
mod computed_reducers;
mod context;
mod crash_recovery;
mod deferred;
mod drawing;
mod execution;
mod functional;
mod indexed_lists;
mod migrations;
mod node_cache;
mod outside_input;
mod persistence;
mod postgres_errors;
mod reducers;
mod sqlite_writer;
mod store_conformance;
mod streaming;
mod subgraph_checkpoints;
mod subgraphs;
