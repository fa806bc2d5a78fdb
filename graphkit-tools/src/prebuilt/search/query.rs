//! The query language of [`LocalCorpus`](super::LocalCorpus): words, quoted phrases,
//! `site:` filters and `OR` between alternatives, as web search engines read them.

use std::collections::BTreeSet;

/// A site a document belongs to, or a `site:` filter: a host and a path prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Site {
    /// Lower-case host without a trailing dot (`en.wikipedia.org`).
    host: String,
    /// Path (`/wiki/Henry_Miller`) of a document, or path prefix of a filter (may be empty).
    path: String,
}

impl Site {
    /// The site of a document URL (`https://en.wikipedia.org/wiki/X`); a URL without a
    /// scheme is read as `https://`. `None` when the URL has no host.
    pub(super) fn of_url(url: &str) -> Option<Self> {
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| u.host_str().is_some())
            .or_else(|| reqwest::Url::parse(&format!("https://{url}")).ok())?;
        let host = parsed.host_str()?.trim_end_matches('.').to_lowercase();
        (!host.is_empty()).then(|| Self {
            host,
            path: parsed.path().to_owned(),
        })
    }

    /// The filter of `site:<value>`: `wikipedia.org`, `en.wikipedia.org/wiki/`, with or
    /// without a scheme.
    fn filter(value: &str) -> Option<Self> {
        let value = value
            .strip_prefix("https://")
            .or_else(|| value.strip_prefix("http://"))
            .unwrap_or(value);
        let (host, path) = value.split_once('/').map_or((value, ""), |(h, p)| (h, p));
        let host = host.trim_end_matches('.').to_lowercase();
        let path = if path.is_empty() {
            String::new()
        } else {
            format!("/{path}")
        };
        (!host.is_empty()).then_some(Self { host, path })
    }

    /// `true` if a document on `self` matches the filter `filter`: the same host or a
    /// subdomain of it (`site:wikipedia.org` matches `en.wikipedia.org`), under its path.
    fn matches(&self, filter: &Self) -> bool {
        let host = self.host == filter.host
            || self
                .host
                .strip_suffix(filter.host.as_str())
                .is_some_and(|prefix| prefix.ends_with('.'));
        host && self.path.starts_with(&filter.path)
    }
}

/// One alternative of an `OR` group.
#[derive(Debug, Clone, PartialEq)]
enum Alternative {
    /// A word or a quoted phrase: its search terms.
    Terms(Vec<String>),
    /// `site:...`.
    Site(Site),
}

/// A parsed query.
///
/// Plain words and phrases are ranked as a bag of terms (BM25, each distinct term once),
/// as before `OR` existed. An `OR` group (`a OR b`, `site:x OR site:y`) is one clause:
/// its term alternatives score as the **best** of them rather than their sum, and its
/// `site:` alternatives filter: a document must be on one of the sites (or match one of
/// the group's terms, when the group mixes the two). `OR` must be upper-case; a lower-case
/// `or` is an ordinary (stop) word.
#[derive(Debug, Default)]
pub(super) struct Query {
    /// Terms of the words and phrases outside `OR` groups, each once.
    plain: BTreeSet<String>,
    /// Groups of two or more alternatives, and lone `site:` filters.
    groups: Vec<Vec<Alternative>>,
}

impl Query {
    pub(super) fn parse(text: &str, tokenize: impl Fn(&str) -> Vec<String>) -> Self {
        // Clauses of alternatives, split on `OR`.
        let mut clauses: Vec<Vec<Alternative>> = Vec::new();
        let mut joined = false;
        for (lexeme, quoted) in lexemes(text) {
            if !quoted && lexeme == "OR" {
                joined = !clauses.is_empty();
                continue;
            }
            let site = (!quoted)
                .then(|| {
                    lexeme
                        .get(..5)
                        .filter(|p| p.eq_ignore_ascii_case("site:"))
                        .and_then(|_| Site::filter(&lexeme[5..]))
                })
                .flatten();
            let alternative = match site {
                Some(site) => Alternative::Site(site),
                None => Alternative::Terms(tokenize(lexeme)),
            };
            match clauses.last_mut() {
                Some(last) if joined => last.push(alternative),
                _ => clauses.push(vec![alternative]),
            }
            joined = false;
        }
        let mut query = Self::default();
        for clause in clauses {
            let mut clause: Vec<Alternative> = clause
                .into_iter()
                .filter(|a| !matches!(a, Alternative::Terms(t) if t.is_empty()))
                .collect();
            match clause.as_slice() {
                [] => {}
                [Alternative::Terms(terms)] => query.plain.extend(terms.iter().cloned()),
                _ => {
                    for alternative in &mut clause {
                        if let Alternative::Terms(terms) = alternative {
                            terms.sort();
                            terms.dedup();
                        }
                    }
                    if !query.groups.contains(&clause) {
                        query.groups.push(clause);
                    }
                }
            }
        }
        query
    }

    /// Every search term of the query (for snippets).
    pub(super) fn terms(&self) -> Vec<&str> {
        let mut terms: Vec<&str> = self.plain.iter().map(String::as_str).collect();
        for alternative in self.groups.iter().flatten() {
            if let Alternative::Terms(t) = alternative {
                terms.extend(t.iter().map(String::as_str));
            }
        }
        terms
    }

    /// `true` when the query has search terms (otherwise it can only list sites).
    pub(super) fn has_terms(&self) -> bool {
        !self.plain.is_empty()
            || self
                .groups
                .iter()
                .flatten()
                .any(|a| matches!(a, Alternative::Terms(_)))
    }

    /// `true` when the query has nothing to search or filter by.
    pub(super) fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.groups.is_empty()
    }

    /// The score of a document, or `None` if a `site:` filter excludes it. `term_score`
    /// gives the BM25 score of one term in the document.
    pub(super) fn score(
        &self,
        site: Option<&Site>,
        term_score: impl Fn(&str) -> f64,
    ) -> Option<f64> {
        let terms_score = |terms: &[String]| terms.iter().map(|t| term_score(t)).sum::<f64>();
        let mut score: f64 = self.plain.iter().map(|t| term_score(t)).sum();
        for group in &self.groups {
            let best_terms = group
                .iter()
                .filter_map(|a| match a {
                    Alternative::Terms(terms) => Some(terms_score(terms)),
                    Alternative::Site(_) => None,
                })
                .fold(0.0, f64::max);
            let has_site_filter = group.iter().any(|a| matches!(a, Alternative::Site(_)));
            let on_site = group.iter().any(|a| match a {
                Alternative::Site(filter) => site.is_some_and(|s| s.matches(filter)),
                Alternative::Terms(_) => false,
            });
            if has_site_filter && !on_site && best_terms <= 0.0 {
                return None;
            }
            score += best_terms;
        }
        Some(score)
    }
}

/// Whitespace-separated words and `"quoted phrases"` (an unclosed quote runs to the end),
/// each with whether it was quoted.
fn lexemes(text: &str) -> Vec<(&str, bool)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            let end = after.find('"').unwrap_or(after.len());
            out.push((&after[..end], true));
            rest = after.get(end + 1..).unwrap_or("");
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(rest.len());
            out.push((&rest[..end], false));
            rest = &rest[end..];
        }
        rest = rest.trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_lowercase).collect()
    }

    #[test]
    fn lexemes_split_words_and_quoted_phrases() {
        assert_eq!(
            lexemes(r#" "X biography" site:a.org OR  b "unclosed"#),
            [
                ("X biography", true),
                ("site:a.org", false),
                ("OR", false),
                ("b", false),
                ("unclosed", true)
            ]
        );
    }

    #[test]
    fn or_joins_the_neighbouring_alternatives_into_one_group() {
        let q = Query::parse(
            r#""X biography" site:wikipedia.org OR site:britannica.com OR site:biography.com"#,
            words,
        );
        assert_eq!(q.plain, BTreeSet::from(["x".into(), "biography".into()]));
        assert_eq!(q.groups.len(), 1);
        assert_eq!(q.groups[0].len(), 3);
        let q = Query::parse("OR a OR b c OR", words);
        assert!(q.plain.contains("c"));
        assert_eq!(
            q.groups,
            [vec![
                Alternative::Terms(vec!["a".into()]),
                Alternative::Terms(vec!["b".into()])
            ]]
        );
    }

    #[test]
    fn site_filters_match_the_host_its_subdomains_and_a_path_prefix() {
        let doc = Site::of_url("https://en.Wikipedia.org/wiki/Henry_Miller").unwrap();
        let yes = |f: &str| doc.matches(&Site::filter(f).unwrap());
        assert!(yes("wikipedia.org"));
        assert!(yes("en.wikipedia.org"));
        assert!(yes("https://wikipedia.org/wiki/"));
        assert!(!yes("pedia.org"));
        assert!(!yes("fr.wikipedia.org"));
        assert!(!yes("wikipedia.org/w/"));
        assert_eq!(
            Site::of_url("britannica.example/biography/x").map(|s| s.host),
            Some("britannica.example".to_owned())
        );
        assert!(Site::filter("").is_none());
    }
}
