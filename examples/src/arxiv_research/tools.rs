//! The worker's tools: `arxiv_search` (its result count comes from the run config, never
//! from the model) and `add_scholar_reference_tool` (returns a `Command` that appends to
//! `pending_facts` and answers the call).

use std::sync::Arc;

use graphkit::Command;
use graphkit_tools::prebuilt::arxiv::Arxiv;
use graphkit_tools::{DynTool, ToolError, ToolRuntime, tool_fn_with_runtime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::state::{Fact, FactKind, ResearchState, ResearchStateUpdate, reference_key};

/// The run-config key of the number of search results (`--top-k`).
pub(crate) const TOP_K_KEY: &str = "top_k";
/// The default of [`TOP_K_KEY`].
pub(crate) const DEFAULT_TOP_K: usize = 5;
/// The name of the search tool.
pub const ARXIV_SEARCH: &str = "arxiv_search";
/// The name of the tool that records a reference (the seed's name).
pub const ADD_REFERENCE: &str = "add_scholar_reference_tool";

/// Arguments of `arxiv_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SearchArgs {
    /// Search terms, e.g. `retrieval augmented generation benchmark`.
    pub query: String,
}

/// One paper as `arxiv_search` shows it to the model (a JSON list of these).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    /// arXiv id with version.
    pub arxiv_id: String,
    /// Title.
    pub title: String,
    /// Authors.
    pub authors: Vec<String>,
    /// Publication year.
    pub year: Option<u16>,
    /// The abstract.
    #[serde(rename = "abstract")]
    pub abstract_text: String,
    /// The DOI of the published version (`<arxiv:doi>`), when arXiv lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doi: Option<String>,
    /// The journal's page of the published version (the entry's first `related` link
    /// that is neither the PDF nor the DOI resolver), when arXiv lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The journal reference (`<arxiv:journal_ref>`), when arXiv lists one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal_ref: Option<String>,
}

/// Arguments of `add_scholar_reference_tool`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct AddReferenceArgs {
    /// The paper's title.
    pub title: String,
    /// The arXiv id (e.g. `2401.10001v2`), when it has one.
    #[serde(default)]
    pub arxiv_id: Option<String>,
    /// The DOI, when known.
    #[serde(default)]
    pub doi: Option<String>,
    /// A link to the paper, when there is no arXiv id.
    #[serde(default)]
    pub url: Option<String>,
    /// The authors.
    #[serde(default)]
    pub authors: Vec<String>,
    /// The publication year.
    #[serde(default)]
    pub year: Option<u16>,
    /// The abstract (the expander falls back to it when the PDF cannot be read).
    #[serde(default, rename = "abstract")]
    pub abstract_text: Option<String>,
    /// One sentence on why this paper matters for the step.
    #[serde(default)]
    pub why: Option<String>,
}

/// The worker's two tools over the real arXiv client `arxiv`.
pub(crate) fn worker_tools(arxiv: &Arxiv) -> Vec<DynTool<ResearchState>> {
    let arxiv = Arc::new(arxiv.clone());
    vec![
        Arc::new(tool_fn_with_runtime(
            ARXIV_SEARCH,
            "Search arXiv. Returns a JSON list of papers (arxiv_id, title, authors, year, abstract; \
             doi, url and journal_ref when the paper was published).",
            move |args: SearchArgs, rt: ToolRuntime<ResearchState>| {
                let arxiv = Arc::clone(&arxiv);
                async move {
                    let top_k = rt
                        .config()
                        .value(TOP_K_KEY)
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|k| usize::try_from(k).ok())
                        .unwrap_or(DEFAULT_TOP_K);
                    if args.query.trim().is_empty() {
                        return Err(ToolError::InvalidArguments {
                            tool: ARXIV_SEARCH.into(),
                            message: "the query is empty; give a few search terms".into(),
                        });
                    }
                    let papers = arxiv.search(&args.query, top_k).await?;
                    let hits: Vec<SearchHit> = papers
                        .into_iter()
                        .map(|p| SearchHit {
                            year: p.published.get(..4).and_then(|y| y.parse().ok()),
                            arxiv_id: p.id,
                            title: p.title,
                            authors: p.authors,
                            abstract_text: p.summary,
                            doi: p.doi,
                            url: p.related_urls.into_iter().next(),
                            journal_ref: p.journal_ref,
                        })
                        .collect();
                    Ok(serde_json::to_string_pretty(&hits).unwrap_or_else(|_| "[]".into()))
                }
            },
        )),
        Arc::new(tool_fn_with_runtime(
            ADD_REFERENCE,
            "Record one high-signal paper as a citation for this plan step (at most 3 per step). \
             Give the arxiv_id to cite the arXiv version (its PDF is read), or only the doi / url \
             the search shows to cite the published version (its abstract is summarised).",
            |args: AddReferenceArgs, rt: ToolRuntime<ResearchState>| async move {
                add_reference(args, &rt)
            },
        )),
    ]
}

fn add_reference(
    args: AddReferenceArgs,
    rt: &ToolRuntime<ResearchState>,
) -> Result<Command<ResearchState>, ToolError> {
    if args.title.trim().is_empty() {
        return Err(ToolError::InvalidArguments {
            tool: ADD_REFERENCE.into(),
            message: "the title is empty; give the paper's title".into(),
        });
    }
    let fact = Fact {
        content: format!(
            "{} ({}){}",
            args.title.trim(),
            args.arxiv_id
                .as_deref()
                .or(args.doi.as_deref())
                .or(args.url.as_deref())
                .unwrap_or("no identifier"),
            args.why.map(|w| format!(": {w}")).unwrap_or_default()
        ),
        title: Some(args.title.trim().to_owned()),
        authors: args.authors,
        year: args.year,
        arxiv_id: args.arxiv_id,
        doi: args.doi,
        url: args.url,
        abstract_text: args.abstract_text,
        step_idx: Some(rt.state().step_idx),
        source_agent: Some(super::nodes::ARXIV_AGENT.to_owned()),
        ..Fact::new(FactKind::ScholarReference, "")
    };
    let key = reference_key(&fact).unwrap_or_else(|| "unkeyed".into());
    let ack = rt.reply(format!(
        "Recorded `{}` (key {key}) for the fact gate.",
        fact.title.as_deref().unwrap_or_default()
    ));
    Ok(Command::new().update(
        ResearchStateUpdate::new()
            .pending_facts(vec![fact])
            .messages(vec![ack]),
    ))
}
