//! Prints the Mermaid text of a graph with a conditional edge, a join and a subgraph.
//!
//! `cargo run -p graphkit --example draw` (add `-- --dot` for Graphviz DOT).

use std::sync::Arc;

use graphkit::{END, START, State, StateGraph};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    #[reducer(append)]
    notes: Vec<String>,
    approved: bool,
}

async fn note(_: Arc<Research>) -> ResearchUpdate {
    ResearchUpdate::new()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut review = StateGraph::<Research>::new();
    review
        .add_node("critique", note)
        .add_node("revise", note)
        .add_edge(START, "critique")
        .add_edge("critique", "revise")
        .add_edge("revise", END);

    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node("plan", note)
        .add_node("search_web", note)
        .add_node("search_papers", note)
        .add_node("synthesize", note)
        .add_subgraph("review", review.compile()?)
        .add_edge(START, "plan")
        .add_edge("plan", "search_web")
        .add_edge("plan", "search_papers")
        .add_edge(["search_web", "search_papers"], "synthesize")
        .add_edge("synthesize", "review")
        .add_conditional_edges(
            "review",
            |s: &Research| if s.approved { END } else { "plan" },
            ["plan", END],
        );
    let graph = graph.compile()?;

    if std::env::args().any(|a| a == "--dot") {
        print!("{}", graph.draw_dot());
    } else {
        print!("{}", graph.draw_mermaid());
    }
    Ok(())
}
