//! Streaming model output into a graphkit run's `messages` stream mode.

use graphkit::{StreamMode, StreamWriter};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::chunk::ChatChunk;
use crate::message::AssistantMessage;

/// What a model emits on a graph run's [`StreamMode::Messages`] stream: the `payload` of
/// `StreamPayload::Messages { node, payload }`, serialized as JSON with a `type` tag.
///
/// A streamed call emits one `chunk` per piece as it arrives (all with the same
/// `message_id`, which is also the id of the final message); a call that does not stream
/// emits the whole `message` once.
///
/// ```
/// use graphkit_llm::{ChatChunk, MessageStreamEvent};
///
/// let event = MessageStreamEvent::Chunk { message_id: "msg_1".into(), chunk: ChatChunk::text("Hi") };
/// let json = serde_json::to_value(&event).unwrap();
/// assert_eq!(json["type"], "chunk");
/// assert_eq!(json["content"], "Hi");
/// assert_eq!(MessageStreamEvent::from_value(json), Some(event));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageStreamEvent {
    /// A piece of a streamed reply.
    Chunk {
        /// The id of the message being streamed.
        message_id: String,
        /// The piece.
        #[serde(flatten)]
        chunk: ChatChunk,
    },
    /// A whole reply from a call that did not stream.
    Message {
        /// The reply.
        message: AssistantMessage,
    },
}

impl MessageStreamEvent {
    /// Reads an event back from a stream payload; `None` if it is not one.
    pub fn from_value(value: Value) -> Option<Self> {
        serde_json::from_value(value).ok()
    }
}

/// The current node's stream writer, when its run streams messages.
#[derive(Debug, Clone)]
pub(crate) struct GraphForwarder {
    writer: StreamWriter,
}

impl GraphForwarder {
    /// The forwarder for the node running on this task, if its run streams messages.
    pub(crate) fn current() -> Option<Self> {
        StreamWriter::current()
            .filter(|w| w.enabled(StreamMode::Messages))
            .map(|writer| Self { writer })
    }

    pub(crate) fn chunk(&self, message_id: &str, chunk: &ChatChunk) {
        self.writer.message(MessageStreamEvent::Chunk {
            message_id: message_id.to_owned(),
            chunk: chunk.clone(),
        });
    }

    pub(crate) fn message(&self, message: &AssistantMessage) {
        self.writer.message(MessageStreamEvent::Message {
            message: message.clone(),
        });
    }
}
