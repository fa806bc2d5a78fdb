//! Web tools against a local mock server on 127.0.0.1 (wiremock): fetch, Tavily,
//! Wikipedia, arXiv. Nothing here reaches the internet.

use std::time::Duration;

use graphkit_tools::ToolError;
use graphkit_tools::prebuilt::arxiv::{Arxiv, parse_atom};
use graphkit_tools::prebuilt::fetch::{UrlFetcher, is_public};
use graphkit_tools::prebuilt::search::{SearchBackend, TavilySearch};
use graphkit_tools::prebuilt::wikipedia::Wikipedia;
use serde_json::json;
use wiremock::matchers::{body_partial_json, header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn fetch_turns_html_into_markdown() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            "<html><body><h1>Title</h1><p>Some <b>bold</b> text.</p><ul><li>one</li><li>two</li></ul></body></html>",
            "text/html; charset=utf-8",
        ))
        .mount(&server)
        .await;
    let page = UrlFetcher::new()
        .allow_private(true)
        .fetch(&format!("{}/page", server.uri()))
        .await
        .unwrap();
    assert!(page.content.contains("# Title"), "{}", page.content);
    assert!(
        page.content.contains("Some **bold** text.") || page.content.contains("Some bold text."),
        "{}",
        page.content
    );
    assert!(
        page.content.contains("one") && !page.content.contains("<li>"),
        "{}",
        page.content
    );
    assert!(!page.truncated);
}

#[tokio::test]
async fn fetch_refuses_loopback_and_private_addresses_by_default() {
    let server = MockServer::start().await;
    let err = UrlFetcher::new()
        .fetch(&format!("{}/page", server.uri()))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::AddressRefused { .. }), "{err}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    for url in [
        "http://10.1.2.3/",
        "http://192.168.0.1/",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data",
    ] {
        let err = UrlFetcher::new().fetch(url).await.unwrap_err();
        assert!(
            matches!(err, ToolError::AddressRefused { .. }),
            "{url}: {err}"
        );
    }
    let err = UrlFetcher::new()
        .fetch("file:///etc/passwd")
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("scheme `file` is not allowed"),
        "{err}"
    );
    let err = UrlFetcher::new().fetch("not a url").await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidUrl { .. }), "{err}");
    assert!(is_public("93.184.216.34".parse().unwrap()));
    assert!(!is_public("100.64.0.1".parse().unwrap()));
    assert!(!is_public("::ffff:127.0.0.1".parse().unwrap()));
}

#[tokio::test]
async fn fetch_reports_http_errors_cuts_huge_bodies_and_refuses_binaries() {
    let server = MockServer::start().await;
    Mock::given(path("/missing"))
        .respond_with(ResponseTemplate::new(404).set_body_string("no such page"))
        .mount(&server)
        .await;
    Mock::given(path("/huge"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("a".repeat(100_000), "text/plain"))
        .mount(&server)
        .await;
    Mock::given(path("/bin"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(vec![0u8; 10], "application/octet-stream"),
        )
        .mount(&server)
        .await;
    Mock::given(path("/redirect"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", "http://10.0.0.1/internal"),
        )
        .mount(&server)
        .await;
    let fetcher = UrlFetcher::new()
        .allow_private(true)
        .max_bytes(1000)
        .timeout(Duration::from_secs(10));
    let err = fetcher
        .fetch(&format!("{}/missing", server.uri()))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Http { status: 404, .. }), "{err}");
    assert!(err.to_string().contains("no such page"), "{err}");
    let page = fetcher
        .fetch(&format!("{}/huge", server.uri()))
        .await
        .unwrap();
    assert!(page.truncated && page.content.len() == 1000);
    let err = fetcher
        .fetch(&format!("{}/bin", server.uri()))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("application/octet-stream"),
        "{err}"
    );
    // Redirects are checked hop by hop: a public fetcher would refuse the private target.
    let strict = UrlFetcher::new();
    let err = strict.fetch("http://10.0.0.1/internal").await.unwrap_err();
    assert!(matches!(err, ToolError::AddressRefused { .. }));
}

#[tokio::test]
async fn tavily_search_and_extract_speak_the_api_and_surface_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .and(header("authorization", "Bearer tvly-test"))
        .and(body_partial_json(json!({"query": "rust", "max_results": 2})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": "rust",
            "results": [{"title": "Rust", "url": "https://rust-lang.org", "content": "A language.", "score": 0.9}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/extract"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "results": [{"url": "https://rust-lang.org", "raw_content": "Rust text"}], "failed_results": []
        })))
        .mount(&server)
        .await;
    let tavily = TavilySearch::new()
        .with_base_url(server.uri())
        .with_api_key("tvly-test");
    let hits = tavily.search("rust", 2).await.unwrap();
    assert_eq!(hits[0].url, "https://rust-lang.org");
    let pages = tavily
        .extract(&["https://rust-lang.org".into()])
        .await
        .unwrap();
    assert_eq!(pages[0].content, "Rust text");

    let bad_key = TavilySearch::new()
        .with_base_url(server.uri())
        .with_api_key("wrong");
    let err = bad_key.search("rust", 2).await.unwrap_err();
    assert!(matches!(err, ToolError::Http { status: 404, .. }), "{err}");

    let broken = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("{not json"))
        .mount(&broken)
        .await;
    let err = TavilySearch::new()
        .with_base_url(broken.uri())
        .with_api_key("k")
        .search("x", 1)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Parse { .. }), "{err}");
}

#[tokio::test]
async fn wikipedia_search_and_summary_against_a_mock_mediawiki() {
    let server = MockServer::start().await;
    Mock::given(path("/w/api.php"))
        .and(query_param("list", "search"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": {"search": [{"title": "Alan Turing", "snippet": "<span class=\"searchmatch\">Turing</span> was a mathematician"}]}
        })))
        .mount(&server)
        .await;
    Mock::given(path("/w/api.php"))
        .and(query_param("titles", "Alan Turing"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "query": {"pages": [{"pageid": 1, "title": "Alan Turing", "extract": "Alan Turing was an English mathematician."}]}
        })))
        .mount(&server)
        .await;
    Mock::given(path("/w/api.php"))
        .and(query_param("titles", "Nobody"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"query": {"pages": [{"title": "Nobody", "missing": true}]}})),
        )
        .mount(&server)
        .await;
    let wiki = Wikipedia::with_api_url(format!("{}/w/api.php", server.uri()));
    let hits = wiki.search("turing", 3).await.unwrap();
    assert_eq!(hits[0].title, "Alan Turing");
    assert_eq!(hits[0].snippet, "Turing was a mathematician");
    let summary = wiki.summary("Alan Turing").await.unwrap();
    assert_eq!(
        summary,
        "# Alan Turing\n\nAlan Turing was an English mathematician."
    );
    let err = wiki.summary("Nobody").await.unwrap_err();
    assert!(
        err.to_string().contains("no article titled `Nobody`"),
        "{err}"
    );

    let down = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(503).set_body_string("maintenance"))
        .mount(&down)
        .await;
    let err = Wikipedia::with_api_url(format!("{}/w/api.php", down.uri()))
        .search("x", 1)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Http { status: 503, .. }), "{err}");
}

const FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <title>arXiv Query</title>
  <entry>
    <id>http://arxiv.org/abs/1706.03762v7</id>
    <published>2017-06-12T17:57:34Z</published>
    <title>Attention Is All
      You Need</title>
    <summary>  The dominant sequence transduction models &amp; more.  </summary>
    <author><name>Ashish Vaswani</name></author>
    <author><name>Noam Shazeer</name></author>
    <link href="http://arxiv.org/abs/1706.03762v7" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/1706.03762v7" rel="related" type="application/pdf"/>
  </entry>
</feed>"#;

#[test]
fn atom_feeds_parse_and_malformed_ones_are_refused() {
    let papers = parse_atom(FEED).unwrap();
    assert_eq!(papers.len(), 1);
    let p = &papers[0];
    assert_eq!(p.id, "1706.03762v7");
    assert_eq!(p.title, "Attention Is All You Need");
    assert_eq!(
        p.summary,
        "The dominant sequence transduction models & more."
    );
    assert_eq!(p.authors, ["Ashish Vaswani", "Noam Shazeer"]);
    assert_eq!(
        p.pdf_url.as_deref(),
        Some("http://arxiv.org/pdf/1706.03762v7")
    );

    let err = parse_atom("<feed><entry><title>cut").unwrap_err();
    assert!(matches!(err, ToolError::Parse { .. }), "{err}");
    let err = parse_atom("<feed><entry></title></entry></feed>").unwrap_err();
    assert!(matches!(err, ToolError::Parse { .. }), "{err}");
    let err = parse_atom("<html><body>Rate limited</body></html>").unwrap_err();
    assert!(err.to_string().contains("not an Atom feed"), "{err}");
    let api_error = r#"<feed xmlns="http://www.w3.org/2005/Atom"><entry><id>http://arxiv.org/api/errors#incorrect_id_format</id><title>Error</title><summary>incorrect id format for 1234</summary></entry></feed>"#;
    let err = parse_atom(api_error).unwrap_err();
    assert!(err.to_string().contains("incorrect id format"), "{err}");
}

/// An entry shaped as the arXiv API emits a published paper: `<arxiv:doi>`,
/// `<arxiv:journal_ref>`, a `title="doi"` related link and another related link.
const PUBLISHED_FEED: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom">
  <title type="html">ArXiv Query: search_query=all:electron</title>
  <opensearch:totalResults>1</opensearch:totalResults>
  <entry>
    <id>http://arxiv.org/abs/hep-ex/0307015v1</id>
    <updated>2003-07-07T13:46:39-04:00</updated>
    <published>2003-07-07T13:46:39-04:00</published>
    <title>Multi-Electron Production at High Transverse Momenta in ep Collisions at HERA</title>
    <summary>Multi-electron production is studied at high electron transverse momentum.</summary>
    <author><name>H1 Collaboration</name></author>
    <arxiv:doi xmlns:arxiv="http://arxiv.org/schemas/atom">10.1140/epjc/s2003-01326-x</arxiv:doi>
    <link title="doi" href="http://dx.doi.org/10.1140/epjc/s2003-01326-x" rel="related"/>
    <arxiv:comment xmlns:arxiv="http://arxiv.org/schemas/atom">23 pages, 8 figures and 4 tables</arxiv:comment>
    <arxiv:journal_ref xmlns:arxiv="http://arxiv.org/schemas/atom">Eur.Phys.J. C31
      (2003) 17-29</arxiv:journal_ref>
    <link href="http://arxiv.org/abs/hep-ex/0307015v1" rel="alternate" type="text/html"/>
    <link title="pdf" href="http://arxiv.org/pdf/hep-ex/0307015v1" rel="related" type="application/pdf"/>
    <link href="https://journals.example.org/epjc/0307015" rel="related" type="text/html"/>
    <arxiv:primary_category xmlns:arxiv="http://arxiv.org/schemas/atom" term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
    <category term="hep-ex" scheme="http://arxiv.org/schemas/atom"/>
  </entry>
</feed>"#;

#[test]
fn an_entry_of_a_published_paper_gives_its_doi_journal_ref_and_related_links() {
    let papers = parse_atom(PUBLISHED_FEED).unwrap();
    assert_eq!(papers.len(), 1);
    let p = &papers[0];
    assert_eq!(p.id, "hep-ex/0307015v1");
    assert_eq!(p.doi.as_deref(), Some("10.1140/epjc/s2003-01326-x"));
    assert_eq!(
        p.journal_ref.as_deref(),
        Some("Eur.Phys.J. C31 (2003) 17-29")
    );
    assert_eq!(
        p.doi_url.as_deref(),
        Some("http://dx.doi.org/10.1140/epjc/s2003-01326-x")
    );
    assert_eq!(
        p.pdf_url.as_deref(),
        Some("http://arxiv.org/pdf/hep-ex/0307015v1")
    );
    assert_eq!(
        p.related_urls,
        ["https://journals.example.org/epjc/0307015"]
    );
}

#[test]
fn an_entry_without_publication_data_has_none_of_it() {
    let p = &parse_atom(FEED).unwrap()[0];
    assert_eq!((p.doi.as_deref(), p.journal_ref.as_deref()), (None, None));
    assert_eq!(p.doi_url, None);
    assert!(p.related_urls.is_empty(), "{:?}", p.related_urls);
}

#[tokio::test]
async fn arxiv_search_and_pdf_download_against_a_mock() {
    let server = MockServer::start().await;
    Mock::given(path("/api/query"))
        .and(query_param("search_query", "all:attention"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(FEED, "application/atom+xml"))
        .mount(&server)
        .await;
    Mock::given(path("/pdf/1706.03762v7"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("<html>not a pdf</html>", "text/html"),
        )
        .mount(&server)
        .await;
    Mock::given(path("/pdf/big"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(vec![b'%'; 5000], "application/pdf"))
        .mount(&server)
        .await;
    let arxiv = Arxiv::new()
        .with_urls(
            format!("{}/api/query", server.uri()),
            format!("{}/pdf/", server.uri()),
        )
        .max_pdf_bytes(1000);
    let papers = arxiv.search("attention", 3).await.unwrap();
    assert_eq!(papers[0].title, "Attention Is All You Need");
    let err = arxiv.download_pdf("1706.03762v7").await.unwrap_err();
    assert!(err.to_string().contains("not a PDF"), "{err}");
    let err = arxiv.download_pdf("big").await.unwrap_err();
    assert!(
        matches!(err, ToolError::TooLarge { limit: 1000, .. }),
        "{err}"
    );
    let err = arxiv.download_pdf("../../etc/passwd").await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    let err = arxiv.download_pdf("0000.00000").await.unwrap_err();
    assert!(matches!(err, ToolError::Http { status: 404, .. }), "{err}");
}

#[cfg(not(feature = "pdf"))]
#[tokio::test]
async fn pdf_text_needs_the_pdf_feature() {
    let err = graphkit_tools::prebuilt::arxiv::pdf_text(b"%PDF-1.4".to_vec())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`pdf` feature"), "{err}");
}

#[cfg(feature = "pdf")]
#[tokio::test]
async fn a_corrupt_pdf_is_a_parse_error_not_a_panic() {
    let err = graphkit_tools::prebuilt::arxiv::pdf_text(b"%PDF-1.4 garbage".to_vec())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Parse { .. }), "{err}");
}
