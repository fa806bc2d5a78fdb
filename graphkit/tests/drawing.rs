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
    assert!(text.contains("a ==> join"), "joins are drawn thick: {text}");
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
    assert!(
        text.contains("a -> join [style=bold, arrowhead=diamond];"),
        "{text}"
    );
}

#[test]
fn ascii_lists_every_node_with_its_targets() {
    let text = sample().draw_ascii();
    assert!(text.contains("start -> a, b"), "{text}");
    assert!(text.contains("a -> &join"), "{text}");
    assert!(text.contains("join -> ?sub, ?end"), "{text}");
    assert!(text.contains("  step -> end"), "{text}");
}

fn triage() -> graphkit::CompiledGraph<S> {
    let mut g = StateGraph::<S>::new();
    g.add_node("grade", noop)
        .add_node("publish", noop)
        .add_node("rewrite", noop)
        .add_edge(START, "grade")
        .add_conditional_edges_mapped(
            "grade",
            |s: &S| if s.n > 5 { "pass" } else { "fail" },
            [("pass", "publish"), ("fail", "rewrite"), ("give up", END)],
        )
        .add_edge("publish", END)
        .add_edge("rewrite", "grade");
    g.compile().unwrap()
}

#[test]
fn mermaid_draws_path_map_edges_with_their_labels() {
    let text = triage().draw_mermaid();
    assert!(text.contains("grade -.->|\"pass\"| publish"), "{text}");
    assert!(text.contains("grade -.->|\"fail\"| rewrite"), "{text}");
    assert!(text.contains("grade -.->|\"give up\"| __end__"), "{text}");
    assert!(text.contains("rewrite --> grade"), "{text}");
}

#[test]
fn dot_and_ascii_draw_path_map_labels() {
    let graph = triage();
    let dot = graph.draw_dot();
    assert!(
        dot.contains("grade -> publish [style=dashed, label=\"pass\"];"),
        "{dot}"
    );
    let ascii = graph.draw_ascii();
    assert!(
        ascii.contains("grade -> ?pass:publish, ?fail:rewrite, ?give up:end"),
        "{ascii}"
    );
}

#[test]
fn subgraph_nodes_names_the_nodes_that_run_a_subgraph() {
    assert_eq!(sample().subgraph_nodes(), vec!["sub".to_owned()]);
    let mut flat = StateGraph::<S>::new();
    flat.add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", END);
    assert!(flat.compile().unwrap().subgraph_nodes().is_empty());
}

#[test]
fn subgraphs_are_listed_by_namespace_with_inherited_or_given_schemas() {
    let schema = serde_json::json!({"title": "S"});
    let mut outer = StateGraph::<S>::new();
    outer
        .add_subgraph("outer", sample())
        .add_edge(START, "outer")
        .add_edge("outer", END);
    let graph = outer.compile().unwrap();
    assert_eq!(graph.state_schema(), None);
    let direct = graph.subgraphs(false);
    assert_eq!(direct.len(), 1);
    assert_eq!(
        (direct[0].namespace.as_str(), &direct[0].state_schema),
        ("outer", &None)
    );

    // A same-state subgraph describes itself with its parent's schema, at any depth.
    let graph = graph.with_state_schema(schema.clone());
    assert_eq!(graph.state_schema(), Some(&schema));
    let all: Vec<(String, Option<serde_json::Value>)> = graph
        .subgraphs(true)
        .into_iter()
        .map(|s| (s.namespace, s.state_schema))
        .collect();
    assert_eq!(
        all,
        [
            ("outer".to_owned(), Some(schema.clone())),
            ("outer|sub".to_owned(), Some(schema)),
        ]
    );
}
