//! The functional API (LangGraph's `@entrypoint` and `@task`): a workflow written as an
//! async function that calls tasks, with the durability of a graph.
//!
//! An [`Entrypoint`] is a [`CompiledGraph`](crate::CompiledGraph) of one node, made with
//! [`entrypoint`] (or [`entrypoint_final`]) from an async function of the input and an
//! [`EntrypointContext`]. The function calls tasks with
//! [`TaskContext::task`]: each runs concurrently from the moment it is called, and its
//! result is saved to the thread as soon as it finishes. When the entrypoint runs again
//! on the thread's pending step — resumed after an interrupt, continued after a failure
//! or a crash — it runs from the top, and every task call that finished before returns
//! its saved result without running. Calls are identified by task name and call order.
//!
//! Interrupts work inside the entrypoint and inside tasks
//! ([`TaskContext::interrupt`]); the entrypoint can return one value and save another
//! for the next invocation ([`Final`]), which reads it as
//! [`previous`](EntrypointContext::previous). See `docs/functional-api.md`.

mod context;
mod entrypoint;
mod handle;
mod replay;
mod state;

pub use context::{EntrypointContext, TaskContext};
pub use entrypoint::{Entrypoint, entrypoint, entrypoint_final};
pub use handle::TaskHandle;
pub use state::{Data, EntrypointState, EntrypointUpdate, Final};
