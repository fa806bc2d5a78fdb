//! What a run hands its nodes, below both building (`graph/`) and running (`run/`).
//!
//! A node's signature names these types ([`NodeContext`](node_context::NodeContext),
//! [`RunConfig`](config::RunConfig), [`StreamWriter`](stream::StreamWriter),
//! [`RunContext`](run_context::RunContext)), and a graph declares its nodes'
//! [`RetryPolicy`](config::RetryPolicy); the runner fills them in. Keeping them here lets
//! `graph/` describe nodes without knowing the runner, and `run/` run them.

pub(crate) mod config;
pub(crate) mod node_context;
pub(crate) mod run_context;
pub(crate) mod scratchpad;
pub(crate) mod stream;
pub(crate) mod task_link;
