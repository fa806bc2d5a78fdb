//! The prebuilt ReAct agent: the loop, the system prompt, max iterations, extending the graph.

use std::sync::Arc;

use graphkit::{END, KeyedUpdate};
use graphkit_llm::{AssistantMessage, ChatModel, Message, ScriptedModel, ToolCall};
use graphkit_tools::{
    AGENT_NODE, AgentState, AgentStateUpdate, ReactAgent, TOOLS_NODE, ThinkTool, ToolError, tool_fn,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// First number.
    a: i64,
    /// Second number.
    b: i64,
}

fn add() -> graphkit_tools::DynTool<AgentState> {
    Arc::new(tool_fn(
        "add",
        "Adds two integers.",
        |x: AddArgs| async move { Ok::<_, ToolError>((x.a + x.b).to_string()) },
    ))
}

#[tokio::test]
async fn the_agent_loops_model_and_tools_until_the_model_answers() {
    // Test double: the replies are scripted; the tools run for real.
    let model = ScriptedModel::new([
        AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("c1")],
        ),
        AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("add", json!({"a": 5, "b": 10})).with_id("c2")],
        ),
        AssistantMessage::text("The sum is 15."),
    ]);
    let agent = ReactAgent::<AgentState>::new(model.clone(), [add(), Arc::new(ThinkTool)])
        .system_prompt("You add numbers.")
        .compile()
        .unwrap();
    let done = agent
        .invoke(AgentState::user("2 + 3 + 10?"))
        .await
        .unwrap()
        .into_state();
    let texts: Vec<(&str, &str)> = done.messages.iter().map(|m| (m.role(), m.text())).collect();
    assert_eq!(
        texts,
        [
            ("user", "2 + 3 + 10?"),
            ("assistant", ""),
            ("tool", "5"),
            ("assistant", ""),
            ("tool", "15"),
            ("assistant", "The sum is 15.")
        ]
    );
    // Every call got the system prompt first (not stored in the state) and both tool specs.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert_eq!(request.messages[0].text(), "You add numbers.");
        let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add", "think"]);
    }
    assert_eq!(
        requests[0].tools[0].parameters["properties"]["a"]["description"],
        "First number."
    );
    assert!(
        !done
            .messages
            .iter()
            .any(|m| matches!(m, Message::System(_)))
    );
}

#[tokio::test]
async fn max_iterations_stops_a_model_that_keeps_calling_tools() {
    let looping: Vec<AssistantMessage> = (0..10)
        .map(|i| {
            AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("add", json!({"a": i, "b": 1}))],
            )
        })
        .collect();
    let model = ScriptedModel::new(looping);
    let agent = ReactAgent::<AgentState>::new(model.clone(), [add()])
        .max_iterations(3)
        .compile()
        .unwrap();
    let done = agent
        .invoke(AgentState::user("loop"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(model.requests().len(), 3);
    let last = done.messages.last().unwrap();
    assert!(last.tool_calls().is_empty());
    assert!(
        last.text().contains("limit of 3 model calls"),
        "{}",
        last.text()
    );
}

#[tokio::test]
async fn a_model_error_fails_the_run_with_the_model_error() {
    let model = ScriptedModel::new(Vec::<AssistantMessage>::new());
    let agent = ReactAgent::<AgentState>::new(model, [add()])
        .compile()
        .unwrap();
    let err = agent.invoke(AgentState::user("hi")).await.unwrap_err();
    assert!(err.to_string().to_lowercase().contains("script"), "{err}");
}

#[tokio::test]
async fn the_agent_graph_can_be_drawn_and_extended() {
    let model: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new([AssistantMessage::text("hello")]));
    let mut graph = ReactAgent::<AgentState>::from_shared(model, [add()]).graph();
    // Extend: a node that runs beside the agent in the first step.
    graph
        .add_node("greet", |_: Arc<AgentState>| async {
            AgentStateUpdate::new().messages(KeyedUpdate::upsert([Message::user("(greeted)")]))
        })
        .add_edge(graphkit::START, "greet")
        .add_edge("greet", END);
    let graph = graph.compile().unwrap();
    let mermaid = graph.draw_mermaid();
    assert!(
        mermaid.contains(AGENT_NODE) && mermaid.contains(TOOLS_NODE),
        "{mermaid}"
    );
    let names: Vec<&str> = graph.node_names().collect();
    assert!(names.contains(&"greet"));
    let done = graph
        .invoke(AgentState::user("hi"))
        .await
        .unwrap()
        .into_state();
    // Same step, applied in node-name order: the agent's reply, then the greeter's note.
    let texts: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["hi", "hello", "(greeted)"]);
}

#[tokio::test]
async fn an_agent_reads_its_model_from_the_context_and_a_run_may_choose_another() {
    // Test doubles: each model has one scripted reply per run below.
    let house: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new([
        AssistantMessage::with_tool_calls("", vec![ToolCall::new("add", json!({"a": 2, "b": 3}))]),
        AssistantMessage::text("5, said the house model"),
    ]));
    let premium: Arc<dyn ChatModel> =
        Arc::new(ScriptedModel::new([AssistantMessage::text("premium")]));
    let agent = ReactAgent::<AgentState>::from_context([add()])
        .compile()
        .unwrap()
        .with_shared_context(house);

    let done = agent
        .invoke(AgentState::user("2 + 3?"))
        .await
        .unwrap()
        .into_state();
    let texts: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["2 + 3?", "", "5", "5, said the house model"]);

    let chosen = agent
        .invoke_with(
            AgentState::user("hi"),
            graphkit::RunConfig::new().with_shared_context(premium),
        )
        .await
        .unwrap()
        .into_state();
    assert_eq!(chosen.messages.last().map(Message::text), Some("premium"));
}

#[tokio::test]
async fn an_agent_without_a_model_in_its_context_says_how_to_give_one() {
    let agent = ReactAgent::<AgentState>::from_context([add()])
        .compile()
        .unwrap();
    let err = agent.invoke(AgentState::user("hi")).await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("dyn graphkit_llm"), "{message}");
    assert!(message.contains("with_shared_context"), "{message}");
}
