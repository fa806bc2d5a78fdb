//! `fetch_url`: download a page and turn its HTML into markdown, with a timeout, a size
//! limit and a guard against private and loopback addresses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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
    use_env_proxy: bool,
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
            use_env_proxy: false,
        }
    }

    /// Sends requests through the proxy of `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY`.
    ///
    /// Off by default: through a proxy the connection goes wherever the proxy resolves
    /// the host, so the address guard can still refuse names and literal addresses but
    /// can no longer pin the connection to the checked address.
    #[must_use]
    pub fn use_env_proxy(mut self, on: bool) -> Self {
        self.use_env_proxy = on;
        self
    }

    /// Sets the time limit of the whole fetch (every redirect, the body and its
    /// conversion to markdown).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the most bytes read from a response, and the most bytes of content returned;
    /// longer bodies are cut (and marked). Compressed bodies are not accepted, so the limit
    /// bounds the decoded size.
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

    /// Fetches `url`, all within the fetcher's time limit.
    ///
    /// # Errors
    /// Invalid or refused URLs, HTTP error statuses, timeouts, unsupported content types.
    pub async fn fetch(&self, url: &str) -> Result<FetchedPage, ToolError> {
        tokio::time::timeout(self.timeout, self.fetch_within_limit(url))
            .await
            .map_err(|_| ToolError::Request {
                url: url.to_owned(),
                message: format!(
                    "timed out after {:?} (the fetch's time limit)",
                    self.timeout
                ),
            })?
    }

    async fn fetch_within_limit(&self, url: &str) -> Result<FetchedPage, ToolError> {
        let mut current = Url::parse(url).map_err(|e| ToolError::InvalidUrl {
            url: url.to_owned(),
            reason: e.to_string(),
        })?;
        for _ in 0..=5 {
            let pinned = checked_address(&current, self.allow_private).await?;
            let mut builder = graphkit_llm::http::client_builder()
                .timeout(self.timeout)
                .redirect(reqwest::redirect::Policy::none())
                .default_headers(identity_encoding())
                .user_agent(concat!("graphkit-tools/", env!("CARGO_PKG_VERSION")));
            if !self.use_env_proxy {
                builder = builder.no_proxy();
            }
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
            let encoding = response
                .headers()
                .get(reqwest::header::CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
                .filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity"))
                .map(str::to_owned);
            if let Some(encoding) = encoding {
                return Err(ToolError::Unsupported(format!(
                    "{shown} came `{encoding}`-encoded although an uncompressed body was asked for; compressed bodies are refused so the size limit holds"
                )));
            }
            let (body, mut truncated) =
                http::read_limited(&shown, response, self.max_bytes).await?;
            let text = String::from_utf8_lossy(&body).into_owned();
            let mut content = if content_type.contains("html") {
                // Off the async workers; linear in the input (see `html_to_markdown`).
                tokio::task::spawn_blocking(move || http::html_to_markdown(&text))
                    .await
                    .map_err(|e| ToolError::failed(format!("converting {shown} failed: {e}")))?
            } else {
                text
            };
            let limit = usize::try_from(self.max_bytes).unwrap_or(usize::MAX);
            if content.len() > limit {
                let mut cut = limit;
                while !content.is_char_boundary(cut) {
                    cut -= 1;
                }
                content.truncate(cut);
                truncated = true;
            }
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

/// `Accept-Encoding: identity`: the size limit counts the bytes the page really has.
fn identity_encoding() -> reqwest::header::HeaderMap {
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::ACCEPT_ENCODING,
        reqwest::header::HeaderValue::from_static("identity"),
    );
    headers
}

/// The address guard of [`UrlFetcher`], for other outbound calls that take a URL from a
/// user (graphkit-server's webhooks): `url` must be `http` or `https`, and every address
/// its host resolves to must be public ([`is_public`]) unless `allow_private`. Returns the
/// checked address to connect to when the host is a name (pin the connection to it, so DNS
/// cannot swap it in between), `None` for a literal address or when private ones are
/// allowed.
///
/// # Errors
/// [`ToolError::InvalidUrl`] for another scheme or no host, [`ToolError::AddressRefused`]
/// for a non-public address, [`ToolError::Request`] when the host does not resolve.
pub async fn checked_address(
    url: &Url,
    allow_private: bool,
) -> Result<Option<SocketAddr>, ToolError> {
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
    if allow_private {
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

/// `true` for addresses on the public internet.
///
/// IPv6 addresses that carry an IPv4 address are judged by that IPv4 address:
/// IPv4-mapped (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`, RFC 6145) and
/// IPv4-compatible (`::/96`) addresses, NAT64
/// (`64:ff9b::/96`, RFC 6052; the local-use `64:ff9b:1::/48` of RFC 8215 is never public),
/// 6to4 (`2002::/16`, RFC 3056) and Teredo (`2001::/32`, RFC 4380: both the server address
/// and the client address, which is stored bit-inverted in the last 32 bits).
///
/// ```
/// use std::net::IpAddr;
/// use graphkit_tools::prebuilt::fetch::is_public;
///
/// let public = |s: &str| is_public(s.parse::<IpAddr>().unwrap());
/// assert!(public("93.184.216.34"));
/// assert!(!public("127.0.0.1"));
/// assert!(!public("64:ff9b::7f00:1")); // NAT64 of 127.0.0.1
/// assert!(!public("2002:c0a8:0101::1")); // 6to4 of 192.168.1.1
/// assert!(!public("::ffff:0:7f00:1")); // IPv4-translated 127.0.0.1
/// assert!(!public("192.88.99.1")); // 6to4 relay anycast
/// assert!(public("2606:4700::1111"));
/// ```
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            let embedded = embedded_ipv4(v6);
            if !embedded.is_empty() {
                return embedded.into_iter().all(is_public_v4);
            }
            let [first, second, ..] = v6.segments();
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link local
                || (first & 0xffc0) == 0xfec0 // site local (deprecated)
                || (first == 0x2001 && second == 0x0db8) // documentation
                || (first == 0x0064 && second == 0xff9b) // NAT64 local use (64:ff9b:1::/48)
                || (first == 0x0100 && v6.segments()[1..4] == [0, 0, 0])) // discard-only
        }
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
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
        || (a == 192 && b == 0 && v4.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 192 && b == 88 && v4.octets()[2] == 99) // 6to4 relay anycast (RFC 7526)
        || a >= 240)
}

/// The IPv4 addresses an IPv6 address carries (empty when it carries none).
fn embedded_ipv4(v6: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if let Some(mapped) = v6.to_ipv4_mapped() {
        return vec![mapped];
    }
    if s[..6] == [0, 0, 0, 0, 0, 0] && !(v6.is_loopback() || v6.is_unspecified()) {
        return vec![v4(s[6], s[7])]; // IPv4-compatible
    }
    if s[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return vec![v4(s[6], s[7])]; // IPv4-translated (RFC 6145)
    }
    if s[..6] == [0x0064, 0xff9b, 0, 0, 0, 0] {
        return vec![v4(s[6], s[7])]; // NAT64 well-known prefix
    }
    if s[0] == 0x2002 {
        return vec![v4(s[1], s[2])]; // 6to4
    }
    if s[0] == 0x2001 && s[1] == 0 {
        // Teredo: server IPv4, flags, port, then the client IPv4 with every bit inverted.
        return vec![v4(s[2], s[3]), v4(!s[6], !s[7])];
    }
    Vec::new()
}
