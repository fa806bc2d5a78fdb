//! The pieces of a streamed reply ([`ChatChunk`], [`ToolCallChunk`]) and their assembly
//! into one message ([`MessageAssembler`]): the data that both a chat stream and a graph
//! run's `messages` stream carry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, ToolCall, Usage};

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
