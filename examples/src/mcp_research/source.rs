//! Where the data sub-agents get events: the MCP servers (`--mcp-server stdio:CMD` or
//! `http:URL`, by default the bundled `graphkit-events-mcp`), behind [`EventsSource`], and
//! the reading of the app protocol inside a tool's `structuredContent`
//! (`aggregations.group_by.buckets[]`, `hits.hits[]`).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit_tools::ToolError;
use graphkit_tools::mcp::{McpCallResult, McpClient, McpToolInfo, McpToolSet, McpTransport};
use serde_json::Value;

use super::state::Bucket;
use crate::shared::ExampleError;

/// The name of the bundled MCP server binary (built with the examples crate).
pub(crate) const BUNDLED_SERVER: &str = "graphkit-events-mcp";

/// The MCP tools the research runs on: discovery and calls. [`McpToolSet`] is the real
/// one (one or more servers); tests wrap it to stop a server midway.
#[async_trait]
pub trait EventsSource: Send + Sync + std::fmt::Debug {
    /// The tools offered.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] when a server cannot be reached.
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError>;

    /// Calls the tool `name`. A tool that fails on the server side answers with
    /// `is_error: true`; an `Err` means the server could not be reached or does not offer
    /// the tool.
    ///
    /// # Errors
    /// [`ToolError::Mcp`] (connection or protocol), [`ToolError::UnknownTool`].
    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallResult, ToolError>;
}

#[async_trait]
impl EventsSource for McpToolSet {
    async fn list_tools(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        McpToolSet::list_tools(self).await
    }

    async fn call_tool(&self, name: &str, arguments: Value) -> Result<McpCallResult, ToolError> {
        McpToolSet::call_tool(self, name, arguments).await
    }
}

/// How to reach one MCP server (`--mcp-server`).
///
/// ```
/// use graphkit_examples::mcp_research::McpServerSpec;
///
/// let spec: McpServerSpec = "http:http://127.0.0.1:3001/mcp".parse()?;
/// assert_eq!(spec.to_string(), "http:http://127.0.0.1:3001/mcp");
/// assert!("ftp:x".parse::<McpServerSpec>().is_err());
/// # Ok::<(), graphkit_examples::shared::ExampleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerSpec {
    /// The bundled `graphkit-events-mcp`, next to the current executable.
    Bundled,
    /// `stdio:COMMAND [ARGS...]` (split at whitespace).
    Stdio(Vec<String>),
    /// `http:URL` (streamable HTTP).
    Http(String),
}

impl std::str::FromStr for McpServerSpec {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, ExampleError> {
        let s = s.trim();
        if s.is_empty() || s == "bundled" {
            return Ok(Self::Bundled);
        }
        if let Some(command) = s.strip_prefix("stdio:") {
            let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            if words.is_empty() {
                return Err(ExampleError::Usage(
                    "--mcp-server stdio: needs a command, e.g. stdio:graphkit-events-mcp".into(),
                ));
            }
            return Ok(Self::Stdio(words));
        }
        if let Some(url) = s.strip_prefix("http:")
            && (url.starts_with("http://") || url.starts_with("https://"))
        {
            return Ok(Self::Http(url.to_owned()));
        }
        Err(ExampleError::Usage(format!(
            "--mcp-server `{s}`: use stdio:COMMAND [ARGS], http:URL (e.g. http:http://127.0.0.1:3001/mcp) or bundled"
        )))
    }
}

impl std::fmt::Display for McpServerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bundled => f.write_str("bundled"),
            Self::Stdio(words) => write!(f, "stdio:{}", words.join(" ")),
            Self::Http(url) => write!(f, "http:{url}"),
        }
    }
}

impl McpServerSpec {
    /// The bundled server's path: next to the current executable (or one folder up, for
    /// test binaries in `target/debug/deps`).
    pub(crate) fn bundled_path() -> PathBuf {
        let exe = std::env::current_exe().unwrap_or_default();
        let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
        let beside = dir.join(BUNDLED_SERVER);
        if beside.is_file() {
            return beside;
        }
        match dir.parent() {
            Some(up) if up.join(BUNDLED_SERVER).is_file() => up.join(BUNDLED_SERVER),
            _ => beside,
        }
    }

    /// The transport to connect with. The bundled server is the `graphkit-events-mcp`
    /// binary next to the current executable; when it is not built (`cargo run --bin
    /// graphkit-research` builds only that binary), `graphkit-research` serves the same
    /// tools itself through its hidden `mcp-research events-server` subcommand.
    pub(crate) fn transport(&self) -> McpTransport {
        match self {
            Self::Bundled => {
                let path = Self::bundled_path();
                let exe = std::env::current_exe().unwrap_or_default();
                let is_cli = exe
                    .file_stem()
                    .is_some_and(|stem| stem == "graphkit-research");
                if !path.is_file() && is_cli {
                    McpTransport::Stdio {
                        command: exe.display().to_string(),
                        args: vec!["mcp-research".into(), "events-server".into()],
                        env: Vec::new(),
                    }
                } else {
                    McpTransport::Stdio {
                        command: path.display().to_string(),
                        args: Vec::new(),
                        env: Vec::new(),
                    }
                }
            }
            Self::Stdio(words) => McpTransport::Stdio {
                command: words[0].clone(),
                args: words[1..].to_vec(),
                env: Vec::new(),
            },
            Self::Http(url) => McpTransport::Http { url: url.clone() },
        }
    }
}

/// Connects to `servers` (the bundled one when empty) as one tool set.
///
/// # Errors
/// [`ExampleError::Usage`] when a server cannot be started or reached (naming it and, for
/// the bundled one, how to build it).
pub async fn connect(servers: &[McpServerSpec]) -> Result<Arc<McpToolSet>, ExampleError> {
    let bundled = [McpServerSpec::Bundled];
    let servers = if servers.is_empty() {
        &bundled[..]
    } else {
        servers
    };
    let mut clients = Vec::new();
    for (at, spec) in servers.iter().enumerate() {
        let name = if servers.len() == 1 {
            "events".to_owned()
        } else {
            format!("events{}", at + 1)
        };
        let client = McpClient::connect(name, spec.transport())
            .await
            .map_err(|e| {
                let hint = if *spec == McpServerSpec::Bundled {
                    format!(
                        " (build it with `cargo build -p graphkit-examples --bin {BUNDLED_SERVER}`, or pass --mcp-server stdio:CMD or http:URL)"
                    )
                } else {
                    String::new()
                };
                ExampleError::Usage(format!("cannot connect to the MCP server {spec}: {e}{hint}"))
            })?;
        clients.push(client);
    }
    Ok(Arc::new(McpToolSet::new(clients)))
}

/// A document of a tool's answer (`{_id, _source}`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    /// `_id`.
    pub id: String,
    /// `_source`.
    pub source: Value,
}

impl Hit {
    /// A text field of `_source` (empty when missing).
    pub fn field(&self, name: &str) -> String {
        match &self.source[name] {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        }
    }

    /// Title and summary, for prompts and samples.
    pub fn content(&self) -> String {
        let (title, summary) = (self.field("title"), self.field("summary"));
        match (title.is_empty(), summary.is_empty()) {
            (false, false) => format!("{title}. {summary}"),
            (false, true) => title,
            _ => summary,
        }
    }
}

/// A tool's answer, read from the app protocol.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ToolAnswer {
    /// `aggregations.group_by.buckets[]`, each with its samples
    /// (`samples.hits.hits[]`, Elasticsearch `top_hits` style).
    pub buckets: Vec<(Bucket, Vec<Hit>)>,
    /// `hits.hits[]`.
    pub hits: Vec<Hit>,
    /// `aggregations.group_by.sum_other_doc_count`: documents in buckets cut by `top_n`.
    pub(crate) other_doc_count: u64,
}

/// Reads a tool result: `structuredContent`, else JSON in the text content.
///
/// # Errors
/// A message saying what is missing when the result is neither.
pub(crate) fn read_answer(result: &McpCallResult) -> Result<ToolAnswer, String> {
    let value = match &result.structured {
        Some(value) => value.clone(),
        None => serde_json::from_str::<Value>(result.text.trim()).map_err(|_| {
            format!(
                "the tool answered without structuredContent and its text is not JSON: {}",
                crate::shared::truncate(&result.text, 200)
            )
        })?,
    };
    let hits_of = |v: &Value| -> Vec<Hit> {
        v["hits"]["hits"]
            .as_array()
            .map(|hits| {
                hits.iter()
                    .map(|h| Hit {
                        id: match &h["_id"] {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        },
                        source: h["_source"].clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let buckets = value["aggregations"]["group_by"]["buckets"]
        .as_array()
        .map(|buckets| {
            buckets
                .iter()
                .map(|b| {
                    let key = match &b["key"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    let bucket = Bucket {
                        key,
                        doc_count: b["doc_count"].as_u64().unwrap_or(0),
                    };
                    (bucket, hits_of(&b["samples"]))
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(ToolAnswer {
        buckets,
        hits: hits_of(&value),
        other_doc_count: value["aggregations"]["group_by"]["sum_other_doc_count"]
            .as_u64()
            .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_from_structured_content_or_from_json_text() {
        let body = json!({
            "aggregations": {"group_by": {"buckets": [
                {"key": "Norway", "doc_count": 7, "samples": {"hits": {"hits": [
                    {"_id": "ev-1", "_source": {"title": "T", "summary": "S", "country": "Norway"}}
                ]}}},
                {"key": 2024, "doc_count": 3}
            ]}},
            "hits": {"hits": [{"_id": "ev-2", "_source": {"title": "U"}}]}
        });
        let structured = McpCallResult {
            text: String::new(),
            structured: Some(body.clone()),
            is_error: false,
        };
        let from_text = McpCallResult {
            text: body.to_string(),
            structured: None,
            is_error: false,
        };
        for result in [structured, from_text] {
            let answer = read_answer(&result).expect("readable");
            assert_eq!(answer.buckets.len(), 2);
            assert_eq!(answer.buckets[0].0.key, "Norway");
            assert_eq!(answer.buckets[0].1[0].content(), "T. S");
            assert_eq!(answer.buckets[1].0.key, "2024");
            assert_eq!(answer.hits[0].id, "ev-2");
        }
        let broken = McpCallResult {
            text: "not json".into(),
            structured: None,
            is_error: false,
        };
        assert!(read_answer(&broken).is_err());
    }
}
