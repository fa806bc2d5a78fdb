//! Compiled graphs as nodes of another graph: [`StateGraph::add_subgraph`] and
//! [`StateGraph::add_subgraph_mapped`], and the nodes they add, which run the child graph
//! with a child [`Runner`] (which is why they live in `run/`, not in `graph/`).
//!
//! With a checkpointer saving per step, a child run keeps its own checkpoints in the
//! parent's thread, under the namespace of the task it runs in (`node:task_id`): when the
//! task runs again (resumed after an interrupt, a failure or a crash) the child continues
//! where it stopped instead of starting over.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::command::{Command, CommandGraph, RunInput};
use crate::context::node_context::NodeContext;
use crate::error::{BoxError, Error};
use crate::graph::builder::{NodeOptions, StateGraph};
use crate::graph::compiled::CompiledGraph;
use crate::graph::draw::Shape;
use crate::graph::node::{ErasedAsyncNode, NodeOutput, NodeRunner};
use crate::run::runner::Runner;
use crate::snapshot::SubgraphView;
use crate::state::State;

impl<S: State, X: ?Sized + 'static> StateGraph<S, X> {
    /// Adds a compiled graph with the same state type as a node. It starts from the
    /// parent's state, and its updates become the node's writes in the parent.
    pub fn add_subgraph(&mut self, name: &str, graph: CompiledGraph<S>) -> &mut Self {
        let shape = Arc::new(Shape {
            parent_state: true,
            ..Shape::clone(&graph.shape())
        });
        let runner = NodeRunner::Async(Arc::new(SameStateSubgraph::new(graph)));
        self.push_node(name, runner, NodeOptions::default(), true, Some(shape))
    }

    /// Adds a compiled graph with another state type `C` as a node: `into_child` builds
    /// its input from the parent's state, and `from_child` turns its final state into the
    /// parent's update. The child reads the run's context values, and its own.
    pub fn add_subgraph_mapped<C: State>(
        &mut self,
        name: &str,
        graph: CompiledGraph<C>,
        into_child: impl Fn(&S) -> C::Update + std::marker::Send + Sync + 'static,
        from_child: impl Fn(&C) -> S::Update + std::marker::Send + Sync + 'static,
    ) -> &mut Self {
        let shape = graph.shape();
        let runner =
            NodeRunner::Async(Arc::new(MappedSubgraph::new(graph, into_child, from_child)));
        self.push_node(name, runner, NodeOptions::default(), false, Some(shape))
    }
}

/// A subgraph over the parent's state type: it starts from the parent's snapshot and its
/// applied updates become the node's writes.
struct SameStateSubgraph<S: State> {
    graph: CompiledGraph<S>,
}

impl<S: State> SameStateSubgraph<S> {
    fn new(graph: CompiledGraph<S>) -> Self {
        Self { graph }
    }
}

impl<S: State> ErasedAsyncNode<S> for SameStateSubgraph<S> {
    fn call(
        &self,
        state: &Arc<S>,
        ctx: &NodeContext,
    ) -> BoxFuture<'static, Result<NodeOutput<S>, BoxError>> {
        let graph = self.graph.clone();
        let state = Arc::clone(state);
        let ctx = ctx.clone();
        Box::pin(async move {
            // The child mutates its own copy; the parent's snapshot stays shared by siblings.
            let initial = S::clone(&state);
            drop(state);
            let runner = Runner::child_of(&graph, initial, &ctx)
                .with_checkpoints(&ctx)
                .collecting();
            match runner.run(RunInput::Update(S::Update::default())).await {
                Ok(done) => Ok(NodeOutput::Updates(done.updates)),
                Err(Error::ParentCommand { node, command }) => {
                    match command.0.downcast::<Command<S>>() {
                        Ok(mut command) => {
                            command.graph = CommandGraph::Current;
                            Ok(NodeOutput::Command(command))
                        }
                        Err(_) => Err(Box::new(Error::NoParentGraph {
                            node,
                            reason: "the parent graph has a different state type",
                        }) as BoxError),
                    }
                }
                Err(error) => Err(Box::new(error) as BoxError),
            }
        })
    }

    fn subgraph(&self) -> Option<&dyn SubgraphView> {
        Some(&self.graph)
    }
}

type IntoChild<S, C> = Arc<dyn Fn(&S) -> <C as State>::Update + Send + Sync>;
type FromChild<S, C> = Arc<dyn Fn(&C) -> <S as State>::Update + Send + Sync>;

/// A subgraph with its own state type, connected by two mapping functions.
struct MappedSubgraph<S: State, C: State> {
    graph: CompiledGraph<C>,
    into_child: IntoChild<S, C>,
    from_child: FromChild<S, C>,
}

impl<S: State, C: State> MappedSubgraph<S, C> {
    fn new(
        graph: CompiledGraph<C>,
        into_child: impl Fn(&S) -> C::Update + Send + Sync + 'static,
        from_child: impl Fn(&C) -> S::Update + Send + Sync + 'static,
    ) -> Self {
        Self {
            graph,
            into_child: Arc::new(into_child),
            from_child: Arc::new(from_child),
        }
    }
}

impl<S: State, C: State> ErasedAsyncNode<S> for MappedSubgraph<S, C> {
    fn call(
        &self,
        state: &Arc<S>,
        ctx: &NodeContext,
    ) -> BoxFuture<'static, Result<NodeOutput<S>, BoxError>> {
        let graph = self.graph.clone();
        let input = (self.into_child)(state);
        let ctx = ctx.clone();
        let from_child = Arc::clone(&self.from_child);
        Box::pin(async move {
            let runner = Runner::child_of(&graph, C::default(), &ctx).with_checkpoints(&ctx);
            match runner.run(RunInput::Update(input)).await {
                Ok(done) => Ok(NodeOutput::Update(from_child(&done.state))),
                Err(Error::ParentCommand { node, .. }) => Err(Box::new(Error::NoParentGraph {
                    node,
                    reason: "a mapped subgraph's parent has a different state type",
                }) as BoxError),
                Err(error) => Err(Box::new(error) as BoxError),
            }
        })
    }

    fn subgraph(&self) -> Option<&dyn SubgraphView> {
        Some(&self.graph)
    }
}
