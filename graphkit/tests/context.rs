//! Context values: given once to the compiled graph or per run, read by nodes by type.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::{END, Error, RunConfig, RunContext, START, State, StateGraph};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Reply {
    text: String,
}

struct Style {
    greeting: &'static str,
}

trait Greeter: Send + Sync {
    fn greet(&self, name: &str) -> String;
}

struct English;

impl Greeter for English {
    fn greet(&self, name: &str) -> String {
        format!("hello {name}")
    }
}

fn one_node<Args>(
    node: impl graphkit::nodes::IntoNode<Reply, Args>,
) -> graphkit::CompiledGraph<Reply> {
    let mut graph = StateGraph::<Reply>::new();
    graph
        .add_node("greet", node)
        .add_edge(START, "greet")
        .add_edge("greet", END);
    graph.compile().unwrap()
}

async fn styled(_: Arc<Reply>, style: RunContext<Style>) -> ReplyUpdate {
    ReplyUpdate::new().text(style.greeting.to_string())
}

#[tokio::test]
async fn a_graph_s_context_reaches_its_nodes_and_a_run_s_value_wins() {
    let graph = one_node(styled).with_context(Style { greeting: "graph" });
    let from_graph = graph.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(from_graph.into_state().text, "graph");

    let config = RunConfig::new().with_context(Style { greeting: "run" });
    let from_run = graph.invoke_with(ReplyUpdate::new(), config).await.unwrap();
    assert_eq!(from_run.into_state().text, "run");
}

#[tokio::test]
async fn a_trait_object_is_a_context_type() {
    async fn greet(_: Arc<Reply>, greeter: RunContext<dyn Greeter>) -> ReplyUpdate {
        ReplyUpdate::new().text(greeter.greet("Ada"))
    }
    let greeter: Arc<dyn Greeter> = Arc::new(English);
    let graph = one_node(greet).with_shared_context(greeter);
    let out = graph.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hello Ada");
}

#[tokio::test]
async fn a_missing_context_names_the_type_asked_for_and_the_types_there_are() {
    async fn greet(_: Arc<Reply>, greeter: RunContext<dyn Greeter>) -> ReplyUpdate {
        ReplyUpdate::new().text(greeter.greet("Ada"))
    }
    // The concrete type is not the trait object the node asks for.
    let graph = one_node(greet).with_context(English);
    let err = graph.invoke(ReplyUpdate::new()).await.unwrap_err();
    let Error::NodeFailed { source, .. } = &err else {
        panic!("expected the node to fail, got {err}");
    };
    let message = source.to_string();
    assert!(
        message.contains("`dyn integration::context::Greeter`"),
        "{message}"
    );
    assert!(
        message.contains("(they have: integration::context::English)"),
        "{message}"
    );
    assert!(
        message.contains("with_shared_context::<dyn Trait>"),
        "{message}"
    );
}

#[tokio::test]
async fn a_subgraph_reads_its_own_context_and_its_parent_s() {
    struct Punctuation(&'static str);
    async fn child_node(
        state: Arc<Reply>,
        style: RunContext<Style>,
        mark: RunContext<Punctuation>,
    ) -> ReplyUpdate {
        let Punctuation(mark) = *mark;
        ReplyUpdate::new().text(format!("{}{}{mark}", state.text, style.greeting))
    }
    let child = one_node(child_node).with_context(Punctuation("!"));
    let mut parent = StateGraph::<Reply>::new();
    parent
        .add_subgraph("child", child)
        .add_edge(START, "child")
        .add_edge("child", END);
    let parent = parent
        .compile()
        .unwrap()
        .with_context(Style { greeting: "hi" });
    let out = parent.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hi!");
}
