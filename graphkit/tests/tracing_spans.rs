//! Tracing: a run, its super-steps, its nodes (with the attempt) and its checkpoint saves
//! are spans carrying the thread id and the step.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::{Arc, Mutex};

use graphkit::checkpoint::InMemorySaver;
use graphkit::nodes::NodeOptions;
use graphkit::{CompileOptions, END, RetryPolicy, RunConfig, START, State, StateGraph};
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    #[reducer(add)]
    n: u32,
}

/// One recorded span: its name, its fields as `name=value` text, and its parent's name.
#[derive(Debug, Clone)]
struct Recorded {
    name: &'static str,
    fields: Vec<String>,
    parent: Option<&'static str>,
}

impl Recorded {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    }
}

/// A test double: a tracing layer that records every span opened.
#[derive(Clone, Default)]
struct RecordingLayer(Arc<Mutex<Vec<Recorded>>>);

struct FieldText(Vec<String>);

impl tracing::field::Visit for FieldText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S>
    for RecordingLayer
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut fields = FieldText(Vec::new());
        attrs.record(&mut fields);
        let parent = ctx.lookup_current().map(|span| span.name());
        self.0.lock().unwrap().push(Recorded {
            name: attrs.metadata().name(),
            fields: fields.0,
            parent: attrs
                .parent()
                .and_then(|id| ctx.span(id))
                .map(|s| s.name())
                .or(parent),
        });
    }
}

#[tokio::test(flavor = "current_thread")]
async fn runs_steps_nodes_and_checkpoint_saves_are_spans_with_thread_and_step() {
    let layer = RecordingLayer::default();
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let flaky_calls = Arc::new(Mutex::new(0));
    let calls = Arc::clone(&flaky_calls);
    let mut g = StateGraph::<Count>::new();
    g.add_node("first", |_: Arc<Count>| async { CountUpdate::new().n(1) })
        .add_node_with(
            "flaky",
            move |_: Arc<Count>| {
                let calls = Arc::clone(&calls);
                async move {
                    let mut calls = calls.lock().unwrap();
                    *calls += 1;
                    if *calls == 1 {
                        Err("try again")
                    } else {
                        Ok(CountUpdate::new().n(1))
                    }
                }
            },
            NodeOptions::new()
                .retry(RetryPolicy::new(2).initial_interval(std::time::Duration::ZERO)),
        )
        .add_edge(START, "first")
        .add_edge("first", "flaky")
        .add_edge("flaky", END);
    let graph = g
        .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();
    graph
        .invoke_with(CountUpdate::new(), RunConfig::new().thread_id("traced"))
        .await
        .unwrap()
        .into_state();

    let spans = layer.0.lock().unwrap().clone();
    let named = |name: &'static str| spans.iter().filter(move |s| s.name == name);
    let run = named("run").next().expect("a run span");
    assert_eq!(run.field("thread_id"), Some("traced"));
    let steps: Vec<_> = named("step").collect();
    assert_eq!(steps.len(), 2, "{spans:#?}");
    assert_eq!(steps[1].field("step"), Some("2"));
    assert!(steps.iter().all(|s| s.parent == Some("run")));
    let attempts: Vec<_> = named("node")
        .filter(|s| s.field("node") == Some("flaky"))
        .map(|s| s.field("attempt").unwrap().to_owned())
        .collect();
    assert_eq!(attempts, ["1", "2"], "one span per attempt");
    assert!(named("node").all(|s| s.parent == Some("step")));
    let saves: Vec<_> = named("checkpoint_save").collect();
    assert_eq!(saves.len(), 3, "the input and two steps: {spans:#?}");
    assert!(saves.iter().all(|s| s.field("thread_id") == Some("traced")));
}

#[tokio::test(flavor = "current_thread")]
async fn a_cache_hit_is_a_node_span_marked_cached() {
    use graphkit::cache::{CachePolicy, InMemoryCache};

    let layer = RecordingLayer::default();
    let subscriber = tracing_subscriber::registry().with(layer.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let mut g = StateGraph::<Count>::new();
    g.add_node_with(
        "expensive",
        |_: Arc<Count>| async { CountUpdate::new().n(1) },
        NodeOptions::new().cache(CachePolicy::new()),
    )
    .add_edge(START, "expensive")
    .add_edge("expensive", END);
    let graph = g
        .compile_with(CompileOptions::new().cache(Arc::new(InMemoryCache::new())))
        .unwrap();

    graph.invoke(CountUpdate::new()).await.unwrap().into_state();
    graph.invoke(CountUpdate::new()).await.unwrap().into_state();

    let spans = layer.0.lock().unwrap().clone();
    let nodes: Vec<_> = spans.iter().filter(|s| s.name == "node").collect();
    assert_eq!(nodes.len(), 2, "{spans:#?}");
    assert_eq!(nodes[0].field("cached"), None, "the first run ran the node");
    assert_eq!(nodes[1].field("cached"), Some("true"), "{spans:#?}");
    assert_eq!(nodes[1].field("node"), Some("expensive"));
    assert_eq!(nodes[1].parent, Some("step"));
}
