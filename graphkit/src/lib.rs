//! # graphkit
//!
//! Stateful agent graphs in Rust, in the spirit of LangGraph: a typed state whose fields
//! merge through reducers, nodes that run in parallel super-steps, static, join and
//! conditional edges, `Send` map-reduce, `Command` routing, streaming, and subgraphs.
//!
//! ```
//! use std::sync::Arc;
//! use graphkit::{END, START, State, StateGraph};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
//! struct Chat {
//!     #[reducer(append)]
//!     log: Vec<String>,
//!     turns: u32,
//! }
//!
//! async fn speak(state: Arc<Chat>) -> ChatUpdate {
//!     ChatUpdate::new().log(vec![format!("turn {}", state.turns)]).turns(state.turns + 1)
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let mut graph = StateGraph::<Chat>::new();
//! graph
//!     .add_node("speak", speak)
//!     .add_edge(START, "speak")
//!     .add_conditional_edges("speak", |s: &Chat| if s.turns < 3 { "speak" } else { END }, ["speak", END]);
//! let graph = graph.compile()?;
//!
//! let done = graph.invoke(ChatUpdate::new()).await?.into_state();
//! assert_eq!(done.log, ["turn 0", "turn 1", "turn 2"]);
//! # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
//! ```
//!
//! The guide in `docs/` explains the concepts (state, reducers, super-steps, edges, `Send`,
//! `Command`) and has how-tos for map-reduce, loops, subgraphs and streaming.

// The derive emits `::graphkit::...` paths; this lets them resolve inside the crate too.
extern crate self as graphkit;

pub mod cache;
pub mod checkpoint;
pub mod clock;
mod command;
mod context;
pub mod error;
mod filter;
pub mod func;
mod graph;
mod interrupt;
#[cfg(feature = "otel")]
pub mod otel;
mod run;
mod snapshot;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub mod sql;
mod state;
pub mod store;

pub use command::{Command, RunInput, SendTo};
pub use context::config::{Durability, RetryPolicy, RunConfig};
pub use context::node_context::NodeContext;
pub use context::run_context::{Provides, RunContext};
pub use context::stream::{Scoped, StreamMode, StreamPayload, StreamWriter};
pub use error::{BuildError, Error};
pub use graph::builder::{CompileOptions, StateGraph};
pub use graph::compiled::{CompiledGraph, SubgraphInfo};
pub use graph::node::{Input, SyncNode};
pub use graph::{END, INPUT, START};
#[doc(hidden)]
pub use interrupt::InterruptSignal;
pub use interrupt::{Interrupt, InterruptKind, Resume};
pub use run::{Outcome, Paused, UpdateAs};
pub use snapshot::StateSnapshot;
pub use state::{AppendUpdate, Keyed, KeyedUpdate, State};

/// What a typical graph uses, for `use graphkit::prelude::*;`: the state derive and trait,
/// the builder and compiled graph, `START`/`END`, the node arguments, commands, run
/// configuration and outcome, and the update types of list and keyed fields.
pub mod prelude {
    pub use crate::{
        AppendUpdate, BuildError, Command, CompileOptions, CompiledGraph, END, Error, Input, Keyed,
        KeyedUpdate, NodeContext, Outcome, Paused, Provides, RunConfig, RunContext, RunInput,
        START, Scoped, SendTo, State, StateGraph, StreamMode, StreamPayload, SyncNode, UpdateAs,
    };
}

/// Reducers: how each state field merges its updates. Fields pick one with
/// `#[reducer(..)]`; these types matter when writing a reducer of your own or applying
/// updates by hand.
pub mod reducers {
    pub use crate::state::{
        Add, Append, AppendUpdate, Field, FieldWrites, Keyed, KeyedOp, KeyedUpdate, KeyedVec,
        LastValue, ListOp, MergeByKey, MergeByVec, Reducer, ReducerKind, StateUpdate, StepWrites,
        Summable, append_capped, merge_by,
    };
}

/// Nodes, routers and edges as the builder sees them: the traits a function must satisfy
/// to be a node ([`IntoNode`](nodes::IntoNode)), what a node may take
/// ([`FromContext`](nodes::FromContext)) and return ([`IntoNodeOutput`](nodes::IntoNodeOutput)),
/// what a router returns ([`IntoRoute`](nodes::IntoRoute)), and per-node options.
pub mod nodes {
    pub use crate::command::{CommandGraph, Goto, NodeName};
    pub use crate::graph::builder::NodeOptions;
    pub use crate::graph::edge::{EdgeSources, IntoRoute};
    pub use crate::graph::node::{
        BoxedNode, FromContext, Input, IntoNode, IntoNodeOutput, NodeOutput, SyncNode,
        SyncNodeWithContext,
    };
}

/// Streaming a run: modes, events and the stream itself.
pub mod streaming {
    pub use crate::context::stream::{
        CheckpointEvent, Namespace, Scoped, StreamEvent, StreamMode, StreamModes, StreamPayload,
        StreamWriter, TaskEvent, TaskEventKind,
    };
    pub use crate::run::RunStream;
}

/// Running: configuration, retries, outcomes and the snapshots of a thread.
pub mod running {
    pub use crate::context::config::{
        DEFAULT_RECURSION_LIMIT, Durability, RetryPolicy, RetryPredicate, RunConfig,
    };
    pub use crate::run::{Outcome, Paused, RunStream, UpdateAs};
    pub use crate::snapshot::{SnapshotTask, StateSnapshot, SubgraphSnapshot};
}

/// `#[derive(State)]`: see [`State`](trait@State).
pub use graphkit_derive::{Provides, State};

/// The README's quickstart, compiled and run as a doctest so it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// Re-exports used by generated code. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::state::{KeepLast, ListField, MergeByField};
    pub use serde;
}

/// docs/concepts.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/concepts.md")]
pub struct ConceptsDoctests;

/// docs/howto-map-reduce.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-map-reduce.md")]
pub struct HowtoMapReduceDoctests;

/// docs/howto-deferred-nodes.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-deferred-nodes.md")]
pub struct HowtoDeferredNodesDoctests;

/// docs/functional-api.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/functional-api.md")]
pub struct FunctionalApiDoctests;
/// docs/howto-node-caching.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-node-caching.md")]
pub struct HowtoNodeCachingDoctests;

/// docs/howto-loops.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-loops.md")]
pub struct HowtoLoopsDoctests;

/// docs/howto-subgraphs.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-subgraphs.md")]
pub struct HowtoSubgraphsDoctests;

/// docs/howto-streaming.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/howto-streaming.md")]
pub struct HowtoStreamingDoctests;

/// docs/persistence.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/persistence.md")]
pub struct PersistenceDoctests;

/// docs/human-in-the-loop.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/human-in-the-loop.md")]
pub struct HumanInTheLoopDoctests;

/// docs/time-travel.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/time-travel.md")]
pub struct TimeTravelDoctests;

/// docs/architecture.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/architecture.md")]
pub struct ArchitectureDoctests;

/// docs/observability.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/observability.md")]
pub struct ObservabilityDoctests;

/// docs/node-errors.md: its fixes compiled, its mistakes checked to fail.
#[cfg(doctest)]
#[doc = include_str!("../../docs/node-errors.md")]
pub struct NodeErrorsDoctests;

/// docs/persistence-backends.md, compiled as doctests (opening the databases only with the
/// `sqlite` and `postgres` features on, and not run).
#[cfg(doctest)]
#[doc = include_str!("../../docs/persistence-backends.md")]
pub struct PersistenceBackendsDoctests;

/// docs/index.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/index.md")]
pub struct IndexDoctests;

/// graphkit/README.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct CrateReadmeDoctests;
