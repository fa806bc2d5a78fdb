//! The agent's tools, built on graphkit-tools' [`Tool`](graphkit_tools::Tool) trait:
//! the seed's todo tools, graphkit-tools' `web_search` and `web_extract` (over the offline
//! corpus or Tavily), and the file tools —
//! `agent_write_file` saves the output, records it, and (when the history is long)
//! summarizes and resets the conversation by returning a state update.

use std::sync::Arc;

use graphkit::{Command, KeyedUpdate};
use graphkit_llm::{ChatModel, Message};
use graphkit_tools::prebuilt::search::{SearchBackend, search_tools};
use graphkit_tools::{
    DynTool, SandboxedFs, ToolError, ToolOutput, ToolRuntime, tool_fn_with_runtime,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::output_folder::OutputFolder;
use super::prompts;
use super::state::{
    CompletedResearch, EntityIntelResearchState, EntityIntelResearchStateUpdate, FailedWrite,
    ResearchOutput,
};
use super::todo::{TodoItem, TodoStatus};
use crate::shared::time::{now_ms, rfc3339};
use crate::shared::truncate;

type S = EntityIntelResearchState;
type Rt = ToolRuntime<S>;

/// What the tools need besides the state.
#[derive(Clone)]
pub struct ToolDeps {
    /// The backend of `web_search` and `web_extract` (the offline corpus, or Tavily).
    pub search: Arc<dyn SearchBackend>,
    /// The model that writes checkpoint summaries.
    pub summary_model: Arc<dyn ChatModel>,
    /// Summarize and reset when the history has more messages than this (0: after every
    /// write, as the seed's text says).
    pub summarize_after_messages: usize,
    /// The seed's other web tools (page fetch, site map, Wikipedia), for runs on the real
    /// web; `None` offline.
    pub web: Option<super::web_tools::WebTools>,
    /// Where the file tools write.
    pub outputs: OutputFolder,
}

impl std::fmt::Debug for ToolDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolDeps")
            .field("summary_model", &self.summary_model.model_name())
            .field("summarize_after_messages", &self.summarize_after_messages)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// Arguments of `todo_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TodoReadArgs {
    /// Only todos with this status (pending, in_progress, completed, blocked); all when omitted.
    #[serde(default)]
    pub(crate) status_filter: Option<TodoStatus>,
}

/// Arguments of `todo_update`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TodoUpdateArgs {
    /// The todo to change.
    pub todo_id: String,
    /// New status: pending, in_progress, completed, blocked, or skipped (optional todos only).
    #[serde(default)]
    pub status: Option<TodoStatus>,
    /// Notes to set (findings, or why it is blocked).
    #[serde(default)]
    pub notes: Option<String>,
}

/// Arguments of `todo_get_next` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct NoArgs {}

/// Arguments of `agent_write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteArgs {
    /// File name inside the bundle's output directory, e.g. `biz_halvard_biosciences_identity.json`.
    pub filename: String,
    /// The full research output (JSON text for `.json` files).
    pub content: String,
    /// One line saying what the file holds.
    #[serde(default)]
    pub description: String,
}

/// Arguments of `agent_read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ReadArgs {
    /// File name inside the bundle's output directory.
    pub filename: String,
}

/// The tools of the research agent.
pub fn research_tools(deps: &ToolDeps) -> Vec<DynTool<S>> {
    let mut tools: Vec<DynTool<S>> = todo_tools();
    tools.extend(search_tools::<S>(Arc::clone(&deps.search)));
    if let Some(web) = &deps.web {
        tools.extend(web.tools::<S>());
    }
    tools.extend(file_tools(deps.clone()));
    tools
}

fn todo_tools() -> Vec<DynTool<S>> {
    let read = tool_fn_with_runtime(
        "todo_read",
        "Read the todo list with counts, optionally only todos with one status (pending, in_progress, completed, blocked).",
        |args: TodoReadArgs, rt: Rt| async move {
            Ok(ToolOutput::json(
                &rt.state().todo_list.summary_json(args.status_filter),
            ))
        },
    );
    let next = tool_fn_with_runtime(
        "todo_get_next",
        "Get the todo to work on now: the one in progress, else the pending one with the highest priority.",
        |_: NoArgs, rt: Rt| async move {
            let state = rt.state();
            let current = state
                .current_todo_id
                .as_deref()
                .and_then(|id| state.todo_list.get(id))
                .filter(|t| !t.status.is_closed());
            Ok(match current.or_else(|| state.todo_list.next()) {
                Some(todo) => ToolOutput::json(todo),
                None => ToolOutput::text("No pending todos: every todo is completed or blocked."),
            })
        },
    );
    let update = tool_fn_with_runtime(
        "todo_update",
        "Update a todo's status (pending, in_progress, completed, blocked; skipped for optional todos) and/or notes. \
         A todo counts as completed only once its file is written with agent_write_file.",
        |args: TodoUpdateArgs, rt: Rt| async move {
            let list = &rt.state().todo_list;
            let Some(todo) = list.get(args.todo_id.trim()) else {
                let known: Vec<&str> = list.todos.iter().map(|t| t.id.as_str()).collect();
                return Err(ToolError::InvalidArguments {
                    tool: "todo_update".into(),
                    message: format!(
                        "no todo with id `{}`; the ids are: {}",
                        args.todo_id,
                        known.join(", ")
                    ),
                });
            };
            if args.status == Some(TodoStatus::Skipped) && !todo.optional {
                return Err(ToolError::InvalidArguments {
                    tool: "todo_update".into(),
                    message: format!(
                        "todo `{}` is not optional, so it cannot be skipped; research it, or mark it blocked with notes saying why",
                        todo.id
                    ),
                });
            }
            if args.status.is_none() && args.notes.is_none() {
                return Err(ToolError::InvalidArguments {
                    tool: "todo_update".into(),
                    message: "give a `status`, `notes`, or both".into(),
                });
            }
            let changed = TodoItem {
                status: args.status.unwrap_or(todo.status),
                notes: args.notes.unwrap_or_else(|| todo.notes.clone()),
                updated_at: rfc3339(now_ms()),
                ..todo.clone()
            };
            let reply = format!("Todo {} is now {}.", changed.id, changed.status.as_str());
            Ok(ToolOutput::update(
                EntityIntelResearchStateUpdate::new().todo_list(KeyedUpdate::upsert([changed])),
                reply,
            ))
        },
    );
    vec![Arc::new(read), Arc::new(next), Arc::new(update)]
}

/// The bundle's output folder, sandboxed (see [`OutputFolder`]).
fn output_fs(rt: &Rt, outputs: &OutputFolder) -> Result<SandboxedFs, ToolError> {
    SandboxedFs::new(
        outputs
            .resolve(rt.state(), rt.config())
            .map_err(ToolError::Failed)?,
    )
}

fn file_tools(deps: ToolDeps) -> Vec<DynTool<S>> {
    let (for_read, for_list) = (deps.outputs.clone(), deps.outputs.clone());
    let write = tool_fn_with_runtime(
        "agent_write_file",
        "Save research output to a file in the bundle's output directory. Writing a file records the research and \
         automatically summarizes and resets your context; call todo_update(status=\"completed\") in the same turn.",
        move |args: WriteArgs, rt: Rt| {
            let deps = deps.clone();
            async move { write_file(args, rt, &deps).await }
        },
    );
    let read = tool_fn_with_runtime(
        "agent_read_file",
        "Read a file written earlier in this bundle's output directory.",
        move |args: ReadArgs, rt: Rt| {
            let outputs = for_read.clone();
            async move {
                let fs = output_fs(&rt, &outputs)?;
                fs.read(&args.filename, 0).await.map(ToolOutput::Content)
            }
        },
    );
    let list = tool_fn_with_runtime(
        "agent_list_files",
        "List the files written so far in this bundle's output directory.",
        move |_: NoArgs, rt: Rt| {
            let outputs = for_list.clone();
            async move {
                let fs = output_fs(&rt, &outputs)?;
                fs.list(None, false).await.map(ToolOutput::Content)
            }
        },
    );
    vec![Arc::new(write), Arc::new(read), Arc::new(list)]
}

/// `agent_write_file`: save, record, and maybe summarize + reset.
async fn write_file(args: WriteArgs, rt: Rt, deps: &ToolDeps) -> Result<ToolOutput<S>, ToolError> {
    let state = rt.state();
    let filename = args.filename.trim();
    if filename.is_empty() || filename == "research_complete.json" {
        return Err(ToolError::InvalidArguments {
            tool: "agent_write_file".into(),
            message: "give a file name other than research_complete.json (the todo's outputFile)"
                .into(),
        });
    }
    let output = if filename.ends_with(".json") {
        serde_json::from_str::<Value>(&args.content).map_err(|e| ToolError::InvalidArguments {
            tool: "agent_write_file".into(),
            message: format!(
                "`content` of a .json file must be valid JSON ({e}); fix it and write again"
            ),
        })?
    } else {
        Value::String(args.content.clone())
    };
    let fs = output_fs(&rt, &deps.outputs)?;
    let content = match &output {
        Value::String(_) => args.content.clone(),
        json => serde_json::to_string_pretty(json).unwrap_or_else(|_| args.content.clone()),
    };
    let todo_id = state.current_todo_id.clone();
    if let Err(err) = fs.write(filename, &content, false).await {
        // Nothing was saved (the file keeps its previous content). Record it, so the todo
        // cannot end completed and the bundle is reported as failed, and tell the model.
        tracing::warn!(error = %err, filename, "saving a research output failed");
        let reply = format!(
            "Error: the output was NOT saved: {err}. Do not mark the todo completed; \
             write it again under a shorter, valid file name (e.g. the todo's outputFile)."
        );
        let update = EntityIntelResearchStateUpdate::new().failed_writes(vec![FailedWrite {
            todo_id,
            filename: filename.to_owned(),
            error: err.to_string(),
        }]);
        return Ok(ToolOutput::update(update, reply));
    }
    let filepath = fs.resolve(filename)?.display().to_string();

    let update = EntityIntelResearchStateUpdate::new()
        .completed_research(vec![CompletedResearch {
            filename: filename.to_owned(),
            filepath: filepath.clone(),
            description: args.description.clone(),
            todo_id: todo_id.clone(),
            timestamp: rfc3339(now_ms()),
        }])
        .research_outputs(vec![ResearchOutput {
            todo_id: todo_id.clone(),
            filename: filename.to_owned(),
            output,
        }]);

    if state.messages.len() <= deps.summarize_after_messages {
        return Ok(ToolOutput::update(update, format!("Saved: {filepath}")));
    }

    // Context management, inside the tool as the seed wants: summarize, then replace the
    // history with the system prompt and the checkpoint summary.
    let todo = todo_id.as_deref().and_then(|id| state.todo_list.get(id));
    let recent = format_recent(&state.messages, 10);
    let prompt = prompts::summarization_prompt(todo, filename, &args.description, &recent);
    let (summary, usage) = match deps.summary_model.invoke(&[Message::user(prompt)]).await {
        Ok(reply) if !reply.content.trim().is_empty() => {
            (truncate(reply.content.trim(), 1500), reply.usage)
        }
        Ok(reply) => (fallback_summary(todo, filename), reply.usage),
        Err(err) => {
            tracing::warn!(error = %err, "summary model failed; using a plain summary");
            (fallback_summary(todo, filename), None)
        }
    };
    let mut kept: Vec<Message> = state
        .messages
        .iter()
        .take(1)
        .filter(|m| matches!(m, Message::System(_)))
        .cloned()
        .collect();
    kept.push(Message::system(format!(
        "{}\n{summary}\n\nContext reset. Ready for next todo.",
        prompts::CHECKPOINT_PREFIX
    )));
    let update = update
        .messages(KeyedUpdate::replace(kept))
        .checkpoint_count(1)
        .model_calls(1)
        .input_tokens(usage.map_or(0, |u| u.input_tokens))
        .output_tokens(usage.map_or(0, |u| u.output_tokens));
    // A `Command` with no tool message: the conversation the call belonged to is gone.
    Ok(ToolOutput::Command(Command::new().update(update)))
}

fn fallback_summary(todo: Option<&TodoItem>, filename: &str) -> String {
    match todo {
        Some(t) => format!(
            "Researched {} ({}) for todo {}; saved the findings to {filename}.",
            t.entity_name, t.direction_key, t.id
        ),
        None => format!("Saved research output to {filename}."),
    }
}

/// The last `n` messages as `role: text` lines (tool calls named), for the summary prompt.
fn format_recent(messages: &[Message], n: usize) -> String {
    messages[messages.len().saturating_sub(n)..]
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m.tool_calls().iter().map(|c| c.name.as_str()).collect();
            let text = truncate(m.text(), 400);
            if calls.is_empty() {
                format!("{}: {text}", m.role())
            } else {
                format!("{}: {text} [calls: {}]", m.role(), calls.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}
