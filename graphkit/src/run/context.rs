//! [`NodeContext`]: what a running node can ask for besides the state.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::command::Packet;
use crate::error::Error;
use crate::run::config::RunConfig;
use crate::run::stream::StreamWriter;

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
    pub(crate) namespace: crate::run::stream::Namespace,
}

/// A packet with a `Debug` that shows its type.
#[derive(Clone)]
pub(crate) struct PacketDebug(pub(crate) Packet);

impl std::fmt::Debug for PacketDebug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packet<{}>", self.0.type_name)
    }
}

impl NodeContext {
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

    /// Where this task runs: empty in the root graph, one `"node:step"` entry per
    /// enclosing subgraph.
    pub fn namespace(&self) -> &[Arc<str>] {
        &self.namespace
    }

    /// The `Send` input of this task, if it is one and has type `T`.
    pub fn input<T: 'static>(&self) -> Option<&T> {
        self.input.as_ref().and_then(|p| p.0.value.downcast_ref::<T>())
    }

    /// The `Send` input, or an error naming the node and the expected type.
    pub(crate) fn require_input<T: Clone + 'static>(&self) -> Result<T, Error> {
        self.input::<T>().cloned().ok_or_else(|| Error::InputType {
            node: self.node.to_string(),
            expected: std::any::type_name::<T>(),
            found: self
                .input
                .as_ref()
                .map_or_else(|| "no Send input (the node was triggered by an edge)".to_owned(), |p| format!("`{}`", p.0.type_name)),
        })
    }
}
