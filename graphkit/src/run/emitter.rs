//! [`Emitter`]: where a run sends its stream events (typed to the root stream, raw up to a
//! parent run), and only for the modes someone asked for.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::context::node_context::NodeContext;
use crate::context::stream::{
    CheckpointEvent, Namespace, RawEvent, RawPayload, Scoped, StreamEvent, StreamMode, StreamModes,
    StreamPayload, StreamTarget,
};
use crate::graph::compiled::GraphCore;
use crate::run::persist::Saved;
use crate::run::plan::Task;
use crate::state::State;

/// Sends a run's events: typed to the root stream, or as raw events up to a parent run.
pub(crate) struct Emitter<S: State> {
    pub(crate) target: Option<StreamTarget>,
    typed: Option<mpsc::UnboundedSender<StreamEvent<S>>>,
}

impl<S: State> Emitter<S> {
    pub(crate) fn none() -> Self {
        Self {
            target: None,
            typed: None,
        }
    }

    pub(crate) fn root(tx: mpsc::UnboundedSender<StreamEvent<S>>, modes: StreamModes) -> Self {
        let raw_tx = tx.clone();
        let sink = Arc::new(move |event: RawEvent| {
            let _ = raw_tx.send(event.into());
        });
        let namespace: Namespace = Arc::from(Vec::new());
        Self {
            target: Some(StreamTarget {
                sink,
                modes,
                namespace,
            }),
            typed: Some(tx),
        }
    }

    /// The emitter of a subgraph run inside the node of `ctx`.
    pub(crate) fn child_of(ctx: &NodeContext) -> Self {
        let Some(parent) = ctx.writer.target() else {
            return Self::none();
        };
        let modes = if ctx.config.subgraphs {
            parent.modes
        } else {
            parent.modes.intersect(StreamModes::from([
                StreamMode::Messages,
                StreamMode::Custom,
            ]))
        };
        if modes.is_empty() {
            return Self::none();
        }
        let mut namespace: Vec<Arc<str>> = parent.namespace.to_vec();
        namespace.push(format!("{}:{}", ctx.node, ctx.step).into());
        let target = StreamTarget {
            sink: Arc::clone(&parent.sink),
            modes,
            namespace: namespace.into(),
        };
        Self {
            target: Some(target),
            typed: None,
        }
    }

    pub(crate) fn wants(&self, mode: StreamMode) -> bool {
        self.target.as_ref().is_some_and(|t| t.modes.contains(mode))
    }

    fn typed(&self, payload: StreamPayload<S>) {
        if let (Some(tx), Some(target)) = (&self.typed, &self.target) {
            // The root's (empty) namespace, shared rather than allocated per event.
            let namespace = Arc::clone(&target.namespace);
            let _ = tx.send(StreamEvent { namespace, payload });
        }
    }

    fn raw(&self, payload: RawPayload) {
        if let Some(target) = &self.target {
            target.emit(payload);
        }
    }

    pub(crate) fn values(&self, state: &S) {
        if !self.wants(StreamMode::Values) {
            return;
        }
        if self.typed.is_some() {
            self.typed(StreamPayload::Values(Scoped::Root(state.clone())));
        } else if let Ok(value) = serde_json::to_value(state) {
            self.raw(RawPayload::Values(value));
        }
    }

    pub(crate) fn checkpoint(
        &self,
        thread_id: &str,
        saved: &Saved,
        core: &GraphCore<S>,
        next: &[Task],
    ) {
        if self.wants(StreamMode::Checkpoints) {
            self.raw(RawPayload::Checkpoint(CheckpointEvent {
                thread_id: thread_id.to_owned(),
                checkpoint_id: saved.checkpoint_id.clone(),
                step: saved.step,
                next: next
                    .iter()
                    .map(|t| Arc::clone(&core.nodes[t.node].name))
                    .collect(),
            }));
        }
    }

    /// Streams `node`'s update; `cached` when it came from the node cache.
    pub(crate) fn update(&self, node: &Arc<str>, update: &S::Update, cached: bool) {
        if !self.wants(StreamMode::Updates) {
            return;
        }
        let node = Arc::clone(node);
        if self.typed.is_some() {
            self.typed(StreamPayload::Updates {
                node,
                update: Scoped::Root(update.clone()),
                cached,
            });
        } else if let Ok(update) = serde_json::to_value(update) {
            self.raw(RawPayload::Updates {
                node,
                update,
                cached,
            });
        }
    }
}
