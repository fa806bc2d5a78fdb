//! Shared HTTP plumbing of the web tools: one client, status checks, size-limited bodies,
//! and HTML to markdown.

use std::time::Duration;

use crate::error::ToolError;

/// A client with a timeout and graphkit's user agent.
pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    graphkit_llm::http::client_builder()
        .timeout(timeout)
        .no_proxy()
        .user_agent(concat!("graphkit-tools/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

/// A failed request as a [`ToolError::Request`] whose message keeps the whole cause chain
/// (connection refused, reset, DNS failure, TLS), not only reqwest's summary.
pub(crate) fn request_error(url: &str, err: &reqwest::Error) -> ToolError {
    let message = if err.is_timeout() {
        "timed out".to_owned()
    } else {
        let mut message = err.to_string();
        let mut source = std::error::Error::source(err);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        message
    };
    ToolError::Request {
        url: url.to_owned(),
        message,
    }
}

/// Reads at most `limit` bytes of the body; the flag says whether more was left.
pub(crate) async fn read_limited(
    url: &str,
    mut response: reqwest::Response,
    limit: u64,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| request_error(url, &e))? {
        let room = usize::try_from(limit.saturating_sub(body.len() as u64)).unwrap_or(usize::MAX);
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Fails with [`ToolError::Http`] (and the start of the body) on an error status.
pub(crate) async fn check_status(
    url: &str,
    response: reqwest::Response,
) -> Result<reqwest::Response, ToolError> {
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let (body, _) = read_limited(url, response, 512).await.unwrap_or_default();
    Err(ToolError::Http {
        url: url.to_owned(),
        status: status.as_u16(),
        body: String::from_utf8_lossy(&body).trim().to_owned(),
    })
}

/// GETs `url` and returns the body as text, at most `limit` bytes.
pub(crate) async fn get_text(
    client: &reqwest::Client,
    url: &str,
    limit: u64,
) -> Result<String, ToolError> {
    let response = client
        .get(url)
        .send()
        .await
        .map_err(|e| request_error(url, &e))?;
    let response = check_status(url, response).await?;
    let (body, truncated) = read_limited(url, response, limit).await?;
    if truncated {
        return Err(ToolError::TooLarge {
            what: format!("the response from {url}"),
            size: limit + 1,
            limit,
        });
    }
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// HTML to markdown-like text (headings, lists, links kept), wrapped at 100 columns.
///
/// Markup nested deeper than [`MAX_NESTING`] elements is flattened first (its text is
/// kept, its tags dropped), so the conversion time stays linear in the input: deeply
/// nested lists are otherwise quadratic or worse in the renderer.
pub fn html_to_markdown(html: &str) -> String {
    let html = cap_nesting(html);
    html2text::config::plain()
        .string_from_read(html.as_bytes(), 100)
        .unwrap_or_else(|_| strip_tags(&html))
}

/// How deep elements may nest before [`html_to_markdown`] drops the deeper tags.
pub const MAX_NESTING: usize = 24;

/// Elements that never hold others.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr",
];
/// Elements whose end tag is usually left out: they do not count as nesting.
const IMPLICITLY_CLOSED: &[&str] = &[
    "li", "p", "dt", "dd", "tr", "td", "th", "option", "thead", "tbody", "tfoot",
];

/// `html` with every tag deeper than [`MAX_NESTING`] removed (text kept). One pass, linear.
pub(crate) fn cap_nesting(html: &str) -> std::borrow::Cow<'_, str> {
    let mut out = String::new();
    let (mut copied, mut at, mut depth) = (0usize, 0usize, 0usize);
    while let Some(offset) = html[at..].find('<') {
        let start = at + offset;
        // No `>` after this `<` means none after any later `<` either: stop (linear).
        let Some(length) = html[start..].find('>') else {
            break;
        };
        let end = start + length;
        at = end + 1;
        let inner = &html[start + 1..end];
        let (closing, rest) = match inner.strip_prefix('/') {
            Some(rest) => (true, rest),
            None => (false, inner),
        };
        let name_len = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if name_len == 0 {
            continue; // comments, doctypes, stray `<`
        }
        let name = &rest[..name_len];
        let is = |list: &[&str]| list.iter().any(|t| t.eq_ignore_ascii_case(name));
        let flat = is(VOID) || is(IMPLICITLY_CLOSED) || inner.ends_with('/');
        let too_deep = if flat {
            depth >= MAX_NESTING
        } else if closing {
            let deep = depth > MAX_NESTING;
            depth = depth.saturating_sub(1);
            deep
        } else {
            depth += 1;
            depth > MAX_NESTING
        };
        if too_deep {
            out.push_str(&html[copied..start]);
            out.push(' ');
            copied = end + 1;
        }
    }
    if copied == 0 {
        return std::borrow::Cow::Borrowed(html);
    }
    out.push_str(&html[copied..]);
    std::borrow::Cow::Owned(out)
}

/// The text of `<title>`, if any.
pub(crate) fn html_title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let start = lower.find("<title")?;
    let open_end = lower[start..].find('>')? + start + 1;
    let end = lower[open_end..].find("</title>")? + open_end;
    let title = html.get(open_end..end)?.trim();
    (!title.is_empty()).then(|| title.to_owned())
}

/// Drops tags; the fallback when the HTML cannot be rendered.
pub(crate) fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}
