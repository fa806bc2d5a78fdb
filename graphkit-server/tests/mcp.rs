//! `POST /mcp`: the served graphs as MCP tools. The official TypeScript SDK's client
//! (`@modelcontextprotocol/sdk`, `GRAPHKIT_MCP_SDK`) lists and calls them over streamable
//! HTTP; plain JSON-RPC requests check the wire details (JSON answers, no session, the API
//! key, protocol errors).

use std::path::PathBuf;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::{TestServer, expect_json, user_input};

const KEY: &str = "mcp-test-key";

async fn server() -> TestServer {
    TestServer::start_with(|server| {
        server
            .graph(
                "second agent",
                graphkit_server::demo::agent_graph().expect("demo graph"),
            )
            .api_key(KEY)
    })
    .await
}

/// The SDK client script (shared with graphkit-tools' MCP server tests) and the SDK's
/// package directory, or `None` after printing why the test is skipped.
fn sdk_client() -> Option<(PathBuf, PathBuf)> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../graphkit-tools/tests/mcp_sdk_client.mjs");
    let Some(sdk) = std::env::var_os("GRAPHKIT_MCP_SDK").map(PathBuf::from) else {
        eprintln!(
            "SKIPPED: GRAPHKIT_MCP_SDK is not set; install the official MCP client with `npm install --prefix target/mcp-sdk @modelcontextprotocol/sdk@1.32.2` and set GRAPHKIT_MCP_SDK to target/mcp-sdk/node_modules/@modelcontextprotocol/sdk (as .ci/run does)"
        );
        return None;
    };
    if !sdk.join("package.json").exists() {
        eprintln!(
            "SKIPPED: GRAPHKIT_MCP_SDK={} holds no package.json",
            sdk.display()
        );
        return None;
    }
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: node is not installed");
        return None;
    }
    Some((script, sdk))
}

/// The official client lists every served graph as a tool with the graph's input schema,
/// runs one by calling it (the run's final state comes back), and gets tool errors for
/// input the graph refuses and a protocol error for an unknown tool.
#[tokio::test]
async fn the_official_mcp_client_lists_and_runs_the_graphs() {
    let Some((script, sdk)) = sdk_client() else {
        return;
    };
    let s = server().await;
    let calls = json!([
        {"name": "agent", "arguments": user_input("hello", json!({}))},
        {"name": "second_agent", "arguments": user_input("again", json!({}))},
        {"name": "agent", "arguments": {"messages": "not a list"}},
        {"name": "agent", "arguments": {"messages": [], "colour": "red"}},
        {"name": "no_such_graph", "arguments": {}},
    ]);
    let output = tokio::process::Command::new("node")
        .arg(&script)
        .arg(&sdk)
        .arg(calls.to_string())
        .arg("http")
        .arg(s.url("/mcp"))
        .env(
            "GRAPHKIT_MCP_HEADERS",
            json!({"x-api-key": KEY}).to_string(),
        )
        .kill_on_drop(true)
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the SDK client failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).expect("a JSON report");

    assert_eq!(report["server"]["name"], "graphkit-server", "{report}");
    let tools = report["tools"].as_array().expect("tools");
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["agent", "second_agent"], "{report}");
    let agent = tools
        .iter()
        .find(|t| t["name"] == "agent")
        .expect("the agent tool");
    let schemas = s
        .client
        .get(s.url("/assistants/agent/schemas"))
        .header("x-api-key", KEY)
        .send()
        .await
        .expect("send");
    let schemas = expect_json(schemas, StatusCode::OK).await;
    // The same schema (numbers compared loosely: JavaScript writes 0.0 as 0).
    let keys = |schema: &Value| -> Vec<String> {
        schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&agent["inputSchema"]), keys(&schemas["input_schema"]));
    assert_eq!(
        keys(&agent["inputSchema"]),
        ["ask_human", "messages", "sleep"]
    );
    assert_eq!(
        agent["inputSchema"]["title"],
        schemas["input_schema"]["title"]
    );

    let calls = report["calls"].as_array().expect("calls");
    let first = &calls[0]["result"];
    assert_ne!(first["isError"], json!(true), "{first}");
    assert_eq!(
        first["structuredContent"]["messages"],
        json!([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "echo: hello"}]),
        "{first}"
    );
    let text = first["content"][0]["text"].as_str().expect("text content");
    let from_text: Value = serde_json::from_str(text).expect("the text is the JSON output");
    assert_eq!(
        from_text["messages"],
        first["structuredContent"]["messages"]
    );
    assert_eq!(
        calls[1]["result"]["structuredContent"]["messages"][1]["content"], "echo: again",
        "{}",
        calls[1]
    );
    for (index, names) in [(2, "messages"), (3, "colour")] {
        let result = &calls[index]["result"];
        assert_eq!(result["isError"], json!(true), "call {index}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains(names), "call {index}: {text}");
    }
    let unknown = &calls[4]["error"];
    assert_eq!(unknown["code"], json!(-32602), "{unknown}");
    // The available tools are named newest assistant first; the two system assistants are
    // created at start, in either order when their times are equal to the microsecond.
    let message = unknown["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("agent, second_agent") || message.contains("second_agent, agent"),
        "{unknown}"
    );
    s.stop().await;
}

/// The tool names of a `tools/list` answer, sorted.
fn tool_names(listed: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .map(|tools| tools.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    names.sort_unstable();
    names
}

/// One JSON-RPC POST to `/mcp` with the key (or without it).
async fn rpc(s: &TestServer, body: Value, key: bool) -> reqwest::Response {
    let mut request = s
        .client
        .post(s.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if key {
        request = request.header("x-api-key", KEY);
    }
    request.send().await.expect("send")
}

/// The wire: each message gets a JSON answer (202 for a notification), no session is
/// issued, ping answers, GET is 405, and the API key applies.
#[tokio::test]
async fn the_endpoint_answers_json_rpc_statelessly_behind_the_key() {
    let s = server().await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}
        }
    });
    let refused = rpc(&s, initialize.clone(), false).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);

    let answer = rpc(&s, initialize, true).await;
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(
        answer.headers().get("mcp-session-id").is_none(),
        "a stateless server issues no session"
    );
    let content_type = answer.headers()["content-type"].to_str().expect("text");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let answer: Value = answer.json().await.expect("JSON");
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["serverInfo"]["name"], "graphkit-server");
    assert!(
        answer["result"]["capabilities"]["tools"].is_object(),
        "{answer}"
    );

    let notified = rpc(
        &s,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        true,
    )
    .await;
    assert_eq!(notified.status(), StatusCode::ACCEPTED);

    let headers = [("mcp-protocol-version", "2025-06-18")];
    let call = |body: Value| {
        let mut request = s
            .client
            .post(s.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("x-api-key", KEY)
            .json(&body);
        for (k, v) in headers {
            request = request.header(k, v);
        }
        request.send()
    };
    let pong: Value = call(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        .await
        .expect("send")
        .json()
        .await
        .expect("JSON");
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));

    let listed: Value = call(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}))
        .await
        .expect("send")
        .json()
        .await
        .expect("JSON");
    assert_eq!(tool_names(&listed), ["agent", "second_agent"], "{listed}");

    let called: Value = call(json!({
        "jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "agent", "arguments": user_input("wire", json!({}))}
    }))
    .await
    .expect("send")
    .json()
    .await
    .expect("JSON");
    assert_eq!(
        called["result"]["structuredContent"]["messages"][1]["content"], "echo: wire",
        "{called}"
    );

    let unknown: Value = call(json!({"jsonrpc": "2.0", "id": 5, "method": "no/such"}))
        .await
        .expect("send")
        .json()
        .await
        .expect("JSON");
    assert_eq!(unknown["id"], 5);
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    let get = s
        .client
        .get(s.url("/mcp"))
        .header("x-api-key", KEY)
        .send()
        .await
        .expect("send");
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    s.stop().await;
}

/// Assistants created through `POST /assistants` are tools too, as the reference serves
/// them: named by the assistant's name made a tool name, described by its description (or
/// `Tool based on the NAME assistant`), the newer of two with one tool name listed, run with
/// the assistant's own config, and gone from the list once deleted.
#[tokio::test]
async fn created_assistants_are_listed_and_run_as_tools() {
    let running = server().await;
    let s = &running;
    let create = |body: Value| async move {
        let answer = s
            .client
            .post(s.url("/assistants"))
            .header("x-api-key", KEY)
            .json(&body)
            .send()
            .await
            .expect("send");
        expect_json(answer, StatusCode::OK).await
    };
    create(
        json!({"graph_id": "agent", "name": "French  helper", "description": "Answers in French."}),
    )
    .await;
    // Newer, and the same tool name: this one is the tool.
    create(json!({"graph_id": "second agent", "name": "French\thelper"})).await;
    let plain = create(json!({"graph_id": "agent", "name": "plain"})).await;
    // Its config reaches the run: no super-step allowed, so the run fails.
    create(json!({"graph_id": "agent", "name": "stuck", "config": {"recursion_limit": 0}})).await;

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let listed: Value = rpc(s, list.clone(), true).await.json().await.expect("JSON");
    assert_eq!(
        tool_names(&listed),
        ["French_helper", "agent", "plain", "second_agent", "stuck"],
        "{listed}"
    );
    let tool = |name: &str| {
        listed["result"]["tools"]
            .as_array()
            .and_then(|tools| tools.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(
        tool("French_helper")["description"],
        "Tool based on the French\thelper assistant"
    );
    // Titled by the assistant's name as it is, as the reference titles them.
    assert_eq!(tool("French_helper")["title"], "French\thelper");
    assert_eq!(tool("agent")["title"], "agent");
    assert_eq!(
        tool("plain")["description"],
        "Tool based on the plain assistant"
    );
    assert_eq!(
        tool("agent")["description"],
        "Tool based on the agent assistant"
    );
    assert_eq!(
        tool("plain")["inputSchema"]["properties"],
        tool("agent")["inputSchema"]["properties"]
    );

    let call = |id: u64, name: &str, text: &str| {
        json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": user_input(text, json!({}))}
        })
    };
    let called: Value = rpc(s, call(2, "plain", "bonjour"), true)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        called["result"]["structuredContent"]["messages"][1]["content"], "echo: bonjour",
        "{called}"
    );
    let stuck: Value = rpc(s, call(3, "stuck", "go"), true)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(stuck["result"]["isError"], json!(true), "{stuck}");
    let text = stuck["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("recursion_limit"), "{text}");

    let id = plain["assistant_id"].as_str().expect("an id");
    let deleted = s
        .client
        .delete(s.url(&format!("/assistants/{id}")))
        .header("x-api-key", KEY)
        .send()
        .await
        .expect("send");
    assert!(deleted.status().is_success(), "{}", deleted.status());
    let listed: Value = rpc(s, list, true).await.json().await.expect("JSON");
    assert_eq!(
        tool_names(&listed),
        ["French_helper", "agent", "second_agent", "stuck"],
        "{listed}"
    );
    let gone: Value = rpc(s, call(4, "plain", "again"), true)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(gone["error"]["code"], json!(-32602), "{gone}");
    running.stop().await;
}

/// `tools/list` pages the tools 100 at a time, as the reference does: a `nextCursor` when
/// a page is full, the next page for it, and an invalid-params error for a cursor the
/// server never gave.
#[tokio::test]
async fn tools_are_listed_a_page_at_a_time() {
    let running = server().await;
    let s = &running;
    for n in 0..100 {
        let answer = s
            .client
            .post(s.url("/assistants"))
            .header("x-api-key", KEY)
            .json(&json!({"graph_id": "agent", "name": format!("helper {n:03}")}))
            .send()
            .await
            .expect("send");
        expect_json(answer, StatusCode::OK).await;
    }
    let list = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params});
    let first: Value = rpc(s, list(json!({})), true)
        .await
        .json()
        .await
        .expect("JSON");
    let first_names = tool_names(&first);
    assert_eq!(first_names.len(), 100, "{first}");
    assert_eq!(first["result"]["nextCursor"], "100", "{first}");
    let second: Value = rpc(s, list(json!({"cursor": "100"})), true)
        .await
        .json()
        .await
        .expect("JSON");
    let second_names = tool_names(&second);
    // 100 created and the system assistants of the two graphs.
    assert_eq!(second_names.len(), 2, "{second}");
    assert!(second["result"].get("nextCursor").is_none(), "{second}");
    assert!(second_names.iter().all(|n| !first_names.contains(n)));
    let wrong: Value = rpc(s, list(json!({"cursor": "soon"})), true)
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    running.stop().await;
}
