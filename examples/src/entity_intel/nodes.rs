//! The nodes: `generate_todos`, `research_agent`, `finalize_output`, and the router
//! `should_continue_or_finalize`.

use std::sync::Arc;
use std::time::Duration;

use graphkit::RunContext;
use graphkit::error::BoxError;
use graphkit::{KeyedUpdate, NodeContext};
use graphkit_llm::{CallOptions, ChatModel, ChatRequest, Message, ToolSpec};
use graphkit_tools::TOOLS_NODE;
use serde_json::{Value, json};

use super::input::todo_id;
use super::output_folder::OutputFolder;
use super::prompts;
use super::state::{EntityIntelResearchState, EntityIntelResearchStateUpdate, TodoBudget};
use super::todo::{GeneratedTodoList, TodoItem, TodoList, TodoStatus, reconcile};
use crate::shared::run_dir::write_json_atomic;
use crate::shared::time::{now_ms, rfc3339, today_long};

type S = EntityIntelResearchState;
type Update = EntityIntelResearchStateUpdate;

/// Node names.
pub(crate) const GENERATE_TODOS: &str = "generate_todos";
/// The agent node (one model turn per visit).
pub(crate) const RESEARCH_AGENT: &str = "research_agent";
/// Writes `research_complete.json`.
pub(crate) const FINALIZE_OUTPUT: &str = "finalize_output";

/// The seed's risk mitigations for a stuck agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Tool calls allowed per todo before it is marked blocked (the seed: 10).
    pub max_tool_calls_per_todo: u32,
    /// Model turns without a tool call allowed per todo before it is marked blocked.
    pub max_idle_turns_per_todo: u32,
    /// Working time allowed per todo before it is marked blocked (the seed: 5 minutes).
    /// Only time a process spent on the todo counts, not time the run was down.
    pub todo_timeout: Duration,
    /// The write-file tool summarizes and resets the conversation when it holds more
    /// messages than this. The default, 0, resets it after every write, as the seed's text
    /// says ("this happens automatically every time a file is written"; its sample code
    /// checks for more than 10 messages).
    pub summarize_after_messages: usize,
    /// Output tokens per agent turn.
    pub max_tokens_per_turn: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tool_calls_per_todo: 10,
            max_idle_turns_per_todo: 3,
            todo_timeout: Duration::from_secs(300),
            summarize_after_messages: 0,
            max_tokens_per_turn: 1024,
        }
    }
}

/// What the agent nodes need.
#[derive(Clone)]
pub struct AgentDeps {
    /// The research model (also writes the todo list).
    pub model: Arc<dyn ChatModel>,
    /// The tools offered to it.
    pub tool_specs: Vec<ToolSpec>,
    /// The limits.
    pub limits: Limits,
}

/// `generate_todos`: one LLM call with structured output (a [`GeneratedTodoList`]),
/// checked against the directions so there is exactly one todo per direction.
pub(crate) async fn generate_todos(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<AgentDeps>,
) -> Result<Update, BoxError> {
    if !state.todo_list.todos.is_empty() {
        return Ok(Update::new());
    }
    let directions = &state.research_directions;
    let flat: Vec<Value> = directions
        .bundles
        .iter()
        .flat_map(|b| {
            b.entities.iter().flat_map(move |e| {
                e.directions.iter().map(move |d| {
                    json!({
                        "bundleId": b.bundle_id, "todoId": todo_id(&b.bundle_id, e, d),
                        "entityType": e.entity_type, "entityName": e.name, "directionKey": d.key,
                        "objective": d.objective, "priority": d.priority, "fieldsToExtract": d.fields_to_extract,
                        "acceptanceCriteria": d.acceptance_criteria, "sourcePriorities": d.source_priorities,
                        "optional": d.optional,
                    })
                })
            })
        })
        .collect();
    let prompt = prompts::generate_todos_prompt(&serde_json::to_string_pretty(&flat)?);
    let budget = u32::try_from(300 + 220 * flat.len()).unwrap_or(u32::MAX);
    let model = Arc::clone(&deps.model)
        .with_options(CallOptions::new().temperature(0.0).max_tokens(budget));
    let structured = model.with_structured_output::<GeneratedTodoList>();
    let mut update = Update::new().model_calls(1);
    let generated = match structured.invoke_with_raw(&[Message::user(prompt)]).await {
        Ok((list, raw)) => {
            update = update
                .input_tokens(raw.usage.map_or(0, |u| u.input_tokens))
                .output_tokens(raw.usage.map_or(0, |u| u.output_tokens));
            list
        }
        Err(err) => {
            tracing::warn!(error = %err, "todo generation failed; writing the todos from the directions");
            ctx.writer().custom(
                json!({"event": "warning", "message": format!("todo generation failed: {err}")}),
            );
            GeneratedTodoList::default()
        }
    };
    let (list, report) = reconcile(directions, &generated, &rfc3339(now_ms()));
    ctx.writer().custom(json!({
        "event": "todos_generated", "total": list.todos.len(),
        "filledIn": report.filled_in.len(), "dropped": report.dropped.len(),
    }));
    let total = list.todos.len() as u64;
    Ok(update
        .todo_list(KeyedUpdate::replace(list.todos))
        .total_todos(total)
        .completed_todos(0))
}

/// `research_agent`: one turn of the research model.
///
/// Before calling the model it picks the current todo (highest priority first, marked
/// in progress) and enforces the limits: a todo over its tool-call, idle-turn or time
/// budget is marked blocked, the conversation is reset to the system prompt plus a note,
/// and the next todo becomes current. The reminder prompt (progress and the current
/// todo) is sent after the history on every turn but never stored.
pub async fn research_agent(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<AgentDeps>,
) -> Result<Update, BoxError> {
    let limits = &deps.limits;
    let now = now_ms();
    let mut update = Update::new();
    let mut list = state.todo_list.clone();
    let mut messages = state.messages.clone();
    let mut changed: Vec<TodoItem> = Vec::new();
    // All message writes of this turn, merged into one update at the end.
    let mut message_ops = KeyedUpdate::<Message>::upsert([]);

    if messages
        .first()
        .is_none_or(|m| !matches!(m, Message::System(_)))
    {
        let system = Message::system(prompts::system_prompt(&today_long()));
        messages.insert(0, system);
        message_ops = KeyedUpdate::replace(messages.clone());
    }

    // A todo marked completed whose output could not be saved is blocked with the reason.
    for failed in state.unsaved_outputs() {
        let Some(id) = failed.todo_id.as_deref() else {
            continue;
        };
        if list
            .get(id)
            .is_some_and(|t| t.status == TodoStatus::Completed)
        {
            let reason = format!(
                "its output {} could not be saved: {}",
                failed.filename, failed.error
            );
            let blocked = block(&list, id, &reason);
            list.todos
                .iter_mut()
                .filter(|t| t.id == id)
                .for_each(|t| *t = blocked.clone());
            changed.push(blocked);
            ctx.writer()
                .custom(json!({"event": "todo_blocked", "todoId": id, "reason": reason}));
        }
    }
    // A todo counts as completed only once its file was written: one marked completed
    // without a recorded write goes back to in progress.
    for id in completed_without_file(&state) {
        if let Some(todo) = list
            .todos
            .iter_mut()
            .find(|t| t.id == id && t.status == TodoStatus::Completed)
        {
            todo.status = TodoStatus::InProgress;
            todo.notes = format!(
                "{} | Marked completed without a written file: save the output with agent_write_file.",
                todo.notes
            );
            todo.updated_at = rfc3339(now);
            changed.push(todo.clone());
        }
    }

    let mut budget = state.todo_budget.clone();
    let session = session_of(&ctx);
    let mut current = state
        .current_todo_id
        .clone()
        .filter(|id| list.get(id).is_some_and(|t| !t.status.is_closed()));
    if let Some(id) = current.clone().filter(|id| *id == budget.todo_id) {
        budget.tick(&session, now);
        let elapsed = Duration::from_millis(budget.worked_ms);
        let reason = if budget.tool_calls >= limits.max_tool_calls_per_todo {
            Some(format!(
                "stopped after {} tool calls without completing (limit {})",
                budget.tool_calls, limits.max_tool_calls_per_todo
            ))
        } else if budget.idle_turns >= limits.max_idle_turns_per_todo {
            Some(idle_reason(&budget, limits.max_idle_turns_per_todo))
        } else if elapsed > limits.todo_timeout {
            Some(format!(
                "timed out after {} s (limit {} s)",
                elapsed.as_secs(),
                limits.todo_timeout.as_secs()
            ))
        } else {
            None
        };
        if let Some(reason) = reason {
            let blocked = block(&list, &id, &reason);
            let verb = blocked.status.as_str();
            list.todos
                .iter_mut()
                .filter(|t| t.id == id)
                .for_each(|t| *t = blocked.clone());
            changed.push(blocked);
            ctx.writer().custom(
                json!({"event": "todo_blocked", "todoId": id, "status": verb, "reason": reason}),
            );
            // Start the next todo with a clean slate, as a write would.
            let note = Message::system(format!(
                "{} Todo {id} was marked {verb}: {reason}. Continue with the next todo.",
                prompts::CHECKPOINT_PREFIX
            ));
            messages = messages.into_iter().take(1).chain([note]).collect();
            message_ops = KeyedUpdate::replace(messages.clone());
            current = None;
        }
    }

    if current.is_none()
        && let Some(mut next) = list.next().cloned()
    {
        if next.status == TodoStatus::Pending {
            next.status = TodoStatus::InProgress;
            next.updated_at = rfc3339(now);
            list.todos
                .iter_mut()
                .filter(|t| t.id == next.id)
                .for_each(|t| *t = next.clone());
            changed.push(next.clone());
        }
        budget = TodoBudget {
            todo_id: next.id.clone(),
            tool_calls: 0,
            idle_turns: 0,
            started_ms: now,
            worked_ms: 0,
            session: session.clone(),
            last_tick_ms: now,
            failed_calls: 0,
            last_error: None,
        };
        current = Some(next.id);
    }
    let counts = (
        list.count(TodoStatus::Completed),
        list.count(TodoStatus::Blocked),
        list.todos.len(),
    );
    ctx.writer().custom(
        json!({"event": "progress", "done": counts.0, "blocked": counts.1, "total": counts.2}),
    );
    update = update
        .todo_list(KeyedUpdate::upsert(changed))
        .current_todo_id(current.clone())
        .total_todos(counts.2 as u64)
        .completed_todos(counts.0 as u64);
    let Some(current_id) = current else {
        // Nothing left: the router goes to finalize_output.
        return Ok(update.todo_budget(budget).messages(message_ops));
    };

    let view = S {
        todo_list: list.clone(),
        candidate_sources: state.candidate_sources.clone(),
        ..S::default()
    };
    let mut request_messages = sendable(&messages);
    request_messages.push(Message::user(prompts::reminder(
        &view,
        list.get(&current_id),
    )));
    let request = |max_tokens: u32| {
        ChatRequest::new(request_messages.clone())
            .with_tools(deps.tool_specs.clone())
            .with_options(CallOptions::new().temperature(0.0).max_tokens(max_tokens))
    };
    update = update.model_calls(1);
    let mut answer = deps
        .model
        .invoke_request(request(limits.max_tokens_per_turn))
        .await;
    if let Some(cut) = answer.as_ref().ok().filter(|reply| was_cut_short(reply)) {
        // The per-turn cap must not truncate a file write: ask again with room.
        let room = limits.max_tokens_per_turn.saturating_mul(4).max(4096);
        ctx.writer().custom(json!({"event": "warning", "todoId": current_id,
            "message": format!("the reply hit the {}-token cap; asked again with {room}", limits.max_tokens_per_turn)}));
        update = update
            .model_calls(2)
            .input_tokens(cut.usage.map_or(0, |u| u.input_tokens))
            .output_tokens(cut.usage.map_or(0, |u| u.output_tokens));
        answer = deps.model.invoke_request(request(room)).await;
    }
    match answer {
        Ok(reply) => {
            let calls = u32::try_from(reply.tool_calls.len()).unwrap_or(u32::MAX);
            if calls == 0 {
                budget.idle_turns += 1;
            }
            budget.tool_calls = budget.tool_calls.saturating_add(calls);
            update = update
                .tool_calls(u64::from(calls))
                .input_tokens(reply.usage.map_or(0, |u| u.input_tokens))
                .output_tokens(reply.usage.map_or(0, |u| u.output_tokens));
            message_ops = message_ops.then(KeyedUpdate::upsert([Message::Assistant(reply)]));
        }
        Err(err) => {
            // A failing model counts as a turn without progress, so the todo ends blocked
            // instead of failing the run.
            tracing::warn!(error = %err, todo = %current_id, "model call failed");
            ctx.writer().custom(json!({"event": "warning", "todoId": current_id, "message": format!("model call failed: {err}")}));
            budget.idle_turns += 1;
            budget.failed_calls = budget.failed_calls.saturating_add(1);
            budget.last_error = Some(err.to_string());
        }
    }
    Ok(update.todo_budget(budget).messages(message_ops))
}

/// Why a todo that used up its turns without a tool call is blocked: the model's errors
/// when its calls failed (an HTTP 429 is not "the model answered"), else the turns.
fn idle_reason(budget: &TodoBudget, limit: u32) -> String {
    let error = budget.last_error.as_deref().unwrap_or("(no message)");
    let (idle, failed) = (budget.idle_turns, budget.failed_calls);
    if failed >= idle {
        format!("every model call failed ({failed} of {idle}, limit {limit}); the last: {error}")
    } else if failed > 0 {
        format!(
            "the model answered {} times without calling a tool and {failed} call(s) failed (limit {limit}); the last failure: {error}",
            idle - failed
        )
    } else {
        format!("the model answered {idle} times without calling a tool (limit {limit})")
    }
}

/// `true` when the provider stopped a tool call at the token cap (`length` for
/// OpenAI-style servers, `max_tokens` for Anthropic): the reply has tool calls, or text
/// that is a tool call or JSON in the making. Prose cut short is left as it is.
fn was_cut_short(reply: &graphkit_llm::AssistantMessage) -> bool {
    let cut = matches!(
        reply.finish_reason.as_deref(),
        Some("length" | "max_tokens" | "max_output_tokens")
    );
    let text = reply.content.trim_start();
    cut && (!reply.tool_calls.is_empty()
        || text.starts_with('{')
        || text.starts_with("```")
        || text.contains("<tool_call>"))
}

/// Todos marked completed for which no file was recorded.
pub(crate) fn completed_without_file(state: &S) -> Vec<String> {
    state
        .todo_list
        .todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .filter(|t| {
            !state
                .completed_research
                .iter()
                .any(|r| r.todo_id.as_deref() == Some(t.id.as_str()))
        })
        .map(|t| t.id.clone())
        .collect()
}

/// The [`RunConfig`](graphkit::RunConfig) value naming one process's continuous stretch of
/// work on a thread (one graph invocation). The per-todo timeout counts time only within a
/// session, so time spent down between a kill and a resume is not time spent working.
pub const RUN_SESSION_KEY: &str = "entity_intel_session";

/// A session id unique to this invocation.
pub(crate) fn new_session_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{}-{n}", std::process::id(), now_ms())
}

/// The session working on the thread: the [`RUN_SESSION_KEY`] value the runner sets,
/// else one per process.
fn session_of(ctx: &NodeContext) -> String {
    static PROCESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ctx.config()
        .value(RUN_SESSION_KEY)
        .and_then(Value::as_str)
        .map_or_else(
            || {
                PROCESS
                    .get_or_init(|| format!("process-{}-{}", std::process::id(), now_ms()))
                    .clone()
            },
            str::to_owned,
        )
}

fn block(list: &TodoList, id: &str, reason: &str) -> TodoItem {
    let mut todo = list.get(id).cloned().unwrap_or_else(|| TodoItem {
        optional: false,
        id: id.to_owned(),
        description: String::new(),
        entity_type: super::input::EntityType::Person,
        entity_name: String::new(),
        direction_key: String::new(),
        priority: super::input::Priority::Low,
        status: TodoStatus::Blocked,
        fields_to_extract: Vec::new(),
        output_file: String::new(),
        notes: String::new(),
        created_at: String::new(),
        updated_at: String::new(),
    });
    // An optional direction that hits a limit is skipped, not blocked.
    let (status, label) = if todo.optional {
        (TodoStatus::Skipped, "Skipped")
    } else {
        (TodoStatus::Blocked, "Blocked")
    };
    todo.status = status;
    todo.notes = if todo.notes.is_empty() {
        format!("{label}: {reason}.")
    } else {
        format!("{} | {label}: {reason}.", todo.notes)
    };
    todo.updated_at = rfc3339(now_ms());
    todo
}

/// The history as providers accept it: tool results whose call is no longer in the history
/// (a context reset removed it) are dropped, and so are calls that got no answer.
fn sendable(messages: &[Message]) -> Vec<Message> {
    let answered: std::collections::HashSet<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut called = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::Assistant(a) if !a.tool_calls.is_empty() => {
                let mut a = a.clone();
                a.tool_calls.retain(|c| answered.contains(c.id.as_str()));
                called.extend(a.tool_calls.iter().map(|c| c.id.clone()));
                if !a.tool_calls.is_empty() || !a.content.trim().is_empty() {
                    out.push(Message::Assistant(a));
                }
            }
            Message::Tool(t) if !called.contains(&t.tool_call_id) => {}
            other => out.push(other.clone()),
        }
    }
    out
}

/// `should_continue_or_finalize`: to the tool node when the model called tools; to
/// `verify_findings` (then `finalize_output`) when no todo is open and every completed one
/// has its file (a todo whose output could not be saved is blocked first by
/// `research_agent`); back to `research_agent` otherwise.
pub(crate) fn should_continue_or_finalize(state: &S) -> &'static str {
    if state
        .messages
        .last()
        .is_some_and(|m| !m.tool_calls().is_empty())
    {
        TOOLS_NODE
    } else if state.todo_list.open_count() == 0
        && completed_without_file(state).is_empty()
        && !state.completed_without_output()
    {
        super::verify::VERIFY_FINDINGS
    } else {
        RESEARCH_AGENT
    }
}

/// `finalize_output`: writes the bundle's `research_complete.json` (the seed's master
/// output, plus the blocked todos and the check of every value against its source: the
/// outputs are shown as `verify_findings` marked them).
pub(crate) async fn finalize_output(
    state: Arc<S>,
    ctx: NodeContext,
    outputs: RunContext<OutputFolder>,
) -> Result<Update, BoxError> {
    let list = &state.todo_list;
    let check = &state.findings_check;
    let blocked: Vec<Value> = list
        .todos
        .iter()
        .filter(|t| t.status == TodoStatus::Blocked)
        .map(|t| json!({"id": t.id, "notes": t.notes}))
        .collect();
    let master = json!({
        "bundleId": state.bundle_id(),
        "episode": state.episode,
        "researchDirections": state.research_directions,
        "todoList": list,
        "completedResearch": state.completed_research,
        "researchOutputs": if check.done { &check.outputs } else { &state.research_outputs },
        "verification": {
            "verifiedValues": check.verified(),
            "unverifiedValues": check.unverified(),
            "missingFields": check.missing(),
            "note": "A value counts as verified when its passage is in the cited source (read again), the source names the entity, and the value is in the passage; unverified values are moved to `unverifiedValue` with the reason.",
            "outputs": check.todos,
        },
        "checkpointCount": state.checkpoint_count,
        "totalTodos": list.todos.len(),
        "completedTodos": list.count(TodoStatus::Completed),
        "blockedTodos": blocked,
        "skippedTodos": list.todos.iter().filter(|t| t.status == TodoStatus::Skipped)
            .map(|t| json!({"id": t.id, "notes": t.notes})).collect::<Vec<_>>(),
        "toolCalls": state.tool_calls,
        "modelCalls": state.model_calls,
    });
    let path = outputs
        .resolve(&state, ctx.config())?
        .join("research_complete.json");
    write_json_atomic(&path, &master)?;
    ctx.writer().custom(json!({
        "event": "progress", "done": list.count(TodoStatus::Completed),
        "blocked": list.count(TodoStatus::Blocked), "total": list.todos.len(),
    }));
    ctx.writer()
        .custom(json!({"event": "finalized", "path": path.display().to_string()}));
    Ok(Update::new()
        .completed_todos(list.count(TodoStatus::Completed) as u64)
        .current_todo_id(None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphkit_llm::{AssistantMessage, ToolCall};

    #[test]
    fn sendable_drops_tool_results_orphaned_by_a_reset() {
        let orphan = Message::tool_result("call_gone", "Todo x is now completed.");
        let call = ToolCall::new("web_search", json!({"query": "q"})).with_id("c1");
        let messages = vec![
            Message::system("sys"),
            Message::system("[RESEARCH CHECKPOINT] summary"),
            orphan,
            Message::Assistant(AssistantMessage::with_tool_calls("", vec![call])),
            Message::tool_result("c1", "results"),
        ];
        let sent = sendable(&messages);
        assert_eq!(sent.len(), 4);
        assert!(
            sent.iter()
                .all(|m| !matches!(m, Message::Tool(t) if t.tool_call_id == "call_gone"))
        );
    }
}
