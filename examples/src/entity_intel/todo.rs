//! The seed's todo list: one todo per research direction, with the seed's statuses
//! (`pending`, `in_progress`, `completed`, `blocked`) and priorities, merged by id.

use graphkit::reducers::{MergeByKey, Reducer};
use graphkit::{Keyed, KeyedUpdate};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::input::{EntitiesResearchDirections, EntityType, Priority, output_file, todo_id};

/// Where a todo stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    #[default]
    Pending,
    /// Being researched.
    InProgress,
    /// Output written and marked complete.
    Completed,
    /// Given up on: the agent was stuck (limits reached) or said it cannot be done.
    Blocked,
    /// Left out: an optional direction the agent chose to skip, or that reached a limit
    /// (the seed's "graceful degradation (skip optional todos)").
    Skipped,
}

impl TodoStatus {
    /// `true` for completed, blocked and skipped todos: nothing more will happen to them.
    pub(crate) fn is_closed(self) -> bool {
        matches!(self, Self::Completed | Self::Blocked | Self::Skipped)
    }

    /// The wire name (`in_progress`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Blocked => "blocked",
            Self::Skipped => "skipped",
        }
    }
}

/// One todo: a research direction made executable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoItem {
    /// `{bundleId}_{entityType}_{entitySlug}_{directionKey}`.
    pub id: String,
    /// What to research, which fields to fill, which sources to prefer, and when it is done.
    pub description: String,
    /// The entity's kind.
    pub entity_type: EntityType,
    /// The entity's canonical name.
    pub entity_name: String,
    /// The direction key (last part of the id).
    pub(crate) direction_key: String,
    /// How urgent; the highest goes first.
    pub priority: Priority,
    /// Where it stands.
    pub status: TodoStatus,
    /// Fields the output must fill.
    #[serde(default)]
    pub(crate) fields_to_extract: Vec<String>,
    /// The file the output should go to (`biz_halvard_biosciences_identity.json`).
    pub(crate) output_file: String,
    /// From an optional direction: may be skipped (status `skipped`) without research.
    #[serde(default)]
    pub optional: bool,
    /// Notes: findings when completed, the reason when blocked.
    #[serde(default)]
    pub notes: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub(crate) updated_at: String,
}

impl Keyed for TodoItem {
    type Key = String;

    fn key(&self) -> &String {
        &self.id
    }
}

/// The todo list of one bundle.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TodoList {
    /// The todos, in direction order.
    pub todos: Vec<TodoItem>,
}

impl TodoList {
    /// The state reducer: upsert and remove todos by id, so parallel tool updates of
    /// different todos (or of different fields of the run) all land.
    pub fn merge(list: &mut TodoList, update: KeyedUpdate<TodoItem>) {
        <MergeByKey as Reducer<Vec<TodoItem>>>::reduce(&mut list.todos, update);
    }

    /// The todo with this id.
    pub fn get(&self, id: &str) -> Option<&TodoItem> {
        self.todos.iter().find(|t| t.id == id)
    }

    /// How many todos have this status.
    pub fn count(&self, status: TodoStatus) -> usize {
        self.todos.iter().filter(|t| t.status == status).count()
    }

    /// Todos not yet completed or blocked (the seed's `pendingCount`, counting in-progress
    /// ones too, so the run never finalizes with work in flight).
    pub(crate) fn open_count(&self) -> usize {
        self.todos.iter().filter(|t| !t.status.is_closed()).count()
    }

    /// The next todo to work on: an in-progress one first, then the pending one of the
    /// highest priority, in list order.
    pub fn next(&self) -> Option<&TodoItem> {
        self.todos
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.status.is_closed())
            .min_by_key(|(pos, t)| {
                (
                    t.status != TodoStatus::InProgress,
                    std::cmp::Reverse(t.priority),
                    *pos,
                )
            })
            .map(|(_, t)| t)
    }

    /// A compact JSON view for tool replies and outputs: counts and the todos.
    pub(crate) fn summary_json(&self, status: Option<TodoStatus>) -> serde_json::Value {
        serde_json::json!({
            "totalTodos": self.todos.len(),
            "pendingCount": self.count(TodoStatus::Pending),
            "inProgressCount": self.count(TodoStatus::InProgress),
            "completedCount": self.count(TodoStatus::Completed),
            "blockedCount": self.count(TodoStatus::Blocked),
            "skippedCount": self.count(TodoStatus::Skipped),
            "todos": self.todos.iter().filter(|t| status.is_none_or(|s| t.status == s)).map(|t| serde_json::json!({
                "id": t.id, "status": t.status, "priority": t.priority, "entityName": t.entity_name,
                "outputFile": t.output_file, "optional": t.optional, "notes": t.notes,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The todo list as the todo-generation model writes it (structured output): the
/// seed's `TodoList` model, before it is checked against the directions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedTodoList {
    /// One todo per research direction.
    pub todos: Vec<GeneratedTodo>,
}

/// One generated todo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeneratedTodo {
    /// `{bundleId}_{entityType}_{entitySlug}_{directionKey}`.
    pub id: String,
    /// Clear, actionable task description (50-100 words): what to research, key fields,
    /// source priorities, acceptance criteria.
    pub description: String,
    /// PERSON, BUSINESS, PRODUCT, COMPOUND or PLATFORM.
    #[serde(default)]
    pub entity_type: Option<EntityType>,
    /// Canonical entity name.
    #[serde(default)]
    pub entity_name: Option<String>,
    /// HIGH, MEDIUM or LOW.
    #[serde(default)]
    pub priority: Option<Priority>,
}

/// What reconciling a generated list against the directions changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reconciliation {
    /// Directions the model left out: their todos were made from the direction itself.
    pub(crate) filled_in: Vec<String>,
    /// Generated todos matching no direction: dropped.
    pub dropped: Vec<String>,
}

/// The todo list for `directions`: exactly one todo per direction, with the seed's id.
///
/// The model's descriptions are kept where its todo has the right id and a usable
/// description; the type, name, priority and fields always come from the direction, so a
/// model that gets them wrong cannot derail the run.
pub fn reconcile(
    directions: &EntitiesResearchDirections,
    generated: &GeneratedTodoList,
    at: &str,
) -> (TodoList, Reconciliation) {
    let mut report = Reconciliation::default();
    let mut todos = Vec::new();
    for bundle in &directions.bundles {
        for entity in &bundle.entities {
            for direction in &entity.directions {
                let id = todo_id(&bundle.bundle_id, entity, direction);
                let from_model = generated
                    .todos
                    .iter()
                    .find(|t| t.id == id)
                    .map(|t| t.description.trim())
                    .filter(|d| d.split_whitespace().count() >= 5);
                let description = match from_model {
                    Some(d) => d.to_owned(),
                    None => {
                        report.filled_in.push(id.clone());
                        default_description(&entity.name, direction)
                    }
                };
                todos.push(TodoItem {
                    id,
                    description,
                    entity_type: entity.entity_type,
                    entity_name: entity.name.clone(),
                    direction_key: direction.key.clone(),
                    priority: direction.priority,
                    status: TodoStatus::Pending,
                    fields_to_extract: direction.fields_to_extract.clone(),
                    output_file: output_file(entity, direction),
                    optional: direction.optional,
                    notes: String::new(),
                    created_at: at.to_owned(),
                    updated_at: at.to_owned(),
                });
            }
        }
    }
    for t in &generated.todos {
        if !todos.iter().any(|d| d.id == t.id) {
            report.dropped.push(t.id.clone());
        }
    }
    (TodoList { todos }, report)
}

/// A todo description written from the direction alone.
pub(crate) fn default_description(
    entity: &str,
    direction: &super::input::ResearchDirection,
) -> String {
    let mut text = format!(
        "Research {entity}: {}",
        direction.objective.trim().trim_end_matches('.')
    );
    if !direction.fields_to_extract.is_empty() {
        text.push_str(&format!(
            ". Fields: {}",
            direction.fields_to_extract.join(", ")
        ));
    }
    if !direction.source_priorities.is_empty() {
        text.push_str(&format!(
            ". Prefer sources: {}",
            direction.source_priorities.join(" > ")
        ));
    }
    if !direction.acceptance_criteria.is_empty() {
        text.push_str(&format!(
            ". Done when: {}",
            direction.acceptance_criteria.join("; ")
        ));
    }
    text.push('.');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str, priority: Priority, status: TodoStatus) -> TodoItem {
        TodoItem {
            id: id.into(),
            description: String::new(),
            entity_type: EntityType::Business,
            entity_name: "Acme".into(),
            direction_key: "k".into(),
            priority,
            status,
            fields_to_extract: vec![],
            output_file: "f.json".into(),
            optional: false,
            notes: String::new(),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn next_prefers_in_progress_then_highest_priority_then_list_order() {
        let mut list = TodoList {
            todos: vec![
                item("a", Priority::Low, TodoStatus::Pending),
                item("b", Priority::High, TodoStatus::Pending),
                item("c", Priority::High, TodoStatus::Pending),
            ],
        };
        assert_eq!(list.next().map(|t| t.id.as_str()), Some("b"));
        list.todos[0].status = TodoStatus::InProgress;
        assert_eq!(list.next().map(|t| t.id.as_str()), Some("a"));
        for t in &mut list.todos {
            t.status = TodoStatus::Blocked;
        }
        assert!(list.next().is_none());
        assert_eq!(list.open_count(), 0);
    }
}
