//! # graphkit-server
//!
//! Serves graphkit graphs over the LangGraph Platform API, so the official clients
//! (`langgraph-sdk` 0.4.x for Python, `@langchain/langgraph-sdk` 2.0.x for JS, stream
//! protocol v1) work against it unchanged: assistants, threads, runs (background, streamed,
//! waited on, joined, cancelled), resumable streams, and the store.
//!
//! Storage goes through a [`Backend`](backend::Backend): SQLite (embedded, the default) or
//! PostgreSQL (feature `postgres`, several server processes on one database).

pub mod backend;
mod error;
pub mod ids;
pub mod time;

pub use error::{Result, ServerError};
