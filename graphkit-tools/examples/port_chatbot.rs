//! LangGraph's quickstart, a chatbot with calculator tools, ported to graphkit: the model
//! node and the `ToolNode` in a loop, routed by `tools_condition`.
//! Side by side with its Python twin in docs/from-langgraph.md.
//!
//! Offline: the model is a `ScriptedModel` **test double** (below the port, not counted).
//!
//! ```text
//! cargo run -p graphkit-tools --example port_chatbot
//! ```

// port: begin
use std::sync::Arc;

use graphkit::{END, START, StateGraph};
use graphkit_llm::{ChatModel, LlmError, Message, Model};
use graphkit_tools::{AgentState, AgentStateUpdate, ToolNode, tool_fn, tools_condition};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Pair {
    a: f64,
    b: f64,
}

async fn chatbot(state: Arc<AgentState>, model: Model) -> Result<AgentStateUpdate, LlmError> {
    Ok(AgentStateUpdate::new().messages([model.invoke(&state.messages).await?.into()]))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let add = tool_fn("add", "Add a and b.", |p: Pair| async move {
        Ok((p.a + p.b).to_string())
    });
    let multiply = tool_fn("multiply", "Multiply a and b.", |p: Pair| async move {
        Ok((p.a * p.b).to_string())
    });
    let divide = tool_fn("divide", "Divide a by b.", |p: Pair| async move {
        Ok((p.a / p.b).to_string())
    });
    let tools = ToolNode::new((add, multiply, divide));
    let model: Arc<dyn ChatModel> = Arc::new(scripted_model().bind_tools(tools.specs()));

    let mut graph = StateGraph::<AgentState, dyn ChatModel>::new();
    graph.add_node("chatbot", chatbot);
    graph.add_node("tools", tools);
    graph.add_edge(START, "chatbot");
    graph.add_conditional_edges("chatbot", tools_condition::<AgentState>, ["tools", END]);
    graph.add_edge("tools", "chatbot");
    let graph = graph.compile()?.with_shared_context(model);

    let input = AgentState::user("What is (3 + 4) * 5?");
    let chat = graph.invoke(input).await?.into_state();
    let answer = chat.messages.last().map(Message::text);
    assert_eq!(answer, Some("(3 + 4) * 5 = 35"));
    Ok(())
}
// port: end

// Test double (not counted): asks for `add`, then `multiply` with the sum the tool
// returned, then answers with the product; it checks that the tools' results come back.
// With a real model, write `init_chat_model("anthropic:claude-sonnet-4-5")?` where
// `scripted_model()` is.
fn scripted_model() -> Arc<dyn ChatModel> {
    use graphkit_llm::{AssistantMessage, FunctionModel, ToolCall};
    use serde_json::json;
    Arc::new(FunctionModel::new(|request| {
        let result = request
            .latest_tool_results()
            .next()
            .map(|t| t.content.as_str());
        Ok(match result {
            None => ToolCall::new("add", json!({"a": 3, "b": 4})).into(),
            Some("7") => ToolCall::new("multiply", json!({"a": 7, "b": 5})).into(),
            Some(product) => AssistantMessage::text(format!("(3 + 4) * 5 = {product}")),
        })
    }))
}
