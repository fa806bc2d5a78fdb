//! `POST /mcp`: the server's assistants as the tools of a Model Context Protocol server
//! (streamable HTTP, stateless, JSON answers), as the reference Agent Server serves them.
//!
//! Each assistant is one tool: the system assistant of each graph (named by its graph id)
//! and every assistant created through `POST /assistants`, newest first as
//! `POST /assistants/search` lists them. A tool is named by its assistant's name made a
//! valid MCP tool name, and titled by the assistant's name as it is; when two assistants
//! come to the same tool name, the newer one is the tool (the reference lists it the same
//! way). A tool's description is its assistant's description, or `Tool based on the {name}
//! assistant`; its input schema is the graph's input schema. `tools/list` answers 100 tools
//! at a time, with a `nextCursor` when a page is full, as the reference pages them. Calling the tool runs the assistant statelessly, exactly as
//! `POST /runs/wait` would with `{"assistant_id": assistant_id, "input": arguments}` (the
//! assistant's config and context apply), and answers the run's output (its final state)
//! as `structuredContent` and as JSON text. A run that fails, or an input the graph
//! refuses, is a tool error (`isError: true`) whose text says why. The tools are read from
//! the backend on each request, so an assistant created, renamed or deleted is seen at
//! once, by every server process on the database. The protocol itself (initialize,
//! tools/list, tools/call, ping, notifications, JSON-RPC errors) is graphkit-tools' MCP
//! server.

use std::collections::HashSet;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use graphkit_tools::ToolError;
use graphkit_tools::mcp::{McpHttpEndpoint, McpServer};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::Api;
use crate::backend::AssistantQuery;
use crate::error::{Result, ServerError};

/// The longest MCP tool name.
const MAX_TOOL_NAME: usize = 128;

/// The most assistants served as tools (the reference reads at most as many).
const MAX_ASSISTANTS: usize = 1000;

/// The tools `tools/list` answers at a time (the reference's page).
const PAGE_SIZE: usize = 100;

/// The MCP endpoint of `api`'s assistants as they are now. When the server listens on a
/// loopback address only loopback `Host` names are accepted (a browser page cannot reach
/// the endpoint through DNS rebinding); on any other address every name is (the server is
/// meant to be reached under names it cannot know; the API key guards it).
async fn endpoint(api: &Api) -> Result<McpHttpEndpoint> {
    let mut server = McpServer::new("graphkit-server", env!("CARGO_PKG_VERSION")).instructions(
        "Each tool runs one assistant of this server statelessly and answers its final state.",
    );
    server = server.page_size(PAGE_SIZE);
    if api.mcp_any_host {
        server = server.allowed_hosts(Vec::<String>::new());
    }
    let assistants = api
        .backend()
        .search_assistants(&AssistantQuery {
            limit: Some(MAX_ASSISTANTS),
            ..AssistantQuery::default()
        })
        .await?;
    let mut taken = HashSet::new();
    for assistant in assistants {
        let Some(name) = tool_name(&assistant.name) else {
            tracing::warn!(assistant_id = %assistant.assistant_id, name = %assistant.name, "assistant not served over MCP: its name has no character an MCP tool name may hold");
            continue;
        };
        // Newest first: an older assistant with the same tool name is not served.
        if !taken.insert(name.clone()) {
            tracing::warn!(assistant_id = %assistant.assistant_id, tool = %name, "assistant not served over MCP: a newer assistant has the same tool name");
            continue;
        }
        let Ok(graph) = api.shared.graph(&assistant.graph_id) else {
            // An assistant of a graph another server process serves: not runnable here.
            continue;
        };
        let description = match assistant.description {
            Some(description) if !description.trim().is_empty() => description,
            _ => format!("Tool based on the {} assistant", assistant.name),
        };
        let (api, assistant_id) = (api.clone(), assistant.assistant_id);
        server = server
            .json_tool(
                name.clone(),
                description,
                graph.state_schema(),
                move |arguments| {
                    let api = api.clone();
                    async move { run_assistant(&api, assistant_id, arguments).await }
                },
            )
            .tool_title(&name, assistant.name);
    }
    server
        .into_http_endpoint(api.stop.child_token())
        .map_err(|e| ServerError::backend("build the MCP endpoint's tools", e))
}

/// An assistant's name as an MCP tool name, as the reference makes it: each run of
/// whitespace becomes one `_`, characters a name may not hold (anything but `A-Za-z0-9_-.`)
/// are dropped, and it is cut to 128 characters; `None` when nothing is left.
fn tool_name(assistant_name: &str) -> Option<String> {
    let mut joined = String::with_capacity(assistant_name.len());
    for word in assistant_name.split_whitespace() {
        if !joined.is_empty() {
            joined.push('_');
        }
        joined.push_str(word);
    }
    let name: String = joined
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        .take(MAX_TOOL_NAME)
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Runs the assistant on `arguments` as `POST /runs/wait` does; its output, or a tool
/// error.
async fn run_assistant(
    api: &Api,
    assistant_id: Uuid,
    arguments: Map<String, Value>,
) -> std::result::Result<Value, ToolError> {
    let request = json!({"assistant_id": assistant_id, "input": arguments}).to_string();
    let response = super::runs::waited(api, None, &request.into())
        .await
        .map_err(|e| {
            ToolError::failed(format!(
                "the assistant {assistant_id} refused the input: {e}"
            ))
        })?;
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .map_err(|e| {
            ToolError::failed(format!(
                "the run of the assistant {assistant_id} could not be read: {e}"
            ))
        })?;
    let output: Value = serde_json::from_slice(&body).map_err(|e| {
        ToolError::failed(format!(
            "the run of the assistant {assistant_id} answered no JSON: {e}"
        ))
    })?;
    match output.get("__error__") {
        Some(error) => Err(ToolError::failed(format!(
            "the run of the assistant {assistant_id} failed: {}: {}",
            error["error"].as_str().unwrap_or("Error"),
            error["message"].as_str().unwrap_or_default()
        ))),
        None => Ok(output),
    }
}

/// `POST /mcp`: one JSON-RPC message of the streamable HTTP transport.
pub(super) async fn serve(State(api): State<Api>, request: Request) -> Result<Response> {
    let endpoint = endpoint(&api).await?;
    Ok(endpoint.handle(request).await.map(Body::new))
}

#[cfg(test)]
mod tests {
    use super::tool_name;

    #[test]
    fn assistant_names_become_valid_tool_names() {
        assert_eq!(tool_name("agent").as_deref(), Some("agent"));
        assert_eq!(
            tool_name(" deep \t research ").as_deref(),
            Some("deep_research")
        );
        assert_eq!(tool_name("a/b:c").as_deref(), Some("abc"));
        assert_eq!(tool_name("ü/"), None);
        assert_eq!(tool_name(&"x".repeat(200)).map(|n| n.len()), Some(128));
    }
}
