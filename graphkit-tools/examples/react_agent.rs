//! A ReAct agent over the sandboxed file tools, the todo list and think.
//!
//! Offline by default: the model is a `FunctionModel` **test double** that replays the
//! replies written below (it does not think; the tools run for real in a temp directory).
//! With `--model SPEC` (e.g. `openai:gpt-4o`, `ollama:qwen2.5`) a real provider answers.
//!
//! ```text
//! cargo run -p graphkit-tools --example react_agent
//! cargo run -p graphkit-tools --example react_agent -- --model openai:gpt-4o
//! ```

use std::sync::Arc;

use graphkit_llm::{
    AssistantMessage, ChatModel, FunctionModel, Message, ToolCall, init_chat_model,
};
use graphkit_tools::{AgentState, DynTool, ReactAgent, SandboxedFs, ThinkTool, todo_tools};
use serde_json::json;

const TASK: &str = "Plan a short note about Rust ownership, write it to notes/ownership.md, and mark the plan done.";

/// A **test double**: replies follow a fixed script, one per model call. The only thing
/// it reads from the conversation is the todo id the `todo_update` tool assigned, so it
/// can close that item.
fn scripted() -> FunctionModel {
    FunctionModel::new(|request| {
        let turn = request.messages.iter().filter(|m| m.role() == "assistant").count();
        let todo_id = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(t) if t.name.as_deref() == Some("todo_update")))
            .find_map(|m| m.text().split('[').nth(1)?.split(']').next().map(str::to_owned))
            .unwrap_or_default();
        Ok(match turn {
            0 => AssistantMessage::with_tool_calls(
                "I'll plan first.",
                vec![
                    ToolCall::new("think", json!({"thought": "Two steps: write the note, then close the todo."})),
                    ToolCall::new("todo_update", json!({"items": [{"description": "Write notes/ownership.md", "priority": "high"}]})),
                ],
            ),
            1 => AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new(
                        "write_file",
                        json!({"path": "notes/ownership.md", "content": "# Ownership\n\nEach value has one owner; borrowing lends access without moving it.\n"}),
                    ),
                    ToolCall::new("todo_update", json!({"items": [{"id": todo_id, "status": "done", "notes": "written"}]})),
                ],
            ),
            2 => AssistantMessage::with_tool_calls("", vec![ToolCall::new("list_files", json!({"recursive": true}))]),
            _ => AssistantMessage::text("Done: the note is in notes/ownership.md and the todo is closed."),
        })
    })
    .with_name("scripted-test-double")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // RUST_LOG picks what is logged (for example RUST_LOG=graphkit=debug); off by default.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let spec = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let workspace = std::env::temp_dir().join(format!("graphkit-react-{}", std::process::id()));
    let fs = SandboxedFs::new(&workspace)?;

    let mut tools: Vec<DynTool<AgentState>> = fs.tools();
    tools.extend(todo_tools::<AgentState>());
    tools.push(Arc::new(ThinkTool));

    let model: Arc<dyn ChatModel> = match &spec {
        Some(spec) => init_chat_model(spec)?,
        None => {
            println!(
                "(offline: replies come from a scripted test double, not a model; pass --model SPEC for a real model)\n"
            );
            Arc::new(scripted())
        }
    };
    let agent = ReactAgent::from_shared(model, tools)
        .system_prompt("You are a careful assistant. Keep a todo list, write files in the workspace, and finish with a short answer.")
        .max_iterations(10)
        .compile()?;
    println!("{}\n", agent.draw_ascii());

    let done = agent.invoke(AgentState::user(TASK)).await?.into_state();
    for message in &done.messages {
        match message {
            Message::Assistant(m) => {
                if !m.content.is_empty() {
                    println!("assistant: {}", m.content);
                }
                for call in &m.tool_calls {
                    println!("assistant → {}({})", call.name, call.arguments);
                }
            }
            Message::Tool(t) => {
                let tag = if t.is_error { "tool error" } else { "tool" };
                println!(
                    "{tag} [{}]: {}",
                    t.name.as_deref().unwrap_or("?"),
                    t.content.replace('\n', "\n    ")
                );
            }
            other => println!("{}: {}", other.role(), other.text()),
        }
    }
    println!("\ntodos:");
    for item in &done.todos.items {
        println!("  {}", graphkit_tools::prebuilt::todo::render_item(item));
    }
    println!("workspace: {}", workspace.display());
    Ok(())
}
