//! JSON shapes between the LangGraph API and graphkit.
//!
//! - A client's input (`{"messages": [...]}`: the value each field's reducer receives)
//!   becomes graphkit's update JSON (a list stays a list; LangGraph's `RemoveMessage`s
//!   make a merge-by-key update `{"ops": [...]}`), and an update becomes the LangGraph
//!   shape again for `updates` events.
//! - graphkit-llm messages (`{"role": "assistant", "id", "content", "tool_calls"}`) appear
//!   in LangChain's message shape (`{"type": "ai", "id", "content", "tool_calls": [{"name",
//!   "args", "id", "type": "tool_call"}]}`) in values, updates and the `messages` stream,
//!   and LangChain-shaped input messages are read back into graphkit-llm messages.

use graphkit::reducers::{Field, ReducerKind};
use graphkit_llm::{MessageStreamEvent, new_message_id};
use serde_json::{Map, Value, json};

/// The client's input as graphkit update JSON: list fields take a plain list as the items
/// to add (a merge-by-key field with LangGraph's `RemoveMessage`s, its operations). Unknown keys are an error naming them and the fields there are.
pub(crate) fn input_to_update(
    fields: &[Field],
    input: Map<String, Value>,
) -> Result<Value, String> {
    let mut update = Map::with_capacity(input.len());
    for (key, value) in input {
        let Some(field) = fields.iter().find(|f| f.name == key) else {
            let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
            return Err(format!(
                "the state has no field `{key}`; its fields are: {}",
                known.join(", ")
            ));
        };
        let value = match (field.reducer, value) {
            // A list field's update is the list of items it appends or upserts; a
            // merge-by-key update is the list of its items, or its operations when
            // LangGraph's `RemoveMessage`s remove some.
            (ReducerKind::MergeByKey, Value::Array(items)) if items.iter().any(is_removal) => {
                let ops: Vec<Value> = items.into_iter().map(keyed_op_from_langgraph).collect();
                json!({ "ops": ops })
            }
            (_, value) => value,
        };
        update.insert(key, value);
    }
    Ok(Value::Object(update))
}

/// A graphkit update JSON in LangGraph's shape (list updates as the list of items), with
/// graphkit-llm messages in LangChain's shape.
pub(crate) fn update_to_langgraph(update: Value) -> Value {
    let Value::Object(fields) = update else {
        return to_langchain(update);
    };
    let mut out = Map::with_capacity(fields.len());
    for (key, value) in fields {
        let value = match value {
            Value::Object(mut object)
                if object.contains_key("items")
                    && object.keys().all(|k| k == "items" || k == "clear") =>
            {
                object.remove("items").unwrap_or(Value::Null)
            }
            Value::Object(mut object) if object.len() == 1 && object.contains_key("ops") => {
                match object.remove("ops") {
                    Some(Value::Array(ops)) => {
                        Value::Array(ops.into_iter().map(keyed_op_to_langgraph).collect())
                    }
                    other => other.unwrap_or(Value::Null),
                }
            }
            other => other,
        };
        out.insert(key, to_langchain(value));
    }
    Value::Object(out)
}

/// `true` for LangGraph's `RemoveMessage` (`{"type": "remove", "id"}`).
fn is_removal(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some("remove")
}

/// An item as an upsert; LangGraph's `RemoveMessage` (`{"type": "remove", "id"}`) as a
/// removal (`__remove_all__`: remove everything).
fn keyed_op_from_langgraph(item: Value) -> Value {
    if is_removal(&item) {
        return match item.get("id") {
            Some(Value::String(id)) if id == "__remove_all__" => json!("RemoveAll"),
            Some(id) => json!({ "Remove": id }),
            None => json!({ "Upsert": item }),
        };
    }
    json!({ "Upsert": item })
}

/// An upsert as its item; removals as LangGraph's `RemoveMessage` (`__remove_all__` for all).
fn keyed_op_to_langgraph(op: Value) -> Value {
    match op {
        Value::Object(mut o) => match (o.remove("Upsert"), o.remove("Remove")) {
            (Some(item), _) => item,
            (None, Some(key)) => json!({"type": "remove", "id": key, "content": ""}),
            (None, None) => Value::Null,
        },
        _ => json!({"type": "remove", "id": "__remove_all__", "content": ""}),
    }
}

/// `true` for a graphkit-llm message object: a `role` tag, an `id` and text `content`.
fn is_llm_message(object: &Map<String, Value>) -> bool {
    matches!(
        object.get("role").and_then(Value::as_str),
        Some("system" | "user" | "assistant" | "tool")
    ) && object.get("id").is_some_and(Value::is_string)
        && object.get("content").is_some_and(Value::is_string)
}

/// One graphkit-llm message in LangChain's shape.
fn message_to_langchain(mut m: Map<String, Value>) -> Value {
    let role = m.remove("role");
    let kind = match role.as_ref().and_then(Value::as_str) {
        Some("system") => "system",
        Some("user") => "human",
        Some("tool") => "tool",
        _ => "ai",
    };
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    out.insert("content".into(), m.remove("content").unwrap_or_default());
    out.insert("id".into(), m.remove("id").unwrap_or_default());
    out.insert("name".into(), m.remove("name").unwrap_or(Value::Null));
    out.insert("additional_kwargs".into(), json!({}));
    let mut response_metadata = Map::new();
    for key in ["finish_reason", "model", "response_id"] {
        if let Some(v) = m.remove(key) {
            response_metadata.insert(key.into(), v);
        }
    }
    out.insert("response_metadata".into(), Value::Object(response_metadata));
    match kind {
        "ai" => {
            let calls: Vec<Value> = match m.remove("tool_calls") {
                Some(Value::Array(calls)) => calls
                    .into_iter()
                    .map(|c| {
                        json!({
                            "name": c.get("name").cloned().unwrap_or_default(),
                            "args": c.get("arguments").cloned().unwrap_or(json!({})),
                            "id": c.get("id").cloned().unwrap_or_default(),
                            "type": "tool_call",
                        })
                    })
                    .collect(),
                _ => Vec::new(),
            };
            out.insert("tool_calls".into(), Value::Array(calls));
            out.insert("invalid_tool_calls".into(), json!([]));
            let usage = m.remove("usage").and_then(|u| {
                let input = u.get("input_tokens")?.as_u64()?;
                let output = u.get("output_tokens")?.as_u64()?;
                Some(json!({"input_tokens": input, "output_tokens": output, "total_tokens": input + output}))
            });
            out.insert("usage_metadata".into(), usage.unwrap_or(Value::Null));
        }
        "tool" => {
            out.insert(
                "tool_call_id".into(),
                m.remove("tool_call_id").unwrap_or_default(),
            );
            let failed = m.remove("is_error").and_then(|v| v.as_bool()) == Some(true);
            out.insert(
                "status".into(),
                if failed { "error" } else { "success" }.into(),
            );
        }
        _ => {}
    }
    Value::Object(out)
}

/// Rewrites every graphkit-llm message inside `value` into LangChain's shape.
pub(crate) fn to_langchain(value: Value) -> Value {
    match value {
        Value::Object(object) if is_llm_message(&object) => message_to_langchain(object),
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(k, v)| (k, to_langchain(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(to_langchain).collect()),
        other => other,
    }
}

/// One LangChain-shaped message (`type` human/ai/system/tool, or `role` human/ai) as a
/// graphkit-llm message; `None` if it is not one.
fn message_from_langchain(object: &Map<String, Value>) -> Option<Value> {
    let kind = object
        .get("type")
        .or_else(|| object.get("role"))
        .and_then(Value::as_str)?;
    let role = match kind {
        "human" | "HumanMessage" | "HumanMessageChunk" | "user" => "user",
        "ai" | "AIMessage" | "AIMessageChunk" | "assistant" => "assistant",
        "system" | "SystemMessage" => "system",
        "tool" | "ToolMessage" => "tool",
        _ => return None,
    };
    let content = match object.get("content")? {
        Value::String(s) => s.clone(),
        // LangChain content blocks: keep the text parts.
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or_else(|| b.as_str()))
            .collect::<Vec<_>>()
            .join(""),
        _ => return None,
    };
    let id = object
        .get("id")
        .and_then(Value::as_str)
        .map_or_else(new_message_id, str::to_owned);
    let mut out = json!({ "role": role, "id": id, "content": content });
    if role == "assistant"
        && let Some(Value::Array(calls)) = object.get("tool_calls")
    {
        out["tool_calls"] = Value::Array(
            calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.get("id").cloned().unwrap_or_default(),
                        "name": c.get("name").cloned().unwrap_or_default(),
                        "arguments": c.get("args").cloned().unwrap_or(json!({})),
                    })
                })
                .collect(),
        );
    }
    if role == "tool" {
        out["tool_call_id"] = object.get("tool_call_id").cloned().unwrap_or_default();
    }
    Some(out)
}

/// Rewrites LangChain-shaped messages inside `value` into graphkit-llm messages (the
/// second try when an input does not deserialize as given).
pub(crate) fn from_langchain(value: &Value) -> Value {
    match value {
        Value::Object(object) => message_from_langchain(object).unwrap_or_else(|| {
            Value::Object(
                object
                    .iter()
                    .map(|(k, v)| (k.clone(), from_langchain(v)))
                    .collect(),
            )
        }),
        Value::Array(items) => Value::Array(items.iter().map(from_langchain).collect()),
        other => other.clone(),
    }
}

/// A `messages` stream payload as LangChain's message chunk dict: graphkit-llm's
/// [`MessageStreamEvent`] chunks become `AIMessageChunk`s, whole messages `ai` messages;
/// anything else a node wrote passes through (messages in it rewritten).
pub(crate) fn stream_message_to_langchain(payload: Value) -> Value {
    match MessageStreamEvent::from_value(payload.clone()) {
        Some(MessageStreamEvent::Chunk { message_id, chunk }) => {
            let tool_call_chunks: Vec<Value> = chunk
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"index": c.index, "id": c.id, "name": c.name, "args": c.arguments, "type": "tool_call_chunk"})
                })
                .collect();
            let mut response_metadata = Map::new();
            if let Some(reason) = chunk.finish_reason {
                response_metadata.insert("finish_reason".into(), reason.into());
            }
            if let Some(model) = chunk.model {
                response_metadata.insert("model".into(), model.into());
            }
            json!({
                "type": "AIMessageChunk",
                "content": chunk.content,
                "id": message_id,
                "tool_call_chunks": tool_call_chunks,
                "tool_calls": [],
                "invalid_tool_calls": [],
                "additional_kwargs": {},
                "response_metadata": response_metadata,
                "usage_metadata": chunk.usage.map(|u| json!({"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "total_tokens": u.total()})),
            })
        }
        Some(MessageStreamEvent::Message { message }) => {
            let value = serde_json::to_value(graphkit_llm::Message::Assistant(message))
                .unwrap_or(Value::Null);
            to_langchain(value)
        }
        None => to_langchain(payload),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphkit::reducers::ReducerKind;

    const FIELDS: &[Field] = &[
        Field {
            name: "messages",
            reducer: ReducerKind::Append,
        },
        Field {
            name: "sleep",
            reducer: ReducerKind::LastValue,
        },
    ];

    #[test]
    fn list_inputs_become_append_updates_and_back() {
        let input = json!({"messages": [{"role": "user", "content": "hi"}], "sleep": 1.5});
        let Value::Object(input) = input else {
            unreachable!()
        };
        let update = input_to_update(FIELDS, input).expect("valid");
        assert_eq!(
            update,
            json!({"messages": [{"role": "user", "content": "hi"}], "sleep": 1.5})
        );
        assert_eq!(
            update_to_langgraph(update),
            json!({"messages": [{"role": "user", "content": "hi"}], "sleep": 1.5})
        );
    }

    #[test]
    fn remove_messages_make_a_keyed_update_of_operations_and_back() {
        let fields = &[Field {
            name: "messages",
            reducer: ReducerKind::MergeByKey,
        }];
        let plain = json!({"messages": [{"role": "user", "id": "m2", "content": "hi"}]});
        let Value::Object(input) = plain.clone() else {
            unreachable!()
        };
        assert_eq!(input_to_update(fields, input).expect("valid"), plain);
        let Value::Object(input) = json!({"messages": [
            {"type": "remove", "id": "m1"},
            {"role": "user", "id": "m2", "content": "hi"},
            {"type": "remove", "id": "__remove_all__"},
        ]}) else {
            unreachable!()
        };
        let update = input_to_update(fields, input).expect("valid");
        assert_eq!(
            update,
            json!({"messages": {"ops": [
                {"Remove": "m1"},
                {"Upsert": {"role": "user", "id": "m2", "content": "hi"}},
                "RemoveAll",
            ]}})
        );
        let back = update_to_langgraph(update);
        assert_eq!(
            back["messages"][0],
            json!({"type": "remove", "id": "m1", "content": ""})
        );
        assert_eq!(back["messages"][1]["type"], "human");
        assert_eq!(back["messages"][2]["id"], "__remove_all__");
    }

    #[test]
    fn an_unknown_input_key_is_named() {
        let Value::Object(input) = json!({"mesages": []}) else {
            unreachable!()
        };
        let error = input_to_update(FIELDS, input).expect_err("unknown");
        assert!(error.contains("`mesages`") && error.contains("messages, sleep"));
    }

    #[test]
    fn llm_messages_round_trip_through_the_langchain_shape() {
        let message = graphkit_llm::Message::Assistant(graphkit_llm::AssistantMessage {
            id: "m1".into(),
            content: "hello".into(),
            tool_calls: vec![graphkit_llm::ToolCall {
                id: "c1".into(),
                name: "search".into(),
                arguments: json!({"q": "x"}),
            }],
            ..Default::default()
        });
        let lc = to_langchain(json!({"messages": [serde_json::to_value(&message).expect("json")]}));
        assert_eq!(lc["messages"][0]["type"], "ai");
        assert_eq!(
            lc["messages"][0]["tool_calls"][0]["args"],
            json!({"q": "x"})
        );
        let back = from_langchain(&lc["messages"][0]);
        let parsed: graphkit_llm::Message = serde_json::from_value(back).expect("a message");
        assert_eq!(parsed, message);
        // A plain {role, content} without an id (the demo's messages) stays as it is.
        let plain = json!({"role": "user", "content": "hi"});
        assert_eq!(to_langchain(plain.clone()), plain);
    }
}
