//! Ollama's chat API (`POST {host}/api/chat`, newline-delimited JSON when streaming).

use async_trait::async_trait;
use reqwest::header::HeaderMap;
use serde_json::{Map, Value, json};

use super::openai::function_tools;
use super::{Framing, Step, chunk_stream, env_var, parse_payload, string_of, trim_url};
use crate::chunk::{ChatChunk, ToolCallChunk, parse_arguments};
use crate::error::{LlmError, Result, shorten};
use crate::message::{AssistantMessage, Message, ToolCall, Usage, new_message_id};
use crate::model::ChatModel;
use crate::request::ChatRequest;
use crate::stream::ChatStream;
use crate::transport::{ClientOptions, Transport};

/// The default Ollama host.
pub const OLLAMA_HOST: &str = "http://127.0.0.1:11434";

const PROVIDER: &str = "ollama";

/// A model served by Ollama.
///
/// Ollama has no tool-choice setting: [`ToolChoice`](crate::ToolChoice) is not sent.
/// Structured output uses its `format` field with the JSON Schema.
#[derive(Debug, Clone)]
pub struct OllamaModel {
    model: String,
    host: String,
    transport: Transport,
}

impl OllamaModel {
    /// A model on the Ollama server at `host` (e.g. `http://127.0.0.1:11434`; a bare
    /// `host:port` works too).
    pub fn new(model: impl Into<String>, host: impl AsRef<str>) -> Self {
        Self {
            model: model.into(),
            host: normalize_host(host.as_ref()),
            transport: Transport::new(PROVIDER, ClientOptions::default()),
        }
    }

    /// A model on the server named by `OLLAMA_HOST`, or the local default.
    pub fn from_env(model: impl Into<String>) -> Self {
        Self::new(
            model,
            env_var("OLLAMA_HOST").unwrap_or_else(|| OLLAMA_HOST.into()),
        )
    }

    /// Sets timeouts, retries and limits.
    #[must_use]
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.transport = Transport::new(PROVIDER, options);
        self
    }

    fn url(&self) -> String {
        format!("{}/api/chat", self.host)
    }

    /// The request body, exactly as sent.
    pub fn request_body(&self, request: &ChatRequest, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.model));
        body.insert(
            "messages".into(),
            request.messages.iter().map(wire_message).collect(),
        );
        if !request.tools.is_empty() {
            body.insert("tools".into(), function_tools(&request.tools));
        }
        if let Some(format) = &request.response_format {
            body.insert("format".into(), format.schema.clone());
        }
        let mut options = Map::new();
        if let Some(t) = request.options.temperature {
            options.insert("temperature".into(), json!(t));
        }
        if let Some(max) = request.options.max_tokens {
            options.insert("num_predict".into(), json!(max));
        }
        if !request.options.stop.is_empty() {
            options.insert("stop".into(), json!(request.options.stop));
        }
        if !options.is_empty() {
            body.insert("options".into(), Value::Object(options));
        }
        body.insert("stream".into(), json!(stream));
        Value::Object(body)
    }
}

/// `host` as a URL: a scheme is added when missing, and `0.0.0.0` (a listen address) is
/// reached as `127.0.0.1`, as Ollama's own client does.
fn normalize_host(host: &str) -> String {
    let host = trim_url(host);
    let host = if host.contains("://") {
        host
    } else {
        format!("http://{host}")
    };
    host.replacen("://0.0.0.0", "://127.0.0.1", 1)
}

fn wire_message(message: &Message) -> Value {
    match message {
        Message::System(m) => json!({"role": "system", "content": m.content}),
        Message::User(m) => json!({"role": "user", "content": m.content}),
        Message::Assistant(m) => {
            let mut out = json!({"role": "assistant", "content": m.content});
            if !m.tool_calls.is_empty() {
                out["tool_calls"] = m
                    .tool_calls
                    .iter()
                    .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            out
        }
        Message::Tool(m) => {
            let mut out = json!({"role": "tool", "content": m.content});
            if let Some(name) = &m.name {
                out["tool_name"] = json!(name);
            }
            out
        }
    }
}

fn usage_of(value: &Value) -> Option<Usage> {
    let input = value.get("prompt_eval_count").and_then(Value::as_u64);
    let output = value.get("eval_count").and_then(Value::as_u64);
    (input.is_some() || output.is_some()).then(|| Usage {
        input_tokens: input.unwrap_or(0),
        output_tokens: output.unwrap_or(0),
    })
}

fn tool_calls_of(message: &Value) -> Result<Vec<ToolCall>> {
    let mut calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").cloned().unwrap_or_default();
        let Some(name) = string_of(&function, "name") else {
            return Err(LlmError::MalformedResponse {
                provider: PROVIDER,
                detail: "a tool call has no name".into(),
                raw: shorten(&call.to_string()),
            });
        };
        let arguments = match function.get("arguments") {
            Some(Value::String(raw)) => parse_arguments(&name, raw)?,
            Some(other) => other.clone(),
            None => json!({}),
        };
        let id = string_of(call, "id").unwrap_or_else(|| ToolCall::new("", Value::Null).id);
        calls.push(ToolCall {
            id,
            name,
            arguments,
        });
    }
    Ok(calls)
}

fn check_error(value: &Value) -> Result<()> {
    match value.get("error") {
        Some(error) => Err(LlmError::Http {
            provider: PROVIDER,
            status: 200,
            message: error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned),
            retry_after: None,
        }),
        None => Ok(()),
    }
}

pub(super) fn parse_reply(body: &Value) -> Result<AssistantMessage> {
    check_error(body)?;
    let message = body
        .get("message")
        .ok_or_else(|| LlmError::MalformedResponse {
            provider: PROVIDER,
            detail: "no `message`".into(),
            raw: shorten(&body.to_string()),
        })?;
    Ok(AssistantMessage {
        id: new_message_id(),
        content: string_of(message, "content").unwrap_or_default(),
        tool_calls: tool_calls_of(message)?,
        usage: usage_of(body),
        finish_reason: string_of(body, "done_reason"),
        model: string_of(body, "model"),
        response_id: None,
    })
}

#[async_trait]
impl ChatModel for OllamaModel {
    fn model_name(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        let body = self.request_body(&request, false);
        let reply = self
            .transport
            .post_json(&self.url(), &HeaderMap::new(), &body)
            .await?;
        parse_reply(&reply)
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        let body = self.request_body(&request, true);
        let admitted = self
            .transport
            .post_stream(&self.url(), &HeaderMap::new(), &body)
            .await?;
        let mut next_index = 0;
        let chunks = chunk_stream(
            admitted,
            PROVIDER,
            Framing::Lines,
            "line with `\"done\": true`",
            move |line| {
                let value = parse_payload(PROVIDER, line)?;
                check_error(&value)?;
                let message = value.get("message").cloned().unwrap_or_default();
                let mut chunk = ChatChunk {
                    content: string_of(&message, "content").unwrap_or_default(),
                    model: string_of(&value, "model"),
                    ..ChatChunk::default()
                };
                for call in tool_calls_of(&message)? {
                    chunk.tool_calls.push(ToolCallChunk {
                        index: next_index,
                        id: Some(call.id),
                        name: Some(call.name),
                        arguments: call.arguments.to_string(),
                    });
                    next_index += 1;
                }
                if value.get("done").and_then(Value::as_bool) == Some(true) {
                    chunk.usage = usage_of(&value);
                    chunk.finish_reason = string_of(&value, "done_reason");
                    return Ok(Step::Done(Some(chunk)));
                }
                Ok(Step::Chunk(chunk))
            },
        );
        Ok(ChatStream::new(chunks))
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_host;

    #[test]
    fn hosts_without_scheme_or_with_a_listen_address_are_reachable() {
        assert_eq!(normalize_host("localhost:11434"), "http://localhost:11434");
        assert_eq!(
            normalize_host("http://0.0.0.0:11434/"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(
            normalize_host("https://ollama.example:443"),
            "https://ollama.example:443"
        );
    }
}
