//! The MCP server the server tests serve (over HTTP in-process, over stdio as a child
//! process), and how to find the reference SDK client.

#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;

use graphkit_tools::mcp::McpServer;
use graphkit_tools::{AgentState, ToolError, tool_fn};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Arguments of `analyze`, shaped like the events tools of the MCP research workflow.
#[derive(Deserialize, JsonSchema)]
pub struct AnalyzeArgs {
    /// The field to group by.
    pub group_by: String,
    /// Equality filters, as a JSON object encoded in a string.
    #[serde(default)]
    pub filters: Option<String>,
    /// How many buckets to return.
    #[serde(default)]
    pub top_n: Option<u32>,
}

/// One bucket of an aggregation.
#[derive(Serialize, JsonSchema)]
pub struct Bucket {
    /// The group.
    pub key: String,
    /// How many documents.
    pub doc_count: u64,
}

/// The result of `analyze`.
#[derive(Serialize, JsonSchema)]
pub struct Analysis {
    /// The field grouped by.
    pub group_by: String,
    /// The filters applied.
    pub filters: Value,
    /// The buckets, largest first.
    pub buckets: Vec<Bucket>,
}

/// Arguments of `add`.
#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// First number.
    pub a: i64,
    /// Second number.
    pub b: i64,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

/// Arguments of the served graphkit tool `shout`.
#[derive(Deserialize, JsonSchema)]
pub struct ShoutArgs {
    /// What to shout.
    pub text: String,
}

/// The test server: `analyze` (typed result with an output schema; rejects malformed
/// `filters` JSON), `add` (a number, so wrapped as `{"result": n}`), `fail` (a handler
/// error), `explode` (a panicking handler) and `shout` (a graphkit tool served as is).
pub fn demo_server(name: &str) -> McpServer {
    McpServer::new(name, "0.1.0")
        .instructions("Test server of graphkit-tools.")
        .tool(
            "analyze",
            "Counts events grouped by a field.",
            |args: AnalyzeArgs| async move {
                let filters: Value = match &args.filters {
                    Some(text) => {
                        serde_json::from_str(text).map_err(|e| ToolError::InvalidArguments {
                            tool: "analyze".into(),
                            message: format!("`filters` is not valid JSON ({e})"),
                        })?
                    }
                    None => json!({}),
                };
                let buckets = vec![
                    Bucket {
                        key: "FR".into(),
                        doc_count: 7,
                    },
                    Bucket {
                        key: "DE".into(),
                        doc_count: 5,
                    },
                    Bucket {
                        key: "IT".into(),
                        doc_count: 2,
                    },
                ];
                let top_n = args.top_n.map_or(buckets.len(), |n| n as usize);
                Ok(Analysis {
                    group_by: args.group_by,
                    filters,
                    buckets: buckets.into_iter().take(top_n).collect(),
                })
            },
        )
        .tool("add", "Adds two integers.", |args: AddArgs| async move {
            Ok(json!(args.a + args.b))
        })
        .tool("fail", "Always fails.", |_: NoArgs| async move {
            Err::<Value, _>(ToolError::failed("the backend is down; try again later"))
        })
        .tool(
            "explode",
            "Panics (a buggy tool).",
            |_: NoArgs| async move {
                if true {
                    panic!("kaboom");
                }
                Ok(json!({}))
            },
        )
        .graph_tool::<AgentState>(std::sync::Arc::new(tool_fn(
            "shout",
            "Upper-cases the text.",
            |args: ShoutArgs| async move { Ok(args.text.to_uppercase()) },
        )))
}

/// The reference client of the official TypeScript SDK: `node` and the package directory
/// of `@modelcontextprotocol/sdk` (`$GRAPHKIT_MCP_SDK`, else `target/mcp-sdk`, where
/// `.ci/run` installs it). `None` after printing why the test is skipped.
pub fn sdk_client() -> Option<(PathBuf, PathBuf)> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_sdk_client.mjs");
    let sdk = match std::env::var_os("GRAPHKIT_MCP_SDK") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/mcp-sdk/node_modules/@modelcontextprotocol/sdk"),
    };
    let skip = |reason: String| {
        eprintln!(
            "SKIPPED: the MCP reference SDK client is unavailable ({reason}); install it with `npm install --prefix target/mcp-sdk @modelcontextprotocol/sdk@1.32.2` (as .ci/run does) or set GRAPHKIT_MCP_SDK to its package directory"
        );
        None
    };
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("node is not installed".into());
    }
    if !sdk.join("package.json").exists() {
        return skip(format!("{} does not exist", sdk.display()));
    }
    Some((script, sdk))
}

/// Runs the SDK client script: connect with `transport` (`["http", url]` or
/// `["stdio", command, args...]`), list the tools, make `calls`, and return its JSON report.
pub async fn run_sdk_client(
    script: &std::path::Path,
    sdk: &std::path::Path,
    transport: &[String],
    calls: &Value,
    env: &[(&str, String)],
) -> Value {
    let output = tokio::process::Command::new("node")
        .arg(script)
        .arg(sdk)
        .arg(calls.to_string())
        .args(transport)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
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
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The calls every SDK client test makes, in order.
pub fn sdk_calls() -> Value {
    json!([
        {"name": "analyze", "arguments": {"group_by": "country", "filters": "{\"year\": 2020}", "top_n": 2}},
        {"name": "add", "arguments": {"a": 2, "b": 40}},
        {"name": "analyze", "arguments": {}},
        {"name": "add", "arguments": {"a": "two", "b": 40}},
        {"name": "add", "arguments": {"a": 2, "b": 40, "garbage": true}},
        {"name": "analyze", "arguments": {"group_by": "country", "filters": "{not json"}},
        {"name": "no_such_tool", "arguments": {}}
    ])
}

/// Checks the SDK client's report of [`sdk_calls`] against the demo server.
pub fn check_sdk_report(report: &Value) {
    assert_eq!(report["server"]["name"], "demo", "{report}");
    let tools = report["tools"].as_array().expect("tools listed");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        ["analyze", "add", "fail", "explode", "shout"],
        "{report}"
    );
    let analyze = &tools[0];
    assert_eq!(analyze["inputSchema"]["type"], "object");
    assert_eq!(analyze["inputSchema"]["required"], json!(["group_by"]));
    assert_eq!(analyze["outputSchema"]["type"], "object", "{analyze}");
    assert!(
        analyze["outputSchema"]["properties"]["buckets"].is_object(),
        "{analyze}"
    );

    let calls = report["calls"].as_array().expect("calls made");
    // A typed result: structuredContent, and the same JSON as text. The SDK client has
    // also validated it against the advertised output schema.
    let ok = &calls[0]["result"];
    assert_ne!(ok["isError"], true, "{ok}");
    let structured = &ok["structuredContent"];
    assert_eq!(structured["filters"], json!({"year": 2020}));
    assert_eq!(
        structured["buckets"],
        json!([{"key": "FR", "doc_count": 7}, {"key": "DE", "doc_count": 5}])
    );
    let text: Value = serde_json::from_str(ok["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, structured);
    assert_eq!(
        calls[1]["result"]["structuredContent"],
        json!({"result": 42})
    );

    let tool_error = |index: usize, needle: &str| {
        let result = &calls[index]["result"];
        assert_eq!(result["isError"], true, "call {index}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains(needle),
            "call {index}: `{needle}` not in {text}"
        );
    };
    tool_error(2, "missing field `group_by`");
    tool_error(3, "`a`: invalid type: string \"two\", expected i64");
    tool_error(
        4,
        "unexpected argument `garbage`; the accepted arguments are `a`, `b`",
    );
    tool_error(5, "`filters` is not valid JSON");

    let unknown = &calls[6]["error"];
    assert_eq!(unknown["code"], -32602, "{report}");
    assert!(
        unknown["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown tool `no_such_tool`"),
        "{unknown}"
    );
}
