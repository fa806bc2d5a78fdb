//! [`CompiledGraph`]: a validated graph, ready to run many times concurrently.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::checkpoint::Checkpointer;
use crate::command::RunInput;
use crate::error::Error;
use crate::graph::draw::Shape;
use crate::graph::edge::RouterFn;
use crate::graph::node::{InputDecoder, NodeRunner};
use crate::run::config::{RetryPolicy, RunConfig};
use crate::run::stream::StreamModes;
use crate::run::{Emitter, RunStream, Runner};
use crate::state::State;
use crate::store::Store;

pub(crate) type NodeId = usize;

/// Where an edge leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dest {
    Node(NodeId),
    End,
}

pub(crate) struct Branch<S: State> {
    pub(crate) router: RouterFn<S>,
    pub(crate) declared: Option<Vec<Arc<str>>>,
    /// Label → target, when the router returns labels.
    pub(crate) path_map: Option<Vec<(Arc<str>, Arc<str>)>>,
}

pub(crate) struct NodeSpec<S: State> {
    pub(crate) name: Arc<str>,
    pub(crate) runner: NodeRunner<S>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    /// Where its `Command`s may route, if declared.
    pub(crate) destinations: Option<Vec<Arc<str>>>,
    /// Rebuilds a stored Send input with the type the node extracts.
    pub(crate) decoder: Option<InputDecoder>,
    pub(crate) interrupt_before: bool,
    pub(crate) interrupt_after: bool,
    /// Position of the name in byte order: the apply order of edge-triggered tasks.
    pub(crate) rank: usize,
    pub(crate) edges: Vec<Dest>,
    pub(crate) branches: Vec<Branch<S>>,
    /// (join index, this node's position among the join's sources)
    pub(crate) joins: Vec<(usize, usize)>,
}

pub(crate) struct JoinSpec {
    pub(crate) sources: usize,
    pub(crate) target: Dest,
}

pub(crate) struct GraphCore<S: State> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) by_name: HashMap<Arc<str>, NodeId>,
    pub(crate) start_edges: Vec<Dest>,
    pub(crate) start_branches: Vec<Branch<S>>,
    pub(crate) joins: Vec<JoinSpec>,
    pub(crate) shape: Arc<Shape>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) store: Option<Arc<dyn Store>>,
}

/// A validated graph. Cheap to clone (an `Arc`), safe to share across threads, and able
/// to serve many runs at once.
pub struct CompiledGraph<S: State> {
    pub(crate) core: Arc<GraphCore<S>>,
}

impl<S: State> Clone for CompiledGraph<S> {
    fn clone(&self) -> Self {
        Self {
            core: Arc::clone(&self.core),
        }
    }
}

impl<S: State> std::fmt::Debug for CompiledGraph<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field(
                "nodes",
                &self.core.nodes.iter().map(|n| &*n.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl<S: State> CompiledGraph<S> {
    /// Runs the graph to the end and returns the final state.
    ///
    /// The input is applied to the state as an update (through the reducers): to the
    /// default state, or with a checkpointer to the thread's state. Accepts the update
    /// type, a whole `S`, a [`Command::resume`](crate::Command::resume), or a
    /// [`RunInput`](crate::RunInput).
    ///
    /// # Errors
    /// Any failure of the run; [`Error::Interrupted`] when it paused for a human.
    pub async fn invoke(&self, input: impl Into<RunInput<S>>) -> Result<S, Error> {
        self.invoke_with(input, RunConfig::default()).await
    }

    /// [`invoke`](Self::invoke) with a [`RunConfig`] (thread id, limits, cancellation).
    pub async fn invoke_with(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
    ) -> Result<S, Error> {
        let runner = Runner::new(self, S::default(), Arc::new(config), Emitter::none());
        runner.run(input.into()).await.map(|done| done.state)
    }

    /// [`invoke_with`](Self::invoke_with) from synchronous code: runs the graph on a
    /// current-thread tokio runtime kept per calling thread.
    ///
    /// # Errors
    /// Besides the run's own errors, [`Error::BlockingInAsync`] when called from inside an
    /// async runtime (use `invoke` there).
    pub fn invoke_blocking(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
    ) -> Result<S, Error> {
        crate::run::block_on(self.invoke_with(input, config))
    }

    /// Runs the graph and streams events of the given modes as they happen.
    ///
    /// The run makes progress only while the stream is polled; dropping the stream cancels
    /// the run. A failed run yields its error as the last item.
    pub fn stream(
        &self,
        input: impl Into<RunInput<S>>,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        self.stream_with(input, RunConfig::default(), modes)
    }

    /// [`stream`](Self::stream) with a [`RunConfig`].
    pub fn stream_with(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        RunStream::start(self.clone(), input.into(), config, modes.into())
    }

    /// The names of the graph's nodes, in the order they were added.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.core.nodes.iter().map(|n| &*n.name)
    }

    pub(crate) fn shape(&self) -> Arc<Shape> {
        Arc::clone(&self.core.shape)
    }

    /// The graph as Mermaid flowchart text (conditional edges dashed and labelled by their
    /// path map, join edges thick, subgraphs as nested blocks).
    pub fn draw_mermaid(&self) -> String {
        self.core.shape.mermaid()
    }

    /// The graph in Graphviz DOT (conditional edges dashed and labelled by their path map,
    /// join edges bold, subgraphs as clusters).
    pub fn draw_dot(&self) -> String {
        self.core.shape.dot()
    }

    /// A plain-text outline of nodes and their edges.
    pub fn draw_ascii(&self) -> String {
        self.core.shape.ascii()
    }
}
