//! `/assistants`: the read side (search, count, get, graph, schemas, subgraphs).

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::{Api, json_response, limit_of, offset_of, parse_body, text_field};
use crate::backend::AssistantQuery;
use crate::error::{Result, ServerError};

pub(super) fn routes() -> Router<Api> {
    Router::new()
        .route("/assistants/search", post(search))
        .route("/assistants/count", post(count))
        .route("/assistants/{id}", get(get_one))
        .route("/assistants/{id}/graph", get(graph))
        .route("/assistants/{id}/schemas", get(schemas))
        .route("/assistants/{id}/subgraphs", get(subgraphs))
}

fn query_of(body: &Map<String, Value>) -> Result<AssistantQuery> {
    let text =
        |key: &str| -> Result<Option<String>> { Ok(text_field(body, key)?.map(str::to_owned)) };
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(m.clone()),
        Some(_) => {
            return Err(ServerError::Validation(
                "`metadata` must be an object".into(),
            ));
        }
    };
    Ok(AssistantQuery {
        metadata,
        graph_id: text("graph_id")?,
        name: text("name")?,
        limit: Some(limit_of(body.get("limit"), 10)?),
        offset: offset_of(body.get("offset"))?,
    })
}

async fn search(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let found = api.backend().search_assistants(&query_of(&body)?).await?;
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
    let state = graph.state_schema();
    Ok(json_response(
        StatusCode::OK,
        &json!({
            "graph_id": assistant.graph_id,
            "input_schema": state,
            "output_schema": state,
            "state_schema": state,
            "config_schema": null,
            "context_schema": null,
        }),
    ))
}

async fn subgraphs(State(api): State<Api>, Path(id): Path<String>) -> Result<Response> {
    api.assistant(&id).await?;
    // Subgraph introspection is not served: no subgraphs are listed.
    Ok(json_response(StatusCode::OK, &json!({})))
}
