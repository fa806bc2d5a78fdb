//! The MCP client against the real reference server `@modelcontextprotocol/server-everything`
//! (npm), over stdio and streamable HTTP.
//!
//! The server is found at `$GRAPHKIT_MCP_EVERYTHING` (the path of its `dist/index.js`), or
//! installed once with `npm install` into Cargo's test temp dir. Without node/npm (or when
//! the install fails) each test prints why it is skipped and passes.

use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};

use graphkit_llm::{AssistantMessage, Message, ToolCall};
use graphkit_tools::mcp::{McpClient, McpToolSet, McpTransport};
use graphkit_tools::{AgentState, ToolNode, ToolRuntime};
use serde_json::json;

const PACKAGE: &str = "@modelcontextprotocol/server-everything@2026.8.31";

fn server_script() -> Option<PathBuf> {
    static SCRIPT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = SCRIPT.get_or_init(|| {
        if let Ok(path) = std::env::var("GRAPHKIT_MCP_EVERYTHING") {
            let path = PathBuf::from(path);
            return if path.exists() {
                Ok(path)
            } else {
                Err(format!(
                    "GRAPHKIT_MCP_EVERYTHING={} does not exist",
                    path.display()
                ))
            };
        }
        let prefix = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mcp-everything");
        let script =
            prefix.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        if script.exists() {
            return Ok(script);
        }
        if Command::new("node").arg("--version").output().is_err() {
            return Err("node is not installed".into());
        }
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(PACKAGE)
            .output()
            .map_err(|e| format!("npm is not available: {e}"))?;
        if !out.status.success() || !script.exists() {
            return Err(format!(
                "`npm install {PACKAGE}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(script)
    });
    match found {
        Ok(path) => Some(path.clone()),
        Err(reason) => {
            eprintln!(
                "SKIPPED: the MCP reference server is unavailable ({reason}); set GRAPHKIT_MCP_EVERYTHING to its dist/index.js to run this test"
            );
            None
        }
    }
}

async fn connect_stdio() -> Option<Arc<McpClient>> {
    let script = server_script()?;
    Some(
        McpClient::stdio("everything", "node", [script.display().to_string()])
            .await
            .expect("the reference server starts over stdio"),
    )
}

fn sum_tool(names: &[String]) -> &'static str {
    if names.iter().any(|n| n == "add") {
        "add"
    } else {
        "get-sum"
    }
}

#[tokio::test]
async fn lists_tools_and_calls_echo_and_add_over_stdio() {
    let Some(client) = connect_stdio().await else {
        return;
    };
    let tools = client.list_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    assert!(names.contains(&"echo".to_owned()), "{names:?}");
    let sum = sum_tool(&names);
    assert!(names.iter().any(|n| n == sum), "{names:?}");
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert!(
        echo.input_schema["properties"]["message"].is_object(),
        "schema passed through: {}",
        echo.input_schema
    );

    let result = client
        .call_tool("echo", json!({"message": "hi from graphkit"}))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert!(result.text.contains("hi from graphkit"), "{}", result.text);
    let result = client
        .call_tool(sum, json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(result.text.contains("42"), "{}", result.text);

    // As graphkit tools inside a ToolNode, with a tool error shown to the model.
    let graph_tools = client.tools::<AgentState>().await.unwrap();
    let node = ToolNode::new(graph_tools);
    let state = AgentState {
        messages: vec![
            Message::user("go"),
            AssistantMessage::with_tool_calls(
                "",
                vec![
                    ToolCall::new("echo", json!({"message": "first"})).with_id("c1"),
                    ToolCall::new(sum, json!({"a": "not a number", "b": 1})).with_id("c2"),
                    ToolCall::new("no-such-tool", json!({})).with_id("c3"),
                ],
            )
            .into(),
        ]
        .into(),
        ..AgentState::default()
    };
    let out = node
        .run_with(ToolRuntime::detached(state.clone(), "", ""))
        .await
        .unwrap();
    let graphkit::nodes::NodeOutput::Update(update) = out else {
        panic!("one messages update expected")
    };
    let mut done = state;
    graphkit::State::apply_update(&mut done, update).unwrap();
    let answers: Vec<(&str, bool)> = done
        .messages
        .iter()
        .filter_map(|m| {
            if let Message::Tool(t) = m {
                Some((t.content.as_str(), t.is_error))
            } else {
                None
            }
        })
        .collect();
    assert_eq!(answers.len(), 3);
    assert!(
        answers[0].0.contains("first") && !answers[0].1,
        "{answers:?}"
    );
    assert!(
        answers[1].1 && answers[1].0.contains(sum),
        "tool error is readable: {answers:?}"
    );
    assert!(
        answers[2].1 && answers[2].0.contains("unknown tool `no-such-tool`"),
        "{answers:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn structured_content_is_returned() {
    let Some(client) = connect_stdio().await else {
        return;
    };
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    let Some(tool) = names.iter().find(|n| n.contains("structured")) else {
        eprintln!("SKIPPED: this server version has no structured-content tool ({names:?})");
        return;
    };
    let result = client
        .call_tool(tool, json!({"location": "New York"}))
        .await
        .unwrap();
    assert!(result.structured.is_some(), "{result:?}");
}

#[tokio::test]
async fn listed_tools_carry_their_schemas_as_plain_json() {
    let Some(client) = connect_stdio().await else {
        return;
    };
    let tools = client.list_tools().await.unwrap();
    let structured = tools
        .iter()
        .find(|t| t.name.contains("structured"))
        .expect("server-everything has a structured-content tool");
    let output = structured
        .output_schema
        .as_ref()
        .expect("its output schema is passed through");
    assert_eq!(output["type"], "object", "{output}");
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.output_schema, None);
    // Plain data: serializes (for a graph state or a prompt) and reads back the same.
    let as_json = serde_json::to_value(&tools).unwrap();
    let back: Vec<graphkit_tools::mcp::McpToolInfo> = serde_json::from_value(as_json).unwrap();
    assert_eq!(back, tools);
    client.close().await;
}

#[tokio::test]
async fn a_tool_set_over_two_reference_servers_needs_prefixes() {
    let Some(first) = connect_stdio().await else {
        return;
    };
    // The same reference server again, under another name.
    let script = server_script().expect("found for the first server");
    let second = McpClient::stdio("other", "node", [script.display().to_string()])
        .await
        .unwrap();
    let set = McpToolSet::new([first.clone(), second.clone()]);
    let err = set.list_tools().await.unwrap_err();
    assert!(
        err.to_string()
            .contains("is offered by both `everything` and `other`"),
        "{err}"
    );
    let set = McpToolSet::new([first, second]).prefixed();
    let names: Vec<String> = set
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.contains(&"everything_echo".to_owned()), "{names:?}");
    assert!(names.contains(&"other_echo".to_owned()), "{names:?}");
    let result = set
        .call_tool("other_echo", json!({"message": "routed"}))
        .await
        .unwrap();
    assert!(result.text.contains("routed"), "{}", result.text);
    set.close().await;
}

#[tokio::test]
async fn a_dead_server_is_restarted_or_reported_clearly() {
    let Some(client) = connect_stdio().await else {
        return;
    };
    let pid = client.server_pid().await.expect("stdio servers have a pid");
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    // The next call finds the connection closed and restarts the server once.
    let result = client
        .call_tool("echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert!(result.text.contains("again"));
    let new_pid = client.server_pid().await.unwrap();
    assert_ne!(pid, new_pid);

    // With reconnecting off, a dead server is a clear error.
    client.reconnect(false);
    Command::new("kill")
        .args(["-9", &new_pid.to_string()])
        .status()
        .unwrap();
    let mut last = None;
    for _ in 0..50 {
        match client.call_tool("echo", json!({"message": "x"})).await {
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
            Err(e) => {
                last = Some(e);
                break;
            }
        }
    }
    let err = last.expect("the call fails once the server is gone");
    assert!(err.to_string().contains("MCP server `everything`"), "{err}");
}

#[tokio::test]
async fn a_server_that_cannot_start_fails_clearly() {
    let err = McpClient::stdio("ghost", "/nonexistent/mcp-server", Vec::<String>::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("MCP server `ghost`: cannot start `/nonexistent/mcp-server`"),
        "{err}"
    );
    let err = McpClient::connect(
        "quitter",
        McpTransport::Stdio {
            command: "sh".into(),
            args: vec!["-c".into(), "exit 3".into()],
            env: vec![],
        },
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("handshake"), "{err}");
}

#[tokio::test]
async fn works_over_streamable_http() {
    let Some(script) = server_script() else {
        return;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = tokio::process::Command::new("node")
        .arg(&script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut client = None;
    for _ in 0..100 {
        if let Ok(c) = McpClient::http("everything-http", &url).await {
            client = Some(c);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let client = client.expect("the HTTP server comes up");
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    let result = client
        .call_tool(sum_tool(&names), json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert!(result.text.contains('3'), "{}", result.text);
    client.close().await;
    let _ = child.kill().await;
}

#[tokio::test]
async fn unreachable_http_servers_fail_clearly() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = McpClient::http("nobody", format!("http://127.0.0.1:{port}/mcp"))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("MCP server `nobody`: cannot connect"),
        "{err}"
    );
}
