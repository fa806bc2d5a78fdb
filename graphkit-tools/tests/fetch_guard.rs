//! The fetch guard holds on every network (issue 18): addresses that embed an IPv4
//! address are judged by it, proxies from the environment are ignored unless asked for,
//! compressed bodies cannot slip past the size limit, deeply nested HTML converts in
//! linear time, and errors keep their cause.

use std::net::IpAddr;

use graphkit_tools::ToolError;
use graphkit_tools::prebuilt::fetch::{UrlFetcher, is_public};
use graphkit_tools::prebuilt::html_to_markdown;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn public(address: &str) -> bool {
    is_public(address.parse::<IpAddr>().expect("an address"))
}

#[test]
fn ipv6_addresses_that_embed_a_private_ipv4_are_not_public() {
    for embedded in [
        "::ffff:127.0.0.1",                     // IPv4-mapped
        "::127.0.0.1",                          // IPv4-compatible
        "::10.0.0.1",                           // IPv4-compatible, private
        "::ffff:0:7f00:1",                      // IPv4-translated 127.0.0.1 (RFC 6145)
        "::ffff:0:a9fe:a9fe",                   // IPv4-translated 169.254.169.254
        "192.88.99.1",                          // 6to4 relay anycast (RFC 7526)
        "::ffff:192.88.99.1",                   // the same, IPv4-mapped
        "64:ff9b::7f00:1",                      // NAT64 of 127.0.0.1
        "64:ff9b::a9fe:a9fe",                   // NAT64 of 169.254.169.254 (cloud metadata)
        "64:ff9b:1::a00:1",                     // NAT64 local use
        "2002:7f00:1::1",                       // 6to4 of 127.0.0.1
        "2002:c0a8:101::1",                     // 6to4 of 192.168.1.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1 (inverted)
        "2001:0:a00:1:8000:63bf:fefd:fcfb",     // Teredo, server 10.0.0.1
        "2001:db8::1",                          // documentation
    ] {
        assert!(!public(embedded), "{embedded} must not count as public");
    }
    for fine in [
        "::ffff:93.184.216.34",
        "::ffff:0:5db8:d822",                   // IPv4-translated 93.184.216.34
        "192.88.98.1",                          // beside the relay block
        "64:ff9b::5db8:d822",                   // NAT64 of 93.184.216.34
        "2002:5db8:d822::1",                    // 6to4 of 93.184.216.34
        "2001:0:4136:e378:8000:63bf:fefd:fcfb", // Teredo, client 1.2.3.4
        "2606:4700:4700::1111",
    ] {
        assert!(public(fine), "{fine} is public");
    }
}

#[tokio::test]
async fn urls_with_embedded_loopback_addresses_are_refused_before_connecting() {
    for url in [
        "http://[64:ff9b::7f00:1]/",
        "http://[2002:7f00:1::1]/",
        "http://[::127.0.0.1]/",
        "http://[::ffff:7f00:1]/",
        "http://[::ffff:0:7f00:1]/",
        "http://192.88.99.1/",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
    ] {
        let err = UrlFetcher::new().fetch(url).await.unwrap_err();
        assert!(
            matches!(err, ToolError::AddressRefused { .. }),
            "{url}: {err}"
        );
    }
}

#[tokio::test]
async fn a_refused_connection_says_so() {
    // Port 1 on loopback: nothing listens there.
    let err = UrlFetcher::new()
        .allow_private(true)
        .fetch("http://127.0.0.1:1/")
        .await
        .unwrap_err();
    let text = err.to_string().to_lowercase();
    assert!(text.contains("refused"), "{err}");
}

#[tokio::test]
async fn a_compressed_body_is_refused_so_the_size_limit_counts_real_bytes() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/plain")
                .insert_header("content-encoding", "gzip")
                .set_body_bytes(vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0]),
        )
        .mount(&server)
        .await;
    let err = UrlFetcher::new()
        .allow_private(true)
        .fetch(&server.uri())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("gzip"), "{err}");
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(
        request
            .headers
            .get("accept-encoding")
            .map(|v| v.to_str().unwrap()),
        Some("identity")
    );
}

#[tokio::test]
async fn converted_content_is_cut_at_the_size_limit_too() {
    let server = MockServer::start().await;
    let cells: String = (0..200).map(|i| format!("<p>paragraph {i}</p>")).collect();
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/html")
                .set_body_string(format!("<html><body>{cells}</body></html>")),
        )
        .mount(&server)
        .await;
    let page = UrlFetcher::new()
        .allow_private(true)
        .max_bytes(1024)
        .fetch(&server.uri())
        .await
        .unwrap();
    assert!(page.truncated);
    assert!(page.content.len() <= 1024, "{}", page.content.len());
}

#[test]
fn deeply_nested_markup_is_flattened_and_keeps_its_text() {
    // About 80 KB of nested lists: minutes of work for the renderer without the cap.
    let depth = 8000;
    let html = format!(
        "{}<b>innermost</b>{}",
        "<ul><li>".repeat(depth),
        "</li></ul>".repeat(depth)
    );
    assert!(html.len() > 80_000);
    let text = html_to_markdown(&html);
    assert!(text.contains("innermost"), "{text}");
}

/// Runs `test` in a child process of this test binary with `HTTP_PROXY` set (the
/// environment cannot be changed safely inside a running multi-threaded test).
async fn in_child_with_proxy(test: &str, proxy: &str) -> std::process::Output {
    tokio::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            &format!("fetch_guard::{test}"),
            "--nocapture",
            "--include-ignored",
        ])
        .env("GRAPHKIT_PROXY_CHILD", "1")
        .env("HTTP_PROXY", proxy)
        .env("http_proxy", proxy)
        .env("ALL_PROXY", proxy)
        .env_remove("NO_PROXY")
        .env_remove("no_proxy")
        .output()
        .await
        .expect("the child test runs")
}

#[tokio::test]
async fn the_fetcher_ignores_proxy_variables_unless_told_to_use_them() {
    let proxy = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("via proxy"))
        .mount(&proxy)
        .await;
    let out = in_child_with_proxy("proxy_child_fetches", &proxy.uri()).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Only the run that opted in went through the proxy.
    assert_eq!(proxy.received_requests().await.unwrap().len(), 1);
}

/// The child half of the proxy test (does nothing unless started by it).
#[tokio::test]
#[ignore = "run by the_fetcher_ignores_proxy_variables_unless_told_to_use_them"]
async fn proxy_child_fetches() {
    if std::env::var_os("GRAPHKIT_PROXY_CHILD").is_none() {
        return;
    }
    let target = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/plain")
                .set_body_string("direct"),
        )
        .mount(&target)
        .await;
    let fetcher = UrlFetcher::new().allow_private(true);
    let page = fetcher.fetch(&target.uri()).await.unwrap();
    assert_eq!(page.content, "direct");
    let page = fetcher
        .use_env_proxy(true)
        .fetch(&target.uri())
        .await
        .unwrap();
    assert_eq!(page.content, "via proxy");
}
