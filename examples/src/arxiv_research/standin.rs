//! The offline stand-in for every role, built on [`StandInModel`]: **a test double, not a
//! language model**. It reads the same requests a model would get and answers through
//! the same paths — a structured `Plan`, real handoff and tool calls checked against the
//! offered tools' schemas, validated summaries and reports — so the graph runs offline
//! exactly as it does with a model.

use graphkit_llm::{AssistantMessage, ChatRequest, Message, StandInModel, ToolCall, ToolSpec};
use serde_json::json;

use super::nodes::{ExtendedSummary, ReportBody, cited_numbers};
use super::prompts::{DELIVERABLE, PLAN_STEP, SECTIONS};
use super::state::{Plan, PlanStep};
use super::tools::{ADD_REFERENCE, ARXIV_SEARCH, SearchHit};

/// The name of the supervisor's handoff tool to the worker.
const HANDOFF: &str = "transfer_to_arxiv_agent";

/// The offline stand-in playing planner, supervisor, worker, expander and synthesizer.
/// `adds_per_step` is how many papers the worker records per step (3, the prompt's
/// limit; tests raise it to check the fact gate).
pub fn offline_model(adds_per_step: usize) -> StandInModel {
    StandInModel::new("arxiv-research-offline")
        .on_structured(|req: &ChatRequest| plan_for(&labelled(req.last_user_text(), "Topic:")))
        .on_structured(|req: &ChatRequest| ExtendedSummary {
            summary: summary_for(req.last_user_text()),
        })
        .on_structured(|req: &ChatRequest| ReportBody {
            markdown: report_for(req.last_user_text()),
        })
        .on_tools(move |req, tools| {
            if offers(tools, HANDOFF) {
                supervisor_turn(req)
            } else if offers(tools, ARXIV_SEARCH) {
                worker_turn(req, adds_per_step)
            } else {
                AssistantMessage::text("(offline stand-in: no policy for these tools)")
            }
        })
}

fn offers(tools: &[ToolSpec], name: &str) -> bool {
    tools.iter().any(|t| t.name == name)
}

/// The text after `label` on its line.
fn labelled(text: &str, label: &str) -> String {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Three steps from the topic: methods, evidence, limitations.
fn plan_for(topic: &str) -> Plan {
    let step = |task: String, expected: &str| PlanStep {
        task,
        expected_output: expected.to_owned(),
    };
    Plan {
        main_query: topic.to_owned(),
        steps: vec![
            step(
                format!("Find the main methods and architecture of {topic}"),
                "The key techniques, each with a representative paper.",
            ),
            step(
                format!("Find evaluation benchmarks and evidence for {topic}"),
                "The benchmarks used and the strongest reported results.",
            ),
            step(
                format!("Find limitations and failure modes of {topic}"),
                "The known limitations, with the papers that show them.",
            ),
        ],
        success_criteria: vec![
            "Every section cites at least one paper.".into(),
            "Limitations are backed by evidence.".into(),
        ],
    }
}

/// The messages after the last PLAN STEP.
fn since_step(req: &ChatRequest) -> &[Message] {
    let start = req
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::User(_)) && m.text().starts_with(PLAN_STEP))
        .map_or(0, |at| at + 1);
    &req.messages[start..]
}

/// Supervisor: hand the step to the worker once, then say it is done.
fn supervisor_turn(req: &ChatRequest) -> AssistantMessage {
    let handed_off = since_step(req)
        .iter()
        .any(|m| matches!(m, Message::Tool(t) if t.name.as_deref() == Some(HANDOFF)));
    if handed_off {
        AssistantMessage::text("Step done.")
    } else {
        ToolCall::new(HANDOFF, json!({})).into()
    }
}

/// Worker: search with the step's task, record the first `adds` papers, then deliver.
fn worker_turn(req: &ChatRequest, adds: usize) -> AssistantMessage {
    let turn = since_step(req);
    let task = req
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::User(_)) && m.text().starts_with(PLAN_STEP))
        .map(|m| labelled(m.text(), "Task:"))
        .unwrap_or_default();
    let result_of = |name: &str| {
        turn.iter().find_map(|m| match m {
            Message::Tool(t) if t.name.as_deref() == Some(name) => Some(t.content.clone()),
            _ => None,
        })
    };
    let Some(found) = result_of(ARXIV_SEARCH) else {
        return ToolCall::new(ARXIV_SEARCH, json!({ "query": task })).into();
    };
    let hits: Vec<SearchHit> = serde_json::from_str(&found).unwrap_or_default();
    if result_of(ADD_REFERENCE).is_none() && !hits.is_empty() {
        let calls: Vec<ToolCall> = hits
            .iter()
            .take(adds)
            .map(|hit| ToolCall::new(ADD_REFERENCE, reference_args(hit, &task)))
            .collect();
        return calls.into();
    }
    let lines: String = hits
        .iter()
        .take(adds)
        .map(|h| format!("- {} ({})\n", h.title, cited_as(h)))
        .collect();
    if lines.is_empty() {
        return AssistantMessage::text(format!("{DELIVERABLE}\nNo paper found for: {task}"));
    }
    AssistantMessage::text(format!("{DELIVERABLE}\n{task}:\n{lines}"))
}

/// The arguments recording `hit`. The stand-in cites the version of record: a paper
/// arXiv lists as published (a DOI, a journal URL or a journal reference) is cited by its
/// `doi` and journal `url` only — by title and year alone when it has just a journal
/// reference — so two arXiv entries of one publication meet at the DOI, URL or
/// title|year key; any other paper is cited by its `arxiv_id`.
fn reference_args(hit: &SearchHit, task: &str) -> serde_json::Value {
    let mut args = json!({
        "title": hit.title,
        "authors": hit.authors,
        "year": hit.year,
        "abstract": hit.abstract_text,
        "why": format!("relevant to: {task}"),
    });
    if hit.doi.is_some() || hit.url.is_some() || hit.journal_ref.is_some() {
        args["doi"] = json!(hit.doi);
        args["url"] = json!(hit.url);
    } else {
        args["arxiv_id"] = json!(hit.arxiv_id);
    }
    args
}

/// How the deliverable names the cited version of `hit`.
fn cited_as(hit: &SearchHit) -> String {
    match (&hit.doi, &hit.url, &hit.journal_ref) {
        (Some(doi), _, _) => format!("doi:{doi}"),
        (None, Some(url), _) => url.clone(),
        (None, None, Some(journal_ref)) => journal_ref.clone(),
        (None, None, None) => format!("arXiv:{}", hit.arxiv_id),
    }
}

/// A 150–300-word summary assembled from the source text (an extract, not a reading).
fn summary_for(request: &str) -> String {
    let title = labelled(request, "Title:");
    let topic = labelled(request, "Topic:");
    let source = labelled(request, "Source of the text:");
    let text = request
        .split_once("SOURCE TEXT:")
        .map_or("", |(_, t)| t)
        .split_whitespace()
        .collect::<Vec<_>>();
    let mut words: Vec<String> = format!(
        "Offline extract of \"{title}\" for the topic {topic}, taken from its {source} text. \
         The following sentences are the source's own words, kept in order:"
    )
    .split_whitespace()
    .map(str::to_owned)
    .collect();
    let mut cycle = text.iter().cycle();
    while words.len() < 180 && !text.is_empty() {
        if let Some(word) = cycle.next() {
            words.push((*word).to_owned());
        }
    }
    while words.len() < 160 {
        words.push("(no text)".to_owned());
    }
    words.truncate(280);
    words.join(" ")
}

/// The five sections, each citing the sources of the request by number.
fn report_for(request: &str) -> String {
    let sources: Vec<(usize, String)> = request
        .split_once("SOURCES:")
        .map_or("", |(_, s)| s)
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix('[')?;
            let (n, title) = rest.split_once(']')?;
            Some((n.parse().ok()?, title.trim().to_owned()))
        })
        .collect();
    let topic = labelled(request, "Topic:");
    let cite = |from: usize| -> String {
        let picked: Vec<&(usize, String)> = sources.iter().skip(from).step_by(2).collect();
        let picked = if picked.is_empty() {
            sources.iter().collect()
        } else {
            picked
        };
        picked
            .iter()
            .map(|(n, title)| format!("*{title}* [{n}]"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let body: Vec<String> = SECTIONS
        .iter()
        .enumerate()
        .map(|(at, section)| {
            format!(
                "## {section}\n\n(Offline stand-in text.) On {topic}, the {section_lower} draws on: {}.\n",
                cite(at % 2),
                section_lower = section.to_lowercase()
            )
        })
        .collect();
    let report = body.join("\n");
    debug_assert!(cited_numbers(&report).iter().all(|n| *n >= 1));
    report
}
