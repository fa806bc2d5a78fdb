//! A request fuzzer: random and mutated requests against a running server, asserting that
//! none gets a 5xx, every one gets an answer, and the server still answers afterwards.
//!
//! Reproducible and bounded by count, not time: a fixed seed and [`CASES`] cases (a few
//! seconds in a debug build). The requests: methods, paths from the route table with ids
//! that exist, do not, are not UUIDs or hold `%00`; query strings of the API's keys with odd
//! values; bodies that are empty, invalid UTF-8, cut short, nested hundreds deep, or JSON
//! objects of the API's field names with values of every type (huge numbers, NULs, nesting),
//! also mixed into a valid run request. They go over one keep-alive connection (a new one
//! after an answer that closes it), hand-written, so nothing is cleaned up on the way.
//!
//! Left out: `runs/wait`, `runs/stream` and the join routes, whose answers last as long as a
//! run (an accepted delay of a day would hold the test a day); their bodies are parsed by
//! the same code as `POST /threads/{id}/runs` and `/runs`, which are fuzzed.

use std::sync::Mutex;
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{Map, Number, Value, json};

use crate::common::{RawConnection, TestServer};

/// How many requests one run of the fuzzer sends.
const CASES: u32 = 600;

/// The seed: the same requests on every run (change it to explore others).
const SEED: [u8; 32] = *b"graphkit-server request fuzzer 1";

/// The routes, `{t}` a thread id, `{r}` a run id, `{c}` a checkpoint id, `{a}` an
/// assistant id.
const ROUTES: &[&str] = &[
    "/ok",
    "/info",
    "/assistants/search",
    "/assistants/count",
    "/assistants/{a}",
    "/assistants/{a}/graph",
    "/assistants/{a}/schemas",
    "/assistants/{a}/subgraphs",
    "/threads",
    "/threads/search",
    "/threads/count",
    "/threads/{t}",
    "/threads/{t}/state",
    "/threads/{t}/state/checkpoint",
    "/threads/{t}/state/{c}",
    "/threads/{t}/history",
    "/threads/{t}/copy",
    "/threads/{t}/runs",
    "/threads/{t}/runs/{r}",
    "/threads/{t}/runs/{r}/cancel",
    "/runs",
    "/runs/cancel",
    "/store/items",
    "/store/items/search",
    "/store/namespaces",
];

/// Field names of the API's bodies, and of the demo graph's state (without `sleep`, which
/// would make a run last as long as the fuzzer asks).
const FIELDS: &[&str] = &[
    "assistant_id",
    "input",
    "command",
    "resume",
    "update",
    "goto",
    "stream_mode",
    "stream_subgraphs",
    "stream_resumable",
    "interrupt_before",
    "interrupt_after",
    "config",
    "configurable",
    "context",
    "metadata",
    "checkpoint_id",
    "checkpoint",
    "multitask_strategy",
    "if_not_exists",
    "on_disconnect",
    "on_completion",
    "after_seconds",
    "durability",
    "checkpoint_during",
    "webhook",
    "limit",
    "offset",
    "sort_by",
    "sort_order",
    "ids",
    "status",
    "values",
    "namespace",
    "key",
    "value",
    "namespace_prefix",
    "filter",
    "max_depth",
    "prefix",
    "suffix",
    "before",
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
    "ttl",
    "query",
    "graph_id",
    "name",
    "recursion_limit",
    "thread_ts",
    "\u{0}",
    "",
];

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
        Just(thread.to_owned()),
        Just("agent".to_owned()),
        Just("00000000-0000-0000-0000-000000000000".to_owned()),
        Just("not-a-uuid".to_owned()),
        Just("%00".to_owned()),
        Just("%FF%FE".to_owned()),
        Just("..".to_owned()),
        Just("a".repeat(300)),
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    ]
}

fn path(thread: &str) -> impl Strategy<Value = String> + use<> {
    let templated = (
        proptest::sample::select(ROUTES),
        id(thread),
        id(thread),
        id(thread),
        proptest::collection::vec(
            (
                proptest::sample::select(QUERY_KEYS),
                proptest::sample::select(QUERY_VALUES),
            ),
            0..3,
        ),
    )
        .prop_map(|(route, t, r, c, query)| {
            let mut path = route
                .replace("{t}", &t)
                .replace("{r}", &r)
                .replace("{c}", &c)
                .replace("{a}", &t);
            for (i, (k, v)) in query.iter().enumerate() {
                path.push(if i == 0 { '?' } else { '&' });
                path.push_str(&format!("{k}={v}"));
            }
            path
        });
    prop_oneof![9 => templated, 1 => "/[a-z%0-9/._-]{0,40}"]
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
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(FIELDS), inner), 0..4).prop_map(
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

fn body() -> impl Strategy<Value = Vec<u8>> {
    let object = proptest::collection::vec((proptest::sample::select(FIELDS), value()), 0..5)
        .prop_map(|pairs| {
            let map: Map<String, Value> =
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
        });
    let run_mutated = (proptest::sample::select(FIELDS), value()).prop_map(|(field, v)| {
        let mut run = json!({
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": "hi"}]},
        });
        run[field] = v;
        serde_json::to_vec(&run).unwrap_or_default()
    });
    let deep = (1usize..400).prop_map(|depth| {
        let mut text = "[".repeat(depth);
        text.push_str(&"]".repeat(depth));
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
    prop_oneof![
        1 => Just(Vec::new()),
        4 => object,
        4 => run_mutated,
        1 => deep,
        1 => cut,
        1 => invalid_utf8,
    ]
}

fn request(thread: &str) -> impl Strategy<Value = (&'static str, String, Vec<u8>)> + use<> {
    (
        proptest::sample::select(vec!["GET", "POST", "PUT", "PATCH", "DELETE"]),
        path(thread),
        body(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_gets_a_server_error() {
    let s = TestServer::start().await;
    let thread = s.thread().await;
    let addr = s
        .server
        .as_ref()
        .and_then(|server| server.local_addr())
        .expect("bound");
    let runtime = tokio::runtime::Handle::current();
    let fuzzed = tokio::task::spawn_blocking(move || {
        let strategy = request(&thread);
        let config = Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
        let connection: Mutex<Option<RawConnection>> = Mutex::new(None);
        runner.run(&strategy, |(method, path, body)| {
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
            prop_assert!(
                answer.status < 500,
                "{method} {path} with {:?} got {}: {}",
                String::from_utf8_lossy(&body),
                answer.status,
                String::from_utf8_lossy(&answer.body)
            );
            Ok(())
        })
    })
    .await
    .expect("the fuzzer thread");
    if let Err(failure) = fuzzed {
        panic!("{failure}");
    }
    // The server still answers.
    let ok = s.get_json("/ok", reqwest::StatusCode::OK).await;
    assert_eq!(ok, json!({"ok": true}));
    s.stop().await;
}
