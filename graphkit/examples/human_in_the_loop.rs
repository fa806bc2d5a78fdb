//! Pauses a run on an interrupt, prints the payload, resumes with a value, prints the result.
//!
//! `cargo run -p graphkit --example human_in_the_loop`

use std::sync::Arc;

use graphkit::checkpoint::InMemorySaver;
use graphkit::{
    Command, CompileOptions, END, Error, NodeContext, Outcome, Paused, RunConfig, START, State,
    StateGraph,
};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Publication {
    draft: String,
    verdict: String,
    #[reducer(append)]
    log: Vec<String>,
}

async fn write_draft(_: Arc<Publication>) -> PublicationUpdate {
    PublicationUpdate::new()
        .draft("Graphs are a good fit for agents.")
        .log(vec!["drafted".into()])
}

/// Asks a human to review the draft; the run pauses here until it is resumed.
async fn review(state: Arc<Publication>, ctx: NodeContext) -> Result<PublicationUpdate, Error> {
    let verdict: String = ctx.interrupt_as(serde_json::json!({
        "question": "Publish this draft? (approve / reject)",
        "draft": state.draft,
    }))?;
    Ok(PublicationUpdate::new()
        .verdict(verdict.clone())
        .log(vec![format!("reviewed: {verdict}")]))
}

async fn publish(_: Arc<Publication>) -> PublicationUpdate {
    PublicationUpdate::new().log(vec!["published".into()])
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut graph = StateGraph::<Publication>::new();
    graph
        .add_node("write_draft", write_draft)
        .add_node("review", review)
        .add_node("publish", publish)
        .add_edge(START, "write_draft")
        .add_edge("write_draft", "review")
        .add_conditional_edges(
            "review",
            |s: &Publication| {
                if s.verdict == "approve" {
                    "publish"
                } else {
                    END
                }
            },
            ["publish", END],
        )
        .add_edge("publish", END);
    let graph =
        graph.compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))?;
    let thread = RunConfig::new().thread_id("review-1");

    match graph
        .invoke_with(PublicationUpdate::new(), thread.clone())
        .await?
    {
        Outcome::Paused(Paused { interrupts, .. }) => {
            for interrupt in &interrupts {
                println!(
                    "paused in `{}` (interrupt {}):",
                    interrupt.node, interrupt.id
                );
                println!(
                    "{}",
                    serde_json::to_string_pretty(&interrupt.payload).unwrap_or_default()
                );
            }
        }
        Outcome::Finished(state) => println!("expected a pause, the run finished: {state:?}"),
    }

    println!("\nresuming with \"approve\"\n");
    let done = graph
        .invoke_with(Command::resume("approve"), thread)
        .await?
        .finished()?;
    println!("{done:#?}");
    Ok(())
}
