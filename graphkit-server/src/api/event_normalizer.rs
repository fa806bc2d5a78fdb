//! The thread streaming protocol's events, made from a thread's stored run events: the
//! [`Normalizer`] turns each stored event (`values`, `updates`, `messages`, `custom`,
//! `tasks`, `checkpoints`, `error`, a pause's `__interrupt__`) and each run's start and end
//! into [`ProtocolEvent`]s, numbered in the order made (see [`super::event_streaming`] for
//! the wire shapes). Some channels are derived, as the reference's stream transformers
//! derive them: a subgraph's `lifecycle` from the namespaces its events carry, the `tools`
//! channel from the tool calls of the models' messages and the tool messages answering
//! them, and the chat-model message events (with their tool-call blocks) from the
//! `messages-tuple` stream.

use std::collections::{HashMap, HashSet};

use axum::body::Bytes;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::state_shape::{normalize_state, text_of};
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

/// A subgraph run seen on the stream: its namespace, graph and last lifecycle status.
#[derive(Debug, Clone)]
struct Subgraph {
    namespace: Vec<String>,
    graph: String,
    status: &'static str,
}

/// A content block of a message being streamed.
#[derive(Debug)]
enum Block {
    /// Text, as far as it came.
    Text(String),
    /// A tool call streamed in pieces: the provider's index, its id and name once known,
    /// and the argument text so far.
    CallChunk {
        index: Value,
        id: Option<String>,
        name: Option<String>,
        args: String,
    },
    /// A whole tool call.
    Call {
        id: String,
        name: String,
        args: Value,
    },
}

impl Block {
    /// The block as `content-block-start` announces it: empty, the call's identity kept.
    fn start(&self) -> Value {
        match self {
            Self::Text(_) => json!({"type": "text", "text": ""}),
            Self::CallChunk {
                index, id, name, ..
            } => {
                let mut start =
                    json!({"type": "tool_call_chunk", "id": id, "name": name, "args": ""});
                if !index.is_null() {
                    start["index"] = index.clone();
                }
                start
            }
            Self::Call { id, name, .. } => {
                json!({"type": "tool_call", "id": id, "name": name, "args": {}})
            }
        }
    }

    /// The block as `content-block-finish` gives it: the whole text, or the tool call with
    /// its arguments parsed (an `invalid_tool_call` when they are not JSON).
    fn finished(&self) -> Value {
        match self {
            Self::Text(text) => json!({"type": "text", "text": text}),
            Self::CallChunk { id, name, args, .. } => {
                let raw = if args.is_empty() { "{}" } else { args.as_str() };
                match serde_json::from_str::<Value>(raw) {
                    Ok(args) => json!({"type": "tool_call", "id": id.clone().unwrap_or_default(),
                                       "name": name.clone().unwrap_or_default(), "args": args}),
                    Err(_) => {
                        json!({"type": "invalid_tool_call", "id": id, "name": name, "args": raw,
                                     "error": "Failed to parse tool call arguments as JSON"})
                    }
                }
            }
            Self::Call { id, name, args } => {
                json!({"type": "tool_call", "id": id, "name": name, "args": args})
            }
        }
    }
}

/// A message being streamed: where, and its blocks in wire order.
#[derive(Debug, Default)]
struct OpenMessage {
    namespace: Vec<String>,
    blocks: Vec<Block>,
}

impl OpenMessage {
    /// The text so far (the first text block's).
    fn text(&self) -> &str {
        self.blocks
            .iter()
            .find_map(|b| match b {
                Block::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Adds `delta` to the text block (opened first if there is none).
    fn add_text(&mut self, id: &str, delta: &str, made: &mut Vec<Value>) {
        let index = match self.blocks.iter().position(|b| matches!(b, Block::Text(_))) {
            Some(index) => index,
            None => self.open(id, Block::Text(String::new()), made),
        };
        if let Block::Text(text) = &mut self.blocks[index] {
            text.push_str(delta);
        }
        made.push(block_event(
            "content-block-delta",
            id,
            index,
            "delta",
            json!({"type": "text-delta", "text": delta}),
        ));
    }

    /// Adds a `tool_call_chunk` piece: a new call opens a block, its argument text is a
    /// `tool-call-delta`.
    fn add_call_chunk(&mut self, id: &str, piece: &Value, made: &mut Vec<Value>) {
        let index_of = piece.get("index").cloned().unwrap_or(Value::Null);
        let text = |key: &str| piece.get(key).and_then(Value::as_str).map(str::to_owned);
        let found = self.blocks.iter().position(|b| match b {
            Block::CallChunk {
                index, id: call, ..
            } => {
                (!index_of.is_null() && *index == index_of)
                    || (index_of.is_null() && call.is_some() && *call == text("id"))
            }
            _ => false,
        });
        let index = match found {
            Some(index) => index,
            None => {
                let call = Block::CallChunk {
                    index: index_of,
                    id: text("id"),
                    name: text("name"),
                    args: String::new(),
                };
                self.open(id, call, made)
            }
        };
        let piece_args = text("args").unwrap_or_default();
        if let Block::CallChunk {
            id: call,
            name,
            args,
            ..
        } = &mut self.blocks[index]
        {
            if call.is_none() {
                *call = text("id");
            }
            if name.is_none() {
                *name = text("name");
            }
            args.push_str(&piece_args);
        }
        if !piece_args.is_empty() {
            made.push(block_event(
                "content-block-delta",
                id,
                index,
                "delta",
                json!({"type": "tool-call-delta", "args": piece_args}),
            ));
        }
    }

    /// Adds the whole tool calls of a whole message that its chunks did not stream.
    fn add_calls(&mut self, id: &str, calls: &[Value], made: &mut Vec<Value>) {
        for call in calls {
            let Some(call_id) = call.get("id").and_then(Value::as_str) else {
                continue;
            };
            let streamed = self.blocks.iter().any(|b| match b {
                Block::CallChunk { id, .. } => id.as_deref() == Some(call_id),
                Block::Call { id, .. } => id == call_id,
                Block::Text(_) => false,
            });
            if !streamed {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
                let block = Block::Call {
                    id: call_id.to_owned(),
                    name: name.to_owned(),
                    args,
                };
                self.open(id, block, made);
            }
        }
    }

    /// Appends `block` and announces it; returns its index.
    fn open(&mut self, id: &str, block: Block, made: &mut Vec<Value>) -> usize {
        let index = self.blocks.len();
        made.push(block_event(
            "content-block-start",
            id,
            index,
            "content",
            block.start(),
        ));
        self.blocks.push(block);
        index
    }
}

/// A content-block event of message `id`.
fn block_event(event: &str, id: &str, index: usize, key: &str, value: Value) -> Value {
    let mut data = json!({"event": event, "id": id, "index": index});
    data[key] = value;
    data
}

/// A tool call a model made, until a tool message answers it.
#[derive(Debug)]
struct Call {
    namespace: Vec<String>,
    /// The node whose update carried the call (the model's node).
    node: String,
    id: String,
    name: String,
    args: Value,
    started: bool,
}

/// What a stream knows of one run while it turns the run's events into protocol events.
#[derive(Debug, Default)]
struct RunView {
    /// The graph the run runs (the root's `graph_name`).
    graph: String,
    /// The checkpoint the run forked from, if it did (its first checkpoint's parent).
    fork: Option<String>,
    /// The interrupts already announced.
    interrupts: HashSet<String>,
    /// The root's last lifecycle status sent.
    status: Option<&'static str>,
    /// Subgraph runs, in the order they started.
    subgraphs: Vec<Subgraph>,
    /// Messages being streamed, by id.
    open: HashMap<String, OpenMessage>,
    /// Messages whose `message-finish` was sent.
    finished: HashSet<String>,
    /// Tool calls not answered yet, in the order made.
    calls: Vec<Call>,
    /// Tool calls answered (a parent graph's update repeats its subgraph's messages).
    answered: HashSet<String>,
    /// Checkpoints seen per namespace in the current attempt (the first is the input's).
    checkpoints: HashMap<String, usize>,
    /// Whether the current attempt is the first (a fork applies to it only).
    first_attempt: bool,
}

/// The agent tree of a run: the root's graph and status and its subgraphs.
#[derive(Debug, Clone)]
struct Tree {
    graph: String,
    status: &'static str,
    subgraphs: Vec<Subgraph>,
}

/// Turns a thread's stored run events into protocol events, numbering them.
#[derive(Debug, Default)]
pub(super) struct Normalizer {
    seq: u64,
    runs: HashMap<Uuid, RunView>,
    /// The last checkpoint seen per namespace (the next one's parent).
    last_checkpoint: HashMap<String, String>,
    /// The tree of the last run seen (`agent.getTree`).
    last: Option<Tree>,
}

/// The stable id of a lifecycle event.
fn lifecycle_id(run: Uuid, namespace: &[String], status: &str) -> String {
    format!("{run}|lc|{}|{status}", namespace.join("\u{0}"))
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

    /// Sends a lifecycle event of `run` at `namespace` and remembers the run's tree.
    fn lifecycle_event(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        status: &'static str,
        data: Value,
    ) {
        if let Some(view) = self.runs.get(&run) {
            self.last = Some(Tree {
                graph: view.graph.clone(),
                status: view.status.unwrap_or("running"),
                subgraphs: view.subgraphs.clone(),
            });
        }
        let id = lifecycle_id(run, namespace, status);
        self.push(out, id, "lifecycle", namespace, None, data);
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
        let mut data = json!({"event": status, "graph_name": view.graph});
        if let Some(error) = error {
            data["error"] = json!(error);
        }
        self.lifecycle_event(out, run, &[], status, data);
    }

    /// Starts following `run` of graph `graph` (forked from checkpoint `fork`, if it was):
    /// its root lifecycle `running`.
    pub(super) fn begin(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        graph: String,
        fork: Option<String>,
    ) {
        self.runs.insert(
            run,
            RunView {
                graph,
                fork,
                first_attempt: true,
                ..RunView::default()
            },
        );
        self.lifecycle(out, run, "running", None);
    }

    /// The agent tree of the last run seen (its root, with its subgraph runs as
    /// `children`), or `None` before any.
    pub(super) fn tree(&self) -> Option<Value> {
        let tree = self.last.as_ref()?;
        let root = Subgraph {
            namespace: Vec::new(),
            graph: tree.graph.clone(),
            status: tree.status,
        };
        Some(tree_node(&root, &tree.subgraphs))
    }

    pub(super) fn knows(&self, run: Uuid) -> bool {
        self.runs.contains_key(&run)
    }

    /// Announces the subgraph runs of `namespace` (each prefix) not seen yet: a
    /// `lifecycle` `started` at the subgraph's namespace, with its graph (the node's name)
    /// and the task that runs it (`trigger_call_id`, the segment's suffix).
    fn enter(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, namespace: &[String]) {
        for depth in 1..=namespace.len() {
            let prefix = &namespace[..depth];
            let Some(view) = self.runs.get_mut(&run) else {
                return;
            };
            if view.subgraphs.iter().any(|s| s.namespace == prefix) {
                continue;
            }
            let segment = &prefix[depth - 1];
            let (graph, task) = match segment.split_once(':') {
                Some((graph, task)) => (graph, Some(task)),
                None => (segment.as_str(), None),
            };
            view.subgraphs.push(Subgraph {
                namespace: prefix.to_vec(),
                graph: graph.to_owned(),
                status: "started",
            });
            let mut data = json!({"event": "started", "namespace": prefix, "graph_name": graph});
            if let Some(task) = task {
                data["trigger_call_id"] = json!(task);
            }
            self.lifecycle_event(out, run, prefix, "started", data);
        }
    }

    /// Ends the subgraph runs still started that `within` passes, deepest first, with
    /// `status` (and `error`).
    fn settle(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        status: &'static str,
        error: Option<&str>,
        within: impl Fn(&[String]) -> bool,
    ) {
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        let mut ending: Vec<usize> = (0..view.subgraphs.len())
            .filter(|&i| {
                view.subgraphs[i].status == "started" && within(&view.subgraphs[i].namespace)
            })
            .collect();
        ending.sort_by_key(|&i| std::cmp::Reverse(view.subgraphs[i].namespace.len()));
        let mut ended = Vec::new();
        for i in ending {
            let subgraph = &mut view.subgraphs[i];
            subgraph.status = status;
            ended.push((subgraph.namespace.clone(), subgraph.graph.clone()));
        }
        for (namespace, graph) in ended {
            let mut data = json!({"event": status, "graph_name": graph});
            if let Some(error) = error {
                data["error"] = json!(error);
            }
            self.lifecycle_event(out, run, &namespace, status, data);
        }
    }

    /// Ends the subgraph run that node `node` of the graph at `parent` ran (with what
    /// runs below it), once the node's update or failure arrives.
    fn leave(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        parent: &[String],
        node: &str,
        status: &'static str,
        error: Option<&str>,
    ) {
        let Some(view) = self.runs.get(&run) else {
            return;
        };
        let child = view.subgraphs.iter().find(|s| {
            s.status == "started"
                && s.namespace.len() == parent.len() + 1
                && s.namespace.starts_with(parent)
                && s.namespace.last().is_some_and(|segment| {
                    segment == node
                        || segment
                            .strip_prefix(node)
                            .is_some_and(|r| r.starts_with(':'))
                })
        });
        if let Some(child) = child.map(|c| c.namespace.clone()) {
            self.settle(out, run, status, error, |ns| ns.starts_with(&child));
        }
    }

    /// One `input.requested` per interrupt of `value` (a list of `{id, value}`, or an
    /// object holding one under `__interrupt__`) not announced yet, then the subgraphs
    /// still running and the root's lifecycle `interrupted`.
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
            if let Some(payload) = interrupt.get("value") {
                data["payload"] = payload.clone();
            }
            let event_id = format!("{run}|input|{}|{id}", namespace.join("\u{0}"));
            self.push(out, event_id, "input.requested", namespace, None, data);
            any = true;
        }
        if any {
            self.settle(out, run, "interrupted", None, |_| true);
            self.lifecycle(out, run, "interrupted", None);
        }
    }

    /// The protocol events of one stored event of `run`.
    pub(super) fn event(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, event: &RunEvent) {
        let mut parts = event.event.split('|');
        let name = parts.next().unwrap_or_default();
        let namespace: Vec<String> = parts.map(str::to_owned).collect();
        let first = out.len();
        let data = || serde_json::from_str::<Value>(&event.data).ok();
        match name {
            "error" => {
                let message = data()
                    .and_then(|d| d.get("message").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| event.data.clone());
                self.settle(out, run, "failed", Some(&message), |_| true);
                self.lifecycle(out, run, "failed", Some(message));
            }
            // A run's (attempt's) start: a retried attempt continues from the thread's
            // checkpoints, not from a fork point.
            "metadata" => {
                let attempt = data().and_then(|d| d.get("attempt").and_then(Value::as_u64));
                if let Some(view) = self.runs.get_mut(&run) {
                    view.first_attempt = attempt.is_none_or(|a| a <= 1);
                    view.checkpoints.clear();
                }
            }
            "messages" | "values" | "updates" | "custom" | "tasks" | "checkpoints" => {
                let Some(data) = data() else {
                    return;
                };
                self.enter(out, run, &namespace);
                self.payload(out, run, name, &namespace, data);
            }
            // The modes no channel shows.
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
                let values = normalize_state(data);
                if has_payload(&values) {
                    self.push(out, String::new(), "values", namespace, None, values);
                }
            }
            "updates" => self.updates(out, run, namespace, data),
            "messages" => {
                let Value::Array(tuple) = data else {
                    return;
                };
                let mut tuple = tuple.into_iter();
                if let (Some(message), metadata) = (tuple.next(), tuple.next()) {
                    self.message(out, run, namespace, &message, metadata.as_ref());
                }
            }
            "custom" => {
                let data = json!({"payload": data});
                self.push(out, String::new(), "custom", namespace, None, data);
            }
            "checkpoints" => self.checkpoint(out, run, namespace, &data),
            _ => self.task(out, run, namespace, data),
        }
    }

    /// A stored `updates` event: one `updates` event per node (a pause's
    /// `__interrupt__` becomes `input.requested`), the subgraph run the node was ended,
    /// and the tools channel's events for the tool calls and tool messages it carries.
    fn updates(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        data: Value,
    ) {
        let Value::Object(mut update) = data else {
            return;
        };
        // A cached update's marker is no node.
        update.remove("__metadata__");
        if let Some(interrupts) = update.remove("__interrupt__") {
            self.interrupts(out, run, namespace, &interrupts);
        }
        for (node, values) in update {
            self.tool_messages(out, run, namespace, &node, &values);
            let values = match values {
                Value::Object(_) => normalize_state(values),
                other => json!({"value": other}),
            };
            if has_payload(&values) {
                self.push(
                    out,
                    String::new(),
                    "updates",
                    namespace,
                    Some(node.clone()),
                    values,
                );
            }
            self.leave(out, run, namespace, &node, "completed", None);
        }
    }

    /// A stored `tasks` event: sent as it is; a task's start also starts the tool calls
    /// waiting in its graph that another node made (the tool node's run), and a task's
    /// failure ends the subgraph run it was, `failed`.
    fn task(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, namespace: &[String], data: Value) {
        let node = data.get("name").and_then(Value::as_str).map(str::to_owned);
        let result = data.get("result").is_some();
        let error = data.get("error").and_then(Value::as_str).map(str::to_owned);
        self.push(out, String::new(), "tasks", namespace, None, data);
        let Some(node) = node else {
            return;
        };
        if let Some(error) = error {
            self.leave(out, run, namespace, &node, "failed", Some(&error));
        } else if !result {
            let Some(view) = self.runs.get_mut(&run) else {
                return;
            };
            let starting: Vec<Value> = view
                .calls
                .iter_mut()
                .filter(|c| !c.started && c.namespace == namespace && c.node != node)
                .map(|c| {
                    c.started = true;
                    tool_started(c)
                })
                .collect();
            for data in starting {
                self.push(out, String::new(), "tools", namespace, None, data);
            }
        }
    }

    /// The tools channel for one node's update: the tool calls of the assistant messages
    /// it adds wait for their tool messages; each tool message it adds answers its call:
    /// `tool-started` (unless the call was started), then `tool-finished` with the tool
    /// message (mirrored on the `messages` channel under `tools:<call id>`), or
    /// `tool-error` with its text when the tool failed.
    fn tool_messages(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        node: &str,
        update: &Value,
    ) {
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        let mut made = Vec::new();
        for message in messages_in(update) {
            match message.get("type").and_then(Value::as_str) {
                Some("ai" | "AIMessage" | "assistant") => {
                    for call in message
                        .get("tool_calls")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        let Some(id) = call.get("id").and_then(Value::as_str) else {
                            continue;
                        };
                        if view.answered.contains(id) || view.calls.iter().any(|c| c.id == id) {
                            continue;
                        }
                        view.calls.push(Call {
                            namespace: namespace.to_vec(),
                            node: node.to_owned(),
                            id: id.to_owned(),
                            name: call
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            args: call.get("args").cloned().unwrap_or(Value::Null),
                            started: false,
                        });
                    }
                }
                Some("tool" | "ToolMessage") => {
                    let Some(id) = message.get("tool_call_id").and_then(Value::as_str) else {
                        continue;
                    };
                    if !view.answered.insert(id.to_owned()) {
                        continue;
                    }
                    let call = match view.calls.iter().position(|c| c.id == id) {
                        Some(at) => view.calls.remove(at),
                        None => Call {
                            namespace: namespace.to_vec(),
                            node: String::new(),
                            id: id.to_owned(),
                            name: message
                                .get("name")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            args: Value::Null,
                            started: false,
                        },
                    };
                    if !call.started {
                        made.push(("tools", namespace.to_vec(), tool_started(&call)));
                    }
                    if message.get("status").and_then(Value::as_str) == Some("error") {
                        let text = text_of(message.get("content"));
                        made.push((
                            "tools",
                            namespace.to_vec(),
                            json!({"event": "tool-error", "tool_call_id": id, "message": text}),
                        ));
                    } else {
                        made.push(("tools", namespace.to_vec(),
                                   json!({"event": "tool-finished", "tool_call_id": id, "output": message})));
                        let mut under = namespace.to_vec();
                        under.push(format!("tools:{id}"));
                        for data in tool_output_message(id, message) {
                            made.push(("messages", under.clone(), data));
                        }
                    }
                }
                _ => {}
            }
        }
        for (method, namespace, data) in made {
            self.push(out, String::new(), method, &namespace, None, data);
        }
    }

    /// A stored `checkpoints` event as the protocol's checkpoint envelope: `{id,
    /// parent_id?, step, source}`. The parent is the checkpoint seen before it in its
    /// namespace (the fork point for a fork's first); the source is `fork` for a forked
    /// run's first checkpoint, `input` for the first of an attempt (after a fork, the
    /// second), `loop` for the others.
    fn checkpoint(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        namespace: &[String],
        data: &Value,
    ) {
        let Some(id) = data
            .pointer("/config/configurable/checkpoint_id")
            .and_then(Value::as_str)
        else {
            return;
        };
        let step = data.pointer("/metadata/step").cloned().unwrap_or(json!(0));
        let key = namespace.join("\u{0}");
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        let seen = view.checkpoints.entry(key.clone()).or_default();
        let forked = namespace.is_empty() && view.first_attempt && view.fork.is_some();
        let (source, parent) = match (*seen, forked) {
            (0, true) => ("fork", view.fork.clone()),
            (0, false) | (1, true) => ("input", self.last_checkpoint.get(&key).cloned()),
            _ => ("loop", self.last_checkpoint.get(&key).cloned()),
        };
        *seen += 1;
        let mut envelope = json!({"id": id, "step": step, "source": source});
        if let Some(parent) = parent {
            envelope["parent_id"] = json!(parent);
        }
        self.last_checkpoint.insert(key.clone(), id.to_owned());
        let event_id = format!("{run}|checkpoint|{key}|{id}");
        self.push(out, event_id, "checkpoints", namespace, None, envelope);
    }

    /// The protocol's message events for one `messages-tuple` event (`[message, metadata]`,
    /// the message in LangChain's shape), as the reference's chat-model bridge makes them:
    /// a message's first chunk opens it (`message-start`), each content block opens
    /// (`content-block-start`) the first time it is seen — the text, and each tool call
    /// (`tool_call_chunk`) — and grows by `content-block-delta` (`text-delta`,
    /// `tool-call-delta` with the argument text); the chunk with a `finish_reason` closes
    /// every block (`content-block-finish`: the whole text, the tool call with its
    /// arguments parsed) and the message (`message-finish`). A whole message (not a
    /// chunk) closes a message streamed under its id, adding what its chunks did not say,
    /// or is sent whole, each block opened, filled and closed in turn; one already closed
    /// is not sent again. Every event carries the message's `id`, which the SDK routes by.
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
        let calls = |key: &str| {
            message
                .get(key)
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
        };
        let usage = message.get("usage_metadata").filter(|u| u.is_object());
        let Some(view) = self.runs.get_mut(&run) else {
            return;
        };
        if view.finished.contains(&id) {
            return;
        }
        let mut made: Vec<Value> = Vec::new();
        if !chunk && !view.open.contains_key(&id) {
            // A whole message: each block opened, filled and closed in turn.
            made.push(message_start(&id, kind, metadata));
            let mut whole = OpenMessage::default();
            if !text.is_empty() {
                whole.blocks.push(Block::Text(text));
            }
            whole.add_calls(&id, calls("tool_calls"), &mut Vec::new());
            for (index, block) in whole.blocks.iter().enumerate() {
                made.push(block_event(
                    "content-block-start",
                    &id,
                    index,
                    "content",
                    block.start(),
                ));
                if let Block::Text(text) = block {
                    made.push(block_event(
                        "content-block-delta",
                        &id,
                        index,
                        "delta",
                        json!({"type": "text-delta", "text": text}),
                    ));
                }
                made.push(block_event(
                    "content-block-finish",
                    &id,
                    index,
                    "content",
                    block.finished(),
                ));
            }
            made.push(message_finish(&id, usage));
            view.finished.insert(id.clone());
        } else {
            if !view.open.contains_key(&id) {
                made.push(message_start(&id, kind, metadata));
            }
            let open = view.open.entry(id.clone()).or_insert_with(|| OpenMessage {
                namespace: namespace.to_vec(),
                blocks: Vec::new(),
            });
            // A whole message repeats what its chunks said: only the rest is new.
            let delta = if chunk {
                text
            } else {
                text.strip_prefix(open.text())
                    .unwrap_or_default()
                    .to_owned()
            };
            if !delta.is_empty() {
                open.add_text(&id, &delta, &mut made);
            }
            if chunk {
                for piece in calls("tool_call_chunks") {
                    open.add_call_chunk(&id, piece, &mut made);
                }
            } else {
                open.add_calls(&id, calls("tool_calls"), &mut made);
            }
            let finishes = !chunk
                || message
                    .pointer("/response_metadata/finish_reason")
                    .is_some_and(|r| !r.is_null());
            if finishes {
                made.extend(Self::finish(view, &id, usage));
            }
        }
        for data in made {
            self.push(out, String::new(), "messages", namespace, None, data);
        }
    }

    /// The events that close message `id` of `view`: each block's finish, then the
    /// message's.
    fn finish(view: &mut RunView, id: &str, usage: Option<&Value>) -> Vec<Value> {
        let Some(open) = view.open.remove(id) else {
            return Vec::new();
        };
        view.finished.insert(id.to_owned());
        let mut made: Vec<Value> = open
            .blocks
            .iter()
            .enumerate()
            .map(|(index, block)| {
                block_event(
                    "content-block-finish",
                    id,
                    index,
                    "content",
                    block.finished(),
                )
            })
            .collect();
        made.push(message_finish(id, usage));
        made
    }

    /// The end of `run`: its open messages closed, its subgraph runs still going ended,
    /// and its root lifecycle by its final status, unless a pause or a failure already
    /// said how it ended.
    pub(super) fn end(
        &mut self,
        out: &mut Vec<ProtocolEvent>,
        run: Uuid,
        status: Option<RunStatus>,
    ) {
        if let Some(view) = self.runs.get_mut(&run) {
            let mut ids: Vec<String> = view.open.keys().cloned().collect();
            ids.sort();
            let mut closing = Vec::new();
            for id in ids {
                let namespace = view
                    .open
                    .get(&id)
                    .map(|o| o.namespace.clone())
                    .unwrap_or_default();
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
            let (status, error) = match status {
                Some(RunStatus::Success) => ("completed", None),
                Some(RunStatus::Interrupted) => ("interrupted", None),
                Some(other) => (
                    "failed",
                    Some(format!("the run ended as {}", other.as_str())),
                ),
                None => (
                    "failed",
                    Some("the run was deleted before it ended".to_owned()),
                ),
            };
            self.settle(out, run, status, error.as_deref(), |_| true);
            self.lifecycle(out, run, status, error);
        }
        self.runs.remove(&run);
    }
}

/// A node of the agent tree: `{namespace, status, graph_name, children?}`.
fn tree_node(node: &Subgraph, all: &[Subgraph]) -> Value {
    let mut children: Vec<&Subgraph> = all
        .iter()
        .filter(|s| {
            s.namespace.len() == node.namespace.len() + 1
                && s.namespace.starts_with(&node.namespace)
        })
        .collect();
    children.sort_by(|a, b| a.namespace.cmp(&b.namespace));
    let mut value =
        json!({"namespace": node.namespace, "status": node.status, "graph_name": node.graph});
    if !children.is_empty() {
        value["children"] = children.into_iter().map(|c| tree_node(c, all)).collect();
    }
    value
}

/// `message-start` of message `id` of LangChain type `kind`, with the scalar entries of
/// the stream's metadata.
fn message_start(id: &str, kind: &str, metadata: Option<&Value>) -> Value {
    let mut start = json!({"event": "message-start", "role": role_of(kind), "id": id});
    let scalars: Map<String, Value> = metadata
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, v)| !(v.is_object() || v.is_array()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !scalars.is_empty() {
        start["metadata"] = Value::Object(scalars);
    }
    start
}

/// `message-finish` of message `id`, with its usage when known.
fn message_finish(id: &str, usage: Option<&Value>) -> Value {
    let mut finish = json!({"event": "message-finish", "id": id});
    if let Some(usage) = usage {
        finish["usage"] = usage.clone();
    }
    finish
}

/// `tool-started` of `call`.
fn tool_started(call: &Call) -> Value {
    json!({"event": "tool-started", "tool_call_id": call.id, "tool_name": call.name, "input": call.args})
}

/// A tool's answer as the `messages` channel shows it (the reference mirrors each
/// finished tool call's message there): a `tool` message holding its text.
fn tool_output_message(call_id: &str, message: &Value) -> Vec<Value> {
    let id = message
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("tool-{call_id}"), str::to_owned);
    let content = match message.get("content") {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    let text = json!({"type": "text", "text": content});
    vec![
        json!({"event": "message-start", "role": "tool", "id": id, "tool_call_id": call_id}),
        json!({"event": "content-block-start", "id": id, "index": 0, "content": {"type": "text", "text": ""}}),
        json!({"event": "content-block-delta", "id": id, "index": 0, "content": text}),
        json!({"event": "content-block-finish", "id": id, "index": 0, "content": text}),
        json!({"event": "message-finish", "id": id, "metadata": {}}),
    ]
}

/// The messages an update adds: the items of its lists that are LangChain messages.
fn messages_in(update: &Value) -> impl Iterator<Item = &Value> {
    update
        .as_object()
        .into_iter()
        .flat_map(|fields| fields.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter(|item| item.get("type").is_some_and(Value::is_string))
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
        n.begin(&mut out, run, "agent".into(), None);
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
        n.begin(&mut out, run, "agent".into(), None);
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
        n.begin(&mut out, run, "agent".into(), None);
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
        n.begin(&mut out, run, "chat".into(), None);
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
        n.begin(&mut out, run, "chat".into(), None);
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

    /// The `event:data.event` names of what was made.
    fn names(out: &[ProtocolEvent]) -> Vec<String> {
        out.iter()
            .map(|e| {
                format!(
                    "{}:{}",
                    e.method,
                    e.data["event"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    #[test]
    fn streamed_tool_calls_are_blocks_whose_arguments_arrive_as_deltas() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "chat".into(), None);
        let chunk = |text: &str, calls: Value, finish: Value| {
            json!([{"type": "AIMessageChunk", "id": "m1", "content": text, "tool_call_chunks": calls,
                    "response_metadata": {"finish_reason": finish}}, {}])
        };
        let first = json!([{"index": 0, "id": "c1", "name": "search", "args": "{\"q\": ", "type": "tool_call_chunk"}]);
        n.event(
            &mut out,
            run,
            &stored(2, "messages", chunk("Let me look.", first, Value::Null)),
        );
        let rest = json!([{"index": 0, "id": null, "name": null, "args": "\"rust\"}", "type": "tool_call_chunk"},
                          {"index": 1, "id": "c2", "name": "fetch", "args": "{bad", "type": "tool_call_chunk"}]);
        n.event(
            &mut out,
            run,
            &stored(3, "messages", chunk("", rest, json!("tool_calls"))),
        );
        let data: Vec<&Value> = out[1..].iter().map(|e| &e.data).collect();
        assert_eq!(
            names(&out[1..]),
            [
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-delta",
                "messages:content-block-start",
                "messages:content-block-delta",
                "messages:content-block-finish",
                "messages:content-block-finish",
                "messages:content-block-finish",
                "messages:message-finish",
            ]
        );
        assert_eq!(data[1]["content"], json!({"type": "text", "text": ""}));
        assert_eq!(data[3]["index"], 1);
        assert_eq!(
            data[3]["content"],
            json!({"type": "tool_call_chunk", "id": "c1", "name": "search", "args": "", "index": 0})
        );
        assert_eq!(
            data[4]["delta"],
            json!({"type": "tool-call-delta", "args": "{\"q\": "})
        );
        assert_eq!(
            data[5]["delta"],
            json!({"type": "tool-call-delta", "args": "\"rust\"}"})
        );
        assert_eq!(
            data[8]["content"],
            json!({"type": "text", "text": "Let me look."})
        );
        assert_eq!(
            data[9]["content"],
            json!({"type": "tool_call", "id": "c1", "name": "search", "args": {"q": "rust"}})
        );
        assert_eq!(data[10]["content"]["type"], "invalid_tool_call");
        assert_eq!(data[10]["content"]["args"], "{bad");
        assert!(data.iter().all(|d| d["id"] == "m1"));
    }

    #[test]
    fn a_whole_message_with_tool_calls_sends_each_call_as_a_block() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "chat".into(), None);
        let whole = json!([{"type": "ai", "id": "m1", "content": "",
                            "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}]}, {}]);
        n.event(&mut out, run, &stored(2, "messages", whole));
        assert_eq!(
            names(&out[1..]),
            [
                "messages:message-start",
                "messages:content-block-start",
                "messages:content-block-finish",
                "messages:message-finish",
            ]
        );
        assert_eq!(
            out[2].data["content"],
            json!({"type": "tool_call", "id": "c1", "name": "search", "args": {}})
        );
        assert_eq!(
            out[3].data["content"],
            json!({"type": "tool_call", "id": "c1", "name": "search", "args": {"q": "x"}})
        );
    }

    #[test]
    fn tool_calls_start_with_the_tool_node_and_end_with_their_tool_messages() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into(), None);
        let calls = json!({"agent": {"messages": [{"type": "ai", "id": "a1", "content": "",
            "tool_calls": [{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"},
                           {"name": "fail", "args": {}, "id": "c2", "type": "tool_call"}]}]}});
        n.event(&mut out, run, &stored(2, "updates", calls.clone()));
        n.event(
            &mut out,
            run,
            &stored(
                3,
                "tasks",
                json!({"id": "t", "name": "tools", "input": null}),
            ),
        );
        let answers = json!({"tools": {"messages": [
            {"type": "tool", "id": "m1", "content": "found it", "tool_call_id": "c1", "status": "success"},
            {"type": "tool", "id": "m2", "content": "boom", "tool_call_id": "c2", "status": "error"}]}});
        n.event(&mut out, run, &stored(4, "updates", answers.clone()));
        let tools: Vec<&Value> = out
            .iter()
            .filter(|e| e.method == "tools")
            .map(|e| &e.data)
            .collect();
        assert_eq!(
            tools,
            [
                &json!({"event": "tool-started", "tool_call_id": "c1", "tool_name": "search", "input": {"q": "x"}}),
                &json!({"event": "tool-started", "tool_call_id": "c2", "tool_name": "fail", "input": {}}),
                &json!({"event": "tool-finished", "tool_call_id": "c1", "output":
                        {"type": "tool", "id": "m1", "content": "found it", "tool_call_id": "c1", "status": "success"}}),
                &json!({"event": "tool-error", "tool_call_id": "c2", "message": "boom"}),
            ]
        );
        // The started events come with the tool node's task, the rest with its update.
        let started_after_task = out.iter().position(|e| e.method == "tasks")
            < out.iter().position(|e| e.method == "tools");
        assert!(started_after_task);
        let mirrored: Vec<&ProtocolEvent> = out.iter().filter(|e| e.method == "messages").collect();
        assert_eq!(mirrored.len(), 5);
        assert!(mirrored.iter().all(|e| e.namespace == ["tools:c1"]));
        assert_eq!(
            mirrored[0].data,
            json!({"event": "message-start", "role": "tool", "id": "m1", "tool_call_id": "c1"})
        );
        assert_eq!(
            mirrored[3].data["content"],
            json!({"type": "text", "text": "found it"})
        );

        // A parent graph's update repeating the subgraph's messages says nothing new.
        let before = out.len();
        let mut repeated = calls["agent"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        repeated.extend(
            answers["tools"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        let parent = json!({"research": {"messages": repeated}});
        n.event(&mut out, run, &stored(5, "updates", parent));
        assert!(
            out[before..].iter().all(|e| e.method == "updates"),
            "{:?}",
            &out[before..]
        );
    }

    #[test]
    fn subgraph_runs_start_and_complete_with_their_namespace() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into(), None);
        let task = json!({"id": "t", "name": "note", "input": null});
        n.event(&mut out, run, &stored(2, "tasks|inner:2|deeper:1", task));
        assert_eq!(
            n.tree().expect("a tree"),
            json!({"namespace": [], "status": "running", "graph_name": "agent", "children": [
                {"namespace": ["inner:2"], "status": "started", "graph_name": "inner", "children": [
                    {"namespace": ["inner:2", "deeper:1"], "status": "started", "graph_name": "deeper"}]}]})
        );
        n.event(
            &mut out,
            run,
            &stored(3, "updates", json!({"inner": {"messages": []}})),
        );
        n.end(&mut out, run, Some(RunStatus::Success));
        let lifecycle: Vec<(Vec<String>, Value)> = out
            .iter()
            .filter(|e| e.method == "lifecycle")
            .map(|e| (e.namespace.clone(), e.data.clone()))
            .collect();
        let ns = |segments: &[&str]| segments.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            lifecycle,
            [
                (ns(&[]), json!({"event": "running", "graph_name": "agent"})),
                (
                    ns(&["inner:2"]),
                    json!({"event": "started", "namespace": ["inner:2"], "graph_name": "inner", "trigger_call_id": "2"})
                ),
                (
                    ns(&["inner:2", "deeper:1"]),
                    json!({"event": "started", "namespace": ["inner:2", "deeper:1"],
                                                       "graph_name": "deeper", "trigger_call_id": "1"})
                ),
                (
                    ns(&["inner:2", "deeper:1"]),
                    json!({"event": "completed", "graph_name": "deeper"})
                ),
                (
                    ns(&["inner:2"]),
                    json!({"event": "completed", "graph_name": "inner"})
                ),
                (
                    ns(&[]),
                    json!({"event": "completed", "graph_name": "agent"})
                ),
            ]
        );
    }

    #[test]
    fn a_failure_fails_the_subgraph_runs_still_going() {
        let run = Uuid::now_v7();
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        n.begin(&mut out, run, "agent".into(), None);
        n.event(&mut out, run, &stored(2, "custom|inner:2", json!(1)));
        n.event(
            &mut out,
            run,
            &stored(3, "error", json!({"error": "X", "message": "boom"})),
        );
        n.end(&mut out, run, Some(RunStatus::Error));
        let last: Vec<&Value> = out.iter().rev().take(2).map(|e| &e.data).collect();
        assert_eq!(
            last[0],
            &json!({"event": "failed", "graph_name": "agent", "error": "boom"})
        );
        assert_eq!(
            last[1],
            &json!({"event": "failed", "graph_name": "inner", "error": "boom"})
        );
    }

    #[test]
    fn checkpoints_chain_to_their_parents_and_say_their_source() {
        let checkpoint = |id: &str, step: i64| {
            json!({"config": {"configurable": {"checkpoint_id": id, "checkpoint_ns": ""}},
                   "metadata": {"step": step}, "values": {}, "next": []})
        };
        let mut n = Normalizer::default();
        let mut out = Vec::new();
        let first = Uuid::now_v7();
        n.begin(&mut out, first, "agent".into(), None);
        n.event(
            &mut out,
            first,
            &stored(2, "checkpoints", checkpoint("a", 0)),
        );
        n.event(
            &mut out,
            first,
            &stored(3, "checkpoints", checkpoint("b", 1)),
        );
        n.end(&mut out, first, Some(RunStatus::Success));
        let fork = Uuid::now_v7();
        n.begin(&mut out, fork, "agent".into(), Some("a".into()));
        n.event(
            &mut out,
            fork,
            &stored(2, "checkpoints", checkpoint("c", 0)),
        );
        n.event(
            &mut out,
            fork,
            &stored(3, "checkpoints", checkpoint("d", 1)),
        );
        let envelopes: Vec<&Value> = out
            .iter()
            .filter(|e| e.method == "checkpoints")
            .map(|e| &e.data)
            .collect();
        assert_eq!(
            envelopes,
            [
                &json!({"id": "a", "step": 0, "source": "input"}),
                &json!({"id": "b", "step": 1, "source": "loop", "parent_id": "a"}),
                &json!({"id": "c", "step": 0, "source": "fork", "parent_id": "a"}),
                &json!({"id": "d", "step": 1, "source": "input", "parent_id": "c"}),
            ]
        );
    }
}
