//! Wikipedia search and summaries through the MediaWiki Action API.

use std::sync::Arc;
use std::time::Duration;

use graphkit::State;
use reqwest::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::function::tool_fn;
use crate::prebuilt::http;
use crate::tool::DynTool;

/// A MediaWiki client (English Wikipedia by default; the API URL is configurable, so tests
/// use a local mock and other wikis work too).
#[derive(Debug, Clone)]
pub struct Wikipedia {
    client: reqwest::Client,
    api_url: String,
}

impl Default for Wikipedia {
    fn default() -> Self {
        Self::new()
    }
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WikiHit {
    /// The article title.
    pub title: String,
    /// The matching excerpt, as text.
    pub snippet: String,
}

/// Arguments of `wikipedia_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WikipediaSearchArgs {
    /// What to look for.
    pub query: String,
    /// How many articles (1 to 20, default 5).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `wikipedia_summary`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WikipediaSummaryArgs {
    /// The exact article title (from `wikipedia_search`).
    pub title: String,
}

fn parse_err(e: impl std::fmt::Display) -> ToolError {
    ToolError::Parse {
        what: "the MediaWiki response".into(),
        message: e.to_string(),
    }
}

impl Wikipedia {
    /// English Wikipedia, 20 s timeout.
    pub fn new() -> Self {
        Self::with_api_url("https://en.wikipedia.org/w/api.php")
    }

    /// Another MediaWiki `api.php` URL.
    pub fn with_api_url(url: impl Into<String>) -> Self {
        Self {
            client: http::client(Duration::from_secs(20)),
            api_url: url.into(),
        }
    }

    async fn query(&self, params: &[(&str, &str)]) -> Result<Value, ToolError> {
        let mut url = Url::parse(&self.api_url).map_err(|e| ToolError::InvalidUrl {
            url: self.api_url.clone(),
            reason: e.to_string(),
        })?;
        url.query_pairs_mut()
            .append_pair("action", "query")
            .append_pair("format", "json")
            .append_pair("formatversion", "2")
            .extend_pairs(params);
        let body = http::get_text(&self.client, url.as_str(), 8 * 1024 * 1024).await?;
        let value: Value = serde_json::from_str(&body).map_err(parse_err)?;
        if let Some(error) = value.get("error") {
            let info = error
                .get("info")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(ToolError::failed(format!("MediaWiki error: {info}")));
        }
        Ok(value)
    }

    /// Articles matching `query`.
    ///
    /// # Errors
    /// HTTP errors and malformed responses.
    pub async fn search(&self, query: &str, limit: usize) -> Result<Vec<WikiHit>, ToolError> {
        let limit = limit.clamp(1, 20).to_string();
        let value = self
            .query(&[("list", "search"), ("srsearch", query), ("srlimit", &limit)])
            .await?;
        let hits = value
            .pointer("/query/search")
            .and_then(Value::as_array)
            .ok_or_else(|| parse_err("no `query.search` list"))?;
        Ok(hits
            .iter()
            .filter_map(|h| {
                let title = h.get("title")?.as_str()?.to_owned();
                let snippet =
                    http::strip_tags(h.get("snippet").and_then(Value::as_str).unwrap_or_default())
                        .replace("&quot;", "\"")
                        .replace("&amp;", "&");
                Some(WikiHit { title, snippet })
            })
            .collect())
    }

    /// The plain-text introduction of the article `title` (redirects followed).
    ///
    /// # Errors
    /// A missing article, HTTP errors and malformed responses.
    pub async fn summary(&self, title: &str) -> Result<String, ToolError> {
        let value = self
            .query(&[
                ("prop", "extracts"),
                ("exintro", "1"),
                ("explaintext", "1"),
                ("redirects", "1"),
                ("titles", title),
            ])
            .await?;
        let page = value
            .pointer("/query/pages/0")
            .ok_or_else(|| parse_err("no `query.pages` entry"))?;
        if page.get("missing").is_some() || page.get("invalid").is_some() {
            return Err(ToolError::failed(format!(
                "Wikipedia has no article titled `{title}`; use wikipedia_search to find the exact title"
            )));
        }
        let extract = page
            .get("extract")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim();
        let found = page.get("title").and_then(Value::as_str).unwrap_or(title);
        Ok(format!(
            "# {found}\n\n{}",
            if extract.is_empty() {
                "(no summary)"
            } else {
                extract
            }
        ))
    }

    /// The tools `wikipedia_search` and `wikipedia_summary`.
    pub fn tools<S: State>(&self) -> Vec<DynTool<S>> {
        let (w1, w2) = (Arc::new(self.clone()), Arc::new(self.clone()));
        vec![
            Arc::new(tool_fn(
                "wikipedia_search",
                "Search Wikipedia; returns article titles with excerpts.",
                move |a: WikipediaSearchArgs| {
                    let wiki = Arc::clone(&w1);
                    async move {
                        let hits = wiki.search(&a.query, a.limit.unwrap_or(5)).await?;
                        Ok(if hits.is_empty() {
                            "No articles found.".to_owned()
                        } else {
                            hits.iter()
                                .map(|h| format!("- {}: {}", h.title, h.snippet))
                                .collect::<Vec<_>>()
                                .join("\n")
                        })
                    }
                },
            )),
            Arc::new(tool_fn(
                "wikipedia_summary",
                "Get the introduction of a Wikipedia article by exact title.",
                move |a: WikipediaSummaryArgs| {
                    let wiki = Arc::clone(&w2);
                    async move { wiki.summary(&a.title).await }
                },
            )),
        ]
    }
}
