//! A model given to the graph as context: nodes read it as `RunContext<dyn ChatModel>` or
//! `RunContext<M>` and use it as a model, without clones or forwarding closures.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use graphkit::{END, RunContext, START, State, StateGraph};
use graphkit_llm::{ChatModel, Message, ScriptedModel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Answer {
    text: String,
    score: u8,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Grade {
    score: u8,
}

#[tokio::test]
async fn a_node_calls_the_graph_s_model_as_a_trait_object() {
    async fn ask(
        _: Arc<Answer>,
        model: RunContext<dyn ChatModel>,
    ) -> Result<AnswerUpdate, graphkit_llm::LlmError> {
        let reply = model.invoke(&[Message::user("2 + 2?")]).await?;
        Ok(AnswerUpdate::new().text(reply.content))
    }
    let mut graph = StateGraph::<Answer, dyn ChatModel>::new();
    graph
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .add_edge("ask", END);
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new(["4"]));
    let graph = graph.compile().unwrap().with_shared_context(model);
    let out = graph
        .invoke(AnswerUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.text, "4");
}

#[tokio::test]
async fn a_concrete_model_in_the_context_wraps_into_structured_output() {
    async fn grade(
        _: Arc<Answer>,
        model: RunContext<ScriptedModel>,
    ) -> Result<AnswerUpdate, graphkit_llm::LlmError> {
        // `RunContext<M>` is a model: it wraps by value, like the model itself.
        let grader = model.with_structured_output::<Grade>();
        let grade = grader.invoke(&[Message::user("grade it")]).await?;
        Ok(AnswerUpdate::new().score(grade.score))
    }
    let mut graph = StateGraph::<Answer, ScriptedModel>::new();
    graph
        .add_node("grade", grade)
        .add_edge(START, "grade")
        .add_edge("grade", END);
    let graph = graph
        .compile()
        .unwrap()
        .with_context(ScriptedModel::new([r#"{"score": 7}"#]));
    let out = graph
        .invoke(AnswerUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.score, 7);
}
