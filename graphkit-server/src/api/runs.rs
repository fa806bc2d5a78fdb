//! Runs: stateful (`/threads/{id}/runs...`) and stateless (`/runs...`): create, stream,
//! wait, join, join the stream, cancel, get, list, delete.

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::spec::{Answer, Endpoint, Field, NO_CONTENT, SSE, fields, json, opt, req};
use super::stream::{
    Departure, StreamFilter, run_result, set_locations, sse_body, sse_response, wait_body,
    wait_response, wait_terminal,
};
use super::threads::thread_or_404;
use super::{
    Api, json_response, no_content, parse_body, query_bool, query_count, query_pairs, query_select,
    query_value, select_fields, text_field, uuid_param,
};
use crate::backend::{
    CancelAction, MultitaskStrategy, NewRun, RunQuery, RunRecord, RunStatus, run_json,
};
use crate::error::{Result, ServerError};
use crate::graph::{CommandSpec, RunRequest};
use crate::ids::new_id;
use crate::time::Timestamp;
use crate::worker::RunKwargs;

/// The longest delay `after_seconds` may ask for: a year. Longer is a 422, never a silent
/// "now" or an overflow in the database.
const MAX_AFTER_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// The fields of a run-create body (`RunCreateStateful` / `RunCreateStateless`).
const RUN_CREATE: &[Field] = &[
    req("assistant_id", "string"),
    opt("input", "any"),
    opt("command", "object"),
    opt("stream_mode", "any"),
    opt("stream_subgraphs", "boolean"),
    opt("stream_resumable", "boolean"),
    opt("interrupt_before", "any"),
    opt("interrupt_after", "any"),
    opt("config", "object"),
    opt("context", "object"),
    opt("metadata", "object"),
    opt("checkpoint_id", "string"),
    opt("checkpoint", "object"),
    opt("multitask_strategy", "string"),
    opt("if_not_exists", "string"),
    opt("on_disconnect", "string"),
    opt("on_completion", "string"),
    opt("after_seconds", "number"),
    opt("durability", "string"),
    opt("webhook", "string"),
];

/// The query of a join of a run's stream.
const JOIN_STREAM_QUERY: &[Field] = &[
    opt("stream_mode", "any"),
    opt("cancel_on_disconnect", "boolean"),
];

const RUN: Answer = json("the run");

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post(
            "/threads/{tid}/runs",
            "Create a background run",
            create_stateful,
        )
        .body(RUN_CREATE)
        .answers(RUN),
        Endpoint::get(
            "/threads/{tid}/runs",
            "List a thread's runs, newest first",
            list,
        )
        .query(fields![
            opt("limit", "integer"),
            opt("offset", "integer"),
            opt("status", "string"),
            opt("select", "array"),
        ]),
        Endpoint::post(
            "/threads/{tid}/runs/stream",
            "Create a run and stream it",
            stream_stateful,
        )
        .body(RUN_CREATE)
        .answers(SSE),
        Endpoint::post(
            "/threads/{tid}/runs/wait",
            "Create a run and wait for its final values",
            wait_stateful,
        )
        .body(RUN_CREATE),
        Endpoint::get("/threads/{tid}/runs/{rid}", "Get a run", get_one).answers(RUN),
        Endpoint::delete("/threads/{tid}/runs/{rid}", "Delete a run", delete).answers(NO_CONTENT),
        Endpoint::get(
            "/threads/{tid}/runs/{rid}/join",
            "Wait for a run's final values",
            join,
        ),
        Endpoint::get(
            "/threads/{tid}/runs/{rid}/stream",
            "Join a run's stream (replay after Last-Event-ID)",
            join_stream,
        )
        .query(JOIN_STREAM_QUERY)
        .answers(SSE),
        Endpoint::post("/threads/{tid}/runs/{rid}/cancel", "Cancel a run", cancel)
            .query(fields![opt("wait", "boolean"), opt("action", "string")])
            .answers(Answer {
                status: 202,
                description: "cancel requested (with wait=true: 200 and the run's final values)",
                content: None,
            }),
        Endpoint::post(
            "/runs",
            "Create a stateless background run",
            create_stateless,
        )
        .body(RUN_CREATE)
        .answers(RUN),
        Endpoint::post(
            "/runs/stream",
            "Create a stateless run and stream it",
            stream_stateless,
        )
        .body(RUN_CREATE)
        .answers(SSE),
        Endpoint::post(
            "/runs/wait",
            "Create a stateless run and wait for its final values",
            wait_stateless,
        )
        .body(RUN_CREATE),
        Endpoint::post(
            "/runs/batch",
            "Create several stateless background runs",
            create_batch,
        )
        .list_body(RUN_CREATE)
        .answers(json("the created runs, in the order given")),
        Endpoint::post(
            "/runs/cancel",
            "Cancel runs by id or by status",
            cancel_many,
        )
        .query(fields![opt("action", "string")])
        .body(fields![
            opt("thread_id", "string"),
            opt("run_ids", "array"),
            opt("status", "string"),
        ])
        .answers(NO_CONTENT),
        Endpoint::get(
            "/runs/{rid}/stream",
            "Join a stateless run's stream",
            join_stream_stateless,
        )
        .query(JOIN_STREAM_QUERY)
        .answers(SSE),
    ]
}

/// The modes the v1 routes serve.
const STREAM_MODES: &[&str] = &[
    "values",
    "updates",
    "messages-tuple",
    "custom",
    "debug",
    "tasks",
    "checkpoints",
];

/// A run creation request (`RunCreateStateful` / `RunCreateStateless`). LangSmith's
/// fields (`feedback_keys`, `langsmith_tracer`, ...) are accepted and ignored; a `webhook`
/// is called when the run ends (see [`crate::webhook`]).
#[derive(Debug, Default, Deserialize)]
struct RunCreate {
    assistant_id: Option<String>,
    input: Option<Value>,
    command: Option<CommandSpec>,
    stream_mode: Option<Value>,
    stream_subgraphs: Option<bool>,
    stream_resumable: Option<bool>,
    interrupt_before: Option<Value>,
    interrupt_after: Option<Value>,
    config: Option<Value>,
    context: Option<Value>,
    metadata: Option<Map<String, Value>>,
    checkpoint_id: Option<String>,
    checkpoint: Option<Value>,
    multitask_strategy: Option<String>,
    if_not_exists: Option<String>,
    on_disconnect: Option<String>,
    on_completion: Option<String>,
    after_seconds: Option<f64>,
    durability: Option<String>,
    checkpoint_during: Option<bool>,
    webhook: Option<Value>,
}

/// How the client follows the run it creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    Background,
    Stream,
    Wait,
}

/// The stream modes of a request: a string or a list; default `["values"]`.
fn stream_modes(value: Option<&Value>) -> Result<Vec<String>> {
    let modes: Vec<String> = match value {
        None | Some(Value::Null) => vec!["values".into()],
        Some(Value::String(mode)) => vec![mode.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|m| {
                m.as_str().map(str::to_owned).ok_or_else(|| {
                    ServerError::Validation(format!(
                        "stream_mode must be a mode name or a list of them, not a list holding {m}"
                    ))
                })
            })
            .collect::<Result<_>>()?,
        Some(_) => {
            return Err(ServerError::Validation(
                "stream_mode must be a mode name or a list of them".into(),
            ));
        }
    };
    if modes.iter().any(|m| m == "messages") {
        return Err(ServerError::Validation(
            "stream_mode \"messages\" (partial/complete chunks) is not served; use \"messages-tuple\", which carries every chunk with its metadata".into(),
        ));
    }
    if let Some(bad) = modes.iter().find(|m| !STREAM_MODES.contains(&m.as_str())) {
        return Err(ServerError::Validation(format!(
            "stream_mode {bad:?} is not served; use one of {}",
            STREAM_MODES.join(", ")
        )));
    }
    Ok(modes)
}

fn check_nodes(value: Option<&Value>, nodes: &[String], what: &str) -> Result<()> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(all)) if all == "*" => Ok(()),
        Some(Value::Array(items)) => {
            for item in items {
                let name = item.as_str().ok_or_else(|| {
                    ServerError::Validation(format!(
                        "{what} must be \"*\" or a list of node names, not a list holding {item}"
                    ))
                })?;
                if !nodes.iter().any(|n| n == name) {
                    return Err(ServerError::Validation(format!(
                        "{what} names {item}, which is not a node of the graph (nodes: {})",
                        nodes.join(", ")
                    )));
                }
            }
            Ok(())
        }
        Some(_) => Err(ServerError::Validation(format!(
            "{what} must be \"*\" or a list of node names"
        ))),
    }
}

/// The run options the worker reads as they come (`config`, its `recursion_limit` and
/// `configurable`, `context`, `durability`, `checkpoint`): a value of the wrong shape is a
/// 422 naming it, never ignored.
fn check_run_options(body: &RunCreate) -> Result<()> {
    let object_or_null = |field: &str, value: Option<&Value>| match value {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(other) => Err(ServerError::Validation(format!(
            "`{field}` must be an object, not {other}"
        ))),
    };
    object_or_null("config", body.config.as_ref())?;
    object_or_null("context", body.context.as_ref())?;
    object_or_null("checkpoint", body.checkpoint.as_ref())?;
    if let Some(config) = &body.config {
        object_or_null("config.configurable", config.get("configurable"))?;
        match config.get("recursion_limit") {
            None | Some(Value::Null) => {}
            Some(limit) if limit.as_u64().is_some_and(|n| n >= 1) => {}
            Some(other) => {
                return Err(ServerError::Validation(format!(
                    "config.recursion_limit must be a whole number from 1, not {other}"
                )));
            }
        }
    }
    if let Some(checkpoint) = &body.checkpoint {
        match checkpoint.get("checkpoint_id") {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => {
                return Err(ServerError::Validation(format!(
                    "checkpoint.checkpoint_id must be a checkpoint id, not {other}"
                )));
            }
        }
    }
    match body.durability.as_deref() {
        None | Some("sync" | "async" | "exit") => Ok(()),
        Some(other) => Err(ServerError::Validation(format!(
            "durability must be \"sync\", \"async\" or \"exit\", not {other:?}"
        ))),
    }
}

fn is_empty_object(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    }
}

/// `over`'s keys set on `base`'s (both objects; a non-object counts as none).
fn merged(base: &Value, over: Value) -> Value {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    if let Value::Object(over) = over {
        merged.extend(over);
    }
    Value::Object(merged)
}

/// A run's `config` over its assistant's, as the reference server merges them: the run's
/// keys win, and `configurable` is merged key by key, the run's winning.
fn config_over(assistant: &Value, run: Value) -> Value {
    let configurable = merged(
        assistant.get("configurable").unwrap_or(&Value::Null),
        run.get("configurable").cloned().unwrap_or(Value::Null),
    );
    let mut config = merged(assistant, run);
    if let (Value::Object(config), Value::Object(c)) = (&mut config, &configurable)
        && !c.is_empty()
    {
        config.insert("configurable".into(), configurable);
    }
    config
}

struct Created {
    run: RunRecord,
    kwargs: RunKwargs,
    cancel_on_disconnect: bool,
    delete_thread: Option<Uuid>,
    stateless: bool,
}

/// A run request that passed every check, ready to be stored.
struct Prepared {
    new_run: NewRun,
    kwargs: RunKwargs,
    cancel_on_disconnect: bool,
    delete_thread: Option<Uuid>,
    stateless: bool,
}

async fn create_run(
    api: &Api,
    thread: Option<Uuid>,
    body: &Bytes,
    follow: Follow,
) -> Result<Created> {
    let prepared = prepare_run(api, thread, parse_body(body)?, follow).await?;
    store_run(api, prepared).await
}

/// Stores a prepared run (and its thread, when it needs one).
async fn store_run(api: &Api, prepared: Prepared) -> Result<Created> {
    let created = api.backend().create_run(prepared.new_run).await?;
    Ok(Created {
        run: created.run,
        kwargs: prepared.kwargs,
        cancel_on_disconnect: prepared.cancel_on_disconnect,
        delete_thread: prepared.delete_thread,
        stateless: prepared.stateless,
    })
}

/// Checks a run request (`thread`: the thread of a stateful run; `None` for a stateless
/// one, which gets a new thread) and turns it into the run to store, storing nothing.
async fn prepare_run(
    api: &Api,
    thread: Option<Uuid>,
    mut body: RunCreate,
    follow: Follow,
) -> Result<Prepared> {
    let assistant_id = body
        .assistant_id
        .as_deref()
        .ok_or_else(|| ServerError::Validation("`assistant_id` is required".into()))?;
    let assistant = api.assistant(assistant_id).await?;
    let graph = api.shared.graph(&assistant.graph_id)?;
    let webhook = match &body.webhook {
        None | Some(Value::Null) => None,
        Some(url) => {
            Some(crate::webhook::check("webhook", url, &api.shared.settings.webhooks).await?)
        }
    };
    let modes = stream_modes(body.stream_mode.as_ref())?;
    check_run_options(&body)?;
    let config = body.config.clone().unwrap_or(json!({}));
    if !is_empty_object(config.get("configurable")) && !is_empty_object(body.context.as_ref()) {
        return Err(ServerError::BadRequest(
            "Cannot specify both configurable and context. Prefer setting context alone.".into(),
        ));
    }
    let config = config_over(&assistant.config, config);
    let context = match merged(
        &assistant.context,
        body.context.clone().unwrap_or(Value::Null),
    ) {
        Value::Object(o) if o.is_empty() => Value::Null,
        context => context,
    };
    if thread.is_none() && body.command.as_ref().is_some_and(|c| c.resume.is_some()) {
        return Err(ServerError::BadRequest(
            "a resume command needs a thread: create the run on /threads/{thread_id}/runs".into(),
        ));
    }
    let nodes = graph.node_names();
    check_nodes(body.interrupt_before.as_ref(), &nodes, "interrupt_before")?;
    check_nodes(body.interrupt_after.as_ref(), &nodes, "interrupt_after")?;
    // Moved, not copied: the input may be big.
    let request = RunRequest {
        input: body.input.take(),
        command: body.command.take(),
    };
    graph.check_request(&request)?;
    let strategy = match body.multitask_strategy.as_deref() {
        None => MultitaskStrategy::Enqueue,
        Some(s) => MultitaskStrategy::parse(s).ok_or_else(|| {
            ServerError::Validation(format!(
                "multitask_strategy must be reject, interrupt, rollback or enqueue, not {s:?}"
            ))
        })?,
    };
    let create_if_missing = match body.if_not_exists.as_deref() {
        None | Some("reject") => false,
        Some("create") => true,
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "if_not_exists must be \"reject\" or \"create\", not {other:?}"
            )));
        }
    };
    let cancel_on_disconnect = match body.on_disconnect.as_deref() {
        None | Some("continue") => false,
        Some("cancel") => true,
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "on_disconnect must be \"cancel\" or \"continue\", not {other:?}"
            )));
        }
    };
    let delete_when_done = match body.on_completion.as_deref() {
        None | Some("delete") => thread.is_none(),
        Some("keep") => false,
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "on_completion must be \"delete\" or \"keep\", not {other:?}"
            )));
        }
    };
    let checkpoint_id = body
        .checkpoint_id
        .clone()
        .or_else(|| {
            body.checkpoint
                .as_ref()
                .and_then(|c| c.get("checkpoint_id"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .filter(|c| !c.is_empty());
    let durability = body.durability.clone().or_else(|| {
        body.checkpoint_during
            .map(|during| if during { "async" } else { "exit" }.to_owned())
    });
    let thread_id = thread.unwrap_or_else(new_id);
    let kwargs = RunKwargs {
        graph_id: assistant.graph_id.clone(),
        // Put into the stored JSON below, not serialized from here (a copy).
        input: None,
        command: request.command,
        stream_mode: modes,
        stream_subgraphs: body.stream_subgraphs.unwrap_or(false),
        stream_resumable: body.stream_resumable.unwrap_or(false),
        interrupt_before: body.interrupt_before,
        interrupt_after: body.interrupt_after,
        config,
        context,
        checkpoint_id,
        durability,
        delete_thread_when_done: delete_when_done && follow == Follow::Background,
        webhook,
    };
    let mut thread_metadata = Map::new();
    thread_metadata.insert("graph_id".into(), Value::String(assistant.graph_id.clone()));
    thread_metadata.insert(
        "assistant_id".into(),
        Value::String(assistant.assistant_id.to_string()),
    );
    let not_before = match body.after_seconds {
        None => None,
        Some(seconds) if (0.0..=MAX_AFTER_SECONDS).contains(&seconds) => (seconds > 0.0)
            .then(|| Timestamp::now().plus(std::time::Duration::from_secs_f64(seconds))),
        Some(seconds) => {
            return Err(ServerError::Validation(format!(
                "after_seconds must be a number of seconds from 0 to {MAX_AFTER_SECONDS} (a year), not {seconds}"
            )));
        }
    };
    let mut kwargs_json =
        serde_json::to_value(&kwargs).map_err(|e| ServerError::backend("encode the run", e))?;
    if let Value::Object(fields) = &mut kwargs_json {
        fields.insert("input".into(), request.input.unwrap_or(Value::Null));
    }
    Ok(Prepared {
        new_run: NewRun {
            run_id: new_id(),
            thread_id,
            assistant_id: assistant.assistant_id,
            metadata: body.metadata.unwrap_or_default(),
            kwargs: kwargs_json,
            multitask_strategy: strategy,
            create_thread: (thread.is_none() || create_if_missing).then(|| thread_metadata.clone()),
            thread_metadata,
            not_before,
        },
        kwargs,
        cancel_on_disconnect,
        delete_thread: (delete_when_done && follow != Follow::Background).then_some(thread_id),
        stateless: thread.is_none(),
    })
}

/// Creates a background run on `thread` from a run-create body given as JSON (the
/// streaming protocol's `run.start` and `input.respond` build theirs), checked as
/// `POST /threads/{thread_id}/runs` checks its body.
pub(super) async fn create_background(api: &Api, thread: Uuid, body: Value) -> Result<RunRecord> {
    let body: RunCreate = serde_path_to_error::deserialize(body)
        .map_err(|e| ServerError::MalformedBody(format!("`{}`: {}", e.path(), e.inner())))?;
    let prepared = prepare_run(api, Some(thread), body, Follow::Background).await?;
    Ok(store_run(api, prepared).await?.run)
}

/// Checks a cron's run payload (a run-create body) as a background run would be checked
/// (on `thread`, or on a new thread each time), and prepares the run each firing creates.
pub(super) async fn prepare_cron_run(
    api: &Api,
    thread: Option<Uuid>,
    payload: &Map<String, Value>,
) -> Result<crate::backend::CronRun> {
    let body: RunCreate = serde_path_to_error::deserialize(Value::Object(payload.clone()))
        .map_err(|e| ServerError::MalformedBody(format!("`{}`: {}", e.path(), e.inner())))?;
    let prepared = prepare_run(api, thread, body, Follow::Background).await?;
    let run = prepared.new_run;
    Ok(crate::backend::CronRun {
        assistant_id: run.assistant_id,
        metadata: run.metadata,
        kwargs: run.kwargs,
        multitask_strategy: run.multitask_strategy,
        thread_metadata: run.thread_metadata,
    })
}

/// The fields of a `Run`, which a list's `select` may name.
const RUN_FIELDS: &[&str] = &[
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "kwargs",
    "multitask_strategy",
    "attempt",
    "worker_id",
    "cancel_reason",
];

fn run_path(created: &Created) -> String {
    if created.stateless {
        format!("/runs/{}", created.run.run_id)
    } else {
        format!(
            "/threads/{}/runs/{}",
            created.run.thread_id, created.run.run_id
        )
    }
}

async fn background(api: &Api, thread: Option<Uuid>, body: &Bytes) -> Result<Response> {
    let created = create_run(api, thread, body, Follow::Background).await?;
    let mut response = json_response(StatusCode::OK, &run_json(&created.run));
    set_locations(&mut response, None, Some(run_path(&created)));
    Ok(response)
}

async fn streamed(api: &Api, thread: Option<Uuid>, body: &Bytes) -> Result<Response> {
    let created = create_run(api, thread, body, Follow::Stream).await?;
    let mut departure = Departure::new(api, created.run.run_id);
    departure.cancel_on_disconnect = created.cancel_on_disconnect;
    departure.delete_thread = created.delete_thread;
    let path = run_path(&created);
    let body = sse_body(
        api,
        created.run.run_id,
        0,
        StreamFilter::new(created.kwargs.stream_mode.clone()),
        created.kwargs.stream_resumable,
        departure,
    );
    Ok(sse_response(
        body,
        Some(format!("{path}/stream")),
        Some(path),
    ))
}

pub(super) async fn waited(api: &Api, thread: Option<Uuid>, body: &Bytes) -> Result<Response> {
    let created = create_run(api, thread, body, Follow::Wait).await?;
    let mut departure = Departure::new(api, created.run.run_id);
    departure.cancel_on_disconnect = created.cancel_on_disconnect;
    departure.delete_thread = created.delete_thread;
    let path = run_path(&created);
    let body = wait_body(api, created.run.run_id, created.run.thread_id, departure);
    Ok(wait_response(
        body,
        Some(format!("{path}/join")),
        Some(path),
    ))
}

async fn create_stateful(
    State(api): State<Api>,
    Path(tid): Path<String>,
    body: Bytes,
) -> Result<Response> {
    background(&api, Some(uuid_param("thread", &tid)?), &body).await
}

async fn stream_stateful(
    State(api): State<Api>,
    Path(tid): Path<String>,
    body: Bytes,
) -> Result<Response> {
    streamed(&api, Some(uuid_param("thread", &tid)?), &body).await
}

async fn wait_stateful(
    State(api): State<Api>,
    Path(tid): Path<String>,
    body: Bytes,
) -> Result<Response> {
    waited(&api, Some(uuid_param("thread", &tid)?), &body).await
}

async fn create_stateless(State(api): State<Api>, body: Bytes) -> Result<Response> {
    background(&api, None, &body).await
}

/// `POST /runs/batch`: a list of stateless run requests, each checked as `POST /runs`
/// checks one; the first invalid one refuses the whole batch with its index named, and
/// nothing is stored. Answers the created runs in the order given.
async fn create_batch(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let items: Value = parse_body(&body)?;
    let Value::Array(items) = items else {
        return Err(ServerError::Validation(
            "the body of /runs/batch must be a list of run requests (each as POST /runs takes)"
                .into(),
        ));
    };
    let mut prepared = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item = Bytes::from(
            serde_json::to_vec(&item).map_err(|e| ServerError::backend("encode a run", e))?,
        );
        let run = prepare_item(&api, &item)
            .await
            .map_err(|e| in_batch(index, e))?;
        prepared.push(run);
    }
    let mut created: Vec<Value> = Vec::with_capacity(prepared.len());
    let mut threads: Vec<Uuid> = Vec::with_capacity(prepared.len());
    for run in prepared {
        let thread = run.new_run.thread_id;
        match store_run(&api, run).await {
            Ok(run) => {
                threads.push(thread);
                created.push(run_json(&run.run));
            }
            Err(error) => {
                // Undo the runs stored so far (with their temporary threads), so that a
                // failed batch leaves nothing behind.
                for thread in threads {
                    if let Err(undo) = super::threads::delete_thread(&api, thread).await {
                        tracing::warn!(%thread, error = %undo, "could not undo a run of a failed batch");
                    }
                }
                return Err(error);
            }
        }
    }
    Ok(json_response(StatusCode::OK, &created))
}

/// One item of a batch, checked as `POST /runs` checks its body.
async fn prepare_item(api: &Api, item: &Bytes) -> Result<Prepared> {
    prepare_run(api, None, parse_body(item)?, Follow::Background).await
}

/// `error` of the batch item at `index`, its message naming the item.
fn in_batch(index: usize, error: ServerError) -> ServerError {
    match error {
        ServerError::Validation(m) => ServerError::Validation(format!("run [{index}]: {m}")),
        ServerError::MalformedBody(m) => {
            ServerError::Validation(format!("run [{index}]: malformed run request: {m}"))
        }
        ServerError::NotFound(m) => ServerError::NotFound(format!("run [{index}]: {m}")),
        ServerError::BadRequest(m) => ServerError::BadRequest(format!("run [{index}]: {m}")),
        other => other,
    }
}

async fn stream_stateless(State(api): State<Api>, body: Bytes) -> Result<Response> {
    streamed(&api, None, &body).await
}

async fn wait_stateless(State(api): State<Api>, body: Bytes) -> Result<Response> {
    waited(&api, None, &body).await
}

async fn list(
    State(api): State<Api>,
    Path(tid): Path<String>,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    let thread = uuid_param("thread", &tid)?;
    thread_or_404(&api, thread).await?;
    let pairs = query_pairs(q.as_deref());
    let status = match query_value(&pairs, "status") {
        None | Some("") => None,
        Some(s) => Some(
            RunStatus::parse(s)
                .ok_or_else(|| ServerError::Validation(format!("unknown run status {s:?}")))?,
        ),
    };
    let query = RunQuery {
        status,
        limit: Some(query_count(&pairs, "limit", 10)?),
        offset: query_count(&pairs, "offset", 0)?,
    };
    let select = query_select(&pairs)?;
    let runs = api.backend().list_runs(thread, &query).await?;
    let runs: Vec<Value> = runs.iter().map(run_json).collect();
    let runs = select_fields(&runs, select.as_deref(), RUN_FIELDS)?;
    Ok(json_response(StatusCode::OK, &runs))
}

async fn run_of(api: &Api, tid: Option<&str>, rid: &str) -> Result<RunRecord> {
    let thread = tid.map(|t| uuid_param("thread", t)).transpose()?;
    let run = uuid_param("run", rid)?;
    api.backend()
        .get_run(thread, run)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("Run {run} not found")))
}

async fn get_one(
    State(api): State<Api>,
    Path((tid, rid)): Path<(String, String)>,
) -> Result<Response> {
    let run = run_of(&api, Some(&tid), &rid).await?;
    Ok(json_response(StatusCode::OK, &run_json(&run)))
}

async fn delete(
    State(api): State<Api>,
    Path((tid, rid)): Path<(String, String)>,
) -> Result<Response> {
    let thread = uuid_param("thread", &tid)?;
    let run = uuid_param("run", &rid)?;
    if !api.backend().delete_run(thread, run).await? {
        return Err(ServerError::NotFound(format!("Run {run} not found")));
    }
    Ok(no_content())
}

async fn join(
    State(api): State<Api>,
    Path((tid, rid)): Path<(String, String)>,
) -> Result<Response> {
    let run = run_of(&api, Some(&tid), &rid).await?;
    let departure = Departure::new(&api, run.run_id);
    Ok(wait_response(
        wait_body(&api, run.run_id, run.thread_id, departure),
        None,
        None,
    ))
}

/// `Last-Event-ID` as a sequence number (an unknown form replays from the start).
fn last_event_id(headers: &HeaderMap) -> Option<i64> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().parse().unwrap_or(0))
}

/// `stream_mode` from the query: repeated (Python) or one JSON list (JS).
fn query_modes(pairs: &[(String, String)]) -> Result<Option<Vec<String>>> {
    let given: Vec<&str> = pairs
        .iter()
        // An empty value (the Python SDK's join without modes sends `?stream_mode=`) is no mode.
        .filter(|(k, v)| k == "stream_mode" && !v.is_empty())
        .map(|(_, v)| v.as_str())
        .collect();
    if given.is_empty() {
        return Ok(None);
    }
    let mut modes = Vec::new();
    for value in given {
        match serde_json::from_str::<Value>(value) {
            Ok(Value::Array(items)) => {
                for item in items {
                    let mode = item.as_str().ok_or_else(|| {
                        ServerError::Validation(format!(
                            "stream_mode must be a mode name or a list of them, not a list holding {item}"
                        ))
                    })?;
                    modes.push(mode.to_owned());
                }
            }
            Ok(Value::String(s)) => modes.push(s),
            _ => modes.push(value.to_owned()),
        }
    }
    stream_modes(Some(&Value::Array(
        modes.into_iter().map(Value::String).collect(),
    )))
    .map(Some)
}

async fn follow_stream(
    api: &Api,
    tid: Option<&str>,
    rid: &str,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Response> {
    let run = run_of(api, tid, rid).await?;
    let pairs = query_pairs(query);
    let kwargs: RunKwargs = serde_json::from_value(run.kwargs.clone()).unwrap_or_default();
    let modes = query_modes(&pairs)?.unwrap_or_else(|| kwargs.stream_mode.clone());
    // Without Last-Event-ID a join shows the run from now on.
    let after = match last_event_id(headers) {
        Some(seq) => seq,
        None => api.backend().last_event_seq(run.run_id).await?,
    };
    let mut departure = Departure::new(api, run.run_id);
    departure.cancel_on_disconnect = query_bool(&pairs, "cancel_on_disconnect")?;
    let body = sse_body(
        api,
        run.run_id,
        after,
        StreamFilter::new(modes),
        kwargs.stream_resumable,
        departure,
    );
    Ok(sse_response(body, None, None))
}

async fn join_stream(
    State(api): State<Api>,
    Path((tid, rid)): Path<(String, String)>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    follow_stream(&api, Some(&tid), &rid, &headers, q.as_deref()).await
}

async fn join_stream_stateless(
    State(api): State<Api>,
    Path(rid): Path<String>,
    headers: HeaderMap,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    follow_stream(&api, None, &rid, &headers, q.as_deref()).await
}

fn action_of(pairs: &[(String, String)]) -> Result<CancelAction> {
    match query_value(pairs, "action") {
        None | Some("") => Ok(CancelAction::Interrupt),
        Some(a) => CancelAction::parse(a).ok_or_else(|| {
            ServerError::Validation(format!("action must be interrupt or rollback, not {a:?}"))
        }),
    }
}

async fn cancel(
    State(api): State<Api>,
    Path((tid, rid)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    let thread = uuid_param("thread", &tid)?;
    let run = uuid_param("run", &rid)?;
    let pairs = query_pairs(q.as_deref());
    let action = action_of(&pairs)?;
    let wait = query_bool(&pairs, "wait")?;
    api.backend()
        .request_cancel(Some(thread), run, action)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("Run {run} not found")))?;
    if wait {
        let ended = wait_terminal(&api, run).await?;
        let body = run_result(&api, run, ended.as_ref(), thread).await?;
        return Ok(wait_response(Body::from(body), None, None));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

async fn cancel_many(
    State(api): State<Api>,
    RawQuery(q): RawQuery,
    body: Bytes,
) -> Result<Response> {
    let pairs = query_pairs(q.as_deref());
    let action = action_of(&pairs)?;
    let body: Map<String, Value> = parse_body(&body)?;
    let mut targets: Vec<(Option<Uuid>, Uuid)> = Vec::new();
    if let Some(Value::Array(ids)) = body.get("run_ids") {
        let thread = text_field(&body, "thread_id")?
            .map(|t| uuid_param("thread", t))
            .transpose()?;
        for id in ids {
            let id = id.as_str().ok_or_else(|| {
                ServerError::Validation(format!(
                    "`run_ids` must be a list of run ids, not a list holding {id}"
                ))
            })?;
            targets.push((thread, uuid_param("run", id)?));
        }
    } else if let Some(status) = body.get("status").and_then(Value::as_str) {
        let wanted: &[RunStatus] = match status {
            "pending" => &[RunStatus::Pending],
            "running" => &[RunStatus::Running],
            "all" => &[RunStatus::Pending, RunStatus::Running],
            other => {
                return Err(ServerError::Validation(format!(
                    "status must be pending, running or all, not {other:?}"
                )));
            }
        };
        let threads = api
            .backend()
            .search_threads(&crate::backend::ThreadQuery {
                status: Some(crate::backend::ThreadStatus::Busy),
                ..Default::default()
            })
            .await?;
        for thread in threads {
            for status in wanted {
                let query = RunQuery {
                    status: Some(*status),
                    ..Default::default()
                };
                for run in api.backend().list_runs(thread.thread_id, &query).await? {
                    targets.push((Some(thread.thread_id), run.run_id));
                }
            }
        }
    } else {
        return Err(ServerError::Validation(
            "give `run_ids` (with `thread_id`) or `status`".into(),
        ));
    }
    for (thread, run) in targets {
        api.backend().request_cancel(thread, run, action).await?;
    }
    Ok(no_content())
}
