//! `compile()` validation: every error names the node and the fix.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::nodes::NodeOptions;
use graphkit::{BuildError, Command, END, START, State, StateGraph, SyncNode};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

async fn noop(_: Arc<S>) -> SUpdate {
    SUpdate::new()
}

fn graph() -> StateGraph<S> {
    StateGraph::new()
}

#[test]
fn a_valid_graph_compiles() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END);
    let compiled = g.compile().unwrap();
    assert_eq!(compiled.node_names().collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn an_edge_to_an_unknown_node_names_it() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", "typo");
    let err = g.compile().unwrap_err();
    assert!(
        matches!(&err, BuildError::UnknownNode { node, .. } if node == "typo"),
        "{err}"
    );
    assert!(err.to_string().contains("add_node(\"typo\""), "{err}");
}

#[test]
fn an_unknown_router_target_is_caught_at_compile_time() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &S| END, ["b", END]);
    assert!(matches!(g.compile(), Err(BuildError::UnknownNode { node, .. }) if node == "b"));
}

#[test]
fn duplicate_and_reserved_names_are_refused() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("a", noop)
        .add_edge(START, "a");
    assert!(matches!(g.compile(), Err(BuildError::DuplicateNode(n)) if n == "a"));

    let mut g = graph();
    g.add_node(END, noop);
    assert!(matches!(g.compile(), Err(BuildError::ReservedName(_))));

    let mut g = graph();
    g.add_node("a:b", noop);
    assert!(matches!(g.compile(), Err(BuildError::InvalidName(_))));
}

#[test]
fn a_graph_without_entry_is_refused() {
    let mut g = graph();
    g.add_node("a", noop).add_edge("a", END);
    assert!(matches!(g.compile(), Err(BuildError::NoEntry)));
}

#[test]
fn an_unreachable_node_is_named() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("orphan", noop)
        .add_edge(START, "a")
        .add_edge("a", END)
        .add_edge("orphan", END);
    assert!(matches!(g.compile(), Err(BuildError::Unreachable(n)) if n == "orphan"));
}

#[test]
fn a_node_reached_only_by_a_command_is_reachable_when_the_node_may_route() {
    async fn router(_: Arc<S>) -> Command<S> {
        Command::goto_only("b")
    }
    let mut g = graph();
    g.add_node("a", router)
        .add_node("b", noop)
        .add_edge(START, "a");
    assert!(g.compile().is_ok());

    // With declared destinations, only those count.
    let mut g = graph();
    g.add_node_with("a", router, NodeOptions::new().destinations(["b"]))
        .add_node("b", noop)
        .add_node("c", noop)
        .add_edge(START, "a");
    assert!(matches!(g.compile(), Err(BuildError::Unreachable(n)) if n == "c"));
}

#[test]
fn a_loop_of_static_edges_is_refused() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", "a")
        .add_edge("b", END);
    let err = g.compile().unwrap_err();
    assert!(
        matches!(&err, BuildError::EndlessLoop(names) if names.contains("`a`") && names.contains("`b`")),
        "{err}"
    );
}

#[test]
fn a_conditional_loop_that_can_never_exit_has_no_path_to_end() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &S| "b", ["b"])
        .add_edge("b", "a");
    assert!(matches!(g.compile(), Err(BuildError::NoPathToEnd(n)) if n == "a" || n == "b"));
}

#[test]
fn a_conditional_loop_with_an_exit_compiles() {
    let mut g = graph();
    g.add_node("a", SyncNode::new(|s: &S| SUpdate::new().n(s.n + 1)))
        .add_edge(START, "a")
        .add_conditional_edges("a", |s: &S| if s.n < 3 { "a" } else { END }, ["a", END]);
    assert!(g.compile().is_ok());
}

#[test]
fn edges_out_of_end_or_into_start_are_refused() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_edge(START, "a")
        .add_edge(END, "a");
    assert!(matches!(g.compile(), Err(BuildError::InvalidEdge(_))));
    let mut g = graph();
    g.add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", START);
    assert!(matches!(g.compile(), Err(BuildError::InvalidEdge(_))));
}

#[test]
fn a_node_without_edges_ends_its_branch() {
    let mut g = graph();
    g.add_node("a", noop).add_edge(START, "a");
    assert!(g.compile().is_ok());
}

#[test]
fn compiled_graphs_are_send_sync_and_cheap_to_clone() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<graphkit::CompiledGraph<S>>();
}

#[test]
fn a_path_map_target_that_is_not_a_node_is_caught_at_compile_time() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_edge(START, "a")
        .add_conditional_edges_mapped("a", |_: &S| "done", [("done", END), ("more", "typo")]);
    let err = g.compile().unwrap_err();
    assert!(
        matches!(&err, BuildError::UnknownNode { node, .. } if node == "typo"),
        "{err}"
    );
}

#[test]
fn a_path_map_with_a_label_twice_is_refused() {
    let mut g = graph();
    g.add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_edge("b", END)
        .add_conditional_edges_mapped("a", |_: &S| "go", [("go", "b"), ("go", END)]);
    let err = g.compile().unwrap_err();
    assert!(err.to_string().contains("`go` twice"), "{err}");
}
