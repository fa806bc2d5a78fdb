//! `/threads`: create, get, patch, delete, search, count, state (get, at a checkpoint,
//! update), history and copy.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use graphkit::checkpoint::ListOptions;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::spec::{Endpoint, Field, NO_CONTENT, fields, opt, req};
use super::{
    Api, ascending_of, json_response, limit_of, no_content, object_field, offset_of, parse_body,
    query_count, query_pairs, query_value, select_fields, select_of, text_field, ttl_minutes,
    uuid_param,
};
use crate::backend::{
    IfExists, NewThread, THREAD_SORT_COLUMNS, ThreadQuery, ThreadRecord, ThreadStatus,
};
use crate::error::{Result, ServerError};
use crate::graph::SharedGraph;
use crate::ids::new_id;

/// The fields of a thread search or count body.
const THREAD_QUERY: &[Field] = &[
    opt("metadata", "object"),
    opt("values", "object"),
    opt("ids", "array"),
    opt("status", "string"),
    opt("limit", "integer"),
    opt("offset", "integer"),
    opt("sort_by", "string"),
    opt("sort_order", "string"),
    opt("select", "array"),
];

/// The fields of a history body.
const HISTORY_BODY: &[Field] = &[
    opt("limit", "integer"),
    opt("before", "any"),
    opt("metadata", "object"),
];

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post("/threads", "Create a thread", create).body(fields![
            opt("thread_id", "string"),
            opt("metadata", "object"),
            opt("if_exists", "string"),
            opt("supersteps", "array"),
            opt("ttl", "any"),
        ]),
        Endpoint::post("/threads/search", "Search threads", search).body(THREAD_QUERY),
        Endpoint::post("/threads/count", "Count threads", count).body(THREAD_QUERY),
        Endpoint::post("/threads/prune", "Delete threads by id", prune).body(fields![
            req("thread_ids", "array"),
            opt("strategy", "string")
        ]),
        Endpoint::get("/threads/{id}", "Get a thread", get_one)
            .query(fields![opt("include", "string")]),
        Endpoint::patch("/threads/{id}", "Merge metadata into a thread", patch)
            .body(fields![opt("metadata", "object"), opt("ttl", "any")]),
        Endpoint::delete("/threads/{id}", "Delete a thread", delete).answers(NO_CONTENT),
        Endpoint::get("/threads/{id}/state", "The thread's current state", state),
        Endpoint::get(
            "/threads/{id}/storage",
            "Bytes the thread's checkpoints occupy, per part and per channel",
            storage,
        ),
        Endpoint::post(
            "/threads/{id}/state",
            "Update the thread's state",
            update_state,
        )
        .body(fields![
            opt("values", "any"),
            opt("as_node", "string"),
            opt("checkpoint_id", "string"),
            opt("checkpoint", "object"),
        ]),
        Endpoint::post(
            "/threads/{id}/state/checkpoint",
            "The thread's state at a checkpoint",
            state_at_body,
        )
        .body(fields![req("checkpoint", "object")]),
        Endpoint::get(
            "/threads/{id}/state/{checkpoint_id}",
            "The thread's state at a checkpoint",
            state_at,
        ),
        Endpoint::post(
            "/threads/{id}/history",
            "The thread's states, newest first",
            history,
        )
        .body(HISTORY_BODY),
        Endpoint::get(
            "/threads/{id}/history",
            "The thread's states, newest first",
            history_get,
        )
        .query(fields![opt("limit", "integer"), opt("before", "string")]),
        Endpoint::post(
            "/threads/{id}/copy",
            "Copy a thread with its checkpoints",
            copy,
        ),
    ]
}

/// The fields of a `Thread`, which a search's `select` may name.
const THREAD_FIELDS: &[&str] = &[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "status",
    "config",
    "values",
    "interrupts",
    "error",
];

pub(super) async fn thread_or_404(api: &Api, id: Uuid) -> Result<ThreadRecord> {
    api.backend()
        .get_thread(id)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("Thread {id} not found")))
}

/// The graph a thread runs (from its metadata), if a run or a create named one.
fn graph_of(api: &Api, thread: &ThreadRecord) -> Result<Option<SharedGraph>> {
    match thread.metadata.get("graph_id").and_then(Value::as_str) {
        None => Ok(None),
        Some(graph_id) => Ok(Some(api.shared.graph(graph_id)?.clone())),
    }
}

async fn create(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let ttl = thread_ttl(body.get("ttl"))?;
    let thread_id = match body.get("thread_id") {
        None | Some(Value::Null) => new_id(),
        Some(Value::String(s)) => uuid_param("thread", s)?,
        Some(_) => {
            return Err(ServerError::Validation(
                "Invalid thread ID: must be a UUID".into(),
            ));
        }
    };
    let if_exists = match text_field(&body, "if_exists")? {
        None | Some("raise") => IfExists::Raise,
        Some("do_nothing") => IfExists::DoNothing,
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "if_exists must be \"raise\" or \"do_nothing\", not {other:?}"
            )));
        }
    };
    let metadata = object_field(&body, "metadata")?.unwrap_or_default();
    let supersteps = match body.get("supersteps") {
        None | Some(Value::Null) => None,
        Some(Value::Array(steps)) => Some(steps),
        Some(_) => {
            return Err(ServerError::Validation(
                "`supersteps` must be a list of {\"updates\": [...]} objects".into(),
            ));
        }
    };
    let thread = api
        .backend()
        .create_thread(NewThread {
            thread_id,
            metadata,
            if_exists,
        })
        .await?;
    if ttl.is_some() {
        api.backend().set_thread_ttl(thread_id, ttl).await?;
    }
    // `supersteps`: updates applied in order, as if nodes had written them.
    if let Some(steps) = supersteps {
        let graph = graph_of(&api, &thread)?.ok_or_else(|| {
            ServerError::BadRequest(
                "supersteps need a graph: put `graph_id` in the thread's metadata".into(),
            )
        })?;
        for step in steps {
            let updates = step
                .get("updates")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for update in updates {
                let values = update.get("values").cloned().unwrap_or(Value::Null);
                let as_node = update.get("as_node").and_then(Value::as_str);
                graph
                    .update_state(&thread_id.to_string(), values, as_node, None)
                    .await?;
            }
        }
        let outcome = graph.outcome(&thread_id.to_string()).await?;
        api.backend()
            .set_thread_outcome(thread_id, &outcome)
            .await?;
        return Ok(json_response(
            StatusCode::OK,
            &thread_or_404(&api, thread_id).await?,
        ));
    }
    Ok(json_response(StatusCode::OK, &thread))
}

/// A thread's `ttl`: `{"strategy": "delete", "ttl": minutes}` as the SDKs send it, or a
/// plain number of minutes; `None` when absent or null. The thread is deleted (with its
/// runs and checkpoints) that many minutes after it was created, last given a ttl, or last
/// given a run.
fn thread_ttl(value: Option<&Value>) -> Result<Option<f64>> {
    let minutes = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(ttl)) => {
            match ttl.get("strategy") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s == "delete" => {}
                Some(other) => {
                    return Err(ServerError::Validation(format!(
                        "ttl.strategy must be \"delete\" (the one strategy served), not {other}"
                    )));
                }
            }
            ttl.get("ttl").ok_or_else(|| {
                ServerError::Validation("ttl needs `ttl`, the minutes the thread lives".into())
            })?
        }
        Some(minutes) => minutes,
    };
    ttl_minutes("ttl", Some(minutes))
}

/// `GET /threads/{id}?include=ttl`: the thread, with `include=ttl` also its `ttl`
/// (`{"strategy": "delete", "ttl": minutes, "expires_at"}`, or null without one); another
/// `include` is a 422 that names it.
/// `GET /threads/{id}/storage`: what the thread's stored checkpoints and pending writes
/// occupy (see [`crate::backend::ThreadStorage`]).
async fn storage(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    thread_or_404(&api, id).await?;
    let storage = api.backend().thread_storage(id).await?;
    let mut answer = serde_json::to_value(&storage)
        .map_err(|e| ServerError::backend("encode the response", e))?;
    if let Value::Object(fields) = &mut answer {
        fields.insert("thread_id".into(), json!(id));
    }
    Ok(json_response(StatusCode::OK, &answer))
}

async fn get_one(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    let pairs = query_pairs(query.as_deref());
    let mut with_ttl = false;
    for name in pairs
        .iter()
        .filter(|(k, _)| k == "include")
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        match name {
            "ttl" => with_ttl = true,
            other => {
                return Err(ServerError::Validation(format!(
                    "include names {other:?}; the one field to include is \"ttl\""
                )));
            }
        }
    }
    let thread = thread_or_404(&api, id).await?;
    if !with_ttl {
        return Ok(json_response(StatusCode::OK, &thread));
    }
    let mut shown = serde_json::to_value(&thread)
        .map_err(|e| ServerError::backend("encode the response", e))?;
    let ttl = api.backend().thread_ttl(id).await?.map(
        |(minutes, expires)| json!({"strategy": "delete", "ttl": minutes, "expires_at": expires}),
    );
    if let Value::Object(fields) = &mut shown {
        fields.insert("ttl".into(), ttl.unwrap_or(Value::Null));
    }
    Ok(json_response(StatusCode::OK, &shown))
}

async fn patch(
    State(api): State<Api>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    let body: Map<String, Value> = parse_body(&body)?;
    let ttl = thread_ttl(body.get("ttl"))?;
    let metadata = object_field(&body, "metadata")?.unwrap_or_default();
    if ttl.is_some() && !api.backend().set_thread_ttl(id, ttl).await? {
        return Err(ServerError::NotFound(format!("Thread {id} not found")));
    }
    let thread = api
        .backend()
        .patch_thread(id, &metadata)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("Thread {id} not found")))?;
    let minimal = headers
        .get("prefer")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("return=minimal"));
    Ok(if minimal {
        no_content()
    } else {
        json_response(StatusCode::OK, &thread)
    })
}

async fn delete(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    if !delete_thread(&api, id).await? {
        return Err(ServerError::NotFound(format!("Thread {id} not found")));
    }
    Ok(no_content())
}

/// Deletes a thread with its runs, events and checkpoints; `false` if there was none.
pub(super) async fn delete_thread(api: &Api, id: Uuid) -> Result<bool> {
    if !api.backend().delete_thread(id).await? {
        return Ok(false);
    }
    api.backend()
        .checkpointer()
        .delete_thread(&id.to_string())
        .await?;
    Ok(true)
}

/// `POST /threads/prune` `{thread_ids, strategy?}`: the `delete` strategy (the default)
/// deletes each thread as `DELETE /threads/{id}` does and answers `{"pruned_count": n}`,
/// the threads that existed; `keep_latest` (drop all but the latest checkpoint) is a 422.
async fn prune(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    match text_field(&body, "strategy")? {
        None | Some("delete") => {}
        Some("keep_latest") => {
            return Err(ServerError::Validation(
                "strategy \"keep_latest\" is not served by this server (it keeps every \
                 checkpoint of a thread); use \"delete\""
                    .into(),
            ));
        }
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "strategy must be \"delete\" or \"keep_latest\", not {other:?}"
            )));
        }
    }
    let Some(Value::Array(given)) = body.get("thread_ids") else {
        return Err(ServerError::Validation(
            "`thread_ids` is required: the list of the thread ids to prune".into(),
        ));
    };
    let ids = given
        .iter()
        .enumerate()
        .map(|(i, v)| match v.as_str() {
            Some(id) => Uuid::try_parse(id).map_err(|_| {
                ServerError::Validation(format!(
                    "`thread_ids[{i}]` must be a thread id (a UUID), not {id:?}"
                ))
            }),
            None => Err(ServerError::Validation(format!(
                "`thread_ids[{i}]` must be a thread id, not {v}"
            ))),
        })
        .collect::<Result<Vec<Uuid>>>()?;
    let mut pruned = 0u64;
    for id in ids {
        if delete_thread(&api, id).await? {
            pruned += 1;
        }
    }
    Ok(json_response(
        StatusCode::OK,
        &json!({ "pruned_count": pruned }),
    ))
}

fn thread_query(body: &Map<String, Value>, paged: bool) -> Result<ThreadQuery> {
    let ids = match body.get("ids") {
        None | Some(Value::Null) => None,
        Some(Value::Array(ids)) => Some(
            ids.iter()
                .map(|v| match v.as_str() {
                    Some(id) => uuid_param("thread", id),
                    None => Err(ServerError::Validation(format!(
                        "`ids` must be a list of thread ids, not a list holding {v}"
                    ))),
                })
                .collect::<Result<Vec<Uuid>>>()?,
        ),
        Some(_) => {
            return Err(ServerError::Validation(
                "`ids` must be a list of thread ids".into(),
            ));
        }
    };
    let status = match body.get("status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(ThreadStatus::parse(s).ok_or_else(|| {
            ServerError::Validation(format!(
                "status must be idle, busy, interrupted or error, not {s:?}"
            ))
        })?),
        Some(_) => return Err(ServerError::Validation("`status` must be a string".into())),
    };
    Ok(ThreadQuery {
        metadata: object_field(body, "metadata")?,
        values: object_field(body, "values")?,
        ids,
        status,
        limit: if paged {
            Some(limit_of(body.get("limit"), 10)?)
        } else {
            None
        },
        offset: if paged {
            offset_of(body.get("offset"))?
        } else {
            0
        },
        sort_by: match text_field(body, "sort_by")? {
            None => None,
            Some(column) if THREAD_SORT_COLUMNS.contains(&column) => Some(column.to_owned()),
            Some(other) => {
                return Err(ServerError::Validation(format!(
                    "sort_by must be one of {}, not {other:?}",
                    THREAD_SORT_COLUMNS.join(", ")
                )));
            }
        },
        ascending: ascending_of(body)?,
    })
}

async fn search(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let select = select_of(&body)?;
    let found = api
        .backend()
        .search_threads(&thread_query(&body, true)?)
        .await?;
    let found = select_fields(&found, select.as_deref(), THREAD_FIELDS)?;
    Ok(json_response(StatusCode::OK, &found))
}

async fn count(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let n = api
        .backend()
        .count_threads(&thread_query(&body, false)?)
        .await?;
    Ok(json_response(StatusCode::OK, &n))
}

/// The state of a thread that has no checkpoint (nothing ran on it yet).
fn empty_state(thread_id: Uuid) -> Value {
    json!({
        "values": {},
        "next": [],
        "tasks": [],
        "metadata": {},
        "created_at": null,
        "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": null, "checkpoint_map": null},
        "parent_checkpoint": null,
        "interrupts": [],
        "checkpoint_id": null,
        "parent_checkpoint_id": null,
    })
}

async fn state_value(api: &Api, id: &str, checkpoint_id: Option<&str>) -> Result<Response> {
    let id = uuid_param("thread", id)?;
    let thread = thread_or_404(api, id).await?;
    let Some(graph) = graph_of(api, &thread)? else {
        return match checkpoint_id {
            None => Ok(json_response(StatusCode::OK, &empty_state(id))),
            Some(c) => Err(ServerError::NotFound(format!(
                "Checkpoint {c} of thread {id} not found"
            ))),
        };
    };
    match graph.state(&id.to_string(), checkpoint_id).await? {
        Some(state) => Ok(json_response(StatusCode::OK, &state)),
        None => match checkpoint_id {
            None => Ok(json_response(StatusCode::OK, &empty_state(id))),
            Some(c) => Err(ServerError::NotFound(format!(
                "Checkpoint {c} of thread {id} not found"
            ))),
        },
    }
}

async fn state(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    state_value(&api, &id, None).await
}

async fn state_at(
    State(api): State<Api>,
    Path((id, checkpoint_id)): Path<(String, String)>,
) -> Result<Response> {
    state_value(&api, &id, Some(&checkpoint_id)).await
}

/// `checkpoint_id` from the body field `field`: a `{checkpoint_id}` object, a plain string,
/// or null; anything else is a 422 naming the field.
fn checkpoint_id_of(body: &Map<String, Value>, field: &str) -> Result<Option<String>> {
    let refusal = || {
        ServerError::Validation(format!(
            "`{field}` must be a checkpoint id or an object with a string `checkpoint_id`"
        ))
    };
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Object(o)) => match o.get("checkpoint_id") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(refusal()),
        },
        Some(_) => Err(refusal()),
    }
}

async fn state_at_body(
    State(api): State<Api>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let checkpoint = checkpoint_id_of(&body, "checkpoint")?;
    state_value(&api, &id, checkpoint.as_deref()).await
}

async fn update_state(
    State(api): State<Api>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    let body: Map<String, Value> = parse_body(&body)?;
    let as_node = text_field(&body, "as_node")?;
    let checkpoint = match text_field(&body, "checkpoint_id")? {
        Some(id) => Some(id.to_owned()),
        None => checkpoint_id_of(&body, "checkpoint")?,
    };
    let thread = thread_or_404(&api, id).await?;
    if thread.status == ThreadStatus::Busy {
        return Err(ServerError::Conflict(format!(
            "Thread {id} is busy with a run; update its state when the run ends"
        )));
    }
    let graph = match graph_of(&api, &thread)? {
        Some(graph) => graph,
        None => {
            // A thread nothing ran on: a graph may be named in the metadata, or the only one served.
            if api.shared.graphs.len() != 1 {
                return Err(ServerError::BadRequest(format!(
                    "Thread {id} has no graph yet: run it once, or create it with metadata {{\"graph_id\": ...}}"
                )));
            }
            let (graph_id, graph) = api
                .shared
                .graphs
                .iter()
                .next()
                .map(|(k, v)| (k.clone(), v.clone()))
                .ok_or_else(|| ServerError::BadRequest("no graph is served".into()))?;
            let mut meta = Map::new();
            meta.insert("graph_id".into(), Value::String(graph_id));
            api.backend().patch_thread(id, &meta).await?;
            graph
        }
    };
    let values = body.get("values").cloned().unwrap_or(Value::Null);
    let written = graph
        .update_state(&id.to_string(), values, as_node, checkpoint.as_deref())
        .await?;
    let outcome = graph.outcome(&id.to_string()).await?;
    api.backend().set_thread_outcome(id, &outcome).await?;
    Ok(json_response(
        StatusCode::OK,
        &json!({"checkpoint": {"thread_id": id, "checkpoint_ns": "", "checkpoint_id": written, "checkpoint_map": null}}),
    ))
}

async fn history_of(api: &Api, id: &str, options: ListOptions) -> Result<Response> {
    let id = uuid_param("thread", id)?;
    let thread = thread_or_404(api, id).await?;
    let Some(graph) = graph_of(api, &thread)? else {
        return Ok(json_response(StatusCode::OK, &Vec::<Value>::new()));
    };
    let history = graph.history(&id.to_string(), &options).await?;
    Ok(json_response(StatusCode::OK, &history))
}

async fn history(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let options = ListOptions {
        before: checkpoint_id_of(&body, "before")?,
        limit: Some(limit_of(body.get("limit"), 10)?),
        metadata: object_field(&body, "metadata")?,
    };
    history_of(&api, &id, options).await
}

async fn history_get(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let pairs = query_pairs(query.as_deref());
    let options = ListOptions {
        before: query_value(&pairs, "before").map(str::to_owned),
        limit: Some(query_count(&pairs, "limit", 10)?),
        metadata: None,
    };
    history_of(&api, &id, options).await
}

async fn copy(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let id = uuid_param("thread", &id)?;
    let thread = thread_or_404(&api, id).await?;
    let new = new_id();
    api.backend()
        .create_thread(NewThread {
            thread_id: new,
            metadata: thread.metadata.clone(),
            if_exists: IfExists::Raise,
        })
        .await?;
    let saver = api.backend().checkpointer();
    let (from, to) = (id.to_string(), new.to_string());
    let mut records = saver.list(&from, "", &ListOptions::default()).await?;
    records.reverse(); // oldest first, so parents exist before their children
    for record in records {
        let Some(tuple) = saver.get(&from, "", Some(&record.checkpoint_id)).await? else {
            continue;
        };
        let mut copied = tuple.record;
        copied.thread_id.clone_from(&to);
        let checkpoint_id = copied.checkpoint_id.clone();
        saver.put(copied).await?;
        if !tuple.pending_writes.is_empty() {
            saver
                .put_writes(&to, "", &checkpoint_id, tuple.pending_writes)
                .await?;
        }
    }
    if let Some(graph) = graph_of(&api, &thread)? {
        let outcome = graph.outcome(&to).await?;
        api.backend().set_thread_outcome(new, &outcome).await?;
    }
    Ok(json_response(
        StatusCode::OK,
        &thread_or_404(&api, new).await?,
    ))
}
