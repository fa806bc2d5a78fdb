//! LangGraph's human-in-the-loop tool approval (the run pauses with `interrupt` before a
//! tool call runs, and continues with `Command::resume` on its checkpointed thread) ported
//! to graphkit. Side by side with its Python twin in docs/from-langgraph.md.
//!
//! Offline: the model is a `ScriptedModel` **test double** (below the port, not counted).
//!
//! ```text
//! cargo run -p graphkit-tools --example port_approval
//! ```

// port: begin
use std::sync::Arc;

use graphkit::checkpoint::InMemorySaver;
use graphkit::{Command, CompileOptions, END, Error, NodeContext, RunConfig, START, StateGraph};
use graphkit_llm::{ChatModel, LlmError, Message, Model};
use graphkit_tools::{
    AgentState, AgentStateUpdate, MessagesState, ToolNode, tool, tools_condition,
};
use serde_json::json;

/// Send an email.
#[tool]
async fn send_email(to: String, body: String) -> String {
    format!("Sent to {to}: {body}")
}

async fn agent(state: Arc<AgentState>, model: Model) -> Result<AgentStateUpdate, LlmError> {
    Ok(AgentStateUpdate::new().messages([model.invoke(&state.messages).await?.into()]))
}

async fn review(state: Arc<AgentState>, ctx: NodeContext) -> Result<Command<AgentState>, Error> {
    let call = &state.last_tool_calls()[0];
    let question = json!({"question": "Send this email?", "args": call.arguments});
    let answer: String = ctx.interrupt_as(question)?;
    if answer == "yes" {
        return Ok(Command::goto_only("tools"));
    }
    let refusal = Message::tool_result(&call.id, format!("The user refused: {answer}"));
    let update = AgentStateUpdate::new().messages([refusal]);
    Ok(Command::new().update(update).goto("agent"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = ToolNode::new((send_email,));
    let model: Arc<dyn ChatModel> = Arc::new(scripted_model().bind_tools(tools.specs()));

    let mut graph = StateGraph::<AgentState, dyn ChatModel>::new();
    graph.add_node("agent", agent);
    graph.add_node("review", review);
    graph.add_node("tools", tools);
    graph.add_edge(START, "agent");
    let route = [("tools", "review"), (END, END)];
    graph.add_conditional_edges_mapped("agent", tools_condition::<AgentState>, route);
    graph.add_edge("tools", "agent");
    let options = CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new()));
    let graph = graph.compile_with(options)?.with_shared_context(model);

    let thread = RunConfig::new().thread_id("1");
    let input = AgentState::user("Tell ada@example.com the demo is at 3pm.");
    let paused = graph.invoke_with(input, thread.clone()).await?;
    println!("{}", paused.interrupts()[0].payload);
    let done = graph.invoke_with(Command::resume("yes"), thread).await?;
    let answer = done.state().messages.last().map(Message::text);
    assert_eq!(answer, Some("Done: Ada knows the demo is at 3pm."));
    Ok(())
}
// port: end

// Test double (not counted): asks to send the email, then, once the tool has answered,
// confirms. With a real model, write `init_chat_model("openai:gpt-4.1")?` where
// `scripted_model()` is.
fn scripted_model() -> Arc<dyn ChatModel> {
    use graphkit_llm::{AssistantMessage, FunctionModel, ToolCall};
    Arc::new(FunctionModel::new(|request| {
        Ok(match request.latest_tool_results().next() {
            None => {
                let email = json!({"to": "ada@example.com", "body": "The demo is at 3pm."});
                ToolCall::new("send_email", email).into()
            }
            Some(sent) => {
                assert_eq!(sent.content, "Sent to ada@example.com: The demo is at 3pm.");
                AssistantMessage::text("Done: Ada knows the demo is at 3pm.")
            }
        })
    }))
}
