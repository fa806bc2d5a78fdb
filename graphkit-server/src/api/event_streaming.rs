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
//! "method", "params": {"namespace", "timestamp", "data", "node"?}}`, made by
//! [`super::event_normalizer::Normalizer`]): `values` and `updates` (one node's update;
//! `params.node`) with their messages in the protocol's shape, `messages` (a chat model's
//! messages as `message-start`, text and tool-call blocks and `message-finish`), `tools`
//! (`tool-started`, `tool-finished`, `tool-error`), `checkpoints` (`{id, parent_id, step,
//! source}`), `custom` (`{payload}`), `tasks`, and from a pause one `input.requested` per
//! interrupt (`{interrupt_id, payload}`) and a root `lifecycle` `interrupted`. Each run opens
//! with a root `lifecycle` `running` and closes with `completed`, `failed` (with `error`) or
//! `interrupted`; each subgraph run has its own `lifecycle` (`started`, then `completed`,
//! `failed` or `interrupted`) at its namespace. `seq` counts every protocol event of the
//! replay, so it is the same on every connection and a reconnecting client's `since` skips
//! what it has; `event_id` is stable across connections (`{run_id}:{stored seq}`, with `.n`
//! for the second and later events made from one stored event).
//!
//! A thread need not exist for its event stream (or WebSocket) to open: as at the
//! reference, a client may subscribe before the `run.start` that creates it.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::MethodRouter;
use futures::stream;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::event_normalizer::{Normalizer, ProtocolEvent};
use super::spec::{Answer, Endpoint, fields, opt, req};
use super::stream::{HEARTBEAT, frame_with_id, sse_response};
use super::thread_stream::{Item, Modes, Start, ThreadFollow};
use super::{Api, json_response, uuid_param};
use crate::backend::{RunQuery, RunRecord, ThreadRecord, ThreadStatus};
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
const RUN_MODES: &[&str] = &[
    "values",
    "updates",
    "messages-tuple",
    "custom",
    "tasks",
    "checkpoints",
];

/// How long `input.respond` waits for a thread whose run is still settling its pause (the
/// `input.requested` event is stored before the thread row records the interrupt).
const SETTLE: Duration = Duration::from_secs(5);

/// The commands endpoint and the event stream; `websocket` serves a `GET` of the event
/// stream's path (the WebSocket transport, [`super::event_socket`], which builds on this
/// module and so is handed in by the API's table).
pub(super) fn endpoints(websocket: MethodRouter<Api>) -> Vec<Endpoint> {
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
    events.handler = events.handler.merge(websocket);
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
    let envelope = match envelope(&command) {
        Ok(envelope) => envelope,
        Err(refused) => return Ok(json_response(StatusCode::BAD_REQUEST, &refused)),
    };
    let id = envelope.get("id").cloned().unwrap_or(Value::Null);
    let result = handle(&api, thread_id, envelope).await;
    Ok(json_response(StatusCode::OK, &answer(&id, result, 0)))
}

/// The command in `command`, which must be an object with an integer `id` and a string
/// `method`; else the answer that refuses it.
pub(super) fn envelope(command: &Value) -> std::result::Result<&Map<String, Value>, Value> {
    command
        .as_object()
        .filter(|c| {
            c.get("id").is_some_and(Value::is_i64) && c.get("method").is_some_and(Value::is_string)
        })
        .ok_or_else(|| {
            let id = command.get("id").cloned().unwrap_or(Value::Null);
            let refusal =
                Refusal::invalid("Protocol commands must include an integer id and string method.");
            answer(&id, Err(refusal), 0)
        })
}

/// A command's `method` and `params` (empty when absent or not an object).
pub(super) fn method_and_params(command: &Map<String, Value>) -> (&str, &Map<String, Value>) {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    let method = command
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let params = command
        .get("params")
        .and_then(Value::as_object)
        .unwrap_or(&EMPTY);
    (method, params)
}

/// The result of one command (`command` has an integer `id` and a string `method`), as a
/// connection-less (HTTP) command is answered.
pub(super) async fn handle(
    api: &Api,
    thread_id: Uuid,
    command: &Map<String, Value>,
) -> std::result::Result<Value, Refusal> {
    let (method, params) = method_and_params(command);
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

/// `POST /threads/{tid}/stream/events`.
async fn events(State(api): State<Api>, Path(tid): Path<String>, body: Bytes) -> Result<Response> {
    let thread_id = uuid_param("thread", &tid)?;
    let filter = Filter::parse(&body)?;
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
                    let record = self.record(run).await?;
                    self.begin(run, record.as_ref(), made);
                }
                self.normalizer.event(made, run, &event);
            }
            Item::RunDone(run) => {
                let record = self.record(run).await?;
                if !self.normalizer.knows(run) {
                    self.begin(run, record.as_ref(), made);
                }
                self.normalizer.end(made, run, record.map(|r| r.status));
            }
        }
        Ok(())
    }

    /// `run` as stored now (`None` once deleted).
    async fn record(&self, run: Uuid) -> Result<Option<RunRecord>> {
        self.api.backend().get_run(Some(self.thread_id), run).await
    }

    /// Starts following `run` with the graph it runs (the root lifecycle's
    /// `graph_name`) and the checkpoint it forked from.
    fn begin(&mut self, run: Uuid, record: Option<&RunRecord>, made: &mut Vec<ProtocolEvent>) {
        let kwarg = |key: &str| {
            record
                .and_then(|r| r.kwargs.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let graph = kwarg("graph_id").unwrap_or_else(|| "root".to_owned());
        self.normalizer
            .begin(made, run, graph, kwarg("checkpoint_id"));
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
