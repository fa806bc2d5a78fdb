//! A request fuzzer: random and mutated requests against a running server, asserting that
//! none gets a 5xx, every one gets an answer, and the server still answers afterwards.
//!
//! Reproducible and bounded by count, not time: a fixed seed and [`CASES`] cases (a few
//! seconds in a debug build). The routes are read from the server's OpenAPI document, which
//! is drawn from the endpoint table the router is built from, so a new route is fuzzed
//! without a change here (with its body's fields and query keys). The requests: methods,
//! paths of those routes with ids
//! that exist, do not, are not UUIDs or hold `%00`; query strings of the API's keys with odd
//! values; bodies that are empty, invalid UTF-8, cut short, nested hundreds deep, or JSON
//! objects of the API's field names with values of every type (huge numbers, NULs, nesting),
//! also mixed into a valid run request. They go over one keep-alive connection (a new one
//! after an answer that closes it), hand-written, so nothing is cleaned up on the way.
//!
//! Left out: the streams (any endpoint answering `text/event-stream`), `.../wait` and
//! `.../join`, whose answers last as long as a run (an accepted delay of a day would hold the
//! test a day); the run bodies among them are parsed by the same code as
//! `POST /threads/{id}/runs` and `/runs`, which are fuzzed.

use std::sync::Mutex;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Number, Value, json};

use crate::backend_contract::Fixture;
use crate::common::{RawConnection, TestServer};
use crate::http_contract::serve;

/// How many requests one run of the fuzzer sends.
const CASES: u32 = 1200;

/// The seed: the same requests on every run (change it to explore others).
const SEED: [u8; 32] = *b"graphkit-server request fuzzer 1";

/// A route: method, path (`{t}` a thread id, `{r}` a run id, `{c}` a checkpoint id, `{a}`
/// an assistant id, `{x}` any other id), a valid body to mutate, and the body fields its
/// handler reads (most mutations go there).
type Route = (&'static str, &'static str, Value, &'static [&'static str]);

/// Valid bodies for the routes whose bodies a schema alone does not make valid (keyed by
/// method and the OpenAPI path). Routes without one get a body of their schema's required
/// fields. Each must name a route of the document (checked), so none goes stale unseen.
fn seed_bodies() -> Vec<(&'static str, &'static str, Value)> {
    let run = json!({
        "assistant_id": "agent",
        "input": {"messages": [{"role": "user", "content": "hi"}]},
    });
    vec![
        (
            "POST",
            "/assistants",
            json!({"graph_id": "agent", "name": "fuzzed", "config": {"configurable": {"k": 1}}}),
        ),
        (
            "POST",
            "/assistants/search",
            json!({"graph_id": "agent", "limit": 5}),
        ),
        ("PATCH", "/assistants/{id}", json!({"metadata": {"k": 2}})),
        ("POST", "/assistants/{id}/versions", json!({"limit": 2})),
        ("POST", "/assistants/{id}/latest", json!({"version": 1})),
        (
            "POST",
            "/threads",
            json!({"metadata": {"k": "v"}, "if_exists": "do_nothing"}),
        ),
        (
            "POST",
            "/threads/search",
            json!({"limit": 10, "sort_by": "created_at"}),
        ),
        ("POST", "/threads/count", json!({"status": "idle"})),
        ("PATCH", "/threads/{id}", json!({"metadata": {"k": 1}})),
        (
            "POST",
            "/threads/{id}/state",
            json!({"values": {"messages": [{"role": "user", "content": "s"}]}}),
        ),
        (
            "POST",
            "/threads/{id}/state/checkpoint",
            json!({"checkpoint": {"checkpoint_id": "x"}}),
        ),
        ("POST", "/threads/{id}/history", json!({"limit": 5})),
        ("POST", "/threads/{tid}/runs", run.clone()),
        ("POST", "/runs/batch", json!([run.clone()])),
        ("POST", "/runs", run),
        (
            "POST",
            "/threads/prune",
            json!({"thread_ids": [], "strategy": "delete"}),
        ),
        ("POST", "/runs/cancel", json!({"status": "pending"})),
        (
            "PUT",
            "/store/items",
            json!({"namespace": ["n"], "key": "k", "value": {"a": 1}}),
        ),
        (
            "DELETE",
            "/store/items",
            json!({"namespace": ["n"], "key": "k"}),
        ),
        (
            "POST",
            "/store/items/search",
            json!({"namespace_prefix": ["n"], "limit": 3}),
        ),
        ("POST", "/store/namespaces", json!({"max_depth": 2})),
    ]
}

/// Whether an endpoint is left out: its answer lasts as long as a run (a stream, a wait, a
/// join; an accepted delay of a day would hold the test a day).
fn lasts_as_long_as_a_run(path: &str, operation: &Value) -> bool {
    let streams = operation["responses"]
        .as_object()
        .into_iter()
        .flat_map(|answers| answers.values())
        .any(|answer| answer["content"].get("text/event-stream").is_some());
    streams || path.ends_with("/wait") || path.ends_with("/join")
}

/// `s` for the rest of the test run (the strategies take `'static` data).
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// The fuzzer's form of an OpenAPI path: a thread's id `{t}`, a run's `{r}`, a
/// checkpoint's `{c}`, an assistant's `{a}`, any other parameter `{x}`.
fn placeholders(path: &str) -> String {
    let under_assistants = path.starts_with("/assistants/");
    path.split('/')
        .map(|part| match part {
            "{tid}" | "{thread_id}" => "{t}",
            "{id}" if under_assistants => "{a}",
            "{id}" => "{t}",
            "{rid}" | "{run_id}" => "{r}",
            "{checkpoint_id}" => "{c}",
            other if other.starts_with('{') => "{x}",
            other => other,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A value of a schema's `type`, for a required field.
fn example_of(schema: &Value) -> Value {
    match schema["type"].as_str() {
        Some("string") => json!("x"),
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([]),
        _ => json!({}),
    }
}

/// The route table, read from the server's OpenAPI document (drawn from the same endpoint
/// table as its router), so every route served is fuzzed: its methods, paths, body fields
/// and query keys. Returns the routes and the query keys.
fn routes_of(document: &Value) -> (Vec<Route>, Vec<&'static str>) {
    let seeds = seed_bodies();
    let paths = document["paths"].as_object().expect("the document's paths");
    for (method, path, _) in &seeds {
        let known = paths
            .get(*path)
            .is_some_and(|ops| ops.get(method.to_lowercase()).is_some());
        assert!(
            known,
            "the seed body of {method} {path} names no endpoint of the document"
        );
    }
    let mut routes = Vec::new();
    let mut query_keys: Vec<&'static str> = QUERY_KEYS.to_vec();
    for (path, operations) in paths {
        for (method, operation) in operations.as_object().expect("the path's operations") {
            let method = method.to_uppercase();
            for parameter in operation["parameters"].as_array().into_iter().flatten() {
                if parameter["in"] == "query"
                    && let Some(name) = parameter["name"].as_str()
                    && !query_keys.contains(&name)
                {
                    query_keys.push(leak(name.to_owned()));
                }
            }
            if lasts_as_long_as_a_run(path, operation) {
                continue;
            }
            let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
            let object = if schema["type"] == "array" {
                &schema["items"]
            } else {
                schema
            };
            let fields: Vec<&'static str> = object["properties"]
                .as_object()
                .into_iter()
                .flat_map(|properties| properties.keys())
                .map(|name| leak(name.clone()))
                .collect();
            let body = match seeds.iter().find(|(m, p, _)| *m == method && p == path) {
                Some((_, _, body)) => body.clone(),
                None if schema.is_null() => Value::Null,
                None => {
                    let required: Map<String, Value> = object["required"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(|name| (name.to_owned(), example_of(&object["properties"][name])))
                        .collect();
                    if schema["type"] == "array" {
                        json!([required])
                    } else {
                        Value::Object(required)
                    }
                }
            };
            routes.push((
                leak(method),
                leak(placeholders(path)),
                body,
                &*Box::leak(fields.into_boxed_slice()),
            ));
        }
    }
    (routes, query_keys)
}

/// Field names of the API's bodies (the routes' own, `own`, and a few more), and of the demo
/// graph's state (without `sleep`, which would make a run last as long as the fuzzer asks),
/// and two odd ones.
fn fields_with(own: &[Route]) -> Vec<&'static str> {
    let mut all: Vec<&'static str> = own
        .iter()
        .flat_map(|route| route.3.iter().copied())
        .chain([
            "resume",
            "update",
            "goto",
            "configurable",
            "thread_id",
            "run_ids",
            "if_exists",
            "supersteps",
            "updates",
            "as_node",
            "messages",
            "role",
            "content",
            "ask_human",
            "graph_id",
            "name",
            "recursion_limit",
            "before",
            "\u{0}",
            "",
        ])
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// The field names of [`fields_with`] over the document's routes, set once by the test
/// before the strategies run.
static FIELDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

fn fields() -> Vec<&'static str> {
    FIELDS.get().cloned().unwrap_or_default()
}

const QUERY_KEYS: &[&str] = &[
    "limit",
    "offset",
    "status",
    "action",
    "wait",
    "key",
    "namespace",
    "before",
    "stream_mode",
    "cancel_on_disconnect",
    "select",
    "delete_threads",
];

const QUERY_VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "1e30",
    "2.5",
    "x",
    "%00",
    "%FF%FE",
    "18446744073709551616",
    "18446744073709551615",
    "true",
    "rollback",
    "interrupt",
    "pending",
    "all",
    "a.b",
    "..",
    "%5B%22values%22%5D",
];

/// Ids in paths: real, unknown, malformed.
fn id(thread: &str) -> impl Strategy<Value = String> + use<> {
    prop_oneof![
        8 => Just(thread.to_owned()),
        1 => Just("agent".to_owned()),
        1 => Just("00000000-0000-0000-0000-000000000000".to_owned()),
        1 => Just("not-a-uuid".to_owned()),
        1 => Just("%00".to_owned()),
        1 => Just("%FF%FE".to_owned()),
        1 => Just("..".to_owned()),
        1 => Just("a".repeat(300)),
        1 => "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ]
}

/// A route's path with ids filled in and a query string of the API's keys.
fn path(template: &str, t: &str, r: &str, c: &str, query: &[(&str, &str)]) -> String {
    let mut path = template
        .replace("{t}", t)
        .replace("{r}", r)
        .replace("{c}", c)
        .replace("{x}", c)
        .replace("{a}", if t.len() == 36 { "agent" } else { t });
    for (i, (k, v)) in query.iter().enumerate() {
        path.push(if i == 0 { '?' } else { '&' });
        path.push_str(&format!("{k}={v}"));
    }
    path
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (0u64..5).prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        Just(json!(1e30)),
        Just(json!(-1e30)),
        Just(json!(f64::MAX)),
        Just(json!(2.5)),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        proptest::sample::select(vec![
            "agent",
            "",
            "\u{0}",
            "x\u{0}y",
            "values",
            "updates",
            "*",
            "asc",
            "desc",
            "thread_id",
            "reject",
            "interrupt",
            "rollback",
            "enqueue",
            "create",
            "cancel",
            "../..",
            "/etc/passwd",
            "00000000-0000-0000-0000-000000000000",
            "é",
            "user",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        "\\PC{0,20}".prop_map(Value::String),
        // NUL inside a string or a key: PostgreSQL cannot store it.
        Just(json!("a\u{0}")),
        Just(json!({"k\u{0}": 1})),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            // Mostly a plain value: the handlers check types before shapes.
            4 => leaf(),
            1 => proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            1 => proptest::collection::vec((proptest::sample::select(fields()), inner), 0..4).prop_map(
                |pairs| {
                    Value::Object(
                        pairs
                            .into_iter()
                            .map(|(k, v)| (k.to_owned(), v))
                            .collect::<Map<String, Value>>(),
                    )
                }
            ),
        ]
    })
}

/// A route's valid body with up to three mutations: a field (of the API's, or one the body
/// has) set to a random value at the top or inside `input`, a field removed, or a NUL
/// character put into one of its strings or keys.
fn mutated(base: Value, own: &'static [&'static str]) -> impl Strategy<Value = Vec<u8>> {
    let field = if own.is_empty() {
        proptest::sample::select(fields()).boxed()
    } else {
        prop_oneof![3 => proptest::sample::select(own), 1 => proptest::sample::select(fields())]
            .boxed()
    };
    proptest::collection::vec((0..6u8, field, value(), any::<prop::sample::Index>()), 0..4)
        .prop_map(move |mutations| {
            let mut body = base.clone();
            if body.is_null() && !mutations.is_empty() {
                body = json!({});
            }
            for (how, field, v, at) in mutations {
                if how == 2 {
                    let strings = count_strings(&body);
                    if strings > 0 {
                        poison_string(&mut body, &mut at.index(strings));
                    }
                    continue;
                }
                let own: Vec<String> = body
                    .as_object()
                    .map(|m| m.keys().cloned().collect())
                    .unwrap_or_default();
                match (how, body.as_object_mut()) {
                    (0, Some(map)) => {
                        map.remove(field);
                    }
                    (1, Some(map)) => match map.get_mut("input").and_then(Value::as_object_mut) {
                        Some(input) => {
                            input.insert(field.to_owned(), v);
                        }
                        None => {
                            map.insert(field.to_owned(), v);
                        }
                    },
                    (3, Some(map)) if !own.is_empty() => {
                        map.insert(own[at.index(own.len())].clone(), v);
                    }
                    (_, Some(map)) => {
                        map.insert(field.to_owned(), v);
                    }
                    (_, None) => body = v,
                }
            }
            if body.is_null() {
                Vec::new()
            } else {
                serde_json::to_vec(&body).unwrap_or_default()
            }
        })
}

/// How many strings and object keys `value` holds.
fn count_strings(value: &Value) -> usize {
    match value {
        Value::String(_) => 1,
        Value::Array(items) => items.iter().map(count_strings).sum(),
        Value::Object(map) => map.iter().map(|(_, v)| 1 + count_strings(v)).sum(),
        _ => 0,
    }
}

/// Appends a NUL character to the `n`th string or key of `value` (counted as
/// [`count_strings`] does); `n` counts down as strings are passed.
fn poison_string(value: &mut Value, n: &mut usize) -> bool {
    match value {
        Value::String(s) => {
            if *n == 0 {
                s.push('\u{0}');
                return true;
            }
            *n -= 1;
            false
        }
        Value::Array(items) => items.iter_mut().any(|item| poison_string(item, n)),
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if *n == 0 {
                    if let Some(v) = map.remove(&key) {
                        map.insert(format!("{key}\u{0}"), v);
                    }
                    return true;
                }
                *n -= 1;
                if map.get_mut(&key).is_some_and(|v| poison_string(v, n)) {
                    return true;
                }
            }
            false
        }
        _ => false,
    }
}

/// A body that is not JSON of any shape: nested hundreds deep, cut short, invalid UTF-8.
fn broken_body() -> impl Strategy<Value = Vec<u8>> {
    let deep = (1usize..400).prop_map(|depth| {
        let mut text = "{\"input\":".repeat(depth);
        text.push('1');
        text.push_str(&"}".repeat(depth));
        text.into_bytes()
    });
    let cut = (value(), any::<prop::sample::Index>()).prop_map(|(v, at)| {
        let bytes = serde_json::to_vec(&v).unwrap_or_default();
        let end = at.index(bytes.len() + 1);
        bytes[..end].to_vec()
    });
    let invalid_utf8 = proptest::collection::vec(any::<u8>(), 0..64).prop_map(|mut bytes| {
        bytes.extend_from_slice(b"{\"key\": \"\xff\xfe\"}");
        bytes
    });
    prop_oneof![deep, cut, invalid_utf8]
}

fn request(
    thread: &str,
    routes: Vec<Route>,
    query_keys: Vec<&'static str>,
) -> impl Strategy<Value = (&'static str, String, Vec<u8>)> + use<> {
    let methods = vec!["GET", "POST", "PUT", "PATCH", "DELETE"];
    // Run creation reads the most fields: it gets more of the cases.
    let weighted: Vec<Route> = routes
        .into_iter()
        .flat_map(|route| {
            let copies = if route.3.len() > 10 { 6 } else { 1 };
            std::iter::repeat_n(route, copies)
        })
        .collect();
    (
        proptest::sample::select(weighted),
        (0..10u8, proptest::sample::select(methods)),
        (id(thread), id(thread), id(thread)),
        proptest::collection::vec(
            (
                proptest::sample::select(query_keys),
                proptest::sample::select(QUERY_VALUES),
            ),
            0..2,
        ),
        0..10u8,
    )
        .prop_flat_map(
            |((method, template, base, own), (pick, other), (t, r, c), query, broken)| {
                // Mostly the route's own method, so that the request reaches its handler.
                let method = if pick == 0 { other } else { method };
                let path = path(template, &t, &r, &c, &query);
                let body = if broken == 0 {
                    broken_body().boxed()
                } else {
                    mutated(base, own).boxed()
                };
                (Just(method), Just(path), body)
            },
        )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_gets_a_server_error_on_sqlite() {
    serve(Fixture::sqlite().await, fuzz).await;
}

/// PostgreSQL refuses what SQLite takes (NUL characters, numbers beyond its types), so the
/// fuzzer runs against it too.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_gets_a_server_error_on_postgres() {
    if let Some(fixture) = Fixture::postgres("no_request_gets_a_server_error_on_postgres").await {
        serve(fixture, fuzz).await;
    }
}

async fn fuzz(s: &TestServer) {
    let document = s.get_json("/openapi.json", reqwest::StatusCode::OK).await;
    let (routes, query_keys) = routes_of(&document);
    assert!(
        routes
            .iter()
            .any(|route| route.0 == "POST" && route.1 == "/threads/{t}/runs"),
        "run creation is among the fuzzed routes"
    );
    eprintln!("fuzzing {} routes of the OpenAPI document", routes.len());
    // The same document on every backend: the first test to get here sets the names.
    let _ = FIELDS.set(fields_with(&routes));
    let thread = s.thread().await;
    let addr = s
        .server
        .as_ref()
        .and_then(|server| server.local_addr())
        .expect("bound");
    let runtime = tokio::runtime::Handle::current();
    let fuzzed = tokio::task::spawn_blocking(move || {
        let strategy = request(&thread, routes, query_keys);
        let config = Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
        let connection: Mutex<Option<RawConnection>> = Mutex::new(None);
        let served = std::sync::atomic::AtomicU32::new(0);
        let outcome = runner.run(&strategy, |(method, path, body)| {
            // Paths may delete the thread the others name while its run is in flight, and
            // create it again under the same id: the old run's writes are fenced off (its
            // lease token went with its row), so the new thread never sees them.
            let mut head = format!(
                "{method} {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            head.extend_from_slice(&body);
            let mut held = connection.lock().map_err(|_| TestCaseError::fail("poisoned"))?;
            let answer = runtime.block_on(async {
                let mut open = match held.take() {
                    Some(open) => open,
                    None => RawConnection::open(addr).await,
                };
                open.send(&head).await.ok()?;
                let answer = tokio::time::timeout(Duration::from_secs(120), open.response())
                    .await
                    .ok()??;
                if !answer.closes() {
                    *held = Some(open);
                }
                Some(answer)
            });
            let Some(answer) = answer else {
                return Err(TestCaseError::fail(format!(
                    "no answer to {method} {path} with {:?}",
                    String::from_utf8_lossy(&body)
                )));
            };
            if answer.status < 300 {
                served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            prop_assert!(
                answer.status < 500,
                "{method} {path} with {:?} got {}: {}",
                String::from_utf8_lossy(&body),
                answer.status,
                String::from_utf8_lossy(&answer.body)
            );
            Ok(())
        });
        outcome.map(|()| served.into_inner())
    })
    .await
    .expect("the fuzzer thread");
    let served = match fuzzed {
        Ok(served) => served,
        Err(failure) => panic!("{failure}"),
    };
    // The cases reach the handlers, not only the router's refusals.
    assert!(
        served > CASES / 10,
        "only {served} of {CASES} requests were served"
    );
    // The server still answers.
    let ok = s.get_json("/ok", reqwest::StatusCode::OK).await;
    assert_eq!(ok, json!({"ok": true}));
}
