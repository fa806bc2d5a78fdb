//! `LocalCorpus` queries: `site:` filters from front-matter URLs, and `OR`.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use graphkit_tools::prebuilt::search::{LocalCorpus, SearchBackend};

/// Three "sites" about one fictional author, a page on no site, and a news page.
fn biographies() -> LocalCorpus {
    LocalCorpus::from_documents([
        (
            "wiki/ada-quill.md",
            "---\nurl: https://en.wikipedia.example/wiki/Ada_Quill\n---\n# Ada Quill\nAda Quill (1891-1960) was a novelist. Biography: born in Yorkville.",
        ),
        (
            "brit/ada-quill.md",
            "---\nsource: https://www.britannica.example/biography/Ada-Quill\ntitle: Ada Quill | Britannica\n---\n# Ada Quill, American writer\nBiography of Ada Quill, novelist, born 1891.",
        ),
        (
            "bio/ada-quill.html",
            "---\nurl: https://biography.example/writer/ada-quill\n---\n<html><head><title>Ada Quill - Biography</title></head><body><p>Ada Quill biography: early life in New York.</p></body></html>",
        ),
        (
            "news/quill-prize.md",
            "---\nurl: https://news.example/2024/quill-prize\n---\n# Quill prize\nAda Quill biography wins a prize; Ada Quill married in June 1924.",
        ),
        (
            "notes.md",
            "# Notes\nAda Quill biography notes without a site.",
        ),
    ])
}

fn urls(hits: &[graphkit_tools::prebuilt::search::SearchResult]) -> Vec<&str> {
    let mut urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
    urls.sort_unstable();
    urls
}

#[tokio::test]
async fn site_filters_joined_by_or_keep_only_documents_on_those_sites() {
    let corpus = biographies();
    let hits = corpus
        .search(
            r#""Ada Quill biography" site:wikipedia.example OR site:britannica.example OR site:biography.example"#,
            5,
        )
        .await
        .unwrap();
    assert_eq!(
        urls(&hits),
        [
            "https://biography.example/writer/ada-quill",
            "https://en.wikipedia.example/wiki/Ada_Quill",
            "https://www.britannica.example/biography/Ada-Quill",
        ]
    );
    // Front-matter titles win over headings; HTML titles still come from <title>.
    assert!(hits.iter().any(|h| h.title == "Ada Quill | Britannica"));
    assert!(hits.iter().any(|h| h.title == "Ada Quill - Biography"));
    // Snippets come from the words searched, not from the filters.
    assert!(
        hits.iter().all(|h| h.snippet.contains("Ada Quill")),
        "{hits:?}"
    );

    // One site, a subdomain match, and a path prefix.
    let hits = corpus
        .search("Ada Quill site:wikipedia.example", 5)
        .await
        .unwrap();
    assert_eq!(urls(&hits), ["https://en.wikipedia.example/wiki/Ada_Quill"]);
    let hits = corpus
        .search("Ada Quill site:britannica.example/biography", 5)
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert!(
        corpus
            .search("Ada Quill site:britannica.example/topic", 5)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn sites_that_match_nothing_give_no_results_not_other_sites() {
    let corpus = biographies();
    let hits = corpus
        .search(
            r#""Ada Quill" site:nowhere.example OR site:elsewhere.example"#,
            5,
        )
        .await
        .unwrap();
    assert!(hits.is_empty(), "{hits:?}");
    // A suffix that is not a whole domain label does not match.
    assert!(
        corpus
            .search("Ada Quill site:pedia.example", 5)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_query_of_only_site_filters_lists_the_documents_on_those_sites() {
    let corpus = biographies();
    let hits = corpus
        .search("site:news.example OR site:biography.example", 10)
        .await
        .unwrap();
    assert_eq!(
        urls(&hits),
        [
            "https://biography.example/writer/ada-quill",
            "https://news.example/2024/quill-prize"
        ]
    );
}

#[tokio::test]
async fn or_between_words_finds_either_and_scores_the_better_alternative() {
    let corpus = LocalCorpus::from_documents([
        ("cat.md", "# Cat\nA cat sleeps."),
        ("kitten.md", "# Kitten\nA kitten plays."),
        ("both.md", "# Pets\nA cat and a kitten."),
        ("dog.md", "# Dog\nA dog barks."),
    ]);
    let hits = corpus.search("cat OR kitten", 10).await.unwrap();
    assert_eq!(
        urls(&hits),
        ["corpus://both.md", "corpus://cat.md", "corpus://kitten.md"]
    );
    // `OR` is an operator, not a word to search.
    assert!(corpus.search("dog OR", 10).await.unwrap().len() == 1);

    let score = |query: &str, path: &str| {
        // Documents are numbered in the order they were given.
        let index = ["cat.md", "kitten.md", "both.md", "dog.md"]
            .iter()
            .position(|p| *p == path)
            .unwrap();
        corpus
            .rank(query)
            .into_iter()
            .find(|(i, _)| *i == index)
            .map_or(0.0, |(_, s)| s)
    };
    let (cat, kitten) = (score("cat", "both.md"), score("kitten", "both.md"));
    assert!(cat > 0.0 && kitten > 0.0);
    // Plain words add up; an OR group counts its best alternative once.
    assert!((score("cat kitten", "both.md") - (cat + kitten)).abs() < 1e-9);
    assert!((score("cat OR kitten", "both.md") - cat.max(kitten)).abs() < 1e-9);
}

#[tokio::test]
async fn front_matter_urls_are_extractable_and_corpora_without_it_are_unchanged() {
    let corpus = biographies();
    let pages = corpus
        .extract(&[
            "https://en.wikipedia.example/wiki/Ada_Quill".into(),
            "corpus://brit/ada-quill.md".into(),
            "notes.md".into(),
        ])
        .await
        .unwrap();
    let got: Vec<&str> = pages.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(
        got,
        [
            "https://en.wikipedia.example/wiki/Ada_Quill",
            "https://www.britannica.example/biography/Ada-Quill",
            "corpus://notes.md"
        ]
    );
    // The front matter is not part of the content.
    assert!(
        pages[0].content.starts_with("# Ada Quill"),
        "{}",
        pages[0].content
    );
    // A document without front matter keeps its corpus:// URL and is on no site.
    let hits = corpus.search("notes without", 5).await.unwrap();
    assert_eq!(hits[0].url, "corpus://notes.md");
    assert!(
        corpus
            .search("notes without site:notes.md", 5)
            .await
            .unwrap()
            .is_empty()
    );
}
