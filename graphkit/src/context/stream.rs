//! Stream modes, stream events and the writer nodes use to emit their own events.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::state::State;

/// What a run's stream carries; several modes can be on at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StreamMode {
    /// The full state after each super-step.
    Values,
    /// Each node's update, named by node.
    Updates,
    /// Tokens and messages emitted by chat models inside nodes.
    Messages,
    /// Anything a node writes to its [`StreamWriter`].
    Custom,
    /// Task start, end, retry and error, with timing.
    Tasks,
    /// Everything `Tasks` emits plus checkpoints: the full trace.
    Debug,
    /// A checkpoint after each super-step (runs with a checkpointer).
    Checkpoints,
}

impl StreamMode {
    const fn bit(self) -> u8 {
        match self {
            Self::Values => 1,
            Self::Updates => 1 << 1,
            Self::Messages => 1 << 2,
            Self::Custom => 1 << 3,
            Self::Tasks => 1 << 4,
            Self::Debug => 1 << 5 | 1 << 4 | 1 << 6,
            Self::Checkpoints => 1 << 6,
        }
    }
}

/// A set of [`StreamMode`]s.
///
/// ```
/// use graphkit::StreamMode;
/// use graphkit::streaming::StreamModes;
///
/// let modes = StreamModes::from([StreamMode::Updates, StreamMode::Custom]);
/// assert!(modes.contains(StreamMode::Custom));
/// assert!(!modes.contains(StreamMode::Values));
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// No mode at all (what `invoke` uses).
    pub const NONE: Self = Self(0);

    /// `true` when `mode` is on.
    pub const fn contains(self, mode: StreamMode) -> bool {
        let bit = match mode {
            StreamMode::Debug => 1 << 5,
            other => other.bit(),
        };
        self.0 & bit != 0
    }

    /// `true` when no mode is on.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The modes on in both sets.
    #[must_use]
    pub const fn intersect(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    /// Adds a mode.
    #[must_use]
    pub const fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode.bit())
    }
}

impl fmt::Debug for StreamModes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = [
            StreamMode::Values,
            StreamMode::Updates,
            StreamMode::Messages,
            StreamMode::Custom,
            StreamMode::Tasks,
            StreamMode::Debug,
            StreamMode::Checkpoints,
        ];
        f.debug_set()
            .entries(all.into_iter().filter(|m| self.contains(*m)))
            .finish()
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self::NONE.with(mode)
    }
}

impl<const N: usize> From<[StreamMode; N]> for StreamModes {
    fn from(modes: [StreamMode; N]) -> Self {
        modes.into_iter().fold(Self::NONE, Self::with)
    }
}

impl From<&[StreamMode]> for StreamModes {
    fn from(modes: &[StreamMode]) -> Self {
        modes.iter().copied().fold(Self::NONE, Self::with)
    }
}

/// Where an event comes from: empty for the root graph, one entry per subgraph level
/// (`"node:step"`) below it.
pub type Namespace = Arc<[Arc<str>]>;

/// One event of a run's stream.
#[derive(Debug, Clone)]
pub struct StreamEvent<S: State> {
    /// Empty for the root graph; the subgraph path otherwise.
    pub namespace: Namespace,
    /// What happened.
    pub payload: StreamPayload<S>,
}

/// What a [`StreamEvent`] carries.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StreamPayload<S: State> {
    /// The full state after a super-step ([`StreamMode::Values`]), of the root graph or of
    /// a subgraph (see [`Scoped`]).
    Values(Scoped<S>),
    /// One node's update ([`StreamMode::Updates`]), in the root graph or in a subgraph.
    Updates {
        /// The node that returned it.
        node: Arc<str>,
        /// The update.
        update: Scoped<S::Update>,
        /// `true` when the node did not run: the update is the one it made in an earlier
        /// run with the same input, from the node cache (LangGraph's
        /// `__metadata__: {cached: true}`).
        cached: bool,
    },
    /// A token or message from a chat model ([`StreamMode::Messages`]).
    Messages {
        /// The node the model ran in.
        node: Arc<str>,
        /// The chunk or message, as the model layer serialized it.
        payload: Value,
    },
    /// A value a node wrote to its [`StreamWriter`] ([`StreamMode::Custom`]).
    Custom {
        /// The node that wrote it.
        node: Arc<str>,
        /// The value.
        payload: Value,
    },
    /// A task started, ended, failed or is being retried ([`StreamMode::Tasks`]).
    Task(TaskEvent),
    /// A checkpoint was saved ([`StreamMode::Checkpoints`]).
    Checkpoint(CheckpointEvent),
}

/// A state or an update, from the root graph (typed) or from a subgraph. A subgraph's
/// state type is its own, so its data comes as JSON; [`StreamEvent::namespace`] says which
/// subgraph. Match `Scoped::Root(update)` for the root graph's data only.
///
/// ```
/// use graphkit::streaming::Scoped;
///
/// let root: Scoped<u32> = Scoped::Root(7);
/// let child: Scoped<u32> = Scoped::Subgraph(serde_json::json!({"n": 1}));
/// assert_eq!(root.root(), Some(&7));
/// assert_eq!(child.to_json()["n"], 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Scoped<T> {
    /// The root graph's own data, typed.
    Root(T),
    /// A subgraph's data, as JSON.
    Subgraph(Value),
}

impl<T> Scoped<T> {
    /// The root graph's data, or `None` for a subgraph's.
    pub fn root(&self) -> Option<&T> {
        match self {
            Self::Root(data) => Some(data),
            Self::Subgraph(_) => None,
        }
    }

    /// The root graph's data, or `None` for a subgraph's.
    pub fn into_root(self) -> Option<T> {
        match self {
            Self::Root(data) => Some(data),
            Self::Subgraph(_) => None,
        }
    }
}

impl<T: serde::Serialize> Scoped<T> {
    /// The data as JSON, whatever the level (`Null` if the root's data cannot be
    /// serialized, which a derived state never fails).
    pub fn to_json(&self) -> Value {
        match self {
            Self::Root(data) => serde_json::to_value(data).unwrap_or(Value::Null),
            Self::Subgraph(value) => value.clone(),
        }
    }

    /// The data as the type `U` (a subgraph's own state or update type, when you know
    /// it; the root's data is converted through JSON).
    ///
    /// # Errors
    /// When the data does not deserialize as `U`.
    pub fn decode<U: serde::de::DeserializeOwned>(&self) -> Result<U, serde_json::Error> {
        match self {
            Self::Root(data) => serde_json::from_value(serde_json::to_value(data)?),
            Self::Subgraph(value) => U::deserialize(value),
        }
    }
}

/// A task's life cycle event.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent {
    /// The super-step (1 for the first step that runs nodes).
    pub step: usize,
    /// The node.
    pub node: Arc<str>,
    /// The task's position in the step's apply order.
    pub index: usize,
    /// What happened.
    pub kind: TaskEventKind,
}

/// The kind of a [`TaskEvent`].
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEventKind {
    /// The task started.
    Start,
    /// The task finished successfully.
    End {
        /// Wall time of the successful attempt and any retries before it.
        duration: Duration,
    },
    /// An attempt failed and will be retried after `delay`.
    Retry {
        /// The attempt that failed (1-based).
        attempt: u32,
        /// Its error.
        error: String,
        /// The wait before the next attempt.
        delay: Duration,
    },
    /// The task failed for good.
    Error {
        /// Wall time until it failed.
        duration: Duration,
        /// The error.
        error: String,
    },
}

/// A saved checkpoint, as reported on the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointEvent {
    /// The thread.
    pub thread_id: String,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The super-step it closes.
    pub step: i64,
    /// The nodes that run next.
    pub next: Vec<Arc<str>>,
}

/// An event without the state type, as it travels from a node (or a subgraph) to the
/// run that owns the stream.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    pub(crate) namespace: Namespace,
    pub(crate) payload: RawPayload,
}

#[derive(Debug, Clone)]
pub(crate) enum RawPayload {
    Messages {
        node: Arc<str>,
        payload: Value,
    },
    Custom {
        node: Arc<str>,
        payload: Value,
    },
    Task(TaskEvent),
    Values(Value),
    Updates {
        node: Arc<str>,
        update: Value,
        cached: bool,
    },
    Checkpoint(CheckpointEvent),
}

impl<S: State> From<RawEvent> for StreamEvent<S> {
    fn from(event: RawEvent) -> Self {
        let payload = match event.payload {
            RawPayload::Messages { node, payload } => StreamPayload::Messages { node, payload },
            RawPayload::Custom { node, payload } => StreamPayload::Custom { node, payload },
            RawPayload::Task(task) => StreamPayload::Task(task),
            RawPayload::Values(value) => StreamPayload::Values(Scoped::Subgraph(value)),
            RawPayload::Updates {
                node,
                update,
                cached,
            } => StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(update),
                cached,
            },
            RawPayload::Checkpoint(c) => StreamPayload::Checkpoint(c),
        };
        Self {
            namespace: event.namespace,
            payload,
        }
    }
}

/// Receives raw events; the root run turns them into typed stream events.
pub(crate) type EventSink = Arc<dyn Fn(RawEvent) + Send + Sync>;

/// The sink and modes of a run, shared by every task of it.
#[derive(Clone)]
pub(crate) struct StreamTarget {
    pub(crate) sink: EventSink,
    pub(crate) modes: StreamModes,
    pub(crate) namespace: Namespace,
}

impl StreamTarget {
    pub(crate) fn emit(&self, payload: RawPayload) {
        (self.sink)(RawEvent {
            namespace: Arc::clone(&self.namespace),
            payload,
        });
    }
}

tokio::task_local! {
    static CURRENT_WRITER: StreamWriter;
}

/// A node's handle on the run's stream: custom values and model messages.
///
/// Writing is a no-op when the run does not stream the matching mode, so nodes can write
/// unconditionally. Inside a node, [`StreamWriter::current`] finds the writer without
/// passing it around, which is how the model layer forwards tokens.
///
/// ```
/// use graphkit::StreamWriter;
///
/// let writer = StreamWriter::disabled();
/// writer.custom(serde_json::json!({"progress": 0.5})); // nobody listens: nothing happens
/// assert!(StreamWriter::current().is_none());          // not inside a node
/// ```
#[derive(Clone, Default)]
pub struct StreamWriter {
    inner: Option<Arc<WriterInner>>,
}

struct WriterInner {
    target: StreamTarget,
    node: Arc<str>,
}

impl fmt::Debug for StreamWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Some(inner) => f
                .debug_struct("StreamWriter")
                .field("node", &inner.node)
                .field("modes", &inner.target.modes)
                .finish(),
            None => f.write_str("StreamWriter(disabled)"),
        }
    }
}

impl StreamWriter {
    /// A writer that drops everything.
    pub fn disabled() -> Self {
        Self { inner: None }
    }

    pub(crate) fn new(target: StreamTarget, node: Arc<str>) -> Self {
        if target.modes.is_empty() {
            return Self::disabled();
        }
        Self {
            inner: Some(Arc::new(WriterInner { target, node })),
        }
    }

    /// The writer of the node running on this task, if any.
    pub fn current() -> Option<Self> {
        CURRENT_WRITER.try_with(Clone::clone).ok()
    }

    /// Runs `future` with `self` as the [`current`](Self::current) writer.
    pub(crate) async fn scope<F: Future>(self, future: F) -> F::Output {
        CURRENT_WRITER.scope(self, future).await
    }

    /// Runs `f` with `self` as the [`current`](Self::current) writer.
    #[inline]
    pub(crate) fn sync_scope<R>(self, f: impl FnOnce() -> R) -> R {
        CURRENT_WRITER.sync_scope(self, f)
    }

    /// `true` when the run streams `mode`.
    pub fn enabled(&self, mode: StreamMode) -> bool {
        self.inner
            .as_ref()
            .is_some_and(|i| i.target.modes.contains(mode))
    }

    /// The node this writer belongs to.
    pub fn node(&self) -> Option<&str> {
        self.inner.as_ref().map(|i| &*i.node)
    }

    /// Emits a custom value ([`StreamMode::Custom`]).
    pub fn custom(&self, value: impl Serialize) {
        self.send(StreamMode::Custom, value, |node, payload| {
            RawPayload::Custom { node, payload }
        });
    }

    /// Emits a chat-model token or message ([`StreamMode::Messages`]).
    pub fn message(&self, value: impl Serialize) {
        self.send(StreamMode::Messages, value, |node, payload| {
            RawPayload::Messages { node, payload }
        });
    }

    fn send(
        &self,
        mode: StreamMode,
        value: impl Serialize,
        wrap: impl FnOnce(Arc<str>, Value) -> RawPayload,
    ) {
        let Some(inner) = &self.inner else { return };
        if !inner.target.modes.contains(mode) {
            return;
        }
        match serde_json::to_value(value) {
            Ok(payload) => inner.target.emit(wrap(Arc::clone(&inner.node), payload)),
            Err(err) => {
                tracing::warn!(node = %inner.node, %err, "stream value could not be serialized; dropped")
            }
        }
    }

    pub(crate) fn target(&self) -> Option<&StreamTarget> {
        self.inner.as_ref().map(|i| &i.target)
    }
}
