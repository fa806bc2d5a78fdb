//! graphkit's MCP server over stdio, as a child process, used by graphkit's own MCP client
//! and by the official TypeScript SDK's client (skipped with a reason when node or the
//! package is missing).
//!
//! This test binary is also the server: started with `GRAPHKIT_MCP_SERVE_STDIO=1` it
//! serves the demo tools on stdin/stdout instead of running tests. That is why it has its
//! own small `main` (`harness = false`): the standard test harness would print to stdout,
//! which is the protocol channel.

// Plain functions, not `#[test]`s (see above): unwrap as tests do.
#![allow(clippy::unwrap_used)]

#[path = "support/mcp_demo.rs"]
mod mcp_demo;

use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;

use futures::FutureExt;
use graphkit_tools::mcp::McpClient;
use serde_json::{Value, json};

const SERVE: &str = "GRAPHKIT_MCP_SERVE_STDIO";

type Test = fn() -> Pin<Box<dyn Future<Output = ()>>>;

const TESTS: &[(&str, Test)] = &[
    ("graphkits_client_lists_and_calls_tools_over_stdio", || {
        Box::pin(graphkits_client_lists_and_calls_tools_over_stdio())
    }),
    (
        "bad_calls_are_tool_errors_and_the_process_keeps_serving",
        || Box::pin(bad_calls_are_tool_errors_and_the_process_keeps_serving()),
    ),
    (
        "the_reference_sdk_client_uses_the_server_over_stdio",
        || Box::pin(the_reference_sdk_client_uses_the_server_over_stdio()),
    ),
];

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    if std::env::var_os(SERVE).is_some() {
        return match runtime.block_on(mcp_demo::demo_server("demo").serve_stdio()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("{err}");
                ExitCode::FAILURE
            }
        };
    }
    // `cargo test -- NAME` runs the tests whose name contains NAME.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<_> = TESTS
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in selected {
        let outcome = runtime.block_on(std::panic::AssertUnwindSafe(test()).catch_unwind());
        println!(
            "test {name} ... {}",
            if outcome.is_ok() { "ok" } else { "FAILED" }
        );
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    if failed.is_empty() {
        println!("\ntest result: ok. {} passed\n", TESTS.len());
        ExitCode::SUCCESS
    } else {
        println!("\ntest result: FAILED. failures: {failed:?}\n");
        ExitCode::FAILURE
    }
}

/// This binary, started as the stdio server.
async fn spawn_server() -> Arc<McpClient> {
    let exe = std::env::current_exe().expect("the test binary's path");
    McpClient::connect(
        "demo",
        graphkit_tools::mcp::McpTransport::Stdio {
            command: exe.display().to_string(),
            args: vec![],
            env: vec![(SERVE.into(), "1".into())],
        },
    )
    .await
    .expect("the stdio server starts")
}

async fn graphkits_client_lists_and_calls_tools_over_stdio() {
    let client = spawn_server().await;
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["analyze", "add", "fail", "explode", "shout"]);
    assert_eq!(tools[0].input_schema["required"], json!(["group_by"]));
    assert!(tools[0].output_schema.is_some());

    let result = client
        .call_tool("analyze", json!({"group_by": "country", "top_n": 1}))
        .await
        .unwrap();
    assert!(!result.is_error);
    let structured = result.structured.unwrap();
    assert_eq!(
        structured["buckets"],
        json!([{"key": "FR", "doc_count": 7}])
    );
    assert_eq!(
        serde_json::from_str::<Value>(&result.text).unwrap(),
        structured
    );
    client.close().await;
}

async fn bad_calls_are_tool_errors_and_the_process_keeps_serving() {
    let client = spawn_server().await;
    let pid = client.server_pid().await;
    let result = client.call_tool("add", json!({"a": 1})).await.unwrap();
    assert!(
        result.is_error && result.text.contains("missing field `b`"),
        "{result:?}"
    );
    let result = client.call_tool("explode", json!({})).await.unwrap();
    assert!(
        result.is_error && result.text.contains("panicked"),
        "{result:?}"
    );
    let err = client.call_tool("nope", json!({})).await.unwrap_err();
    assert!(err.to_string().contains("unknown tool `nope`"), "{err}");
    let result = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(result.structured, Some(json!({"result": 3})));
    assert_eq!(
        client.server_pid().await,
        pid,
        "the same process served every call"
    );
    client.close().await;
}

async fn the_reference_sdk_client_uses_the_server_over_stdio() {
    let Some((script, sdk)) = mcp_demo::sdk_client() else {
        return;
    };
    let exe = std::env::current_exe().expect("the test binary's path");
    let report = mcp_demo::run_sdk_client(
        &script,
        &sdk,
        &["stdio".into(), exe.display().to_string()],
        &mcp_demo::sdk_calls(),
        &[(SERVE, "1".into())],
    )
    .await;
    mcp_demo::check_sdk_report(&report);
}
