//! arXiv search through its Atom API (parsed with quick-xml), PDF download, and PDF text
//! extraction (with the `pdf` feature).

use std::sync::Arc;
use std::time::Duration;

use graphkit::State;
use quick_xml::Reader;
use quick_xml::events::Event;
use reqwest::Url;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::function::tool_fn;
use crate::prebuilt::http;
use crate::tool::DynTool;

/// One arXiv paper from a search.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ArxivPaper {
    /// The arXiv id with version, e.g. `2301.01234v2`.
    pub id: String,
    /// The title, whitespace collapsed.
    pub title: String,
    /// The abstract, whitespace collapsed.
    pub summary: String,
    /// Author names, in order.
    pub authors: Vec<String>,
    /// First publication date (ISO 8601).
    pub published: String,
    /// The PDF link.
    pub pdf_url: Option<String>,
    /// The DOI of the published version (`<arxiv:doi>`), e.g. `10.1103/PhysRevD.76.013009`,
    /// as arXiv lists it (rarely, several separated by spaces, the main article's first).
    pub doi: Option<String>,
    /// The journal reference (`<arxiv:journal_ref>`), e.g. `Phys. Rev. D 76, 013009 (2007)`.
    pub journal_ref: Option<String>,
    /// The DOI resolver link (`<link title="doi" rel="related" …>`), e.g.
    /// `http://dx.doi.org/10.1103/PhysRevD.76.013009`.
    pub doi_url: Option<String>,
    /// Other `rel="related"` links of the entry (a journal page, say), in feed order; the
    /// PDF and DOI links are not repeated here.
    pub related_urls: Vec<String>,
}

/// An arXiv API client. The API and PDF base URLs are configurable (tests use a mock).
#[derive(Debug, Clone)]
pub struct Arxiv {
    client: reqwest::Client,
    api_url: String,
    pdf_base: String,
    max_pdf_bytes: u64,
}

impl Default for Arxiv {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments of `arxiv_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ArxivSearchArgs {
    /// Search terms (arXiv query syntax allowed, e.g. `ti:transformer AND cat:cs.CL`).
    pub query: String,
    /// How many papers (1 to 50, default 5).
    #[serde(default)]
    pub max_results: Option<usize>,
}

/// Arguments of `arxiv_read_paper`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ArxivReadArgs {
    /// The arXiv id, e.g. `2301.01234` or `2301.01234v2`.
    pub id: String,
    /// The most characters of text to return (default 20000).
    #[serde(default)]
    pub max_chars: Option<usize>,
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses an arXiv Atom feed into papers.
///
/// # Errors
/// [`ToolError::Parse`] for malformed XML or a feed that is not Atom; [`ToolError::Failed`]
/// when the feed reports an API error.
pub fn parse_atom(xml: &str) -> Result<Vec<ArxivPaper>, ToolError> {
    let bad = |message: String| ToolError::Parse {
        what: "the arXiv Atom feed".into(),
        message,
    };
    let mut reader = Reader::from_str(xml);
    reader.config_mut().check_end_names = true;
    let mut papers = Vec::new();
    let mut current: Option<ArxivPaper> = None;
    let mut path: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut saw_feed = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| bad(format!("at byte {}: {e}", reader.buffer_position())))?;
        match event {
            Event::Start(start) => {
                let name = start.local_name().as_ref().to_owned();
                if name == "feed" {
                    saw_feed = true;
                }
                if name == "entry" {
                    current = Some(ArxivPaper::default());
                }
                path.push(name);
                text.clear();
            }
            Event::Empty(empty) => {
                let name = empty.local_name().as_ref().to_owned();
                if let (Some(paper), "link") = (current.as_mut(), name.as_str()) {
                    let mut href = None;
                    let (mut is_pdf, mut is_doi, mut is_related) = (false, false, false);
                    for attr in empty.attributes().flatten() {
                        let value = quick_xml::escape::unescape(&attr.value)
                            .map_or_else(|_| attr.value.to_string(), |v| v.into_owned());
                        match attr.key.local_name().as_ref() {
                            "href" => href = Some(value),
                            "title" if value == "pdf" => is_pdf = true,
                            "title" if value == "doi" => is_doi = true,
                            "type" if value == "application/pdf" => is_pdf = true,
                            "rel" if value == "related" => is_related = true,
                            _ => {}
                        }
                    }
                    if is_pdf {
                        paper.pdf_url = href;
                    } else if is_doi {
                        paper.doi_url = href;
                    } else if let (true, Some(href)) = (is_related, href) {
                        paper.related_urls.push(href);
                    }
                }
            }
            Event::Text(t) => {
                text.push_str(&t.xml10_content());
            }
            Event::GeneralRef(r) => {
                if let Some(c) = r.resolve_char_ref().map_err(|e| bad(e.to_string()))? {
                    text.push(c);
                } else {
                    let name = r.xml10_content();
                    let resolved = quick_xml::escape::unescape(&format!("&{name};"))
                        .map_err(|e| bad(e.to_string()))?
                        .into_owned();
                    text.push_str(&resolved);
                }
            }
            Event::CData(c) => text.push_str(&c.xml10_content()),
            Event::End(_) => {
                let name = path.pop().unwrap_or_default();
                let parent = path.last().map(String::as_str);
                if let Some(paper) = current.as_mut() {
                    match (name.as_str(), parent) {
                        ("id", Some("entry")) => {
                            paper.id = text
                                .trim()
                                .rsplit("/abs/")
                                .next()
                                .unwrap_or_default()
                                .to_owned();
                            if text.contains("/api/errors") {
                                paper.id = "error".into();
                            }
                        }
                        ("title", Some("entry")) => paper.title = collapse(&text),
                        ("summary", Some("entry")) => paper.summary = collapse(&text),
                        ("published", Some("entry")) => paper.published = text.trim().to_owned(),
                        ("name", Some("author")) => paper.authors.push(collapse(&text)),
                        ("doi", Some("entry")) => {
                            paper.doi = Some(text.trim().to_owned()).filter(|d| !d.is_empty());
                        }
                        ("journal_ref", Some("entry")) => {
                            paper.journal_ref = Some(collapse(&text)).filter(|j| !j.is_empty());
                        }
                        _ => {}
                    }
                }
                if name == "entry"
                    && let Some(paper) = current.take()
                {
                    if paper.id == "error" {
                        return Err(ToolError::failed(format!(
                            "arXiv API error: {}",
                            paper.summary
                        )));
                    }
                    papers.push(paper);
                }
                text.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !path.is_empty() {
        return Err(bad(format!(
            "the document ends inside <{}>",
            path.join("><")
        )));
    }
    if !saw_feed {
        return Err(bad("no <feed> element: this is not an Atom feed".into()));
    }
    Ok(papers)
}

impl Arxiv {
    /// `https://export.arxiv.org/api/query`, PDFs from `https://arxiv.org/pdf/`, 30 s
    /// timeout, 30 MiB PDF limit.
    pub fn new() -> Self {
        Self {
            client: http::client(Duration::from_secs(30)),
            api_url: "https://export.arxiv.org/api/query".into(),
            pdf_base: "https://arxiv.org/pdf/".into(),
            max_pdf_bytes: 30 * 1024 * 1024,
        }
    }

    /// Uses other base URLs: the query API and the PDF prefix (ids are appended).
    #[must_use]
    pub fn with_urls(mut self, api_url: impl Into<String>, pdf_base: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self.pdf_base = pdf_base.into();
        self
    }

    /// Sets the largest PDF downloaded.
    #[must_use]
    pub fn max_pdf_bytes(mut self, n: u64) -> Self {
        self.max_pdf_bytes = n;
        self
    }

    /// Papers matching `query` (a bare phrase searches all fields).
    ///
    /// # Errors
    /// HTTP errors, malformed feeds, API errors.
    pub async fn search(
        &self,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<ArxivPaper>, ToolError> {
        let search = if query.contains(':') {
            query.to_owned()
        } else {
            format!("all:{query}")
        };
        let mut url = Url::parse(&self.api_url).map_err(|e| ToolError::InvalidUrl {
            url: self.api_url.clone(),
            reason: e.to_string(),
        })?;
        url.query_pairs_mut()
            .append_pair("search_query", &search)
            .append_pair("start", "0")
            .append_pair("max_results", &max_results.clamp(1, 50).to_string());
        let xml = http::get_text(&self.client, url.as_str(), 8 * 1024 * 1024).await?;
        parse_atom(&xml)
    }

    /// Downloads the PDF of paper `id`.
    ///
    /// # Errors
    /// An invalid id, HTTP errors, a PDF above the size limit.
    pub async fn download_pdf(&self, id: &str) -> Result<Vec<u8>, ToolError> {
        let id = id
            .trim()
            .trim_start_matches("arXiv:")
            .trim_start_matches("arxiv:");
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '/' | '-' | '_'))
            || id.contains("..")
        {
            return Err(ToolError::InvalidArguments {
                tool: "arxiv_read_paper".into(),
                message: format!("`{id}` is not an arXiv id like 2301.01234"),
            });
        }
        let url = format!("{}{id}", self.pdf_base);
        let response = self
            .client
            .get(&url)
            .send()
            .await
            .map_err(|e| http::request_error(&url, &e))?;
        let response = http::check_status(&url, response).await?;
        let (bytes, truncated) = http::read_limited(&url, response, self.max_pdf_bytes).await?;
        if truncated {
            return Err(ToolError::TooLarge {
                what: format!("the PDF at {url}"),
                size: self.max_pdf_bytes + 1,
                limit: self.max_pdf_bytes,
            });
        }
        if !bytes.starts_with(b"%PDF") {
            return Err(ToolError::Parse {
                what: format!("the PDF at {url}"),
                message: "the response is not a PDF".into(),
            });
        }
        Ok(bytes)
    }

    /// Downloads paper `id` and extracts its text.
    ///
    /// # Errors
    /// As [`download_pdf`](Self::download_pdf), plus extraction errors; without the `pdf`
    /// feature, [`ToolError::Unsupported`].
    pub async fn paper_text(&self, id: &str) -> Result<String, ToolError> {
        let bytes = self.download_pdf(id).await?;
        pdf_text(bytes).await
    }

    /// The tools `arxiv_search` and `arxiv_read_paper`.
    pub fn tools<S: State>(&self) -> Vec<DynTool<S>> {
        let (a1, a2) = (Arc::new(self.clone()), Arc::new(self.clone()));
        vec![
            Arc::new(tool_fn(
                "arxiv_search",
                "Search arXiv papers; returns ids, titles, authors, dates and abstracts.",
                move |a: ArxivSearchArgs| {
                    let arxiv = Arc::clone(&a1);
                    async move {
                        let papers = arxiv.search(&a.query, a.max_results.unwrap_or(5)).await?;
                        if papers.is_empty() {
                            return Ok("No papers found.".to_owned());
                        }
                        Ok(papers
                            .iter()
                            .map(|p| {
                                format!(
                                    "[{}] {} ({}; {})\n{}",
                                    p.id,
                                    p.title,
                                    p.authors.join(", "),
                                    p.published,
                                    p.summary
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("\n\n"))
                    }
                },
            )),
            Arc::new(tool_fn(
                "arxiv_read_paper",
                "Download an arXiv paper's PDF and return its text.",
                move |a: ArxivReadArgs| {
                    let arxiv = Arc::clone(&a2);
                    async move {
                        let text = arxiv.paper_text(&a.id).await?;
                        let max = a.max_chars.unwrap_or(20_000);
                        Ok(match text.char_indices().nth(max) {
                            Some((cut, _)) => {
                                format!("{}\n\n[truncated at {max} characters]", &text[..cut])
                            }
                            None => text,
                        })
                    }
                },
            )),
        ]
    }
}

/// Extracts the text of a PDF (on a blocking thread).
///
/// # Errors
/// Extraction failures; without the `pdf` feature, [`ToolError::Unsupported`].
#[cfg(feature = "pdf")]
pub async fn pdf_text(bytes: Vec<u8>) -> Result<String, ToolError> {
    tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(|| pdf_extract::extract_text_from_mem(&bytes))
            .map_err(|_| ToolError::Parse {
                what: "the PDF".into(),
                message: "the PDF parser panicked on this file".into(),
            })?
            .map_err(|e| ToolError::Parse {
                what: "the PDF".into(),
                message: e.to_string(),
            })
    })
    .await
    .map_err(|e| ToolError::failed(format!("PDF extraction did not finish: {e}")))?
}

/// Extracts the text of a PDF: needs the `pdf` feature.
///
/// # Errors
/// Always [`ToolError::Unsupported`] in this build.
#[cfg(not(feature = "pdf"))]
pub async fn pdf_text(_bytes: Vec<u8>) -> Result<String, ToolError> {
    Err(ToolError::Unsupported(
        "PDF text extraction needs graphkit-tools built with the `pdf` feature".into(),
    ))
}
