//! Chat messages: what goes into a model and what comes out.
//!
//! Every message carries a stable `id` and implements [`graphkit::Keyed`] with it, so a
//! state field `#[reducer(merge_by_key)] messages: Vec<Message>` behaves like LangGraph's
//! `add_messages`: a message with a known id replaces the old one in place, a new id
//! appends, and messages can be removed by id (or all at once).

mod trim;

use graphkit::Keyed;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use trim::{TrimStrategy, approximate_tokens, count_tokens, trim_messages};

/// A fresh message id: `msg_` and 32 random hex digits.
pub fn new_message_id() -> String {
    format!("msg_{:032x}", rand::random::<u128>())
}

/// One message of a conversation.
///
/// Serialized with a `role` tag (`system`, `user`, `assistant`, `tool`), so checkpoints
/// stay readable and independent of any provider's wire format.
///
/// ```
/// use graphkit_llm::Message;
///
/// let history = vec![Message::system("Be brief."), Message::user("What is 2 + 2?")];
/// assert_eq!(history[1].text(), "What is 2 + 2?");
/// assert_ne!(history[0].id(), history[1].id());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System(SystemMessage),
    /// A human turn.
    User(UserMessage),
    /// A model turn: text and/or tool calls.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolMessage),
}

/// Instructions for the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemMessage {
    /// Stable id (the merge key).
    pub id: String,
    /// The text.
    pub content: String,
}

/// A human turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserMessage {
    /// Stable id (the merge key).
    pub id: String,
    /// The text.
    pub content: String,
}

/// A model turn: text, tool calls, token usage.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Stable id (the merge key). Always generated locally, never taken from the provider,
    /// so two replies can never collide.
    pub id: String,
    /// The text (empty when the model only called tools).
    #[serde(default)]
    pub content: String,
    /// Tools the model asks to call, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens used by the call that produced this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `length`, `tool_calls`, ...), as the provider said it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The model that answered, as the provider named it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's id for the response (e.g. `chatcmpl-…`), for tracing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

/// The result of one tool call, answering the assistant's call with the same id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolMessage {
    /// Stable id (the merge key).
    pub id: String,
    /// The id of the [`ToolCall`] this answers.
    pub tool_call_id: String,
    /// The tool's name, when known (some providers want it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The result, as text the model can read.
    pub content: String,
    /// `true` when the tool failed and `content` describes the error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call; the tool result must carry it back.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, parsed from the model's JSON.
    pub arguments: Value,
}

/// Tokens used by one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
}

impl Message {
    /// A system message with a fresh id.
    pub fn system(content: impl Into<String>) -> Self {
        Self::System(SystemMessage {
            id: new_message_id(),
            content: content.into(),
        })
    }

    /// A user message with a fresh id.
    pub fn user(content: impl Into<String>) -> Self {
        Self::User(UserMessage {
            id: new_message_id(),
            content: content.into(),
        })
    }

    /// An assistant message with text only and a fresh id.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::Assistant(AssistantMessage::text(content))
    }

    /// A successful tool result answering the call `tool_call_id`.
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self::Tool(ToolMessage {
            id: new_message_id(),
            tool_call_id: tool_call_id.into(),
            name: None,
            content: content.into(),
            is_error: false,
        })
    }

    /// A failed tool result: `content` tells the model what went wrong.
    pub fn tool_error(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        match Self::tool_result(tool_call_id, content) {
            Self::Tool(t) => Self::Tool(ToolMessage {
                is_error: true,
                ..t
            }),
            other => other,
        }
    }

    /// The message's id.
    pub fn id(&self) -> &str {
        match self {
            Self::System(m) => &m.id,
            Self::User(m) => &m.id,
            Self::Assistant(m) => &m.id,
            Self::Tool(m) => &m.id,
        }
    }

    /// The same message with another id (useful to replace a message in a history).
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        let id = id.into();
        match &mut self {
            Self::System(m) => m.id = id,
            Self::User(m) => m.id = id,
            Self::Assistant(m) => m.id = id,
            Self::Tool(m) => m.id = id,
        }
        self
    }

    /// The text content.
    pub fn text(&self) -> &str {
        match self {
            Self::System(m) => &m.content,
            Self::User(m) => &m.content,
            Self::Assistant(m) => &m.content,
            Self::Tool(m) => &m.content,
        }
    }

    /// The role name: `system`, `user`, `assistant` or `tool`.
    pub fn role(&self) -> &'static str {
        match self {
            Self::System(_) => "system",
            Self::User(_) => "user",
            Self::Assistant(_) => "assistant",
            Self::Tool(_) => "tool",
        }
    }

    /// The assistant message inside, if this is one.
    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            Self::Assistant(m) => Some(m),
            _ => None,
        }
    }

    /// The tool calls of an assistant message (empty for other roles).
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.as_assistant().map_or(&[], |m| &m.tool_calls)
    }
}

impl AssistantMessage {
    /// An assistant message with text only and a fresh id.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            id: new_message_id(),
            content: content.into(),
            ..Self::default()
        }
    }

    /// An assistant message that calls tools, with a fresh id.
    pub fn with_tool_calls(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls,
            ..Self::text(content)
        }
    }
}

impl ToolCall {
    /// A tool call with a fresh id (`call_…`).
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        Self {
            id: format!("call_{:024x}", rand::random::<u128>() >> 32),
            name: name.into(),
            arguments,
        }
    }

    /// The same call with a given id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
}

impl From<AssistantMessage> for Message {
    fn from(m: AssistantMessage) -> Self {
        Self::Assistant(m)
    }
}

impl From<SystemMessage> for Message {
    fn from(m: SystemMessage) -> Self {
        Self::System(m)
    }
}

impl From<UserMessage> for Message {
    fn from(m: UserMessage) -> Self {
        Self::User(m)
    }
}

impl From<ToolMessage> for Message {
    fn from(m: ToolMessage) -> Self {
        Self::Tool(m)
    }
}

impl Keyed for Message {
    type Key = String;

    fn key(&self) -> &String {
        match self {
            Self::System(m) => &m.id,
            Self::User(m) => &m.id,
            Self::Assistant(m) => &m.id,
            Self::Tool(m) => &m.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use graphkit::KeyedUpdate;
    use graphkit::reducers::{MergeByKey, Reducer};
    use serde_json::json;

    use super::*;

    #[test]
    fn every_role_round_trips_through_serde() {
        let call = ToolCall::new("search", json!({"q": "rust"}));
        let mut assistant = AssistantMessage::with_tool_calls("looking", vec![call.clone()]);
        assistant.usage = Some(Usage {
            input_tokens: 10,
            output_tokens: 3,
        });
        assistant.finish_reason = Some("tool_calls".into());
        let history = vec![
            Message::system("sys"),
            Message::user("hi"),
            Message::from(assistant),
            Message::tool_result(&call.id, "found"),
            Message::tool_error(&call.id, "boom"),
        ];
        let text = serde_json::to_string(&history).expect("serialize");
        let back: Vec<Message> = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back, history);
        let value = serde_json::to_value(&history[3]).expect("value");
        assert_eq!(value["role"], "tool");
        assert_eq!(value["tool_call_id"], call.id.as_str());
        assert!(
            value.get("is_error").is_none(),
            "false error flag is omitted"
        );
        assert_eq!(
            serde_json::to_value(&history[4]).expect("value")["is_error"],
            true
        );
    }

    #[test]
    fn ids_are_unique_and_stable_across_clones() {
        let a = Message::user("x");
        let b = Message::user("x");
        assert_ne!(a.id(), b.id());
        assert_eq!(a.clone().id(), a.id());
        assert!(a.id().starts_with("msg_"));
    }

    #[test]
    fn merge_by_key_gives_add_messages_semantics() {
        let first = Message::user("first");
        let second = Message::assistant("second");
        let mut history = vec![first.clone(), second.clone()];

        // replace by id keeps the position, a new id appends
        let edited = Message::user("first, edited").with_id(first.id());
        let third = Message::user("third");
        MergeByKey::reduce(&mut history, KeyedUpdate::upsert([edited, third.clone()]));
        let texts: Vec<_> = history.iter().map(Message::text).collect();
        assert_eq!(texts, ["first, edited", "second", "third"]);

        // remove by id
        MergeByKey::reduce(&mut history, KeyedUpdate::remove([second.id().to_owned()]));
        let texts: Vec<_> = history.iter().map(Message::text).collect();
        assert_eq!(texts, ["first, edited", "third"]);

        // remove all, then start over
        let fresh = Message::system("summary");
        MergeByKey::reduce(&mut history, KeyedUpdate::replace([fresh.clone()]));
        assert_eq!(history, vec![fresh]);
    }
}
