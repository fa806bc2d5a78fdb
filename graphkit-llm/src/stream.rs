//! Streamed replies: [`ChatStream`], a stream of [`ChatChunk`]s that assembles them into one
//! message and forwards them to a graph run.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::Stream;
use futures::stream::BoxStream;

use crate::chunk::{ChatChunk, MessageAssembler, ToolCallChunk};
use crate::error::{LlmError, Result};
use crate::graph::GraphForwarder;
use crate::message::{AssistantMessage, Usage, new_message_id};

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
