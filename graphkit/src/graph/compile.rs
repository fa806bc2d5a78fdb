//! `compile()`: resolve names, validate the structure with petgraph, build the runtime graph.
//!
//! [`StateGraph::compile`] is defined here rather than in the builder: the builder only
//! collects declarations, and compiling reads them.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Arc;

use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, Reversed};

use crate::error::BuildError;
use crate::graph::builder::{CompileOptions, StateGraph};
use crate::graph::compiled::{Branch, CompiledGraph, Dest, GraphCore, JoinSpec, NodeId, NodeSpec};
use crate::graph::draw::{EdgeKind, Shape, ShapeEdge, ShapeNode};
use crate::graph::{END, START};
use crate::state::State;

impl<S: State, C: ?Sized + 'static> StateGraph<S, C> {
    /// Validates the graph and returns a runnable [`CompiledGraph`].
    ///
    /// # Errors
    /// The first problem found: a duplicate or reserved name, an edge or router target
    /// that names no node, no entry point, a node unreachable from START, a loop of static
    /// edges that can never end, or a node with no path to END.
    pub fn compile(self) -> Result<CompiledGraph<S>, BuildError> {
        compile(self, CompileOptions::default())
    }

    /// [`compile`](Self::compile) with a checkpointer, a store, or static interrupts.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::checkpoint::InMemorySaver;
    /// use graphkit::{CompileOptions, END, START, State, StateGraph, SyncNode};
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// # struct S { n: u32 }
    ///
    /// let mut graph = StateGraph::<S>::new();
    /// graph.add_node("draft", SyncNode::new(|_: &S| SUpdate::new().n(1)))
    ///     .add_node("publish", SyncNode::new(|_: &S| SUpdate::new().n(2)))
    ///     .add_edge(START, "draft").add_edge("draft", "publish").add_edge("publish", END);
    /// let graph = graph.compile_with(
    ///     CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())).interrupt_before(["publish"]),
    /// )?;
    /// # Ok::<(), graphkit::BuildError>(())
    /// ```
    pub fn compile_with(self, options: CompileOptions) -> Result<CompiledGraph<S>, BuildError> {
        compile(self, options)
    }
}

fn compile<S: State, C: ?Sized + 'static>(
    mut graph: StateGraph<S, C>,
    options: CompileOptions,
) -> Result<CompiledGraph<S>, BuildError> {
    if !graph.errors.is_empty() {
        return Err(graph.errors.swap_remove(0));
    }
    let by_name: HashMap<Arc<str>, NodeId> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (Arc::clone(&n.name), i))
        .collect();
    let dest = |name: &str, context: &dyn Fn() -> String| -> Result<Dest, BuildError> {
        if name == END {
            return Ok(Dest::End);
        }
        if name == START {
            return Err(BuildError::InvalidEdge(format!(
                "{} leads into START; START can only be a source",
                context()
            )));
        }
        by_name
            .get(name)
            .map(|&id| Dest::Node(id))
            .ok_or_else(|| BuildError::UnknownNode {
                context: context(),
                node: name.to_owned(),
            })
    };
    let source = |name: &str, context: &dyn Fn() -> String| -> Result<Option<NodeId>, BuildError> {
        if name == START {
            return Ok(None);
        }
        if name == END {
            return Err(BuildError::InvalidEdge(format!(
                "{} starts at END; nothing runs after END",
                context()
            )));
        }
        by_name
            .get(name)
            .map(|&id| Some(id))
            .ok_or_else(|| BuildError::UnknownNode {
                context: context(),
                node: name.to_owned(),
            })
    };

    let mut edges_out: Vec<Vec<Dest>> = vec![Vec::new(); graph.nodes.len()];
    let mut start_edges = Vec::new();
    for (from, to) in &graph.edges {
        let ctx = || format!("the edge `{from}` -> `{to}`");
        let target = dest(to, &ctx)?;
        match source(from, &ctx)? {
            None => start_edges.push(target),
            Some(id) => edges_out[id].push(target),
        }
    }

    let mut joins = Vec::new();
    let mut node_joins: Vec<Vec<(usize, usize)>> = vec![Vec::new(); graph.nodes.len()];
    for (sources, to) in &graph.joins {
        let ctx = || format!("the join edge {sources:?} -> `{to}`");
        let target = dest(to, &ctx)?;
        let index = joins.len();
        for (position, name) in sources.iter().enumerate() {
            match source(name, &ctx)? {
                None => {
                    return Err(BuildError::InvalidEdge(format!(
                        "{}: START cannot be part of a join",
                        ctx()
                    )));
                }
                Some(id) => node_joins[id].push((index, position)),
            }
        }
        joins.push(JoinSpec {
            sources: sources.len(),
            target,
        });
    }

    let mut branches_out: Vec<Vec<Branch<S>>> =
        (0..graph.nodes.len()).map(|_| Vec::new()).collect();
    let mut start_branches = Vec::new();
    for branch in std::mem::take(&mut graph.branches) {
        let ctx = || format!("the conditional edge from `{}`", branch.source);
        if let Some(targets) = &branch.targets {
            for target in targets {
                dest(target, &ctx)?;
            }
        }
        if let Some(path_map) = &branch.path_map
            && let Some((label, _)) = path_map
                .iter()
                .enumerate()
                .find(|(i, (label, _))| path_map[..*i].iter().any(|(l, _)| l == label))
                .map(|(_, entry)| entry)
        {
            return Err(BuildError::InvalidEdge(format!(
                "{} maps the label `{label}` twice; give each label one target",
                ctx()
            )));
        }
        let compiled = Branch {
            router: branch.router,
            declared: branch.targets,
            path_map: branch.path_map,
        };
        match source(&branch.source, &ctx)? {
            None => start_branches.push(compiled),
            Some(id) => branches_out[id].push(compiled),
        }
    }
    for node in &graph.nodes {
        if let Some(targets) = &node.options.destinations {
            for target in targets {
                dest(target, &|| {
                    format!("the destinations of node `{}`", node.name)
                })?;
            }
        }
    }
    if start_edges.is_empty() && start_branches.is_empty() {
        return Err(BuildError::NoEntry);
    }

    let interrupt_flags = |names: &[Arc<str>], what: &str| -> Result<Vec<bool>, BuildError> {
        let mut flags = vec![false; graph.nodes.len()];
        for name in names {
            match by_name.get(name) {
                Some(&id) => flags[id] = true,
                None => {
                    return Err(BuildError::UnknownNode {
                        context: format!("`{what}`"),
                        node: name.to_string(),
                    });
                }
            }
        }
        Ok(flags)
    };
    let interrupt_before = interrupt_flags(&options.interrupt_before, "interrupt_before")?;
    let interrupt_after = interrupt_flags(&options.interrupt_after, "interrupt_after")?;

    let shape = build_shape(&graph, &start_branches, &branches_out);
    validate_structure(&graph, &by_name, &shape)?;

    let mut ranked: Vec<(Arc<str>, NodeId)> =
        by_name.iter().map(|(n, &i)| (Arc::clone(n), i)).collect();
    ranked.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut ranks = vec![0; graph.nodes.len()];
    for (rank, (_, id)) in ranked.iter().enumerate() {
        ranks[*id] = rank;
    }

    let has_deferred = graph.nodes.iter().any(|n| n.options.defer);
    let nodes = graph
        .nodes
        .into_iter()
        .zip(edges_out)
        .zip(branches_out)
        .zip(node_joins)
        .enumerate()
        .map(|(id, (((decl, edges), branches), joins))| NodeSpec {
            name: decl.name,
            runner: decl.runner,
            retry: decl.options.retry,
            timeout: decl.options.timeout,
            destinations: decl.options.destinations,
            decoder: decl.decoder,
            interrupt_before: interrupt_before[id],
            interrupt_after: interrupt_after[id],
            defer: decl.options.defer,
            cache: decl.options.cache,
            rank: ranks[id],
            edges,
            branches,
            joins,
        })
        .collect::<Vec<NodeSpec<S>>>();
    let caches_nodes = options.cache.is_some() && nodes.iter().any(|n| n.cache.is_some());

    Ok(CompiledGraph {
        core: Arc::new(GraphCore {
            nodes,
            by_name,
            start_edges,
            start_branches,
            joins,
            has_deferred,
            shape: Arc::new(shape),
            checkpointer: options.checkpointer,
            store: options.store,
            cache: options.cache,
            caches_nodes,
            context: Default::default(),
            context_type: (TypeId::of::<C>() != TypeId::of::<()>())
                .then(|| (TypeId::of::<C>(), std::any::type_name::<C>())),
        }),
    })
}

/// The drawable structure: every edge a run could take, as far as it is declared.
fn build_shape<S: State, C: ?Sized + 'static>(
    graph: &StateGraph<S, C>,
    start_branches: &[Branch<S>],
    branches_out: &[Vec<Branch<S>>],
) -> Shape {
    let mut edges = Vec::new();
    let all_targets = || {
        graph
            .nodes
            .iter()
            .map(|n| Arc::clone(&n.name))
            .chain(std::iter::once(Arc::from(END)))
    };
    let edge = |from: &Arc<str>, to: &Arc<str>, kind: EdgeKind| ShapeEdge {
        from: Arc::clone(from),
        to: Arc::clone(to),
        kind,
        label: None,
    };
    for (from, to) in &graph.edges {
        edges.push(edge(from, to, EdgeKind::Plain));
    }
    for (sources, to) in &graph.joins {
        for from in sources {
            edges.push(edge(from, to, EdgeKind::Join));
        }
    }
    let mut add_branch =
        |from: &Arc<str>, branch: &Branch<S>| match (&branch.path_map, &branch.declared) {
            (Some(path_map), _) => {
                for (label, to) in path_map {
                    edges.push(ShapeEdge {
                        label: Some(Arc::clone(label)),
                        ..edge(from, to, EdgeKind::Conditional)
                    });
                }
            }
            (None, Some(targets)) => {
                for to in targets {
                    edges.push(edge(from, to, EdgeKind::Conditional));
                }
            }
            (None, None) => {
                for to in all_targets() {
                    edges.push(edge(from, &to, EdgeKind::Conditional));
                }
            }
        };
    let start: Arc<str> = Arc::from(START);
    for branch in start_branches {
        add_branch(&start, branch);
    }
    for (node, branches) in graph.nodes.iter().zip(branches_out) {
        for branch in branches {
            add_branch(&node.name, branch);
        }
    }
    for node in &graph.nodes {
        if let Some(targets) = &node.options.destinations {
            for to in targets {
                edges.push(edge(&node.name, to, EdgeKind::Conditional));
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    edges.retain(|e| {
        seen.insert((
            Arc::clone(&e.from),
            Arc::clone(&e.to),
            e.kind,
            e.label.clone(),
        ))
    });
    Shape {
        nodes: graph
            .nodes
            .iter()
            .map(|n| ShapeNode {
                name: Arc::clone(&n.name),
                subgraph: n.subgraph.clone(),
            })
            .collect(),
        edges,
        state_schema: None,
        parent_state: false,
    }
}

/// Reachability from START, endless static loops, and paths to END.
fn validate_structure<S: State, C: ?Sized + 'static>(
    graph: &StateGraph<S, C>,
    by_name: &HashMap<Arc<str>, NodeId>,
    shape: &Shape,
) -> Result<(), BuildError> {
    let n = graph.nodes.len();
    let start = NodeIndex::new(n);
    let end = NodeIndex::new(n + 1);
    let index_of = |name: &str| -> NodeIndex {
        match name {
            START => start,
            END => end,
            other => NodeIndex::new(by_name[other]),
        }
    };
    let mut flow: DiGraph<(), ()> = DiGraph::with_capacity(n + 2, shape.edges.len());
    for _ in 0..n + 2 {
        flow.add_node(());
    }
    for edge in &shape.edges {
        flow.add_edge(index_of(&edge.from), index_of(&edge.to), ());
    }
    // A node whose `Command`s may route anywhere (no declared destinations) can reach
    // every node and END.
    for (id, node) in graph.nodes.iter().enumerate() {
        if node.may_route && node.options.destinations.is_none() {
            for target in 0..n {
                flow.add_edge(NodeIndex::new(id), NodeIndex::new(target), ());
            }
            flow.add_edge(NodeIndex::new(id), end, ());
        }
    }
    // A node with no way out ends its branch, as if it had an edge to END.
    for id in 0..n {
        if flow.neighbors(NodeIndex::new(id)).next().is_none() {
            flow.add_edge(NodeIndex::new(id), end, ());
        }
    }

    let mut reachable = vec![false; n + 2];
    let mut dfs = Dfs::new(&flow, start);
    while let Some(i) = dfs.next(&flow) {
        reachable[i.index()] = true;
    }
    if let Some(node) = graph.nodes.iter().enumerate().find(|(i, _)| !reachable[*i]) {
        return Err(BuildError::Unreachable(node.1.name.to_string()));
    }

    // Static edges always fire, so a cycle made of them alone never ends.
    let mut statics: DiGraph<(), ()> = DiGraph::with_capacity(n, graph.edges.len());
    for _ in 0..n {
        statics.add_node(());
    }
    for (from, to) in &graph.edges {
        if let (Some(&a), Some(&b)) = (by_name.get(from), by_name.get(to)) {
            statics.add_edge(NodeIndex::new(a), NodeIndex::new(b), ());
        }
    }
    for component in tarjan_scc(&statics) {
        let looping = component.len() > 1 || statics.contains_edge(component[0], component[0]);
        if looping {
            let mut names: Vec<&str> = component
                .iter()
                .map(|i| &*graph.nodes[i.index()].name)
                .collect();
            names.sort_unstable();
            let listed = names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(BuildError::EndlessLoop(listed));
        }
    }

    let reversed = Reversed(&flow);
    let mut reaches_end = vec![false; n + 2];
    let mut dfs = Dfs::new(reversed, end);
    while let Some(i) = dfs.next(reversed) {
        reaches_end[i.index()] = true;
    }
    if let Some(node) = graph
        .nodes
        .iter()
        .enumerate()
        .find(|(i, _)| !reaches_end[*i])
    {
        return Err(BuildError::NoPathToEnd(node.1.name.to_string()));
    }
    Ok(())
}
