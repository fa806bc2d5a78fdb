//! Stream modes: values, updates, custom, tasks; several at once; subgraph namespaces.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;

use futures::StreamExt;
use graphkit::streaming::{StreamEvent, TaskEventKind};
use graphkit::{
    END, Error, NodeContext, RunConfig, START, Scoped, State, StateGraph, StreamMode,
    StreamPayload, StreamWriter,
};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Counter {
    #[reducer(add)]
    n: u32,
}

fn counting_graph() -> graphkit::CompiledGraph<Counter> {
    let mut g = StateGraph::<Counter>::new();
    g.add_node("inc", |writer: StreamWriter| async move {
        writer.custom(serde_json::json!({"progress": "working"}));
        CounterUpdate::new().n(1)
    })
    .add_edge(START, "inc")
    .add_conditional_edges(
        "inc",
        |s: &Counter| if s.n < 2 { "inc" } else { END },
        ["inc", END],
    );
    g.compile().unwrap()
}

async fn collect(stream: graphkit::streaming::RunStream<Counter>) -> Vec<StreamEvent<Counter>> {
    stream.map(|e| e.unwrap()).collect().await
}

#[tokio::test]
async fn values_mode_streams_the_state_after_the_input_and_each_step() {
    let events = collect(counting_graph().stream(CounterUpdate::new(), StreamMode::Values)).await;
    let values: Vec<u32> = events
        .iter()
        .map(|e| match &e.payload {
            StreamPayload::Values(Scoped::Root(s)) => s.n,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(values, [0, 1, 2]);
}

#[tokio::test]
async fn updates_mode_names_each_node() {
    let events = collect(counting_graph().stream(CounterUpdate::new(), StreamMode::Updates)).await;
    assert_eq!(events.len(), 2);
    for event in &events {
        match &event.payload {
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } => {
                assert_eq!(&**node, "inc");
                assert_eq!(update.n, Some(1));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn several_modes_interleave_in_order() {
    let modes = [StreamMode::Updates, StreamMode::Custom, StreamMode::Values];
    let events = collect(counting_graph().stream(CounterUpdate::new(), modes)).await;
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match &e.payload {
            StreamPayload::Values(_) => "values",
            StreamPayload::Updates { .. } => "updates",
            StreamPayload::Custom { .. } => "custom",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "values", "custom", "updates", "values", "custom", "updates", "values"
        ]
    );
}

#[tokio::test]
async fn custom_events_carry_the_node_and_the_value() {
    let events = collect(counting_graph().stream(CounterUpdate::new(), StreamMode::Custom)).await;
    assert_eq!(events.len(), 2);
    match &events[0].payload {
        StreamPayload::Custom { node, payload } => {
            assert_eq!(&**node, "inc");
            assert_eq!(payload["progress"], "working");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn tasks_mode_reports_start_and_end_with_duration() {
    let events = collect(counting_graph().stream(CounterUpdate::new(), StreamMode::Tasks)).await;
    let kinds: Vec<(usize, &str)> = events
        .iter()
        .map(|e| match &e.payload {
            StreamPayload::Task(t) => (
                t.step,
                match t.kind {
                    TaskEventKind::Start => "start",
                    TaskEventKind::End { .. } => "end",
                    _ => "other",
                },
            ),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(kinds, [(1, "start"), (1, "end"), (2, "start"), (2, "end")]);
}

#[tokio::test]
async fn tasks_mode_reports_errors_and_the_stream_ends_with_the_error() {
    let mut g = StateGraph::<Counter>::new();
    g.add_node("bad", |_: Arc<Counter>| async {
        Err::<CounterUpdate, _>("broken")
    })
    .add_edge(START, "bad");
    let items: Vec<_> = g
        .compile()
        .unwrap()
        .stream(CounterUpdate::new(), StreamMode::Tasks)
        .collect()
        .await;
    assert!(
        matches!(&items[1], Ok(StreamEvent { payload: StreamPayload::Task(t), .. }) if matches!(&t.kind, TaskEventKind::Error { error, .. } if error == "broken"))
    );
    assert!(matches!(items.last(), Some(Err(Error::NodeFailed { node, .. })) if node == "bad"));
}

#[tokio::test]
async fn the_final_state_is_available_after_the_stream() {
    let mut stream = counting_graph().stream(CounterUpdate::new(), StreamMode::Updates);
    while stream.next().await.is_some() {}
    assert_eq!(stream.final_state().map(|s| s.n), Some(2));
}

#[tokio::test]
async fn stream_writer_current_finds_the_writer_inside_a_node() {
    let mut g = StateGraph::<Counter>::new();
    g.add_node("helper_user", |_: Arc<Counter>| async {
        // Code deep inside a node (a model client, say) finds the writer without arguments.
        let writer = StreamWriter::current().expect("inside a node");
        assert_eq!(writer.node(), Some("helper_user"));
        writer.message(serde_json::json!({"token": "hi"}));
        CounterUpdate::new()
    })
    .add_edge(START, "helper_user");
    let events = collect(
        g.compile()
            .unwrap()
            .stream(CounterUpdate::new(), StreamMode::Messages),
    )
    .await;
    assert!(
        matches!(&events[..], [StreamEvent { payload: StreamPayload::Messages { node, payload }, .. }] if &**node == "helper_user" && payload["token"] == "hi")
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Inner {
    #[reducer(append)]
    words: Vec<String>,
}

#[tokio::test]
async fn subgraph_events_carry_their_namespace() {
    let mut inner = StateGraph::<Inner>::new();
    inner
        .add_node("speak", |ctx: NodeContext| async move {
            ctx.writer().custom("from inside");
            InnerUpdate::new().words(vec!["hello".into()])
        })
        .add_edge(START, "speak");
    let mut outer = StateGraph::<Counter>::new();
    outer
        .add_subgraph_mapped(
            "child",
            inner.compile().unwrap(),
            |_| InnerUpdate::new(),
            |c: &Inner| CounterUpdate::new().n(c.words.len() as u32),
        )
        .add_edge(START, "child");
    let graph = outer.compile().unwrap();

    let modes = [StreamMode::Updates, StreamMode::Custom];
    let config = RunConfig::new().subgraphs(true);
    let events: Vec<_> = graph
        .stream_with(CounterUpdate::new(), config, modes)
        .map(|e| e.unwrap())
        .collect()
        .await;
    let custom = events
        .iter()
        .find(|e| matches!(e.payload, StreamPayload::Custom { .. }))
        .unwrap();
    assert_eq!(
        custom.namespace.iter().map(|s| &**s).collect::<Vec<_>>(),
        ["child:1"]
    );
    let child_update = events
        .iter()
        .find(|e| {
            matches!(
                e.payload,
                StreamPayload::Updates {
                    update: Scoped::Subgraph(_),
                    ..
                }
            )
        })
        .unwrap();
    match &child_update.payload {
        StreamPayload::Updates {
            node,
            update: Scoped::Subgraph(update),
            ..
        } => {
            assert_eq!(&**node, "speak");
            assert_eq!(update["words"][0], "hello");
        }
        _ => unreachable!(),
    }
    let root_update = events
        .iter()
        .find(|e| {
            matches!(
                e.payload,
                StreamPayload::Updates {
                    update: Scoped::Root(_),
                    ..
                }
            )
        })
        .unwrap();
    assert!(root_update.namespace.is_empty());

    // Without `subgraphs`, the child's updates stay hidden but custom events still surface.
    let events: Vec<_> = graph
        .stream(CounterUpdate::new(), modes)
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert!(!events.iter().any(|e| matches!(
        e.payload,
        StreamPayload::Updates {
            update: Scoped::Subgraph(_),
            ..
        }
    )));
    assert!(
        events
            .iter()
            .any(|e| matches!(e.payload, StreamPayload::Custom { .. }))
    );
}

/// A task's `End` event follows the save of its pending write: a consumer that sees `End`
/// while a sibling is still running finds the output saved against the step's checkpoint.
#[tokio::test]
async fn a_tasks_end_event_comes_after_its_output_is_saved() {
    use graphkit::CompileOptions;
    use graphkit::checkpoint::{Checkpointer, InMemorySaver};

    let saver = Arc::new(InMemorySaver::new());
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = Arc::clone(&release);
    let mut g = StateGraph::<Counter>::new();
    g.add_node("fast", |_: Arc<Counter>| async {
        CounterUpdate::new().n(1)
    })
    .add_node("slow", move |_: Arc<Counter>| {
        let gate = Arc::clone(&gate);
        async move {
            gate.notified().await;
            CounterUpdate::new().n(10)
        }
    })
    .add_edge(START, "fast")
    .add_edge(START, "slow");
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let mut stream = graph.stream_with(
        CounterUpdate::new(),
        RunConfig::new().thread_id("end-after-save"),
        StreamMode::Tasks,
    );
    let mut saw_fast_end = false;
    while let Some(item) = stream.next().await {
        let event = item.unwrap();
        let StreamPayload::Task(task) = &event.payload else {
            continue;
        };
        if &*task.node == "fast" && matches!(task.kind, TaskEventKind::End { .. }) {
            // `slow` is still waiting, so the step has not finished: the output can only be
            // a pending write of the step's checkpoint.
            let tuple = saver
                .get("end-after-save", "", None)
                .await
                .unwrap()
                .unwrap();
            assert!(
                tuple.pending_writes.iter().any(|w| w.node == "fast"),
                "{:?}",
                tuple.pending_writes
            );
            saw_fast_end = true;
            release.notify_one();
        }
    }
    assert!(saw_fast_end);
    let state = graph
        .get_state(&RunConfig::new().thread_id("end-after-save"))
        .await
        .unwrap();
    assert_eq!(state.values.n, 11);
}
