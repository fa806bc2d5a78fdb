//! `graphkit-test-server`: the `graphkit-server` binary (same flags, same demo graph
//! `agent`) plus the graphs the cross-process and client tests drive. Built for those tests
//! only.
//!
//! - `researcher`: `graphkit_server::demo::researcher_graph`, a tool call inside a subgraph
//!   (the JS SDK's streaming protocol check, `clients/js/thread_stream.mjs`).
//! - `steps`: START → `step_1` → `step_2` → `step_3` → `step_4` → END; each step appends its
//!   name to `done`. Every execution records a start and an end marker in the store under
//!   `["exec", <thread_id>]`, so a test can count how often each step ran. With `gated`
//!   set, a step waits until the test puts the key `<step>` under `["gate", <thread_id>]`
//!   (checked every 20 ms, cancellably): the test decides where a run stands when it kills
//!   a process.
//! - `tally`: START → `work` → END; `work` records one marker under `["tally", <thread_id>]`
//!   per execution and appends `"work"` to `done`.

use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use graphkit::error::BoxError;
use graphkit::store::Store;
use graphkit::{BuildError, CompiledGraph, END, Error, NodeContext, START, State, StateGraph};
use graphkit_server::{Server, cli, demo};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The state of the test graphs.
#[derive(State, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Steps {
    /// The steps that completed, in order.
    #[reducer(append)]
    #[serde(default)]
    done: Vec<String>,
    /// Steps wait for their gate key in the store.
    #[serde(default)]
    gated: bool,
}

fn store_of(ctx: &NodeContext) -> Result<(Arc<dyn Store>, String), BoxError> {
    let store = ctx
        .store()
        .cloned()
        .ok_or("the test graphs need the server's store")?;
    let thread = ctx
        .config()
        .thread_id
        .as_deref()
        .ok_or("the test graphs need a thread")?
        .to_owned();
    Ok((store, thread))
}

fn marker() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

async fn step(state: Arc<Steps>, ctx: NodeContext) -> Result<StepsUpdate, BoxError> {
    let (store, thread) = store_of(&ctx)?;
    let node = ctx.node().to_owned();
    store
        .put(
            &["exec", &thread],
            &format!("{node}:start:{}", marker()),
            json!({}),
        )
        .await?;
    if state.gated {
        while store.get(&["gate", &thread], &node).await?.is_none() {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(20)) => {}
                () = ctx.cancellation().cancelled() => return Err(Error::Cancelled.into()),
            }
        }
    }
    store
        .put(
            &["exec", &thread],
            &format!("{node}:end:{}", marker()),
            json!({}),
        )
        .await?;
    Ok(StepsUpdate::new().done(vec![node]))
}

async fn work(_: Arc<Steps>, ctx: NodeContext) -> Result<StepsUpdate, BoxError> {
    let (store, thread) = store_of(&ctx)?;
    store.put(&["tally", &thread], &marker(), json!({})).await?;
    Ok(StepsUpdate::new().done(vec!["work".to_owned()]))
}

fn steps_graph() -> Result<CompiledGraph<Steps>, BuildError> {
    let mut graph = StateGraph::<Steps>::new();
    let names = ["step_1", "step_2", "step_3", "step_4"];
    for name in names {
        graph.add_node(name, step);
    }
    graph.add_edge(START, names[0]);
    for pair in names.windows(2) {
        graph.add_edge(pair[0], pair[1]);
    }
    graph.add_edge(names[3], END);
    graph.compile()
}

fn tally_graph() -> Result<CompiledGraph<Steps>, BuildError> {
    let mut graph = StateGraph::<Steps>::new();
    graph
        .add_node("work", work)
        .add_edge(START, "work")
        .add_edge("work", END);
    graph.compile()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging("warn");
    let server = Server::new()
        .graph("agent", demo::agent_graph()?)
        .graph_without_schema("researcher", demo::researcher_graph()?)
        .graph("steps", steps_graph()?)
        .graph("tally", tally_graph()?);
    cli::run(cli::Args::parse(), server).await?;
    Ok(())
}
