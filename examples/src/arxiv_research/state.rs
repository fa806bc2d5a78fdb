//! [`ResearchState`]: the seed's state, its [`Plan`] and [`Fact`], and the reference key
//! that `merge_facts` deduplicates scholar references by.

use graphkit::State;
use graphkit_llm::Message;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The state of one research run (the seed's `ResearchState`).
///
/// Reducers: `messages` merges by message id (`add_messages`); `facts` is the seed's
/// `merge_facts` — scholar references merge by [`reference_key`] (latest wins, position
/// kept), every other kind is appended; `pending_facts` appends, and its typed clear
/// sentinel (`AppendUpdate::clear()`, the seed's `PENDING_CLEAR`) empties it; the rest
/// keep their last value.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct ResearchState {
    /// The conversation: PLAN STEP messages, the supervisor's turns, the workers' last
    /// messages, the synthesized report.
    #[reducer(merge_by_key)]
    pub messages: Vec<Message>,
    /// The research topic.
    pub topic: String,
    /// The plan (made by the planner when missing or empty).
    pub plan: Option<Plan>,
    /// The plan step being worked on.
    pub step_idx: usize,
    /// Set by `finish`.
    pub done: bool,
    /// The blackboard: references, findings, notes, the draft.
    #[reducer(merge_by = reference_key)]
    pub facts: Vec<Fact>,
    /// References the worker proposed in this step, waiting for the fact gate.
    #[reducer(append)]
    pub pending_facts: Vec<Fact>,
    /// References admitted in this step.
    pub step_citation_count: u32,
}

graphkit_tools::messages_state!(ResearchState, messages);

/// The research plan (structured output of the planner). The schema bounds lengths, so
/// a server that enforces it by grammar keeps a weak model from running on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The seed query for searches.
    #[schemars(length(max = 200))]
    pub main_query: String,
    /// The ordered steps.
    #[schemars(length(min = 1, max = 8))]
    pub steps: Vec<PlanStep>,
    /// What a good answer achieves.
    #[schemars(length(max = 5))]
    pub success_criteria: Vec<String>,
}

/// One step of the [`Plan`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// What to do.
    #[schemars(length(max = 300))]
    pub task: String,
    /// What the step should produce.
    #[schemars(length(max = 300))]
    pub expected_output: String,
}

/// What a [`Fact`] is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FactKind {
    /// A paper: deduplicated by [`reference_key`].
    #[default]
    ScholarReference,
    /// A step's deliverable.
    Finding,
    /// The synthesized report.
    Draft,
    /// A critique (unused by the nodes; kept for the seed's vocabulary).
    Critique,
    /// A plan step (unused by the nodes; kept for the seed's vocabulary).
    PlanStep,
    /// A reference that is not a paper.
    GeneralReference,
    /// A remark of the workflow (a missing deliverable, a failed summary, ...).
    Note,
}

/// One entry of the blackboard. Scholar references use the bibliographic fields; other
/// kinds mostly carry `content`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// What it is.
    pub kind: FactKind,
    /// Its text (for a reference: a one-line citation).
    #[serde(default)]
    pub content: String,
    /// Paper title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Paper authors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authors: Vec<String>,
    /// Publication year.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub year: Option<u16>,
    /// arXiv id (any version; the key drops the version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arxiv_id: Option<String>,
    /// DOI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// A link to the paper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The abstract.
    #[serde(default, rename = "abstract", skip_serializing_if = "Option::is_none")]
    pub abstract_text: Option<String>,
    /// The expander's focused summary (150–300 words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_summary: Option<String>,
    /// Where the extended summary's text came from: `pdf` or `abstract` (the fallback).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_source: Option<String>,
    /// The plan step that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_idx: Option<usize>,
    /// Which agent or node produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_agent: Option<String>,
}

impl Fact {
    /// A fact of `kind` with `content`.
    pub fn new(kind: FactKind, content: impl Into<String>) -> Self {
        Self {
            kind,
            content: content.into(),
            ..Self::default()
        }
    }

    /// Whether this is a scholar reference.
    pub fn is_reference(&self) -> bool {
        self.kind == FactKind::ScholarReference
    }
}

/// The dedup key of a scholar reference: the first present of the normalised arXiv id
/// (`arxiv:2401.00101`, versions dropped, also found in `arxiv.org/abs|pdf` URLs), the
/// DOI (`doi:10.1/x`), the normalised URL (`url:example.org/paper`), and `title|year`
/// (`title:graph networks|2024`). `None` for other kinds and for references with none of
/// these: those are appended, never merged.
///
/// ```
/// use graphkit_examples::arxiv_research::{Fact, FactKind, reference_key};
///
/// let v1 = Fact { arxiv_id: Some("arXiv:2401.00101v1".into()), ..Fact::new(FactKind::ScholarReference, "") };
/// let v2 = Fact { url: Some("https://arxiv.org/abs/2401.00101v2".into()), ..Fact::new(FactKind::ScholarReference, "") };
/// assert_eq!(reference_key(&v1), reference_key(&v2));
/// assert_eq!(reference_key(&Fact::new(FactKind::Note, "x")), None);
/// ```
pub fn reference_key(fact: &Fact) -> Option<String> {
    if !fact.is_reference() {
        return None;
    }
    let from_url = fact.url.as_deref().and_then(arxiv_id_from_url);
    if let Some(id) = fact
        .arxiv_id
        .as_deref()
        .and_then(normalize_arxiv_id)
        .or(from_url)
    {
        return Some(format!("arxiv:{id}"));
    }
    if let Some(doi) = fact.doi.as_deref().and_then(normalize_doi) {
        return Some(format!("doi:{doi}"));
    }
    if let Some(url) = fact.url.as_deref().and_then(normalize_url) {
        return Some(format!("url:{url}"));
    }
    let title = normalize_title(fact.title.as_deref()?)?;
    let year = fact.year.map(|y| y.to_string()).unwrap_or_default();
    Some(format!("title:{title}|{year}"))
}

/// An arXiv id without its `arXiv:` prefix and version suffix, lower-cased
/// (`arXiv:2401.00101v2` → `2401.00101`); an `arxiv.org/abs|pdf/…` URL gives its id.
/// `None` when nothing is left.
pub(crate) fn normalize_arxiv_id(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if let Some(id) = arxiv_id_from_url(raw) {
        return Some(id);
    }
    let lower = raw.to_lowercase();
    let id = lower.strip_prefix("arxiv:").unwrap_or(&lower).trim();
    let id = id.strip_suffix(".pdf").unwrap_or(id);
    let id = strip_version(id);
    (!id.is_empty()).then(|| id.to_owned())
}

/// `id` without a trailing version suffix (`2401.00001v2` → `2401.00001`).
pub(crate) fn strip_version(id: &str) -> &str {
    match id.rfind('v') {
        Some(at)
            if at > 0
                && at + 1 < id.len()
                && id[at + 1..].bytes().all(|b| b.is_ascii_digit())
                && id[..at].ends_with(|c: char| c.is_ascii_digit()) =>
        {
            &id[..at]
        }
        _ => id,
    }
}

/// The arXiv id in an `arxiv.org/abs/…` or `arxiv.org/pdf/…` URL, normalised.
pub(crate) fn arxiv_id_from_url(url: &str) -> Option<String> {
    let lower = url.trim().to_lowercase();
    let (_, rest) = lower.split_once("arxiv.org/")?;
    let rest = rest
        .strip_prefix("abs/")
        .or_else(|| rest.strip_prefix("pdf/"))?;
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix(".pdf").unwrap_or(rest);
    let id = strip_version(rest);
    (!id.is_empty()).then(|| id.to_owned())
}

/// A DOI lower-cased without `doi:` or a `doi.org` resolver prefix.
pub(crate) fn normalize_doi(raw: &str) -> Option<String> {
    let lower = raw.trim().to_lowercase();
    let mut doi = lower.as_str();
    for prefix in [
        "https://doi.org/",
        "http://doi.org/",
        "https://dx.doi.org/",
        "http://dx.doi.org/",
        "doi:",
    ] {
        if let Some(rest) = doi.strip_prefix(prefix) {
            doi = rest;
        }
    }
    let doi = doi.trim();
    (!doi.is_empty()).then(|| doi.to_owned())
}

/// A URL with `http`≡`https` (the scheme dropped), the host lower-cased, the fragment,
/// `utm_*` parameters and a trailing `/` removed.
pub(crate) fn normalize_url(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let without_fragment = raw.split('#').next().unwrap_or_default();
    let rest = match without_fragment.split_once("://") {
        Some((scheme, rest))
            if scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https") =>
        {
            rest
        }
        Some((scheme, rest)) => return Some(format!("{}://{rest}", scheme.to_lowercase())),
        None => without_fragment,
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let (host, path) = match before_query.find('/') {
        Some(at) => before_query.split_at(at),
        None => (before_query, ""),
    };
    let host = host.to_lowercase();
    if host.is_empty() {
        return None;
    }
    let kept: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty() && !p.to_lowercase().starts_with("utm_"))
        .collect();
    let mut url = format!("{host}{path}");
    while url.ends_with('/') {
        url.pop();
    }
    if !kept.is_empty() {
        url.push('?');
        url.push_str(&kept.join("&"));
    }
    Some(url)
}

/// A title case-folded, punctuation turned into spaces, whitespace collapsed.
pub(crate) fn normalize_title(raw: &str) -> Option<String> {
    let folded: String = raw
        .chars()
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect::<String>()
        .to_lowercase();
    let title = folded.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}
