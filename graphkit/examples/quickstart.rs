//! The README's quickstart: a small graph with a conditional loop.
//!
//! `cargo run -p graphkit --example quickstart`

use std::sync::Arc;

use graphkit::{END, START, State, StateGraph};
use serde::{Deserialize, Serialize};

/// The state: a topic (last value), drafts (appended) and a revision counter (summed).
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Essay {
    topic: String,
    #[reducer(append)]
    drafts: Vec<String>,
    #[reducer(add)]
    revisions: u32,
}

async fn write(state: Arc<Essay>) -> EssayUpdate {
    let draft = format!("draft {} about {}", state.revisions + 1, state.topic);
    EssayUpdate::new().drafts(vec![draft]).revisions(1)
}

fn review(state: &Essay) -> &'static str {
    if state.revisions < 3 { "write" } else { END }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut graph = StateGraph::<Essay>::new();
    graph
        .add_node("write", write)
        .add_edge(START, "write")
        .add_conditional_edges("write", review, ["write", END]);
    let graph = graph.compile()?;

    let essay = graph.invoke(EssayUpdate::new().topic("graphs")).await?;
    println!("{essay:#?}");
    Ok(())
}
