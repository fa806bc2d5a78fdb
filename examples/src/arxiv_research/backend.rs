//! The offline arXiv backend: a small HTTP server on `127.0.0.1` that serves the corpus
//! written for the project (`examples/fixtures/arxiv/papers.json`) as arXiv's Atom API
//! and as small real PDFs, so the real [`Arxiv`] client code runs offline unchanged
//! (pointed at it with [`Arxiv::with_urls`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use graphkit_tools::prebuilt::arxiv::Arxiv;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::state::strip_version;
use crate::shared::ExampleError;

/// One paper of the offline corpus.
#[derive(Debug, Clone, Deserialize)]
pub struct CorpusPaper {
    /// arXiv id with version (`2401.10001v2`).
    pub id: String,
    /// Title.
    pub title: String,
    /// Authors.
    pub authors: Vec<String>,
    /// Publication date (RFC 3339).
    pub published: String,
    /// The abstract.
    pub summary: String,
    /// The DOI, written into the feed as `<arxiv:doi>`.
    #[serde(default)]
    pub doi: Option<String>,
    /// A journal URL, written into the feed as a `related` link.
    #[serde(default)]
    pub url: Option<String>,
    /// The journal reference, written into the feed as `<arxiv:journal_ref>`.
    #[serde(default)]
    pub journal_ref: Option<String>,
    /// More text for the PDF body.
    #[serde(default)]
    pub body: String,
    /// Whether the paper has a PDF (one does not: the abstract fallback).
    #[serde(default = "yes")]
    pub pdf: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct CorpusFile {
    papers: Vec<CorpusPaper>,
}

/// The corpus file shipped with the crate.
pub(crate) fn default_corpus_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join("arxiv")
        .join("papers.json")
}

/// What the offline server serves: the papers, and (for tests of bad input) a feed or
/// PDF bytes that replace the generated ones.
#[derive(Debug, Clone, Default)]
pub struct OfflineArxiv {
    papers: Vec<CorpusPaper>,
    feed_override: Option<String>,
    pdf_overrides: HashMap<String, Vec<u8>>,
}

impl OfflineArxiv {
    /// The corpus shipped with the crate.
    ///
    /// # Errors
    /// [`ExampleError::Io`] or [`ExampleError::Input`] when the corpus file is missing or
    /// malformed.
    pub fn shipped() -> Result<Self, ExampleError> {
        Self::from_file(&default_corpus_path())
    }

    /// The corpus in `path` (the format of `examples/fixtures/arxiv/papers.json`).
    ///
    /// # Errors
    /// As [`shipped`](Self::shipped).
    pub fn from_file(path: &Path) -> Result<Self, ExampleError> {
        let text = std::fs::read_to_string(path).map_err(|e| ExampleError::io("read", path, e))?;
        let file: CorpusFile = serde_json::from_str(&text).map_err(|e| ExampleError::Input {
            origin: path.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(Self::from_papers(file.papers))
    }

    /// These papers.
    pub fn from_papers(papers: Vec<CorpusPaper>) -> Self {
        Self {
            papers,
            ..Self::default()
        }
    }

    /// The papers.
    pub fn papers(&self) -> &[CorpusPaper] {
        &self.papers
    }

    /// Serves `feed` for every query instead of the corpus (tests of broken feeds).
    #[must_use]
    pub fn with_feed(mut self, feed: impl Into<String>) -> Self {
        self.feed_override = Some(feed.into());
        self
    }

    /// Serves `bytes` as the PDF of paper `id` (tests of corrupt PDFs).
    #[must_use]
    pub fn with_pdf_bytes(mut self, id: impl Into<String>, bytes: Vec<u8>) -> Self {
        self.pdf_overrides.insert(id.into(), bytes);
        self
    }

    /// Starts serving on `127.0.0.1` (an ephemeral port). The server stops when the
    /// returned handle is dropped.
    ///
    /// # Errors
    /// [`ExampleError::Io`] when no local port can be bound.
    pub async fn serve(self) -> Result<OfflineArxivServer, ExampleError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| ExampleError::io("bind", Path::new("127.0.0.1:0"), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ExampleError::io("bind", Path::new("127.0.0.1:0"), e))?;
        let corpus = Arc::new(self);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let corpus = Arc::clone(&corpus);
                tokio::spawn(async move {
                    // A client that hangs up early is not the server's problem.
                    let _ = answer(stream, &corpus).await;
                });
            }
        });
        Ok(OfflineArxivServer { addr, task })
    }

    fn feed(&self, search_query: &str, max_results: usize) -> String {
        if let Some(feed) = &self.feed_override {
            return feed.clone();
        }
        let words = query_words(search_query);
        let mut scored: Vec<(usize, usize, &CorpusPaper)> = self
            .papers
            .iter()
            .enumerate()
            .map(|(at, paper)| {
                let text = format!("{} {}", paper.title, paper.summary).to_lowercase();
                let haystack: Vec<&str> = text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .collect();
                let score = words
                    .iter()
                    .filter(|w| haystack.contains(&w.as_str()))
                    .count();
                (score, at, paper)
            })
            .filter(|(score, _, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let entries: String = scored
            .iter()
            .take(max_results)
            .map(|(_, _, paper)| atom_entry(paper))
            .collect();
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\" xmlns:arxiv=\"http://arxiv.org/schemas/atom\">\n<title>offline arXiv query: {}</title>\n{entries}</feed>\n",
            xml_escape(search_query)
        )
    }

    fn pdf(&self, id: &str) -> Option<Vec<u8>> {
        if let Some(bytes) = self.pdf_overrides.get(id) {
            return Some(bytes.clone());
        }
        let paper = self
            .papers
            .iter()
            .find(|p| p.id == id)
            .or_else(|| self.papers.iter().find(|p| strip_version(&p.id) == id))?;
        if !paper.pdf {
            return None;
        }
        let mut lines = vec![
            paper.title.clone(),
            paper.authors.join(", "),
            format!("arXiv:{}", paper.id),
            String::new(),
            "Abstract".to_owned(),
            paper.summary.clone(),
        ];
        if !paper.body.is_empty() {
            lines.push(String::new());
            lines.push(paper.body.clone());
        }
        Some(text_pdf(&lines))
    }
}

/// A running offline server; dropping it stops the server.
#[derive(Debug)]
pub struct OfflineArxivServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl OfflineArxivServer {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The real arXiv client, pointed at this server.
    pub fn client(&self) -> Arxiv {
        Arxiv::new().with_urls(
            format!("http://{}/api/query", self.addr),
            format!("http://{}/pdf/", self.addr),
        )
    }
}

impl Drop for OfflineArxivServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(mut stream: TcpStream, corpus: &OfflineArxiv) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0_u8; 2048];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&request);
    let target = head
        .lines()
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let (status, content_type, body) = if path == "/api/query" {
        let params: HashMap<String, String> = query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (percent_decode(k), percent_decode(v)))
            .collect();
        let max = params
            .get("max_results")
            .and_then(|m| m.parse().ok())
            .unwrap_or(10);
        let search = params.get("search_query").map_or("", String::as_str);
        (
            "200 OK",
            "application/atom+xml",
            corpus.feed(search, max).into_bytes(),
        )
    } else if let Some(id) = path.strip_prefix("/pdf/") {
        match corpus.pdf(&percent_decode(id)) {
            Some(bytes) => ("200 OK", "application/pdf", bytes),
            None => (
                "404 Not Found",
                "text/plain",
                b"no PDF for this paper".to_vec(),
            ),
        }
    } else {
        ("404 Not Found", "text/plain", b"not found".to_vec())
    };
    let header = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(header.as_bytes()).await?;
    stream.write_all(&body).await?;
    stream.shutdown().await
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'+' => out.push(b' '),
            b'%' if at + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[at + 1..at + 3]).unwrap_or("zz");
                match u8::from_str_radix(hex, 16) {
                    Ok(byte) => {
                        out.push(byte);
                        at += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        at += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

const STOP_WORDS: &[&str] = &[
    "all", "and", "the", "for", "with", "from", "that", "this", "find", "into", "what", "how",
    "their", "its", "are", "of", "on", "in", "to", "a", "an", "or", "by",
];

fn query_words(query: &str) -> Vec<String> {
    let mut words: Vec<String> = query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() > 2 && !STOP_WORDS.contains(w))
        .map(str::to_owned)
        .collect();
    words.sort();
    words.dedup();
    words
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn atom_entry(paper: &CorpusPaper) -> String {
    let mut entry = format!(
        "<entry>\n<id>http://arxiv.org/abs/{id}</id>\n<published>{published}</published>\n<title>{title}</title>\n<summary>{summary}</summary>\n",
        id = xml_escape(&paper.id),
        published = xml_escape(&paper.published),
        title = xml_escape(&paper.title),
        summary = xml_escape(&paper.summary),
    );
    for author in &paper.authors {
        entry.push_str(&format!(
            "<author><name>{}</name></author>\n",
            xml_escape(author)
        ));
    }
    if let Some(doi) = &paper.doi {
        entry.push_str(&format!(
            "<arxiv:doi>{doi}</arxiv:doi>\n<link title=\"doi\" href=\"http://dx.doi.org/{doi}\" rel=\"related\"/>\n",
            doi = xml_escape(doi)
        ));
    }
    if let Some(journal_ref) = &paper.journal_ref {
        entry.push_str(&format!(
            "<arxiv:journal_ref>{}</arxiv:journal_ref>\n",
            xml_escape(journal_ref)
        ));
    }
    if let Some(url) = &paper.url {
        entry.push_str(&format!(
            "<link href=\"{}\" rel=\"related\" type=\"text/html\"/>\n",
            xml_escape(url)
        ));
    }
    entry.push_str(&format!(
        "<link href=\"http://arxiv.org/abs/{id}\" rel=\"alternate\" type=\"text/html\"/>\n<link title=\"pdf\" href=\"http://arxiv.org/pdf/{id}\" rel=\"related\" type=\"application/pdf\"/>\n</entry>\n",
        id = xml_escape(&paper.id)
    ));
    entry
}

/// A minimal valid one-page PDF showing `paragraphs` as Helvetica text (wrapped at about
/// 90 characters), with a correct cross-reference table, so real PDF parsers read it.
pub fn text_pdf(paragraphs: &[String]) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::new();
    for paragraph in paragraphs {
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && line.len() + word.len() + 1 > 90 {
                lines.push(std::mem::take(&mut line));
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        lines.push(line);
    }
    let mut content = String::from("BT\n/F1 10 Tf\n14 TL\n50 780 Td\n");
    for line in &lines {
        let escaped: String = line
            .chars()
            .filter(char::is_ascii)
            .map(|c| match c {
                '(' | ')' | '\\' => format!("\\{c}"),
                c => c.to_string(),
            })
            .collect();
        content.push_str(&format!("({escaped}) Tj T*\n"));
    }
    content.push_str("ET\n");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 842] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>".to_owned(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        format!("<< /Length {} >>\nstream\n{content}endstream", content.len()),
    ];
    let mut pdf = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (at, object) in objects.iter().enumerate() {
        offsets.push(pdf.len());
        pdf.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", at + 1).as_bytes());
    }
    let xref = pdf.len();
    pdf.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    pdf.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    pdf
}
