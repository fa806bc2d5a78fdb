//! How tools and the ReAct agent reach a graph's messages: [`MessagesState`] and the
//! [`messages_state!`](crate::messages_state) macro. The ready-made
//! [`AgentState`](crate::AgentState) is in `agent_state.rs`, above this module and the todo
//! tool whose list it carries.

use graphkit::{KeyedUpdate, State};
use graphkit_llm::{Message, ToolCall};

/// A graph state with a conversation: the contract between your state type and the
/// [`ToolNode`](crate::ToolNode), [`tools_condition`](crate::tools_condition) and the
/// [ReAct agent](crate::ReactAgent).
///
/// graphkit states are your own structs, so the tool layer cannot know which field holds
/// the messages. This trait says it: read the messages, and build an update of them.
/// The field should be `#[reducer(merge_by_key)]` (LangGraph's `add_messages`), so
/// parallel tool messages, edits by id and removals all merge: a `Vec<Message>`, or a
/// [`KeyedVec<Message>`](graphkit::reducers::KeyedVec) for long conversations (an index
/// of ids makes each merge O(1) instead of a scan of the list).
///
/// Implement it with [`messages_state!`](crate::messages_state) in one line, or by hand:
///
/// ```
/// use graphkit::{KeyedUpdate, State};
/// use graphkit_llm::Message;
/// use graphkit_tools::MessagesState;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Research {
///     #[reducer(merge_by_key)]
///     messages: Vec<Message>,
///     topic: String,
/// }
///
/// impl MessagesState for Research {
///     fn messages(&self) -> &[Message] { &self.messages }
///     fn messages_update(update: KeyedUpdate<Message>) -> ResearchUpdate {
///         ResearchUpdate::new().messages(update)
///     }
/// }
/// ```
pub trait MessagesState: State {
    /// The conversation, oldest first.
    fn messages(&self) -> &[Message];

    /// An update of the state that changes only the messages.
    fn messages_update(update: KeyedUpdate<Message>) -> Self::Update;

    /// The tool calls of the last message: empty unless it is an assistant message that
    /// calls tools (what a node routed to by `tools_condition` acts on).
    fn last_tool_calls(&self) -> &[ToolCall] {
        self.messages().last().map_or(&[], Message::tool_calls)
    }
}

/// Implements [`MessagesState`] for a `#[derive(State)]` struct whose field `$field` is a
/// `#[reducer(merge_by_key)] Vec<Message>`.
///
/// ```
/// use graphkit::State;
/// use graphkit_llm::Message;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Chat {
///     #[reducer(merge_by_key)]
///     history: Vec<Message>,
/// }
/// graphkit_tools::messages_state!(Chat, history);
/// ```
#[macro_export]
macro_rules! messages_state {
    ($state:ty, $field:ident) => {
        impl $crate::MessagesState for $state {
            fn messages(&self) -> &[$crate::__private::Message] {
                &self.$field
            }

            fn messages_update(
                update: $crate::__private::KeyedUpdate<$crate::__private::Message>,
            ) -> <$state as $crate::__private::State>::Update {
                <<$state as $crate::__private::State>::Update as ::core::default::Default>::default(
                )
                .$field(update)
            }
        }
    };
}
