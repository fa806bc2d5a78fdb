//! [`offline_model`]: the offline stand-in (a test double, not a model) for the
//! entity-intel research model, built on [`StandInModel`].

use graphkit_llm::{AssistantMessage, ChatRequest, Message, StandInModel, ToolCall};
use serde_json::{Value, json};

use crate::shared::prose::{names_in_full, sentences};

use super::prompts::{CURRENT_TODO_JSON, DIRECTIONS_MARKER, SUMMARY_MARKER};
use super::todo::{GeneratedTodo, GeneratedTodoList};

/// **Offline stand-in (a test double), not a language model.** A deterministic program
/// that plays the research model's part in the entity-intel graph so the workflow runs
/// with no key and no network (the default, `--model offline`).
///
/// It is a [`StandInModel`] answering as `offline-research-model` (its
/// [`requests`](StandInModel::requests) are the requests received so far;
/// [`with_delay`](StandInModel::with_delay) makes it wait like a model, for demos of
/// progress and resume and for tests that kill a run midway) that answers the three
/// kinds of call the graph makes by what each request asks for:
///
/// - **todo generation** (structured output, a [`GeneratedTodoList`]): it reads the
///   directions in the prompt and writes one todo per direction with the seed's id
///   convention; a prompt without a directions block fails the call;
/// - **agent turns** (a request offering tools): it reads the current todo from the
///   reminder (the node already chose it and marked it in progress) and the conversation
///   since the last context reset, and takes the next step of the seed's pattern:
///   `web_search` (entity name + direction + fields) → `web_extract` (the top results) →
///   `todo_update(completed)` and `agent_write_file` in one turn, with findings taken
///   from the extracted pages (`Label: value` lines, and sentences of prose that state a
///   field, with their source URLs). Like every `StandInModel` tool turn, each call must
///   name an offered tool with arguments that match its schema;
/// - **summaries** (the summarization prompt, free text): two sentences naming the todo
///   and file.
///
/// Everything it writes comes from the corpus and the todo; nothing is invented. It exists
/// so the graph, its tools, checkpoints and limits can be exercised end to end and tested
/// deterministically; use `--model` with a real provider for real research.
pub fn offline_model() -> StandInModel {
    StandInModel::new("offline-research-model")
        .try_on_structured(|request: &ChatRequest| generate_todos(request.last_user_text()))
        .on_tools(|request, _tools| agent_turn(&request.messages))
        .on_text(|request| {
            let prompt = request.last_user_text();
            if prompt.starts_with(SUMMARY_MARKER) {
                summarize(prompt)
            } else {
                "The offline research model only drives the entity-intel graph.".into()
            }
        })
}

fn generate_todos(prompt: &str) -> Result<GeneratedTodoList, &'static str> {
    let directions: Vec<Value> = prompt
        .split_once(DIRECTIONS_MARKER)
        .and_then(|(_, rest)| serde_json::from_str(rest.trim()).ok())
        .ok_or("no directions block in the todo-generation prompt")?;
    let todos = directions
        .iter()
        .map(|d| {
            let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            let list = |k: &str| {
                d.get(k)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default()
            };
            let mut description = format!(
                "Research {} ({}): {}",
                s("entityName"),
                s("entityType"),
                s("objective").trim_end_matches('.')
            );
            for (label, key) in [
                ("Fields to populate", "fieldsToExtract"),
                ("Source priorities", "sourcePriorities"),
                ("Acceptance criteria", "acceptanceCriteria"),
            ] {
                let items = list(key);
                if !items.is_empty() {
                    description.push_str(&format!(". {label}: {items}"));
                }
            }
            description.push('.');
            GeneratedTodo {
                id: s("todoId"),
                description,
                entity_type: d
                    .get("entityType")
                    .cloned()
                    .and_then(|v| serde_json::from_value(v).ok()),
                entity_name: Some(s("entityName")),
                priority: d
                    .get("priority")
                    .cloned()
                    .and_then(|v| serde_json::from_value(v).ok()),
            }
        })
        .collect();
    Ok(GeneratedTodoList { todos })
}

fn summarize(prompt: &str) -> String {
    let line = |label: &str| {
        prompt
            .lines()
            .find_map(|l| l.strip_prefix(label))
            .map(str::trim)
            .unwrap_or("(unknown)")
    };
    format!(
        "Researched {} for todo {} from the offline corpus and saved the structured findings to {}. \
         The next todo starts from this summary.",
        line("Entity:"),
        line("Todo ID:"),
        line("Output File:")
    )
}

/// The tool results since the last context reset, by tool name, in order.
fn results_since_reset(messages: &[Message]) -> Vec<(&str, &str, bool)> {
    let start = messages
        .iter()
        .rposition(|m| matches!(m, Message::System(_)))
        .map_or(0, |i| i + 1);
    messages[start..]
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((
                t.name.as_deref().unwrap_or(""),
                t.content.as_str(),
                t.is_error,
            )),
            _ => None,
        })
        .collect()
}

fn agent_turn(messages: &[Message]) -> AssistantMessage {
    // The node already chose the current todo and marked it in progress; the reminder
    // (the last user message) carries it.
    let todo = messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::User(_)))
        .and_then(|m| {
            m.text()
                .lines()
                .find_map(|l| l.strip_prefix(CURRENT_TODO_JSON))
                .and_then(|json| serde_json::from_str::<Value>(json).ok())
        });
    let Some(todo) = todo else {
        return AssistantMessage::text(
            "All todos are complete or blocked; nothing left to research.",
        );
    };
    // Only the work since the last successful write counts for this todo.
    let results = results_since_reset(messages);
    let start = results
        .iter()
        .rposition(|(name, _, err)| *name == "agent_write_file" && !err)
        .map_or(0, |i| i + 1);
    let after = &results[start..];
    let id = todo["id"].as_str().unwrap_or_default().to_owned();
    let has = |tool: &str| {
        after
            .iter()
            .find(|(name, _, err)| *name == tool && !err)
            .map(|(_, content, _)| *content)
    };

    let Some(search) = has("web_search") else {
        return ToolCall::new(
            "web_search",
            json!({"query": query_for(&todo), "max_results": 5}),
        )
        .into();
    };
    let urls = urls_to_read(search, todo["entityName"].as_str().unwrap_or_default());
    let extracted = has("web_extract");
    if extracted.is_none() && !urls.is_empty() {
        return ToolCall::new("web_extract", json!({"urls": urls})).into();
    }
    let pages = extracted.map(pages_of).unwrap_or_default();
    let findings = findings_for(&todo, &pages);
    let found = findings["fields"]
        .as_object()
        .map_or(0, |f| f.values().filter(|v| !v["value"].is_null()).count());
    let wanted = todo["fieldsToExtract"].as_array().map_or(0, Vec::len);
    let sources = findings["sources"].as_array().map_or(0, Vec::len);
    let list = |key: &str, part: &str| {
        let items: Vec<&str> = findings[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().or_else(|| v[part].as_str()))
            .collect();
        items.join(", ")
    };
    let mut notes = if sources == 0 {
        format!(
            "No source about {} was found among the {} search result(s) read; all {wanted} fields are recorded as unavailable.",
            todo["entityName"].as_str().unwrap_or(""),
            urls.len()
        )
    } else {
        format!("{found} of {wanted} fields found in {sources} source(s).")
    };
    if sources > 0 && found < wanted {
        notes.push_str(&format!(
            " Not stated in the sources read: {}.",
            list("missingFields", "")
        ));
    }
    let disputed = list("conflicts", "field");
    if !disputed.is_empty() {
        notes.push_str(&format!(
            " Sources disagree on: {disputed} (both values kept in the file)."
        ));
    }
    // A todo with a field not found is not done: it is blocked, with the reason.
    let status = if found < wanted {
        "blocked"
    } else {
        "completed"
    };
    let filename = todo["outputFile"]
        .as_str()
        .map_or_else(|| format!("{id}.json"), str::to_owned);
    vec![
            ToolCall::new(
                "todo_update",
                json!({"todo_id": id, "status": status, "notes": notes}),
            ),
            ToolCall::new(
                "agent_write_file",
                json!({
                    "filename": filename,
                    "content": serde_json::to_string_pretty(&findings).unwrap_or_default(),
                    "description": format!("{} for {}", todo["directionKey"].as_str().unwrap_or(""), todo["entityName"].as_str().unwrap_or("")),
                }),
            ),
        ]
        .into()
}

/// The hits of a `web_search` reply (`N. title` / `   url` / `   snippet` blocks), in
/// order, as `(title and snippet, url)`.
fn result_hits(reply: &str) -> Vec<(String, String)> {
    let lines: Vec<&str> = reply.lines().collect();
    (0..lines.len().saturating_sub(1))
        .filter(|&i| {
            lines[i]
                .split_once(". ")
                .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .map(|i| {
            let snippet = lines.get(i + 2).copied().unwrap_or_default();
            (
                format!("{}\n{snippet}", lines[i]),
                lines[i + 1].trim().to_owned(),
            )
        })
        .filter(|(_, u)| u.contains("://"))
        .collect()
}

/// The pages to read from a `web_search` reply: every hit whose title or snippet names the
/// entity in full (wherever the ranking put it), then the top hits up to three, so a page
/// about the entity ranked below other pages is read before concluding nothing was found.
fn urls_to_read(reply: &str, entity: &str) -> Vec<String> {
    let hits = result_hits(reply);
    let mut urls: Vec<String> = hits
        .iter()
        .filter(|(text, _)| names_in_full(text, entity))
        .map(|(_, url)| url.clone())
        .collect();
    for (_, url) in &hits {
        if urls.len() >= 3 {
            break;
        }
        if !urls.contains(url) {
            urls.push(url.clone());
        }
    }
    urls
}

/// The pages of a `web_extract` reply (`# title` / `url` / blank / content, pages
/// separated by `---` lines), as `{url, title, content}`.
fn pages_of(reply: &str) -> Vec<Value> {
    reply
        .split("\n\n---\n\n")
        .filter_map(|page| {
            let mut lines = page.lines();
            let title = lines.next()?.trim_start_matches("# ").to_owned();
            let url = lines.next()?.trim().to_owned();
            let content = lines.collect::<Vec<_>>().join("\n");
            Some(json!({"url": url, "title": title, "content": content}))
        })
        .collect()
}

/// `camelCase` → `camel case`.
fn words(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if c.is_uppercase() && !out.is_empty() {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

fn query_for(todo: &Value) -> String {
    let mut query = format!(
        "{} {}",
        todo["entityName"].as_str().unwrap_or(""),
        words(todo["directionKey"].as_str().unwrap_or(""))
    );
    for field in todo["fieldsToExtract"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(4)
    {
        let field = words(field);
        query.push(' ');
        query.push_str(&field);
        // Singular forms too (`rounds` → `round`): the corpus search does not stem.
        for word in field.split_whitespace().filter(|w| w.len() > 4) {
            if let Some(singular) = word.strip_suffix('s') {
                query.push(' ');
                query.push_str(singular);
            }
        }
    }
    query
}

/// One page's answer for a field: the value, the page's URL, and the passage (the
/// `Label: value` line or the sentence) it was read from.
struct Candidate {
    value: String,
    url: Value,
    passage: String,
}

impl Candidate {
    fn to_json(&self) -> Value {
        json!({"value": self.value, "sourceUrl": self.url, "passage": self.passage})
    }
}

/// Whether a field holds one value (`foundedYear`, `headquarters`, `chiefExecutive`), so
/// two sources giving two values disagree; a plural field (`founders`, `rounds`,
/// `synonyms`) may collect several.
fn single_valued(field: &str) -> bool {
    let label = words(field);
    let last = label.split_whitespace().last().unwrap_or_default();
    last == "headquarters" || !last.ends_with('s') || last.ends_with("ss")
}

/// Whether two values state the same thing: one names the other in full (`Leeds` and
/// `Leeds, United Kingdom`), ignoring case and punctuation.
fn agree(a: &str, b: &str) -> bool {
    names_in_full(a, b) || names_in_full(b, a)
}

/// What a page says for `label`: a `Label: value` line first, then a sentence of prose
/// with a cue for the field. On a page that is not about the entity (`about` false: its
/// title and lead do not name it), only sentences that name it count.
fn candidate_on(page: &Value, label: &str, entity: &str, about: bool) -> Option<Candidate> {
    let content = page["content"].as_str()?;
    let labelled = about
        .then(|| {
            content.lines().find_map(|line| {
                value_after_label(line, label).map(|v| (v, line.trim().to_owned()))
            })
        })
        .flatten();
    let (value, passage) = labelled.or_else(|| {
        value_in_prose(content, label).filter(|(_, s)| about || names_in_full(s, entity))
    })?;
    Some(Candidate {
        value,
        url: page["url"].clone(),
        passage,
    })
}

/// The structured output: each field's value with the URL and the passage it was read
/// from, and every disagreement between two pages on a single-valued field (both values,
/// both sources, both passages; the first page's value is shown, marked as disputed).
///
/// Pages about the entity (its name in the title or the lead) are read first and whole;
/// pages that only mention it count for the sentences that name it, so a similarly named
/// company or a neighbouring search hit does not leak into the output.
fn findings_for(todo: &Value, pages: &[Value]) -> Value {
    let entity = todo["entityName"].as_str().unwrap_or_default();
    let name = entity.to_lowercase();
    let mentions = |p: &&Value, key: &str| {
        p[key]
            .as_str()
            .is_some_and(|t| t.to_lowercase().contains(&name))
    };
    // A page is about the entity when its title or its lead (first sentence) names it.
    let leads = |p: &&Value| {
        p["content"].as_str().is_some_and(|c| {
            c.split("\n\n")
                .map(str::trim)
                .find(|para| !para.is_empty() && !para.starts_with('#'))
                .and_then(|para| sentences(para).into_iter().next())
                .is_some_and(|lead| names_in_full(&lead, entity))
        })
    };
    let about = |p: &&Value| mentions(p, "title") || leads(p);
    let pages: Vec<(&Value, bool)> = pages
        .iter()
        .filter(|p| about(p))
        .map(|p| (p, true))
        .chain(
            pages
                .iter()
                .filter(|p| !about(p) && mentions(p, "content"))
                .map(|p| (p, false)),
        )
        .collect();
    let mut fields = serde_json::Map::new();
    let mut missing = Vec::new();
    let mut conflicts = Vec::new();
    for field in todo["fieldsToExtract"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let label = words(field);
        let found: Vec<Candidate> = pages
            .iter()
            .filter_map(|(page, about)| candidate_on(page, &label, entity, *about))
            .collect();
        let Some(first) = found.first() else {
            fields.insert(
                field.to_owned(),
                json!({"value": null, "note": "not found in the sources read"}),
            );
            missing.push(field.to_owned());
            continue;
        };
        let mut entry = first.to_json();
        if single_valued(field) {
            let mut disputed: Vec<&Candidate> = vec![first];
            for other in &found[1..] {
                if !disputed.iter().any(|c| agree(&c.value, &other.value)) {
                    disputed.push(other);
                }
            }
            if disputed.len() > 1 {
                let values: Vec<Value> = disputed.iter().map(|c| c.to_json()).collect();
                entry["disputed"] = json!(true);
                entry["conflictingValues"] = json!(values);
                conflicts.push(json!({"field": field, "values": values}));
            }
        }
        fields.insert(field.to_owned(), entry);
    }
    json!({
        "todoId": todo["id"],
        "entity": {"name": todo["entityName"], "type": todo["entityType"]},
        "directionKey": todo["directionKey"],
        "fields": fields,
        "missingFields": missing,
        "conflicts": conflicts,
        "sources": pages.iter().map(|(p, _)| json!({"url": p["url"], "title": p["title"]})).collect::<Vec<_>>(),
        "researchedBy": "offline-research-model (deterministic stand-in)",
    })
}

/// `- **Legal name:** Halvard Biosciences AB` with label `legal name` → `Halvard Biosciences AB`.
fn value_after_label(line: &str, label: &str) -> Option<String> {
    let clean = line.replace("**", "");
    let clean = clean.trim().trim_start_matches(['-', '*', '|']).trim();
    let (head, value) = clean.split_once(':')?;
    let head = head.trim().to_lowercase();
    (head == label || head.split(" (").next() == Some(label))
        .then(|| value.trim().trim_end_matches('|').trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Text after `cue` in `sentence` (case-insensitive), up to the end of the clause (a
/// comma, semicolon or parenthesis; a full stop only at the end, so "Dr. Mira Osei" and
/// "EUR 2.5 million" stay whole, and "Brightfen Robotics Inc." keeps its "Inc.").
fn after_cue(sentence: &str, cue: &str) -> Option<String> {
    let at = sentence.to_lowercase().find(cue)? + cue.len();
    let rest = sentence.get(at..)?;
    let end = rest.find([',', ';', '(', ')']).unwrap_or(rest.len());
    let value = rest[..end].trim();
    let abbreviated = ["Inc.", "Ltd.", "Co.", "Corp.", "Jr.", "Sr."]
        .iter()
        .any(|a| value.ends_with(a));
    let value = if abbreviated {
        value
    } else {
        value.trim_end_matches('.')
    };
    Some(value.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Text after `then` that follows `first` in `sentence` (`founded in 2017 by X` with
/// `founded` and ` by `), up to the end of the clause.
fn after_cues(sentence: &str, first: &str, then: &str) -> Option<String> {
    let at = sentence.to_lowercase().find(first)?;
    after_cue(sentence.get(at..)?, then)
}

/// A person's role and organisation from `is the ROLE of ORG` (or `at ORG`, `serves as`,
/// `works as`).
fn role_and_organisation(sentence: &str) -> Option<(String, Option<String>)> {
    let clause = [" is the ", " is a ", " is an ", " serves as ", " works as "]
        .iter()
        .find_map(|cue| after_cue(sentence, cue))?;
    let split = [" of ", " at "]
        .iter()
        .filter_map(|sep| clause.find(sep).map(|at| (at, sep.len())))
        .min();
    Some(match split {
        Some((at, len)) => (
            clause[..at].trim().to_owned(),
            Some(clause[at + len..].trim().to_owned()).filter(|o| !o.is_empty()),
        ),
        None => (clause, None),
    })
}

/// The degree a sentence states, from the degree's name to the end of the clause (`PhD in
/// mechanical engineering from the University of Leeds`).
fn degree_in(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    let at = [
        "phd",
        "doctorate",
        "master",
        "bachelor",
        "msc",
        "bsc",
        "mba",
        "degree in",
    ]
    .iter()
    .filter_map(|d| {
        lower
            .match_indices(d)
            .find(|(i, _)| *i == 0 || !lower[..*i].ends_with(char::is_alphanumeric))
            .map(|(i, _)| i)
    })
    .min()?;
    let rest = sentence.get(at..)?;
    let end = rest.find([',', ';', '(']).unwrap_or(rest.len());
    let value = rest[..end].trim().trim_end_matches('.').trim();
    Some(value.to_owned()).filter(|v| !v.is_empty())
}

/// A field's value stated in a sentence of prose, for the field's label (`lead investors`,
/// `rounds`, `headquarters`, `founded year`, ...), with the sentence it was read from: cue
/// phrases for common kinds of facts (`led by X`, `raised X`, `X-based`, `founded ... in
/// YYYY`). A field with no cue phrase has no value in prose: a sentence that merely
/// mentions the field's name is not its value, so the field is left missing.
fn value_in_prose(content: &str, label: &str) -> Option<(String, String)> {
    let sentences = sentences(content);
    let has = |w: &str| label.contains(w);
    let first = |f: &dyn Fn(&str) -> Option<String>| {
        sentences.iter().find_map(|s| f(s).map(|v| (v, s.clone())))
    };
    if has("investor") {
        first(&|s| after_cue(s, "led by "))
    } else if has("round") || has("funding") || has("raised") {
        first(&|s| after_cue(s, "raised "))
    } else if has("founder") {
        first(&|s| after_cues(s, "founded", " by "))
    } else if has("previous") || has("former") || has("past") {
        first(&|s| {
            after_cue(s, "previously worked as ")
                .or_else(|| after_cue(s, "previously "))
                .or_else(|| after_cue(s, "formerly "))
        })
    } else if has("role") || has("title") || has("position") {
        first(&|s| role_and_organisation(s).map(|(role, _)| role))
    } else if has("affiliation") || has("employer") || has("organization") {
        first(&|s| role_and_organisation(s).and_then(|(_, org)| org))
    } else if has("education") || has("degree") {
        first(&degree_in)
    } else if has("year") && (has("found") || has("launch")) {
        let cue = if has("found") { "founded" } else { "launched" };
        first(&|s| {
            let lower = s.to_lowercase();
            let at = lower.find(cue)?;
            lower[at..]
                .split(|c: char| !c.is_ascii_digit())
                .find(|w| w.len() == 4 && (w.starts_with("19") || w.starts_with("20")))
                .map(str::to_owned)
        })
    } else if has("headquarters") || has("location") {
        first(&|s| {
            after_cue(s, "headquartered in ")
                .or_else(|| after_cue(s, "based in "))
                .or_else(|| {
                    let at = s.find("-based ")?;
                    s[..at].split_whitespace().last().map(str::to_owned)
                })
        })
    } else if has("chief executive") || has("ceo") {
        first(&|s| {
            after_cue(s, "chief executive officer ")
                .or_else(|| after_cue(s, "chief executive "))
                .or_else(|| after_cue(s, "ceo "))
                .and_then(|v| person_name_at_start(&v))
        })
    } else {
        None
    }
}

/// The capitalised words a text starts with, when there are two or more (`Tobias Achebe
/// said on Tuesday` → `Tobias Achebe`): a person's name after a title.
fn person_name_at_start(text: &str) -> Option<String> {
    let name: Vec<&str> = text
        .split_whitespace()
        .take_while(|w| w.starts_with(char::is_uppercase))
        .map(|w| w.trim_end_matches([',', '.', ';']))
        .collect();
    (name.len() >= 2).then(|| name.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphkit_llm::{ChatModel, LlmError};

    #[test]
    fn labels_match_markdown_fact_lines() {
        assert_eq!(
            value_after_label("- **Legal name:** Halvard Biosciences AB", "legal name").as_deref(),
            Some("Halvard Biosciences AB")
        );
        assert_eq!(
            value_after_label("Founded year: 2014", "founded year").as_deref(),
            Some("2014")
        );
        assert_eq!(value_after_label("Nothing here", "legal name"), None);
        assert_eq!(words("legalName"), "legal name");
    }

    fn value_of(content: &str, label: &str) -> Option<String> {
        value_in_prose(content, label).map(|(value, _)| value)
    }

    #[test]
    fn prose_sentences_answer_fields_without_labels() {
        let page = "# Corvane Labs raises GBP 28m\n\nCambridge-based Corvane Labs has raised GBP 28 million in a Series B round led by Fenbridge\nVentures, chief executive Tobias Achebe said on Tuesday.\n\nThe company was founded in 2018.";
        assert_eq!(
            value_of(page, "lead investors").as_deref(),
            Some("Fenbridge Ventures")
        );
        assert_eq!(
            value_of(page, "rounds").as_deref(),
            Some("GBP 28 million in a Series B round led by Fenbridge Ventures")
        );
        assert_eq!(value_of(page, "headquarters").as_deref(), Some("Cambridge"));
        assert_eq!(value_of(page, "founded year").as_deref(), Some("2018"));
        let person = "# Mira Osei\n\nDr. Mira Osei is the chief technology officer of Brightfen Robotics Inc., \
                      which she co-founded in 2017 with Tomas Lind. She holds a PhD in mechanical engineering \
                      from the University of Leeds (2014) and previously worked as a research engineer at \
                      Kestrel Automation.";
        assert_eq!(
            value_of(person, "current role").as_deref(),
            Some("chief technology officer")
        );
        assert_eq!(
            value_of(person, "affiliation").as_deref(),
            Some("Brightfen Robotics Inc.")
        );
        assert_eq!(
            value_of(person, "education").as_deref(),
            Some("PhD in mechanical engineering from the University of Leeds")
        );
        assert_eq!(
            value_of(person, "previous roles").as_deref(),
            Some("a research engineer at Kestrel Automation")
        );
        assert_eq!(
            value_of(
                "It was founded in 2017 by Dr. Mira Osei and Tomas Lind.",
                "founders"
            )
            .as_deref(),
            Some("Dr. Mira Osei and Tomas Lind")
        );
        assert_eq!(value_of(page, "patent count"), None);
        assert_eq!(
            value_of(page, "chief executive").as_deref(),
            Some("Tobias Achebe")
        );
    }

    #[test]
    fn a_field_without_a_cue_is_missing_not_a_sentence_that_mentions_it() {
        let page = "# Brightfen\n\nThe Brightfen website went live in 2019. Its product line grew.";
        assert_eq!(value_of(page, "website"), None);
        assert_eq!(value_of(page, "product name"), None);
        // The passage of a value is the sentence it was read from.
        let (value, passage) =
            value_in_prose("Brightfen is a Leeds-based maker. It grew.", "headquarters").unwrap();
        assert_eq!(
            (value.as_str(), passage.as_str()),
            ("Leeds", "Brightfen is a Leeds-based maker.")
        );
    }

    #[test]
    fn plural_fields_collect_and_single_valued_fields_conflict() {
        assert!(single_valued("foundedYear") && single_valued("headquarters"));
        assert!(single_valued("compoundClass") && single_valued("chiefExecutive"));
        assert!(!single_valued("founders") && !single_valued("leadInvestors"));
        assert!(agree("Leeds", "Leeds, United Kingdom") && !agree("Leeds", "York"));
    }

    #[test]
    fn reads_search_and_extract_replies() {
        let search = "1. About Acme\n   corpus://acme.md\n   Acme makes ...\n\n2. Other\n   corpus://b.md\n   ...";
        assert_eq!(
            urls_to_read(search, "Acme"),
            ["corpus://acme.md", "corpus://b.md"]
        );
        let ranked_low = "1. Other\n   corpus://b.md\n   ...\n\n2. Another\n   corpus://c.md\n   ...\n\n\
                          3. Third\n   corpus://d.md\n   ...\n\n4. Profile\n   corpus://e.md\n   Mira Osei, the CTO";
        assert_eq!(
            urls_to_read(ranked_low, "Mira Osei"),
            ["corpus://e.md", "corpus://b.md", "corpus://c.md"]
        );
        let pages = pages_of(
            "# About Acme\ncorpus://acme.md\n\n- Legal name: Acme AB\n\n---\n\n# B\ncorpus://b.md\n\ntext",
        );
        assert_eq!(pages.len(), 2);
        assert_eq!(pages[0]["url"], "corpus://acme.md");
        assert!(
            pages[0]["content"]
                .as_str()
                .is_some_and(|c| c.contains("Legal name"))
        );
    }

    #[tokio::test]
    async fn writes_todos_from_the_directions_block_or_fails_without_one() {
        let model = offline_model();
        let directions = json!([{
            "todoId": "biz_acme_businessIdentityOverview", "entityName": "Acme",
            "entityType": "BUSINESS", "objective": "Confirm the identity.",
            "fieldsToExtract": ["legalName", "headquarters"], "priority": "high"
        }]);
        let list = model
            .clone()
            .with_structured_output::<GeneratedTodoList>()
            .invoke(&[Message::user(format!(
                "Plan.\n{DIRECTIONS_MARKER}\n{directions}"
            ))])
            .await
            .unwrap();
        assert_eq!(list.todos.len(), 1);
        assert_eq!(list.todos[0].id, "biz_acme_businessIdentityOverview");
        assert_eq!(
            list.todos[0].entity_type,
            Some(crate::entity_intel::input::EntityType::Business)
        );
        assert_eq!(
            list.todos[0].description,
            "Research Acme (BUSINESS): Confirm the identity. Fields to populate: legalName, headquarters."
        );
        let err = model
            .clone()
            .with_structured_output::<GeneratedTodoList>()
            .retries(0)
            .invoke(&[Message::user("Plan, with no directions.")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::StandIn { problem, .. }
                if problem.contains("no directions block in the todo-generation prompt")),
            "{err}"
        );
        assert_eq!(model.requests().len(), 2);
    }
}
