//! Context values: given once to the compiled graph or per run, read by nodes by type.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::{END, Error, Provides, RunConfig, RunContext, START, State, StateGraph};
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

/// A one-node graph whose context type is `C`.
fn one_node<C: ?Sized + 'static, Args>(
    node: impl graphkit::nodes::IntoNode<Reply, Args, C>,
) -> graphkit::CompiledGraph<Reply> {
    let mut graph = StateGraph::<Reply, C>::new();
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
    let graph = one_node::<Style, _>(styled).with_context(Style { greeting: "graph" });
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
    let graph = one_node::<dyn Greeter, _>(greet).with_shared_context(greeter);
    let out = graph.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hello Ada");
}

/// A context of several parts, as a real graph has (a model, settings).
#[derive(Provides)]
struct Deps {
    #[provide]
    greeter: Arc<dyn Greeter>,
    #[provide]
    style: Arc<Style>,
}

/// The same parts, with `Provides` written by hand.
struct HandWritten {
    greeter: Arc<dyn Greeter>,
}

impl Provides<dyn Greeter> for HandWritten {
    fn provide(deps: &Arc<Self>) -> Arc<dyn Greeter> {
        Arc::clone(&deps.greeter)
    }
}

impl Provides<Style> for HandWritten {
    fn provide(_: &Arc<Self>) -> Arc<Style> {
        Arc::new(Style {
            greeting: "by hand",
        })
    }
}

#[tokio::test]
async fn provides_written_by_hand_serves_the_same_nodes() {
    let graph = one_node::<HandWritten, _>(greet_in_style).with_context(HandWritten {
        greeter: Arc::new(English),
    });
    let out = graph.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hello Ada, by hand");
}

struct Shouting;

impl Greeter for Shouting {
    fn greet(&self, name: &str) -> String {
        format!("HELLO {name}")
    }
}

async fn greet_in_style(
    _: Arc<Reply>,
    greeter: RunContext<dyn Greeter>,
    style: RunContext<Style>,
) -> ReplyUpdate {
    ReplyUpdate::new().text(format!("{}, {}", greeter.greet("Ada"), style.greeting))
}

#[tokio::test]
async fn nodes_read_the_parts_the_graph_s_context_provides_and_a_run_may_replace_one_part() {
    let graph = one_node::<Deps, _>(greet_in_style).with_context(Deps {
        greeter: Arc::new(English),
        style: Arc::new(Style { greeting: "bye" }),
    });
    let out = graph.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hello Ada, bye");

    // A run's value of one part wins over what the graph's context provides for it.
    let loud: Arc<dyn Greeter> = Arc::new(Shouting);
    let config = RunConfig::new().with_shared_context(loud);
    let out = graph.invoke_with(ReplyUpdate::new(), config).await.unwrap();
    assert_eq!(out.into_state().text, "HELLO Ada, bye");

    // A run's whole context wins over the graph's.
    let config = RunConfig::new().with_context(Deps {
        greeter: Arc::new(Shouting),
        style: Arc::new(Style { greeting: "later" }),
    });
    let out = graph.invoke_with(ReplyUpdate::new(), config).await.unwrap();
    assert_eq!(out.into_state().text, "HELLO Ada, later");
}

#[tokio::test]
async fn a_run_without_the_graph_s_context_fails_before_any_node_runs() {
    let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::clone(&ran);
    let mut graph = StateGraph::<Reply, dyn Greeter>::new();
    graph
        .add_node("first", move |_: Arc<Reply>| {
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            async { ReplyUpdate::new() }
        })
        .add_node(
            "greet",
            |_: Arc<Reply>, g: RunContext<dyn Greeter>| async move {
                ReplyUpdate::new().text(g.greet("Ada"))
            },
        )
        .add_edge(START, "first")
        .add_edge("first", "greet")
        .add_edge("greet", END);
    // The concrete type is not the trait object the graph reads.
    let graph = graph.compile().unwrap().with_context(English);
    let err = graph.invoke(ReplyUpdate::new()).await.unwrap_err();
    let Error::ContextNotGiven {
        type_name,
        available,
    } = &err
    else {
        panic!("expected ContextNotGiven, got {err}");
    };
    assert_eq!(*type_name, "dyn integration::context::Greeter");
    assert_eq!(available, &["integration::context::English"]);
    let message = err.to_string();
    assert!(
        message.contains("with_shared_context::<dyn Trait>"),
        "{message}"
    );
    assert!(
        !ran.load(std::sync::atomic::Ordering::SeqCst),
        "no node may run"
    );
}

#[tokio::test]
async fn a_subgraph_reads_the_context_of_the_run_it_is_part_of() {
    struct Punctuation(&'static str);
    struct ChildDeps {
        mark: Punctuation,
    }
    async fn child_node(state: Arc<Reply>, deps: RunContext<ChildDeps>) -> ReplyUpdate {
        ReplyUpdate::new().text(format!("{}{}", state.text, deps.mark.0))
    }
    // The child is compiled without its context: the parent's run brings it.
    let child = one_node::<ChildDeps, _>(child_node);
    let mut parent = StateGraph::<Reply, Style>::new();
    parent
        .add_node("greet", styled)
        .add_subgraph("child", child)
        .add_edge(START, "greet")
        .add_edge("greet", "child")
        .add_edge("child", END);
    let parent = parent
        .compile()
        .unwrap()
        .with_context(Style { greeting: "hi" })
        .with_context(ChildDeps {
            mark: Punctuation("!"),
        });
    let out = parent.invoke(ReplyUpdate::new()).await.unwrap();
    assert_eq!(out.into_state().text, "hi!");
}
