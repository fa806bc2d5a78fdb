//! `/store`: put, get, delete, search and list namespaces.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use graphkit::store::{Item, SearchQuery};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::spec::{Endpoint, NO_CONTENT, fields, opt, req};
use super::{
    Api, count_field, json_response, limit_of, no_content, offset_of, parse_body, query_bool,
    query_pairs, query_value, refuse_unsupported, ttl_minutes,
};
use crate::error::{Result, ServerError};
use crate::time::Timestamp;

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::put("/store/items", "Put an item", put_item)
            .body(fields![
                req("namespace", "array"),
                req("key", "string"),
                req("value", "object"),
                opt("ttl", "number"),
                opt("index", "any"),
            ])
            .answers(NO_CONTENT),
        Endpoint::get("/store/items", "Get an item (null when absent)", get_item).query(fields![
            req("namespace", "string"),
            req("key", "string"),
            opt("refresh_ttl", "boolean"),
        ]),
        Endpoint::delete("/store/items", "Delete an item", delete_item)
            .body(fields![req("namespace", "array"), req("key", "string")])
            .answers(NO_CONTENT),
        Endpoint::post("/store/items/search", "Search items", search).body(fields![
            opt("namespace_prefix", "array"),
            opt("filter", "object"),
            opt("limit", "integer"),
            opt("offset", "integer"),
            opt("refresh_ttl", "boolean"),
        ]),
        Endpoint::post("/store/namespaces", "List namespaces", namespaces).body(fields![
            opt("prefix", "array"),
            opt("suffix", "array"),
            opt("max_depth", "integer"),
            opt("limit", "integer"),
            opt("offset", "integer"),
        ]),
    ]
}

fn item_json(item: Item) -> Value {
    json!({
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": Timestamp::from_millis(item.created_at_ms),
        "updated_at": Timestamp::from_millis(item.updated_at_ms),
    })
}

/// Whether `item` has not expired at `now` (an expired item is never returned, even
/// before the workers' sweep deletes it); with `refresh`, a live item's time to live
/// starts again.
async fn live(api: &Api, item: &Item, now: Timestamp, refresh: bool) -> Result<bool> {
    let namespace: Vec<&str> = item.namespace.iter().map(String::as_str).collect();
    let expiry = api
        .backend()
        .item_expiry(&namespace, &item.key, now, refresh)
        .await?;
    Ok(expiry.is_none_or(|at| at > now))
}

fn check_namespace(namespace: &[String]) -> Result<()> {
    if namespace.is_empty() {
        return Err(ServerError::Validation(
            "an item's namespace must have at least one label".into(),
        ));
    }
    if let Some(label) = namespace.iter().find(|l| l.is_empty() || l.contains('.')) {
        return Err(ServerError::Validation(format!(
            "namespace labels must be non-empty and contain no '.', got {label:?}"
        )));
    }
    Ok(())
}

#[derive(Deserialize)]
struct PutItem {
    namespace: Vec<String>,
    key: String,
    value: Value,
    #[serde(default)]
    ttl: Option<Value>,
    #[serde(default)]
    index: Option<Value>,
}

async fn put_item(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: PutItem = parse_body(&body)?;
    // `false` (do not index) is what every item here is; fields to index are not.
    if !matches!(body.index, None | Some(Value::Null | Value::Bool(false))) {
        refuse_unsupported(
            "index",
            body.index.as_ref(),
            "items are not indexed for semantic search; send `index: false` or leave it out",
        )?;
    }
    let ttl = ttl_minutes("ttl", body.ttl.as_ref())?;
    check_namespace(&body.namespace)?;
    if !body.value.is_object() {
        return Err(ServerError::Validation(
            "the item's value must be a JSON object".into(),
        ));
    }
    let namespace: Vec<&str> = body.namespace.iter().map(String::as_str).collect();
    api.backend()
        .store()
        .put(&namespace, &body.key, body.value)
        .await?;
    // A put without a ttl makes the item live until deleted, as a fresh item would.
    api.backend()
        .set_item_ttl(&namespace, &body.key, ttl)
        .await?;
    Ok(no_content())
}

async fn get_item(State(api): State<Api>, RawQuery(query): RawQuery) -> Result<Response> {
    let pairs = query_pairs(query.as_deref());
    let key = query_value(&pairs, "key")
        .ok_or_else(|| ServerError::Validation("the `key` query parameter is required".into()))?;
    let namespace: Vec<&str> = query_value(&pairs, "namespace")
        .map(|n| n.split('.').filter(|l| !l.is_empty()).collect())
        .unwrap_or_default();
    let refresh = query_bool(&pairs, "refresh_ttl")?;
    let item = api.backend().store().get(&namespace, key).await?;
    let item = match item {
        Some(item) if live(&api, &item, Timestamp::now(), refresh).await? => Some(item),
        _ => None,
    };
    Ok(json_response(StatusCode::OK, &item.map(item_json)))
}

#[derive(Deserialize)]
struct DeleteItem {
    #[serde(default)]
    namespace: Vec<String>,
    key: String,
}

async fn delete_item(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: DeleteItem = parse_body(&body)?;
    let namespace: Vec<&str> = body.namespace.iter().map(String::as_str).collect();
    api.backend().store().delete(&namespace, &body.key).await?;
    api.backend()
        .set_item_ttl(&namespace, &body.key, None)
        .await?;
    Ok(no_content())
}

async fn search(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    if body.get("query").is_some_and(|q| !q.is_null()) {
        return Err(ServerError::Validation(
            "semantic search (`query`) is not supported by this server; search by namespace prefix and `filter`".into(),
        ));
    }
    let prefix: Vec<String> = match body.get("namespace_prefix") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
            ServerError::Validation("`namespace_prefix` must be a list of strings".into())
        })?,
    };
    let filter = match body.get("filter") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(f)) => f.clone(),
        Some(_) => return Err(ServerError::Validation("`filter` must be an object".into())),
    };
    let query = SearchQuery {
        filter,
        limit: Some(limit_of(body.get("limit"), 10)?),
        offset: offset_of(body.get("offset"))?,
    };
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let refresh = match body.get("refresh_ttl") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(ServerError::Validation(format!(
                "`refresh_ttl` must be true or false, not {other}"
            )));
        }
    };
    let now = Timestamp::now();
    let mut items = Vec::new();
    for item in api.backend().store().search(&prefix, &query).await? {
        if live(&api, &item, now, refresh).await? {
            items.push(item_json(item));
        }
    }
    Ok(json_response(StatusCode::OK, &json!({ "items": items })))
}

async fn namespaces(State(api): State<Api>, body: Bytes) -> Result<Response> {
    let body: Map<String, Value> = parse_body(&body)?;
    let list = |key: &str| -> Result<Vec<String>> {
        match body.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| ServerError::Validation(format!("`{key}` must be a list of strings"))),
        }
    };
    let (prefix, suffix) = (list("prefix")?, list("suffix")?);
    let max_depth = count_field("max_depth", body.get("max_depth"))?;
    let prefix_refs: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let found = api
        .backend()
        .store()
        .list_namespaces(&prefix_refs, max_depth)
        .await?;
    let namespaces: Vec<Vec<String>> = found
        .into_iter()
        .filter(|ns| ns.ends_with(&suffix))
        .skip(offset_of(body.get("offset"))?)
        .take(limit_of(body.get("limit"), 100)?)
        .collect();
    Ok(json_response(
        StatusCode::OK,
        &json!({ "namespaces": namespaces }),
    ))
}
