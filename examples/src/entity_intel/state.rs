//! [`EntityIntelResearchState`]: the seed's state, field for field, plus the bookkeeping
//! the limits need.

use graphkit::{KeyedUpdate, State};
use graphkit_llm::Message;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::EntitiesResearchDirections;
use super::todo::{TodoItem, TodoList};

/// The state of one bundle's research run (the seed's `EntityIntelResearchState`).
///
/// Reducers: `messages` merges by message id (LangGraph's `add_messages`), so the
/// write-file tool can replace the whole history; `todo_list` merges by todo id, so a
/// `todo_update` and an `agent_write_file` of one turn both land; the lists of results
/// append; the counters add.
#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct EntityIntelResearchState {
    /// Episode metadata, from the input.
    pub episode: Value,
    /// This bundle's research directions (one bundle, as in the seed).
    pub research_directions: EntitiesResearchDirections,
    /// Ranked candidate sources, from the input.
    pub candidate_sources: Value,
    /// The todos, one per direction.
    #[reducer(with = TodoList::merge, update = KeyedUpdate<TodoItem>)]
    pub todo_list: TodoList,
    /// The todo being researched.
    pub current_todo_id: Option<String>,
    /// One entry per file the agent wrote.
    #[reducer(append)]
    pub completed_research: Vec<CompletedResearch>,
    /// The agent's conversation: system prompt, (checkpoint summary,) turns.
    #[reducer(merge_by_key)]
    pub messages: Vec<Message>,
    /// How many times the write-file tool summarized and reset the conversation.
    #[reducer(add)]
    pub checkpoint_count: u64,
    /// Todos in the list.
    pub total_todos: u64,
    /// Todos completed (recounted from the list by the agent node, so a model writing
    /// twice cannot inflate it).
    pub completed_todos: u64,
    /// The structured output of every file written, per direction.
    #[reducer(append)]
    pub research_outputs: Vec<ResearchOutput>,
    /// Where this bundle's files go.
    pub output_directory: String,
    /// Limits bookkeeping for the current todo.
    pub todo_budget: TodoBudget,
    /// Tool calls the model made, over the whole run.
    #[reducer(add)]
    pub tool_calls: u64,
    /// Model calls (agent, todo generation, summaries).
    #[reducer(add)]
    pub model_calls: u64,
    /// Input tokens reported by the provider.
    #[reducer(add)]
    pub input_tokens: u64,
    /// Output tokens reported by the provider.
    #[reducer(add)]
    pub output_tokens: u64,
    /// Outputs `agent_write_file` could not save (a todo with one of these and no saved
    /// output is blocked, not completed, and the bundle is reported as failed).
    #[reducer(append)]
    #[serde(default)]
    pub failed_writes: Vec<FailedWrite>,
    /// The graph's check of the outputs against their sources (`verify_findings`, after
    /// the research and before the report).
    #[serde(default)]
    pub findings_check: FindingsCheck,
}

graphkit_tools::messages_state!(EntityIntelResearchState, messages);

/// A file the agent wrote (the seed's `completed_research` entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletedResearch {
    /// The file name as the agent gave it.
    pub filename: String,
    /// Where it is on disk.
    pub filepath: String,
    /// The agent's description of it.
    pub description: String,
    /// The todo it belongs to.
    pub todo_id: Option<String>,
    /// When it was written (RFC 3339).
    pub timestamp: String,
}

/// An output that could not be saved, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedWrite {
    /// The todo it belonged to.
    pub todo_id: Option<String>,
    /// The file name as the agent gave it.
    pub filename: String,
    /// The error, as the model was told.
    pub error: String,
}

impl EntityIntelResearchState {
    /// The failed writes of todos that have no saved output (a later successful write of
    /// the same todo makes up for a failed one).
    pub(crate) fn unsaved_outputs(&self) -> impl Iterator<Item = &FailedWrite> {
        self.failed_writes.iter().filter(|failed| {
            !self
                .completed_research
                .iter()
                .any(|done| done.todo_id == failed.todo_id)
        })
    }

    /// Whether a todo is marked completed although its output could not be saved.
    pub(crate) fn completed_without_output(&self) -> bool {
        self.unsaved_outputs().any(|failed| {
            failed.todo_id.as_deref().is_some_and(|id| {
                self.todo_list
                    .get(id)
                    .is_some_and(|t| t.status == super::todo::TodoStatus::Completed)
            })
        })
    }
}

/// The structured research of one direction: the written file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResearchOutput {
    /// The todo it answers.
    pub todo_id: Option<String>,
    /// The file it was saved to.
    pub filename: String,
    /// The content: parsed JSON, or a string when it is not JSON.
    pub output: Value,
}

/// How much of its limits the current todo has used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoBudget {
    /// The todo these counts belong to.
    pub todo_id: String,
    /// Tool calls made while it was current.
    pub tool_calls: u32,
    /// Model turns without any tool call while it was current.
    pub(crate) idle_turns: u32,
    /// When it became current (ms since the epoch).
    pub(crate) started_ms: i64,
    /// Time spent working on it, in milliseconds: summed over the stretches of one
    /// process working on the thread, so time spent down (killed, waiting for a resume)
    /// does not count. The per-todo timeout compares this.
    #[serde(default)]
    pub worked_ms: u64,
    /// The session (one graph invocation) that last worked on it.
    #[serde(default)]
    pub session: String,
    /// When that session last looked at it (ms since the epoch).
    #[serde(default)]
    pub(crate) last_tick_ms: i64,
    /// Model calls that failed while it was current (an HTTP 429, a reply over the size
    /// cap, a timeout; each also counts as a turn without a tool call).
    #[serde(default)]
    pub(crate) failed_calls: u32,
    /// The last of those failures: the reason a todo blocked by them gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_error: Option<String>,
}

impl TodoBudget {
    /// Adds the time since the last tick when the same `session` is still at work (a new
    /// session — a resume — starts counting afresh), then ticks at `now`.
    pub fn tick(&mut self, session: &str, now: i64) {
        if self.session == session {
            let since = u64::try_from(now.saturating_sub(self.last_tick_ms)).unwrap_or(0);
            self.worked_ms = self.worked_ms.saturating_add(since);
        }
        session.clone_into(&mut self.session);
        self.last_tick_ms = now;
    }
}

impl EntityIntelResearchState {
    /// This bundle's id.
    pub fn bundle_id(&self) -> &str {
        self.research_directions
            .bundles
            .first()
            .map_or("", |b| b.bundle_id.as_str())
    }
}

/// The outcome of the check, kept in the state and shown in `research_complete.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingsCheck {
    /// `true` once `verify_findings` ran (the graph's check of the outputs against their sources).
    pub done: bool,
    /// Each output as the report shows it: unverified values moved out of `value`.
    pub outputs: Vec<ResearchOutput>,
    /// Per output (the last one of each todo): what was verified and what not.
    pub todos: Vec<OutputCheck>,
}

impl FindingsCheck {
    /// Values checked and verified, over every output.
    pub fn verified(&self) -> usize {
        self.todos.iter().map(|t| t.verified.len()).sum()
    }

    /// Values given that could not be verified, over every output.
    pub fn unverified(&self) -> usize {
        self.todos.iter().map(|t| t.unverified.len()).sum()
    }

    /// Fields asked for that the outputs left empty.
    pub fn missing(&self) -> usize {
        self.todos.iter().map(|t| t.missing.len()).sum()
    }
}

/// What the check found in one output.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputCheck {
    /// The todo the output answers.
    pub todo_id: Option<String>,
    /// The file it was written to.
    pub filename: String,
    /// Fields whose value was verified in its source.
    pub verified: Vec<String>,
    /// Fields (and disputed values) given without a passage their source holds.
    pub unverified: Vec<Unverified>,
    /// Fields asked for and left empty (null or absent).
    pub missing: Vec<String>,
}

/// A value that could not be verified, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Unverified {
    /// The field (`foundedYear`, or `foundedYear (disputed value)`).
    pub field: String,
    /// Why: `no source URL given`, `the passage is not in <url>`, ...
    pub reason: String,
}
