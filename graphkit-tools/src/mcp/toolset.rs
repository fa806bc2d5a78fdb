//! [`McpToolSet`]: the tools of several MCP servers as one set, with one call that routes
//! to the right server.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use graphkit::State;
use serde_json::Value;
use tokio::sync::RwLock;

use super::client::{McpCallResult, McpClient, McpTool, McpToolInfo};
use crate::error::ToolError;
use crate::tool::DynTool;

/// The tools of several MCP servers behind one set.
///
/// By default tools keep the names their servers give them, and two servers offering the
/// same name is an error that names both servers. With [`prefixed`](Self::prefixed)
/// every tool is exposed as `{server}_{tool}` instead (the server name with characters
/// other than `A-Za-z0-9_-` replaced by `_`), so collisions cannot happen. Calls are routed
/// to the server that offers the tool, under the server's own name.
///
/// ```no_run
/// # async fn run() -> Result<(), graphkit_tools::ToolError> {
/// use graphkit_tools::AgentState;
/// use graphkit_tools::mcp::{McpClient, McpToolSet};
/// use serde_json::json;
///
/// let events = McpClient::http("events", "http://127.0.0.1:3001/mcp").await?;
/// let logs = McpClient::stdio("logs", "logs-mcp-server", Vec::<String>::new()).await?;
/// let set = McpToolSet::new([events, logs]);
/// for tool in set.list_tools().await? {
///     println!("{}: {}", tool.name, tool.input_schema); // schemas as plain JSON
/// }
/// let result = set.call_tool("analyze_all_events", json!({"group_by": "country"})).await?;
/// let tools = set.tools::<AgentState>().await?; // for a ToolNode or an agent
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct McpToolSet {
    servers: Vec<Arc<McpClient>>,
    prefixed: bool,
    /// Exposed name → (server index, the server's tool name); filled by `list_tools`.
    routes: RwLock<HashMap<String, (usize, String)>>,
}

impl McpToolSet {
    /// A set over these servers (tool names as the servers give them).
    pub fn new(servers: impl IntoIterator<Item = Arc<McpClient>>) -> Self {
        Self {
            servers: servers.into_iter().collect(),
            prefixed: false,
            routes: RwLock::new(HashMap::new()),
        }
    }

    /// Exposes every tool as `{server}_{tool}`, so tools of different servers never collide.
    #[must_use]
    pub fn prefixed(mut self) -> Self {
        self.prefixed = true;
        self
    }

    /// The servers, in the order given.
    pub fn servers(&self) -> &[Arc<McpClient>] {
        &self.servers
    }

    /// Lists the tools of all servers (concurrently), in server order, under the names the
    /// set exposes; refreshes the routing of [`call_tool`](Self::call_tool).
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when a server fails to list its tools, or when two servers
    /// offer the same tool name and the set is not [`prefixed`](Self::prefixed).
    pub async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        Ok(self
            .discover()
            .await?
            .into_iter()
            .map(|tool| tool.info)
            .collect())
    }

    /// Calls the tool the set exposes as `name` on the server that offers it.
    ///
    /// The first call lists the servers' tools if [`list_tools`](Self::list_tools) has not
    /// run yet; a name not found is listed again once (servers may add tools).
    ///
    /// # Errors
    /// [`ToolError::UnknownTool`] when no server offers `name`; otherwise as
    /// [`McpClient::call_tool`].
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<McpCallResult, ToolError> {
        let mut route = self.routes.read().await.get(name).cloned();
        if route.is_none() {
            self.discover().await?;
            route = self.routes.read().await.get(name).cloned();
        }
        let Some((server, remote_name)) = route else {
            let routes = self.routes.read().await;
            let mut available: Vec<&str> = routes.keys().map(String::as_str).collect();
            available.sort_unstable();
            return Err(ToolError::UnknownTool {
                name: name.to_owned(),
                available: available.join(", "),
            });
        };
        self.servers[server]
            .call_tool(&remote_name, arguments)
            .await
    }

    /// All tools of all servers as graphkit [`Tool`](crate::Tool)s, under the names the set
    /// exposes (each calls its own server).
    ///
    /// # Errors
    /// As [`list_tools`](Self::list_tools).
    pub async fn tools<S: State>(&self) -> Result<Vec<DynTool<S>>, ToolError> {
        Ok(self
            .discover()
            .await?
            .into_iter()
            .map(|tool| {
                let client = Arc::clone(&self.servers[tool.server]);
                let exposed = tool.info.name.clone();
                let as_served = McpToolInfo {
                    name: tool.remote_name,
                    ..tool.info
                };
                Arc::new(McpTool::new(client, as_served).renamed(exposed)) as DynTool<S>
            })
            .collect())
    }

    /// Closes every server connection.
    pub async fn close(&self) {
        futures::future::join_all(self.servers.iter().map(|server| server.close())).await;
    }

    /// Lists all servers, checks for collisions and rebuilds the routes.
    async fn discover(&self) -> Result<Vec<DiscoveredTool>, ToolError> {
        let listed =
            futures::future::try_join_all(self.servers.iter().map(|server| server.list_tools()))
                .await?;
        let mut owners: BTreeMap<String, usize> = BTreeMap::new();
        let mut routes = HashMap::new();
        let mut tools = Vec::new();
        for (server, server_tools) in listed.into_iter().enumerate() {
            for info in server_tools {
                let exposed = self.exposed_name(server, &info.name);
                if let Some(&first) = owners.get(&exposed) {
                    return Err(self.collision(&exposed, first, server));
                }
                owners.insert(exposed.clone(), server);
                routes.insert(exposed.clone(), (server, info.name.clone()));
                tools.push(DiscoveredTool {
                    server,
                    remote_name: info.name.clone(),
                    info: McpToolInfo {
                        name: exposed,
                        ..info
                    },
                });
            }
        }
        *self.routes.write().await = routes;
        Ok(tools)
    }

    fn exposed_name(&self, server: usize, tool: &str) -> String {
        if self.prefixed {
            format!("{}_{tool}", name_prefix(self.servers[server].name()))
        } else {
            tool.to_owned()
        }
    }

    fn collision(&self, tool: &str, first: usize, second: usize) -> ToolError {
        let (first, second) = (self.servers[first].name(), self.servers[second].name());
        let message = if first == second {
            format!(
                "the tool `{tool}` is listed twice (two servers are both named `{first}`); give each server its own name"
            )
        } else {
            format!(
                "the tool `{tool}` is offered by both `{first}` and `{second}`; use `McpToolSet::prefixed()` to expose tools as `server_tool`, or leave one server out"
            )
        };
        ToolError::Mcp {
            server: second.to_owned(),
            message,
        }
    }
}

/// A tool found by [`McpToolSet::discover`].
struct DiscoveredTool {
    /// Index of its server.
    server: usize,
    /// The server's name for it.
    remote_name: String,
    /// Its description, under the name the set exposes.
    info: McpToolInfo,
}

/// A server name as a tool-name prefix: characters models reject in tool names become `_`.
fn name_prefix(server: &str) -> String {
    server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
