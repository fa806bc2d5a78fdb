//! graphkit's MCP server over streamable HTTP on 127.0.0.1, used by graphkit's own MCP
//! client, by a tool set over two servers, and by the official TypeScript SDK's client
//! (skipped with a reason when node or the package is missing). The stdio side is in
//! `mcp_server_stdio.rs`.

#[path = "support/mcp_demo.rs"]
mod mcp_demo;

use std::sync::Arc;

use graphkit_tools::mcp::{McpClient, McpServer, McpToolSet};
use graphkit_tools::{AgentState, ToolError, ToolRuntime};
use mcp_demo::{AddArgs, demo_server};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A running server; dropping it shuts the server down.
struct Running {
    url: String,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), ToolError>>,
}

impl Running {
    /// Stops the server and waits until it has closed its listener.
    async fn stop(self) {
        let _ = self.stop.send(());
        self.task
            .await
            .expect("the server task ends")
            .expect("the server stops cleanly");
    }
}

async fn serve(server: McpServer) -> Running {
    let bound = server
        .bind_http("127.0.0.1:0")
        .await
        .expect("binds a loopback port");
    let url = bound.url();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(bound.run_until(async move {
        let _ = stopped.await;
    }));
    Running { url, stop, task }
}

async fn demo() -> (Running, Arc<McpClient>) {
    let running = serve(demo_server("demo")).await;
    let client = McpClient::http("demo", &running.url)
        .await
        .expect("graphkit's client connects");
    (running, client)
}

#[tokio::test]
async fn lists_typed_tools_with_their_input_and_output_schemas() {
    let (_server, client) = demo().await;
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["analyze", "add", "fail", "explode", "shout"]);

    let analyze = &tools[0];
    assert_eq!(analyze.description, "Counts events grouped by a field.");
    assert_eq!(analyze.input_schema["type"], "object");
    assert_eq!(analyze.input_schema["required"], json!(["group_by"]));
    assert_eq!(
        analyze.input_schema["properties"]["group_by"]["description"],
        "The field to group by."
    );
    let output = analyze
        .output_schema
        .as_ref()
        .expect("a typed struct result has an output schema");
    assert_eq!(output["type"], "object");
    assert!(output["properties"]["buckets"].is_object(), "{output}");

    // A result that is not an object schema (a number) declares no output schema.
    assert_eq!(tools[1].output_schema, None);
    // A served graphkit tool keeps its parameter schema.
    assert_eq!(tools[4].input_schema["required"], json!(["text"]));
    client.close().await;
}

#[tokio::test]
async fn a_call_returns_structured_content_and_the_same_json_as_text() {
    let (_server, client) = demo().await;
    let result = client
        .call_tool(
            "analyze",
            json!({"group_by": "country", "filters": "{\"year\": 2020}", "top_n": 2}),
        )
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    let structured = result.structured.expect("structuredContent");
    assert_eq!(
        structured,
        json!({
            "group_by": "country",
            "filters": {"year": 2020},
            "buckets": [{"key": "FR", "doc_count": 7}, {"key": "DE", "doc_count": 5}]
        })
    );
    let text: Value = serde_json::from_str(&result.text).expect("the text is the JSON");
    assert_eq!(text, structured);
    client.close().await;
}

#[tokio::test]
async fn a_result_that_is_not_an_object_is_sent_as_result() {
    let (_server, client) = demo().await;
    let result = client
        .call_tool("add", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert_eq!(result.structured, Some(json!({"result": 42})));
    assert_eq!(result.text, r#"{"result":42}"#);
    client.close().await;
}

#[tokio::test]
async fn missing_wrong_and_extra_arguments_are_readable_tool_errors() {
    let (_server, client) = demo().await;
    let cases = [
        ("analyze", json!({}), "missing field `group_by`"),
        (
            "add",
            json!({"a": "two", "b": 40}),
            "`a`: invalid type: string \"two\", expected i64",
        ),
        (
            "analyze",
            json!({"group_by": 7}),
            "`group_by`: invalid type: integer `7`",
        ),
        (
            "add",
            json!({"a": 2, "b": 40, "garbage": {"x": 1}}),
            "unexpected argument `garbage`; the accepted arguments are `a`, `b`",
        ),
    ];
    for (tool, arguments, expected) in cases {
        let result = client.call_tool(tool, arguments.clone()).await.unwrap();
        assert!(result.is_error, "{tool} {arguments}: {result:?}");
        assert!(
            result
                .text
                .contains(&format!("invalid arguments for `{tool}`"))
                && result.text.contains(expected),
            "{tool} {arguments}: {}",
            result.text
        );
        assert_eq!(result.structured, None);
    }
    client.close().await;
}

#[tokio::test]
async fn a_malformed_json_string_the_handler_rejects_is_a_tool_error() {
    let (_server, client) = demo().await;
    let result = client
        .call_tool(
            "analyze",
            json!({"group_by": "country", "filters": "{not json"}),
        )
        .await
        .unwrap();
    assert!(result.is_error);
    assert!(
        result.text.contains("`filters` is not valid JSON"),
        "{}",
        result.text
    );

    let result = client.call_tool("fail", json!({})).await.unwrap();
    assert!(result.is_error);
    assert_eq!(result.text, "the backend is down; try again later");
    client.close().await;
}

#[tokio::test]
async fn a_panicking_tool_is_a_tool_error_and_the_server_keeps_serving() {
    let (_server, client) = demo().await;
    let result = client.call_tool("explode", json!({})).await.unwrap();
    assert!(result.is_error);
    assert!(
        result.text.contains("it panicked: kaboom"),
        "{}",
        result.text
    );
    let result = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(result.structured, Some(json!({"result": 2})));
    client.close().await;
}

#[tokio::test]
async fn an_unknown_tool_is_the_protocols_invalid_params_error() {
    let (_server, client) = demo().await;
    let err = client
        .call_tool("no_such_tool", json!({}))
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, ToolError::Mcp { .. }), "{err:?}");
    assert!(message.contains("-32602"), "{message}");
    assert!(
        message.contains("unknown tool `no_such_tool`; the available tools are: analyze, add, fail, explode, shout"),
        "{message}"
    );
    client.close().await;
}

#[tokio::test]
async fn a_served_graphkit_tool_answers_with_its_text() {
    let (_server, client) = demo().await;
    let result = client
        .call_tool("shout", json!({"text": "hi"}))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert_eq!(result.text, "HI");
    assert_eq!(
        result.structured, None,
        "plain text is not structured content"
    );
    client.close().await;
}

#[tokio::test]
async fn served_tools_work_inside_a_graph_through_the_client() {
    let (_server, client) = demo().await;
    let tools = client.tools::<AgentState>().await.unwrap();
    let add = tools.iter().find(|t| t.name() == "add").unwrap();
    let out = add
        .call(
            json!({"a": 20, "b": 22}),
            ToolRuntime::detached(AgentState::default(), "c1", "add"),
        )
        .await
        .unwrap();
    let graphkit_tools::ToolOutput::Content(text) = out else {
        panic!("content expected")
    };
    assert_eq!(text, r#"{"result":42}"#, "the JSON once, not twice");
    client.close().await;
}

#[tokio::test]
async fn invalid_or_duplicate_tool_names_fail_when_the_server_starts() {
    let add = |args: AddArgs| async move { Ok(args.a + args.b) };
    let err = McpServer::new("dup", "1")
        .tool("add", "Adds.", add)
        .tool("add", "Adds again.", add)
        .bind_http("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("MCP server `dup`: two tools are named `add`"),
        "{err}"
    );
    let err = McpServer::new("bad", "1")
        .tool("add numbers", "Adds.", add)
        .bind_http("127.0.0.1:0")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("the tool name `add numbers` is invalid"),
        "{err}"
    );
}

#[tokio::test]
async fn only_the_mcp_path_is_served() {
    let running = serve(demo_server("demo")).await;
    let root = running.url.trim_end_matches("/mcp").to_owned() + "/";
    let response = graphkit_llm::http::client_builder()
        .build()
        .unwrap()
        .get(&root)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("the MCP endpoint is /mcp")
    );
}

#[tokio::test]
async fn requests_for_a_foreign_host_name_are_refused() {
    // DNS-rebinding guard: a page on evil.example resolving to 127.0.0.1 sends its own Host.
    let running = serve(demo_server("demo")).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "probe", "version": "1"}}
    });
    let post = |host: &'static str| {
        graphkit_llm::http::client_builder()
            .build()
            .expect("an HTTP client")
            .post(&running.url)
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    let refused = post("evil.example").await.unwrap();
    assert_eq!(refused.status(), 403, "{:?}", refused.text().await);
    let accepted = post("localhost").await.unwrap();
    assert!(accepted.status().is_success(), "{}", accepted.status());
}

#[tokio::test]
async fn a_stopped_server_refuses_new_clients() {
    let running = serve(demo_server("demo")).await;
    let url = running.url.clone();
    McpClient::http("demo", &url).await.unwrap().close().await;
    running.stop().await;
    let err = McpClient::http("demo", &url).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("MCP server `demo`: cannot connect"),
        "{err}"
    );
}

#[tokio::test]
async fn calls_to_one_server_run_concurrently() {
    // Each call returns only once two calls are inside the tool at the same time.
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let server = McpServer::new("meet", "1").tool(
        "meet",
        "Returns once two calls are in flight.",
        move |_: mcp_demo::NoArgs| {
            let barrier = Arc::clone(&barrier);
            async move {
                barrier.wait().await;
                Ok(json!({"met": true}))
            }
        },
    );
    let running = serve(server).await;
    let client = McpClient::http("meet", &running.url).await.unwrap();
    let both = futures::future::join(
        client.call_tool("meet", json!({})),
        client.call_tool("meet", json!({})),
    );
    // A deadlock guard, not a timing assertion: calls made one after the other never meet.
    let (first, second) = tokio::time::timeout(std::time::Duration::from_secs(120), both)
        .await
        .expect("both calls were in flight together");
    assert_eq!(first.unwrap().structured, Some(json!({"met": true})));
    assert_eq!(second.unwrap().structured, Some(json!({"met": true})));
    client.close().await;
}

#[tokio::test]
async fn a_tool_set_lists_and_routes_the_tools_of_several_servers() {
    let events = serve(McpServer::new("events", "1").tool(
        "count_events",
        "Counts events.",
        |_: mcp_demo::NoArgs| async move { Ok(json!({"count": 2000})) },
    ))
    .await;
    let logs = serve(McpServer::new("logs", "1").tool(
        "count_logs",
        "Counts log lines.",
        |_: mcp_demo::NoArgs| async move { Ok(json!({"count": 7})) },
    ))
    .await;
    let set = McpToolSet::new([
        McpClient::http("events", &events.url).await.unwrap(),
        McpClient::http("logs", &logs.url).await.unwrap(),
    ]);
    // Calls route even before the tools were listed.
    let result = set.call_tool("count_logs", json!({})).await.unwrap();
    assert_eq!(result.structured, Some(json!({"count": 7})));

    let tools = set.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["count_events", "count_logs"]);
    assert_eq!(tools[0].input_schema["type"], "object");
    let as_json = serde_json::to_value(&tools).unwrap();
    assert_eq!(as_json[1]["description"], "Counts log lines.");

    let result = set.call_tool("count_events", json!({})).await.unwrap();
    assert_eq!(result.structured, Some(json!({"count": 2000})));

    let err = set.call_tool("count_cats", json!({})).await.unwrap_err();
    assert!(
        err.to_string().contains(
            "unknown tool `count_cats`; the available tools are: count_events, count_logs"
        ),
        "{err}"
    );

    let graph_tools = set.tools::<AgentState>().await.unwrap();
    assert_eq!(graph_tools.len(), 2);
    set.close().await;
}

#[tokio::test]
async fn a_tool_set_refuses_colliding_names_unless_prefixed() {
    let first = serve(demo_server("first")).await;
    let second = serve(demo_server("second")).await;
    let clients = || async {
        [
            McpClient::http("first", &first.url).await.unwrap(),
            McpClient::http("second", &second.url).await.unwrap(),
        ]
    };
    let err = McpToolSet::new(clients().await)
        .list_tools()
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "the tool `analyze` is offered by both `first` and `second`; use `McpToolSet::prefixed()`"
        ),
        "{err}"
    );

    let set = McpToolSet::new(clients().await).prefixed();
    let names: Vec<String> = set
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names.len(), 10);
    assert_eq!(names[0], "first_analyze");
    assert_eq!(names[5], "second_analyze");
    let result = set
        .call_tool("second_add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(result.structured, Some(json!({"result": 3})));

    // As graphkit tools: exposed under the prefixed name, calling the server's own name.
    let tools = set.tools::<AgentState>().await.unwrap();
    let add = tools.iter().find(|t| t.name() == "first_add").unwrap();
    let out = add
        .call(
            json!({"a": 2, "b": 2}),
            ToolRuntime::detached(AgentState::default(), "c", "first_add"),
        )
        .await
        .unwrap();
    assert!(
        matches!(out, graphkit_tools::ToolOutput::Content(ref t) if t.contains("4")),
        "{out:?}"
    );
    set.close().await;
}

#[tokio::test]
async fn the_reference_sdk_client_uses_the_server_over_http() {
    let Some((script, sdk)) = mcp_demo::sdk_client() else {
        return;
    };
    let running = serve(demo_server("demo")).await;
    let report = mcp_demo::run_sdk_client(
        &script,
        &sdk,
        &["http".into(), running.url.clone()],
        &mcp_demo::sdk_calls(),
        &[],
    )
    .await;
    mcp_demo::check_sdk_report(&report);
}

/// A raw `initialize` POST to `url` (as a client opening a session sends it), padded with
/// `padding` bytes of client info.
async fn open_session(url: &str, padding: usize) -> reqwest::Response {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "x".repeat(padding.max(1)), "version": "1"}}
    });
    graphkit_llm::http::client_builder()
        .build()
        .expect("an HTTP client")
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .expect("the server answers")
}

fn session_id(response: &reqwest::Response) -> String {
    response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        .expect("a session id")
        .to_owned()
}

#[tokio::test]
async fn sessions_beyond_the_cap_are_refused_until_one_is_closed() {
    let running = serve(demo_server("demo").max_sessions(2)).await;
    let first = open_session(&running.url, 1).await;
    assert!(first.status().is_success(), "{}", first.status());
    let second = open_session(&running.url, 1).await;
    assert!(second.status().is_success(), "{}", second.status());

    let refused = open_session(&running.url, 1).await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let text = refused.text().await.unwrap();
    assert!(
        text.contains("too many sessions") && text.contains("at most 2"),
        "{text}"
    );

    // Closing a session (HTTP DELETE) frees its place.
    let closed = graphkit_llm::http::client_builder()
        .build()
        .unwrap()
        .delete(&running.url)
        .header("mcp-session-id", session_id(&first))
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    let third = open_session(&running.url, 1).await;
    assert!(third.status().is_success(), "{}", third.status());
    running.stop().await;
}

#[tokio::test]
async fn an_idle_session_expires_and_frees_its_place() {
    let running = serve(
        demo_server("demo")
            .max_sessions(1)
            .session_idle_timeout(std::time::Duration::from_millis(100)),
    )
    .await;
    let idle = open_session(&running.url, 1).await;
    assert!(idle.status().is_success(), "{}", idle.status());
    let idle_id = session_id(&idle);
    drop(idle);
    // Polls for the expiry (bounded): the server closes the session on its own timer.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    let reopened = loop {
        let attempt = open_session(&running.url, 1).await;
        if attempt.status().is_success() {
            break attempt;
        }
        assert_eq!(attempt.status(), 503);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle session never expired"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_ne!(session_id(&reopened), idle_id);
    // The expired session is gone: a request that names it is told so.
    let stale = graphkit_llm::http::client_builder()
        .build()
        .unwrap()
        .post(&running.url)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", idle_id)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 404);
    running.stop().await;
}

#[tokio::test]
async fn a_request_body_over_the_limit_is_refused() {
    let running = serve(demo_server("demo").max_request_bytes(4096)).await;
    let small = open_session(&running.url, 100).await;
    assert!(small.status().is_success(), "{}", small.status());
    let large = open_session(&running.url, 8192).await;
    assert_eq!(large.status(), 413);
    running.stop().await;
}
