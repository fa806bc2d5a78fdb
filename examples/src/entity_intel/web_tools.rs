//! The seed's other web tools, for runs on the real web: page fetch (`fetch_url`, the
//! seed's `firecrawl_scrape`), a site map (`site_map`, the seed's `firecrawl_map`, built on
//! the same fetcher) and Wikipedia for disambiguation (`wikipedia_search`,
//! `wikipedia_summary`). Offline runs leave them out: the corpus behind `web_search` and
//! `web_extract` stands for the web there.

use std::sync::Arc;

use graphkit::State;
use graphkit_tools::prebuilt::fetch::UrlFetcher;
use graphkit_tools::prebuilt::wikipedia::Wikipedia;
use graphkit_tools::{DynTool, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

/// The clients behind the web tools.
#[derive(Debug, Clone, Default)]
pub struct WebTools {
    /// Fetches pages for `fetch_url` and `site_map` (public addresses only by default).
    pub(crate) fetcher: UrlFetcher,
    /// The MediaWiki client (English Wikipedia by default).
    pub wikipedia: Wikipedia,
}

/// Arguments of `site_map`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SiteMapArgs {
    /// A page of the site, usually its home page (`https://example.com/`).
    pub url: String,
}

impl WebTools {
    /// `fetch_url`, `site_map`, `wikipedia_search` and `wikipedia_summary`.
    pub fn tools<S: State>(&self) -> Vec<DynTool<S>> {
        let mut tools = vec![self.fetcher.tool::<S>()];
        let fetcher = Arc::new(self.fetcher.clone());
        tools.push(Arc::new(tool_fn(
            "site_map",
            "List the pages a site links to from one of its pages (same site only): find the about, team, \
             product or pricing pages to fetch next.",
            move |args: SiteMapArgs| {
                let fetcher = Arc::clone(&fetcher);
                async move {
                    let page = fetcher.fetch(&args.url).await?;
                    let links = same_site_links(&page.content, &page.url);
                    Ok(if links.is_empty() {
                        format!("No links to other pages of the site on {}.", page.url)
                    } else {
                        links.join("\n")
                    })
                }
            },
        )));
        tools.extend(self.wikipedia.tools::<S>());
        tools
    }
}

/// The links of a fetched page (markdown from HTML: `[text](url)` or `[n]: url`, and bare
/// URLs) that stay on the site of `page_url`, absolute, without fragments, deduplicated,
/// in order, at most 100.
pub(crate) fn same_site_links(content: &str, page_url: &str) -> Vec<String> {
    let origin = origin_of(page_url);
    let mut links: Vec<String> = Vec::new();
    let mut rest = content;
    while let Some(at) = rest.find(['(', ':', ' ', '\n', '<']) {
        let tail = &rest[at + 1..];
        let candidate: String = tail
            .trim_start()
            .chars()
            .take_while(|c| !c.is_whitespace() && !")]>\"'".contains(*c))
            .collect();
        rest = tail;
        let absolute = if candidate.starts_with("http://") || candidate.starts_with("https://") {
            candidate
        } else if candidate.starts_with('/') && !candidate.starts_with("//") {
            match &origin {
                Some(origin) => format!("{origin}{candidate}"),
                None => continue,
            }
        } else {
            continue;
        };
        let absolute = absolute.split('#').next().unwrap_or_default().to_owned();
        let same_site = origin
            .as_deref()
            .is_some_and(|o| absolute == o || absolute.starts_with(&format!("{o}/")));
        if same_site && !links.contains(&absolute) && links.len() < 100 {
            links.push(absolute);
        }
    }
    links
}

/// `https://example.com/a/b` → `https://example.com`.
fn origin_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let host = rest.split(['/', '?', '#']).next()?;
    (!host.is_empty()).then(|| format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_map_keeps_same_site_links_absolute_and_once() {
        let content = "[About](/about) [Team](https://acme.example/team#top) \
            [Elsewhere](https://other.example/x)\n[1]: https://acme.example/pricing\n\
            see https://acme.example/team and [again](/about)";
        assert_eq!(
            same_site_links(content, "https://acme.example/"),
            [
                "https://acme.example/about",
                "https://acme.example/team",
                "https://acme.example/pricing"
            ]
        );
    }
}
