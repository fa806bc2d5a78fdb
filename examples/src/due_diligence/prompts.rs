//! The prompts (the seed's `prompts/` modules): a system prompt per task, and prompt
//! builders that end every user message with the task's data as one JSON block after
//! [`DATA_MARKER`].

use graphkit_llm::Message;
use serde_json::{Value, json};

use super::schemas::Entity;
use super::state::DueDiligenceState;

/// Precedes the JSON data block at the end of every user prompt.
pub(crate) const DATA_MARKER: &str = "DATA (JSON):";

/// Depth 0: broad coverage.
pub(crate) const INITIAL_QUERY_SYSTEM: &str = "You plan web searches for an Enhanced Due Diligence (EDD) \
investigation of a person or organization. Write broad first queries that together cover the \
subject's biography, professional history, finances and ownership, and legal or regulatory \
record. Each query names the subject. Reply with JSON: {\"queries\": [..]}.";

/// Depth 1 and later: driven by the latest reflection's query strategy.
pub(crate) const REFINED_QUERY_SYSTEM: &str = "You plan the next web searches of an Enhanced Due \
Diligence investigation. Follow the query strategy from the latest reflection: put red flags \
and critical gaps first, then other open leads. Never repeat an executed query. Reply with \
JSON: {\"queries\": [..]}.";

/// One search: structured extraction from the pages found.
pub(crate) const WEB_SEARCH_SYSTEM: &str = "You read the pages a web search returned and extract what \
they say about the due-diligence subject. Write a short factual summary and a list of key \
facts, each ending with (source: URL). Use only the pages; leave out pages that are not about \
the subject. List the pages you used as sources.";

/// Reflection: the seed's analysis prompt.
pub(crate) const ANALYSIS_SYSTEM: &str = "You are the lead analyst of an Enhanced Due Diligence \
investigation. Read this iteration's search results and write an analysis_summary with these \
sections, each a markdown heading followed by bullet points:\n\
## Findings\n## Entities (one per line: `Person|Organization|Location: Name (also known as A; B) — description (source: URL)`)\n\
## Relationships (one per line: `A — relationship — B (source: URL)`)\n\
## Risk assessment (lines starting `Red flag:`, `Neutral:` or `Positive:`, each with (source: URL))\n\
## Gaps (leads still to search, one per line)\n\
Then decide should_continue (is another round of searches worth it?), give your reasoning, and \
write a query_strategy for the next round: red flags and critical gaps first.";

/// Entity merging.
pub(crate) const MERGE_SYSTEM: &str = "You maintain the entity list of a due-diligence investigation. \
Extract the entities from the analysis summary's Entities section and merge them with the \
existing entities: the same person or company under another name, spelling or abbreviation \
is one entity whose aliases grow. Return the whole merged list (existing entities first, \
keeping their first_seen_depth), plus the red flags, neutral and positive items of the Risk \
assessment section with their source URLs.";

/// Connection mapping.
pub(crate) const CONNECTIONS_SYSTEM: &str = "You map the connections found in a due-diligence \
investigation. Build the entity graph: one node per entity (id = its name) with its \
importance (high, medium or low) and the reasoning, and one edge per relationship with the \
evidence and sources. Then list recurring patterns (entities that connect several others) \
and suspicious connections (tied to red flags: shells, nominees, sanctions, undisclosed \
relationships) with a severity.";

/// Report synthesis.
pub(crate) const SYNTHESIS_SYSTEM: &str = "You write the final Enhanced Due Diligence report from the \
research digest. Fill all 18 sections; every finding cites its source URLs; say plainly when \
something could not be established. Rate the overall risk (low, medium, high, critical) and \
each risk's severity, rate the strength of the evidence for the main findings, and end with \
concrete recommendations and next steps. Use only the digest.";

/// A system prompt and a user prompt ending with the data block.
fn conversation(system: &str, instructions: &str, data: &Value) -> Vec<Message> {
    let data = serde_json::to_string_pretty(data).unwrap_or_else(|_| data.to_string());
    vec![
        Message::system(system),
        Message::user(format!("{instructions}\n\n{DATA_MARKER}\n{data}")),
    ]
}

/// The data block of a prompt built here (used by the offline stand-in).
pub(crate) fn data_of(prompt: &str) -> Option<Value> {
    let (_, data) = prompt.rsplit_once(DATA_MARKER)?;
    serde_json::from_str(data.trim()).ok()
}

/// `generate_queries`: depth 0 uses the broad prompt, later depths the latest strategy.
pub fn queries(state: &DueDiligenceState) -> Vec<Message> {
    let latest = state.reflection_memory.last();
    let data = json!({
        "subject": state.subject,
        "context": state.subject_context,
        "depth": state.current_depth,
        "max_queries": state.max_queries_per_depth,
        "query_strategy": latest.map(|r| r.query_strategy.as_str()).unwrap_or(""),
        "red_flags": state.risk_indicators.red_flags.iter().map(|i| &i.text).collect::<Vec<_>>(),
        "queries_executed": state.queries_executed,
    });
    if state.current_depth == 0 || latest.is_none() {
        conversation(
            INITIAL_QUERY_SYSTEM,
            "Write the first queries for this subject.",
            &data,
        )
    } else {
        conversation(
            REFINED_QUERY_SYSTEM,
            "Write the next queries, following the query strategy.",
            &data,
        )
    }
}

/// `execute_search`: one search's pages.
pub fn web_search(subject: &str, query: &str, pages: &[Value]) -> Vec<Message> {
    conversation(
        WEB_SEARCH_SYSTEM,
        "Extract what these pages say about the subject.",
        &json!({"subject": subject, "query": query, "pages": pages}),
    )
}

/// `analyze_and_reflect`: this iteration's results.
pub fn reflection(state: &DueDiligenceState) -> Vec<Message> {
    let depth = state.current_depth;
    let results: Vec<Value> = state
        .searches_at(depth)
        .map(|s| match &s.output {
            Some(out) => {
                json!({"query": s.query, "summary": out.summary, "key_facts": out.key_facts})
            }
            None => json!({"query": s.query, "error": s.error}),
        })
        .collect();
    let previous_gaps: Vec<String> = state
        .reflection_memory
        .iter()
        .flat_map(|r| section_lines(&r.analysis_summary, "Gaps"))
        .collect();
    conversation(
        ANALYSIS_SYSTEM,
        "Analyse this iteration and reflect on what to do next.",
        &json!({
            "subject": state.subject,
            "context": state.subject_context,
            "depth": depth,
            "max_depth": state.max_depth,
            "known_entities": state.discovered_entities.iter().map(|e| &e.name).collect::<Vec<_>>(),
            "queries_executed": state.queries_executed,
            "previous_gaps": previous_gaps,
            "results": results,
        }),
    )
}

/// The entity-merge step after reflection.
pub fn merge(existing: &[Entity], analysis_summary: &str, depth: u32) -> Vec<Message> {
    conversation(
        MERGE_SYSTEM,
        "Merge the entities of this analysis into the existing list.",
        &json!({"depth": depth, "existing_entities": existing, "analysis_summary": analysis_summary}),
    )
}

/// `map_connections`.
pub(crate) fn connections(state: &DueDiligenceState) -> Vec<Message> {
    let relationships: Vec<String> = state
        .reflection_memory
        .iter()
        .flat_map(|r| section_lines(&r.analysis_summary, "Relationships"))
        .collect();
    conversation(
        CONNECTIONS_SYSTEM,
        "Map the connections of this investigation.",
        &json!({
            "subject": state.subject,
            "entities": state.discovered_entities,
            "relationships": relationships,
            "red_flags": state.risk_indicators.red_flags,
        }),
    )
}

/// `synthesize_report`: everything gathered, as a digest.
pub fn synthesis(state: &DueDiligenceState) -> Vec<Message> {
    let findings: Vec<String> = state
        .search_memory
        .iter()
        .filter_map(|s| s.output.as_ref())
        .flat_map(|o| o.key_facts.iter().cloned())
        .collect();
    let gaps: Vec<String> = state
        .reflection_memory
        .last()
        .map(|r| section_lines(&r.analysis_summary, "Gaps"))
        .unwrap_or_default();
    conversation(
        SYNTHESIS_SYSTEM,
        "Write the due-diligence report.",
        &json!({
            "subject": state.subject,
            "context": state.subject_context,
            "depth_reached": state.current_depth,
            "termination_reason": state.termination_reason,
            "queries_executed": state.queries_executed,
            "key_facts": findings,
            "entities": state.discovered_entities,
            "risk_indicators": state.risk_indicators,
            "entity_graph": state.entity_graph,
            "open_gaps": gaps,
        }),
    )
}

/// The bullet lines of the `## {heading}` section of a multi-section text (without `- `).
pub(crate) fn section_lines(text: &str, heading: &str) -> Vec<String> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(title) = line.strip_prefix("## ") {
            inside = title
                .trim()
                .to_lowercase()
                .starts_with(&heading.to_lowercase());
            continue;
        }
        let item = line.strip_prefix("- ").or_else(|| line.strip_prefix("* "));
        if let Some(item) = item.map(str::trim).filter(|i| inside && !i.is_empty()) {
            lines.push(item.to_owned());
        }
    }
    lines
}
