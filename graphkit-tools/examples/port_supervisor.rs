//! LangGraph's multi-agent supervisor (a model routes each turn to a researcher or a
//! writer through `Command`, and finishes) ported to graphkit.
//! Side by side with its Python twin in docs/from-langgraph.md.
//!
//! Offline: the model is a `FunctionModel` **test double** (below the port, not counted).
//!
//! ```text
//! cargo run -p graphkit-tools --example port_supervisor
//! ```

// port: begin
use std::sync::Arc;

use graphkit::{Command, END, START, StateGraph};
use graphkit_llm::{ChatModel, LlmError, Message, Model};
use graphkit_tools::{AgentState, AgentStateUpdate};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Route {
    #[schemars(extend("enum" = ["researcher", "writer", "FINISH"]))]
    next: String,
}

async fn supervisor(state: Arc<AgentState>, model: Model) -> Result<Command<AgentState>, LlmError> {
    let system = Message::system("Pick researcher or writer to act next, or FINISH.");
    let messages = [vec![system], state.messages.to_vec()].concat();
    let route: Route = model.with_structured_output().invoke(&messages).await?;
    Ok(Command::goto_only(match route.next.as_str() {
        "FINISH" => END,
        worker => worker,
    }))
}

const RESEARCH: &str = "Find the facts the question needs.";
const WRITE: &str = "Answer the question from the facts found.";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut graph = StateGraph::<AgentState, dyn ChatModel>::new();
    graph.add_node("supervisor", supervisor);
    for (name, prompt) in [("researcher", RESEARCH), ("writer", WRITE)] {
        graph.add_node(name, move |s: Arc<AgentState>, model: Model| async move {
            let messages = [vec![Message::system(prompt)], s.messages.to_vec()].concat();
            let reply = model.invoke(&messages).await?;
            Ok::<_, LlmError>(AgentStateUpdate::new().messages([reply.into()]))
        });
        graph.add_edge(name, "supervisor");
    }
    graph.add_edge(START, "supervisor");
    let graph = graph.compile()?.with_shared_context(scripted_model());

    let input = AgentState::user("How far is the Moon?");
    let chat = graph.invoke(input).await?.into_state();
    let answer = chat.messages.last().map(Message::text);
    assert_eq!(answer, Some("The Moon is about 384,400 km away."));
    Ok(())
}
// port: end

// Test double (not counted): as supervisor it routes to the researcher, then to the writer,
// then finishes; as a worker it answers its prompt from a fixed script. With a real model,
// write `init_chat_model("openai:gpt-4.1")?` where `scripted_model()` is.
fn scripted_model() -> Arc<dyn ChatModel> {
    use graphkit_llm::{AssistantMessage, FunctionModel};
    Arc::new(FunctionModel::new(|request| {
        let reply = match request.messages[0].text() {
            RESEARCH => "Fact: 384,400 km on average.".to_owned(),
            WRITE => "The Moon is about 384,400 km away.".to_owned(),
            _ => {
                let format = request.response_format.as_ref().expect("a structured call");
                let choices = &format.schema["properties"]["next"]["enum"];
                assert_eq!(
                    *choices,
                    serde_json::json!(["researcher", "writer", "FINISH"])
                );
                let turns = request.messages.iter().filter(|m| m.role() == "assistant");
                let next = ["researcher", "writer", "FINISH"][turns.count()];
                serde_json::json!({ "next": next }).to_string()
            }
        };
        Ok(AssistantMessage::text(reply))
    }))
}
