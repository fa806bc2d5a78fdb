//! `/assistants`: create, update (a new version each time), delete, versions and the latest
//! version, search, count, get, graph, schemas, subgraphs.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::spec::{Endpoint, Field, NO_CONTENT, fields, opt, req};
use super::{
    Api, json_response, limit_of, no_content, object_field, offset_of, parse_body, query_bool,
    query_pairs, select_fields, select_of, text_field, uuid_param,
};
use crate::backend::{
    AssistantPatch, AssistantQuery, AssistantRecord, IfExists, ThreadQuery, VersionQuery,
};
use crate::error::{Result, ServerError};
use crate::ids::new_id;
use crate::time::Timestamp;

/// The fields of an assistant create or update body.
const ASSISTANT_BODY: &[Field] = &[
    opt("assistant_id", "string"),
    opt("graph_id", "string"),
    opt("config", "object"),
    opt("context", "object"),
    opt("metadata", "object"),
    opt("if_exists", "string"),
    opt("name", "string"),
    opt("description", "string"),
];

/// The fields of an assistant search or count body.
const ASSISTANT_QUERY: &[Field] = &[
    opt("metadata", "object"),
    opt("graph_id", "string"),
    opt("name", "string"),
    opt("limit", "integer"),
    opt("offset", "integer"),
    opt("select", "array"),
];

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::post("/assistants", "Create an assistant", create).body(ASSISTANT_BODY),
        Endpoint::post("/assistants/search", "Search assistants", search).body(ASSISTANT_QUERY),
        Endpoint::post("/assistants/count", "Count assistants", count).body(ASSISTANT_QUERY),
        Endpoint::get("/assistants/{id}", "Get an assistant", get_one),
        Endpoint::patch(
            "/assistants/{id}",
            "Update an assistant (a new version)",
            update,
        )
        .body(ASSISTANT_BODY),
        Endpoint::delete("/assistants/{id}", "Delete an assistant", delete)
            .query(fields![opt("delete_threads", "boolean")])
            .answers(NO_CONTENT),
        Endpoint::post(
            "/assistants/{id}/versions",
            "List an assistant's versions",
            versions,
        )
        .body(fields![
            opt("metadata", "object"),
            opt("limit", "integer"),
            opt("offset", "integer"),
        ]),
        Endpoint::post(
            "/assistants/{id}/latest",
            "Make a version the latest",
            set_latest,
        )
        .body(fields![req("version", "integer")]),
        Endpoint::get("/assistants/{id}/graph", "The graph's shape", graph)
            .query(fields![opt("xray", "any")]),
        Endpoint::get(
            "/assistants/{id}/schemas",
            "The graph's JSON schemas",
            schemas,
        ),
        Endpoint::get(
            "/assistants/{id}/subgraphs",
            "The graph's subgraphs by namespace",
            subgraphs,
        )
        .query(fields![opt("recurse", "boolean")]),
        Endpoint::get(
            "/assistants/{id}/subgraphs/{namespace}",
            "One subgraph of the graph",
            subgraph,
        )
        .query(fields![opt("recurse", "boolean")]),
    ]
}

/// The fields of an `Assistant`, which a search's `select` may name.
const ASSISTANT_FIELDS: &[&str] = &[
    "assistant_id",
    "graph_id",
    "config",
    "context",
    "metadata",
    "name",
    "description",
    "created_at",
    "updated_at",
    "version",
];

/// The name of an assistant created without one (the reference server's).
const DEFAULT_NAME: &str = "Untitled";

fn query_of(body: &Map<String, Value>) -> Result<AssistantQuery> {
    let text =
        |key: &str| -> Result<Option<String>> { Ok(text_field(body, key)?.map(str::to_owned)) };
    Ok(AssistantQuery {
        metadata: object_field(body, "metadata")?,
        graph_id: text("graph_id")?,
        name: text("name")?,
        limit: Some(limit_of(body.get("limit"), 10)?),
        offset: offset_of(body.get("offset"))?,
    })
}

/// The graph an assistant is to run: one this server serves, else a 404 that lists them.
fn served_graph(api: &Api, graph_id: &str) -> Result<String> {
    if api.shared.graphs.contains_key(graph_id) {
        Ok(graph_id.to_owned())
    } else {
        Err(ServerError::NotFound(format!(
            "Graph '{graph_id}' not found: this server serves {}",
            api.shared.graph_ids().join(", ")
        )))
    }
}

/// `config` and `context` of a create or update body, checked as a run's are: objects,
/// `config.configurable` an object, and not both `configurable` and `context` (400, as the
/// reference server).
fn config_and_context(body: &Map<String, Value>) -> Result<(Option<Value>, Option<Value>)> {
    let config = object_field(body, "config")?;
    let context = object_field(body, "context")?;
    if let Some(config) = &config {
        object_field(config, "configurable")?;
    }
    let configurable = config
        .as_ref()
        .and_then(|c| c.get("configurable"))
        .and_then(Value::as_object)
        .is_some_and(|c| !c.is_empty());
    if configurable && context.as_ref().is_some_and(|c| !c.is_empty()) {
        return Err(ServerError::BadRequest(
            "Cannot specify both configurable and context. Prefer setting context alone.".into(),
        ));
    }
    Ok((config.map(Value::Object), context.map(Value::Object)))
}

async fn create(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let graph_id = text_field(&body, "graph_id")?
        .ok_or_else(|| ServerError::Validation("`graph_id` is required".into()))?;
    let graph_id = served_graph(&api, graph_id)?;
    let assistant_id = match text_field(&body, "assistant_id")? {
        None => new_id(),
        Some(id) => uuid_param("assistant", id)?,
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
    let (config, context) = config_and_context(&body)?;
    let now = Timestamp::now();
    let assistant = AssistantRecord {
        assistant_id,
        graph_id,
        config: config.unwrap_or_else(|| json!({})),
        context: context.unwrap_or_else(|| json!({})),
        metadata: object_field(&body, "metadata")?.unwrap_or_default(),
        name: text_field(&body, "name")?
            .unwrap_or(DEFAULT_NAME)
            .to_owned(),
        description: text_field(&body, "description")?.map(str::to_owned),
        created_at: now,
        updated_at: now,
        version: 1,
    };
    let created = api
        .backend()
        .create_assistant(&assistant, if_exists)
        .await?;
    Ok(json_response(StatusCode::OK, &created))
}

/// The UUID of an assistant named by UUID or graph id, which must exist.
async fn assistant_id(api: &Api, id: &str) -> Result<Uuid> {
    Ok(api.assistant(id).await?.assistant_id)
}

async fn update(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let assistant_id = assistant_id(&api, &id).await?;
    let (config, context) = config_and_context(&body)?;
    let patch = AssistantPatch {
        graph_id: text_field(&body, "graph_id")?
            .map(|g| served_graph(&api, g))
            .transpose()?,
        config,
        context,
        metadata: object_field(&body, "metadata")?,
        name: text_field(&body, "name")?.map(str::to_owned),
        description: text_field(&body, "description")?.map(str::to_owned),
    };
    let updated = api
        .backend()
        .update_assistant(assistant_id, &patch)
        .await?
        .ok_or_else(|| gone(assistant_id))?;
    Ok(json_response(StatusCode::OK, &updated))
}

/// The 404 for an assistant deleted between finding it and changing it.
fn gone(assistant_id: Uuid) -> ServerError {
    ServerError::NotFound(format!("Assistant {assistant_id} not found"))
}

/// `DELETE /assistants/{id}?delete_threads=`: the assistant and its versions; with
/// `delete_threads`, also the threads whose last run used it (their runs and checkpoints).
async fn delete(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(q): RawQuery,
) -> Result<Response> {
    let delete_threads = query_bool(&query_pairs(q.as_deref()), "delete_threads")?;
    let assistant_id = assistant_id(&api, &id).await?;
    if !api.backend().delete_assistant(assistant_id).await? {
        return Err(gone(assistant_id));
    }
    if delete_threads {
        let mut metadata = Map::new();
        metadata.insert("assistant_id".into(), json!(assistant_id.to_string()));
        let query = ThreadQuery {
            metadata: Some(metadata),
            ..ThreadQuery::default()
        };
        for thread in api.backend().search_threads(&query).await? {
            if api.backend().delete_thread(thread.thread_id).await? {
                api.backend()
                    .checkpointer()
                    .delete_thread(&thread.thread_id.to_string())
                    .await?;
            }
        }
    }
    Ok(no_content())
}

async fn versions(State(api): State<Api>, Path(id): Path<String>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let assistant_id = assistant_id(&api, &id).await?;
    let query = VersionQuery {
        metadata: object_field(&body, "metadata")?,
        limit: Some(limit_of(body.get("limit"), 10)?),
        offset: offset_of(body.get("offset"))?,
    };
    let found = api
        .backend()
        .assistant_versions(assistant_id, &query)
        .await?;
    Ok(json_response(StatusCode::OK, &found))
}

async fn set_latest(
    State(api): State<Api>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let version = match body.get("version") {
        None | Some(Value::Null) => {
            return Err(ServerError::Validation(
                "`version` is required: the version to make the latest".into(),
            ));
        }
        Some(v) => v.as_i64().filter(|n| *n >= 1).ok_or_else(|| {
            ServerError::Validation(format!(
                "`version` must be a version number from 1, not {v}"
            ))
        })?,
    };
    let assistant_id = assistant_id(&api, &id).await?;
    let latest = api
        .backend()
        .set_assistant_version(assistant_id, version)
        .await?
        .ok_or_else(|| gone(assistant_id))?;
    Ok(json_response(StatusCode::OK, &latest))
}

async fn search(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let select = select_of(&body)?;
    let found = api.backend().search_assistants(&query_of(&body)?).await?;
    let found = select_fields(&found, select.as_deref(), ASSISTANT_FIELDS)?;
    Ok(json_response(StatusCode::OK, &found))
}

async fn count(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let n = api.backend().count_assistants(&query_of(&body)?).await?;
    Ok(json_response(StatusCode::OK, &n))
}

async fn get_one(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    Ok(json_response(StatusCode::OK, &api.assistant(&id).await?))
}

async fn graph(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let assistant = api.assistant(&id).await?;
    let graph = api.shared.graph(&assistant.graph_id)?;
    Ok(json_response(StatusCode::OK, &graph.graph_json()))
}

async fn schemas(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    let assistant = api.assistant(&id).await?;
    let graph = api.shared.graph(&assistant.graph_id)?;
    let mut answer = schemas_of(&graph.state_schema());
    answer["graph_id"] = json!(assistant.graph_id);
    Ok(json_response(StatusCode::OK, &answer))
}

/// The schemas the reference gives for a graph or subgraph whose state schema is `state`:
/// input, output and state are the state's (a graphkit graph takes and gives its state);
/// graphkit has no config or context schema.
fn schemas_of(state: &Value) -> Value {
    json!({
        "input_schema": state,
        "output_schema": state,
        "state_schema": state,
        "config_schema": null,
        "context_schema": null,
    })
}

/// `GET /assistants/{id}/subgraphs[/{namespace}]?recurse=`: the graph's subgraphs by
/// namespace (`inner`; with `recurse`, also `inner|deeper`), each with its schemas, as the
/// reference answers. With a namespace, only that subgraph (at any depth); an unknown one
/// gives `{}`, as the reference. A subgraph whose state schema is unknown (added with
/// `add_subgraph_mapped` without `CompiledGraph::with_state_schema`) has null schemas.
async fn subgraphs_of(
    api: &Api,
    id: &str,
    namespace: Option<&str>,
    query: Option<&str>,
) -> Result<Response> {
    let recurse = query_bool(&query_pairs(query), "recurse")?;
    let assistant = api.assistant(id).await?;
    let graph = api.shared.graph(&assistant.graph_id)?;
    let answer: Map<String, Value> = graph
        .subgraphs(recurse || namespace.is_some())
        .into_iter()
        .filter(|sub| namespace.is_none_or(|ns| sub.namespace == ns))
        .map(|sub| {
            let schemas = schemas_of(&sub.state_schema.unwrap_or(Value::Null));
            (sub.namespace, schemas)
        })
        .collect();
    Ok(json_response(StatusCode::OK, &answer))
}

async fn subgraphs(
    State(api): State<Api>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    subgraphs_of(&api, &id, None, query.as_deref()).await
}

async fn subgraph(
    State(api): State<Api>,
    Path((id, namespace)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    subgraphs_of(&api, &id, Some(&namespace), query.as_deref()).await
}
