//! The prompts of the arXiv research workflow. The offline stand-in reads the labelled
//! lines (`Topic:`, `Task:`, `Title:`, `SOURCE TEXT:`, `SOURCES:`) the same way a model
//! does: from the request text.

use super::state::{Fact, Plan, PlanStep};

/// The marker that opens a worker's deliverable.
pub const DELIVERABLE: &str = "==DELIVERABLE==";
/// The first words of a plan step message.
pub(crate) const PLAN_STEP: &str = "PLAN STEP";
/// The report's sections, in order (the seed's).
pub const SECTIONS: [&str; 5] = [
    "Context",
    "Techniques",
    "Evidence",
    "Limitations",
    "Implications",
];

/// The planner's request.
pub fn planner(topic: &str, max_steps: usize) -> String {
    format!(
        "You plan a literature review on arXiv.\nTopic: {topic}\n\n\
         Return a plan: `main_query` (a short arXiv search query for the topic), between 1 and \
         {max_steps} ordered `steps` (each a `task` that a researcher can do with arXiv search, \
         and its `expected_output`), and `success_criteria` (a list)."
    )
}

/// The PLAN STEP message for step `idx` (0-based) of `plan`.
pub fn plan_step(topic: &str, plan: &Plan, idx: usize, step: &PlanStep) -> String {
    format!(
        "{PLAN_STEP} {n}/{total}\nTopic: {topic}\nMain query: {query}\nTask: {task}\nExpected output: {expected}\n\n\
         Delegate this step to exactly one worker. The worker searches arXiv, records at most 3 \
         high-signal papers with add_scholar_reference_tool, and ends its answer with a strict \
         block that starts with the line {DELIVERABLE} followed by the expected output.",
        n = idx + 1,
        total = plan.steps.len(),
        query = plan.main_query,
        task = step.task,
        expected = step.expected_output,
    )
}

/// The supervisor's system prompt.
pub(crate) const SUPERVISOR: &str = "You supervise a research team. For each PLAN STEP, hand the step \
to exactly one worker (today: arxiv_agent) with its transfer tool, once. When the worker has \
answered, reply with one short sentence saying the step is done. Be terse and stay within the \
current step.";

/// The worker's system prompt.
pub(crate) const WORKER: &str = "You are arxiv_agent. For the current PLAN STEP: search arXiv with \
arxiv_search (one or two queries), record at most 3 high-signal papers with \
add_scholar_reference_tool (give arxiv_id, title, authors, year and abstract from the search \
results), then answer with a block that starts with the line ==DELIVERABLE== and gives the \
step's expected output, citing the papers by arXiv id.";

/// The expander's request for one paper.
pub fn expander(
    topic: &str,
    main_query: &str,
    reference: &Fact,
    source: &str,
    text: &str,
) -> String {
    format!(
        "Write a focused extended summary (150 to 300 words) of this paper for a review.\n\
         Topic: {topic}\nMain query: {main_query}\nTitle: {title}\nSource of the text: {source}\n\
         Say what the paper does, how, what evidence it gives, and its limits, as they bear on \
         the topic. Return `summary`.\n\nSOURCE TEXT:\n{text}",
        title = reference.title.as_deref().unwrap_or_default(),
    )
}

/// The synthesizer's request; `sources` are numbered from 1.
pub fn synthesizer(topic: &str, sources: &[(usize, &Fact)]) -> String {
    let list: String = sources
        .iter()
        .map(|(n, fact)| {
            format!(
                "[{n}] {}\n{}\n\n",
                fact.title.as_deref().unwrap_or_default(),
                fact.extended_summary.as_deref().unwrap_or_default()
            )
        })
        .collect();
    format!(
        "Write a research report in Markdown on the topic below, using only these sources.\n\
         Topic: {topic}\n\
         Use exactly these sections as `##` headings, in order: {sections}. Cite sources inline as \
         [1], [2], ... by their numbers; cite only numbers from the list. Do not write the sources \
         list: it is added for you. Return `markdown`.\n\nSOURCES:\n{list}",
        sections = SECTIONS.join(", "),
    )
}
