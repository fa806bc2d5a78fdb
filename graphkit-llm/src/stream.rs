//! Streamed replies: chunks with text and tool-call deltas, assembled into one message.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::Stream;
use futures::stream::BoxStream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{LlmError, Result};
use crate::graph::GraphForwarder;
use crate::message::{AssistantMessage, ToolCall, Usage, new_message_id};

/// One piece of a streamed reply.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatChunk {
    /// New text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub content: String,
    /// Pieces of tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCallChunk>,
    /// Token usage, when the provider reports it (usually on the last chunks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped, on the last chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The model that answered, when the chunk says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's response id, when the chunk says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

impl ChatChunk {
    /// A chunk with text only.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            ..Self::default()
        }
    }
}

/// A piece of a tool call. Pieces with the same `index` belong to one call: the first
/// usually carries `id` and `name`, the following ones carry more `arguments` text.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCallChunk {
    /// Which call of the message this piece belongs to.
    pub index: usize,
    /// The call's id, when this piece carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name, when this piece carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// More of the arguments' JSON text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub arguments: String,
}

/// Builds an [`AssistantMessage`] from chunks.
#[derive(Debug, Default)]
pub struct MessageAssembler {
    content: String,
    calls: BTreeMap<usize, ToolCallChunk>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    model: Option<String>,
    response_id: Option<String>,
}

impl MessageAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a chunk.
    pub fn push(&mut self, chunk: &ChatChunk) {
        self.content.push_str(&chunk.content);
        for piece in &chunk.tool_calls {
            let call = self
                .calls
                .entry(piece.index)
                .or_insert_with(|| ToolCallChunk {
                    index: piece.index,
                    ..Default::default()
                });
            if let Some(id) = &piece.id {
                call.id.get_or_insert_with(|| id.clone());
            }
            if let Some(name) = &piece.name {
                call.name.get_or_insert_with(|| name.clone());
            }
            call.arguments.push_str(&piece.arguments);
        }
        if let Some(usage) = chunk.usage {
            // Providers report usage once, or cumulatively: the largest figure is the total.
            let total = self.usage.get_or_insert_with(Usage::default);
            total.input_tokens = total.input_tokens.max(usage.input_tokens);
            total.output_tokens = total.output_tokens.max(usage.output_tokens);
        }
        if chunk.finish_reason.is_some() {
            self.finish_reason.clone_from(&chunk.finish_reason);
        }
        if self.model.is_none() {
            self.model.clone_from(&chunk.model);
        }
        if self.response_id.is_none() {
            self.response_id.clone_from(&chunk.response_id);
        }
    }

    /// The usage seen so far.
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// The assembled message with id `id`; fails when a tool call's arguments are not JSON.
    pub fn finish(self, id: String) -> Result<AssistantMessage> {
        let tool_calls = self
            .calls
            .into_values()
            .map(|call| {
                let name = call.name.unwrap_or_default();
                let arguments = parse_arguments(&name, &call.arguments)?;
                let id = call.id.unwrap_or_else(|| ToolCall::new("", Value::Null).id);
                Ok(ToolCall {
                    id,
                    name,
                    arguments,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(AssistantMessage {
            id,
            content: self.content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
            model: self.model,
            response_id: self.response_id,
        })
    }
}

/// Parses a tool call's JSON arguments; an empty string means no arguments.
pub(crate) fn parse_arguments(name: &str, raw: &str) -> Result<Value> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(raw).map_err(|e| LlmError::ToolArguments {
        name: name.to_owned(),
        error: e.to_string(),
        raw: raw.to_owned(),
    })
}

type FinishHook = Box<dyn FnOnce(std::result::Result<Option<Usage>, &LlmError>, Instant) + Send>;

/// A streamed reply: a [`Stream`] of [`ChatChunk`]s that also assembles them, so
/// [`final_message`](Self::final_message) gives the whole reply at the end.
///
/// Inside a graphkit node whose run streams `messages`, every chunk is also forwarded to
/// the run's stream, tagged with the node name. Dropping the stream closes the connection.
///
/// ```
/// use futures::StreamExt;
/// use graphkit_llm::{AssistantMessage, ChatStream};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut stream = ChatStream::from_message(AssistantMessage::text("hello there"));
/// let first = stream.next().await.unwrap().unwrap();
/// assert_eq!(first.content, "hello ");
/// let message = stream.final_message().await.unwrap();
/// assert_eq!(message.content, "hello there");
/// # });
/// ```
pub struct ChatStream {
    inner: BoxStream<'static, Result<ChatChunk>>,
    assembler: MessageAssembler,
    message_id: String,
    forwarder: Option<GraphForwarder>,
    hooks: Vec<FinishHook>,
    started: Instant,
    finished: bool,
}

impl std::fmt::Debug for ChatStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatStream")
            .field("message_id", &self.message_id)
            .finish_non_exhaustive()
    }
}

impl ChatStream {
    /// A stream over provider chunks. The stream should end with an error if the provider's
    /// end-of-stream marker never came.
    pub fn new(chunks: impl Stream<Item = Result<ChatChunk>> + Send + 'static) -> Self {
        Self {
            inner: Box::pin(chunks),
            assembler: MessageAssembler::new(),
            message_id: new_message_id(),
            forwarder: None,
            hooks: Vec::new(),
            started: Instant::now(),
            finished: false,
        }
    }

    /// A stream that replays a whole message as chunks: its text word by word, then each
    /// tool call, then usage and finish reason. For models that cannot stream.
    pub fn from_message(message: AssistantMessage) -> Self {
        let mut chunks: Vec<ChatChunk> = message
            .content
            .split_inclusive(' ')
            .map(ChatChunk::text)
            .collect();
        for (index, call) in message.tool_calls.iter().enumerate() {
            chunks.push(ChatChunk {
                tool_calls: vec![ToolCallChunk {
                    index,
                    id: Some(call.id.clone()),
                    name: Some(call.name.clone()),
                    arguments: call.arguments.to_string(),
                }],
                ..ChatChunk::default()
            });
        }
        chunks.push(ChatChunk {
            usage: message.usage,
            finish_reason: message.finish_reason.clone(),
            model: message.model.clone(),
            response_id: message.response_id.clone(),
            ..ChatChunk::default()
        });
        let mut stream = Self::new(futures::stream::iter(chunks.into_iter().map(Ok)));
        stream.message_id = message.id;
        stream
    }

    /// The id the assembled message will have.
    pub fn message_id(&self) -> &str {
        &self.message_id
    }

    /// Drains the rest of the stream and returns the whole reply.
    pub async fn final_message(mut self) -> Result<AssistantMessage> {
        use futures::StreamExt;
        while let Some(chunk) = self.next().await {
            chunk?;
        }
        let id = std::mem::take(&mut self.message_id);
        std::mem::take(&mut self.assembler).finish(id)
    }

    /// Calls `hook` once when the stream ends (with the usage seen, or the error).
    pub(crate) fn on_finish(
        mut self,
        hook: impl FnOnce(std::result::Result<Option<Usage>, &LlmError>, Instant) + Send + 'static,
    ) -> Self {
        self.hooks.push(Box::new(hook));
        self
    }

    pub(crate) fn forward_to(mut self, forwarder: Option<GraphForwarder>) -> Self {
        self.forwarder = forwarder;
        self
    }

    fn finish_with(&mut self, outcome: std::result::Result<Option<Usage>, &LlmError>) {
        self.finished = true;
        for hook in self.hooks.drain(..) {
            hook(outcome, self.started);
        }
    }
}

impl Stream for ChatStream {
    type Item = Result<ChatChunk>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.finished {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                self.assembler.push(&chunk);
                if let Some(forwarder) = &self.forwarder {
                    forwarder.chunk(&self.message_id, &chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(err))) => {
                self.finish_with(Err(&err));
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => {
                let usage = self.assembler.usage();
                self.finish_with(Ok(usage));
                Poll::Ready(None)
            }
        }
    }
}
