//! The nodes: planner → step_iterator → (supervisor) → fact_gate → advance → expander →
//! synthesizer → finish, and the router after `advance`.

use std::collections::HashSet;
use std::sync::Arc;

use graphkit::RunContext;
use graphkit::nodes::Goto;
use graphkit::{AppendUpdate, Input, RunConfig, SendTo};
use graphkit_llm::checks::{non_empty, required_headings, word_range};
use graphkit_llm::{CallOptions, ChatModel, Message};
use graphkit_tools::prebuilt::arxiv::Arxiv;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::prompts::{self, DELIVERABLE, PLAN_STEP, SECTIONS};
use super::state::{
    Fact, FactKind, Plan, PlanStep, ResearchState, ResearchStateUpdate, reference_key,
};

/// Node name: the planner.
pub(crate) const PLANNER: &str = "planner";
/// Node name: emits one PLAN STEP.
pub(crate) const STEP_ITERATOR: &str = "step_iterator";
/// Node name: the compiled supervisor (a subgraph).
pub(crate) const SUPERVISOR: &str = "supervisor";
/// The worker's name (a node inside the supervisor).
pub(crate) const ARXIV_AGENT: &str = "arxiv_agent";
/// Node name: admits at most K references per step.
pub(crate) const FACT_GATE: &str = "fact_gate";
/// Node name: next step or on to the expander.
pub(crate) const ADVANCE: &str = "advance";
/// Node name: one extended summary per admitted paper (one `Send` each).
pub(crate) const EXPANDER: &str = "expander";
/// Node name: the report.
pub(crate) const SYNTHESIZER: &str = "synthesizer";
/// Node name: sets `done`.
pub(crate) const FINISH: &str = "finish";

/// The run-config key of K (`--max-citations-per-step`).
pub(crate) const MAX_CITATIONS_KEY: &str = "max_citations_per_step";
/// The default K.
pub(crate) const DEFAULT_MAX_CITATIONS: u32 = 3;
/// The most characters of paper text given to the expander.
pub(crate) const MAX_PAPER_CHARS: usize = 12_000;

type NodeResult =
    Result<ResearchStateUpdate, Box<dyn std::error::Error + std::marker::Send + Sync>>;

/// The models of each role and the arXiv client the nodes use.
#[derive(Clone)]
pub struct NodeDeps {
    /// Writes the plan.
    pub planner: Arc<dyn ChatModel>,
    /// Writes the extended summaries.
    pub expander: Arc<dyn ChatModel>,
    /// Writes the report.
    pub synthesizer: Arc<dyn ChatModel>,
    /// The arXiv client (PDFs for the expander).
    pub arxiv: Arxiv,
    /// The most plan steps kept.
    pub max_steps: usize,
}

impl std::fmt::Debug for NodeDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeDeps")
            .field("max_steps", &self.max_steps)
            .finish_non_exhaustive()
    }
}

/// `planner`: makes a [`Plan`] when there is none (or it has no steps) and resets
/// `step_idx`; otherwise changes nothing.
///
/// When the model gives no usable plan (after one retry; or its call fails, e.g. the run's
/// time budget is spent), the plan falls back to one step searching the topic itself, and
/// a [`PLAN_FALLBACK_NOTE`] fact says so for the report.
///
/// # Errors
/// An empty topic.
pub async fn planner(state: Arc<ResearchState>, deps: RunContext<NodeDeps>) -> NodeResult {
    if state.plan.as_ref().is_some_and(|p| !p.steps.is_empty()) {
        return Ok(ResearchStateUpdate::new());
    }
    if state.topic.trim().is_empty() {
        return Err("the topic is empty; give a research topic".into());
    }
    let max_steps = deps.max_steps.max(1);
    let planned = Arc::clone(&deps.planner)
        .with_options(CallOptions::new().temperature(0.0).max_tokens(1024))
        .with_structured_output::<Plan>()
        .retries(1)
        .validate(|plan: &Plan| non_empty("steps", &plan.steps))
        .invoke(&[Message::user(prompts::planner(&state.topic, max_steps))])
        .await;
    let (mut plan, notes) = match planned {
        Ok(plan) => (plan, Vec::new()),
        Err(e) => {
            let topic = state.topic.trim();
            let note = format!(
                "{PLAN_FALLBACK_NOTE} the model's plan could not be used ({}); fell back to one step searching the topic itself",
                crate::shared::truncate(&e.to_string().replace(['\n', '\r'], " "), 300)
            );
            let plan = Plan {
                main_query: crate::shared::truncate(topic, 200),
                steps: vec![PlanStep {
                    task: crate::shared::truncate(
                        &format!("Search arXiv for papers on: {topic}"),
                        300,
                    ),
                    expected_output: "papers on the topic, with their abstracts".into(),
                }],
                success_criteria: Vec::new(),
            };
            (plan, vec![Fact::new(FactKind::Note, note)])
        }
    };
    plan.steps.truncate(max_steps);
    if plan.main_query.trim().is_empty() {
        plan.main_query.clone_from(&state.topic);
    }
    let update = ResearchStateUpdate::new().plan(Some(plan)).step_idx(0);
    Ok(if notes.is_empty() {
        update
    } else {
        update.facts(notes)
    })
}

/// How a [`FactKind::Note`] begins that says the plan is the workflow's fallback, not the
/// model's; the report repeats it.
pub const PLAN_FALLBACK_NOTE: &str = "plan fallback:";

/// `step_iterator`: one PLAN STEP message for the current step; resets the step's count
/// and clears `pending_facts` with the clear sentinel.
///
/// # Errors
/// No plan, or `step_idx` past its end (a bug).
pub async fn step_iterator(state: Arc<ResearchState>) -> NodeResult {
    let plan = state
        .plan
        .as_ref()
        .ok_or("step_iterator ran without a plan")?;
    let step = plan
        .steps
        .get(state.step_idx)
        .ok_or("step_iterator ran past the last plan step")?;
    let message = prompts::plan_step(&state.topic, plan, state.step_idx, step);
    Ok(ResearchStateUpdate::new()
        .messages(vec![Message::user(message)])
        .step_citation_count(0)
        .pending_facts(AppendUpdate::clear()))
}

/// `fact_gate`: admits, in `pending_facts` order, at most `K − step_citation_count` new
/// scholar references (new = key not yet in `facts`; repeats collapse), every other
/// pending fact unbudgeted; records the step's deliverable as a `finding` (and a `note`
/// when the worker gave no `==DELIVERABLE==` block); counts and clears.
pub async fn fact_gate(state: Arc<ResearchState>, config: RunConfig) -> NodeResult {
    let k = config
        .value(MAX_CITATIONS_KEY)
        .and_then(serde_json::Value::as_u64)
        .and_then(|k| u32::try_from(k).ok())
        .unwrap_or(DEFAULT_MAX_CITATIONS);
    let (on_topic, off_topic): (Vec<Fact>, Vec<Fact>) = state
        .pending_facts
        .iter()
        .cloned()
        .partition(|f| !f.is_reference() || is_on_topic(&state.topic, f));
    let (admitted, count) = gate(&state.facts, &on_topic, k, state.step_citation_count);
    let mut facts = admitted;
    facts.extend(off_topic.iter().map(|f| Fact {
        step_idx: Some(state.step_idx),
        ..Fact::new(
            FactKind::Note,
            format!(
                "{OFF_TOPIC_NOTE} \"{}\": its title and abstract name too few of the topic's terms ({})",
                f.title.as_deref().unwrap_or_default(),
                topic_terms(&state.topic).join(", ")
            ),
        )
    }));
    facts.extend(deliverable_facts(&state));
    Ok(ResearchStateUpdate::new()
        .facts(facts)
        .step_citation_count(state.step_citation_count + count)
        .pending_facts(AppendUpdate::clear()))
}

/// How a note about a reference left out as off-topic starts.
pub const OFF_TOPIC_NOTE: &str = "not admitted, off-topic:";

/// Words that say nothing about what a topic is (question words, research boilerplate).
const GENERIC_WORDS: &[&str] = &[
    "about",
    "across",
    "and",
    "approach",
    "approaches",
    "based",
    "can",
    "does",
    "for",
    "from",
    "how",
    "into",
    "its",
    "method",
    "methods",
    "model",
    "models",
    "new",
    "of",
    "on",
    "recent",
    "survey",
    "study",
    "the",
    "their",
    "them",
    "they",
    "this",
    "towards",
    "use",
    "used",
    "using",
    "what",
    "when",
    "which",
    "why",
    "with",
    "work",
    "are",
    "is",
    "in",
    "to",
    "a",
    "an",
    "or",
    "by",
    "at",
    "do",
    "be",
    "vs",
    "versus",
];

/// A word's stem for matching: its first five letters (`answering` and `answer`,
/// `generation` and `generative` meet).
fn stem(word: &str) -> String {
    word.chars().take(5).collect()
}

/// The terms of a topic that say what it is about, lowercased, without generic words.
pub fn topic_terms(topic: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in topic
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 3 && !GENERIC_WORDS.contains(&w.as_str()))
    {
        if !terms.iter().any(|t| stem(t) == stem(&word)) {
            terms.push(word);
        }
    }
    terms
}

/// The graph's relevance check on a reference, whatever the model chose: its title and
/// abstract name two of the topic's [`topic_terms`] (both of a two-term topic) and at
/// least two in five of them (at least one when the model gave no abstract to judge by).
/// A topic with no such term admits everything.
pub fn is_on_topic(topic: &str, reference: &Fact) -> bool {
    let terms = topic_terms(topic);
    if terms.is_empty() {
        return true;
    }
    let text = format!(
        "{} {}",
        reference.title.as_deref().unwrap_or_default(),
        reference.abstract_text.as_deref().unwrap_or_default()
    );
    let stems: HashSet<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(|w| stem(&w.to_lowercase()))
        .collect();
    let named = terms.iter().filter(|t| stems.contains(&stem(t))).count();
    if reference.abstract_text.as_deref().is_none_or(str::is_empty) {
        named >= 1
    } else {
        named >= terms.len().min(2) && named * 5 >= terms.len() * 2
    }
}

/// The gate's decision: the facts admitted from `pending` and how many of them are
/// budgeted references. `already` is the number admitted earlier in this step.
pub fn gate(existing: &[Fact], pending: &[Fact], k: u32, already: u32) -> (Vec<Fact>, u32) {
    let mut seen: HashSet<String> = existing.iter().filter_map(reference_key).collect();
    let mut budget = k.saturating_sub(already);
    let mut admitted = Vec::new();
    let mut count = 0;
    for fact in pending {
        if !fact.is_reference() {
            admitted.push(fact.clone());
            continue;
        }
        if let Some(key) = reference_key(fact)
            && !seen.insert(key)
        {
            continue;
        }
        if budget == 0 {
            continue;
        }
        budget -= 1;
        count += 1;
        admitted.push(fact.clone());
    }
    (admitted, count)
}

/// The step's deliverable as a `finding`: the worker's answer, i.e. the message the
/// supervisor handed back (the one before its `transfer_back_to_supervisor` record), with
/// the text after `==DELIVERABLE==`. A `note` records a missing block, or a step the
/// supervisor never delegated.
fn deliverable_facts(state: &ResearchState) -> Vec<Fact> {
    let start = state
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User(_)) && m.text().starts_with(PLAN_STEP))
        .map_or(0, |at| at + 1);
    let turn = &state.messages[start..];
    let answer = turn
        .iter()
        .position(|m| m.tool_calls().iter().any(|c| c.name == HANDOFF_BACK))
        .and_then(|at| at.checked_sub(1))
        .map(|at| &turn[at])
        .filter(|m| matches!(m, Message::Assistant(_)))
        .map(Message::text);
    let step = Some(state.step_idx);
    let n = state.step_idx + 1;
    let note = |text: String| Fact {
        step_idx: step,
        ..Fact::new(FactKind::Note, text)
    };
    let finding = |text: &str| Fact {
        step_idx: step,
        source_agent: Some(ARXIV_AGENT.into()),
        ..Fact::new(FactKind::Finding, text.trim())
    };
    match answer {
        None => vec![note(format!(
            "step {n}: the supervisor did not delegate the step to a worker{}",
            if crate::shared::models::RunBudget::process().is_spent() {
                " (the run's time budget for model calls was spent)"
            } else {
                ""
            }
        ))],
        Some(text) => match text.split_once(DELIVERABLE) {
            Some((_, body)) => vec![finding(body)],
            None => vec![
                note(format!(
                    "step {n}: the worker gave no {DELIVERABLE} block; its last message is kept as the finding"
                )),
                finding(text),
            ],
        },
    }
}

/// The tool the supervisor's handoff-back record calls.
const HANDOFF_BACK: &str = "transfer_back_to_supervisor";

/// `advance`: `step_idx += 1`.
pub async fn advance(state: Arc<ResearchState>) -> ResearchStateUpdate {
    ResearchStateUpdate::new().step_idx(state.step_idx + 1)
}

/// The router after `advance`: the next plan step, else one `Send` to the expander per
/// admitted reference without a summary, else the synthesizer.
pub(crate) fn after_advance(state: &ResearchState) -> Vec<Goto> {
    let steps = state.plan.as_ref().map_or(0, |p| p.steps.len());
    if state.step_idx < steps {
        return vec![Goto::from(STEP_ITERATOR)];
    }
    let sends: Vec<Goto> = state
        .facts
        .iter()
        .filter(|f| f.is_reference() && f.extended_summary.is_none())
        .map(|f| Goto::Send(SendTo::new(EXPANDER, f.clone())))
        .collect();
    if sends.is_empty() {
        vec![Goto::from(SYNTHESIZER)]
    } else {
        sends
    }
}

/// The expander's structured output.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ExtendedSummary {
    /// The focused summary, 150 to 300 words.
    #[schemars(length(max = 2400))]
    pub summary: String,
}

/// `expander` (one task per reference): the PDF's text, else the abstract and metadata;
/// a validated 150–300-word summary; a **new** fact with `extended_summary` set (the
/// reducer replaces the reference by key). A failure leaves the reference unsummarised
/// and records a `note`.
pub async fn expander(
    state: Arc<ResearchState>,
    Input(reference): Input<Fact>,
    deps: RunContext<NodeDeps>,
) -> NodeResult {
    let (source, text) = paper_text(&deps.arxiv, &reference).await;
    let main_query = state
        .plan
        .as_ref()
        .map_or(state.topic.as_str(), |p| p.main_query.as_str());
    let prompt = prompts::expander(&state.topic, main_query, &reference, source, &text);
    let summary = Arc::clone(&deps.expander)
        .with_options(CallOptions::new().temperature(0.0).max_tokens(800))
        .with_structured_output::<ExtendedSummary>()
        .retries(1)
        .validate(|s: &ExtendedSummary| word_range("summary", &s.summary, 150..=300))
        .invoke(&[Message::user(prompt)])
        .await;
    let title = reference.title.clone().unwrap_or_default();
    Ok(match summary {
        Ok(summary) => ResearchStateUpdate::new().facts(vec![Fact {
            extended_summary: Some(summary.summary),
            summary_source: Some(source.to_owned()),
            source_agent: Some(EXPANDER.into()),
            ..reference
        }]),
        Err(err) => ResearchStateUpdate::new().facts(vec![Fact::new(
            FactKind::Note,
            format!("no extended summary for `{title}` (left out of the report): {err}"),
        )]),
    })
}

/// The text to summarise: the PDF's (`"pdf"`), else the abstract and metadata
/// (`"abstract"`).
pub async fn paper_text(arxiv: &Arxiv, reference: &Fact) -> (&'static str, String) {
    if let Some(id) = &reference.arxiv_id
        && let Ok(text) = arxiv.paper_text(id).await
        && !text.trim().is_empty()
    {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        return ("pdf", crate::shared::truncate(&text, MAX_PAPER_CHARS));
    }
    let metadata = format!(
        "{}\n{}\n{}\n{}",
        reference.title.as_deref().unwrap_or_default(),
        reference.authors.join(", "),
        reference.year.map(|y| y.to_string()).unwrap_or_default(),
        reference
            .abstract_text
            .as_deref()
            .unwrap_or("(no abstract recorded)")
    );
    ("abstract", metadata)
}

/// The synthesizer's structured output.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ReportBody {
    /// The report in Markdown, with the five sections and inline `[n]` citations.
    pub markdown: String,
}

/// `synthesizer`: a report from the references **with** an extended summary only (the
/// `facts` reducer has already collapsed duplicates, latest wins); the sections Context,
/// Techniques, Evidence, Limitations, Implications; inline `[n]`; a numbered sources
/// list. Stored as a `draft` fact and an assistant message. When the model gives no
/// acceptable report (after one retry, or its call fails), the body says so and lists the
/// summaries unedited.
///
/// # Errors
/// None today; the signature is a node's.
pub async fn synthesizer(state: Arc<ResearchState>, deps: RunContext<NodeDeps>) -> NodeResult {
    let sources: Vec<(usize, &Fact)> = state
        .facts
        .iter()
        .filter(|f| f.is_reference() && f.extended_summary.is_some())
        .enumerate()
        .map(|(at, f)| (at + 1, f))
        .collect();
    let n = sources.len();
    let body = if sources.is_empty() {
        SECTIONS
            .iter()
            .map(|s| {
                format!("## {s}\n\nNo source could be summarised, so nothing is claimed here.\n")
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        match Arc::clone(&deps.synthesizer)
            .with_options(CallOptions::new().temperature(0.0).max_tokens(2048))
            .with_structured_output::<ReportBody>()
            .retries(1)
            .validate(|r: &ReportBody| required_headings("markdown", &r.markdown, &SECTIONS))
            .validate(move |r: &ReportBody| citations_in_range(&r.markdown, n))
            .invoke(&[Message::user(prompts::synthesizer(&state.topic, &sources))])
            .await
        {
            Ok(body) => body.markdown,
            // No synthesis to show: the summaries gathered, unedited, and why.
            Err(e) => unsynthesized_body(&e.to_string(), &sources),
        }
    };
    let off_topic: Vec<&str> = state
        .facts
        .iter()
        .filter(|f| f.kind == FactKind::Note && f.content.starts_with(OFF_TOPIC_NOTE))
        .map(|f| f.content.as_str())
        .collect();
    let mut report = format!("# {}\n\n", state.topic.trim());
    for note in state
        .facts
        .iter()
        .filter(|f| f.kind == FactKind::Note && f.content.starts_with(PLAN_FALLBACK_NOTE))
    {
        report.push_str(&format!(
            "**Plan not the model's:** {}.\n\n",
            note.content.trim_start_matches(PLAN_FALLBACK_NOTE).trim()
        ));
    }
    let searched = !state.facts.iter().any(|f| {
        f.kind == FactKind::Note && f.content.contains("did not delegate the step to a worker")
    });
    if sources.is_empty() && !searched {
        // No step was handed to the worker: nothing was searched, which is not nothing found.
        report.push_str(
            "**Insufficient evidence.** No paper was gathered: a plan step was not handed to \
             the worker that searches (see \"What the run could not do\"); this report claims \
             nothing about the topic.\n\n",
        );
    } else if sources.is_empty() {
        report.push_str(&format!(
            "**Insufficient evidence.** No paper on this topic was found in the papers searched{}; \
             this report claims nothing about it.\n\n",
            if off_topic.is_empty() {
                String::new()
            } else {
                format!(" ({} found were off-topic and left out)", off_topic.len())
            }
        ));
    }
    report.push_str(body.trim());
    report.push('\n');
    if !off_topic.is_empty() {
        report.push_str("\n## Left out as off-topic\n\n");
        for note in &off_topic {
            report.push_str(&format!(
                "- {}\n",
                note.trim_start_matches(OFF_TOPIC_NOTE).trim()
            ));
        }
    }
    let missed: Vec<&str> = state
        .facts
        .iter()
        .filter(|f| {
            f.kind == FactKind::Note
                && !f.content.starts_with(OFF_TOPIC_NOTE)
                && !f.content.starts_with(PLAN_FALLBACK_NOTE)
        })
        .map(|f| f.content.as_str())
        .collect();
    if !missed.is_empty() {
        report.push_str("\n## What the run could not do\n\n");
        for note in &missed {
            report.push_str(&format!("- {}\n", note.trim()));
        }
    }
    let uncovered = uncovered_steps(&state);
    if !uncovered.is_empty() {
        report.push_str(&format!(
            "\n## Coverage\n\nNo new reference was admitted for plan step(s) {}.\n",
            uncovered.join(", ")
        ));
    }
    report.push_str("\n## Sources\n\n");
    for (n, fact) in &sources {
        report.push_str(&format!("{n}. {}\n", source_line(fact)));
    }
    Ok(ResearchStateUpdate::new()
        .facts(vec![Fact {
            source_agent: Some(SYNTHESIZER.into()),
            ..Fact::new(FactKind::Draft, report.clone())
        }])
        .messages(vec![Message::assistant(report)]))
}

/// The report's body when the synthesizer gave no acceptable report: it says so, and
/// lists each source's summary as the expander wrote it, claiming no synthesis.
fn unsynthesized_body(error: &str, sources: &[(usize, &Fact)]) -> String {
    let mut body = format!(
        "**Not synthesized.** The model's report could not be used ({}); the sections \
         Context, Techniques, Evidence, Limitations and Implications were not written. Below \
         are the summaries of the {} source(s) gathered, unedited; nothing beyond them is claimed.\n\n\
         ## Source summaries\n",
        crate::shared::truncate(&error.replace(['\n', '\r'], " "), 400),
        sources.len()
    );
    for (n, fact) in sources {
        body.push_str(&format!(
            "\n[{n}] *{}*: {}\n",
            fact.title.as_deref().unwrap_or("untitled"),
            fact.extended_summary.as_deref().unwrap_or("").trim()
        ));
    }
    body
}

/// Plan steps (1-based) with no admitted reference.
fn uncovered_steps(state: &ResearchState) -> Vec<String> {
    let steps = state.plan.as_ref().map_or(0, |p| p.steps.len());
    (0..steps)
        .filter(|&s| {
            !state
                .facts
                .iter()
                .any(|f| f.is_reference() && f.step_idx == Some(s))
        })
        .map(|s| (s + 1).to_string())
        .collect()
}

/// One entry of the sources list.
pub(crate) fn source_line(fact: &Fact) -> String {
    let who = match fact.authors.as_slice() {
        [] => String::new(),
        [one] => format!("{one}. "),
        [first, ..] => format!("{first} et al. "),
    };
    let year = fact.year.map(|y| format!(" ({y})")).unwrap_or_default();
    let link = fact
        .arxiv_id
        .as_deref()
        .map(|id| format!("arXiv:{id}"))
        .or_else(|| fact.doi.as_deref().map(|d| format!("doi:{d}")))
        .or_else(|| fact.url.clone())
        .unwrap_or_default();
    format!(
        "{who}*{}*{year}. {link}",
        fact.title.as_deref().unwrap_or("untitled")
    )
}

/// Every `[n]` in `markdown` is between 1 and `n`, and there is at least one when `n > 0`.
///
/// # Errors
/// A message for the model naming the bad citations.
pub(crate) fn citations_in_range(markdown: &str, n: usize) -> Result<(), String> {
    let cited = cited_numbers(markdown);
    let bad: Vec<String> = cited
        .iter()
        .filter(|&&c| c == 0 || c > n)
        .map(|c| format!("[{c}]"))
        .collect();
    if !bad.is_empty() {
        return Err(format!(
            "`markdown` cites {} but the sources are numbered 1 to {n}",
            bad.join(", ")
        ));
    }
    if n > 0 && cited.is_empty() {
        return Err("`markdown` cites no source; cite them inline as [1], [2], ...".into());
    }
    Ok(())
}

/// The numbers cited as `[n]` in `markdown`, in order.
pub fn cited_numbers(markdown: &str) -> Vec<usize> {
    let mut numbers = Vec::new();
    let mut rest = markdown;
    while let Some(open) = rest.find('[') {
        rest = &rest[open + 1..];
        if let Some(close) = rest.find(']')
            && let Ok(n) = rest[..close].trim().parse::<usize>()
        {
            numbers.push(n);
        }
    }
    numbers
}

/// `finish`: `done = true`.
pub async fn finish() -> ResearchStateUpdate {
    ResearchStateUpdate::new().done(true)
}
