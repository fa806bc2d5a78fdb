//! A todo list kept in the graph state: [`TodoList`], [`TodoItem`], the [`TodoState`]
//! trait and the tools `todo_read`, `todo_update` and `todo_next`.

use std::sync::Arc;

use graphkit::reducers::KeyedOp;
use graphkit::{Keyed, KeyedUpdate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::function::tool_fn_with_runtime;
use crate::state::MessagesState;
use crate::tool::{DynTool, ToolOutput, ToolRuntime};

/// How urgent an item is; `todo_next` takes the highest first.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Do it when nothing else is left.
    Low,
    /// The default.
    #[default]
    Medium,
    /// Do it first.
    High,
}

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
    /// Dropped.
    Cancelled,
}

impl TodoStatus {
    /// `true` for done and cancelled items.
    pub fn is_closed(self) -> bool {
        matches!(self, Self::Done | Self::Cancelled)
    }
}

/// One item of a [`TodoList`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TodoItem {
    /// Stable id (the merge key), e.g. `t1`.
    pub id: String,
    /// What to do.
    pub description: String,
    /// How urgent.
    pub priority: Priority,
    /// Where it stands.
    pub status: TodoStatus,
    /// Free notes (findings, blockers).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub notes: String,
    /// Creation time, seconds since the Unix epoch.
    pub created_at: u64,
    /// Last change, seconds since the Unix epoch.
    pub updated_at: u64,
}

impl Keyed for TodoItem {
    type Key = String;

    fn key(&self) -> &String {
        &self.id
    }
}

/// The todo list: items in creation order, merged by id.
///
/// It is a state field with the reducer [`TodoList::merge`]; tools write
/// `KeyedUpdate<TodoItem>`s (only the items they change), so two parallel updates of
/// different items both land.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TodoList {
    /// The items, in creation order.
    pub items: Vec<TodoItem>,
}

impl TodoList {
    /// The reducer: upsert and remove items by id (`#[reducer(with = TodoList::merge,
    /// update = KeyedUpdate<TodoItem>)]`).
    pub fn merge(list: &mut TodoList, update: KeyedUpdate<TodoItem>) {
        <graphkit::reducers::MergeByKey as graphkit::reducers::Reducer<Vec<TodoItem>>>::reduce(
            &mut list.items,
            update,
        );
    }

    /// The item with this id.
    pub fn get(&self, id: &str) -> Option<&TodoItem> {
        self.items.iter().find(|i| i.id == id)
    }

    /// Items with this status (all items for `None`), in creation order.
    pub fn with_status(&self, status: Option<TodoStatus>) -> impl Iterator<Item = &TodoItem> {
        self.items
            .iter()
            .filter(move |i| status.is_none_or(|s| i.status == s))
    }

    /// The next item to work on: an open item of the highest priority, in-progress before
    /// pending, then the oldest.
    pub fn next(&self) -> Option<&TodoItem> {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, i)| !i.status.is_closed())
            .min_by_key(|(pos, i)| {
                (
                    std::cmp::Reverse(i.priority),
                    i.status != TodoStatus::InProgress,
                    *pos,
                )
            })
            .map(|(_, i)| i)
    }

    /// A fresh id not used in this list.
    fn fresh_id(&self, taken: &[String]) -> String {
        loop {
            let id = format!("t{:04x}", rand::random::<u16>());
            if self.get(&id).is_none() && !taken.contains(&id) {
                return id;
            }
        }
    }
}

/// A state with a todo list, for the todo tools.
pub trait TodoState: MessagesState {
    /// The list.
    fn todos(&self) -> &TodoList;

    /// An update that changes only the list.
    fn todos_update(update: KeyedUpdate<TodoItem>) -> Self::Update;
}

/// Arguments of `todo_read`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoReadArgs {
    /// Only items with this status; all items when omitted.
    #[serde(default)]
    pub status: Option<TodoStatus>,
}

/// One change in `todo_update`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoChange {
    /// The item to change; omit it to add a new item (then `description` is required).
    #[serde(default)]
    pub id: Option<String>,
    /// What to do.
    #[serde(default)]
    pub description: Option<String>,
    /// `high`, `medium` or `low`.
    #[serde(default)]
    pub priority: Option<Priority>,
    /// `pending`, `in_progress`, `done` or `cancelled`.
    #[serde(default)]
    pub status: Option<TodoStatus>,
    /// Notes; replaces the item's notes.
    #[serde(default)]
    pub notes: Option<String>,
}

/// Arguments of `todo_update`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoUpdateArgs {
    /// Items to add (no id) or change (with id).
    pub items: Vec<TodoChange>,
}

/// Arguments of `todo_next` (none).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TodoNextArgs {}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn status_name(s: TodoStatus) -> &'static str {
    match s {
        TodoStatus::Pending => "pending",
        TodoStatus::InProgress => "in_progress",
        TodoStatus::Done => "done",
        TodoStatus::Cancelled => "cancelled",
    }
}

fn priority_name(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::Medium => "medium",
        Priority::High => "high",
    }
}

/// One line per item: `[t1a2b] (high, in_progress) Write the intro — notes`.
pub fn render_item(item: &TodoItem) -> String {
    let mut line = format!(
        "[{}] ({}, {}) {}",
        item.id,
        priority_name(item.priority),
        status_name(item.status),
        item.description
    );
    if !item.notes.is_empty() {
        line.push_str(" — ");
        line.push_str(&item.notes);
    }
    line
}

/// Applies `todo_update` changes to `list`: the resulting upserts, or an error naming the
/// first bad change. Nothing is applied when any change is bad.
///
/// # Errors
/// [`ToolError::InvalidArguments`] for an unknown id or a new item without description.
pub fn plan_changes(
    list: &TodoList,
    changes: Vec<TodoChange>,
    at: u64,
) -> Result<Vec<TodoItem>, ToolError> {
    let mut out: Vec<TodoItem> = Vec::new();
    for (n, change) in changes.into_iter().enumerate() {
        let item = match &change.id {
            Some(id) => {
                let current = out.iter().find(|i| &i.id == id).or_else(|| list.get(id)).cloned().ok_or_else(|| {
                    let known: Vec<&str> = list.items.iter().map(|i| i.id.as_str()).collect();
                    ToolError::InvalidArguments {
                        tool: "todo_update".into(),
                        message: format!(
                            "item {n}: no todo with id `{id}` (known ids: {}); omit `id` to add a new item",
                            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                        ),
                    }
                })?;
                TodoItem {
                    description: change.description.unwrap_or(current.description.clone()),
                    priority: change.priority.unwrap_or(current.priority),
                    status: change.status.unwrap_or(current.status),
                    notes: change.notes.unwrap_or(current.notes.clone()),
                    updated_at: at,
                    ..current
                }
            }
            None => {
                let description = change.description.filter(|d| !d.trim().is_empty()).ok_or_else(|| {
                    ToolError::InvalidArguments {
                        tool: "todo_update".into(),
                        message: format!("item {n}: a new item needs a non-empty `description` (or give the `id` of an existing item)"),
                    }
                })?;
                let taken: Vec<String> = out.iter().map(|i| i.id.clone()).collect();
                TodoItem {
                    id: list.fresh_id(&taken),
                    description,
                    priority: change.priority.unwrap_or_default(),
                    status: change.status.unwrap_or_default(),
                    notes: change.notes.unwrap_or_default(),
                    created_at: at,
                    updated_at: at,
                }
            }
        };
        match out.iter().position(|i| i.id == item.id) {
            Some(i) => out[i] = item,
            None => out.push(item),
        }
    }
    Ok(out)
}

/// The todo tools, `todo_read`, `todo_update` and `todo_next`, over the state's
/// [`TodoList`].
///
/// `todo_update` returns a state update of only the changed items, so it merges with
/// other tools' updates of the same step.
pub fn todo_tools<S: TodoState>() -> Vec<DynTool<S>> {
    let read = tool_fn_with_runtime(
        "todo_read",
        "Read the todo list, optionally only the items with one status (pending, in_progress, done, cancelled).",
        |args: TodoReadArgs, rt: ToolRuntime<S>| async move {
            let lines: Vec<String> = rt
                .state()
                .todos()
                .with_status(args.status)
                .map(render_item)
                .collect();
            Ok(ToolOutput::Content(if lines.is_empty() {
                "No matching todo items.".to_owned()
            } else {
                lines.join("\n")
            }))
        },
    );
    let update = tool_fn_with_runtime(
        "todo_update",
        "Add todo items (omit `id`) or change them (give `id` and the fields to change: description, priority, status, notes).",
        |args: TodoUpdateArgs, rt: ToolRuntime<S>| async move {
            if args.items.is_empty() {
                return Err(ToolError::InvalidArguments {
                    tool: "todo_update".into(),
                    message: "`items` is empty".into(),
                });
            }
            let changed = plan_changes(rt.state().todos(), args.items, now())?;
            let reply = format!(
                "Updated {} item(s):\n{}",
                changed.len(),
                changed
                    .iter()
                    .map(render_item)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            Ok(ToolOutput::update(
                S::todos_update(KeyedUpdate {
                    ops: changed.into_iter().map(KeyedOp::Upsert).collect(),
                }),
                reply,
            ))
        },
    );
    let next = tool_fn_with_runtime(
        "todo_next",
        "Get the next todo item to work on: the open item with the highest priority.",
        |_: TodoNextArgs, rt: ToolRuntime<S>| async move {
            Ok(ToolOutput::Content(match rt.state().todos().next() {
                Some(item) => render_item(item),
                None => "Nothing left to do: every item is done or cancelled.".to_owned(),
            }))
        },
    );
    vec![Arc::new(read), Arc::new(update), Arc::new(next)]
}
