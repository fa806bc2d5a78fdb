//! # graphkit-server
//!
//! Serves graphkit graphs over the LangGraph Platform API, so the official clients
//! (`langgraph-sdk` 0.4.x for Python, `@langchain/langgraph-sdk` 2.0.x for JS, stream
//! protocol v1) work against it unchanged: assistants, threads, runs (background, streamed,
//! waited on, joined, cancelled), resumable streams, crons, webhooks, and the store.
//!
//! ```no_run
//! use graphkit_server::{Server, demo};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! Server::new()
//!     .graph("agent", demo::agent_graph()?)
//!     .serve("127.0.0.1:2024")
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Storage goes through a [`Backend`](backend::Backend): SQLite (embedded, the default) or
//! PostgreSQL (feature `postgres`, several server processes on one database). Runs are
//! executed by workers that claim them from the backend's run queue, so a run started by
//! one process may be executed by another; every stream event is stored with a sequence
//! number, which is what makes streams resumable with `Last-Event-ID`.

mod api;
pub mod backend;
pub mod cli;
mod convert;
pub mod cron;
pub mod demo;
pub mod error;
mod graph;
pub mod ids;
pub mod malloc;
mod metrics;
mod server;
pub mod time;
mod webhook;
mod worker;

pub use error::ServerError;
pub use server::{DEFAULT_BODY_LIMIT, DEFAULT_BODY_READ_TIMEOUT, RunningServer, Server};
pub use webhook::WebhookSettings;
pub use worker::{WorkerSettings, delete_expired, fire_due_crons};

/// The crate README's example, compiled as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// docs/server.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/server.md")]
pub struct ServerGuideDoctests;
