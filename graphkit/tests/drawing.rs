//! Mermaid, DOT and ASCII output.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::{END, START, State, StateGraph};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct S {
    n: u32,
}

async fn noop(_: Arc<S>) -> SUpdate {
    SUpdate::new()
}

fn sample() -> graphkit::CompiledGraph<S> {
    let mut inner = StateGraph::<S>::new();
    inner
        .add_node("step", noop)
        .add_edge(START, "step")
        .add_edge("step", END);
    let mut g = StateGraph::<S>::new();
    g.add_node("a", noop)
        .add_node("b", noop)
        .add_subgraph("sub", inner.compile().unwrap())
        .add_node("join", noop)
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], "join")
        .add_conditional_edges("join", |_: &S| END, ["sub", END])
        .add_edge("sub", END);
    g.compile().unwrap()
}

#[test]
fn mermaid_draws_conditional_edges_dashed_and_subgraphs_as_blocks() {
    let text = sample().draw_mermaid();
    assert!(text.starts_with("flowchart TD\n"));
    assert!(text.contains("__start__ --> a"), "{text}");
    assert!(text.contains("a --> join"), "{text}");
    assert!(text.contains("join -.-> sub____start__"), "{text}");
    assert!(text.contains("join -.-> __end__"), "{text}");
    assert!(text.contains("subgraph sub[\"sub\"]"), "{text}");
    assert!(text.contains("sub__step --> sub____end__"), "{text}");
    assert!(text.contains("sub____end__ --> __end__"), "{text}");
}

#[test]
fn dot_draws_clusters_and_dashed_edges() {
    let text = sample().draw_dot();
    assert!(text.starts_with("digraph graphkit {"));
    assert!(text.contains("subgraph cluster_sub {"), "{text}");
    assert!(text.contains("join -> __end__ [style=dashed];"), "{text}");
    assert!(text.contains("a -> join;"), "{text}");
}

#[test]
fn ascii_lists_every_node_with_its_targets() {
    let text = sample().draw_ascii();
    assert!(text.contains("start -> a, b"), "{text}");
    assert!(text.contains("join -> ?sub, ?end"), "{text}");
    assert!(text.contains("  step -> end"), "{text}");
}
