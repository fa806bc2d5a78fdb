//! The ready-made [`AgentState`]: a conversation ([`MessagesState`](crate::MessagesState))
//! and the todo tool's list ([`TodoState`]).

use graphkit::KeyedUpdate;
use graphkit::reducers::KeyedVec;
use graphkit_llm::Message;
use serde::{Deserialize, Serialize};

use crate::prebuilt::todo::{TodoItem, TodoList, TodoState};

/// The ready-made state for agents: a conversation and a todo list.
///
/// Use it when you have nothing else to keep; otherwise put the same fields in your own
/// state and implement [`MessagesState`](crate::MessagesState) (and [`TodoState`] for the
/// todo tools).
#[derive(graphkit::State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct AgentState {
    /// The conversation; merges by message id (an index keeps each id's place, so a
    /// message added or replaced costs the same however long the conversation is).
    #[reducer(merge_by_key)]
    pub messages: KeyedVec<Message>,
    /// The agent's todo list; merges by item id.
    #[reducer(with = TodoList::merge, update = KeyedUpdate<TodoItem>)]
    pub todos: TodoList,
}

crate::messages_state!(AgentState, messages);

impl TodoState for AgentState {
    fn todos(&self) -> &TodoList {
        &self.todos
    }

    fn todos_update(update: KeyedUpdate<TodoItem>) -> AgentStateUpdate {
        AgentStateUpdate::new().todos(update)
    }
}

impl AgentState {
    /// An input update that starts (or continues) a conversation with a user message.
    pub fn user(text: impl Into<String>) -> AgentStateUpdate {
        AgentStateUpdate::new().messages(vec![Message::user(text)])
    }
}
