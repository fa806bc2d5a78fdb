//! The seed's prompts, adapted to this graph's tools (`web_search`,
//! `web_extract`, `agent_write_file`, `todo_*`) and to Rust-side formatting.

use super::state::EntityIntelResearchState;
use super::todo::TodoItem;

/// Marks the directions block in the todo-generation prompt.
pub(crate) const DIRECTIONS_MARKER: &str = "RESEARCH DIRECTIONS (JSON):";

/// The first line of the summarization prompt (the offline model keys on it).
pub(crate) const SUMMARY_MARKER: &str = "Summarize the research work that was just completed";

/// The prefix of the checkpoint message that replaces the history after a write.
pub(crate) const CHECKPOINT_PREFIX: &str = "[RESEARCH CHECKPOINT]";

/// `GENERATE_TODOS_PROMPT`, followed by the flattened directions.
pub(crate) fn generate_todos_prompt(directions_json: &str) -> String {
    format!(
        "You are a todo list generator for entity due diligence research.

Given the research directions below, generate a complete todo list with exactly one todo per research direction.

REQUIREMENTS:
1. Each todo must have:
   - id: following the convention {{bundleId}}_{{entityType}}_{{entitySlug}}_{{directionKey}}, where entityType is
     guest, biz, prod, compound or platform and entitySlug is the lower-case name with `_` between words
     (the `todoId` given with each direction below is the id to use)
   - description: a clear, actionable task description (50-100 words)
   - entityType: one of PERSON, BUSINESS, PRODUCT, COMPOUND, PLATFORM
   - entityName: the canonical entity name
   - priority: the direction's priority (HIGH, MEDIUM, LOW)
2. The description says what to research and extract, the key fields to populate, the source
   priorities and the acceptance criteria.
3. Keep the bundle grouping and the order of the directions.

OUTPUT: the complete todo list as JSON matching the schema.

{DIRECTIONS_MARKER}
{directions_json}
"
    )
}

/// `RESEARCH_AGENT_SYSTEM_PROMPT` with the tool guide.
pub fn system_prompt(today: &str) -> String {
    format!(
        "You are an expert entity due diligence research agent.

CURRENT DATE: {today}

YOUR MISSION:
Execute research tasks systematically to compile factual profiles of biotech entities (people, businesses,
products, compounds, platforms).

WORKFLOW:
1. The current todo is in the PROGRESS CHECK at the end of every turn. It is already chosen (the
   highest priority open todo) and already marked in_progress for you: start researching it.
2. Research it with your tools: search for official sources first (company websites, official pages), fall
   back to reputable secondary sources (registries, news, trade press), and use Wikipedia only to
   disambiguate. The candidate sources listed with the todo are good places to start.
3. Extract the specific fields listed in the todo.
4. Compile the findings into structured JSON: each field as {{\"value\", \"sourceUrl\", \"passage\"}}, where the
   passage is the sentence or line of that source the value was taken from, quoted exactly. When two sources
   disagree on a field that has one value (a founding year, a headquarters, a chief executive), keep both
   values with their sources and passages under \"conflictingValues\" and set \"disputed\": true.
5. WHEN THE RESEARCH IS COMPLETE, MAKE TWO TOOL CALLS IN THE SAME TURN:
   - agent_write_file(filename, content, description) to save the JSON (use the todo's outputFile name)
   - todo_update(todo_id, status=\"completed\", notes=\"...\") to mark it done
   A todo counts as completed only once its file is written.
6. Writing the file summarizes and resets your context automatically; the next todo is then given to you.
If a todo cannot be done (no sources at all), call todo_update with status=\"blocked\" and notes saying why.
An optional todo may be skipped instead: todo_update with status=\"skipped\" and notes saying why.

QUALITY STANDARDS:
- Prefer official sources over secondary ones; always include source URLs.
- Extract exact data (prices, dates, names); do not paraphrase.
- If information is unavailable, say so explicitly in the output (null plus a note); a sentence that only
  mentions a field is not its value.
- A todo with a field not found is not completed: mark it blocked with notes naming the missing fields.

TOOLS:
- web_search(query, max_results): find sources. Example: web_search(query=\"Halvard Biosciences leadership\")
- web_extract(urls): read the full text of pages from the search results.
- fetch_url(url): fetch one page as markdown; site_map(url): list the links of a site's page (when offered).
- wikipedia_search(query) / wikipedia_summary(title): only to disambiguate an entity (when offered).
- agent_write_file(filename, content, description): save the research output (content is the JSON text).
- agent_read_file(filename) / agent_list_files(): look at files already written.
- todo_read(status_filter), todo_get_next(), todo_update(todo_id, status, notes): look at and track progress."
    )
}

/// `RESEARCH_AGENT_REMINDER_PROMPT`: sent after the history on every turn, never stored.
pub fn reminder(state: &EntityIntelResearchState, current: Option<&TodoItem>) -> String {
    let total = state.todo_list.todos.len();
    let completed = state.todo_list.count(super::todo::TodoStatus::Completed);
    let blocked = state.todo_list.count(super::todo::TodoStatus::Blocked)
        + state.todo_list.count(super::todo::TodoStatus::Skipped);
    let current = match current {
        Some(t) => format!(
            "CURRENT TODO: {} (status {}, priority {:?}{})\n{}\nFields to extract: {}\nSave the output as: {}{}\nCURRENT TODO (JSON): {}",
            t.id,
            t.status.as_str(),
            t.priority,
            if t.optional {
                ", optional: may be skipped"
            } else {
                ""
            },
            t.description,
            if t.fields_to_extract.is_empty() {
                "(see description)".to_owned()
            } else {
                t.fields_to_extract.join(", ")
            },
            t.output_file,
            candidate_hints(&state.candidate_sources, &t.entity_name),
            serde_json::to_string(t).unwrap_or_default()
        ),
        None => "CURRENT TODO: none left.".to_owned(),
    };
    format!(
        "PROGRESS CHECK:
- Total todos: {total}
- Completed: {completed}
- Blocked or skipped: {blocked}
- Remaining: {}

{current}

CRITICAL REMINDERS:
1. Complete one todo fully before moving to the next.
2. When the research is complete, call agent_write_file(filename, full JSON output, description) and
   todo_update(todo_id, status=\"completed\", notes=\"summary of findings\") together in one turn.
3. The file write resets your context automatically.
4. Use official sources whenever possible, extract precise data, include every source URL.",
        total.saturating_sub(completed + blocked)
    )
}

/// The marker of the current todo's JSON line in the reminder (the offline stand-in
/// reads it).
pub(crate) const CURRENT_TODO_JSON: &str = "CURRENT TODO (JSON): ";

/// The input's candidate sources for `entity` (keyed by entity name, any case), as a
/// hint line; empty when there are none.
pub(crate) fn candidate_hints(candidate_sources: &serde_json::Value, entity: &str) -> String {
    let Some(map) = candidate_sources.as_object() else {
        return String::new();
    };
    let Some(sources) = map
        .iter()
        .find(|(name, _)| name.trim().eq_ignore_ascii_case(entity.trim()))
        .map(|(_, v)| v)
    else {
        return String::new();
    };
    let listed: Vec<String> = match sources {
        serde_json::Value::Array(items) => items
            .iter()
            .take(5)
            .map(|item| match item {
                serde_json::Value::String(url) => url.clone(),
                other => other
                    .get("url")
                    .and_then(serde_json::Value::as_str)
                    .map_or_else(|| other.to_string(), str::to_owned),
            })
            .collect(),
        other => vec![other.to_string()],
    };
    if listed.is_empty() {
        return String::new();
    }
    format!("\nCandidate sources (hints, ranked): {}", listed.join(", "))
}

/// `CONTEXT_SUMMARIZATION_PROMPT`, used inside `agent_write_file`.
pub(crate) fn summarization_prompt(
    todo: Option<&TodoItem>,
    filename: &str,
    description: &str,
    recent_messages: &str,
) -> String {
    let (id, entity, kind) = match todo {
        Some(t) => (
            t.id.as_str(),
            t.entity_name.as_str(),
            t.entity_type.as_str(),
        ),
        None => ("(none)", "(unknown)", "(unknown)"),
    };
    format!(
        "{SUMMARY_MARKER} in 2-3 concise sentences:

Todo ID: {id}
Entity: {entity} ({kind})
Output File: {filename}
Description: {description}

Recent conversation (last 10 messages):
{recent_messages}

Create a brief summary capturing:
- What was researched
- Key findings
- Any blockers or issues

This will replace the detailed message history for memory management."
    )
}
