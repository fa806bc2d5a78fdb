//! `fetch_url`: download a page and turn its HTML into markdown, with a timeout, a size
//! limit and a guard against private and loopback addresses.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use graphkit::State;
use reqwest::Url;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::function::tool_fn;
use crate::prebuilt::http;
use crate::tool::DynTool;

/// Fetches web pages for an agent.
///
/// Only `http` and `https`. Every host is resolved first and refused when any address is
/// loopback, private (RFC 1918, unique-local), link-local, CGNAT, unspecified or multicast,
/// unless [`allow_private`](Self::allow_private) is set; redirects are followed by hand
/// (at most 5) and each hop is checked the same way. The connection goes to the checked
/// address, so DNS cannot swap it in between.
#[derive(Debug, Clone)]
pub struct UrlFetcher {
    timeout: Duration,
    max_bytes: u64,
    allow_private: bool,
}

impl Default for UrlFetcher {
    fn default() -> Self {
        Self::new()
    }
}

/// Arguments of `fetch_url`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FetchUrlArgs {
    /// The `http` or `https` URL to fetch.
    pub url: String,
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedPage {
    /// The final URL (after redirects).
    pub url: String,
    /// The content type the server sent.
    pub content_type: String,
    /// The content: markdown for HTML, the text otherwise.
    pub content: String,
    /// `true` when the body was cut at the size limit.
    pub truncated: bool,
}

impl UrlFetcher {
    /// 20 s timeout, 2 MiB limit, private addresses refused.
    pub fn new() -> Self {
        Self {
            timeout: Duration::from_secs(20),
            max_bytes: 2 * 1024 * 1024,
            allow_private: false,
        }
    }

    /// Sets the timeout of the whole request.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the most bytes read from a response; longer bodies are cut (and marked).
    #[must_use]
    pub fn max_bytes(mut self, n: u64) -> Self {
        self.max_bytes = n;
        self
    }

    /// Allows private and loopback addresses (tests, intranet agents).
    #[must_use]
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Checks `url` and resolves its host to an allowed address.
    async fn checked_address(&self, url: &Url) -> Result<Option<SocketAddr>, ToolError> {
        let shown = url.to_string();
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidUrl {
                url: shown,
                reason: format!(
                    "scheme `{}` is not allowed; use http or https",
                    url.scheme()
                ),
            });
        }
        let host = url.host_str().ok_or_else(|| ToolError::InvalidUrl {
            url: shown.clone(),
            reason: "no host".into(),
        })?;
        let port = url.port_or_known_default().unwrap_or(80);
        let host_for_lookup = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match host_for_lookup.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((host_for_lookup, port))
                .await
                .map_err(|e| ToolError::Request {
                    url: shown.clone(),
                    message: format!("cannot resolve `{host}`: {e}"),
                })?
                .collect(),
        };
        if self.allow_private {
            return Ok(None);
        }
        if let Some(bad) = addrs.iter().find(|a| !is_public(a.ip())) {
            return Err(ToolError::AddressRefused {
                url: shown,
                reason: format!(
                    "`{host}` resolves to {}, a private, loopback or otherwise non-public address",
                    bad.ip()
                ),
            });
        }
        Ok(addrs
            .first()
            .copied()
            .filter(|_| host_for_lookup.parse::<IpAddr>().is_err()))
    }

    /// Fetches `url`.
    ///
    /// # Errors
    /// Invalid or refused URLs, HTTP error statuses, timeouts, unsupported content types.
    pub async fn fetch(&self, url: &str) -> Result<FetchedPage, ToolError> {
        let mut current = Url::parse(url).map_err(|e| ToolError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        for _ in 0..=5 {
            let pinned = self.checked_address(&current).await?;
            let mut builder = reqwest::Client::builder()
                .timeout(self.timeout)
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("graphkit-tools/", env!("CARGO_PKG_VERSION")));
            if let (Some(addr), Some(host)) = (pinned, current.host_str()) {
                builder = builder.resolve(host, addr);
            }
            let client = builder
                .build()
                .map_err(|e| http::request_error(current.as_str(), &e))?;
            let shown = current.to_string();
            let response = client
                .get(current.clone())
                .send()
                .await
                .map_err(|e| http::request_error(&shown, &e))?;
            if response.status().is_redirection() {
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .ok_or_else(|| ToolError::Request {
                        url: shown.clone(),
                        message: "redirect without a Location".into(),
                    })?;
                current = current.join(location).map_err(|e| ToolError::InvalidUrl {
                    url: location.to_owned(),
                    reason: e.to_string(),
                })?;
                continue;
            }
            let response = http::check_status(&shown, response).await?;
            let content_type = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("text/html")
                .to_ascii_lowercase();
            let textual = content_type.starts_with("text/")
                || content_type.contains("json")
                || content_type.contains("xml");
            if !textual {
                return Err(ToolError::Unsupported(format!(
                    "{shown} is `{content_type}`, not a text or HTML page"
                )));
            }
            let (body, truncated) = http::read_limited(&shown, response, self.max_bytes).await?;
            let text = String::from_utf8_lossy(&body);
            let content = if content_type.contains("html") {
                http::html_to_markdown(&text)
            } else {
                text.into_owned()
            };
            return Ok(FetchedPage {
                url: shown,
                content_type,
                content,
                truncated,
            });
        }
        Err(ToolError::Request {
            url: url.to_owned(),
            message: "more than 5 redirects".into(),
        })
    }

    /// The `fetch_url` tool.
    pub fn tool<S: State>(&self) -> DynTool<S> {
        let fetcher = Arc::new(self.clone());
        Arc::new(tool_fn(
            "fetch_url",
            "Fetch a web page and return its content as markdown (public http/https URLs only).",
            move |a: FetchUrlArgs| {
                let fetcher = Arc::clone(&fetcher);
                async move {
                    let page = fetcher.fetch(&a.url).await?;
                    let mut out = page.content;
                    if page.truncated {
                        out.push_str(&format!("\n\n[truncated at {} bytes]", fetcher.max_bytes));
                    }
                    Ok(out)
                }
            },
        ))
    }
}

/// `true` for addresses on the public internet.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)) // CGNAT
                || (a == 198 && (18..20).contains(&b)) // benchmarking
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80) // link local
        }
    }
}
