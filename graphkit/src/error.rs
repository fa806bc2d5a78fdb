//! The crate's error type.

use std::time::Duration;

/// A boxed error from user code (a node, a router, a tool).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What running a compiled graph (invoking, streaming, reading or updating its threads)
/// can fail with. Building a graph fails with [`BuildError`]; a checkpointer or store with
/// [`StorageError`], which a run passes on as [`Error::Storage`].
///
/// Messages name the node or field involved and say what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A checkpoint namespace given to read a subgraph's checkpoints does not lead to a
    /// subgraph node of this graph.
    #[error(
        "checkpoint namespace `{namespace}` names `{node}`, which is not a subgraph node here; take the namespace from `SnapshotTask::checkpoint_ns` of this graph's `get_state`"
    )]
    NotASubgraph {
        /// The namespace given.
        namespace: String,
        /// The node (or namespace part) it names.
        node: String,
    },

    /// An argument names a node the graph does not have (`update_state`'s `as_node`,
    /// `RunConfig::interrupt_before`).
    #[error(
        "{context} names node `{node}`, which is not a node of this graph; use one of its node names"
    )]
    UnknownNode {
        /// Where the name was used.
        context: String,
        /// The missing node.
        node: String,
    },

    /// Another run holds the thread.
    #[error(
        "thread `{0}` is busy: another run is using it; wait for it to finish or use another thread id"
    )]
    ThreadBusy(String),

    /// Two tasks of one super-step wrote the same last-value field.
    #[error(
        "nodes `{first}` and `{second}` both wrote field `{field}` in the same super-step; give the field a reducer (for example #[reducer(append)]) or let only one of them write it"
    )]
    InvalidConcurrentUpdate {
        /// The field.
        field: &'static str,
        /// The task that wrote it first.
        first: String,
        /// The task that wrote it again.
        second: String,
    },

    /// An `#[reducer(add)]` field's sum does not fit its type.
    #[error(
        "field `{field}` (#[reducer(add)]) would overflow its type, so the step that wrote it fails; use a wider type (u64, i128, f64) or check the deltas written to it"
    )]
    AddOverflow {
        /// The field.
        field: &'static str,
    },

    /// The run took more super-steps than allowed.
    #[error(
        "recursion limit of {limit} super-steps reached without finishing; if the graph is meant to run longer, raise it with `RunConfig::recursion_limit`, otherwise check the loop's exit condition"
    )]
    RecursionLimit {
        /// The limit in force.
        limit: usize,
    },

    /// `update_state` without `as_node` on a checkpoint whose last step had several writers.
    #[error(
        "update_state without as_node is ambiguous: the last step of checkpoint `{checkpoint_id}` was written by {writers:?}; pass as_node (one of them, another node, or INPUT)"
    )]
    AmbiguousUpdate {
        /// The checkpoint written on.
        checkpoint_id: String,
        /// The nodes that wrote its last step.
        writers: Vec<String>,
    },

    /// A node asked for a run context value of a type the run was not given.
    #[error(
        "node `{node}` reads the context `{type_name}`, but neither the graph nor the run has a value of that type (they have: {}); give one with `CompiledGraph::with_context(...)` or `RunConfig::with_context(...)`. Types match exactly: for a trait object, give the value with `with_shared_context::<dyn Trait>(..)`",
        if available.is_empty() { "none".to_owned() } else { available.join(", ") }
    )]
    MissingContext {
        /// The node.
        node: String,
        /// The type it asked for.
        type_name: &'static str,
        /// The types the graph and the run have values of.
        available: Vec<&'static str>,
    },

    /// A graph declared a context type (`StateGraph<S, C>`) and a run started with no
    /// value of it.
    #[error(
        "the graph's nodes read the context `{type_name}` (its `StateGraph<_, {type_name}>`), but neither the graph nor the run has a value of it (they have: {}); give one with `CompiledGraph::with_context(...)` once, or `RunConfig::with_context(...)` per run (for a trait object: `with_shared_context::<dyn Trait>(..)`)",
        if available.is_empty() { "none".to_owned() } else { available.join(", ") }
    )]
    ContextNotGiven {
        /// The graph's context type.
        type_name: &'static str,
        /// The types the graph and the run have values of.
        available: Vec<&'static str>,
    },

    /// A run's input cannot start a run (see the message).
    #[error("invalid run input: {0}")]
    InvalidRunInput(String),

    /// A run's [`RunConfig`](crate::RunConfig) asks for something no run can do.
    #[error("invalid run config: {0}")]
    InvalidRunConfig(String),

    /// A node returned an error (after its retries, if any).
    #[error("node `{node}` failed after {attempts} attempt(s): {source}")]
    NodeFailed {
        /// The node.
        node: String,
        /// How many times it ran.
        attempts: u32,
        /// The node's error.
        #[source]
        source: BoxError,
    },

    /// A task of a functional-API entrypoint returned an error or panicked.
    #[error("task `{task}` failed: {source}")]
    TaskFailed {
        /// The task call: its name and call order (`name#0` for the first call).
        task: String,
        /// The task's error (or its panic message).
        #[source]
        source: BoxError,
    },

    /// A node ran longer than its timeout.
    #[error("node `{node}` timed out after {timeout:?}; raise its timeout or make it faster")]
    NodeTimeout {
        /// The node.
        node: String,
        /// The timeout in force.
        timeout: Duration,
    },

    /// A node panicked.
    #[error("node `{node}` panicked: {message}")]
    NodePanicked {
        /// The node.
        node: String,
        /// The panic message.
        message: String,
    },

    /// A router (conditional edge) failed or panicked.
    #[error("the router after node `{node}` failed: {message}")]
    RouterFailed {
        /// The node whose conditional edge failed.
        node: String,
        /// What went wrong.
        message: String,
    },

    /// A router or `Command` sent the run to a node that does not exist.
    #[error(
        "`{from}` routed to `{target}`, which is not a node of this graph; return one of its nodes or END"
    )]
    UnknownTarget {
        /// The node whose router or command chose the target.
        from: String,
        /// The unknown target.
        target: String,
    },

    /// A router chose a target outside the targets it declared.
    #[error(
        "the router after `{from}` returned `{target}`, which is not among its declared targets {declared:?}; add it to the declared targets"
    )]
    UndeclaredTarget {
        /// The node whose router chose the target.
        from: String,
        /// The target.
        target: String,
        /// The declared targets.
        declared: Vec<String>,
    },

    /// One field was overwritten (cleared or replaced) twice in one super-step.
    #[error(
        "field `{field}` was overwritten (cleared or replaced) by `{first}` and again by `{second}` in one step; overwrite it once per step, or append instead"
    )]
    SecondOverwrite {
        /// The field.
        field: &'static str,
        /// The first writer (a node, or `input`).
        first: String,
        /// The second writer.
        second: String,
    },

    /// An update removed a key (a message id, say) that the field does not hold.
    #[error(
        "an update removes {key} from field `{field}`, which holds no item with that key; remove only keys that are there"
    )]
    RemovedKeyNotFound {
        /// The field.
        field: &'static str,
        /// The key, as `Debug` prints it.
        key: String,
    },

    /// A router with a path map returned a label the map does not have.
    #[error(
        "the router after `{from}` returned the label `{label}`, which its path map does not have (labels: {labels:?}); add it to the path map"
    )]
    UnknownRouteLabel {
        /// The node whose router chose the label.
        from: String,
        /// The label.
        label: String,
        /// The labels of the path map.
        labels: Vec<String>,
    },

    /// A `Send` task's input was not of the type its node extracts.
    #[error(
        "node `{node}` takes a Send input of type `{expected}` but got {found}; send it that type (integer literals default to i32: write `5u32`)"
    )]
    InputType {
        /// The node.
        node: String,
        /// The expected type.
        expected: &'static str,
        /// What it got: a type name, or "no Send input".
        found: String,
    },

    /// A `Command::to_parent()` reached a graph that is not running as a subgraph, or a
    /// subgraph whose parent has another state type.
    #[error("node `{node}` returned Command::to_parent(), but {reason}")]
    NoParentGraph {
        /// The node.
        node: String,
        /// Why the command cannot be delivered.
        reason: &'static str,
    },

    /// Internal: a parent command travelling up from a subgraph.
    #[doc(hidden)]
    #[error("a Command::to_parent() escaped its subgraph node `{node}`")]
    ParentCommand {
        /// The subgraph node that produced it.
        node: String,
        /// The command (a `Command<S>` of the parent's state type).
        command: ParentCommand,
    },

    /// A run needs a checkpointer for this (interrupts, `get_state`, resuming).
    #[error(
        "{0} needs a checkpointer; compile the graph with `compile_with(CompileOptions::new().checkpointer(...))`"
    )]
    NoCheckpointer(&'static str),

    /// A run with a checkpointer was started without a thread id.
    #[error(
        "this graph has a checkpointer, so every run needs a thread: pass `RunConfig::new().thread_id(\"...\")`"
    )]
    MissingThreadId,

    /// The thread or checkpoint asked for does not exist.
    #[error("thread `{thread_id}` has no checkpoint {}", checkpoint_id.as_deref().map_or_else(|| "yet".to_owned(), |id| format!("`{id}`")))]
    CheckpointNotFound {
        /// The thread.
        thread_id: String,
        /// The checkpoint, if one was named.
        checkpoint_id: Option<String>,
    },

    /// A blocking entry point was called from inside an async runtime.
    #[error(
        "a blocking graphkit call (invoke_blocking) ran inside an async runtime, where it would stall it; use the async method (invoke) instead"
    )]
    BlockingInAsync,

    /// The runtime for a blocking call could not be built.
    #[error("could not start a tokio runtime for a blocking call: {0}")]
    Runtime(String),

    /// A run that was expected to finish paused on interrupts ([`Outcome::finished`](crate::Outcome::finished)).
    #[error("the run on thread `{thread_id}` paused on {} interrupt(s) ({}) where it was expected to finish; handle `Outcome::Paused`, or resume dynamic interrupts with `Command::resume(...)` and static ones with `RunInput::Continue` on the same thread", interrupts.len(), interrupts.iter().map(|i| format!("`{}` in `{}`", i.id, i.node)).collect::<Vec<_>>().join(", "))]
    NotFinished {
        /// The thread.
        thread_id: String,
        /// The pending interrupts.
        interrupts: Vec<crate::interrupt::Interrupt>,
    },

    /// Not an error: a node pausing on `interrupt(...)`, on its way out through `?` (the run
    /// turns it into [`Outcome::Paused`](crate::Outcome::Paused)). Not part of the API: do
    /// not match it; [`Error::pause_payload`] tells a pause from a failure.
    #[doc(hidden)]
    #[error("node paused on interrupt #{} (pass this error on with `?`; the run needs a checkpointer to pause)", .0.index)]
    Interrupt(crate::interrupt::InterruptSignal),

    /// A resume did not match the pending interrupts.
    #[error("cannot resume thread `{thread_id}`: {message}")]
    BadResume {
        /// The thread.
        thread_id: String,
        /// What does not match.
        message: String,
    },

    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,

    /// A value (state, an interrupt payload or a resume value) could not be serialized or deserialized.
    #[error("could not (de)serialize {what}: {source}")]
    Serde {
        /// What was being converted.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },

    /// A checkpointer or store failed while the run used it.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// What [`StateGraph::compile`](crate::StateGraph::compile) finds wrong with a graph's
/// structure. Nothing here can happen once a graph is compiled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A node name was used twice.
    #[error("node `{0}` is added twice; give each node a unique name")]
    DuplicateNode(String),

    /// A node used a reserved name.
    #[error("`{0}` is a reserved name (START, END and INPUT are built in); rename the node")]
    ReservedName(String),

    /// A node name is empty or contains characters that break drawings and namespaces.
    #[error("node name `{0}` is invalid: use a non-empty name without `:`, `|` or newlines")]
    InvalidName(String),

    /// An edge, router or option names a node that was never added.
    #[error(
        "{context} names node `{node}`, which does not exist; add it with `add_node(\"{node}\", ...)` or fix the name"
    )]
    UnknownNode {
        /// Where the name was used (for example "edge from `plan`").
        context: String,
        /// The missing node.
        node: String,
    },

    /// Nothing starts at START.
    #[error(
        "the graph has no entry point; add `add_edge(START, \"first_node\")` or a conditional edge from START"
    )]
    NoEntry,

    /// A node cannot be reached from START.
    #[error(
        "node `{0}` cannot be reached from START; add an edge into it, declare it as a router target, or remove it"
    )]
    Unreachable(String),

    /// A loop of static edges that can never end.
    #[error(
        "nodes {0} form a loop of static edges that never reaches END; make one of those edges conditional"
    )]
    EndlessLoop(String),

    /// A node can never reach END.
    #[error(
        "node `{0}` has no path to END; add an edge (or a declared router target) that leads to END"
    )]
    NoPathToEnd(String),

    /// An edge that cannot exist (out of END, into START, a join without sources).
    #[error("invalid edge: {0}")]
    InvalidEdge(String),
}

/// What a [`Checkpointer`](crate::checkpoint::Checkpointer) or a
/// [`Store`](crate::store::Store) can fail with. A run passes it on as
/// [`Error::Storage`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The checkpoint or store backend failed (database unreachable, disk full, ...).
    #[error("{backend} failed: {message}")]
    Backend {
        /// Which backend ("sqlite checkpointer", "postgres store", ...).
        backend: &'static str,
        /// The backend's error.
        message: String,
    },

    /// A store namespace part or key is invalid.
    #[error(
        "invalid store {0}: namespace parts and keys must be non-empty and free of control characters"
    )]
    InvalidStoreKey(String),

    /// A stored checkpoint could not be read (corrupt, truncated, or the state type changed).
    #[error(
        "checkpoint `{checkpoint_id}` of thread `{thread_id}` cannot be read: {message}; fork from an earlier checkpoint or delete the thread"
    )]
    CorruptCheckpoint {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// What is wrong.
        message: String,
    },

    /// A checkpoint was written by a newer graphkit.
    #[error(
        "checkpoint `{checkpoint_id}` of thread `{thread_id}` has format version {found}, but this build reads up to {supported}; upgrade graphkit to read it"
    )]
    CheckpointVersion {
        /// The thread.
        thread_id: String,
        /// The checkpoint.
        checkpoint_id: String,
        /// The version found.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },

    /// A fenced saver refused a write: its [`WriteFence`](crate::checkpoint::WriteFence)
    /// no longer passes (the lease it stands for was taken over or ended). The writer must
    /// stop; nothing it writes lands.
    #[error(
        "{doing} refused: {holder} no longer holds its lease (another worker took it over, or the run ended or was deleted); stop writing for it"
    )]
    Fenced {
        /// Whose writes the fence guards.
        holder: String,
        /// The write refused.
        doing: String,
    },

    /// A value could not be encoded for storage or decoded from it.
    #[error("could not (de)serialize {what}: {source}")]
    Serde {
        /// What was being converted.
        what: String,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
}

impl StorageError {
    /// A backend failure: `backend` names it ("sqlite checkpointer", "postgres store", ...).
    pub fn backend(backend: &'static str, message: impl std::fmt::Display) -> Self {
        Self::Backend {
            backend,
            message: message.to_string(),
        }
    }
}

/// What setting up or flushing the OpenTelemetry exporter can fail with (feature `otel`).
#[derive(Debug, thiserror::Error)]
#[error("telemetry: {0}; check the OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT) and headers")]
pub struct TelemetryError(pub(crate) String);

impl Error {
    /// The payload a node paused with, when this is a node's pause passing through `?`
    /// rather than a failure (for code that runs a graph inside a task and must tell the
    /// two apart, such as a graph called as a tool).
    pub fn pause_payload(&self) -> Option<&serde_json::Value> {
        match self {
            Self::Interrupt(signal) => Some(signal.payload()),
            _ => None,
        }
    }

    /// Whether the same call could succeed when tried again: a storage backend's failure, a
    /// busy thread, a timeout or runtime trouble may pass; a programming or input error (a
    /// missing context, a bad update, an unknown node) fails the same way every time. A
    /// failed node's error is judged by what failed inside it. [`RetryPolicy`]'s default
    /// rule retries only errors that may pass.
    ///
    /// [`RetryPolicy`]: crate::RetryPolicy
    pub fn may_pass(&self) -> bool {
        match self {
            Self::Storage(StorageError::Backend { .. })
            | Self::ThreadBusy(_)
            | Self::NodeTimeout { .. }
            | Self::Runtime(_) => true,
            Self::NodeFailed { source, .. } | Self::TaskFailed { source, .. } => {
                source.downcast_ref::<Self>().is_none_or(Self::may_pass)
            }
            _ => false,
        }
    }
}

/// `Result` with [`Error`].
///
/// Only at this path (`graphkit::error::Result`), not at the crate root: `use graphkit::*` keeps the
/// prelude's `Result`, and glob imports of several graphkit crates do not collide.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A `Command` for the parent graph, type-erased while it travels up.
pub struct ParentCommand(pub(crate) Box<dyn std::any::Any + Send + Sync>);

impl std::fmt::Debug for ParentCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ParentCommand(..)")
    }
}
