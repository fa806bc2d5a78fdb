//! `POST /mcp`: the served graphs as the tools of a Model Context Protocol server
//! (streamable HTTP, stateless, JSON answers), as the reference Agent Server serves them.
//!
//! Each graph is one tool, named by its graph id (made a valid MCP tool name), whose input
//! schema is the graph's input schema. Calling the tool runs the graph statelessly, exactly
//! as `POST /runs/wait` would with `{"assistant_id": graph_id, "input": arguments}`, and
//! answers the run's output (its final state) as `structuredContent` and as JSON text. A
//! run that fails, or an input the graph refuses, is a tool error (`isError: true`) whose
//! text says why. The protocol itself (initialize, tools/list, tools/call, ping,
//! notifications, JSON-RPC errors) is graphkit-tools' MCP server.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use graphkit_tools::ToolError;
use graphkit_tools::mcp::{McpHttpEndpoint, McpServer};
use serde_json::{Map, Value, json};

use super::Api;
use crate::error::{Result, ServerError};

/// The longest MCP tool name.
const MAX_TOOL_NAME: usize = 128;

/// The MCP endpoint of `api`'s graphs. `bound` is the address the server listens on: on a
/// loopback address only loopback `Host` names are accepted (a browser page cannot reach
/// the endpoint through DNS rebinding); on any other address every name is (the server is
/// meant to be reached under names it cannot know; the API key guards it).
pub(crate) fn endpoint(api: &Api, bound: Option<SocketAddr>) -> Result<McpHttpEndpoint> {
    let mut server = McpServer::new("graphkit-server", env!("CARGO_PKG_VERSION")).instructions(
        "Each tool runs one graph of this server statelessly and answers its final state.",
    );
    if !bound.is_some_and(|addr| addr.ip().is_loopback()) {
        server = server.allowed_hosts(Vec::<String>::new());
    }
    let mut taken = Vec::new();
    for graph_id in api.shared.graph_ids() {
        let Some(name) = tool_name(&graph_id) else {
            tracing::warn!(%graph_id, "graph not served over MCP: its id has no character an MCP tool name may hold");
            continue;
        };
        if taken.contains(&name) {
            tracing::warn!(%graph_id, tool = %name, "graph not served over MCP: another graph has the same tool name");
            continue;
        }
        taken.push(name.clone());
        let schema = api.shared.graph(&graph_id)?.state_schema();
        let description = format!(
            "Runs the graph `{graph_id}` statelessly (as POST /runs/wait does) and answers its final state."
        );
        let api = api.clone();
        server = server.json_tool(name, description, schema, move |arguments| {
            let (api, graph_id) = (api.clone(), graph_id.clone());
            async move { run_graph(&api, &graph_id, arguments).await }
        });
    }
    server
        .into_http_endpoint(api.stop.child_token())
        .map_err(|e| ServerError::Startup(format!("the MCP endpoint: {e}")))
}

/// `graph_id` as an MCP tool name: whitespace becomes `_`, characters a name may not hold
/// (anything but `A-Za-z0-9_-.`) are dropped, and it is cut to 128 characters; `None` when
/// nothing is left.
fn tool_name(graph_id: &str) -> Option<String> {
    let name: String = graph_id
        .trim()
        .chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(MAX_TOOL_NAME)
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Runs `graph_id` on `arguments` as `POST /runs/wait` does; its output, or a tool error.
async fn run_graph(
    api: &Api,
    graph_id: &str,
    arguments: Map<String, Value>,
) -> std::result::Result<Value, ToolError> {
    let request = json!({"assistant_id": graph_id, "input": arguments}).to_string();
    let response = super::runs::waited(api, None, &request.into())
        .await
        .map_err(|e| ToolError::failed(format!("the graph `{graph_id}` refused the input: {e}")))?;
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| {
            ToolError::failed(format!("the run of `{graph_id}` could not be read: {e}"))
        })?;
    let output: Value = serde_json::from_slice(&body)
        .map_err(|e| ToolError::failed(format!("the run of `{graph_id}` answered no JSON: {e}")))?;
    match output.get("__error__") {
        Some(error) => Err(ToolError::failed(format!(
            "the run of `{graph_id}` failed: {}: {}",
            error["error"].as_str().unwrap_or("Error"),
            error["message"].as_str().unwrap_or_default()
        ))),
        None => Ok(output),
    }
}

/// `POST /mcp`: one JSON-RPC message of the streamable HTTP transport.
pub(super) async fn serve(State(api): State<Api>, request: Request) -> Result<Response> {
    let endpoint = api.mcp.as_ref().ok_or_else(|| {
        ServerError::NotFound("the MCP endpoint is not set up on this server".into())
    })?;
    Ok(endpoint.handle(request).await.map(Body::new))
}

#[cfg(test)]
mod tests {
    use super::tool_name;

    #[test]
    fn graph_ids_become_valid_tool_names() {
        assert_eq!(tool_name("agent").as_deref(), Some("agent"));
        assert_eq!(
            tool_name(" deep research ").as_deref(),
            Some("deep_research")
        );
        assert_eq!(tool_name("a/b:c").as_deref(), Some("abc"));
        assert_eq!(tool_name("ü/"), None);
        assert_eq!(tool_name(&"x".repeat(200)).map(|n| n.len()), Some(128));
    }
}
