//! [`CompiledGraph`]: a validated graph, ready to run many times concurrently.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::cache::{Cache, CachePolicy};
use crate::checkpoint::Checkpointer;
use crate::context::config::RetryPolicy;
use crate::context::run_context::ContextValues;
use crate::graph::draw::Shape;
use crate::graph::edge::RouterFn;
use crate::graph::node::{InputDecoder, NodeRunner};
use crate::state::State;
use crate::store::Store;

pub(crate) type NodeId = usize;

/// Where an edge leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dest {
    Node(NodeId),
    End,
}

impl<S: State> Clone for Branch<S> {
    fn clone(&self) -> Self {
        Self {
            router: Arc::clone(&self.router),
            declared: self.declared.clone(),
            path_map: self.path_map.clone(),
        }
    }
}

pub(crate) struct Branch<S: State> {
    pub(crate) router: RouterFn<S>,
    pub(crate) declared: Option<Vec<Arc<str>>>,
    /// Label → target, when the router returns labels.
    pub(crate) path_map: Option<Vec<(Arc<str>, Arc<str>)>>,
}

impl<S: State> Clone for NodeSpec<S> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            runner: self.runner.clone(),
            retry: self.retry.clone(),
            timeout: self.timeout,
            destinations: self.destinations.clone(),
            decoder: self.decoder,
            interrupt_before: self.interrupt_before,
            interrupt_after: self.interrupt_after,
            defer: self.defer,
            cache: self.cache.clone(),
            rank: self.rank,
            edges: self.edges.clone(),
            branches: self.branches.clone(),
            joins: self.joins.clone(),
        }
    }
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
    /// Waits until nothing else is left to run (`NodeOptions::defer`).
    pub(crate) defer: bool,
    /// How its results are cached (`NodeOptions::cache`).
    pub(crate) cache: Option<CachePolicy>,
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

impl<S: State> Clone for GraphCore<S> {
    fn clone(&self) -> Self {
        Self {
            nodes: self.nodes.clone(),
            by_name: self.by_name.clone(),
            start_edges: self.start_edges.clone(),
            start_branches: self.start_branches.clone(),
            has_deferred: self.has_deferred,
            joins: self
                .joins
                .iter()
                .map(|j| JoinSpec {
                    sources: j.sources,
                    target: j.target,
                })
                .collect(),
            shape: Arc::clone(&self.shape),
            checkpointer: self.checkpointer.clone(),
            store: self.store.clone(),
            cache: self.cache.clone(),
            caches_nodes: self.caches_nodes,
            context: self.context.clone(),
            context_type: self.context_type,
        }
    }
}

pub(crate) struct GraphCore<S: State> {
    pub(crate) nodes: Vec<NodeSpec<S>>,
    pub(crate) by_name: HashMap<Arc<str>, NodeId>,
    pub(crate) start_edges: Vec<Dest>,
    pub(crate) start_branches: Vec<Branch<S>>,
    pub(crate) joins: Vec<JoinSpec>,
    /// Some node is deferred: only then does planning look for tasks to hold back.
    pub(crate) has_deferred: bool,
    pub(crate) shape: Arc<Shape>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) store: Option<Arc<dyn Store>>,
    /// Where the results of nodes with a cache policy are kept.
    pub(crate) cache: Option<Arc<dyn Cache>>,
    /// There is a cache and some node has a cache policy: only then does a step look
    /// its tasks up in the cache.
    pub(crate) caches_nodes: bool,
    /// The graph's own context values, for every run (a run's value of a type wins).
    pub(crate) context: ContextValues,
    /// The context type the graph's nodes read (`StateGraph<S, C>`'s `C`), unless `()`:
    /// a run starts only with a value of it.
    pub(crate) context_type: Option<(std::any::TypeId, &'static str)>,
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

    /// The same graph running on another checkpointer: for a host (such as a server) that
    /// owns the storage of the graphs it is given. The nodes, edges and interrupts are
    /// shared; only the saver differs.
    #[must_use]
    pub fn with_checkpointer(&self, saver: Arc<dyn Checkpointer>) -> Self {
        let mut core = GraphCore::clone(&self.core);
        core.checkpointer = Some(saver);
        Self {
            core: Arc::new(core),
        }
    }

    /// The same graph with another store for its nodes (see
    /// [`with_checkpointer`](Self::with_checkpointer)).
    #[must_use]
    pub fn with_store(&self, store: Arc<dyn Store>) -> Self {
        let mut core = GraphCore::clone(&self.core);
        core.store = Some(store);
        Self {
            core: Arc::new(core),
        }
    }

    /// The same graph keeping its cached nodes' results in another cache (see
    /// [`with_checkpointer`](Self::with_checkpointer)).
    #[must_use]
    pub fn with_cache(&self, cache: Arc<dyn Cache>) -> Self {
        let mut core = GraphCore::clone(&self.core);
        core.caches_nodes = core.nodes.iter().any(|n| n.cache.is_some());
        core.cache = Some(cache);
        Self {
            core: Arc::new(core),
        }
    }

    /// The same graph with a context value of type `C` for every run: usually the value of
    /// the graph's context type (`StateGraph<S, C>`), which its nodes read with
    /// [`RunContext`](crate::RunContext) (a model, a client, settings), given once here
    /// instead of being cloned into node closures. A run's own value of that type
    /// ([`RunConfig::with_context`](crate::RunConfig::with_context)) wins; one value per
    /// type (a second replaces the first). Like axum's `Router::with_state`. Values of
    /// other types serve the graph's subgraphs and run-time lookups
    /// ([`NodeContext::context`](crate::NodeContext::context)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::{END, RunContext, START, State, StateGraph};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Reply { text: String }
    /// struct Style { greeting: &'static str }
    ///
    /// async fn greet(_: Arc<Reply>, style: RunContext<Style>) -> ReplyUpdate {
    ///     ReplyUpdate::new().text(format!("{}!", style.greeting))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut graph = StateGraph::<Reply, Style>::new();
    /// graph.add_node("greet", greet).add_edge(START, "greet").add_edge("greet", END);
    /// let graph = graph.compile()?.with_context(Style { greeting: "hello" });
    /// assert_eq!(graph.invoke(ReplyUpdate::new()).await?.into_state().text, "hello!");
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    #[must_use]
    pub fn with_context<C: Send + Sync + 'static>(&self, value: C) -> Self {
        self.with_shared_context(Arc::new(value))
    }

    /// [`with_context`](Self::with_context) with a value already shared; `C` may be a trait
    /// object: `with_shared_context::<dyn ChatModel>(model)` serves
    /// `RunContext<dyn ChatModel>`.
    #[must_use]
    pub fn with_shared_context<C: ?Sized + Send + Sync + 'static>(&self, value: Arc<C>) -> Self {
        let mut core = GraphCore::clone(&self.core);
        core.context.insert(value);
        Self {
            core: Arc::new(core),
        }
    }

    /// Deletes every cached result of the graph's nodes (LangGraph's `clear_cache()`),
    /// including those of the nodes of subgraphs run by them when those keep their
    /// results in the same cache. Entries of other graphs sharing the cache stay. Without
    /// a cache there is nothing to clear.
    ///
    /// # Errors
    /// The cache's own ([`Error::Backend`](crate::Error::Backend) for the SQL caches).
    pub async fn clear_cache(&self) -> Result<(), crate::Error> {
        self.clear_cache_of(self.node_names()).await
    }

    /// Deletes the cached results of the named nodes only (LangGraph's
    /// `clear_cache(nodes=[...])`).
    ///
    /// # Errors
    /// [`Error::UnknownNode`](crate::Error::UnknownNode) for a name that is not a node of
    /// the graph; the cache's own errors.
    pub async fn clear_cache_of<I, T>(&self, nodes: I) -> Result<(), crate::Error>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        let mut namespaces: Vec<String> = Vec::new();
        for node in nodes {
            let node = node.as_ref();
            if !self.core.by_name.contains_key(node) {
                return Err(crate::Error::UnknownNode {
                    context: "`CompiledGraph::clear_cache_of`".into(),
                    node: node.to_owned(),
                });
            }
            namespaces.push(node.to_owned());
        }
        match &self.core.cache {
            Some(cache) if !namespaces.is_empty() => {
                let namespaces: Vec<&str> = namespaces.iter().map(String::as_str).collect();
                Ok(cache.clear(Some(&namespaces)).await?)
            }
            _ => Ok(()),
        }
    }

    /// `true` when the graph runs with a checkpointer.
    pub fn has_checkpointer(&self) -> bool {
        self.core.checkpointer.is_some()
    }

    /// The declared edges as (source, target, conditional), with [`START`](crate::START)
    /// and [`END`](crate::END) as node names: what a client draws the graph from. Join
    /// edges count as plain edges; subgraphs are not expanded.
    pub fn edges(&self) -> Vec<(String, String, bool)> {
        self.core
            .shape
            .edges
            .iter()
            .map(|e| {
                (
                    e.from.to_string(),
                    e.to.to_string(),
                    e.kind == crate::graph::draw::EdgeKind::Conditional,
                )
            })
            .collect()
    }

    /// The names of the nodes that run a subgraph ([`StateGraph::add_subgraph`],
    /// [`StateGraph::add_subgraph_mapped`]), in the order they were added: what a host
    /// needs to know before it says a graph has no subgraphs.
    ///
    /// [`StateGraph::add_subgraph`]: crate::StateGraph::add_subgraph
    /// [`StateGraph::add_subgraph_mapped`]: crate::StateGraph::add_subgraph_mapped
    pub fn subgraph_nodes(&self) -> Vec<String> {
        self.core
            .shape
            .nodes
            .iter()
            .filter(|n| n.subgraph.is_some())
            .map(|n| n.name.to_string())
            .collect()
    }

    /// A plain-text outline of nodes and their edges.
    pub fn draw_ascii(&self) -> String {
        self.core.shape.ascii()
    }

    /// This graph with `schema` recorded as the JSON Schema of its state, for hosts that
    /// describe graphs and their subgraphs (graphkit-server's
    /// `GET /assistants/{id}/subgraphs`). graphkit itself never reads it. Give it to a
    /// graph before adding the graph as a subgraph with
    /// [`StateGraph::add_subgraph_mapped`]: a subgraph added with
    /// [`StateGraph::add_subgraph`] shares its parent's state type, and so its schema.
    ///
    /// ```
    /// # use graphkit::prelude::*;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Inner { x: i64 }
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Outer { y: i64 }
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut inner = StateGraph::<Inner>::new();
    /// inner.add_node("step", |_: std::sync::Arc<Inner>| async { InnerUpdate::default() });
    /// inner.add_edge(START, "step").add_edge("step", END);
    /// let schema = serde_json::json!({"type": "object", "properties": {"x": {"type": "integer"}}});
    /// let inner = inner.compile()?.with_state_schema(schema.clone());
    ///
    /// let mut outer = StateGraph::<Outer>::new();
    /// outer.add_subgraph_mapped("inner", inner, |_| InnerUpdate::default(), |_| OuterUpdate::default());
    /// outer.add_edge(START, "inner").add_edge("inner", END);
    /// let subgraphs = outer.compile()?.subgraphs(false);
    /// assert_eq!(subgraphs[0].namespace, "inner");
    /// assert_eq!(subgraphs[0].state_schema, Some(schema));
    /// # Ok(()) }
    /// ```
    ///
    /// [`StateGraph::add_subgraph`]: crate::StateGraph::add_subgraph
    /// [`StateGraph::add_subgraph_mapped`]: crate::StateGraph::add_subgraph_mapped
    #[must_use]
    pub fn with_state_schema(self, schema: serde_json::Value) -> Self {
        let mut core = GraphCore::clone(&self.core);
        core.shape = Arc::new(Shape {
            state_schema: Some(Arc::new(schema)),
            ..Shape::clone(&self.core.shape)
        });
        Self {
            core: Arc::new(core),
        }
    }

    /// The JSON Schema of this graph's state, when one was given with
    /// [`with_state_schema`](Self::with_state_schema).
    pub fn state_schema(&self) -> Option<&serde_json::Value> {
        self.core.shape.state_schema.as_deref()
    }

    /// The subgraphs of this graph (nodes added with `add_subgraph` or
    /// `add_subgraph_mapped`), in the order they were added; with `recurse`, their
    /// subgraphs too, each after its parent, named by the path of node names from this
    /// graph down (`outer|inner`, LangGraph's namespace form).
    pub fn subgraphs(&self, recurse: bool) -> Vec<SubgraphInfo> {
        let mut found = Vec::new();
        collect_subgraphs(
            &self.core.shape,
            self.core.shape.state_schema.as_deref(),
            "",
            recurse,
            &mut found,
        );
        found
    }
}

/// A subgraph of a compiled graph, as [`CompiledGraph::subgraphs`] lists it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SubgraphInfo {
    /// The node names from the graph down to the subgraph, joined by `|` (`inner`, or
    /// `outer|inner` for a subgraph of the subgraph `outer`).
    pub namespace: String,
    /// The JSON Schema of the subgraph's state: the one given to
    /// [`CompiledGraph::with_state_schema`], or its parent's for a subgraph added with
    /// `add_subgraph` (same state type); `None` when unknown.
    pub state_schema: Option<serde_json::Value>,
}

fn collect_subgraphs(
    shape: &Shape,
    schema: Option<&serde_json::Value>,
    prefix: &str,
    recurse: bool,
    found: &mut Vec<SubgraphInfo>,
) {
    for node in &shape.nodes {
        let Some(child) = &node.subgraph else {
            continue;
        };
        let namespace = format!("{prefix}{}", node.name);
        let child_schema = match (&child.state_schema, child.parent_state) {
            (Some(own), _) => Some(&**own),
            (None, true) => schema,
            (None, false) => None,
        };
        found.push(SubgraphInfo {
            namespace: namespace.clone(),
            state_schema: child_schema.cloned(),
        });
        if recurse {
            collect_subgraphs(child, child_schema, &format!("{namespace}|"), true, found);
        }
    }
}
