//! A supervisor delegating to two worker agents: a researcher with a fact-lookup tool, and
//! a writer. The workers' steps stream under their namespace as they happen.
//!
//! Offline by default: the three "models" are `FunctionModel` **test doubles** that follow
//! the fixed script written below (they do not think; the handoffs, the workers' graphs
//! and the lookup tool run for real). With `--model SPEC` (e.g. `openai:gpt-4o`,
//! `ollama:qwen2.5`) a real provider plays all three roles.
//!
//! ```text
//! cargo run -p graphkit-tools --example supervisor
//! cargo run -p graphkit-tools --example supervisor -- --model openai:gpt-4o
//! ```

use std::sync::Arc;

use futures::StreamExt;
use graphkit::{RunConfig, StreamMode, StreamPayload};
use graphkit_llm::{
    AssistantMessage, ChatModel, ChatRequest, FunctionModel, Message, ToolCall, init_chat_model,
};
use graphkit_tools::{AgentState, OutputMode, ReactAgent, Supervisor, ToolError, Worker, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

const TASK: &str = "How far is the Moon from the Earth? Answer in one sentence for a child.";

/// The lookup tool's data: a tiny offline table written for this example.
const FACTS: &[(&str, &str)] = &[
    (
        "moon",
        "The Moon's average distance from the Earth is about 384,400 km.",
    ),
    (
        "sun",
        "The Sun's average distance from the Earth is about 149.6 million km.",
    ),
];

#[derive(Deserialize, JsonSchema)]
struct LookupArgs {
    /// One word naming the subject, e.g. `moon`.
    subject: String,
}

fn lookup_tool() -> graphkit_tools::DynTool<AgentState> {
    Arc::new(tool_fn(
        "lookup_fact",
        "Looks up a fact about a subject in a small offline table.",
        |args: LookupArgs| async move {
            let subject = args.subject.to_lowercase();
            FACTS
                .iter()
                .find(|(key, _)| subject.contains(key))
                .map(|(_, fact)| (*fact).to_owned())
                .ok_or_else(|| {
                    ToolError::failed(format!(
                        "no fact about `{}`; known subjects: moon, sun",
                        args.subject
                    ))
                })
        },
    ))
}

/// The researcher's report in the shared conversation, if any.
fn research_report(request: &ChatRequest) -> Option<&str> {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| m.text().strip_prefix("Found: "))
}

/// How many handoffs the supervisor made so far.
fn handoffs(request: &ChatRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(t) if t.name.as_deref().is_some_and(|n| n.starts_with("transfer_to_"))))
        .count()
}

/// **Test double** for the supervisor: researcher first, writer second, then it repeats
/// the writer's sentence.
fn supervisor_double() -> FunctionModel {
    FunctionModel::new(|request| {
        Ok(match handoffs(request) {
            0 => AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("transfer_to_researcher", json!({}))],
            ),
            1 => AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("transfer_to_writer", json!({}))],
            ),
            _ => {
                let sentence = request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role() == "assistant" && m.text().starts_with("Imagine"))
                    .map_or("", |m| m.text());
                AssistantMessage::text(format!("Here is the answer: {sentence}"))
            }
        })
    })
    .with_name("supervisor-test-double")
}

/// **Test double** for the researcher: looks the Moon up, then reports the tool's answer.
fn researcher_double() -> FunctionModel {
    FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::Tool(t)) if t.name.as_deref() == Some("lookup_fact") => {
                AssistantMessage::text(format!("Found: {}", t.content))
            }
            _ => AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("lookup_fact", json!({"subject": "moon"}))],
            ),
        })
    })
    .with_name("researcher-test-double")
}

/// **Test double** for the writer: puts the researcher's report (the only part of the
/// researcher's work handed back, in last-message mode) into a fixed template.
fn writer_double() -> FunctionModel {
    FunctionModel::new(|request| {
        let fact = research_report(request).unwrap_or("nobody found the fact.");
        Ok(AssistantMessage::text(format!(
            "Imagine a very long road: {fact}"
        )))
    })
    .with_name("writer-test-double")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let spec = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let (boss, researcher, writer): (Arc<dyn ChatModel>, Arc<dyn ChatModel>, Arc<dyn ChatModel>) =
        match &spec {
            Some(spec) => {
                let model = init_chat_model(spec)?;
                (model.clone(), model.clone(), model)
            }
            None => {
                println!(
                    "(offline: the supervisor and both workers are scripted test doubles, not models; pass --model SPEC for a real model)\n"
                );
                (
                    Arc::new(supervisor_double()),
                    Arc::new(researcher_double()),
                    Arc::new(writer_double()),
                )
            }
        };

    let researcher = ReactAgent::from_shared(researcher, [lookup_tool()])
        .system_prompt("You are a researcher. Use lookup_fact, then report the fact you found.")
        .max_iterations(5)
        .compile()?;
    let writer = ReactAgent::from_shared(writer, [])
        .system_prompt(
            "You are a writer. Rewrite the facts in the conversation as one sentence for a child.",
        )
        .max_iterations(3)
        .compile()?;
    let team = Supervisor::from_shared(
        boss,
        [
            Worker::new("researcher", "Finds facts with a lookup tool.", researcher),
            Worker::new("writer", "Turns facts into one clear sentence.", writer),
        ],
    )
    .system_prompt(
        "You lead a researcher and a writer. Delegate to one at a time: research first, then writing. When the writer is done, give the user the final sentence.",
    )
    .output_mode(OutputMode::LastMessage)
    .one_worker_per_turn()
    .max_handoffs(4)
    .compile()?;
    println!("{}", team.draw_ascii());

    println!("events (namespace / node):");
    let mut events = team.stream_with(
        AgentState::user(TASK),
        RunConfig::new().subgraphs(true),
        [StreamMode::Updates],
    );
    while let Some(event) = events.next().await {
        let event = event?;
        let namespace = if event.namespace.is_empty() {
            "(supervisor graph)".to_owned()
        } else {
            event.namespace.join(" / ")
        };
        if let StreamPayload::Updates { node, .. } = event.payload {
            println!("  {namespace:<20} {node}");
        }
    }
    let done = events
        .into_final_state()
        .ok_or("the run ended without a final state")?;

    println!("\nconversation:");
    for message in &done.messages {
        match message {
            Message::Assistant(m) => {
                if !m.content.is_empty() {
                    println!("  assistant: {}", m.content);
                }
                for call in &m.tool_calls {
                    println!("  assistant → {}({})", call.name, call.arguments);
                }
            }
            Message::Tool(t) => {
                let tag = if t.is_error { "tool error" } else { "tool" };
                println!(
                    "  {tag} [{}]: {}",
                    t.name.as_deref().unwrap_or("?"),
                    t.content
                );
            }
            other => println!("  {}: {}", other.role(), other.text()),
        }
    }
    Ok(())
}
