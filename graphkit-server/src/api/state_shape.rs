//! How the thread streaming protocol shows state (`values` and `updates` payloads), as the
//! reference normalizes it: every LangChain message (a `messages` list's items, and any
//! list item with a message `type`) is reduced to the protocol's message shape, and
//! `__interrupt__` is left out at every level.
//!
//! A protocol message keeps `type` (`assistant` read as `ai`, `user` as `human`),
//! `content` (a string stays one; a list becomes protocol content blocks), `id`, `name`,
//! `example`, a non-empty `response_metadata`; a tool message its `tool_call_id`, `status`
//! and `artifact`; an assistant message its `tool_calls` (`{type: "tool_call", name, args,
//! id}`, arguments given as JSON text parsed) and `invalid_tool_calls`. The rest
//! (`additional_kwargs`, `usage_metadata`, empty lists) is dropped.

use serde_json::{Map, Value, json};

/// The message types the protocol's state shows as messages.
const MESSAGE_TYPES: &[&str] = &[
    "human",
    "user",
    "ai",
    "assistant",
    "system",
    "tool",
    "function",
    "remove",
];

/// The content block types the protocol knows; others are wrapped as `non_standard`.
const BLOCK_TYPES: &[&str] = &[
    "text",
    "reasoning",
    "tool_call",
    "tool_call_chunk",
    "invalid_tool_call",
    "server_tool_call",
    "server_tool_call_chunk",
    "server_tool_call_result",
    "image",
    "audio",
    "video",
    "file",
    "non_standard",
];

/// A `values` or `updates` payload as the protocol shows it.
pub(super) fn normalize_state(value: Value) -> Value {
    match value {
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| match message_type(&item) {
                    Some(_) => normalize_message(item),
                    None => normalize_state(item),
                })
                .collect(),
        ),
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .filter(|(key, _)| key != "__interrupt__")
                .map(|(key, value)| {
                    let value = match value {
                        Value::Array(items) if key == "messages" => Value::Array(
                            items
                                .into_iter()
                                .map(|item| match message_type(&item) {
                                    Some(_) => normalize_message(item),
                                    None => item,
                                })
                                .collect(),
                        ),
                        other => normalize_state(other),
                    };
                    (key, value)
                })
                .collect(),
        ),
        other => other,
    }
}

/// The text of a LangChain message's `content`: the string, or its text blocks joined.
pub(super) fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| match b {
                Value::String(text) => Some(text.as_str()),
                block => block
                    .get("text")
                    .and_then(Value::as_str)
                    .filter(|_| block.get("type").and_then(Value::as_str) == Some("text")),
            })
            .collect(),
        _ => String::new(),
    }
}

/// The protocol type of a state message (`None`: the value is no message).
fn message_type(value: &Value) -> Option<&'static str> {
    let kind = value.get("type").and_then(Value::as_str)?;
    let kind = match kind {
        "assistant" => "ai",
        "user" => "human",
        other => other,
    };
    MESSAGE_TYPES.iter().copied().find(|&t| t == kind)
}

fn normalize_message(value: Value) -> Value {
    let Some(kind) = message_type(&value) else {
        return value;
    };
    let Value::Object(mut fields) = value else {
        return Value::Null;
    };
    let mut message = Map::new();
    message.insert("type".into(), json!(kind));
    let content = fields.remove("content").unwrap_or_else(|| json!(""));
    message.insert("content".into(), normalize_content(content));
    for key in ["id", "name"] {
        if let Some(text) = fields.remove(key).filter(Value::is_string) {
            message.insert(key.into(), text);
        }
    }
    if matches!(kind, "ai" | "human")
        && let Some(example) = fields.remove("example").filter(Value::is_boolean)
    {
        message.insert("example".into(), example);
    }
    if let Some(metadata) = fields
        .remove("response_metadata")
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
    {
        message.insert("response_metadata".into(), metadata);
    }
    match kind {
        "tool" => {
            if let Some(id) = fields.remove("tool_call_id").filter(Value::is_string) {
                message.insert("tool_call_id".into(), id);
            }
            if let Some(status) = fields
                .remove("status")
                .filter(|s| matches!(s.as_str(), Some("success" | "error")))
            {
                message.insert("status".into(), status);
            }
            if let Some(artifact) = fields.remove("artifact") {
                message.insert("artifact".into(), artifact);
            }
        }
        "ai" => {
            let raw_calls = match fields.remove("tool_calls") {
                Some(Value::Array(calls)) if !calls.is_empty() => calls,
                _ => match fields
                    .get_mut("additional_kwargs")
                    .and_then(|k| k.get_mut("tool_calls"))
                    .map(Value::take)
                {
                    Some(Value::Array(calls)) => calls,
                    _ => Vec::new(),
                },
            };
            let (calls, invalid_from_calls) = tool_calls(raw_calls);
            let invalid = match fields.remove("invalid_tool_calls") {
                Some(Value::Array(invalid)) if !invalid.is_empty() => {
                    invalid.iter().filter_map(invalid_tool_call).collect()
                }
                _ => invalid_from_calls,
            };
            if !calls.is_empty() {
                message.insert("tool_calls".into(), Value::Array(calls));
            }
            if !invalid.is_empty() {
                message.insert("invalid_tool_calls".into(), Value::Array(invalid));
            }
        }
        _ => {}
    }
    Value::Object(message)
}

/// A message's content: a string as it is, a list as protocol content blocks.
fn normalize_content(content: Value) -> Value {
    let Value::Array(entries) = content else {
        return content;
    };
    let blocks: Vec<Value> = entries
        .iter()
        .filter_map(|entry| match entry {
            Value::String(text) => Some(json!({"type": "text", "text": text})),
            block => content_block(block),
        })
        .collect();
    if blocks.is_empty() {
        Value::Array(entries)
    } else {
        Value::Array(blocks)
    }
}

/// One content block as the protocol knows it: a known type as it is, an OpenAI-style
/// `image_url` or `input_audio` converted, anything else `non_standard`.
fn content_block(block: &Value) -> Option<Value> {
    let kind = block.get("type").and_then(Value::as_str)?;
    if BLOCK_TYPES.contains(&kind) {
        return Some(block.clone());
    }
    match kind {
        "image_url" => {
            let image = block.get("image_url")?;
            let url = image
                .as_str()
                .or_else(|| image.get("url").and_then(Value::as_str))?;
            Some(json!({"type": "image", "url": url}))
        }
        "input_audio" => {
            let audio = block.get("input_audio").filter(|a| a.is_object())?;
            let mut out = json!({"type": "audio"});
            for key in ["data", "mime_type"] {
                if let Some(value) = audio.get(key).filter(|v| v.is_string()) {
                    out[key] = value.clone();
                }
            }
            Some(out)
        }
        _ => Some(json!({"type": "non_standard", "value": block})),
    }
}

/// The name of a tool call (`name`, or an OpenAI-style `function.name`).
fn call_name(call: &Value) -> Option<&str> {
    call.get("name")
        .and_then(Value::as_str)
        .or_else(|| call.pointer("/function/name").and_then(Value::as_str))
}

/// An assistant message's tool calls: the valid ones as `tool_call` blocks, the others
/// (no name, arguments that are not JSON) as `invalid_tool_call`s.
fn tool_calls(raw: Vec<Value>) -> (Vec<Value>, Vec<Value>) {
    let mut calls = Vec::new();
    let mut invalid = Vec::new();
    for call in raw.iter().filter(|c| c.is_object()) {
        let id = call.get("id").filter(|i| i.is_string());
        let args = call
            .get("args")
            .or_else(|| call.pointer("/function/arguments"))
            .cloned()
            .unwrap_or(Value::Null);
        let parsed = match &args {
            Value::String(text) if text.is_empty() => Some(json!({})),
            Value::String(text) => serde_json::from_str::<Value>(text).ok(),
            Value::Null => Some(json!({})),
            other => Some(other.clone()),
        };
        let mut entry = match (call_name(call), parsed) {
            (None, _) => json!({"type": "invalid_tool_call", "error": "Incomplete tool call."}),
            (Some(name), None) => {
                json!({"type": "invalid_tool_call", "name": name, "error": "Malformed args."})
            }
            (Some(name), Some(args)) => json!({"type": "tool_call", "name": name, "args": args}),
        };
        if let Some(id) = id {
            entry["id"] = id.clone();
        }
        if entry["type"] == "tool_call" {
            calls.push(entry);
        } else {
            if args.is_string() {
                entry["args"] = args;
            }
            invalid.push(entry);
        }
    }
    (calls, invalid)
}

/// An `invalid_tool_calls` entry in the protocol's shape.
fn invalid_tool_call(raw: &Value) -> Option<Value> {
    raw.as_object()?;
    let mut entry = json!({"type": "invalid_tool_call"});
    if let Some(id) = raw.get("id").filter(|i| i.is_string()) {
        entry["id"] = id.clone();
    }
    if let Some(name) = call_name(raw) {
        entry["name"] = json!(name);
    }
    if let Some(args) = raw.get("args").filter(|a| a.is_string()) {
        entry["args"] = args.clone();
    }
    entry["error"] = raw
        .get("error")
        .filter(|e| e.is_string())
        .cloned()
        .unwrap_or_else(|| json!("Malformed args."));
    Some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_protocols_shape_and_interrupts_are_left_out() {
        let state = json!({
            "messages": [
                {"type": "human", "id": "h", "content": "hi", "additional_kwargs": {}, "response_metadata": {}},
                {"type": "ai", "id": "a", "content": "", "name": null, "additional_kwargs": {},
                 "response_metadata": {"finish_reason": "tool_calls"}, "usage_metadata": null,
                 "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"},
                                {"name": "broken", "args": "{not json", "id": "c2"}],
                 "invalid_tool_calls": []},
                {"type": "tool", "id": "t", "content": "found", "tool_call_id": "c1", "status": "success",
                 "additional_kwargs": {}, "response_metadata": {}},
                {"role": "user", "content": "not a LangChain message"}
            ],
            "nested": {"__interrupt__": [1], "list": [{"type": "user", "content": [{"type": "text", "text": "a"}, "b"]}]},
            "__interrupt__": [{"id": "i"}]
        });
        assert_eq!(
            normalize_state(state),
            json!({
                "messages": [
                    {"type": "human", "id": "h", "content": "hi"},
                    {"type": "ai", "id": "a", "content": "", "response_metadata": {"finish_reason": "tool_calls"},
                     "tool_calls": [{"type": "tool_call", "name": "search", "args": {"q": "x"}, "id": "c1"}],
                     "invalid_tool_calls": [{"type": "invalid_tool_call", "name": "broken", "error": "Malformed args.",
                                             "id": "c2", "args": "{not json"}]},
                    {"type": "tool", "id": "t", "content": "found", "tool_call_id": "c1", "status": "success"},
                    {"role": "user", "content": "not a LangChain message"}
                ],
                "nested": {"list": [{"type": "human", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]}
            })
        );
    }

    #[test]
    fn unknown_blocks_are_non_standard_and_openai_images_are_images() {
        let content = json!([{"type": "image_url", "image_url": {"url": "http://x/i.png"}}, {"type": "weird", "v": 1}]);
        assert_eq!(
            normalize_content(content),
            json!([{"type": "image", "url": "http://x/i.png"},
                   {"type": "non_standard", "value": {"type": "weird", "v": 1}}])
        );
    }
}
