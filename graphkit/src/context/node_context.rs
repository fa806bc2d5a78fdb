//! [`NodeContext`]: what a running node can ask for besides the state.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::command::Packet;
use crate::context::config::RunConfig;
use crate::context::scratchpad::Scratchpad;
use crate::context::stream::StreamWriter;
use crate::context::task_link::TaskLink;
use crate::error::Error;
use crate::store::Store;

/// The context of one task: its node, step and attempt, the run's config, the stream
/// writer, and (for a `Send` task) its own input.
///
/// A node takes it as an argument, or takes just the part it needs (`StreamWriter`,
/// `RunConfig`, [`Input<T>`](crate::Input)).
#[derive(Clone, Debug)]
pub struct NodeContext {
    pub(crate) node: Arc<str>,
    pub(crate) step: usize,
    pub(crate) attempt: u32,
    pub(crate) config: Arc<RunConfig>,
    pub(crate) writer: StreamWriter,
    pub(crate) input: Option<PacketDebug>,
    pub(crate) namespace: crate::context::stream::Namespace,
    pub(crate) scratchpad: Option<Arc<Scratchpad>>,
    pub(crate) store: Option<Arc<dyn Store>>,
    /// Where the task stands in the thread's checkpoints (with a checkpointer saving per
    /// step): a subgraph run inside the task keeps its own checkpoints there.
    pub(crate) checkpoint: Option<Arc<TaskLink>>,
    /// The names of the subgraph nodes the task's graph runs in, joined by `|` (`None` in
    /// the root graph): where a cached node's entries are namespaced.
    pub(crate) graph_path: Option<Arc<str>>,
}

/// A packet with a `Debug` that shows its type.
#[derive(Clone)]
pub(crate) struct PacketDebug(pub(crate) Packet);

impl std::fmt::Debug for PacketDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packet<{}>", self.0.type_name())
    }
}

impl NodeContext {
    /// A context for calling node code outside a graph (tests, tools run by hand): no
    /// stream, no store, no interrupts, the default config.
    pub fn detached(node: &str) -> Self {
        Self {
            node: node.into(),
            step: 0,
            attempt: 1,
            config: Arc::new(RunConfig::default()),
            writer: StreamWriter::disabled(),
            input: None,
            namespace: Arc::from(Vec::new()),
            scratchpad: None,
            store: None,
            checkpoint: None,
            graph_path: None,
        }
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The super-step (1 for the first step that runs nodes).
    pub fn step(&self) -> usize {
        self.step
    }

    /// The attempt (1 unless a retry policy re-ran the node).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// The stream writer for custom events and model tokens.
    pub fn writer(&self) -> &StreamWriter {
        &self.writer
    }

    /// The run's cancellation token: long nodes can stop early when it fires.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.config.cancel
    }

    /// Pauses the run and asks for a value (human in the loop).
    ///
    /// The first time, this returns an error that the node must pass on with `?`: the run
    /// stops and `invoke` returns [`Outcome::Paused`](crate::Outcome::Paused) with `payload`. When the thread
    /// is resumed with [`Command::resume`](crate::Command::resume), the node runs again
    /// from the top and this call returns the resume value. Several calls in one node are
    /// matched with resume values by order. Needs a checkpointer.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use graphkit::{NodeContext, State};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Draft { text: String, approved: bool }
    /// async fn review(state: Arc<Draft>, ctx: NodeContext) -> Result<DraftUpdate, graphkit::Error> {
    ///     let answer = ctx.interrupt(serde_json::json!({ "question": "approve?", "draft": state.text }))?;
    ///     Ok(DraftUpdate::new().approved(answer == "yes"))
    /// }
    /// ```
    pub fn interrupt(&self, payload: impl serde::Serialize) -> Result<serde_json::Value, Error> {
        let Some(scratchpad) = &self.scratchpad else {
            return Err(Error::NoCheckpointer("interrupt()"));
        };
        let payload = serde_json::to_value(payload).map_err(|source| Error::Serde {
            what: format!("the interrupt payload of `{}`", self.node),
            source,
        })?;
        scratchpad.interrupt(payload)
    }

    /// [`interrupt`](Self::interrupt), with the resume value decoded as `T`.
    pub fn interrupt_as<T: serde::de::DeserializeOwned>(
        &self,
        payload: impl serde::Serialize,
    ) -> Result<T, Error> {
        let value = self.interrupt(payload)?;
        serde_json::from_value(value).map_err(|source| Error::Serde {
            what: format!("the resume value for `{}`", self.node),
            source,
        })
    }

    /// The graph's cross-thread store, if it was compiled with one.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    /// Where this task runs: empty in the root graph, one `"node:step"` entry per
    /// enclosing subgraph.
    pub fn namespace(&self) -> &[Arc<str>] {
        &self.namespace
    }

    /// The `Send` input of this task, if it is one and has type `T`.
    pub fn input<T: 'static>(&self) -> Option<&T> {
        self.input
            .as_ref()
            .and_then(|p| p.0.value().downcast_ref::<T>())
    }

    /// The `Send` input, or an error naming the node and the expected type.
    pub(crate) fn require_input<T: Clone + 'static>(&self) -> Result<T, Error> {
        self.input::<T>().cloned().ok_or_else(|| Error::InputType {
            node: self.node.to_string(),
            expected: std::any::type_name::<T>(),
            found: self.input.as_ref().map_or_else(
                || "no Send input (the node was triggered by an edge)".to_owned(),
                |p| format!("`{}`", p.0.type_name()),
            ),
        })
    }

    /// The run's context value of type `C`, if the run was given one (see
    /// [`RunConfig::with_context`](crate::RunConfig::with_context)).
    pub fn context<C: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        self.config.context::<C>()
    }

    /// The `T` a node of a graph whose context type is `C` reads (what
    /// [`RunContext<T>`](crate::RunContext) holds): the run's own `T`, else what the run's
    /// `C` provides, else the graph's `T`, else what the graph's `C` provides.
    pub(crate) fn provided_context<T, C>(&self) -> Result<Arc<T>, Error>
    where
        T: ?Sized + Send + Sync + 'static,
        C: ?Sized + crate::Provides<T> + Send + Sync + 'static,
    {
        self.config
            .context
            .provided::<T, C>()
            .ok_or_else(|| self.missing_context::<T>())
    }

    /// The error of a node that reads a context value of type `T` the run does not have.
    fn missing_context<T: ?Sized>(&self) -> Error {
        Error::MissingContext {
            node: self.node.to_string(),
            available: self.config.context.type_names(),
            type_name: std::any::type_name::<T>(),
        }
    }

    /// The run's context value of type `C`, or an error naming the node, the type, and the
    /// types the run does have.
    pub fn require_context<C: ?Sized + Send + Sync + 'static>(&self) -> Result<Arc<C>, Error> {
        self.context::<C>()
            .ok_or_else(|| self.missing_context::<C>())
    }
}
