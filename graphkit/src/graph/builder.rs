//! [`StateGraph`]: collects nodes and edges; `compile()` validates them.

use std::sync::Arc;
use std::time::Duration;

use crate::cache::{Cache, CachePolicy};
use crate::checkpoint::Checkpointer;
use crate::command::Goto;
use crate::context::config::RetryPolicy;
use crate::error::{BoxError, BuildError};
use crate::graph::draw::Shape;
use crate::graph::edge::{EdgeSources, IntoRoute, RouterFn};
use crate::graph::node::{BoxedNode, InputDecoder, IntoNode, NodeRunner};
use crate::graph::{END, START};
use crate::state::State;
use crate::store::Store;

/// Options of one node: retry policy, timeout, the targets its `Command`s may name,
/// whether it is [deferred](Self::defer), and how its results are [cached](Self::cache).
///
/// ```
/// use std::time::Duration;
/// use graphkit::RetryPolicy;
/// use graphkit::nodes::NodeOptions;
///
/// let options = NodeOptions::new()
///     .retry(RetryPolicy::new(3))
///     .timeout(Duration::from_secs(30))
///     .destinations(["review", "publish"]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct NodeOptions {
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) destinations: Option<Vec<Arc<str>>>,
    pub(crate) defer: bool,
    pub(crate) cache: Option<CachePolicy>,
}

impl NodeOptions {
    /// No retry, no timeout, destinations unknown, not deferred, not cached.
    pub fn new() -> Self {
        Self::default()
    }

    /// Retries the node when it fails.
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Fails an attempt that runs longer than `timeout` (async nodes only).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Declares where the node's `Command`s may route, for validation and drawing.
    #[must_use]
    pub fn destinations<I, T>(mut self, targets: I) -> Self
    where
        I: IntoIterator<Item = T>,
        T: Into<Arc<str>>,
    {
        self.destinations = Some(targets.into_iter().map(Into::into).collect());
        self
    }

    /// Defers the node (LangGraph's `add_node(..., defer=True)`): when it is triggered
    /// while other tasks of the run are still to run, it waits, and runs in the first step
    /// where nothing else is left — once, however many times it was triggered meanwhile.
    ///
    /// This is how an aggregator waits for the longest of several branches of different
    /// lengths (a plain edge would run it after the shortest, and again after each other
    /// branch), or a final summary waits for everything else. Several deferred nodes that
    /// wait together run together, in one step. A `SendTo` to a deferred node waits too,
    /// and runs once per send. What waits is saved in every checkpoint, so a run
    /// interrupted or stopped meanwhile still runs the node when it is resumed;
    /// [`StateSnapshot::deferred`](crate::StateSnapshot::deferred) shows it.
    /// See `docs/howto-deferred-nodes.md`.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::{END, START, State, StateGraph, SyncNode};
    /// use graphkit::nodes::NodeOptions;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Log { #[reducer(append)] seen: Vec<String> }
    ///
    /// fn visit(name: &'static str) -> SyncNode<impl Fn(&Log) -> LogUpdate> {
    ///     SyncNode::new(move |_: &Log| LogUpdate::new().seen(vec![name.to_string()]))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut graph = StateGraph::<Log>::new();
    /// graph
    ///     .add_node("short", visit("short"))
    ///     .add_node("long_1", visit("long_1"))
    ///     .add_node("long_2", visit("long_2"))
    ///     .add_node_with("summary", visit("summary"), NodeOptions::new().defer())
    ///     .add_edge(START, "short")
    ///     .add_edge(START, "long_1")
    ///     .add_edge("long_1", "long_2")
    ///     .add_edge("short", "summary")
    ///     .add_edge("long_2", "summary")
    ///     .add_edge("summary", END);
    /// let log = graph.compile()?.invoke(LogUpdate::new()).await?.into_state();
    /// // `short` triggered `summary` in step 1, but it waited for `long_2`.
    /// assert_eq!(log.seen, ["long_1", "short", "long_2", "summary"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    #[must_use]
    pub fn defer(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Caches the node's results (LangGraph's `cache_policy`): a task whose key (by
    /// default, a hash of the input it reads) was seen before is not run; the writes its
    /// node made then (updates, and the routing of a `Command`) are applied instead, and
    /// the stream marks its updates as [cached](crate::streaming::StreamPayload::Updates).
    /// Only successful results are kept: a task that fails or pauses on an interrupt is
    /// run again next time.
    ///
    /// The graph needs a [`Cache`](crate::cache::Cache) to keep them
    /// ([`CompileOptions::cache`]); without one, the policy has no effect. See
    /// `docs/howto-node-caching.md`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use graphkit::cache::CachePolicy;
    /// use graphkit::nodes::NodeOptions;
    ///
    /// let options = NodeOptions::new().cache(CachePolicy::new().ttl(Duration::from_secs(3600)));
    /// ```
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }
}

/// What a compiled graph runs with besides its nodes: a checkpointer (needed for threads,
/// interrupts and resuming), a store, a cache for the nodes that have a cache policy, and
/// nodes to pause before or after.
#[derive(Clone, Default)]
pub struct CompileOptions {
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) store: Option<Arc<dyn Store>>,
    pub(crate) cache: Option<Arc<dyn Cache>>,
    pub(crate) interrupt_before: Vec<Arc<str>>,
    pub(crate) interrupt_after: Vec<Arc<str>>,
}

impl std::fmt::Debug for CompileOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompileOptions")
            .field("checkpointer", &self.checkpointer)
            .field("store", &self.store)
            .field("cache", &self.cache)
            .field("interrupt_before", &self.interrupt_before)
            .field("interrupt_after", &self.interrupt_after)
            .finish()
    }
}

impl CompileOptions {
    /// No checkpointer, no store, no cache, no static interrupts.
    pub fn new() -> Self {
        Self::default()
    }

    /// Saves a checkpoint after every super-step; runs then need a thread id.
    #[must_use]
    pub fn checkpointer(mut self, saver: Arc<dyn Checkpointer>) -> Self {
        self.checkpointer = Some(saver);
        self
    }

    /// Gives nodes a cross-thread [`Store`].
    #[must_use]
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Keeps the results of the nodes that have a [cache policy](NodeOptions::cache) in
    /// `cache` ([`InMemoryCache`](crate::cache::InMemoryCache), or an SQLite or PostgreSQL
    /// cache shared by processes). Runs of the graph share it, whatever their thread.
    #[must_use]
    pub fn cache(mut self, cache: Arc<dyn Cache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Pauses every run before these nodes run.
    #[must_use]
    pub fn interrupt_before<I: IntoIterator<Item = T>, T: Into<Arc<str>>>(
        mut self,
        nodes: I,
    ) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Pauses every run after these nodes have run.
    #[must_use]
    pub fn interrupt_after<I: IntoIterator<Item = T>, T: Into<Arc<str>>>(
        mut self,
        nodes: I,
    ) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(Into::into));
        self
    }
}

pub(crate) struct NodeDecl<S: State> {
    pub(crate) name: Arc<str>,
    pub(crate) runner: NodeRunner<S>,
    pub(crate) options: NodeOptions,
    pub(crate) may_route: bool,
    pub(crate) subgraph: Option<Arc<Shape>>,
    pub(crate) decoder: Option<InputDecoder>,
}

pub(crate) struct BranchDecl<S: State> {
    pub(crate) source: Arc<str>,
    pub(crate) router: RouterFn<S>,
    pub(crate) targets: Option<Vec<Arc<str>>>,
    /// Label → target, when the router returns labels.
    pub(crate) path_map: Option<Vec<(Arc<str>, Arc<str>)>>,
}

/// A graph under construction: nodes, edges and routers over state `S`, whose nodes may
/// read a context of type `C` (a model, clients, settings; `()` for none) with
/// [`RunContext`](crate::RunContext): `StateGraph::<S, Deps>::new()`. The compiler checks
/// that every node asks only for what `C` [provides](crate::Provides).
///
/// Methods return `&mut Self` so calls chain; mistakes (an unknown node, a duplicate
/// name) are collected and reported by [`compile`](Self::compile), which also checks the
/// structure as a whole.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{END, START, State, StateGraph};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Count { n: u32 }
///
/// async fn bump(state: Arc<Count>) -> CountUpdate {
///     CountUpdate::new().n(state.n + 1)
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut graph = StateGraph::<Count>::new();
/// graph
///     .add_node("bump", bump)
///     .add_edge(START, "bump")
///     .add_conditional_edges("bump", |s: &Count| if s.n < 3 { "bump" } else { END }, ["bump", END]);
/// let graph = graph.compile()?;
/// assert_eq!(graph.invoke(CountUpdate::new()).await?.into_state().n, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub struct StateGraph<S: State, C: ?Sized + 'static = ()> {
    pub(crate) nodes: Vec<NodeDecl<S>>,
    names: std::collections::HashSet<Arc<str>>,
    pub(crate) edges: Vec<(Arc<str>, Arc<str>)>,
    pub(crate) joins: Vec<(Vec<Arc<str>>, Arc<str>)>,
    pub(crate) branches: Vec<BranchDecl<S>>,
    pub(crate) errors: Vec<BuildError>,
    _context: std::marker::PhantomData<fn() -> Box<C>>,
}

impl<S: State, C: ?Sized + 'static> Default for StateGraph<S, C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State, C: ?Sized + 'static> StateGraph<S, C> {
    /// An empty graph.
    pub fn new() -> Self {
        Self {
            nodes: Vec::new(),
            names: std::collections::HashSet::new(),
            edges: Vec::new(),
            joins: Vec::new(),
            branches: Vec::new(),
            errors: Vec::new(),
            _context: std::marker::PhantomData,
        }
    }

    /// Adds a node: an `async fn` or closure taking [`FromContext`](crate::nodes::FromContext)
    /// arguments (usually `Arc<S>`) and returning an update, a `Command` or a `Result`
    /// of those; or a [`SyncNode`](crate::SyncNode).
    pub fn add_node<Args>(&mut self, name: &str, node: impl IntoNode<S, Args, C>) -> &mut Self {
        self.add_node_with(name, node, NodeOptions::default())
    }

    /// Adds a node with options (retry, timeout, declared `Command` destinations,
    /// [`defer`](NodeOptions::defer)).
    pub fn add_node_with<Args, N: IntoNode<S, Args, C>>(
        &mut self,
        name: &str,
        node: N,
        options: NodeOptions,
    ) -> &mut Self {
        let may_route = N::MAY_ROUTE;
        let boxed = node.into_runner();
        self.push_node(name, boxed.runner, options, may_route, None);
        if let Some(decl) = self.nodes.last_mut().filter(|d| &*d.name == name) {
            decl.decoder = boxed.decoder;
        }
        self
    }

    pub(crate) fn push_node(
        &mut self,
        name: &str,
        runner: NodeRunner<S>,
        options: NodeOptions,
        may_route: bool,
        subgraph: Option<Arc<Shape>>,
    ) -> &mut Self {
        if name == START || name == END || name == crate::graph::INPUT {
            self.errors.push(BuildError::ReservedName(name.to_owned()));
        } else if name.is_empty() || name.contains([':', '|', '\n']) {
            self.errors.push(BuildError::InvalidName(name.to_owned()));
        } else if !self.names.insert(name.into()) {
            self.errors.push(BuildError::DuplicateNode(name.to_owned()));
        } else {
            self.nodes.push(NodeDecl {
                name: name.into(),
                runner,
                options,
                may_route,
                subgraph,
                decoder: None,
            });
        }
        self
    }

    /// Adds nodes and chains them with edges, in order.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::{START, END, State, StateGraph};
    /// use graphkit::nodes::BoxedNode;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Doc { #[reducer(append)] log: Vec<String> }
    /// async fn fetch(_: Arc<Doc>) -> DocUpdate { DocUpdate::new().log(vec!["fetch".into()]) }
    /// async fn parse(_: Arc<Doc>) -> DocUpdate { DocUpdate::new().log(vec!["parse".into()]) }
    ///
    /// let mut graph = StateGraph::<Doc>::new();
    /// graph
    ///     .add_sequence([("fetch", BoxedNode::new(fetch)), ("parse", BoxedNode::new(parse))])
    ///     .add_edge(START, "fetch")
    ///     .add_edge("parse", END);
    /// assert!(graph.compile().is_ok());
    /// ```
    pub fn add_sequence<'a>(
        &mut self,
        nodes: impl IntoIterator<Item = (&'a str, BoxedNode<S, C>)>,
    ) -> &mut Self {
        let mut previous: Option<&str> = None;
        for (name, node) in nodes {
            self.add_node(name, node);
            if let Some(prev) = previous {
                self.add_edge(prev, name);
            }
            previous = Some(name);
        }
        self
    }

    /// Adds an edge. With one source (`"a"`) the target runs in the step after the source;
    /// with several (`["a", "b"]`) it is a join: the target runs once, after all of them
    /// have finished (in the same or different steps).
    pub fn add_edge(&mut self, from: impl EdgeSources, to: &str) -> &mut Self {
        let mut sources = from.into_sources();
        if sources.is_empty() {
            self.errors.push(BuildError::InvalidEdge(format!(
                "an edge into `{to}` has no source"
            )));
        } else if sources.len() == 1 {
            let source = sources.remove(0);
            self.edges.push((source, to.into()));
        } else {
            self.joins.push((sources, to.into()));
        }
        self
    }

    /// Adds a conditional edge: after `from` runs, `router` looks at the post-step state and
    /// returns the next node(s), `END`, or `Send`s. `targets` declares every value it may
    /// return (include `END` if it can end); `compile()` checks them and a router that
    /// returns anything else fails the run with a clear error.
    pub fn add_conditional_edges<R, I, T>(
        &mut self,
        from: &str,
        router: impl Fn(&S) -> R + std::marker::Send + Sync + 'static,
        targets: I,
    ) -> &mut Self
    where
        R: IntoRoute,
        I: IntoIterator<Item = T>,
        T: Into<Arc<str>>,
    {
        let targets = targets.into_iter().map(Into::into).collect();
        self.push_branch(from, router, Some(targets))
    }

    /// Adds a conditional edge whose targets are not declared: any node is allowed, and
    /// drawings show an edge to every node.
    pub fn add_dynamic_conditional_edges<R: IntoRoute>(
        &mut self,
        from: &str,
        router: impl Fn(&S) -> R + std::marker::Send + Sync + 'static,
    ) -> &mut Self {
        self.push_branch(from, router, None)
    }

    /// Adds a conditional edge whose router returns **labels**, and a path map that says
    /// which node (or `END`) each label leads to, as LangGraph's `path_map`. Drawings label
    /// each edge with its label. `compile()` checks every mapped target; a router that
    /// returns a label outside the map fails the run with `Error::UnknownRouteLabel`. `Send`s
    /// are not mapped: they name their node, which must be one of the map's targets.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::{END, START, State, StateGraph, SyncNode};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct Draft { score: u32, #[reducer(append)] log: Vec<String> }
    ///
    /// let mut graph = StateGraph::<Draft>::new();
    /// graph
    ///     .add_node("write", SyncNode::new(|_: &Draft| DraftUpdate::new().score(7)))
    ///     .add_node("publish", SyncNode::new(|_: &Draft| DraftUpdate::new().log(vec!["published".into()])))
    ///     .add_edge(START, "write")
    ///     .add_conditional_edges_mapped(
    ///         "write",
    ///         |d: &Draft| if d.score >= 5 { "good" } else { "bad" },
    ///         [("good", "publish"), ("bad", END)],
    ///     )
    ///     .add_edge("publish", END);
    /// let graph = graph.compile()?;
    /// assert!(graph.draw_mermaid().contains("write -.->|\"good\"| publish"));
    /// # Ok::<(), graphkit::BuildError>(())
    /// ```
    pub fn add_conditional_edges_mapped<R, I, L, T>(
        &mut self,
        from: &str,
        router: impl Fn(&S) -> R + std::marker::Send + Sync + 'static,
        path_map: I,
    ) -> &mut Self
    where
        R: IntoRoute,
        I: IntoIterator<Item = (L, T)>,
        L: Into<Arc<str>>,
        T: Into<Arc<str>>,
    {
        let path_map: Vec<(Arc<str>, Arc<str>)> = path_map
            .into_iter()
            .map(|(label, target)| (label.into(), target.into()))
            .collect();
        let mut targets: Vec<Arc<str>> = Vec::with_capacity(path_map.len());
        for (_, target) in &path_map {
            if !targets.contains(target) {
                targets.push(Arc::clone(target));
            }
        }
        self.push_branch(from, router, Some(targets));
        if let Some(branch) = self.branches.last_mut() {
            branch.path_map = Some(path_map);
        }
        self
    }

    fn push_branch<R: IntoRoute>(
        &mut self,
        from: &str,
        router: impl Fn(&S) -> R + std::marker::Send + Sync + 'static,
        targets: Option<Vec<Arc<str>>>,
    ) -> &mut Self {
        let router: RouterFn<S> = Arc::new(move |state: &S| -> Result<Vec<Goto>, BoxError> {
            router(state).into_route()
        });
        self.branches.push(BranchDecl {
            source: from.into(),
            router,
            targets,
            path_map: None,
        });
        self
    }

    /// Same as `add_edge(START, node)`.
    pub fn set_entry_point(&mut self, node: &str) -> &mut Self {
        self.add_edge(START, node)
    }

    /// Same as `add_edge(node, END)`.
    pub fn set_finish_point(&mut self, node: &str) -> &mut Self {
        self.add_edge(node, END)
    }
}
