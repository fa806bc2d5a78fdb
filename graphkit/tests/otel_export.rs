//! OpenTelemetry export (feature `otel`): a run's spans reach an OTLP/HTTP collector as one
//! trace, with `run` → `step` → `node` parentage and the thread id and step as attributes.

#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::mpsc;

use graphkit::checkpoint::InMemorySaver;
use graphkit::otel::OtelExporter;
use graphkit::{CompileOptions, END, RunConfig, START, State, StateGraph};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde::{Deserialize, Serialize};
use tracing_subscriber::layer::SubscriberExt;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Count {
    #[reducer(add)]
    n: u32,
}

/// A test double for an OTLP collector: accepts HTTP/1.1 POSTs on loopback and hands each
/// request's path and body to the test.
fn collector() -> (String, mpsc::Receiver<(String, Vec<u8>)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or("")
                .to_owned();
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .unwrap();
            if tx.send((path, body)).is_err() {
                return;
            }
        }
    });
    (url, rx)
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    let value = span
        .attributes
        .iter()
        .find(|kv| kv.key == key)?
        .value
        .as_ref()?;
    match value.value.as_ref()? {
        Value::StringValue(s) => Some(s.clone()),
        Value::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    }
}

#[test]
fn a_runs_spans_reach_the_collector_as_one_trace() {
    let (url, requests) = collector();
    let otel = OtelExporter::new("graphkit-test")
        .endpoint(url)
        .install()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(otel.layer());

    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut g = StateGraph::<Count>::new();
            g.add_node("first", |_: Arc<Count>| async { CountUpdate::new().n(1) })
                .add_node("second", |_: Arc<Count>| async { CountUpdate::new().n(2) })
                .add_edge(START, "first")
                .add_edge("first", "second")
                .add_edge("second", END);
            let graph = g
                .compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
                .unwrap();
            let done = graph
                .invoke_with(
                    CountUpdate::new(),
                    RunConfig::new().thread_id("otel-thread"),
                )
                .await
                .unwrap()
                .into_state();
            assert_eq!(done.n, 3);
        });
    });
    otel.flush().unwrap();

    let mut spans = Vec::new();
    let mut service = None;
    while let Ok((path, body)) = requests.try_recv() {
        assert_eq!(path, "/v1/traces");
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource_spans in request.resource_spans {
            let resource = resource_spans.resource.unwrap();
            service = resource
                .attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| kv.value.clone());
            for scope in resource_spans.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    assert!(
        matches!(service.and_then(|v| v.value), Some(Value::StringValue(s)) if s == "graphkit-test")
    );
    let named = |name: &str| {
        spans
            .iter()
            .filter(move |s| s.name == name)
            .collect::<Vec<_>>()
    };
    let runs = named("run");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(attribute(run, "thread_id").as_deref(), Some("otel-thread"));
    let steps = named("step");
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s.parent_span_id == run.span_id));
    assert!(
        spans.iter().all(|s| s.trace_id == run.trace_id),
        "one trace"
    );
    let nodes = named("node");
    let node_names: Vec<_> = nodes
        .iter()
        .map(|s| attribute(s, "node").unwrap())
        .collect();
    assert_eq!(node_names, ["first", "second"]);
    for node in nodes {
        let step = steps
            .iter()
            .find(|s| s.span_id == node.parent_span_id)
            .expect("a step parent");
        assert_eq!(attribute(node, "step"), attribute(step, "step"));
    }
    otel.shutdown().unwrap();
}

#[test]
fn a_bad_endpoint_is_a_clear_error() {
    let error = OtelExporter::new("x")
        .endpoint("not a url")
        .install()
        .unwrap_err();
    assert!(error.to_string().contains("OTLP"), "{error}");
}
