//! `verify_findings`: the graph's check of what the model wrote, after the research and
//! before the report, whatever the model is. Every reported value must come with the URL
//! of a source and a passage quoted from it; the source is read again (through the same
//! search backend the agent used), and the value counts as verified only when
//!
//! - the source can be read and names the entity in full,
//! - the passage occurs in it (white space, case and punctuation ignored), and
//! - the value occurs in the passage (each part of a list or object value), and the
//!   passage says more than the value alone.
//!
//! A value that fails is moved out of `value` (to `unverifiedValue`, with the reason in
//! `unverified`), so the output never keeps it as a fact; a dispute stands only between
//! verified values that differ. The counts go into the report, and a completed todo none
//! of whose fields could be verified is blocked (skipped when optional), not completed.

use std::collections::BTreeMap;
use std::sync::Arc;

use graphkit::error::BoxError;
use graphkit::{KeyedUpdate, NodeContext, RunContext};
use graphkit_tools::prebuilt::search::SearchBackend;
use serde_json::{Map, Value, json};

use super::output_folder::OutputFolder;
use super::state::{
    EntityIntelResearchState, EntityIntelResearchStateUpdate, FindingsCheck, OutputCheck,
    ResearchOutput, Unverified,
};
use super::todo::{TodoItem, TodoStatus};
use crate::shared::prose::{WordForm, names_in_full};
use crate::shared::run_dir::write_json_atomic;

/// The node's name.
pub(crate) const VERIFY_FINDINGS: &str = "verify_findings";

/// The backend the sources are read again through (the agent's `web_extract` backend).
pub(crate) struct SourceReader(pub(crate) Arc<dyn SearchBackend>);

/// The sources' text, by the URL the output cites: `Err` says why one could not be read.
pub(crate) type SourcePages = BTreeMap<String, Result<Page, String>>;

/// A source read again: its title and text, as written (to ask whether it names the
/// entity) and in word form (to find passages in).
pub(crate) struct Page {
    text: String,
    words: WordForm,
}

impl Page {
    /// A page with this title and content.
    pub(crate) fn new(title: Option<&str>, content: &str) -> Self {
        let text = match title {
            Some(title) => format!("{title}\n{content}"),
            None => content.to_owned(),
        };
        Self {
            words: WordForm::of(&text),
            text,
        }
    }
}

/// `verify_findings`: reads the cited sources again, checks every output (the last one
/// written for each todo), rewrites each output file with the unverified values marked,
/// and blocks completed todos none of whose fields were verified.
pub(crate) async fn verify_findings(
    state: Arc<EntityIntelResearchState>,
    ctx: NodeContext,
    reader: RunContext<SourceReader>,
    outputs: RunContext<OutputFolder>,
) -> Result<EntityIntelResearchStateUpdate, BoxError> {
    let latest = latest_outputs(&state.research_outputs);
    let mut urls: Vec<String> = Vec::new();
    for output in &latest {
        cited_urls(&output.output, &mut urls);
    }
    let reader: &SourceReader = &reader;
    let pages = read_sources(reader.0.as_ref(), &urls).await;
    // The folder exists once a file was written into it; with no output there is nothing
    // to rewrite.
    let folder = if latest.is_empty() {
        None
    } else {
        Some(graphkit_tools::SandboxedFs::new(
            outputs.resolve(&state, ctx.config())?,
        )?)
    };

    let mut check = FindingsCheck {
        done: true,
        ..FindingsCheck::default()
    };
    let mut changed: Vec<TodoItem> = Vec::new();
    for output in latest {
        let todo = output
            .todo_id
            .as_deref()
            .and_then(|id| state.todo_list.get(id));
        let (marked, result) = check_output(output, todo, &pages);
        // The file on disk says what the report says (the name is one the write tool's
        // sandboxed folder accepted when it saved the file).
        if marked != output.output
            && let Some(Ok(path)) = folder.as_ref().map(|f| f.resolve(&output.filename))
            && path.exists()
        {
            write_json_atomic(&path, &marked)?;
        }
        if let Some(todo) = todo.filter(|t| t.status == TodoStatus::Completed)
            && let Some(note) = todo_note(todo, &result)
        {
            changed.push(note);
        }
        check.outputs.push(ResearchOutput {
            output: marked,
            ..output.clone()
        });
        check.todos.push(result);
    }
    ctx.writer().custom(json!({
        "event": "findings_verified", "verified": check.verified(),
        "unverified": check.unverified(), "missing": check.missing(),
    }));
    for todo in changed.iter().filter(|t| t.status != TodoStatus::Completed) {
        ctx.writer().custom(json!({"event": "todo_blocked", "todoId": todo.id,
            "status": todo.status.as_str(), "reason": "no field of its output could be verified in its sources"}));
    }
    let mut update = EntityIntelResearchStateUpdate::new().findings_check(check);
    if !changed.is_empty() {
        update = update.todo_list(KeyedUpdate::upsert(changed));
    }
    Ok(update)
}

/// The last output written for each todo (an output of no todo counts on its own), in the
/// order of the todos' first writes.
fn latest_outputs(outputs: &[ResearchOutput]) -> Vec<&ResearchOutput> {
    let mut latest: Vec<&ResearchOutput> = Vec::new();
    for output in outputs {
        match latest
            .iter_mut()
            .find(|o| output.todo_id.is_some() && o.todo_id == output.todo_id)
        {
            Some(slot) => *slot = output,
            None => latest.push(output),
        }
    }
    latest
}

/// The todo after the check: blocked (skipped when optional) when its output has no
/// verified field, else completed with a note naming the values left unverified; `None`
/// when nothing changes.
fn todo_note(todo: &TodoItem, check: &OutputCheck) -> Option<TodoItem> {
    let unverified: Vec<String> = check
        .unverified
        .iter()
        .map(|u| format!("{} ({})", u.field, u.reason))
        .collect();
    let mut changed = todo.clone();
    if check.verified.is_empty() {
        let missing = if check.missing.is_empty() {
            String::new()
        } else {
            format!("; not found: {}", check.missing.join(", "))
        };
        let given = if unverified.is_empty() {
            "no value was given".to_owned()
        } else {
            format!("unverified: {}", unverified.join("; "))
        };
        changed.status = if todo.optional {
            TodoStatus::Skipped
        } else {
            TodoStatus::Blocked
        };
        changed.notes = format!(
            "{} | {}: no field of its output could be verified in its sources ({given}{missing}).",
            todo.notes.trim(),
            if todo.optional { "Skipped" } else { "Blocked" }
        );
    } else if !unverified.is_empty() {
        changed.notes = format!(
            "{} | {} value(s) not verified in their sources, left out of the findings: {}.",
            todo.notes.trim(),
            unverified.len(),
            unverified.join("; ")
        );
    } else {
        return None;
    }
    changed.updated_at = crate::shared::time::rfc3339(crate::shared::time::now_ms());
    Some(changed)
}

/// Every source URL the output cites, added to `urls` once each.
fn cited_urls(output: &Value, urls: &mut Vec<String>) {
    match output {
        Value::Object(map) => {
            for (key, value) in map {
                if SOURCE_KEYS.contains(&key.as_str()) {
                    for url in urls_of(value) {
                        if !urls.contains(&url) {
                            urls.push(url);
                        }
                    }
                } else {
                    cited_urls(value, urls);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| cited_urls(v, urls)),
        _ => {}
    }
}

/// Reads each URL through the backend, one URL per request (a backend may answer a URL
/// under another spelling of it, so pages are matched to the URL asked for), at most four
/// at once.
async fn read_sources(backend: &dyn SearchBackend, urls: &[String]) -> SourcePages {
    let mut pages = SourcePages::new();
    for chunk in urls.chunks(4) {
        let reads = chunk.iter().map(|url| async move {
            let page = match backend.extract(std::slice::from_ref(url)).await {
                Ok(pages) => pages
                    .into_iter()
                    .next()
                    .map(|p| Page::new(p.title.as_deref(), &p.content))
                    .ok_or_else(|| format!("{url} could not be read")),
                Err(err) => Err(format!("{url} could not be read ({err})")),
            };
            (url.clone(), page)
        });
        pages.extend(futures::future::join_all(reads).await);
    }
    pages
}

/// The keys a finding's source URL may be given under.
const SOURCE_KEYS: &[&str] = &["sourceUrl", "source_url", "sourceURL", "source", "url"];
/// The keys a finding's passage may be given under.
const PASSAGE_KEYS: &[&str] = &["passage", "quote", "evidence", "excerpt"];

fn urls_of(value: &Value) -> Vec<String> {
    match value {
        Value::String(url) if !url.trim().is_empty() => vec![url.trim().to_owned()],
        Value::Array(items) => items.iter().flat_map(urls_of).collect(),
        _ => Vec::new(),
    }
}

/// `foundedYear`, `founded_year` and `Founded Year` are one key.
fn key_form(key: &str) -> String {
    key.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Checks one output: returns it with every unverified value marked, and the counts.
pub(crate) fn check_output(
    output: &ResearchOutput,
    todo: Option<&TodoItem>,
    pages: &SourcePages,
) -> (Value, OutputCheck) {
    let entity = todo.map_or("", |t| t.entity_name.as_str());
    let mut marked = output.output.clone();
    let mut result = OutputCheck {
        todo_id: output.todo_id.clone(),
        filename: output.filename.clone(),
        ..OutputCheck::default()
    };
    // The fields live under `fields` (as the prompt asks), else at the top level.
    let has_fields = marked.get("fields").is_some_and(Value::is_object);
    let Some(fields) = (if has_fields {
        marked.get_mut("fields").and_then(Value::as_object_mut)
    } else {
        marked.as_object_mut()
    }) else {
        // Not a JSON object (a text file): nothing can be verified.
        result.unverified.push(Unverified {
            field: "(whole output)".into(),
            reason: "the output is not JSON with fields, values, sources and passages".into(),
        });
        return (marked, result);
    };
    let wanted: Vec<String> = match todo {
        Some(t) if !t.fields_to_extract.is_empty() => t.fields_to_extract.clone(),
        _ => fields
            .iter()
            .filter(|(_, v)| v.get("value").is_some())
            .map(|(k, _)| k.clone())
            .collect(),
    };
    for field in wanted {
        let key = fields
            .keys()
            .find(|k| **k == field)
            .or_else(|| fields.keys().find(|k| key_form(k) == key_form(&field)))
            .cloned();
        let Some(entry) = key.and_then(|k| fields.get_mut(&k)) else {
            result.missing.push(field);
            continue;
        };
        check_field(&field, entry, entity, pages, &mut result);
    }
    // A top-level list of disputes repeats the fields' ones: keep the verified values only.
    if let Some(conflicts) = marked.get_mut("conflicts").and_then(Value::as_array_mut) {
        conflicts.retain_mut(|conflict| {
            let values = conflict.get_mut("values").and_then(Value::as_array_mut);
            values.is_some_and(|values| {
                values.retain(|v| verify_candidate(v, entity, pages).is_ok());
                distinct_values(values) > 1
            })
        });
    }
    (marked, result)
}

/// Checks one field's entry in place and records the outcome.
fn check_field(
    field: &str,
    entry: &mut Value,
    entity: &str,
    pages: &SourcePages,
    result: &mut OutputCheck,
) {
    let given = match &*entry {
        Value::Object(map) => map.get("value").filter(|v| !is_empty(v)).cloned(),
        other if is_empty(other) => None,
        other => Some(other.clone()),
    };
    let Some(given) = given else {
        result.missing.push(field.to_owned());
        return;
    };
    let verdict = if entry.is_object() {
        verify_candidate(entry, entity, pages)
    } else {
        Err("no source URL and passage given".to_owned())
    };
    match verdict {
        Ok(()) => {
            result.verified.push(field.to_owned());
            if let Some(map) = entry.as_object_mut() {
                map.insert("verified".into(), Value::Bool(true));
            }
        }
        Err(reason) => {
            let mut map = match std::mem::take(entry) {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            map.insert("value".into(), Value::Null);
            map.insert("unverifiedValue".into(), given);
            map.insert("verified".into(), Value::Bool(false));
            map.insert("unverified".into(), Value::String(reason.clone()));
            *entry = Value::Object(map);
            result.unverified.push(Unverified {
                field: field.to_owned(),
                reason,
            });
        }
    }
    check_dispute(field, entry, entity, pages, result);
}

/// A dispute the model reported (`conflictingValues`) stands only between verified values
/// that differ; unverified ones are marked and counted, and `disputed` is set to what the
/// verified values show.
fn check_dispute(
    field: &str,
    entry: &mut Value,
    entity: &str,
    pages: &SourcePages,
    result: &mut OutputCheck,
) {
    let Some(map) = entry.as_object_mut() else {
        return;
    };
    let Some(values) = map
        .get_mut("conflictingValues")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let mut verified = Vec::new();
    for value in values.iter_mut() {
        let verdict = verify_candidate(value, entity, pages);
        if let Some(obj) = value.as_object_mut() {
            obj.insert("verified".into(), Value::Bool(verdict.is_ok()));
            if let Err(reason) = &verdict {
                obj.insert("unverified".into(), Value::String(reason.clone()));
            }
        }
        match verdict {
            Ok(()) => verified.push(value.clone()),
            Err(reason) => result.unverified.push(Unverified {
                field: format!("{field} (disputed value)"),
                reason,
            }),
        }
    }
    let disputed = distinct_values(&verified) > 1;
    let claimed = map.get("disputed").and_then(Value::as_bool) == Some(true);
    map.insert("disputed".into(), Value::Bool(disputed));
    if claimed && !disputed {
        map.insert(
            "disputeNote".into(),
            Value::String(
                "the model reported a dispute, but fewer than two differing values were verified in their sources".into(),
            ),
        );
    }
}

/// How many different values the candidates hold (one naming the other is the same).
fn distinct_values(candidates: &[Value]) -> usize {
    let mut seen: Vec<String> = Vec::new();
    for value in candidates.iter().filter_map(|c| c.get("value")) {
        let text = scalar_text(value).join(" ");
        if !seen
            .iter()
            .any(|s| names_in_full(s, &text) || names_in_full(&text, s))
        {
            seen.push(text);
        }
    }
    seen.len()
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(items) => items.iter().all(is_empty),
        Value::Object(map) => map.is_empty(),
        _ => false,
    }
}

/// The texts a value must show in its passage: strings and numbers, each part of a list or
/// object (booleans cannot be quoted and are not asked for).
fn scalar_text(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.trim().to_owned()],
        Value::Number(n) => vec![n.to_string()],
        Value::Array(items) => items.iter().flat_map(scalar_text).collect(),
        Value::Object(map) => map.values().flat_map(scalar_text).collect(),
        Value::Bool(_) | Value::Null => Vec::new(),
    }
}

/// Whether one `{value, sourceUrl, passage}` holds: `Err` says what failed.
fn verify_candidate(candidate: &Value, entity: &str, pages: &SourcePages) -> Result<(), String> {
    let Some(map) = candidate.as_object() else {
        return Err("no source URL and passage given".into());
    };
    let value = map
        .get("value")
        .filter(|v| !is_empty(v))
        .ok_or("no value given")?;
    let urls: Vec<String> = SOURCE_KEYS
        .iter()
        .filter_map(|k| map.get(*k))
        .flat_map(urls_of)
        .collect();
    if urls.is_empty() {
        return Err("no source URL given".into());
    }
    let passage = PASSAGE_KEYS
        .iter()
        .find_map(|k| map.get(*k).and_then(Value::as_str))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .ok_or("no passage quoted")?;
    let passage_words = WordForm::of(passage);
    let parts = scalar_text(value);
    if let Some(part) = parts.iter().find(|p| !passage_words.contains(p)) {
        return Err(format!("the value `{part}` is not in its passage"));
    }
    let value_words: usize = parts.iter().map(|p| WordForm::of(p).word_count()).sum();
    if passage_words.word_count() <= value_words {
        return Err("the passage quotes only the value, not where the source states it".into());
    }
    let mut reasons = Vec::new();
    for url in &urls {
        match pages.get(url) {
            Some(Ok(page)) if !page.words.contains(passage) => {
                reasons.push(format!("the passage is not in {url}"));
            }
            Some(Ok(page)) if !entity.is_empty() && !names_in_full(&page.text, entity) => {
                reasons.push(format!("{url} does not name {entity}"));
            }
            Some(Ok(_)) => return Ok(()),
            Some(Err(why)) => reasons.push(why.clone()),
            None => reasons.push(format!("{url} was not read")),
        }
    }
    Err(reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages() -> SourcePages {
        [(
            "corpus://a.md".to_owned(),
            Ok(Page::new(
                Some("About Saltmarsh Nutrition"),
                "- **Founded year:** 2016\n\nSaltmarsh Nutrition was founded by\nInes Okafor in Galway.",
            )),
        )]
        .into_iter()
        .collect()
    }

    fn output(fields: Value) -> ResearchOutput {
        ResearchOutput {
            todo_id: None,
            filename: "f.json".into(),
            output: json!({ "fields": fields }),
        }
    }

    #[test]
    fn a_value_is_verified_only_with_its_passage_in_a_source_that_names_the_entity() {
        let out = output(json!({
            "foundedYear": {"value": "2016", "sourceUrl": "corpus://a.md", "passage": "Founded year: 2016"},
            "founder": {"value": "Ines Okafor", "sourceUrl": "corpus://a.md",
                        "passage": "Saltmarsh Nutrition was founded by Ines Okafor in Galway."},
            "headquarters": {"value": "Cork", "sourceUrl": "corpus://a.md", "passage": "Headquartered in Cork."},
            "ceo": {"value": "Ines Okafor", "sourceUrl": "corpus://a.md", "passage": "Founded year: 2016"},
            "website": "https://saltmarsh.example",
            "revenue": {"value": null},
            "bare": {"value": "2016", "sourceUrl": "corpus://a.md", "passage": "2016"},
            "elsewhere": {"value": "2016", "sourceUrl": "corpus://b.md", "passage": "Founded year: 2016"},
        }));
        let (marked, check) = check_output(&out, None, &pages());
        assert_eq!(check.verified, ["foundedYear", "founder"]);
        let reasons: BTreeMap<&str, &str> = check
            .unverified
            .iter()
            .map(|u| (u.field.as_str(), u.reason.as_str()))
            .collect();
        assert_eq!(
            reasons["headquarters"],
            "the passage is not in corpus://a.md"
        );
        assert_eq!(
            reasons["ceo"],
            "the value `Ines Okafor` is not in its passage"
        );
        assert_eq!(reasons["elsewhere"], "corpus://b.md was not read");
        assert!(reasons["bare"].contains("only the value"));
        // Only fields holding a `value` are checked when no todo names the fields.
        assert!(!reasons.contains_key("website"));
        assert_eq!(marked["fields"]["headquarters"]["value"], Value::Null);
        assert_eq!(marked["fields"]["headquarters"]["unverifiedValue"], "Cork");
        assert_eq!(marked["fields"]["foundedYear"]["verified"], true);
    }

    #[test]
    fn a_dispute_stands_only_between_verified_values() {
        let out = output(json!({
            "foundedYear": {"value": "2016", "sourceUrl": "corpus://a.md", "passage": "Founded year: 2016",
                "disputed": true, "conflictingValues": [
                    {"value": "2016", "sourceUrl": "corpus://a.md", "passage": "Founded year: 2016"},
                    {"value": "2014", "sourceUrl": "corpus://a.md", "passage": "It was founded in 2014."}]},
        }));
        let (marked, check) = check_output(&out, None, &pages());
        assert_eq!(marked["fields"]["foundedYear"]["disputed"], false);
        assert_eq!(
            marked["fields"]["foundedYear"]["conflictingValues"][1]["verified"],
            false
        );
        assert_eq!(check.unverified.len(), 1);
        assert_eq!(check.verified, ["foundedYear"]);
    }
}
