//! LangGraph's map-reduce how-to (subjects for a topic, one joke per subject in parallel
//! with `Send`, then the best joke) ported to graphkit with `SendTo`.
//! Side by side with its Python twin in docs/from-langgraph.md.
//!
//! Offline: the model is a `FunctionModel` **test double** (below the port, not counted).
//!
//! ```text
//! cargo run -p graphkit-tools --example port_map_reduce
//! ```

// port: begin
use std::sync::Arc;

use graphkit::{END, Input, START, SendTo, State, StateGraph};
use graphkit_llm::error::Result;
use graphkit_llm::{ChatModel, Message, Model};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Overall {
    topic: String,
    subjects: Vec<String>,
    #[reducer(append)]
    jokes: Vec<String>,
    best_joke: String,
}

async fn generate_topics(state: Arc<Overall>, model: Model) -> Result<OverallUpdate> {
    let prompt = Message::user(format!("Name three subjects related to {}.", state.topic));
    let subjects: Vec<String> = model.with_structured_output().invoke(&[prompt]).await?;
    Ok(OverallUpdate::new().subjects(subjects))
}

fn continue_to_jokes(state: &Overall) -> Vec<SendTo> {
    SendTo::each("generate_joke", state.subjects.clone())
}

async fn generate_joke(Input(subject): Input<String>, model: Model) -> Result<OverallUpdate> {
    let prompt = Message::user(format!("Write a joke about {subject}."));
    let joke: String = model.with_structured_output().invoke(&[prompt]).await?;
    Ok(OverallUpdate::new().jokes(vec![joke]))
}

async fn best_joke(state: Arc<Overall>, model: Model) -> Result<OverallUpdate> {
    let mut prompt = format!("Which joke about {} is best? Give its id.", state.topic);
    for (i, joke) in state.jokes.iter().enumerate() {
        prompt += &format!("\n{i}: {joke}");
    }
    let prompt = Message::user(prompt);
    let best: usize = model.with_structured_output().invoke(&[prompt]).await?;
    Ok(OverallUpdate::new().best_joke(state.jokes[best].clone()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut graph = StateGraph::<Overall, dyn ChatModel>::new();
    graph.add_node("generate_topics", generate_topics);
    graph.add_node("generate_joke", generate_joke);
    graph.add_node("best_joke", best_joke);
    graph.add_edge(START, "generate_topics");
    graph.add_conditional_edges("generate_topics", continue_to_jokes, ["generate_joke"]);
    graph.add_edge("generate_joke", "best_joke");
    graph.add_edge("best_joke", END);
    let graph = graph.compile()?.with_shared_context(scripted_model());

    let input = OverallUpdate::new().topic("animals");
    let out = graph.invoke(input).await?.into_state();
    assert_eq!(out.best_joke, "Owls give a hoot about homework.");
    Ok(())
}
// port: end

// Test double (not counted): answers each prompt by what it asks for, so the parallel joke
// calls may come in any order. With a real model, write
// `init_chat_model("anthropic:claude-sonnet-4-5")?` where `scripted_model()` is.
fn scripted_model() -> Arc<dyn ChatModel> {
    Arc::new(graphkit_llm::FunctionModel::from_text(|messages| {
        let prompt = messages.last().map(Message::text).unwrap_or_default();
        if prompt.starts_with("Name three subjects") {
            r#"{"value": ["cats", "owls", "penguins"]}"#.to_owned()
        } else if let Some(subject) = prompt.strip_prefix("Write a joke about ") {
            let joke = match subject.trim_end_matches('.') {
                "owls" => "Owls give a hoot about homework.",
                "cats" => "Cats never lose an argument: they just walk off.",
                _ => "Penguins dress formally for every occasion.",
            };
            serde_json::json!({ "value": joke }).to_string()
        } else {
            assert!(
                prompt.contains("1: Owls give a hoot"),
                "jokes in the order sent"
            );
            r#"{"value": 1}"#.to_owned()
        }
    }))
}
