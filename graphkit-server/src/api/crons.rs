//! `/runs/crons`: scheduled runs. A cron is a schedule plus a run-create payload; the
//! workers create its runs on the queue when it is due (see [`crate::backend::CronRecord`]).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::runs::prepare_cron_run;
use super::spec::{Endpoint, Field, NO_CONTENT, fields, json, opt, req};
use super::threads::thread_or_404;
use super::{
    Api, ascending_of, json_response, limit_of, no_content, object_field, offset_of, parse_body,
    select_fields, select_of, text_field, uuid_param,
};
use crate::backend::{CronQuery, CronRecord};
use crate::error::{Result, ServerError};
use crate::ids::{new_id, system_assistant_id};
use crate::time::Timestamp;

/// The fields of a cron-create body: the cron's own, then those of its run.
const CRON_CREATE: &[Field] = &[
    req("assistant_id", "string"),
    req("schedule", "string"),
    opt("timezone", "string"),
    opt("end_time", "string"),
    opt("enabled", "boolean"),
    opt("on_run_completed", "string"),
    opt("input", "any"),
    opt("metadata", "object"),
    opt("config", "object"),
    opt("context", "object"),
    opt("interrupt_before", "any"),
    opt("interrupt_after", "any"),
    opt("webhook", "string"),
    opt("multitask_strategy", "string"),
    opt("stream_mode", "any"),
    opt("stream_subgraphs", "boolean"),
    opt("stream_resumable", "boolean"),
    opt("durability", "string"),
];

/// The fields of a cron update: any of a create's but the assistant.
const CRON_UPDATE: &[Field] = &[
    opt("schedule", "string"),
    opt("timezone", "string"),
    opt("end_time", "string"),
    opt("enabled", "boolean"),
    opt("on_run_completed", "string"),
    opt("input", "any"),
    opt("metadata", "object"),
    opt("config", "object"),
    opt("context", "object"),
    opt("interrupt_before", "any"),
    opt("interrupt_after", "any"),
    opt("webhook", "string"),
    opt("stream_mode", "any"),
    opt("stream_subgraphs", "boolean"),
    opt("stream_resumable", "boolean"),
    opt("durability", "string"),
];

const CRON: super::spec::Answer = json("the cron");

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post(
            "/runs/crons",
            "Create a cron whose runs each get a new thread",
            create_stateless,
        )
        .body(CRON_CREATE)
        .answers(CRON),
        Endpoint::post(
            "/threads/{tid}/runs/crons",
            "Create a cron whose runs run on the thread",
            create_on_thread,
        )
        .body(CRON_CREATE)
        .answers(CRON),
        Endpoint::post("/runs/crons/search", "Search crons", search).body(fields![
            opt("assistant_id", "string"),
            opt("thread_id", "string"),
            opt("enabled", "boolean"),
            opt("metadata", "object"),
            opt("limit", "integer"),
            opt("offset", "integer"),
            opt("sort_by", "string"),
            opt("sort_order", "string"),
            opt("select", "array"),
        ]),
        Endpoint::post("/runs/crons/count", "Count crons", count).body(fields![
            opt("assistant_id", "string"),
            opt("thread_id", "string"),
            opt("metadata", "object"),
        ]),
        Endpoint::get("/runs/crons/{cron_id}", "Get a cron", get_one).answers(CRON),
        Endpoint::patch("/runs/crons/{cron_id}", "Update a cron", update)
            .body(CRON_UPDATE)
            .answers(CRON),
        Endpoint::delete("/runs/crons/{cron_id}", "Delete a cron", delete).answers(NO_CONTENT),
    ]
}

/// The fields of a `Cron`, which a search's `select` may name.
const CRON_FIELDS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "payload",
    "user_id",
    "next_run_date",
    "metadata",
    "enabled",
];

/// The `Cron` JSON (the fields of [`CRON_FIELDS`]).
fn cron_json(cron: &CronRecord) -> Value {
    json!({
        "cron_id": cron.cron_id,
        "assistant_id": cron.assistant_id,
        "thread_id": cron.thread_id,
        "on_run_completed": cron.on_run_completed,
        "end_time": cron.end_time,
        "schedule": cron.schedule,
        "timezone": cron.timezone,
        "created_at": cron.created_at,
        "updated_at": cron.updated_at,
        "payload": cron.payload,
        "user_id": null,
        "next_run_date": cron.next_run_date,
        "metadata": cron.metadata,
        "enabled": cron.enabled,
    })
}

/// The fields of a cron body that are the cron's own, not its run's.
const CRON_OWN: &[&str] = &[
    "schedule",
    "timezone",
    "end_time",
    "enabled",
    "on_run_completed",
];

/// Run-create fields that make no sense for a schedule: a 422 that names them.
const NOT_FOR_CRONS: &[(&str, &str)] = &[
    ("after_seconds", "the schedule says when"),
    ("if_not_exists", "a thread cron's thread must exist"),
    ("on_disconnect", "nobody is connected to a cron's run"),
    ("on_completion", "use `on_run_completed`"),
    (
        "checkpoint_id",
        "each run continues from the thread's latest state",
    ),
    (
        "checkpoint",
        "each run continues from the thread's latest state",
    ),
    ("command", "a cron starts runs with `input`"),
];

/// `end_time` of a body: `Some(None)` to clear it (null), `None` when absent.
fn end_time_of(body: &Map<String, Value>) -> Result<Option<Option<Timestamp>>> {
    match body.get("end_time") {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => Timestamp::parse_iso(s).map(|t| Some(Some(t))).ok_or_else(|| {
            ServerError::Validation(format!(
                "`end_time` must be an ISO-8601 date and time (2026-12-31T23:59:00+00:00), not {s:?}"
            ))
        }),
        Some(other) => Err(ServerError::Validation(format!(
            "`end_time` must be an ISO-8601 date and time string, not {other}"
        ))),
    }
}

fn bool_field(body: &Map<String, Value>, key: &str) -> Result<Option<bool>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(ServerError::Validation(format!(
            "`{key}` must be true or false, not {other}"
        ))),
    }
}

/// `on_run_completed`, which only a cron without a thread takes.
fn on_run_completed(body: &Map<String, Value>, thread: Option<Uuid>) -> Result<Option<String>> {
    match (text_field(body, "on_run_completed")?, thread) {
        (None, _) => Ok(None),
        (Some(_), Some(_)) => Err(ServerError::Validation(
            "`on_run_completed` is for crons without a thread (each run's new thread is deleted or kept); a thread cron's runs all run on its thread".into(),
        )),
        (Some(v @ ("delete" | "keep")), None) => Ok(Some(v.to_owned())),
        (Some(other), None) => Err(ServerError::Validation(format!(
            "on_run_completed must be \"delete\" or \"keep\", not {other:?}"
        ))),
    }
}

/// The run payload of a cron: its run fields (the cron's own taken out), with the
/// thread's fate mapped to the run's `on_completion`.
fn run_payload(cron: &CronRecord) -> Map<String, Value> {
    let mut payload = cron.payload.clone();
    if let Some(fate) = &cron.on_run_completed {
        payload.insert("on_completion".into(), Value::String(fate.clone()));
    }
    payload
}

/// Checks the schedule, zone and payload of `cron`, prepares its run, and sets its next
/// run date from `now`.
async fn settle(api: &Api, cron: &mut CronRecord, now: Timestamp) -> Result<()> {
    cron.run = prepare_cron_run(api, cron.thread_id, &run_payload(cron)).await?;
    cron.assistant_id = cron.run.assistant_id;
    cron.next_run_date = cron.next_after(now)?;
    if cron.enabled && cron.next_run_date.is_none() && cron.end_time.is_none_or(|end| end > now) {
        return Err(ServerError::Validation(format!(
            "schedule {:?} never comes (a day that does not exist?); check the day and month fields",
            cron.schedule
        )));
    }
    Ok(())
}

async fn create(api: &Api, thread: Option<Uuid>, body: &Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(body)?;
    if let Some((field, why)) = NOT_FOR_CRONS
        .iter()
        .find(|(field, _)| body.get(*field).is_some_and(|v| !v.is_null()))
    {
        return Err(ServerError::Validation(format!(
            "`{field}` is not taken by a cron ({why}); leave it out"
        )));
    }
    let schedule = text_field(&body, "schedule")?
        .ok_or_else(|| ServerError::Validation("`schedule` is required".into()))?
        .to_owned();
    if let Some(thread) = thread {
        thread_or_404(api, thread).await?;
    }
    let now = Timestamp::now();
    let mut cron = CronRecord {
        cron_id: new_id(),
        assistant_id: Uuid::nil(),
        thread_id: thread,
        schedule,
        timezone: text_field(&body, "timezone")?.map(str::to_owned),
        end_time: end_time_of(&body)?.flatten(),
        payload: body
            .iter()
            .filter(|(k, v)| !CRON_OWN.contains(&k.as_str()) && !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        run: crate::backend::CronRun {
            assistant_id: Uuid::nil(),
            metadata: Map::new(),
            kwargs: Value::Null,
            multitask_strategy: Default::default(),
            thread_metadata: Map::new(),
        },
        on_run_completed: on_run_completed(&body, thread)?,
        enabled: bool_field(&body, "enabled")?.unwrap_or(true),
        next_run_date: None,
        metadata: object_field(&body, "metadata")?.unwrap_or_default(),
        created_at: now,
        updated_at: now,
    };
    settle(api, &mut cron, now).await?;
    api.backend().create_cron(&cron).await?;
    Ok(json_response(StatusCode::OK, &cron_json(&cron)))
}

async fn create_stateless(State(api): State<Api>, body: Bytes) -> Result<Response> {
    create(&api, None, &body).await
}

async fn create_on_thread(
    State(api): State<Api>,
    Path(tid): Path<String>,
    body: Bytes,
) -> Result<Response> {
    create(&api, Some(uuid_param("thread", &tid)?), &body).await
}

async fn cron_or_404(api: &Api, id: &str) -> Result<CronRecord> {
    let id = uuid_param("cron", id)?;
    api.backend()
        .get_cron(id)
        .await?
        .ok_or_else(|| ServerError::NotFound(format!("Cron {id} not found")))
}

async fn get_one(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    Ok(json_response(
        StatusCode::OK,
        &cron_json(&cron_or_404(&api, &id).await?),
    ))
}

/// `PATCH /runs/crons/{id}`: the fields given replace the cron's (run fields its
/// payload's; `end_time: null` clears the end). A new schedule, zone, end or enabling
/// sets the next run date again from now.
async fn update(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let mut cron = cron_or_404(&api, &id).await?;
    if let Some((field, why)) = NOT_FOR_CRONS
        .iter()
        .chain(&[(
            "assistant_id",
            "a cron keeps its assistant; create another cron",
        )])
        .chain(&[("multitask_strategy", "it is fixed when the cron is created")])
        .find(|(field, _)| body.get(*field).is_some_and(|v| !v.is_null()))
    {
        return Err(ServerError::Validation(format!(
            "`{field}` cannot be changed on a cron ({why}); leave it out"
        )));
    }
    let rescheduled = ["schedule", "timezone", "end_time", "enabled"]
        .iter()
        .any(|k| body.contains_key(*k));
    if let Some(schedule) = text_field(&body, "schedule")? {
        cron.schedule = schedule.to_owned();
    }
    if let Some(zone) = text_field(&body, "timezone")? {
        cron.timezone = Some(zone.to_owned());
    }
    if let Some(end) = end_time_of(&body)? {
        cron.end_time = end;
    }
    if let Some(enabled) = bool_field(&body, "enabled")? {
        cron.enabled = enabled;
    }
    if body.contains_key("on_run_completed") {
        cron.on_run_completed = on_run_completed(&body, cron.thread_id)?;
    }
    if let Some(metadata) = object_field(&body, "metadata")? {
        cron.metadata = metadata;
    }
    for (key, value) in body.iter().filter(|(k, _)| !CRON_OWN.contains(&k.as_str())) {
        if value.is_null() {
            cron.payload.remove(key);
        } else {
            cron.payload.insert(key.clone(), value.clone());
        }
    }
    let now = Timestamp::now();
    settle(&api, &mut cron, now).await?;
    cron.updated_at = now;
    if !api.backend().update_cron(&cron, rescheduled).await? {
        return Err(ServerError::NotFound(format!("Cron {id} not found")));
    }
    let stored = cron_or_404(&api, &id).await?;
    Ok(json_response(StatusCode::OK, &cron_json(&stored)))
}

async fn delete(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let cron_id = uuid_param("cron", &id)?;
    if !api.backend().delete_cron(cron_id).await? {
        return Err(ServerError::NotFound(format!("Cron {cron_id} not found")));
    }
    Ok(no_content())
}

/// The filters of a search or count body.
fn cron_query(body: &Map<String, Value>) -> Result<CronQuery> {
    // A graph name stands for its system assistant (an unknown one matches nothing).
    let assistant_id = text_field(body, "assistant_id")?
        .map(|a| Uuid::try_parse(a).unwrap_or_else(|_| system_assistant_id(a)));
    let thread_id = text_field(body, "thread_id")?
        .map(|t| uuid_param("thread", t))
        .transpose()?;
    Ok(CronQuery {
        assistant_id,
        thread_id,
        enabled: bool_field(body, "enabled")?,
        metadata: object_field(body, "metadata")?,
        limit: Some(limit_of(body.get("limit"), 10)?),
        offset: offset_of(body.get("offset"))?,
        sort_by: text_field(body, "sort_by")?.map(str::to_owned),
        ascending: ascending_of(body)?,
    })
}

async fn search(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let query = cron_query(&body)?;
    let select = select_of(&body)?;
    let crons: Vec<Value> = api
        .backend()
        .search_crons(&query)
        .await?
        .iter()
        .map(cron_json)
        .collect();
    let shown = select_fields(&crons, select.as_deref(), CRON_FIELDS)?;
    Ok(json_response(StatusCode::OK, &shown))
}

async fn count(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let query = cron_query(&body)?;
    Ok(json_response(
        StatusCode::OK,
        &api.backend().count_crons(&query).await?,
    ))
}
