//! The MCP research web page: `GET /`, `/app.js` and `/style.css`, embedded in the binary.
//!
//! The page is plain HTML, CSS and hand-written JavaScript (no CDN, no build step): it fills
//! the tool list from `GET /research/tools`, posts the query to `POST /research` and reads the
//! SSE marker stream with `fetch`, showing the phase, progress, thinking log, sources, charts
//! (SVG bars drawn from `CHART_CONFIGS`) and the report as they arrive. The report's
//! markdown is rendered here, by `POST /research/render` ([`markdown`](super::markdown):
//! `pulldown-cmark`, raw HTML shown as text, only `http`, `https`, `mailto` and relative
//! URLs), never in the page's script.
//!
//! Every answer carries `Cache-Control: no-cache` and an `ETag` derived from the embedded
//! bytes, so a browser revalidates each load (a `304` when nothing changed) and never runs an
//! old `app.js` against a newer service. The page sends a `Content-Security-Policy` that
//! allows only same-origin scripts, styles and connections.
//!
//! ```no_run
//! # async fn serve() -> std::io::Result<()> {
//! use graphkit_examples::mcp_research::web;
//!
//! let app: axum::Router = web::routes();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use super::markdown::{MAX_MARKDOWN_BYTES, render_markdown};

/// The path that renders a report's markdown to HTML: the body is the markdown (UTF-8, at
/// most [`MAX_MARKDOWN_BYTES`], else `413`), the answer an HTML fragment.
pub const RENDER_PATH: &str = "/research/render";

/// One embedded file of the page.
#[derive(Debug)]
pub struct Asset {
    /// The path it is served at.
    pub path: &'static str,
    /// Its `Content-Type`.
    pub(crate) content_type: &'static str,
    /// Its bytes, embedded at build time.
    pub body: &'static str,
}

/// `GET /`: the page.
pub(crate) const INDEX_HTML: Asset = Asset {
    path: "/",
    content_type: "text/html; charset=utf-8",
    body: include_str!("../../web/mcp-research/index.html"),
};

/// `GET /app.js`: the page's script.
pub(crate) const APP_JS: Asset = Asset {
    path: "/app.js",
    content_type: "text/javascript; charset=utf-8",
    body: include_str!("../../web/mcp-research/app.js"),
};

/// `GET /style.css`: the page's style sheet.
pub(crate) const STYLE_CSS: Asset = Asset {
    path: "/style.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("../../web/mcp-research/style.css"),
};

/// Same-origin only: the page loads nothing from elsewhere and talks only to this service.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// The routes of the page, stateless so they merge into the service's router of any state:
/// `service_router.merge(web::routes())`.
pub fn routes<S>() -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    Router::new()
        .route(
            INDEX_HTML.path,
            get(|headers: HeaderMap| async move { serve(&INDEX_HTML, &headers) }),
        )
        .route(
            APP_JS.path,
            get(|headers: HeaderMap| async move { serve(&APP_JS, &headers) }),
        )
        .route(
            STYLE_CSS.path,
            get(|headers: HeaderMap| async move { serve(&STYLE_CSS, &headers) }),
        )
        .route(
            RENDER_PATH,
            post(render).layer(DefaultBodyLimit::max(MAX_MARKDOWN_BYTES)),
        )
}

/// `POST /research/render`: the markdown body as an HTML fragment.
async fn render(markdown: String) -> Response {
    let mut response = render_markdown(&markdown).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // A fragment for the page's script, never a page of its own.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; sandbox"),
    );
    response
}

/// The answer for one asset: the body, or `304 Not Modified` when the request's
/// `If-None-Match` names the current `ETag`.
pub fn serve(asset: &Asset, request: &HeaderMap) -> Response {
    let etag = etag(asset.body);
    let fresh = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == etag
        });
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        asset.body.into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    if asset.content_type.starts_with("text/html") {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        );
    }
    response
}

/// A strong entity tag from the bytes (FNV-1a, 64 bits): it changes whenever the file does.
fn etag(body: &str) -> String {
    let hash = body.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("\"{hash:016x}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(response: &Response, name: header::HeaderName) -> &str {
        response
            .headers()
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
    }

    #[test]
    fn each_asset_is_served_with_its_content_type_and_no_cache() {
        for (asset, kind) in [
            (&INDEX_HTML, "text/html"),
            (&APP_JS, "text/javascript"),
            (&STYLE_CSS, "text/css"),
        ] {
            let response = serve(asset, &HeaderMap::new());
            assert_eq!(response.status(), StatusCode::OK, "{}", asset.path);
            assert!(
                header(&response, header::CONTENT_TYPE).starts_with(kind),
                "{}",
                asset.path
            );
            assert_eq!(header(&response, header::CACHE_CONTROL), "no-cache");
            assert_eq!(header(&response, header::X_CONTENT_TYPE_OPTIONS), "nosniff");
            assert!(header(&response, header::ETAG).starts_with('"'));
        }
    }

    #[test]
    fn a_matching_if_none_match_gets_not_modified_and_a_stale_one_the_body() {
        let tag = serve(&APP_JS, &HeaderMap::new()).headers()[header::ETAG].clone();
        let mut request = HeaderMap::new();
        request.insert(header::IF_NONE_MATCH, tag.clone());
        assert_eq!(serve(&APP_JS, &request).status(), StatusCode::NOT_MODIFIED);

        request.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"0\", W/\"1\""),
        );
        assert_eq!(serve(&APP_JS, &request).status(), StatusCode::OK);
        // Another file's tag does not match this one.
        request.insert(header::IF_NONE_MATCH, tag);
        assert_eq!(serve(&STYLE_CSS, &request).status(), StatusCode::OK);
    }

    #[test]
    fn the_page_loads_only_its_own_assets() {
        let page = INDEX_HTML.body;
        assert!(page.contains(r#"src="/app.js""#) && page.contains(r#"href="/style.css""#));
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no external URL"
        );
        assert!(
            !APP_JS.body.contains("fetch(\"http"),
            "the script talks only to its origin"
        );
        let response = serve(&INDEX_HTML, &HeaderMap::new());
        assert!(header(&response, header::CONTENT_SECURITY_POLICY).contains("default-src 'self'"));
    }
}
