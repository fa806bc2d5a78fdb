//! Anthropic messages API (`POST {base}/v1/messages`).

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::{
    Framing, Step, chunk_stream, env_var, parse_payload, stream_error, string_of, trim_url,
};
use crate::chunk::{ChatChunk, ToolCallChunk};
use crate::error::{LlmError, Result, shorten};
use crate::message::{AssistantMessage, Message, ToolCall, Usage, new_message_id};
use crate::model::ChatModel;
use crate::request::{ChatRequest, ToolChoice};
use crate::stream::ChatStream;
use crate::transport::{ClientOptions, Transport};

/// The default base URL of the Anthropic API (a host, without `/v1`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is sent when the call does not set it.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const PROVIDER: &str = "anthropic";

/// A model behind the Anthropic messages API.
///
/// Structured output uses forced tool use: the schema becomes a tool the model must call,
/// and the call's input is the reply.
#[derive(Debug, Clone)]
pub struct AnthropicModel {
    model: String,
    base_url: String,
    api_key: String,
    transport: Transport,
}

impl AnthropicModel {
    /// A model on the Anthropic API with this key.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: ANTHROPIC_BASE_URL.into(),
            api_key: api_key.into(),
            transport: Transport::new(PROVIDER, ClientOptions::default()),
        }
    }

    /// A model with the key from `ANTHROPIC_API_KEY` and the base URL (a host, without
    /// `/v1`) from `ANTHROPIC_BASE_URL` when set.
    pub fn from_env(model: impl Into<String>) -> Result<Self> {
        let key = env_var("ANTHROPIC_API_KEY").ok_or(LlmError::MissingApiKey {
            provider: PROVIDER,
            var: "ANTHROPIC_API_KEY",
        })?;
        let mut this = Self::new(model, key);
        if let Some(base) = env_var("ANTHROPIC_BASE_URL") {
            this = this.with_base_url(base);
        }
        Ok(this)
    }

    /// Uses another base URL: the host that `/v1/messages` is appended to.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl AsRef<str>) -> Self {
        self.base_url = trim_url(base_url.as_ref());
        self
    }

    /// Sets timeouts, retries and limits.
    #[must_use]
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.transport = Transport::new(PROVIDER, options);
        self
    }

    fn url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn headers(&self) -> Result<HeaderMap> {
        let mut headers = HeaderMap::new();
        let key = HeaderValue::from_str(&self.api_key).map_err(|_| {
            LlmError::InvalidRequest(
                "the API key contains characters not allowed in a header".into(),
            )
        })?;
        headers.insert(HeaderName::from_static("x-api-key"), key);
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(ANTHROPIC_VERSION),
        );
        Ok(headers)
    }

    /// The request body, exactly as sent.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "max_tokens".into(),
            json!(request.options.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
        );
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::System(s) => Some(s.content.as_str()),
                _ => None,
            })
            .collect();
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), wire_messages(&request.messages));

        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        let mut tool_choice = request
            .options
            .tool_choice
            .as_ref()
            .map(|choice| match choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            });
        if let Some(format) = &request.response_format {
            let description = format
                .description
                .clone()
                .unwrap_or_else(|| "Give the answer as structured output.".into());
            tools.push(json!({"name": format.name, "description": description, "input_schema": format.schema}));
            tool_choice = Some(json!({"type": "tool", "name": format.name}));
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(choice) = tool_choice {
            body.insert("tool_choice".into(), choice);
        }
        if let Some(t) = request.options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if !request.options.stop.is_empty() {
            body.insert("stop_sequences".into(), json!(request.options.stop));
        }
        if stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }
}

/// The conversation as Anthropic wants it: system messages lifted out, tool results as user
/// turns, and consecutive turns of one role merged.
fn wire_messages(messages: &[Message]) -> Value {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::System(_) => continue,
            Message::User(m) => ("user", vec![json!({"type": "text", "text": m.content})]),
            Message::Assistant(m) => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for call in &m.tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
                }
                ("assistant", blocks)
            }
            Message::Tool(m) => {
                let mut block = json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content});
                if m.is_error {
                    block["is_error"] = json!(true);
                }
                ("user", vec![block])
            }
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns
        .into_iter()
        .map(|(role, blocks)| {
            let content = match blocks.as_slice() {
                [only] if only["type"] == "text" => only["text"].clone(),
                _ => Value::Array(blocks),
            };
            json!({"role": role, "content": content})
        })
        .collect()
}

fn usage_of(usage: Option<&Value>) -> Option<Usage> {
    let usage = usage.filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: usage
            .get("input_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: usage
            .get("output_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

pub(super) fn parse_reply(body: &Value, structured: Option<&str>) -> Result<AssistantMessage> {
    let malformed = |detail: &str| LlmError::MalformedResponse {
        provider: PROVIDER,
        detail: detail.into(),
        raw: shorten(&body.to_string()),
    };
    let blocks = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no `content` array"))?;
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => content.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => {
                let name = string_of(block, "name")
                    .ok_or_else(|| malformed("a tool_use block has no name"))?;
                let arguments = block.get("input").cloned().unwrap_or_else(|| json!({}));
                if structured == Some(name.as_str()) {
                    content = arguments.to_string();
                    continue;
                }
                let id =
                    string_of(block, "id").unwrap_or_else(|| ToolCall::new("", Value::Null).id);
                tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            _ => {}
        }
    }
    Ok(AssistantMessage {
        id: new_message_id(),
        content,
        tool_calls,
        usage: usage_of(body.get("usage")),
        finish_reason: string_of(body, "stop_reason"),
        model: string_of(body, "model"),
        response_id: string_of(body, "id"),
    })
}

pub(super) fn parse_stream_payload(payload: &str) -> Result<Step> {
    let value = parse_payload(PROVIDER, payload)?;
    let index = value.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
    let chunk = match value.get("type").and_then(Value::as_str) {
        Some("message_start") => {
            let message = value.get("message").cloned().unwrap_or_default();
            ChatChunk {
                usage: usage_of(message.get("usage")),
                model: string_of(&message, "model"),
                response_id: string_of(&message, "id"),
                ..ChatChunk::default()
            }
        }
        Some("content_block_start") => {
            let block = value.get("content_block").cloned().unwrap_or_default();
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") => ChatChunk {
                    tool_calls: vec![ToolCallChunk {
                        index,
                        id: string_of(&block, "id"),
                        name: string_of(&block, "name"),
                        arguments: String::new(),
                    }],
                    ..ChatChunk::default()
                },
                _ => ChatChunk::text(string_of(&block, "text").unwrap_or_default()),
            }
        }
        Some("content_block_delta") => {
            let delta = value.get("delta").cloned().unwrap_or_default();
            match delta.get("type").and_then(Value::as_str) {
                Some("input_json_delta") => ChatChunk {
                    tool_calls: vec![ToolCallChunk {
                        index,
                        arguments: string_of(&delta, "partial_json").unwrap_or_default(),
                        ..ToolCallChunk::default()
                    }],
                    ..ChatChunk::default()
                },
                Some("text_delta") => {
                    ChatChunk::text(string_of(&delta, "text").unwrap_or_default())
                }
                _ => return Ok(Step::Skip),
            }
        }
        Some("message_delta") => ChatChunk {
            finish_reason: value.get("delta").and_then(|d| string_of(d, "stop_reason")),
            usage: usage_of(value.get("usage")),
            ..ChatChunk::default()
        },
        Some("message_stop") => return Ok(Step::Done(None)),
        Some("error") => {
            let message = value
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(stream_error(PROVIDER, message));
        }
        _ => return Ok(Step::Skip),
    };
    Ok(Step::Chunk(chunk))
}

#[async_trait]
impl ChatModel for AnthropicModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        let body = self.request_body(&request, false);
        let reply = self
            .transport
            .post_json(&self.url(), &self.headers()?, &body)
            .await?;
        parse_reply(
            &reply,
            request.response_format.as_ref().map(|f| f.name.as_str()),
        )
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        if request.response_format.is_some() {
            // Forced tool use streams as tool-call pieces; replay the parsed reply instead.
            return Ok(ChatStream::from_message(self.chat(request).await?));
        }
        let body = self.request_body(&request, true);
        let admitted = self
            .transport
            .post_stream(&self.url(), &self.headers()?, &body)
            .await?;
        let chunks = chunk_stream(
            admitted,
            PROVIDER,
            Framing::Sse,
            "`message_stop` event",
            parse_stream_payload,
        );
        Ok(ChatStream::new(chunks))
    }
}
