//! Shared HTTP plumbing of the web tools: one client, status checks, size-limited bodies,
//! and HTML to markdown.

use std::time::Duration;

use crate::error::ToolError;

/// A client with a timeout and graphkit's user agent.
pub(crate) fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("graphkit-tools/", env!("CARGO_PKG_VERSION")))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

pub(crate) fn request_error(url: &str, err: &reqwest::Error) -> ToolError {
    let message = if err.is_timeout() {
        "timed out".to_owned()
    } else {
        err.to_string()
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
pub fn html_to_markdown(html: &str) -> String {
    html2text::config::plain()
        .string_from_read(html.as_bytes(), 100)
        .unwrap_or_else(|_| strip_tags(html))
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
