//! OpenAI chat completions (`POST {base}/chat/completions`), also spoken by every
//! OpenAI-compatible server (vLLM, llama.cpp server, LM Studio, ...).

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::{
    Framing, Step, chunk_stream, env_var, parse_payload, stream_error, string_of, trim_url,
};
use crate::chunk::{ChatChunk, ToolCallChunk, parse_arguments};
use crate::error::{LlmError, Result, shorten};
use crate::message::{AssistantMessage, Message, ToolCall, Usage, new_message_id};
use crate::model::ChatModel;
use crate::request::{ChatRequest, ResponseFormat, ToolChoice, ToolSpec};
use crate::schema::openai_strict;
use crate::stream::ChatStream;
use crate::transport::{ClientOptions, Transport};

/// The default base URL of the OpenAI API.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the OpenAI chat completions API, or any server that speaks it.
///
/// ```
/// use graphkit_llm::OpenAiModel;
///
/// // A local llama.cpp or vLLM server; no key is sent unless you set one.
/// let model = OpenAiModel::compatible("http://127.0.0.1:8080/v1", "qwen2.5");
/// ```
#[derive(Debug, Clone)]
pub struct OpenAiModel {
    model: String,
    base_url: String,
    api_key: Option<String>,
    compatible: bool,
    transport: Transport,
}

impl OpenAiModel {
    /// A model on the OpenAI API with this key.
    pub fn new(model: impl Into<String>, api_key: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: OPENAI_BASE_URL.into(),
            api_key: Some(api_key.into()),
            compatible: false,
            transport: Transport::new("openai", ClientOptions::default()),
        }
    }

    /// A model on the OpenAI API, with the key from `OPENAI_API_KEY` and the base URL from
    /// `OPENAI_BASE_URL` (when set).
    pub fn from_env(model: impl Into<String>) -> Result<Self> {
        let key = env_var("OPENAI_API_KEY").ok_or(LlmError::MissingApiKey {
            provider: "openai",
            var: "OPENAI_API_KEY",
        })?;
        let mut this = Self::new(model, key);
        if let Some(base) = env_var("OPENAI_BASE_URL") {
            this.base_url = trim_url(&base);
        }
        Ok(this)
    }

    /// A model on any OpenAI-compatible server at `base_url` (the URL that
    /// `/chat/completions` is appended to, usually ending in `/v1`). No key is sent unless
    /// set with [`with_api_key`](Self::with_api_key).
    pub fn compatible(base_url: impl AsRef<str>, model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: trim_url(base_url.as_ref()),
            api_key: None,
            compatible: true,
            transport: Transport::new("openai-compatible", ClientOptions::default()),
        }
    }

    /// Uses another base URL.
    #[must_use]
    pub fn with_base_url(mut self, base_url: impl AsRef<str>) -> Self {
        self.base_url = trim_url(base_url.as_ref());
        self
    }

    /// Sends this key as a bearer token.
    #[must_use]
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Sets timeouts, retries and limits.
    #[must_use]
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.transport = Transport::new(self.provider(), options);
        self
    }

    fn provider(&self) -> &'static str {
        if self.compatible {
            "openai-compatible"
        } else {
            "openai"
        }
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn headers(&self) -> Result<HeaderMap> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            let value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                LlmError::InvalidRequest(
                    "the API key contains characters not allowed in a header".into(),
                )
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        Ok(headers)
    }

    /// The `response_format` field: `json_schema`, in strict mode when the format asks for
    /// it, or (unset) on the OpenAI API when the schema can be made strict.
    fn response_format(&self, format: &ResponseFormat) -> Result<Value> {
        let strict_schema = match format.strict {
            Some(false) => None,
            None if self.compatible => None,
            None => openai_strict(&format.schema)
                .inspect_err(|reason| {
                    tracing::debug!(format = %format.name, %reason, "schema cannot use strict mode; sending it without");
                })
                .ok(),
            Some(true) => Some(openai_strict(&format.schema).map_err(|reason| {
                LlmError::InvalidRequest(format!(
                    "the schema `{}` cannot be sent in OpenAI strict mode: {reason}; \
                     turn strict mode off for it (`.strict(false)`) or change the type",
                    format.name
                ))
            })?),
        };
        let mut json_schema = json!({"name": format.name});
        if let Some(description) = &format.description {
            json_schema["description"] = json!(description);
        }
        match strict_schema {
            Some(schema) => {
                json_schema["schema"] = schema;
                json_schema["strict"] = json!(true);
            }
            None => json_schema["schema"] = format.schema.clone(),
        }
        Ok(json!({"type": "json_schema", "json_schema": json_schema}))
    }

    /// The request body, exactly as sent.
    ///
    /// # Errors
    ///
    /// [`LlmError::InvalidRequest`] when the request forces strict mode on a schema that
    /// strict mode cannot express.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Result<Value> {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "messages".into(),
            Value::Array(request.messages.iter().map(wire_message).collect()),
        );
        if !request.tools.is_empty() {
            body.insert("tools".into(), function_tools(&request.tools));
        }
        let options = &request.options;
        if let Some(choice) = &options.tool_choice {
            let choice = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
            };
            body.insert("tool_choice".into(), choice);
        }
        if let Some(t) = options.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(max) = options.max_tokens {
            // OpenAI replaced `max_tokens` (which newer models reject); compatible servers
            // still read the old name.
            let key = if self.compatible {
                "max_tokens"
            } else {
                "max_completion_tokens"
            };
            body.insert(key.into(), json!(max));
        }
        if !options.stop.is_empty() {
            body.insert("stop".into(), json!(options.stop));
        }
        if let Some(format) = &request.response_format {
            body.insert("response_format".into(), self.response_format(format)?);
        }
        if stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(Value::Object(body))
    }
}

/// Tools in the `{"type": "function", "function": {...}}` shape (also used by Ollama).
pub(crate) fn function_tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.parameters,
            }})
        })
        .collect()
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System(m) => json!({"role": "system", "content": m.content}),
        Message::User(m) => json!({"role": "user", "content": m.content}),
        Message::Assistant(m) => {
            let mut out = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                if m.content.is_empty() {
                    out["content"] = Value::Null;
                }
                out["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name, "arguments": c.arguments.to_string(),
                        }})
                    })
                    .collect();
            }
            out
        }
        Message::Tool(m) => {
            json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        }
    }
}

fn usage_of(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|u| u.is_object())?;
    Some(Usage {
        input_tokens: usage
            .get("prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        output_tokens: usage
            .get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    })
}

pub(super) fn parse_reply(provider: &'static str, body: &Value) -> Result<AssistantMessage> {
    let malformed = |detail: &str| LlmError::MalformedResponse {
        provider,
        detail: detail.into(),
        raw: shorten(&body.to_string()),
    };
    let choice = body
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| malformed("no `choices[0]`"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("no `choices[0].message`"))?;
    let mut tool_calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call
            .get("function")
            .ok_or_else(|| malformed("a tool call has no `function`"))?;
        let name =
            string_of(function, "name").ok_or_else(|| malformed("a tool call has no name"))?;
        let arguments = match function.get("arguments") {
            Some(Value::String(raw)) => parse_arguments(&name, raw)?,
            Some(other) => other.clone(),
            None => Value::Object(Map::new()),
        };
        let id = string_of(call, "id").unwrap_or_else(|| ToolCall::new("", Value::Null).id);
        tool_calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Ok(AssistantMessage {
        id: new_message_id(),
        content: string_of(message, "content").unwrap_or_default(),
        tool_calls,
        usage: usage_of(body),
        finish_reason: string_of(choice, "finish_reason"),
        model: string_of(body, "model"),
        response_id: string_of(body, "id"),
    })
}

pub(super) fn parse_stream_payload(provider: &'static str, payload: &str) -> Result<Step> {
    if payload.trim() == "[DONE]" {
        return Ok(Step::Done(None));
    }
    let value = parse_payload(provider, payload)?;
    if let Some(error) = value.get("error") {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_owned);
        return Err(stream_error(provider, &message));
    }
    let mut chunk = ChatChunk {
        usage: usage_of(&value),
        model: string_of(&value, "model"),
        response_id: string_of(&value, "id"),
        ..ChatChunk::default()
    };
    if let Some(choice) = value.get("choices").and_then(|c| c.get(0)) {
        chunk.finish_reason = string_of(choice, "finish_reason");
        if let Some(delta) = choice.get("delta") {
            chunk.content = string_of(delta, "content").unwrap_or_default();
            for (position, call) in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let function = call.get("function");
                chunk.tool_calls.push(ToolCallChunk {
                    index: call
                        .get("index")
                        .and_then(Value::as_u64)
                        .map_or(position, |i| i as usize),
                    id: string_of(call, "id"),
                    name: function.and_then(|f| string_of(f, "name")),
                    arguments: function
                        .and_then(|f| string_of(f, "arguments"))
                        .unwrap_or_default(),
                });
            }
        }
    }
    Ok(Step::Chunk(chunk))
}

#[async_trait]
impl ChatModel for OpenAiModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        let body = self.request_body(&request, false)?;
        let reply = self
            .transport
            .post_json(&self.url(), &self.headers()?, &body)
            .await?;
        parse_reply(self.provider(), &reply)
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        let body = self.request_body(&request, true)?;
        let admitted = self
            .transport
            .post_stream(&self.url(), &self.headers()?, &body)
            .await?;
        let provider = self.provider();
        let chunks = chunk_stream(
            admitted,
            provider,
            Framing::Sse,
            "`data: [DONE]`",
            move |payload| parse_stream_payload(provider, payload),
        );
        Ok(ChatStream::new(chunks))
    }
}
