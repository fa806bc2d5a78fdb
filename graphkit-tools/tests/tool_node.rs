//! ToolNode, tools_condition and fn tools: call order, concurrency, merged updates, errors.

use std::sync::Arc;
use std::time::Duration;

use graphkit::{Command, END, KeyedUpdate, START, State, StateGraph};
use graphkit_llm::{AssistantMessage, Message, ToolCall};
use graphkit_tools::{
    AgentState, DynTool, OnToolError, SandboxedFs, TOOLS_NODE, TodoItem, TodoList, TodoState,
    ToolError, ToolNode, ToolOutput, ToolRuntime, todo_tools, tool_fn, tool_fn_with_runtime,
    tools_condition,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    ms: u64,
    label: String,
}

fn sleeper() -> DynTool<AgentState> {
    Arc::new(tool_fn(
        "sleep",
        "Sleeps, then answers with its label.",
        |a: SleepArgs| async move {
            tokio::time::sleep(Duration::from_millis(a.ms)).await;
            Ok(a.label)
        },
    ))
}

fn asking(calls: Vec<ToolCall>) -> AgentState {
    AgentState {
        messages: vec![
            Message::user("go"),
            AssistantMessage::with_tool_calls("", calls).into(),
        ]
        .into(),
        ..AgentState::default()
    }
}

async fn run_tools(
    node: ToolNode<AgentState>,
    state: AgentState,
) -> Result<AgentState, graphkit::Error> {
    let mut g = StateGraph::<AgentState>::new();
    g.add_node(TOOLS_NODE, node)
        .add_edge(START, TOOLS_NODE)
        .add_edge(TOOLS_NODE, END);
    let input: graphkit_tools::AgentStateUpdate =
        graphkit_tools::AgentStateUpdate::new().messages(KeyedUpdate::upsert(state.messages));
    g.compile()
        .expect("the graph compiles")
        .invoke(input)
        .await
        .map(graphkit::Outcome::into_state)
}

fn tool_messages(state: &AgentState) -> Vec<(String, String, bool)> {
    state
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((t.tool_call_id.clone(), t.content.clone(), t.is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn answers_every_call_in_call_order_even_when_later_calls_finish_first() {
    let calls = vec![
        ToolCall::new("sleep", json!({"ms": 60, "label": "slow"})).with_id("c1"),
        ToolCall::new("sleep", json!({"ms": 1, "label": "fast"})).with_id("c2"),
        ToolCall::new("sleep", json!({"ms": 20, "label": "mid"})).with_id("c3"),
    ];
    let done = run_tools(ToolNode::new([sleeper()]).max_concurrency(2), asking(calls))
        .await
        .unwrap();
    let answers = tool_messages(&done);
    assert_eq!(
        answers,
        [
            ("c1".into(), "slow".into(), false),
            ("c2".into(), "fast".into(), false),
            ("c3".into(), "mid".into(), false)
        ]
    );
}

#[tokio::test]
async fn unknown_tools_and_invalid_arguments_become_error_messages_the_model_can_read() {
    let calls = vec![
        ToolCall::new("nope", json!({})).with_id("c1"),
        ToolCall::new("sleep", json!({"ms": "soon"})).with_id("c2"),
        ToolCall::new("sleep", json!({"ms": 0, "label": "ok"})).with_id("c3"),
    ];
    let done = run_tools(ToolNode::new([sleeper()]), asking(calls))
        .await
        .unwrap();
    let answers = tool_messages(&done);
    assert_eq!(answers.len(), 3);
    assert!(
        answers[0].2
            && answers[0].1.contains("unknown tool `nope`")
            && answers[0].1.contains("sleep"),
        "{answers:?}"
    );
    assert!(
        answers[1].2 && answers[1].1.contains("invalid arguments for `sleep`"),
        "{answers:?}"
    );
    assert_eq!(answers[2], ("c3".into(), "ok".into(), false));
}

#[tokio::test]
async fn a_tool_error_fails_the_node_when_configured_so() {
    let failing: DynTool<AgentState> = Arc::new(tool_fn(
        "fail",
        "Always fails.",
        |_: serde_json::Map<String, serde_json::Value>| async move {
            Err::<String, _>(ToolError::failed("the backend is down"))
        },
    ));
    let calls = vec![ToolCall::new("fail", json!({})).with_id("c1")];
    let node = ToolNode::new([failing.clone()]);
    let done = run_tools(node, asking(calls.clone())).await.unwrap();
    assert_eq!(tool_messages(&done)[0].1, "Error: the backend is down");

    let err = run_tools(
        ToolNode::new([failing]).on_error(OnToolError::FailNode),
        asking(calls),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("the backend is down"), "{err}");
}

#[tokio::test]
async fn a_panicking_tool_is_reported_not_propagated() {
    let panicking: DynTool<AgentState> = Arc::new(tool_fn(
        "boom",
        "Panics.",
        |_: serde_json::Value| async move {
            if true {
                panic!("kaboom");
            }
            Ok(String::new())
        },
    ));
    let done = run_tools(
        ToolNode::new([panicking]),
        asking(vec![ToolCall::new("boom", json!({})).with_id("c1")]),
    )
    .await
    .unwrap();
    let answers = tool_messages(&done);
    assert!(
        answers[0].2 && answers[0].1.contains("panicked: kaboom"),
        "{answers:?}"
    );
}

#[tokio::test]
async fn the_last_message_must_be_an_assistant_message() {
    let state = AgentState {
        messages: vec![Message::user("hi")].into(),
        ..AgentState::default()
    };
    let err = run_tools(ToolNode::new([sleeper()]), state)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("expects the last message to be an assistant message"),
        "{err}"
    );
}

#[test]
fn tools_condition_routes_to_tools_only_when_the_model_asked_for_them() {
    let with_calls = asking(vec![ToolCall::new("sleep", json!({}))]);
    assert_eq!(tools_condition(&with_calls), TOOLS_NODE);
    let without = AgentState {
        messages: vec![Message::assistant("done")].into(),
        ..AgentState::default()
    };
    assert_eq!(tools_condition(&without), END);
    assert_eq!(tools_condition(&AgentState::default()), END);
}

#[tokio::test]
async fn fn_tools_accept_arguments_encoded_as_a_json_string() {
    let calls =
        vec![ToolCall::new("sleep", json!("{\"ms\": 0, \"label\": \"stringly\"}")).with_id("c1")];
    let done = run_tools(ToolNode::new([sleeper()]), asking(calls))
        .await
        .unwrap();
    assert_eq!(tool_messages(&done)[0].1, "stringly");
}

// --- state updates from tools -------------------------------------------------------

/// A research state like the workflows use: messages, todos, and files written.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Research {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    #[reducer(with = TodoList::merge, update = KeyedUpdate<TodoItem>)]
    todos: TodoList,
    #[reducer(append)]
    files_written: Vec<String>,
}

graphkit_tools::messages_state!(Research, messages);

impl TodoState for Research {
    fn todos(&self) -> &TodoList {
        &self.todos
    }
    fn todos_update(update: KeyedUpdate<TodoItem>) -> ResearchUpdate {
        ResearchUpdate::new().todos(update)
    }
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    path: String,
    content: String,
}

/// The workflows' `agent_write_file`: writes into the sandbox and records the file in the state.
fn agent_write_file(fs: SandboxedFs) -> DynTool<Research> {
    let fs = Arc::new(fs);
    Arc::new(tool_fn_with_runtime(
        "agent_write_file",
        "Writes a file and records it.",
        move |a: WriteArgs, _rt: ToolRuntime<Research>| {
            let fs = Arc::clone(&fs);
            async move {
                let reply = fs.write(&a.path, &a.content, false).await?;
                Ok(ToolOutput::update(
                    ResearchUpdate::new().files_written(vec![a.path]),
                    reply,
                ))
            }
        },
    ))
}

#[tokio::test]
async fn parallel_todo_update_and_write_file_land_both_updates_in_one_step() {
    let dir = tempfile::tempdir().unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    let mut tools = todo_tools::<Research>();
    tools.push(agent_write_file(fs));

    let mut g = StateGraph::<Research>::new();
    g.add_node(TOOLS_NODE, ToolNode::new(tools))
        .add_edge(START, TOOLS_NODE)
        .add_edge(TOOLS_NODE, END);
    // One super-step: the tool node is the only task, and both calls write in it.
    let graph = g.compile().unwrap();
    let done = graph
        .invoke(ResearchUpdate::new().messages(vec![
            Message::user("plan"),
            AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("todo_update", json!({"items": [{"description": "read the paper", "priority": "high"}]}))
                        .with_id("a"),
                    ToolCall::new("agent_write_file", json!({"path": "notes/plan.md", "content": "# Plan"})).with_id("b"),
                ],
            )
            .into(),
        ]))
        .await
        .unwrap().into_state();
    assert_eq!(done.todos.items.len(), 1);
    assert_eq!(done.todos.items[0].description, "read the paper");
    assert_eq!(done.files_written, ["notes/plan.md"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/plan.md")).unwrap(),
        "# Plan"
    );
    let answered: Vec<&str> = done
        .messages
        .iter()
        .filter_map(|m| {
            if let Message::Tool(t) = m {
                Some(t.tool_call_id.as_str())
            } else {
                None
            }
        })
        .collect();
    assert_eq!(answered, ["a", "b"]);
}

#[tokio::test]
async fn a_command_tool_can_replace_the_conversation_with_a_summary() {
    #[derive(Deserialize, JsonSchema)]
    struct Summary {
        summary: String,
    }
    // entity-intel's reset: the conversation becomes system prompt + summary; no tool message.
    let reset: DynTool<AgentState> = Arc::new(tool_fn_with_runtime(
        "reset",
        "Resets the conversation to a summary.",
        |a: Summary, rt: ToolRuntime<AgentState>| async move {
            let system = rt
                .state()
                .messages
                .iter()
                .find(|m| matches!(m, Message::System(_)))
                .cloned();
            let fresh: Vec<Message> = system
                .into_iter()
                .chain([Message::user(a.summary)])
                .collect();
            Ok(Command::new().update(
                graphkit_tools::AgentStateUpdate::new().messages(KeyedUpdate::replace(fresh)),
            ))
        },
    ));
    let mut state = asking(vec![
        ToolCall::new("reset", json!({"summary": "we found X"})).with_id("c1"),
    ]);
    state.messages = std::iter::once(Message::system("be brief"))
        .chain(state.messages)
        .collect();
    let done = run_tools(ToolNode::new([reset]), state).await.unwrap();
    let texts: Vec<(&str, &str)> = done.messages.iter().map(|m| (m.role(), m.text())).collect();
    assert_eq!(texts, [("system", "be brief"), ("user", "we found X")]);
}

#[tokio::test]
async fn a_command_tool_can_route_and_its_siblings_still_answer() {
    let handoff: DynTool<AgentState> = Arc::new(tool_fn_with_runtime(
        "handoff",
        "Hands off to the reviewer.",
        |_: serde_json::Value, rt: ToolRuntime<AgentState>| async move {
            Ok(Command::new()
                .update(
                    graphkit_tools::AgentStateUpdate::new().messages(vec![rt.reply("handing off")]),
                )
                .goto("review"))
        },
    ));
    let mut g = StateGraph::<AgentState>::new();
    g.add_node(TOOLS_NODE, ToolNode::new([handoff, sleeper()]))
        .add_node("review", |_: Arc<AgentState>| async {
            graphkit_tools::AgentStateUpdate::new().messages(vec![Message::assistant("reviewed")])
        })
        .add_edge(START, TOOLS_NODE)
        .add_edge("review", END);
    let state = asking(vec![
        ToolCall::new("sleep", json!({"ms": 0, "label": "slept"})).with_id("c1"),
        ToolCall::new("handoff", json!({})).with_id("c2"),
    ]);
    let done = g
        .compile()
        .unwrap()
        .invoke(graphkit_tools::AgentStateUpdate::new().messages(state.messages))
        .await
        .unwrap()
        .into_state();
    let texts: Vec<&str> = done.messages.iter().skip(2).map(Message::text).collect();
    assert_eq!(texts, ["slept", "handing off", "reviewed"]);
}

/// Adds two integers.
#[graphkit_tools::tool]
async fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Divides a by b.
#[graphkit_tools::tool]
async fn divide(a: i64, b: i64) -> Result<String, String> {
    a.checked_div(b)
        .map(|q| q.to_string())
        .ok_or_else(|| "cannot divide by zero".to_owned())
}

#[tokio::test]
async fn a_tool_attribute_makes_a_documented_async_fn_a_tool() {
    use graphkit_tools::Tool;
    assert_eq!(Tool::<AgentState>::name(&add), "add");
    assert_eq!(Tool::<AgentState>::description(&add), "Adds two integers.");
    let schema = Tool::<AgentState>::parameters(&add);
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(schema["properties"]["a"]["type"], "integer");

    let calls = vec![
        ToolCall::new("add", json!({"a": 2, "b": 3})).with_id("c1"),
        ToolCall::new("divide", json!({"a": 1, "b": 0})).with_id("c2"),
        ToolCall::new("add", json!({"a": "two"})).with_id("c3"),
    ];
    let done = run_tools(ToolNode::new((add, divide)), asking(calls))
        .await
        .unwrap();
    let answers = tool_messages(&done);
    assert_eq!(answers[0], ("c1".into(), "5".into(), false));
    // An `Err` of the function and arguments that do not fit are shown to the model.
    assert_eq!(answers[1].0, "c2");
    assert!(
        answers[1].1.contains("cannot divide by zero"),
        "{answers:?}"
    );
    assert!(answers[1].2);
    assert!(answers[2].2, "{answers:?}");
    assert!(
        answers[2].1.contains("invalid arguments for `add`"),
        "{answers:?}"
    );
}
