//! `url_finder` (seed §3): the biography pages of a person on the authoritative sites, in
//! priority order.

use graphkit_tools::prebuilt::search::SearchBackend;

/// The authoritative sites, in priority order, with the source name events get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sites {
    /// `(domain, source name)`, best first.
    pub sites: Vec<(String, String)>,
}

impl Sites {
    /// The seed's sites on the web: wikipedia.org > britannica.com > biography.com.
    pub fn web() -> Self {
        Self::of(&[
            ("wikipedia.org", "Wikipedia"),
            ("britannica.com", "Britannica"),
            ("biography.com", "Biography.com"),
        ])
    }

    /// Their stand-ins in the offline corpus: wikipedia.example > britannica.example >
    /// biography.example.
    pub fn offline() -> Self {
        Self::of(&[
            ("wikipedia.example", "Wikipedia"),
            ("britannica.example", "Britannica"),
            ("biography.example", "Biography.com"),
        ])
    }

    fn of(sites: &[(&str, &str)]) -> Self {
        Self {
            sites: sites
                .iter()
                .map(|(d, n)| ((*d).to_owned(), (*n).to_owned()))
                .collect(),
        }
    }

    /// The seed's query: `"<person> biography" site:A OR site:B OR site:C`.
    pub fn query(&self, person: &str) -> String {
        let sites: Vec<String> = self
            .sites
            .iter()
            .map(|(d, _)| format!("site:{d}"))
            .collect();
        format!("\"{person} biography\" {}", sites.join(" OR "))
    }

    /// The priority of the site `url` is on (0 = best), if it is one of them.
    pub(crate) fn rank(&self, url: &str) -> Option<usize> {
        let host = host_of(url);
        self.sites
            .iter()
            .position(|(domain, _)| host == *domain || host.ends_with(&format!(".{domain}")))
    }

    /// The source name of `url`: the site's name, else its host (`news.example`).
    pub(crate) fn source_name(&self, url: &str) -> String {
        self.rank(url)
            .and_then(|i| self.sites.get(i))
            .map_or_else(|| host_of(url), |(_, name)| name.clone())
    }
}

/// The host of a URL; for `corpus://` URLs, the first path segment (the corpus keeps each
/// site in a directory named after it).
pub(crate) fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    host.trim_start_matches("www.").to_lowercase()
}

fn normalized(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.trim_start_matches("www.")
        .split('#')
        .next()
        .unwrap_or("")
        .trim_end_matches('/')
        .to_lowercase()
}

/// Whether `text` is about `person`: it names them in full (`Halina Vosk`, `Halina_Vosk`),
/// not only by a surname another person shares.
pub(crate) fn names_person(text: &str, person: &str) -> bool {
    crate::shared::prose::names_in_full(text, person)
}

/// Runs the query for `person` and keeps at most `kept` URLs of the top `results` hits on
/// the sites that name the person in full (title or snippet; a search engine's hit for a
/// namesake is someone else's page): deduplicated, one per site (its best hit), sorted by
/// site priority.
///
/// The site filter is applied to the hits here as well, so a backend that ignores
/// `site:` (or honours it) gives the same answer.
///
/// # Errors
/// The backend's error, as text.
pub(crate) async fn find_urls(
    search: &dyn SearchBackend,
    sites: &Sites,
    person: &str,
    results: usize,
    kept: usize,
) -> Result<Vec<String>, String> {
    let hits = search
        .search(&sites.query(person), results.saturating_mul(4))
        .await
        .map_err(|e| e.to_string())?;
    let mut seen = std::collections::HashSet::new();
    let mut chosen: Vec<(usize, String)> = Vec::new();
    for hit in hits
        .iter()
        .filter(|h| sites.rank(&h.url).is_some())
        .filter(|h| names_person(&format!("{}\n{}", h.title, h.snippet), person))
        .take(results)
    {
        let rank = sites.rank(&hit.url).unwrap_or(usize::MAX);
        if seen.insert(normalized(&hit.url)) && !chosen.iter().any(|(r, _)| *r == rank) {
            chosen.push((rank, hit.url.clone()));
        }
    }
    chosen.sort_by_key(|(rank, _)| *rank);
    Ok(chosen.into_iter().take(kept).map(|(_, url)| url).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn corpus_urls_are_ranked_by_their_site_directory() {
        let sites = Sites::offline();
        assert_eq!(
            sites.rank("corpus://britannica.example/biography/x.md"),
            Some(1)
        );
        assert_eq!(sites.rank("https://en.wikipedia.example/wiki/X"), Some(0));
        assert_eq!(sites.rank("corpus://news.example/x.md"), None);
        assert_eq!(
            sites.source_name("corpus://news.example/x.md"),
            "news.example"
        );
        assert_eq!(
            Sites::web().query("Henry Miller"),
            "\"Henry Miller biography\" site:wikipedia.org OR site:britannica.com OR site:biography.com"
        );
    }
}
