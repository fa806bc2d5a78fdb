//! Test doubles: models that answer from a script or a closure, never from a network.
//!
//! They exist so graphs can be tested and run offline deterministically. They are not
//! models of anything: their replies are exactly what the test wrote.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, Message, ToolCall, new_message_id};
use crate::model::ChatModel;
use crate::request::ChatRequest;

impl From<&str> for AssistantMessage {
    fn from(text: &str) -> Self {
        Self::text(text)
    }
}

impl From<String> for AssistantMessage {
    fn from(text: String) -> Self {
        Self::text(text)
    }
}

impl From<ToolCall> for AssistantMessage {
    fn from(call: ToolCall) -> Self {
        Self::with_tool_calls("", vec![call])
    }
}

impl From<Vec<ToolCall>> for AssistantMessage {
    fn from(calls: Vec<ToolCall>) -> Self {
        Self::with_tool_calls("", calls)
    }
}

/// **Test double.** A model that returns replies from a queue, in order, and records the
/// requests it received.
///
/// Calling it more often than it has replies is an error
/// ([`LlmError::ScriptExhausted`]). Clones share the queue and the record.
///
/// ```
/// use graphkit_llm::{AssistantMessage, ChatModel, Message, ScriptedModel, ToolCall};
/// use serde_json::json;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     AssistantMessage::with_tool_calls("", vec![ToolCall::new("search", json!({"q": "rust"}))]),
///     AssistantMessage::text("Rust is a language."),
/// ]);
/// let first = model.invoke(&[Message::user("What is Rust?")]).await?;
/// assert_eq!(first.tool_calls[0].name, "search");
/// let second = model.invoke(&[Message::user("And?")]).await?;
/// assert_eq!(second.content, "Rust is a language.");
/// assert!(model.invoke(&[Message::user("More?")]).await.is_err());
/// assert_eq!(model.requests().len(), 3);
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    name: String,
    given: usize,
    script: Arc<Mutex<VecDeque<AssistantMessage>>>,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl ScriptedModel {
    /// A model that answers with `replies`, one per call.
    pub fn new<R: Into<AssistantMessage>>(replies: impl IntoIterator<Item = R>) -> Self {
        let script: VecDeque<AssistantMessage> = replies.into_iter().map(Into::into).collect();
        Self {
            name: "scripted".into(),
            given: script.len(),
            script: Arc::new(Mutex::new(script)),
            requests: Arc::default(),
        }
    }

    /// Sets the name reported as [`model_name`](ChatModel::model_name).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        lock(&self.requests).clone()
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        lock(&self.requests).push(request);
        let mut reply = lock(&self.script)
            .pop_front()
            .ok_or(LlmError::ScriptExhausted { given: self.given })?;
        if reply.id.is_empty() {
            reply.id = new_message_id();
        }
        Ok(reply)
    }
}

type ReplyFn = dyn Fn(&ChatRequest) -> Result<AssistantMessage> + Send + Sync;

/// **Test double.** A model whose reply is computed by a closure over the request.
///
/// ```
/// use graphkit_llm::{ChatModel, FunctionModel, Message};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let echo = FunctionModel::from_text(|messages| format!("you said {} things", messages.len()));
/// let reply = echo.invoke(&[Message::user("a"), Message::user("b")]).await?;
/// assert_eq!(reply.content, "you said 2 things");
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct FunctionModel {
    name: String,
    reply: Arc<ReplyFn>,
}

impl std::fmt::Debug for FunctionModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FunctionModel")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl FunctionModel {
    /// A model answering with `reply(request)`. Return [`LlmError::Function`] to fail a call.
    pub fn new(
        reply: impl Fn(&ChatRequest) -> Result<AssistantMessage> + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: "function".into(),
            reply: Arc::new(reply),
        }
    }

    /// A model answering with the text `reply(messages)`.
    pub fn from_text(reply: impl Fn(&[Message]) -> String + Send + Sync + 'static) -> Self {
        Self::new(move |request| Ok(AssistantMessage::text(reply(&request.messages))))
    }

    /// A model that calls tools: `reply(messages)` gives the calls (none means "answer
    /// with the text of the last message").
    pub fn from_tool_calls(
        reply: impl Fn(&[Message]) -> Vec<ToolCall> + Send + Sync + 'static,
    ) -> Self {
        Self::new(move |request| {
            let calls = reply(&request.messages);
            let text = if calls.is_empty() {
                request
                    .messages
                    .last()
                    .map(|m| m.text().to_owned())
                    .unwrap_or_default()
            } else {
                String::new()
            };
            Ok(AssistantMessage::with_tool_calls(text, calls))
        })
    }

    /// Sets the name reported as [`model_name`](ChatModel::model_name).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }
}

#[async_trait]
impl ChatModel for FunctionModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        (self.reply)(&request)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
