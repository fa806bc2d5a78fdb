//! Web search and extraction behind one trait, [`SearchBackend`], with a Tavily backend
//! ([`TavilySearch`]) and an offline local-corpus backend ([`LocalCorpus`], BM25 ranking,
//! `site:` filters and `OR`); the tools `web_search` and `web_extract`.

mod front_matter;
mod query;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use graphkit::State;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::function::tool_fn;
use crate::prebuilt::http;
use crate::tool::DynTool;
use query::{Query, Site};

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The page title.
    pub title: String,
    /// Where it is (`corpus://...` for local documents).
    pub url: String,
    /// A relevant excerpt.
    pub snippet: String,
    /// The backend's relevance score (higher is better; scales differ between backends).
    pub score: f64,
}

/// The text of one page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExtractedPage {
    /// The URL asked for.
    pub url: String,
    /// The page title, when known.
    pub title: Option<String>,
    /// The page content as markdown-like text.
    pub content: String,
}

/// Something that can search the web (or a stand-in for it) and extract pages.
#[async_trait]
pub trait SearchBackend: Send + Sync {
    /// At most `max_results` hits for `query`, best first.
    async fn search(&self, query: &str, max_results: usize)
    -> Result<Vec<SearchResult>, ToolError>;

    /// The content of each URL, in order; URLs that cannot be extracted are left out.
    async fn extract(&self, urls: &[String]) -> Result<Vec<ExtractedPage>, ToolError>;
}

/// Arguments of `web_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebSearchArgs {
    /// What to search for.
    pub query: String,
    /// How many results (1 to 20, default 5).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// Arguments of `web_extract`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WebExtractArgs {
    /// The URLs to extract (from search results), at most 10.
    pub urls: Vec<String>,
}

fn render_results(results: &[SearchResult]) -> String {
    if results.is_empty() {
        return "No results.".to_owned();
    }
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "{}. {}\n   {}\n   {}",
                i + 1,
                r.title,
                r.url,
                r.snippet.replace('\n', " ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The tools `web_search` and `web_extract` over a backend.
pub fn search_tools<S: State>(backend: Arc<dyn SearchBackend>) -> Vec<DynTool<S>> {
    let (b1, b2) = (Arc::clone(&backend), backend);
    vec![
        Arc::new(tool_fn(
            "web_search",
            "Search the web. Returns titles, URLs and snippets, best first.",
            move |a: WebSearchArgs| {
                let backend = Arc::clone(&b1);
                async move {
                    if a.query.trim().is_empty() {
                        return Err(ToolError::InvalidArguments {
                            tool: "web_search".into(),
                            message: "`query` is empty".into(),
                        });
                    }
                    let results = backend
                        .search(&a.query, a.max_results.unwrap_or(5).clamp(1, 20))
                        .await?;
                    Ok(render_results(&results))
                }
            },
        )),
        Arc::new(tool_fn(
            "web_extract",
            "Get the full text of web pages by URL (from web_search results).",
            move |a: WebExtractArgs| {
                let backend = Arc::clone(&b2);
                async move {
                    if a.urls.is_empty() || a.urls.len() > 10 {
                        return Err(ToolError::InvalidArguments {
                            tool: "web_extract".into(),
                            message: format!("give 1 to 10 URLs, not {}", a.urls.len()),
                        });
                    }
                    let pages = backend.extract(&a.urls).await?;
                    if pages.is_empty() {
                        return Err(ToolError::failed(format!(
                            "none of these URLs could be extracted: {}",
                            a.urls.join(", ")
                        )));
                    }
                    Ok(pages
                        .iter()
                        .map(|p| {
                            format!(
                                "# {}\n{}\n\n{}",
                                p.title.as_deref().unwrap_or(&p.url),
                                p.url,
                                p.content
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("\n\n---\n\n"))
                }
            },
        )),
    ]
}

// --- local corpus (BM25) -----------------------------------------------------------------

struct Doc {
    /// `corpus://<relative path>`: always accepted by `extract`.
    path_url: String,
    /// The front matter's URL, or `path_url`.
    url: String,
    /// Where the document lives, from its front matter's URL (for `site:` filters).
    site: Option<Site>,
    title: String,
    text: String,
    terms: HashMap<String, u32>,
    len: usize,
}

/// An offline search backend over a directory of markdown, HTML and text documents,
/// ranked with Okapi BM25 (k1 = 1.2, b = 0.75).
///
/// A document's URL is `corpus://<relative path>`, unless the file starts with a front
/// matter block naming its address on the web (`url:`, or `source:`; `title:` is read too):
///
/// ```text
/// ---
/// url: https://wikipedia.example/wiki/Ada_Quill
/// ---
/// # Ada Quill
/// ```
///
/// Search results show that URL, and `extract` accepts it as well as the `corpus://`
/// form (or the bare relative path).
///
/// Queries read like web-search queries:
///
/// - words and `"quoted phrases"` rank documents by BM25 over their words (a document
///   matching any word is a hit, best first; phrases are not required verbatim);
/// - `site:DOMAIN` keeps documents whose URL is on that host or a subdomain of it
///   (`site:wikipedia.org` matches `en.wikipedia.org`); `site:host/path` also needs the path
///   prefix. Documents without a front-matter URL are on no site. A query of only `site:`
///   filters lists every document on those sites;
/// - `OR` (upper-case) joins alternatives: `site:a.org OR site:b.org` keeps documents on
///   either site, and `cat OR kitten` ranks a document by the better of the two words
///   instead of their sum.
///
/// ```
/// use graphkit_tools::prebuilt::search::{LocalCorpus, SearchBackend};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let corpus = LocalCorpus::from_documents([
///     ("w.md", "---\nurl: https://en.wikipedia.example/wiki/Ada\n---\n# Ada Quill\nAda Quill, novelist, born 1891."),
///     ("b.md", "---\nurl: https://britannica.example/ada\n---\n# Ada Quill\nBiography of the novelist Ada Quill."),
///     ("n.md", "# Ada Quill news\nAda Quill's novel was reissued."),
/// ]);
/// let hits = corpus.search(r#""Ada Quill" site:wikipedia.example OR site:britannica.example"#, 5).await?;
/// let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
/// assert_eq!(urls.len(), 2);
/// assert!(urls.contains(&"https://en.wikipedia.example/wiki/Ada"));
/// assert!(corpus.search("Ada site:biography.example", 5).await?.is_empty());
/// # Ok::<(), graphkit_tools::ToolError>(()) }).unwrap();
/// ```
pub struct LocalCorpus {
    docs: Vec<Doc>,
    df: HashMap<String, u32>,
    avg_len: f64,
}

impl std::fmt::Debug for LocalCorpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCorpus")
            .field("documents", &self.docs.len())
            .finish()
    }
}

const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "its",
    "of", "on", "or", "that", "the", "this", "to", "was", "were", "with", "what", "which", "who",
    "how",
];

fn tokenize(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .filter(|t| !STOPWORDS.contains(&t.as_str()))
}

impl LocalCorpus {
    /// Indexes every `.md`, `.markdown`, `.html`, `.htm` and `.txt` file under `dir`.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the directory cannot be read.
    pub fn open(dir: impl AsRef<Path>) -> Result<Self, ToolError> {
        let root = dir.as_ref();
        let mut files = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(current) = stack.pop() {
            let entries = std::fs::read_dir(&current).map_err(|source| ToolError::Io {
                action: "list",
                path: current.display().to_string(),
                source,
            })?;
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if matches!(
                    path.extension().and_then(|e| e.to_str()),
                    Some("md" | "markdown" | "html" | "htm" | "txt")
                ) {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut docs = Vec::new();
        for path in files {
            let Ok(raw) = std::fs::read_to_string(&path) else {
                continue;
            };
            docs.push(Self::document(root, &path, &raw));
        }
        Ok(Self::from_docs(docs))
    }

    /// Indexes in-memory documents: `(relative path, content)` pairs.
    pub fn from_documents<'a>(documents: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let root = PathBuf::new();
        Self::from_docs(
            documents
                .into_iter()
                .map(|(path, raw)| Self::document(&root, Path::new(path), raw))
                .collect(),
        )
    }

    fn document(root: &Path, path: &Path, raw: &str) -> Doc {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        let is_html = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("html" | "htm")
        );
        let (front, raw) = front_matter::split(raw);
        let (title, text) = if is_html {
            (http::html_title(raw), http::html_to_markdown(raw))
        } else {
            let title = raw
                .lines()
                .find_map(|l| l.strip_prefix("# ").map(|t| t.trim().to_owned()));
            (title, raw.to_owned())
        };
        let mut terms = HashMap::new();
        let mut len = 0;
        for token in tokenize(&text) {
            *terms.entry(token).or_insert(0) += 1;
            len += 1;
        }
        let path_url = format!("corpus://{rel}");
        Doc {
            site: front.url.as_deref().and_then(Site::of_url),
            url: front.url.unwrap_or_else(|| path_url.clone()),
            path_url,
            title: front.title.or(title).unwrap_or_else(|| rel.clone()),
            text,
            terms,
            len,
        }
    }

    fn from_docs(docs: Vec<Doc>) -> Self {
        let mut df = HashMap::new();
        for doc in &docs {
            for term in doc.terms.keys() {
                *df.entry(term.clone()).or_insert(0) += 1;
            }
        }
        let avg_len = if docs.is_empty() {
            0.0
        } else {
            docs.iter().map(|d| d.len as f64).sum::<f64>() / docs.len() as f64
        };
        Self { docs, df, avg_len }
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// `true` when no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// BM25 scores of every document for `query`, best first (ties by URL), zero scores
    /// dropped; `site:` filters and `OR` as described on [`LocalCorpus`]. A query of only
    /// `site:` filters lists the documents on those sites, with score 0.
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        self.rank_parsed(&Query::parse(query, |text| tokenize(text).collect()))
    }

    fn rank_parsed(&self, query: &Query) -> Vec<(usize, f64)> {
        const K1: f64 = 1.2;
        const B: f64 = 0.75;
        if query.is_empty() {
            return Vec::new();
        }
        let n = self.docs.len() as f64;
        let needs_terms = query.has_terms();
        let mut scored: Vec<(usize, f64)> = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(i, doc)| {
                let term_score = |t: &str| {
                    let tf = f64::from(doc.terms.get(t).copied().unwrap_or(0));
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let df = f64::from(self.df.get(t).copied().unwrap_or(0));
                    let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
                    let norm = 1.0 - B + B * doc.len as f64 / self.avg_len.max(1.0);
                    idf * tf * (K1 + 1.0) / (tf + K1 * norm)
                };
                let score = query.score(doc.site.as_ref(), term_score)?;
                (score > 0.0 || !needs_terms).then_some((i, score))
            })
            .collect();
        scored.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.docs[a.0].url.cmp(&self.docs[b.0].url))
        });
        scored
    }

    fn snippet(doc: &Doc, terms: &[&str]) -> String {
        let lower = doc.text.to_lowercase();
        let hit = terms
            .iter()
            .filter_map(|t| lower.find(t))
            .min()
            .unwrap_or(0);
        let mut start = hit.saturating_sub(80);
        while start > 0 && !doc.text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + 300).min(doc.text.len());
        while end < doc.text.len() && !doc.text.is_char_boundary(end) {
            end += 1;
        }
        let mut snippet = doc
            .text
            .get(start..end)
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if end < doc.text.len() {
            snippet.push('…');
        }
        snippet
    }
}

#[async_trait]
impl SearchBackend for LocalCorpus {
    async fn search(
        &self,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<SearchResult>, ToolError> {
        let query = Query::parse(query, |text| tokenize(text).collect());
        let terms = query.terms();
        Ok(self
            .rank_parsed(&query)
            .into_iter()
            .take(max_results)
            .map(|(i, score)| {
                let doc = &self.docs[i];
                SearchResult {
                    title: doc.title.clone(),
                    url: doc.url.clone(),
                    snippet: Self::snippet(doc, &terms),
                    score,
                }
            })
            .collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<ExtractedPage>, ToolError> {
        Ok(urls
            .iter()
            .filter_map(|url| {
                let as_path = format!("corpus://{url}");
                self.docs
                    .iter()
                    .find(|d| d.url == *url || d.path_url == *url || d.path_url == as_path)
            })
            .map(|d| ExtractedPage {
                url: d.url.clone(),
                title: Some(d.title.clone()),
                content: d.text.clone(),
            })
            .collect())
    }
}

// --- Tavily ------------------------------------------------------------------------------

/// The Tavily search API (`/search` and `/extract`). The key comes from `TAVILY_API_KEY`
/// or [`with_api_key`](Self::with_api_key); the base URL can point at a mock for tests.
#[derive(Clone)]
pub struct TavilySearch {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    search_depth: &'static str,
}

impl std::fmt::Debug for TavilySearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TavilySearch")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Default for TavilySearch {
    fn default() -> Self {
        Self::new()
    }
}

#[derive(Deserialize)]
struct TavilyResponse {
    #[serde(default)]
    results: Vec<TavilyHit>,
}

#[derive(Deserialize)]
struct TavilyHit {
    #[serde(default)]
    title: String,
    url: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    score: f64,
}

#[derive(Deserialize)]
struct TavilyExtractResponse {
    #[serde(default)]
    results: Vec<TavilyExtracted>,
}

#[derive(Deserialize)]
struct TavilyExtracted {
    url: String,
    #[serde(default)]
    raw_content: String,
}

impl TavilySearch {
    /// Tavily at `https://api.tavily.com`, key from `TAVILY_API_KEY`, 30 s timeout.
    pub fn new() -> Self {
        Self {
            client: http::client(Duration::from_secs(30)),
            base_url: "https://api.tavily.com".into(),
            api_key: std::env::var("TAVILY_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
            search_depth: "basic",
        }
    }

    /// Uses this API key.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Uses another base URL (a mock server in tests).
    #[must_use]
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Asks for `advanced` search depth (slower, better).
    #[must_use]
    pub fn advanced(mut self) -> Self {
        self.search_depth = "advanced";
        self
    }

    async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> Result<T, ToolError> {
        let key = self.api_key.as_deref().ok_or_else(|| {
            ToolError::Unsupported(
                "Tavily needs an API key: set TAVILY_API_KEY or use TavilySearch::with_api_key"
                    .into(),
            )
        })?;
        let url = format!("{}{path}", self.base_url);
        let response = self
            .client
            .post(&url)
            .bearer_auth(key)
            .json(&body)
            .send()
            .await
            .map_err(|e| http::request_error(&url, &e))?;
        let response = http::check_status(&url, response).await?;
        let (bytes, _) = http::read_limited(&url, response, 16 * 1024 * 1024).await?;
        serde_json::from_slice(&bytes).map_err(|e| ToolError::Parse {
            what: format!("the Tavily response from {url}"),
            message: e.to_string(),
        })
    }
}

#[async_trait]
impl SearchBackend for TavilySearch {
    async fn search(
        &self,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<SearchResult>, ToolError> {
        let body = serde_json::json!({ "query": query, "max_results": max_results, "search_depth": self.search_depth });
        let response: TavilyResponse = self.post("/search", body).await?;
        Ok(response
            .results
            .into_iter()
            .map(|h| SearchResult {
                title: h.title,
                url: h.url,
                snippet: h.content,
                score: h.score,
            })
            .collect())
    }

    async fn extract(&self, urls: &[String]) -> Result<Vec<ExtractedPage>, ToolError> {
        let response: TavilyExtractResponse = self
            .post("/extract", serde_json::json!({ "urls": urls }))
            .await?;
        Ok(response
            .results
            .into_iter()
            .map(|r| ExtractedPage {
                url: r.url,
                title: None,
                content: r.raw_content,
            })
            .collect())
    }
}
