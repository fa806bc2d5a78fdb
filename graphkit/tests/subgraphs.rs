//! Subgraphs as nodes: same state type, mapped state type, and commands to the parent.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::{Command, END, Error, START, Scoped, State, StateGraph};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Doc {
    #[reducer(append)]
    log: Vec<String>,
    title: String,
}

fn step(name: &'static str) -> impl Fn(Arc<Doc>) -> std::future::Ready<DocUpdate> {
    move |_| std::future::ready(DocUpdate::new().log(vec![name.into()]))
}

#[tokio::test]
async fn a_same_state_subgraph_writes_its_updates_once_into_the_parent() {
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("c1", step("c1"))
        .add_node("c2", step("c2"))
        .add_edge(START, "c1")
        .add_edge("c1", "c2");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_node("before", step("before"))
        .add_subgraph("child", child.compile().unwrap())
        .add_node("after", step("after"))
        .add_edge(START, "before")
        .add_edge("before", "child")
        .add_edge("child", "after")
        .add_edge("after", END);
    let out = parent
        .compile()
        .unwrap()
        .invoke(DocUpdate::new())
        .await
        .unwrap()
        .into_state();
    // The child starts from the parent's state; its appends land once, not duplicated.
    assert_eq!(out.log, ["before", "c1", "c2", "after"]);
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Summary {
    text: String,
    #[reducer(add)]
    words: usize,
}

#[tokio::test]
async fn a_mapped_subgraph_translates_state_both_ways() {
    let mut child = StateGraph::<Summary>::new();
    child
        .add_node("count", |s: Arc<Summary>| async move {
            SummaryUpdate::new().words(s.text.split_whitespace().count())
        })
        .add_edge(START, "count");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_subgraph_mapped(
            "summarize",
            child.compile().unwrap(),
            |d: &Doc| SummaryUpdate::new().text(d.title.clone()),
            |s: &Summary| DocUpdate::new().log(vec![format!("{} words", s.words)]),
        )
        .add_edge(START, "summarize");
    let out = parent
        .compile()
        .unwrap()
        .invoke(DocUpdate::new().title("three little words"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["3 words"]);
}

#[tokio::test]
async fn a_command_to_the_parent_routes_in_the_parent() {
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("escalate", |_: Arc<Doc>| async {
            Command::<Doc>::new()
                .update(DocUpdate::new().log(vec!["escalated".into()]))
                .goto("human")
                .to_parent()
        })
        .add_node("unreached", step("unreached"))
        .add_edge(START, "escalate")
        .add_edge("escalate", "unreached");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_subgraph("child", child.compile().unwrap())
        .add_node("human", step("human"))
        .add_edge(START, "child");
    let out = parent
        .compile()
        .unwrap()
        .invoke(DocUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["escalated", "human"]);
}

#[tokio::test]
async fn a_command_to_the_parent_from_a_root_graph_is_an_error() {
    let mut g = StateGraph::<Doc>::new();
    g.add_node("orphan", |_: Arc<Doc>| async {
        Command::<Doc>::goto_only("x").to_parent()
    })
    .add_edge(START, "orphan");
    let err = g
        .compile()
        .unwrap()
        .invoke(DocUpdate::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::NoParentGraph { node, .. } if node == "orphan"),
        "{err}"
    );
}

#[tokio::test]
async fn a_failing_subgraph_names_the_subgraph_node_and_the_inner_node() {
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("inner", |_: Arc<Doc>| async {
            Err::<DocUpdate, _>("inner broke")
        })
        .add_edge(START, "inner");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_subgraph("child", child.compile().unwrap())
        .add_edge(START, "child");
    let err = parent
        .compile()
        .unwrap()
        .invoke(DocUpdate::new())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`child`") && text.contains("`inner`") && text.contains("inner broke"),
        "{text}"
    );
}

#[tokio::test]
async fn a_same_state_subgraph_emits_no_empty_update_for_its_input() {
    use futures::StreamExt;
    use graphkit::reducers::StateUpdate;
    use graphkit::{StreamMode, StreamPayload};
    let mut child = StateGraph::<Doc>::new();
    child.add_node("c1", step("c1")).add_edge(START, "c1");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_subgraph("child", child.compile().unwrap())
        .add_edge(START, "child")
        .add_edge("child", END);
    let updates: Vec<(String, DocUpdate)> = parent
        .compile()
        .unwrap()
        .stream(DocUpdate::new(), StreamMode::Updates)
        .filter_map(|e| async move {
            match e.unwrap().payload {
                StreamPayload::Updates {
                    node,
                    update: Scoped::Root(update),
                    ..
                } => Some((node.to_string(), update)),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].0, "child");
    assert!(!updates[0].1.is_empty());
}
