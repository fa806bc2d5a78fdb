//! A compiled graph as a tool: argument and output mappings, nested streaming, and the
//! errors the model reads (invalid arguments, a failing child, a child interrupt).
//!
//! The models here are test doubles (`ScriptedModel`) that replay fixed replies.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use graphkit::checkpoint::InMemorySaver;
use graphkit::error::BoxError;
use graphkit::{
    Command, CompileOptions, CompiledGraph, KeyedUpdate, NodeContext, RunConfig, START, Scoped,
    State, StateGraph, StreamMode, StreamPayload,
};
use graphkit_llm::{AssistantMessage, Message, ScriptedModel, ToolCall};
use graphkit_tools::{
    AgentState, DynTool, GraphTool, ReactAgent, TOOLS_NODE, ToolNode, ToolOutput, ToolRuntime,
    reply_with_last_message,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The child graph's state: a text in, a word count out.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    text: String,
    words: usize,
}

#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text whose words to count.
    text: String,
}

/// A counting graph; `fail` makes its node fail, `ask` makes it pause on an interrupt.
fn counter(runs: Arc<AtomicUsize>, fail: bool, ask: bool) -> CompiledGraph<Count> {
    let mut graph = StateGraph::<Count>::new();
    graph
        .add_node("count", move |state: Arc<Count>, ctx: NodeContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                ctx.writer().custom(json!({"counting": state.text}));
                if fail {
                    return Err(BoxError::from("the counter broke"));
                }
                if ask {
                    ctx.interrupt("approve the count?")?;
                }
                Ok(CountUpdate::new().words(state.text.split_whitespace().count()))
            }
        })
        .add_edge(START, "count");
    graph.compile().unwrap()
}

fn count_tool(graph: CompiledGraph<Count>) -> DynTool<AgentState> {
    Arc::new(GraphTool::new(
        "count_words",
        "Counts the words of a text.",
        graph,
        |args: CountArgs, _: &ToolRuntime<AgentState>| CountUpdate::new().text(args.text),
        |done: Count, _| Ok(ToolOutput::text(format!("{} words", done.words))),
    ))
}

/// A ReAct agent (test double model) that calls `count_words` with `args` once.
fn agent_calling(
    tool: DynTool<AgentState>,
    args: serde_json::Value,
    options: CompileOptions,
) -> CompiledGraph<AgentState> {
    let model = ScriptedModel::new([
        AssistantMessage::with_tool_calls(
            "",
            vec![ToolCall::new("count_words", args).with_id("call_1")],
        ),
        AssistantMessage::text("ok"),
    ]);
    ReactAgent::<AgentState>::new(model, [tool])
        .compile_with(options)
        .unwrap()
}

fn tool_answer(state: &AgentState) -> &graphkit_llm::ToolMessage {
    state
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool(t) => Some(t),
            _ => None,
        })
        .expect("a tool message")
}

#[tokio::test]
async fn arguments_map_into_the_child_and_its_final_state_into_the_answer() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = count_tool(counter(runs.clone(), false, false));
    assert_eq!(tool.parameters()["required"], json!(["text"]));
    let agent = agent_calling(
        tool,
        json!({"text": "three little words"}),
        CompileOptions::new(),
    );
    let done = agent
        .invoke(AgentState::user("count"))
        .await
        .unwrap()
        .into_state();
    let answer = tool_answer(&done);
    assert!(!answer.is_error);
    assert_eq!(answer.content, "3 words");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_the_model_reads_and_the_child_never_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let agent = agent_calling(
        count_tool(counter(runs.clone(), false, false)),
        json!({"txt": 3}),
        CompileOptions::new(),
    );
    let done = agent
        .invoke(AgentState::user("count"))
        .await
        .unwrap()
        .into_state();
    let answer = tool_answer(&done);
    assert!(answer.is_error);
    assert!(
        answer
            .content
            .contains("invalid arguments for `count_words`"),
        "{}",
        answer.content
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    assert_eq!(done.messages.last().map(Message::text), Some("ok"));
}

#[tokio::test]
async fn a_failing_child_graph_is_a_tool_error_the_model_reads() {
    let agent = agent_calling(
        count_tool(counter(Arc::new(AtomicUsize::new(0)), true, false)),
        json!({"text": "a b"}),
        CompileOptions::new(),
    );
    let done = agent
        .invoke(AgentState::user("count"))
        .await
        .unwrap()
        .into_state();
    let answer = tool_answer(&done);
    assert!(answer.is_error);
    assert!(
        answer
            .content
            .contains("tool `count_words` runs a graph that failed")
            && answer.content.contains("the counter broke"),
        "{}",
        answer.content
    );
}

#[tokio::test]
async fn a_child_that_pauses_on_an_interrupt_is_a_tool_error_not_a_paused_parent() {
    let agent = agent_calling(
        count_tool(counter(Arc::new(AtomicUsize::new(0)), false, true)),
        json!({"text": "a b"}),
        CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())),
    );
    let done = agent
        .invoke_with(AgentState::user("count"), RunConfig::new().thread_id("t"))
        .await
        .unwrap()
        .into_state();
    let answer = tool_answer(&done);
    assert!(answer.is_error);
    assert!(
        answer.content.contains("paused to ask a human")
            && answer.content.contains("approve the count?"),
        "{}",
        answer.content
    );
}

#[tokio::test]
async fn the_childs_events_stream_under_the_tool_nodes_and_the_calls_namespace() {
    let agent = agent_calling(
        count_tool(counter(Arc::new(AtomicUsize::new(0)), false, false)),
        json!({"text": "a b"}),
        CompileOptions::new(),
    );
    let mut events = agent.stream_with(
        AgentState::user("count"),
        RunConfig::new().subgraphs(true),
        [StreamMode::Updates, StreamMode::Custom],
    );
    let mut child_events = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        let namespace: Vec<String> = event.namespace.iter().map(|s| s.to_string()).collect();
        match event.payload {
            StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(update),
                ..
            } => child_events.push((namespace, format!("update {node} {}", update["words"]))),
            StreamPayload::Custom { node, payload } => {
                child_events.push((namespace, format!("custom {node} {payload}")))
            }
            _ => {}
        }
    }
    let namespace = vec!["tools:2".to_owned(), "count_words:call_1".to_owned()];
    assert_eq!(
        child_events,
        [
            (
                namespace.clone(),
                r#"custom count {"counting":"a b"}"#.to_owned()
            ),
            (namespace, "update count 2".to_owned()),
        ]
    );
}

/// The parent of the output-mapping tests: messages and a list of findings.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Desk {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    #[reducer(append)]
    findings: Vec<String>,
    #[reducer(append)]
    log: Vec<String>,
}
graphkit_tools::messages_state!(Desk, messages);

/// START → ask (calls `count_words`) → tools, and a `publish` node only a `Command` reaches.
fn desk(tool: DynTool<Desk>) -> CompiledGraph<Desk> {
    let mut graph = StateGraph::<Desk>::new();
    graph
        .add_node("ask", |_: Arc<Desk>| async {
            DeskUpdate::new().messages(vec![Message::Assistant(AssistantMessage::with_tool_calls(
                "",
                vec![ToolCall::new("count_words", json!({"text": "one two"}))],
            ))])
        })
        .add_node(TOOLS_NODE, ToolNode::new([tool]))
        .add_node("publish", |_: Arc<Desk>| async {
            DeskUpdate::new().log(vec!["published".into()])
        })
        .add_edge(START, "ask")
        .add_edge("ask", TOOLS_NODE);
    graph.compile().unwrap()
}

#[tokio::test]
async fn the_output_mapping_can_update_the_parent_state_with_a_reply() {
    let tool = GraphTool::new(
        "count_words",
        "Counts words.",
        counter(Arc::new(AtomicUsize::new(0)), false, false),
        |args: CountArgs, _: &ToolRuntime<Desk>| CountUpdate::new().text(args.text),
        |done: Count, _| {
            Ok(ToolOutput::update(
                DeskUpdate::new().findings(vec![format!("{} words", done.words)]),
                "noted",
            ))
        },
    );
    let done = desk(Arc::new(tool))
        .invoke(DeskUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.findings, ["2 words"]);
    assert_eq!(done.messages.last().map(Message::text), Some("noted"));
    assert!(done.log.is_empty());
}

#[tokio::test]
async fn the_output_mapping_can_return_a_command_that_routes_the_parent() {
    let tool = GraphTool::new(
        "count_words",
        "Counts words.",
        counter(Arc::new(AtomicUsize::new(0)), false, false),
        |args: CountArgs, _: &ToolRuntime<Desk>| CountUpdate::new().text(args.text),
        |done: Count, runtime| {
            Ok(ToolOutput::Command(
                Command::new()
                    .update(
                        DeskUpdate::new()
                            .findings(vec![format!("{} words", done.words)])
                            .messages(KeyedUpdate::upsert([runtime.reply("publishing")])),
                    )
                    .goto("publish"),
            ))
        },
    );
    let done = desk(Arc::new(tool))
        .invoke(DeskUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.findings, ["2 words"]);
    assert_eq!(done.log, ["published"]);
    assert_eq!(done.messages.last().map(Message::text), Some("publishing"));
}

#[tokio::test]
async fn an_agent_can_be_a_tool_answering_with_its_last_message() {
    // The inner agent is a test double too: it answers "Paris" whatever it is asked.
    let inner =
        ReactAgent::<AgentState>::new(ScriptedModel::new([AssistantMessage::text("Paris")]), [])
            .compile()
            .unwrap();
    #[derive(Deserialize, JsonSchema)]
    struct Ask {
        /// The question for the research agent.
        question: String,
    }
    let tool = GraphTool::new(
        "research",
        "Asks the research agent.",
        inner,
        |args: Ask, _: &ToolRuntime<AgentState>| AgentState::user(args.question),
        reply_with_last_message,
    );
    let runtime = ToolRuntime::detached(AgentState::default(), "call_9", "research");
    let out = graphkit_tools::Tool::call(&tool, json!({"question": "capital of France?"}), runtime)
        .await
        .unwrap();
    assert!(matches!(out, ToolOutput::Content(text) if text == "Paris"));
}

#[tokio::test]
async fn parallel_calls_of_one_graph_tool_stream_under_their_own_call_namespaces() {
    let model = ScriptedModel::new([
        AssistantMessage::with_tool_calls(
            "",
            vec![
                ToolCall::new("count_words", json!({"text": "a"})).with_id("call_1"),
                ToolCall::new("count_words", json!({"text": "b c"})).with_id("call_2"),
            ],
        ),
        AssistantMessage::text("ok"),
    ]);
    let agent = ReactAgent::<AgentState>::new(
        model,
        [count_tool(counter(
            Arc::new(AtomicUsize::new(0)),
            false,
            false,
        ))],
    )
    .compile()
    .unwrap();
    let mut events = agent.stream_with(
        AgentState::user("count"),
        RunConfig::new(),
        StreamMode::Custom,
    );
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        if let StreamPayload::Custom { payload, .. } = event.payload {
            seen.push((event.namespace.join("/"), payload["counting"].to_string()));
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("tools:2/count_words:call_1".to_owned(), r#""a""#.to_owned()),
            (
                "tools:2/count_words:call_2".to_owned(),
                r#""b c""#.to_owned()
            ),
        ]
    );
    let done = events.into_final_state().unwrap();
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert_eq!(answers[2..4], ["1 words", "2 words"]);
}
