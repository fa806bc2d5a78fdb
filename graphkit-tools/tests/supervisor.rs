//! The prebuilt supervisor: routing to workers, output modes, one worker per turn, streaming
//! namespaces, resuming after a failed or killed worker, and bad handoffs.
//!
//! Every model here is a test double (`FunctionModel`): it decides from the conversation,
//! it does not think.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use graphkit::checkpoint::InMemorySaver;
use graphkit::{
    CompileOptions, CompiledGraph, Error, KeyedUpdate, NodeContext, RunConfig, RunInput, START,
    Scoped, State, StateGraph, StreamMode, StreamPayload,
};
use graphkit_llm::{AssistantMessage, FunctionModel, Message, ToolCall};
use graphkit_tools::{AgentState, AgentStateUpdate, OutputMode, Supervisor, Worker};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A worker graph of one node that answers `answer` (after a tool call and its result, so
/// full history differs from last message), counting its runs.
fn worker(answer: &'static str, runs: Arc<AtomicUsize>) -> CompiledGraph<AgentState> {
    let mut graph = StateGraph::<AgentState>::new();
    graph
        .add_node("work", move |ctx: NodeContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            ctx.writer().custom(json!({"working_on": answer}));
            async move {
                let call = ToolCall::new("lookup", json!({}));
                let tool = Message::Tool(graphkit_llm::ToolMessage {
                    id: graphkit_llm::new_message_id(),
                    tool_call_id: call.id.clone(),
                    name: Some("lookup".into()),
                    content: format!("notes for {answer}"),
                    is_error: false,
                });
                AgentStateUpdate::new().messages(KeyedUpdate::upsert([
                    Message::Assistant(AssistantMessage::with_tool_calls("", vec![call])),
                    tool,
                    Message::Assistant(AssistantMessage::text(answer)),
                ]))
            }
        })
        .add_edge(START, "work");
    graph.compile().unwrap()
}

/// Test double: hands off to `plan[i]` on its i-th turn (several names = parallel
/// handoffs in one reply), then answers "done"; counts its calls.
fn boss(plan: Vec<Vec<&'static str>>, calls: Arc<AtomicUsize>) -> FunctionModel {
    FunctionModel::new(move |request| {
        calls.fetch_add(1, Ordering::SeqCst);
        let round = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant(a) if a.tool_calls.iter().any(|c| c.name.starts_with("transfer_to_"))))
            .count();
        Ok(match plan.get(round) {
            Some(workers) => AssistantMessage::with_tool_calls(
                "",
                workers
                    .iter()
                    .map(|w| ToolCall::new(format!("transfer_to_{w}"), json!({})))
                    .collect(),
            ),
            None => AssistantMessage::text("done"),
        })
    })
    .with_name("boss-test-double")
}

fn texts(state: &AgentState) -> Vec<(&str, &str)> {
    state
        .messages
        .iter()
        .map(|m| (m.role(), m.text()))
        .collect()
}

fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

#[tokio::test]
async fn each_handoff_runs_the_named_worker_and_control_returns_to_the_supervisor() {
    let (math_runs, research_runs, boss_calls) = (counter(), counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["math"], vec!["research"]], boss_calls.clone()),
        [
            Worker::new("math", "Does arithmetic.", worker("42", math_runs.clone())),
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
        ],
    )
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();

    assert_eq!(math_runs.load(Ordering::SeqCst), 1);
    assert_eq!(research_runs.load(Ordering::SeqCst), 1);
    assert_eq!(boss_calls.load(Ordering::SeqCst), 3);
    assert_eq!(
        texts(&done),
        [
            ("user", "go"),
            ("assistant", ""),
            ("tool", "Successfully transferred to math"),
            ("assistant", "42"),
            ("assistant", "Transferring back to supervisor (from math)"),
            ("tool", "Successfully transferred back to supervisor"),
            ("assistant", ""),
            ("tool", "Successfully transferred to research"),
            ("assistant", "Paris"),
            (
                "assistant",
                "Transferring back to supervisor (from research)"
            ),
            ("tool", "Successfully transferred back to supervisor"),
            ("assistant", "done"),
        ]
    );
}

#[tokio::test]
async fn full_history_mode_hands_back_every_message_the_worker_added() {
    let team = Supervisor::new(
        boss(vec![vec!["math"]], counter()),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", counter()),
        )],
    )
    .output_mode(OutputMode::FullHistory)
    .handoff_back_messages(false)
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        texts(&done),
        [
            ("user", "go"),
            ("assistant", ""),
            ("tool", "Successfully transferred to math"),
            ("assistant", ""),
            ("tool", "notes for 42"),
            ("assistant", "42"),
            ("assistant", "done"),
        ]
    );
}

#[tokio::test]
async fn last_message_mode_hands_back_only_the_workers_answer() {
    let team = Supervisor::new(
        boss(vec![vec!["math"]], counter()),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", counter()),
        )],
    )
    .output_mode(OutputMode::LastMessage)
    .handoff_back_messages(false)
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        texts(&done),
        [
            ("user", "go"),
            ("assistant", ""),
            ("tool", "Successfully transferred to math"),
            ("assistant", "42"),
            ("assistant", "done"),
        ]
    );
}

#[tokio::test]
async fn parallel_handoffs_run_both_workers() {
    let (math_runs, research_runs) = (counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["math", "research"]], counter()),
        [
            Worker::new("math", "Does arithmetic.", worker("42", math_runs.clone())),
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
        ],
    )
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(math_runs.load(Ordering::SeqCst), 1);
    assert_eq!(research_runs.load(Ordering::SeqCst), 1);
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert!(answers.contains(&"42") && answers.contains(&"Paris"));
    assert_eq!(answers.last(), Some(&"done"));
}

#[tokio::test]
async fn one_worker_per_turn_refuses_further_handoffs_in_the_same_reply() {
    let (math_runs, research_runs) = (counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["math", "research"]], counter()),
        [
            Worker::new("math", "Does arithmetic.", worker("42", math_runs.clone())),
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
        ],
    )
    .one_worker_per_turn()
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(math_runs.load(Ordering::SeqCst), 1);
    assert_eq!(research_runs.load(Ordering::SeqCst), 0);
    let refusal = done
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Tool(t) if t.name.as_deref() == Some("transfer_to_research") => Some(t),
            _ => None,
        })
        .unwrap();
    assert!(refusal.is_error);
    assert!(
        refusal.content.contains("only one worker per turn")
            && refusal.content.contains("`transfer_to_math`"),
        "{}",
        refusal.content
    );
}

#[tokio::test]
async fn a_handoff_to_an_unknown_worker_is_an_error_the_model_reads() {
    let math_runs = counter();
    let team = Supervisor::new(
        boss(vec![vec!["nobody"]], counter()),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", math_runs.clone()),
        )],
    )
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    let Message::Tool(answer) = &done.messages[2] else {
        panic!("expected a tool message, got {:?}", done.messages[2]);
    };
    assert!(answer.is_error);
    assert!(
        answer.content.contains("unknown tool `transfer_to_nobody`")
            && answer.content.contains("transfer_to_math"),
        "{}",
        answer.content
    );
    assert_eq!(math_runs.load(Ordering::SeqCst), 0);
    assert_eq!(done.messages.last().map(Message::text), Some("done"));
}

#[tokio::test]
async fn duplicate_worker_names_are_rejected_at_build() {
    let result = Supervisor::new(
        boss(vec![], counter()),
        [
            Worker::new("math", "One.", worker("1", counter())),
            Worker::new("math", "Two.", worker("2", counter())),
        ],
    )
    .compile();
    assert!(matches!(result, Err(graphkit::BuildError::DuplicateNode(name)) if name == "math"));

    let reserved = Supervisor::new(
        boss(vec![], counter()),
        [Worker::new("supervisor", "Me?", worker("1", counter()))],
    )
    .compile();
    assert!(
        matches!(reserved, Err(graphkit::BuildError::DuplicateNode(name)) if name == "supervisor")
    );
}

#[tokio::test]
async fn the_workers_events_stream_under_their_namespace() {
    let team = Supervisor::new(
        boss(vec![vec!["math"]], counter()),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", counter()),
        )],
    )
    .compile()
    .unwrap();
    let mut events = team.stream_with(
        AgentState::user("go"),
        RunConfig::new().subgraphs(true),
        [StreamMode::Updates, StreamMode::Custom],
    );
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let event = event.unwrap();
        let namespace: Vec<String> = event.namespace.iter().map(|s| s.to_string()).collect();
        match event.payload {
            StreamPayload::Updates {
                node,
                update: Scoped::Root(_),
                ..
            } => seen.push((namespace, format!("update {node}"))),
            StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(_),
                ..
            } => seen.push((namespace, format!("child update {node}"))),
            StreamPayload::Custom { node, payload } => {
                seen.push((namespace, format!("custom {node} {payload}")))
            }
            _ => {}
        }
    }
    let math: Vec<String> = vec!["math:3".into()];
    assert_eq!(
        seen,
        [
            (vec![], "update supervisor".to_owned()),
            (vec![], "update tools".to_owned()),
            (
                math.clone(),
                r#"custom work {"working_on":"42"}"#.to_owned()
            ),
            (math, "child update work".to_owned()),
            (vec![], "update math".to_owned()),
            (vec![], "update supervisor".to_owned()),
        ]
    );
}

/// A worker that fails on its first run and succeeds afterwards.
fn flaky_worker(runs: Arc<AtomicUsize>) -> CompiledGraph<AgentState> {
    let mut graph = StateGraph::<AgentState>::new();
    graph
        .add_node("work", move |_: Arc<AgentState>| {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            async move {
                if run == 0 {
                    return Err(graphkit_tools::ToolError::failed("the first attempt fails"));
                }
                Ok(AgentStateUpdate::new()
                    .messages(vec![Message::Assistant(AssistantMessage::text("written"))]))
            }
        })
        .add_edge(START, "work");
    graph.compile().unwrap()
}

#[tokio::test]
async fn resuming_after_a_failed_worker_does_not_rerun_finished_workers() {
    let (research_runs, writer_runs, boss_calls) = (counter(), counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["research"], vec!["writer"]], boss_calls.clone()),
        [
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
            Worker::new("writer", "Writes.", flaky_worker(writer_runs.clone())),
        ],
    )
    .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
    .unwrap();
    let config = RunConfig::new().thread_id("team-1");

    let failed = team
        .invoke_with(AgentState::user("go"), config.clone())
        .await;
    assert!(
        failed
            .as_ref()
            .is_err_and(|e| e.to_string().contains("the first attempt fails")),
        "{failed:?}"
    );
    assert_eq!(
        (
            research_runs.load(Ordering::SeqCst),
            writer_runs.load(Ordering::SeqCst)
        ),
        (1, 1)
    );

    let done = team
        .invoke_with(RunInput::Continue, config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        research_runs.load(Ordering::SeqCst),
        1,
        "research ran again"
    );
    assert_eq!(writer_runs.load(Ordering::SeqCst), 2);
    assert_eq!(
        boss_calls.load(Ordering::SeqCst),
        3,
        "the supervisor ran again"
    );
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert!(answers.contains(&"Paris") && answers.contains(&"written"));
    assert_eq!(answers.last(), Some(&"done"));
}

/// A worker that, on its first run, says it started and then never finishes (the run is
/// dropped while it waits: a kill); later runs answer at once.
fn hanging_worker(
    runs: Arc<AtomicUsize>,
    started: tokio::sync::mpsc::UnboundedSender<()>,
) -> CompiledGraph<AgentState> {
    let mut graph = StateGraph::<AgentState>::new();
    graph
        .add_node("work", move |_: Arc<AgentState>| {
            let run = runs.fetch_add(1, Ordering::SeqCst);
            let started = started.clone();
            async move {
                if run == 0 {
                    let _ = started.send(());
                    std::future::pending::<()>().await;
                }
                AgentStateUpdate::new()
                    .messages(vec![Message::Assistant(AssistantMessage::text("written"))])
            }
        })
        .add_edge(START, "work");
    graph.compile().unwrap()
}

#[tokio::test]
async fn killed_mid_worker_the_resumed_run_finishes_without_redoing_finished_workers() {
    let (research_runs, writer_runs, boss_calls) = (counter(), counter(), counter());
    let (started_tx, mut started) = tokio::sync::mpsc::unbounded_channel();
    let team = Supervisor::new(
        boss(vec![vec!["research"], vec!["writer"]], boss_calls.clone()),
        [
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
            Worker::new(
                "writer",
                "Writes.",
                hanging_worker(writer_runs.clone(), started_tx),
            ),
        ],
    )
    .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
    .unwrap();
    let config = RunConfig::new().thread_id("team-2");

    {
        let run = team.invoke_with(AgentState::user("go"), config.clone());
        tokio::select! {
            outcome = run => panic!("the run should hang in the writer, it ended: {outcome:?}"),
            _ = started.recv() => {} // the writer is running: drop the run here
        }
    }
    assert_eq!(boss_calls.load(Ordering::SeqCst), 2);

    // The dropped run releases the thread from a task it spawns; let that task run.
    let mut attempts = 0;
    let done = loop {
        match team.invoke_with(RunInput::Continue, config.clone()).await {
            Err(Error::ThreadBusy(_)) if attempts < 1000 => {
                attempts += 1;
                tokio::task::yield_now().await;
            }
            outcome => break outcome.unwrap().into_state(),
        }
    };
    assert_eq!(research_runs.load(Ordering::SeqCst), 1);
    assert_eq!(writer_runs.load(Ordering::SeqCst), 2);
    assert_eq!(boss_calls.load(Ordering::SeqCst), 3);
    assert_eq!(done.messages.last().map(Message::text), Some("done"));
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Team {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    #[reducer(append)]
    topics: Vec<String>,
}
graphkit_tools::messages_state!(Team, messages);

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Desk {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
    topic: String,
}
graphkit_tools::messages_state!(Desk, messages);

#[tokio::test]
async fn a_mapped_worker_gets_its_input_and_maps_its_result_into_the_supervisor_state() {
    let mut desk = StateGraph::<Desk>::new();
    desk.add_node("write", |s: Arc<Desk>| async move {
        DeskUpdate::new().messages(vec![Message::Assistant(AssistantMessage::text(format!(
            "an article about {}",
            s.topic
        )))])
    })
    .add_edge(START, "write");
    let worker = Worker::mapped(
        "desk",
        "Writes articles.",
        desk.compile().unwrap(),
        |team: &Team| DeskUpdate::new().topic(team.messages[0].text().to_owned()),
        |desk: &Desk| TeamUpdate::new().topics(vec![desk.topic.clone()]),
    );
    let team = Supervisor::new(boss(vec![vec!["desk"]], counter()), [worker])
        .compile()
        .unwrap();
    let done = team
        .invoke(TeamUpdate::new().messages(vec![Message::user("otters")]))
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.topics, ["otters"]);
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert!(answers.contains(&"an article about otters"), "{answers:?}");
}

/// A worker that asks a human before answering.
fn asking_worker(runs: Arc<AtomicUsize>) -> CompiledGraph<AgentState> {
    let mut graph = StateGraph::<AgentState>::new();
    graph
        .add_node("work", move |ctx: NodeContext| {
            runs.fetch_add(1, Ordering::SeqCst);
            async move {
                let answer = ctx.interrupt("publish?")?;
                Ok::<_, Error>(AgentStateUpdate::new().messages(vec![Message::Assistant(
                    AssistantMessage::text(format!("human said {answer}")),
                )]))
            }
        })
        .add_edge(START, "work");
    graph.compile().unwrap()
}

#[tokio::test]
async fn an_interrupt_inside_a_worker_pauses_the_supervisor_and_resumes_at_that_worker() {
    let (research_runs, writer_runs, boss_calls) = (counter(), counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["research"], vec!["writer"]], boss_calls.clone()),
        [
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
            Worker::new("writer", "Writes.", asking_worker(writer_runs.clone())),
        ],
    )
    .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
    .unwrap();
    let config = RunConfig::new().thread_id("team-3");

    let paused = team
        .invoke_with(AgentState::user("go"), config.clone())
        .await;
    let Ok(graphkit::Outcome::Paused(graphkit::Paused { interrupts, .. })) = paused else {
        panic!("expected a pause, got {paused:?}");
    };
    assert_eq!(interrupts.len(), 1);
    assert_eq!(
        (interrupts[0].node.as_str(), &interrupts[0].payload),
        ("writer", &json!("publish?"))
    );

    let done = team
        .invoke_with(graphkit::Command::resume("yes"), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(research_runs.load(Ordering::SeqCst), 1);
    assert_eq!(writer_runs.load(Ordering::SeqCst), 2);
    assert_eq!(boss_calls.load(Ordering::SeqCst), 3);
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert!(answers.contains(&"human said \"yes\""), "{answers:?}");
}

#[tokio::test]
async fn handoffs_beyond_the_limit_are_refused_and_the_supervisor_answers() {
    let math_runs = counter();
    let team = Supervisor::new(
        boss(vec![vec!["math"], vec!["math"], vec!["math"]], counter()),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", math_runs.clone()),
        )],
    )
    .max_handoffs(2)
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(math_runs.load(Ordering::SeqCst), 2);
    let refusal = done
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            Message::Tool(t) if t.is_error => Some(t.content.as_str()),
            _ => None,
        })
        .unwrap();
    assert!(refusal.contains("limit of 2 delegations"), "{refusal}");
    assert_eq!(done.messages.last().map(Message::text), Some("done"));
}

#[tokio::test]
async fn the_supervisors_own_tools_answer_and_return_to_the_supervisor() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let clock = graphkit_tools::tool_fn("clock", "Tells the time.", |_: NoArgs| async {
        Ok::<_, graphkit_tools::ToolError>("noon")
    });
    let model = FunctionModel::new(|request| {
        Ok(match request.messages.last() {
            Some(Message::Tool(t)) => AssistantMessage::text(format!("It is {}.", t.content)),
            _ => AssistantMessage::with_tool_calls("", vec![ToolCall::new("clock", json!({}))]),
        })
    });
    let math_runs = counter();
    let team = Supervisor::new(
        model,
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", math_runs.clone()),
        )],
    )
    .tools((clock,))
    .compile()
    .unwrap();
    let done = team
        .invoke(AgentState::user("time?"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(math_runs.load(Ordering::SeqCst), 0);
    assert_eq!(done.messages.last().map(Message::text), Some("It is noon."));
}

#[tokio::test]
async fn a_worker_addressing_a_parent_graph_fails_with_a_clear_error() {
    let mut rogue = StateGraph::<AgentState>::new();
    rogue
        .add_node("work", |_: Arc<AgentState>| async {
            graphkit::Command::<AgentState>::new()
                .goto("writer")
                .to_parent()
        })
        .add_edge(START, "work");
    let team = Supervisor::new(
        boss(vec![vec!["rogue"]], counter()),
        [Worker::new(
            "rogue",
            "Misbehaves.",
            rogue.compile().unwrap(),
        )],
    )
    .compile()
    .unwrap();
    let err = team.invoke(AgentState::user("go")).await.unwrap_err();
    let message = format!(
        "{err}: {:?}",
        std::error::Error::source(&err).map(ToString::to_string)
    );
    assert!(
        message.contains("cannot address a parent graph"),
        "{message}"
    );
}

#[tokio::test]
async fn parallel_handoffs_count_towards_the_limit_in_call_order() {
    let (math_runs, research_runs) = (counter(), counter());
    let team = Supervisor::new(
        boss(vec![vec!["math", "research"]], counter()),
        [
            Worker::new("math", "Does arithmetic.", worker("42", math_runs.clone())),
            Worker::new(
                "research",
                "Finds facts.",
                worker("Paris", research_runs.clone()),
            ),
        ],
    )
    .max_handoffs(1)
    .compile()
    .unwrap();
    team.invoke(AgentState::user("go"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(math_runs.load(Ordering::SeqCst), 1);
    assert_eq!(research_runs.load(Ordering::SeqCst), 0);
}

/// Test double: calls `handoff` until the conversation has its answer, then says `answer`.
fn delegate_once(handoff: &'static str, answer: &'static str) -> FunctionModel {
    FunctionModel::new(move |request| {
        let handed_off = request
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool(t) if t.name.as_deref() == Some(handoff)));
        Ok(if handed_off {
            AssistantMessage::text(answer)
        } else {
            AssistantMessage::with_tool_calls("", vec![ToolCall::new(handoff, json!({}))])
        })
    })
}

#[tokio::test]
async fn a_supervisor_can_be_a_worker_of_another_supervisor() {
    let math_runs = counter();
    let team = Supervisor::new(
        delegate_once("transfer_to_math", "team says 42"),
        [Worker::new(
            "math",
            "Does arithmetic.",
            worker("42", math_runs.clone()),
        )],
    )
    .compile()
    .unwrap();
    let top = Supervisor::new(
        delegate_once("transfer_to_team", "done"),
        [Worker::new("team", "A team with a mathematician.", team)],
    )
    .compile()
    .unwrap();
    let mut events = top.stream_with(
        AgentState::user("go"),
        RunConfig::new().subgraphs(true),
        StreamMode::Custom,
    );
    let mut namespaces = Vec::new();
    while let Some(event) = events.next().await {
        namespaces.push(event.unwrap().namespace.join("/"));
    }
    assert_eq!(namespaces, ["team:3/math:3"]);
    let done = events.into_final_state().unwrap();
    assert_eq!(math_runs.load(Ordering::SeqCst), 1);
    let answers: Vec<&str> = done.messages.iter().map(Message::text).collect();
    assert!(answers.contains(&"team says 42"), "{answers:?}");
    assert_eq!(answers.last(), Some(&"done"));
}
