//! The thread-centric event-streaming protocol that `client.threads.stream(...)` (Python SDK
//! 0.4, JS SDK 2.0) drives:
//!
//! - `POST /threads/{thread_id}/commands`: one JSON command (`{id, method, params}`) in,
//!   one JSON answer out, `{"type": "success", "id", "result", "meta"}` or
//!   `{"type": "error", "id", "error": <code>, "message"}` (status 200 either way; 400 only
//!   for a body that is not a command). `run.start` queues a run (creating the thread when it
//!   is new), `input.respond` resumes an interrupted thread, `subscription.subscribe` and
//!   `subscription.unsubscribe` are answered as the reference answers them over HTTP (a
//!   connection-less subscription: a fresh id, nothing kept), and `agent.getTree` and
//!   `subscription.reconnect`, which need a connection bound to a run, answer `no_such_run`.
//! - `POST /threads/{thread_id}/stream/events`: server-sent events; the body is the filter
//!   (`channels`, `namespaces`, `depth`, `since`) and the connection is the subscription.
//!   The stream replays the thread's runs from their first event, then follows new ones,
//!   and never ends on its own.
//! - `GET` of the same path upgraded to a WebSocket: commands and events on one connection
//!   (see [`super::event_socket`]).
//!
//! Each stored run event becomes protocol events (`{"type": "event", "event_id", "seq",
//! "method", "params": {"namespace", "timestamp", "data", "node"?}}`): `values`, `updates`
//! (one node's update; `params.node`), `messages` (a chat model's messages as
//! `message-start`, text blocks and `message-finish`, see [`Normalizer::message`]),
//! `custom` (`{payload}`), `tasks`, and from a pause
//! one `input.requested` per interrupt (`{interrupt_id, payload}`) and a root `lifecycle`
//! `interrupted`. Each run opens with a root `lifecycle` `running` and closes with
//! `completed`, `failed` (with `error`) or `interrupted`. `seq` counts every protocol event of
//! the replay, so it is the same on every connection and a reconnecting client's `since`
//! skips what it has; `event_id` is stable across connections (`{run_id}:{stored seq}`,
//! with `.n` for the second and later events made from one stored event).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use futures::stream;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::spec::{Answer, Endpoint, fields, opt, req};
use super::stream::{HEARTBEAT, frame_with_id, sse_response};
use super::thread_stream::{Item, Modes, Start, ThreadFollow};
use super::{Api, json_response, uuid_param};
use crate::backend::{RunEvent, RunQuery, RunStatus, ThreadRecord, ThreadStatus};
use crate::error::{Result, ServerError};

/// The channels a subscription may name (besides `custom:<name>`).
const CHANNELS: &[&str] = &[
    "values",
    "updates",
    "checkpoints",
    "messages",
    "tools",
    "custom",
    "lifecycle",
    "input",
    "tasks",
];

/// The stream modes every run of the protocol is created with: what the channels are made
/// from.
const RUN_MODES: &[&str] = &["values", "updates", "messages-tuple", "custom", "tasks"];

/// How long `input.respond` waits for a thread whose run is still settling its pause (the
/// `input.requested` event is stored before the thread row records the interrupt).
const SETTLE: Duration = Duration::from_secs(5);

pub(super) fn endpoints() -> Vec<Endpoint> {
    let mut events = Endpoint::post(
        "/threads/{tid}/stream/events",
        "The thread's protocol events as server-sent events; the body is the subscription",
        events,
    )
    .body(fields!(
        req("channels", "array"),
        opt("namespaces", "array"),
        opt("depth", "integer"),
        opt("since", "integer"),
    ))
    .answers(Answer {
        status: 200,
        description: "the thread's protocol events as server-sent events",
        content: Some("text/event-stream"),
    });
    // The WebSocket transport: the upgrade is a GET of the same path.
    events.handler = events.handler.get(super::event_socket::socket);
    vec![
        Endpoint::post(
            "/threads/{tid}/commands",
            "One command of the thread-centric streaming protocol (run.start, input.respond, ...)",
            command,
        )
        .body(fields!(
            req("id", "integer"),
            req("method", "string"),
            opt("params", "object"),
        )),
        events,
    ]
}

// ---------------------------------------------------------------------------------------
// Commands
// ---------------------------------------------------------------------------------------

/// The answer to command `id`: its result, or its protocol error. `applied_through_seq`
/// is the last event the connection sent (0 over HTTP, where a command is bound to no
/// connection).
pub(super) fn answer(id: &Value, result: std::result::Result<Value, Refusal>, seq: u64) -> Value {
    match result {
        Ok(result) => json!({"type": "success", "id": id, "result": result,
                             "meta": {"applied_through_seq": seq}}),
        Err(refusal) => {
            json!({"type": "error", "id": id, "error": refusal.code, "message": refusal.message})
        }
    }
}

/// `POST /threads/{tid}/commands`.
async fn command(State(api): State<Api>, Path(tid): Path<String>, body: Bytes) -> Result<Response> {
    let thread_id = uuid_param("thread", &tid)?;
    let command: Value = serde_json::from_slice(&body).map_err(|e| {
        ServerError::BadRequest(format!(
            "Invalid JSON body ({e}); send one command as JSON: {{\"id\": 1, \"method\": \"run.start\", \"params\": {{...}}}}"
        ))
    })?;
    let envelope = command.as_object().filter(|c| {
        c.get("id").is_some_and(Value::is_i64) && c.get("method").is_some_and(Value::is_string)
    });
    let Some(envelope) = envelope else {
        let id = command.get("id").cloned().unwrap_or(Value::Null);
        return Ok(json_response(StatusCode::BAD_REQUEST, &not_a_command(id)));
    };
    let id = envelope.get("id").cloned().unwrap_or(Value::Null);
    let result = handle(&api, thread_id, envelope).await;
    Ok(json_response(StatusCode::OK, &answer(&id, result, 0)))
}

/// The answer to something that is not a command `{id: <int>, method: <string>}`.
pub(super) fn not_a_command(id: Value) -> Value {
    let refusal =
        Refusal::invalid("Protocol commands must include an integer id and string method.");
    answer(&id, Err(refusal), 0)
}

/// The result of one command (`command` has an integer `id` and a string `method`), as a
/// connection-less (HTTP) command is answered.
pub(super) async fn handle(
    api: &Api,
    thread_id: Uuid,
    command: &Map<String, Value>,
) -> std::result::Result<Value, Refusal> {
    let method = command
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let empty = Map::new();
    let params = command
        .get("params")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    match method {
        "run.start" => run_start(api, thread_id, params).await,
        "input.respond" => input_respond(api, thread_id, params).await,
        "subscription.subscribe" => subscribe(params),
        "subscription.unsubscribe" => unsubscribe(params),
        "agent.getTree" | "subscription.reconnect" => Err(Refusal::new(
            "no_such_run",
            "No active run is bound to this thread.",
        )),
        other => Err(Refusal::new(
            "unknown_command",
            format!("Unknown protocol command: {other}"),
        )),
    }
}

/// A command's protocol error: its code and message.
pub(super) struct Refusal {
    code: &'static str,
    message: String,
}

impl Refusal {
    pub(super) fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(super) fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid_argument", message)
    }
}

/// An error of the server while carrying out a command (the run could not be created):
/// `unknown_error` with its message, as the reference answers.
impl From<ServerError> for Refusal {
    fn from(error: ServerError) -> Self {
        Self::new("unknown_error", error.to_string())
    }
}

/// `run.start`: queues a run on the thread (created when new), or, when the thread waits on
/// an interrupt and `input` is given, a run that resumes it with `input`.
async fn run_start(
    api: &Api,
    thread_id: Uuid,
    params: &Map<String, Value>,
) -> std::result::Result<Value, Refusal> {
    let assistant_id = params
        .get("assistant_id")
        .and_then(Value::as_str)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| Refusal::invalid("run.start requires an assistant_id."))?;
    let input = params.get("input").filter(|v| !v.is_null()).cloned();
    let resume = match &input {
        Some(_) => api
            .backend()
            .get_thread(thread_id)
            .await?
            .is_some_and(|t| t.status == ThreadStatus::Interrupted),
        None => false,
    };
    let mut body = run_body(assistant_id, params)?;
    if resume {
        body.insert("command".into(), json!({"resume": input}));
    } else {
        body.insert("input".into(), input.unwrap_or(Value::Null));
    }
    let run = super::runs::create_background(api, thread_id, Value::Object(body)).await?;
    Ok(json!({"run_id": run.run_id}))
}

/// The run-create body every protocol run shares: the assistant, `config` and `metadata`
/// from the command, a fork point from `config.configurable.checkpoint_id`, the caller's
/// `multitaskStrategy` (`enqueue` unless one of the four), the stream modes the channels
/// are made from, and the thread created when missing.
fn run_body(
    assistant_id: &str,
    params: &Map<String, Value>,
) -> std::result::Result<Map<String, Value>, Refusal> {
    let mut body = Map::new();
    body.insert("assistant_id".into(), json!(assistant_id));
    match params.get("config") {
        None | Some(Value::Null) => {}
        Some(Value::Object(config)) => {
            let fork = config
                .get("configurable")
                .and_then(|c| c.get("checkpoint_id"))
                .filter(|c| !c.is_null());
            if let Some(fork) = fork {
                let fork = fork.as_str().ok_or_else(|| {
                    Refusal::invalid("config.configurable.checkpoint_id must be a checkpoint id.")
                })?;
                body.insert("checkpoint_id".into(), json!(fork));
            }
            body.insert("config".into(), Value::Object(config.clone()));
        }
        Some(_) => return Err(Refusal::invalid("run.start config must be an object.")),
    }
    match params.get("metadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(metadata)) => {
            body.insert("metadata".into(), Value::Object(metadata.clone()));
        }
        Some(_) => return Err(Refusal::invalid("run.start metadata must be an object.")),
    }
    let strategy = params
        .get("multitaskStrategy")
        .and_then(Value::as_str)
        .filter(|s| ["reject", "rollback", "interrupt", "enqueue"].contains(s))
        .unwrap_or("enqueue");
    body.insert("multitask_strategy".into(), json!(strategy));
    body.insert("stream_mode".into(), json!(RUN_MODES));
    body.insert("stream_subgraphs".into(), json!(true));
    body.insert("if_not_exists".into(), json!("create"));
    body.insert("on_completion".into(), json!("keep"));
    Ok(body)
}

/// One interrupt an `input.respond` answers: its id and the response.
type Reply = (String, Value);

/// The interrupts an `input.respond` answers: `{interrupt_id, namespace?, response}`, or
/// `{responses: [...]}` of them.
fn respond_entries(params: &Map<String, Value>) -> std::result::Result<Vec<Reply>, Refusal> {
    let namespace_ok = |entry: &Map<String, Value>| match entry.get("namespace") {
        None => true,
        Some(Value::Array(segments)) => segments.iter().all(Value::is_string),
        Some(_) => false,
    };
    let bad_namespace =
        || Refusal::invalid("input.respond requires namespace to be a list of strings.");
    if let Some(responses) = params.get("responses").and_then(Value::as_array) {
        if responses.is_empty() {
            return Err(Refusal::invalid(
                "input.respond requires at least one response.",
            ));
        }
        return responses
            .iter()
            .map(|entry| {
                let entry = entry.as_object().ok_or_else(|| {
                    Refusal::invalid("input.respond responses entries must be objects.")
                })?;
                let id = entry
                    .get("interrupt_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        Refusal::invalid("input.respond responses entries require an interrupt_id.")
                    })?;
                if !namespace_ok(entry) {
                    return Err(bad_namespace());
                }
                let response = entry.get("response").cloned().unwrap_or(Value::Null);
                Ok((id.to_owned(), response))
            })
            .collect();
    }
    let id = params
        .get("interrupt_id")
        .and_then(Value::as_str)
        .ok_or_else(|| Refusal::invalid("input.respond requires an interrupt_id."))?;
    if !namespace_ok(params) {
        return Err(bad_namespace());
    }
    let response = params.get("response").cloned().unwrap_or(Value::Null);
    Ok(vec![(id.to_owned(), response)])
}

/// `input.respond`: checks each interrupt is one the thread waits on, and queues the run
/// that resumes them all (`{interrupt_id: response}`), with the command's `update`,
/// `goto`, `config` and `metadata`.
async fn input_respond(
    api: &Api,
    thread_id: Uuid,
    params: &Map<String, Value>,
) -> std::result::Result<Value, Refusal> {
    let entries = respond_entries(params)?;
    let no_run = || Refusal::new("no_such_run", "No interrupted run is bound to this thread.");
    let thread = settled_thread(api, thread_id).await?.ok_or_else(no_run)?;
    let pending = interrupt_ids(&thread.interrupts);
    if let Some((unknown, _)) = entries
        .iter()
        .find(|(id, _)| !pending.contains(id.as_str()))
    {
        return Err(Refusal::new(
            "no_such_interrupt",
            format!("Unknown or already-consumed interrupt: {unknown}"),
        ));
    }
    let assistant_id = thread
        .metadata
        .get("assistant_id")
        .and_then(Value::as_str)
        .ok_or_else(no_run)?;
    let mut body = run_body(assistant_id, params)?;
    let resume: Map<String, Value> = entries.into_iter().collect();
    let mut command = Map::new();
    command.insert("resume".into(), Value::Object(resume));
    for key in ["update", "goto"] {
        if let Some(value) = params.get(key).filter(|v| !v.is_null()) {
            command.insert(key.into(), value.clone());
        }
    }
    body.insert("command".into(), Value::Object(command));
    super::runs::create_background(api, thread_id, Value::Object(body)).await?;
    Ok(json!({}))
}

/// The ids of a thread row's pending interrupts (`{task_id: [{id, value}]}`).
fn interrupt_ids(interrupts: &Value) -> HashSet<&str> {
    interrupts
        .as_object()
        .into_iter()
        .flat_map(|by_task| by_task.values())
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|i| i.get("id").and_then(Value::as_str))
        .collect()
}

/// The thread (`None` when there is none), once no run of it is still settling: a client
/// that saw `input.requested` may answer before the run's end is recorded on the thread,
/// so a busy thread with no interrupt recorded is read again when its run changes, for at
/// most [`SETTLE`].
async fn settled_thread(api: &Api, thread_id: Uuid) -> Result<Option<ThreadRecord>> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let runs = api
            .backend()
            .list_runs(thread_id, &RunQuery::default())
            .await?;
        let mut watches: Vec<_> = runs
            .iter()
            .filter(|r| !r.status.is_terminal())
            .map(|r| api.backend().watch_run(r.run_id))
            .collect();
        let thread = api.backend().get_thread(thread_id).await?;
        let settling = thread.as_ref().is_some_and(|t| {
            t.status == ThreadStatus::Busy && interrupt_ids(&t.interrupts).is_empty()
        });
        let left = deadline.saturating_duration_since(Instant::now());
        if !settling || watches.is_empty() || left.is_zero() {
            return Ok(thread);
        }
        let changed =
            futures::future::select_all(watches.iter_mut().map(|w| Box::pin(w.changed())));
        if tokio::time::timeout(left, changed).await.is_err() {
            return Ok(thread);
        }
    }
}

/// `subscription.subscribe` over HTTP: the channels are checked and a subscription id is
/// given, as the reference does; the events themselves flow on
/// `POST /threads/{thread_id}/stream/events`, whose body is the subscription.
fn subscribe(params: &Map<String, Value>) -> std::result::Result<Value, Refusal> {
    let channels = params
        .get("channels")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .ok_or_else(|| {
            Refusal::invalid("subscription.subscribe requires a non-empty channels array.")
        })?;
    if !channels
        .iter()
        .all(|c| c.as_str().is_some_and(supported_channel))
    {
        return Err(Refusal::invalid(
            "subscription.subscribe received an unsupported channel.",
        ));
    }
    Ok(json!({"subscription_id": Uuid::new_v4(), "replayed_events": 0}))
}

/// `subscription.unsubscribe` over HTTP: no subscription outlives the request that made
/// it, so every id is unknown.
fn unsubscribe(params: &Map<String, Value>) -> std::result::Result<Value, Refusal> {
    let id = params
        .get("subscription_id")
        .and_then(Value::as_str)
        .ok_or_else(|| Refusal::invalid("subscription.unsubscribe requires a subscription_id."))?;
    Err(Refusal::new(
        "no_such_subscription",
        format!("Unknown subscription: {id}"),
    ))
}

fn supported_channel(channel: &str) -> bool {
    CHANNELS.contains(&channel)
        || channel
            .strip_prefix("custom:")
            .is_some_and(|n| !n.is_empty())
}

// ---------------------------------------------------------------------------------------
// The event stream
// ---------------------------------------------------------------------------------------

/// What is wrong with a subscription's channels.
#[derive(Debug)]
pub(super) enum WrongChannels {
    /// None were named.
    None,
    /// These are not channels (at most five named).
    Unsupported(Vec<String>),
}

/// What one subscription passes: an event stream's body, or a subscribe command's params.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Filter {
    channels: HashSet<String>,
    /// Namespace prefixes (`None`: every namespace).
    namespaces: Option<Vec<Vec<String>>>,
    /// How far below a prefix an event may be (`None`: any depth).
    depth: Option<usize>,
    /// Only events after this `seq`.
    pub(super) since: Option<u64>,
}

impl Filter {
    /// The body of `POST /threads/{tid}/stream/events`, read as the reference reads it: the
    /// channels are required and checked; a malformed `namespaces`, `depth` or `since` is
    /// left out.
    fn parse(body: &Bytes) -> Result<Self> {
        let body: Value = serde_json::from_slice(body).map_err(|e| {
            ServerError::BadRequest(format!(
                "Invalid JSON body ({e}); send the subscription as JSON: {{\"channels\": [\"values\", \"lifecycle\"]}}"
            ))
        })?;
        Self::of(&body).map_err(|wrong| {
            ServerError::BadRequest(match wrong {
                WrongChannels::None => "channels is required and must be a non-empty array".into(),
                WrongChannels::Unsupported(bad) => format!(
                    "channels contains unsupported entries: {}. Allowed: values, updates, messages, tools, \
                     custom, lifecycle, input, tasks, checkpoints, or any `custom:<name>`.",
                    bad.join(", ")
                ),
            })
        })
    }

    /// The filter of a subscription (an event stream's body, a subscribe command's
    /// params).
    pub(super) fn of(body: &Value) -> std::result::Result<Self, WrongChannels> {
        let channels = body
            .get("channels")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty())
            .ok_or(WrongChannels::None)?;
        let bad: Vec<String> = channels
            .iter()
            .filter(|c| !c.as_str().is_some_and(supported_channel))
            .take(5)
            .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned))
            .collect();
        if !bad.is_empty() {
            return Err(WrongChannels::Unsupported(bad));
        }
        let namespaces: Option<Vec<Vec<String>>> = body
            .get("namespaces")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|ns| serde_json::from_value::<Vec<String>>(ns.clone()).ok())
                    .collect::<Vec<_>>()
            })
            .filter(|list| !list.is_empty());
        let count = |key: &str| {
            body.get(key)
                .filter(|v| !v.is_boolean())
                .and_then(Value::as_u64)
        };
        Ok(Self {
            channels: channels
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            namespaces,
            depth: count("depth").and_then(|d| usize::try_from(d).ok()),
            since: count("since"),
        })
    }

    /// Whether the stream sends `event`.
    pub(super) fn passes(&self, event: &ProtocolEvent) -> bool {
        if self.since.is_some_and(|since| event.seq <= since) {
            return false;
        }
        let channel = if event.method == "input.requested" {
            "input"
        } else {
            event.method
        };
        let channel_ok = if channel == "custom" {
            self.channels.contains("custom")
                || event
                    .data
                    .get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|name| self.channels.contains(&format!("custom:{name}")))
        } else {
            self.channels.contains(channel)
        };
        channel_ok
            && self.namespaces.as_ref().is_none_or(|prefixes| {
                prefixes.iter().any(|prefix| {
                    prefix_matches(&event.namespace, prefix)
                        && self
                            .depth
                            .is_none_or(|depth| event.namespace.len() - prefix.len() <= depth)
                })
            })
    }
}

/// Whether `namespace` starts with `prefix`; a prefix segment without `:` also matches a
/// segment that is it plus a `:<task id>` suffix (`tools` matches `tools:7f3a`).
fn prefix_matches(namespace: &[String], prefix: &[String]) -> bool {
    prefix.len() <= namespace.len()
        && prefix.iter().zip(namespace).all(|(want, have)| {
            want == have || (!want.contains(':') && have.split(':').next() == Some(want.as_str()))
        })
}

/// One protocol event, before it is written out.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ProtocolEvent {
    pub(super) seq: u64,
    event_id: String,
    method: &'static str,
    namespace: Vec<String>,
    node: Option<String>,
    data: Value,
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
    fn frame(self) -> Bytes {
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
    fn begin(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, graph: String) {
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

    fn knows(&self, run: Uuid) -> bool {
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
    fn event(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, event: &RunEvent) {
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
    fn end(&mut self, out: &mut Vec<ProtocolEvent>, run: Uuid, status: Option<RunStatus>) {
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

/// `POST /threads/{tid}/stream/events`.
async fn events(State(api): State<Api>, Path(tid): Path<String>, body: Bytes) -> Result<Response> {
    let thread_id = uuid_param("thread", &tid)?;
    let filter = Filter::parse(&body)?;
    super::threads::thread_or_404(&api, thread_id).await?;
    let modes = Modes {
        runs: true,
        lifecycle: false,
    };
    let follow = ThreadFollow::start(api.clone(), thread_id, modes, Start::Beginning).await?;
    let stream = EventStream {
        tape: Tape::new(api, thread_id),
        follow,
        filter,
        pending: VecDeque::new(),
        made: Vec::new(),
    };
    Ok(sse_response(body_of(stream), None, None))
}

/// One connection's event stream.
struct EventStream {
    tape: Tape,
    follow: ThreadFollow,
    filter: Filter,
    pending: VecDeque<Bytes>,
    /// Scratch space for the protocol events of one item.
    made: Vec<ProtocolEvent>,
}

impl EventStream {
    /// The next frame to send; `None` when the stream ends.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            let taken = match self.follow.next().await? {
                Ok(item) => self.take(item).await,
                Err(error) => Err(error),
            };
            if let Err(error) = taken {
                // The stream ends after it says why, in the frame the SDK reads as a
                // stream failure.
                self.follow.close();
                return Some(frame_with_id(
                    "error",
                    &stream_failure(&error).to_string(),
                    None,
                ));
            }
        }
    }

    /// Turns one item of the thread's runs into frames.
    async fn take(&mut self, item: Item) -> Result<()> {
        if let Item::Heartbeat = item {
            self.pending.push_back(Bytes::from_static(HEARTBEAT));
            return Ok(());
        }
        let mut made = std::mem::take(&mut self.made);
        self.tape.take(item, &mut made).await?;
        for event in made.drain(..) {
            if self.filter.passes(&event) {
                self.pending.push_back(event.frame());
            }
        }
        self.made = made;
        Ok(())
    }
}

/// A thread's runs as protocol events: the [`Normalizer`] and what it reads of the runs.
pub(super) struct Tape {
    api: Api,
    thread_id: Uuid,
    pub(super) normalizer: Normalizer,
}

impl Tape {
    pub(super) fn new(api: Api, thread_id: Uuid) -> Self {
        Self {
            api,
            thread_id,
            normalizer: Normalizer::default(),
        }
    }

    /// Adds the protocol events of one item of the thread's runs to `made` (none for a
    /// heartbeat).
    pub(super) async fn take(&mut self, item: Item, made: &mut Vec<ProtocolEvent>) -> Result<()> {
        match item {
            Item::Heartbeat => {}
            Item::Event { run, event } => {
                if !self.normalizer.knows(run) {
                    let graph = self.graph_of(run).await?;
                    self.normalizer.begin(made, run, graph);
                }
                self.normalizer.event(made, run, &event);
            }
            Item::RunDone(run) => {
                let record = self
                    .api
                    .backend()
                    .get_run(Some(self.thread_id), run)
                    .await?;
                if !self.normalizer.knows(run) {
                    let graph = self.graph_of(run).await?;
                    self.normalizer.begin(made, run, graph);
                }
                self.normalizer.end(made, run, record.map(|r| r.status));
            }
        }
        Ok(())
    }

    /// The graph id `run` runs (the root lifecycle's `graph_name`).
    async fn graph_of(&self, run: Uuid) -> Result<String> {
        let record = self
            .api
            .backend()
            .get_run(Some(self.thread_id), run)
            .await?;
        Ok(record
            .and_then(|r| {
                r.kwargs
                    .get("graph_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| "root".to_owned()))
    }
}

/// The unsolicited error a stream sends before it closes on a failure.
pub(super) fn stream_failure(error: &ServerError) -> Value {
    json!({"type": "error", "id": null, "error": "unknown_error", "message": error.to_string()})
}

fn body_of(stream: EventStream) -> Body {
    let frames = stream::unfold(stream, |mut stream| async move {
        let frame = stream.next().await?;
        Some((Ok::<Bytes, std::convert::Infallible>(frame), stream))
    });
    Body::from_stream(frames)
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

    fn filter(body: Value) -> Result<Filter> {
        Filter::parse(&Bytes::from(body.to_string()))
    }

    #[test]
    fn the_filter_checks_channels_and_matches_namespaces_by_prefix() {
        assert!(filter(json!({})).is_err());
        assert!(filter(json!({"channels": []})).is_err());
        let refused = filter(json!({"channels": ["values", "debug"]})).expect_err("debug");
        assert!(refused.to_string().contains("debug"), "{refused}");
        let f = filter(json!({"channels": ["values", "custom:progress"], "namespaces": [["tools"]], "depth": 1, "since": 2}))
            .expect("valid");
        let event = |seq, method, ns: &[&str], data| ProtocolEvent {
            seq,
            event_id: String::new(),
            method,
            namespace: ns.iter().map(|s| (*s).to_owned()).collect(),
            node: None,
            data,
        };
        assert!(f.passes(&event(3, "values", &["tools:7f"], json!({}))));
        assert!(
            !f.passes(&event(2, "values", &["tools:7f"], json!({}))),
            "since"
        );
        assert!(
            !f.passes(&event(3, "values", &[], json!({}))),
            "outside the prefix"
        );
        assert!(
            !f.passes(&event(3, "values", &["tools", "a", "b"], json!({}))),
            "too deep"
        );
        assert!(
            !f.passes(&event(3, "updates", &["tools"], json!({}))),
            "channel"
        );
        assert!(f.passes(&event(3, "custom", &["tools"], json!({"name": "progress"}))));
        assert!(!f.passes(&event(3, "custom", &["tools"], json!({"payload": 1}))));
    }
}
