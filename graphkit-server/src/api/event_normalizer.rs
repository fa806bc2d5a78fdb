//! The thread streaming protocol's events, made from a thread's stored run events: the
//! [`Normalizer`] turns each stored event (`values`, `updates`, `messages`, `custom`,
//! `tasks`, `error`, a pause's `__interrupt__`) and each run's start and end into
//! [`ProtocolEvent`]s, numbered in the order made (see [`super::event_streaming`] for the
//! wire shapes).

use std::collections::{HashMap, HashSet};

use axum::body::Bytes;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::stream::frame_with_id;
use crate::backend::{RunEvent, RunStatus};

/// One protocol event, before it is written out.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ProtocolEvent {
    pub(super) seq: u64,
    pub(super) event_id: String,
    pub(super) method: &'static str,
    pub(super) namespace: Vec<String>,
    pub(super) node: Option<String>,
    pub(super) data: Value,
}

impl ProtocolEvent {
    /// The event as the protocol sends it.
    pub(super) fn into_json(self) -> Value {
        let mut params = Map::new();
        let namespace = self.namespace.into_iter().map(Value::String).collect();
        params.insert("namespace".into(), Value::Array(namespace));
        let now = crate::time::Timestamp::now().micros() / 1000;
        params.insert("timestamp".into(), json!(now));
        params.insert("data".into(), self.data);
        if let Some(node) = self.node {
            params.insert("node".into(), Value::String(node));
        }
        let mut event = Map::new();
        event.insert("type".into(), json!("event"));
        event.insert("event_id".into(), Value::String(self.event_id));
        event.insert("seq".into(), json!(self.seq));
        event.insert("method".into(), json!(self.method));
        event.insert("params".into(), Value::Object(params));
        Value::Object(event)
    }

    /// The SSE frame: the event's method as the SSE event, its `seq` as the SSE id.
    pub(super) fn frame(self) -> Bytes {
        let (method, seq) = (self.method, self.seq.to_string());
        frame_with_id(method, &self.into_json().to_string(), Some(&seq))
    }
}

/// What a stream knows of one run while it turns the run's events into protocol events.
#[derive(Debug, Default)]
struct RunView {
    /// The graph the run runs (the root's `graph_name`).
    graph: String,
    /// The interrupts already announced.
    interrupts: HashSet<String>,
    /// The root's last lifecycle status sent.
    status: Option<&'static str>,
    /// Messages being streamed: their namespace and text so far, by id.
    open: HashMap<String, (Vec<String>, String)>,
    /// Messages whose `message-finish` was sent.
    finished: HashSet<String>,
}

/// Turns a thread's stored run events into protocol events, numbering them.
#[derive(Debug, Default)]
pub(super) struct Normalizer {
    seq: u64,
    runs: HashMap<Uuid, RunView>,
    /// The graph and root lifecycle status of the last run seen (`agent.getTree`).
    last: Option<(String, &'static str)>,
}

impl Normalizer {
    fn push(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        event_id: String,
        method: &'static str,
        namespace: &[String],
        node: Option<String>,
        data: Value,
    ) {
        self.seq += 1;
        out.push(ProtocolEvent {
            seq: self.seq,
            event_id,
            method,
            namespace: namespace.to_vec(),
            node,
            data,
        });
    }

    /// The root lifecycle `status` of `run`, unless it was the last one sent.
    fn lifecycle(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        status: &'static str,
        error: Option<String>,
    ) {
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        if view.status == Some(status) && error.is_none() {
            return;
        }
        view.status = Some(status);
        self.last = Some((view.graph.clone(), status));
        let mut data = json!({"event": status, "graph_name": view.graph});
        if let (Some(error), Value::Object(data)) = (error, &mut data) {
            data.insert("error".into(), json!(error));
        }
        self.push(
            out,
            format!("{run}|lc||{status}"),
            "lifecycle",
            &[],
            None,
            data,
        );
    }

    /// Starts following `run` of graph `graph`: its root lifecycle `running`.
    pub(super) fn begin(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, graph: String) {
        self.runs.insert(
            run,
            RunView {
                graph,
                ..RunView::default()
            },
        );
        self.lifecycle(out, run, "running", None);
    }

    /// The agent tree of the last run seen (its root: graphkit reports no subgraph
    /// lifecycle), or `None` before any.
    pub(super) fn tree(&self) -> Option<Value> {
        self.last
            .as_ref()
            .map(|(graph, status)| json!({"namespace": [], "status": status, "graph_name": graph}))
    }

    pub(super) fn knows(&self, run: Uuid) -> bool {
        self.runs.contains_key(&run)
    }

    /// One `input.requested` per interrupt of `value` (a list of `{id, value}`, or an
    /// object holding one under `__interrupt__`) not announced yet, then the root's
    /// lifecycle `interrupted`.
    fn interrupts(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        value: &Value,
    ) {
        let list = match value {
            Value::Array(list) => list.as_slice(),
            Value::Object(object) => object
                .get("__interrupt__")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
            _ => &[],
        };
        let mut any = false;
        for interrupt in list {
            let Some(id) = interrupt.get("id").and_then(Value::as_str) else {
                continue;
            };
            let Some(view) = self.runs.get_mut(&run) else {
                return;
            };
            if !view.interrupts.insert(id.to_owned()) {
                continue;
            }
            let mut data = json!({"interrupt_id": id});
            if let (Some(payload), Value::Object(data)) = (interrupt.get("value"), &mut data) {
                data.insert("payload".into(), payload.clone());
            }
            let event_id = format!("{run}|input|{}|{id}", namespace.join("\u{0}"));
            self.push(out, event_id, "input.requested", namespace, None, data);
            any = true;
        }
        if any {
            self.lifecycle(out, run, "interrupted", None);
        }
    }

    /// The protocol events of one stored event of `run`.
    pub(super) fn event(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, event: &RunEvent) {
        let mut parts = event.event.split('|');
        let name = parts.next().unwrap_or_default();
        let namespace: Vec<String> = parts.map(str::to_owned).collect();
        let first = out.len();
        match name {
            "error" => {
                let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
                let message = data
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| event.data.clone(), str::to_owned);
                self.lifecycle(out, run, "failed", Some(message));
            }
            "messages" => {
                let Ok(Value::Array(tuple)) = serde_json::from_str::<Value>(&event.data) else {
                    return;
                };
                let mut tuple = tuple.into_iter();
                let (Some(message), metadata) = (tuple.next(), tuple.next()) else {
                    return;
                };
                self.message(out, run, &namespace, &message, metadata.as_ref());
            }
            "values" | "updates" | "custom" | "tasks" => {
                let Ok(data) = serde_json::from_str::<Value>(&event.data) else {
                    return;
                };
                self.payload(out, run, name, &namespace, data);
            }
            // `metadata` (the run's start) and the modes no channel shows.
            _ => {}
        }
        // Stable ids: the stored event's, then `.1`, `.2` for the others made from it.
        for (n, made) in out[first..].iter_mut().enumerate() {
            if made.event_id.is_empty() {
                made.event_id = if n == 0 {
                    format!("{run}:{}", event.seq)
                } else {
                    format!("{run}:{}.{n}", event.seq)
                };
            }
        }
    }

    fn payload(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        name: &str,
        namespace: &[String],
        data: Value,
    ) {
        match name {
            "values" => {
                self.interrupts(out, run, namespace, &data);
                let values = without_interrupts(data);
                if has_payload(&values) {
                    self.push(out, String::new(), "values", namespace, None, values);
                }
            }
            "updates" => {
                let Value::Object(mut update) = data else {
                    return;
                };
                // A cached update's marker is no node.
                update.remove("__metadata__");
                if let Some(interrupts) = update.remove("__interrupt__") {
                    self.interrupts(out, run, namespace, &interrupts);
                }
                for (node, values) in update {
                    let values = match values {
                        Value::Object(_) => without_interrupts(values),
                        other => json!({"value": other}),
                    };
                    if has_payload(&values) {
                        self.push(out, String::new(), "updates", namespace, Some(node), values);
                    }
                }
            }
            "custom" => {
                self.push(
                    out,
                    String::new(),
                    "custom",
                    namespace,
                    None,
                    json!({"payload": data}),
                );
            }
            _ => self.push(out, String::new(), "tasks", namespace, None, data),
        }
    }

    /// The protocol's message events for one `messages-tuple` event (`[message, metadata]`,
    /// the message in LangChain's shape): a message's first chunk opens it
    /// (`message-start`, `content-block-start`), each chunk's text is a
    /// `content-block-delta`, and the chunk with a `finish_reason` closes it
    /// (`content-block-finish` with the whole text, `message-finish`). A whole message
    /// (not a chunk) closes a message streamed under its id, or is sent whole; one already
    /// closed is not sent again. Every event carries the message's `id`, which the SDK
    /// routes by. Text only: tool-call chunks are not sent as blocks.
    fn message(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        message: &Value,
        metadata: Option<&Value>,
    ) {
        let Some(id) = message.get("id").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let kind = message.get("type").and_then(Value::as_str).unwrap_or("ai");
        let chunk = kind.ends_with("Chunk");
        let text = text_of(message.get("content"));
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        if view.finished.contains(&id) {
            return;
        }
        let mut made: Vec<Value> = Vec::new();
        let opened = view.open.contains_key(&id);
        if !opened {
            let mut start = json!({"event": "message-start", "role": role_of(kind), "id": id});
            let scalars: Map<String, Value> = metadata
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter(|(_, v)| !(v.is_object() || v.is_array()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if let (false, Value::Object(start)) = (scalars.is_empty(), &mut start) {
                start.insert("metadata".into(), Value::Object(scalars));
            }
            made.push(start);
            made.push(json!({"event": "content-block-start", "id": id, "index": 0,
                             "content": {"type": "text", "text": ""}}));
            view.open
                .insert(id.clone(), (namespace.to_vec(), String::new()));
        }
        let finishes = !chunk
            || message
                .get("response_metadata")
                .and_then(|m| m.get("finish_reason"))
                .is_some_and(|r| !r.is_null());
        if let Some((_, so_far)) = view.open.get_mut(&id) {
            let delta = if chunk {
                text
            } else {
                // A whole message repeats what its chunks said: send only the rest.
                text.strip_prefix(so_far.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            if !delta.is_empty() {
                so_far.push_str(&delta);
                made.push(json!({"event": "content-block-delta", "id": id, "index": 0,
                                 "delta": {"type": "text-delta", "text": delta}}));
            }
        }
        if finishes {
            let usage = message.get("usage_metadata").filter(|u| u.is_object());
            made.extend(Self::finish(view, &id, usage));
        }
        for data in made {
            self.push(out, String::new(), "messages", namespace, None, data);
        }
    }

    /// The events that close message `id` of `view`.
    fn finish(view: &mut RunView, id: &str, usage: Option<&Value>) -> Vec<Value> {
        let Some((_, text)) = view.open.remove(id) else {
            return Vec::new();
        };
        view.finished.insert(id.to_owned());
        let mut finish = json!({"event": "message-finish", "id": id});
        if let (Some(usage), Value::Object(finish)) = (usage, &mut finish) {
            finish.insert("usage".into(), usage.clone());
        }
        vec![
            json!({"event": "content-block-finish", "id": id, "index": 0,
                   "content": {"type": "text", "text": text}}),
            finish,
        ]
    }

    /// The end of `run`: its root lifecycle by its final status, unless a pause or a
    /// failure already said how it ended.
    pub(super) fn end(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        status: Option<RunStatus>,
    ) {
        // Messages still open end with the run.
        if let Some(view) = self.runs.get_mut(&run) {
            let open: Vec<(String, Vec<String>)> = view
                .open
                .iter()
                .map(|(id, (namespace, _))| (id.clone(), namespace.clone()))
                .collect();
            let mut closing = Vec::new();
            for (id, namespace) in open {
                for data in Self::finish(view, &id, None) {
                    closing.push((namespace.clone(), data));
                }
            }
            for (namespace, data) in closing {
                self.push(out, String::new(), "messages", &namespace, None, data);
            }
        }
        let said = self
            .runs
            .get(&run)
            .and_then(|view| view.status)
            .is_some_and(|s| s != "running");
        if !said {
            match status {
                Some(RunStatus::Success) => self.lifecycle(out, run, "completed", None),
                Some(RunStatus::Interrupted) => self.lifecycle(out, run, "interrupted", None),
                Some(other) => self.lifecycle(
                    out,
                    run,
                    "failed",
                    Some(format!("the run ended as {}", other.as_str())),
                ),
                None => self.lifecycle(
                    out,
                    run,
                    "failed",
                    Some("the run was deleted before it ended".into()),
                ),
            }
        }
        self.runs.remove(&run);
    }
}

/// The protocol role of a LangChain message type.
fn role_of(kind: &str) -> &'static str {
    match kind
        .trim_end_matches("MessageChunk")
        .trim_end_matches("Chunk")
    {
        "human" | "Human" | "user" => "human",
        "system" | "System" => "system",
        "tool" | "Tool" => "tool",
        _ => "ai",
    }
}

/// The text of a LangChain message's `content`: the string, or its text blocks joined.
fn text_of(content: Option<&Value>) -> String {
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

fn without_interrupts(value: Value) -> Value {
    match value {
        Value::Object(mut object) => {
            object.remove("__interrupt__");
            Value::Object(object)
        }
        other => other,
    }
}

/// Whether a `values` or `updates` payload says anything (an empty object does not).
fn has_payload(value: &Value) -> bool {
    value.as_object().is_none_or(|o| !o.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(seq: i64, event: &str, data: Value) -> RunEvent {
        RunEvent {
            seq,
            event: event.into(),
            data: data.to_string(),
        }
    }

    #[test]
    fn a_pause_becomes_input_requested_then_interrupted_once() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into());
        let interrupt = json!([{"id": "i1", "value": {"question": "approve?"}}]);
        n.event(
            &mut out,
            run,
            &stored(3, "updates", json!({"__interrupt__": interrupt})),
        );
        n.event(
            &mut out,
            run,
            &stored(
                4,
                "values",
                json!({"messages": [], "__interrupt__": interrupt}),
            ),
        );
        n.end(&mut out, run, Some(RunStatus::Success));
        let methods: Vec<_> = out.iter().map(|e| e.method).collect();
        assert_eq!(
            methods,
            ["lifecycle", "input.requested", "lifecycle", "values"]
        );
        assert_eq!(
            out[1].data,
            json!({"interrupt_id": "i1", "payload": {"question": "approve?"}})
        );
        assert_eq!(out[2].data["event"], "interrupted");
        assert_eq!(out[3].data, json!({"messages": []}));
        let seqs: Vec<_> = out.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3, 4]);
    }

    #[test]
    fn updates_name_their_node_and_a_run_ends_completed() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into());
        n.event(
            &mut out,
            run,
            &stored(2, "updates", json!({"respond": {"messages": [1]}})),
        );
        n.event(&mut out, run, &stored(3, "custom", json!("hi")));
        n.end(&mut out, run, Some(RunStatus::Success));
        assert_eq!(out[1].node.as_deref(), Some("respond"));
        assert_eq!(out[1].event_id, format!("{run}:2"));
        assert_eq!(out[2].data, json!({"payload": "hi"}));
        assert_eq!(
            out[3].data,
            json!({"event": "completed", "graph_name": "agent"})
        );
    }

    #[test]
    fn a_stored_error_fails_the_run_once() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into());
        n.event(
            &mut out,
            run,
            &stored(2, "error", json!({"error": "X", "message": "boom"})),
        );
        n.end(&mut out, run, Some(RunStatus::Error));
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1].data,
            json!({"event": "failed", "graph_name": "agent", "error": "boom"})
        );
    }

    #[test]
    fn streamed_chunks_open_grow_and_close_one_message() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "chat".into());
        let meta = json!({"langgraph_node": "chat", "run_id": "r", "tags": []});
        let chunk = |text: &str, finish: Value| {
            json!([{"type": "AIMessageChunk", "id": "m1", "content": text,
                    "response_metadata": {"finish_reason": finish}}, meta])
        };
        n.event(
            &mut out,
            run,
            &stored(2, "messages", chunk("hel", Value::Null)),
        );
        n.event(
            &mut out,
            run,
            &stored(3, "messages", chunk("lo", json!("stop"))),
        );
        // The whole message after its chunks adds nothing.
        let whole = json!([{"type": "ai", "id": "m1", "content": "hello"}, meta]);
        n.event(&mut out, run, &stored(4, "messages", whole));
        let events: Vec<&str> = out[1..]
            .iter()
            .map(|e| e.data["event"].as_str().expect("event"))
            .collect();
        assert_eq!(
            events,
            [
                "message-start",
                "content-block-start",
                "content-block-delta",
                "content-block-delta",
                "content-block-finish",
                "message-finish"
            ]
        );
        assert_eq!(
            out[1].data,
            json!({"event": "message-start", "role": "ai", "id": "m1",
                   "metadata": {"langgraph_node": "chat", "run_id": "r"}})
        );
        assert_eq!(
            out[5].data["content"],
            json!({"type": "text", "text": "hello"})
        );
        assert!(
            out[1..]
                .iter()
                .all(|e| e.data["id"] == "m1" && e.method == "messages")
        );
    }

    #[test]
    fn a_whole_message_is_sent_whole_and_an_open_one_closes_with_the_run() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "chat".into());
        let whole =
            json!([{"type": "ai", "id": "m1", "content": [{"type": "text", "text": "hi"}]}, {}]);
        n.event(&mut out, run, &stored(2, "messages", whole));
        let open = json!([{"type": "AIMessageChunk", "id": "m2", "content": "x"}, {}]);
        n.event(&mut out, run, &stored(3, "messages", open));
        n.end(&mut out, run, Some(RunStatus::Success));
        let events: Vec<String> = out
            .iter()
            .map(|e| {
                format!(
                    "{}:{}",
                    e.method,
                    e.data["event"].as_str().unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            events,
            [
                "lifecycle:running",
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-finish",
                "messages:message-finish",
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-finish",
                "messages:message-finish",
                "lifecycle:completed",
            ]
        );
    }
}
