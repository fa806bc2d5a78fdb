//! Node caching: a node with a cache policy that meets an input it has seen is not run;
//! its earlier writes are applied, and the stream says so. Time to live is measured on a
//! `ManualClock`, moved by hand (no sleeps). The cache backends share one conformance
//! suite: in memory always, SQLite with the `sqlite` feature, PostgreSQL with the `postgres`
//! feature when `GRAPHKIT_TEST_POSTGRES_URL` names a server (otherwise those tests say why
//! they skip). SQLite and PostgreSQL caches are also shown to serve a second process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use graphkit::cache::{Cache, CacheEntry, CacheKey, CachePolicy, InMemoryCache};
use graphkit::checkpoint::InMemorySaver;
use graphkit::clock::ManualClock;
use graphkit::error::StorageError;
use graphkit::nodes::{IntoNode, NodeOptions};
use graphkit::{
    Command, CompileOptions, CompiledGraph, END, Error, Input, NodeContext, RunConfig, START,
    SendTo, State, StateGraph, StreamMode, StreamPayload, SyncNode,
};
use serde::{Deserialize, Serialize};

use crate::backend_support::unique;

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Research {
    topic: String,
    /// Not read by `research`'s key function, when it has one.
    reader: String,
    summary: String,
    #[reducer(append)]
    log: Vec<String>,
}

/// Counts how often a node really ran.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

impl Runs {
    fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    fn tick(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// START -> research (cached with `policy`) -> publish (not cached) -> END.
fn research_graph(
    cache: Arc<dyn Cache>,
    policy: CachePolicy,
    runs: &Runs,
) -> CompiledGraph<Research> {
    let counted = runs.clone();
    let research = SyncNode::new(move |state: &Research| {
        counted.tick();
        ResearchUpdate::new().summary(format!("summary of {}", state.topic))
    });
    let publish =
        SyncNode::new(|state: &Research| ResearchUpdate::new().log(vec![state.summary.clone()]));
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with("research", research, NodeOptions::new().cache(policy))
        .add_node("publish", publish)
        .add_edge(START, "research")
        .add_edge("research", "publish")
        .add_edge("publish", END);
    graph
        .compile_with(CompileOptions::new().cache(cache))
        .expect("compile")
}

/// START -> `name` -> END, with `options`, compiled with `cache` if any.
fn one_node<A>(
    name: &str,
    node: impl IntoNode<Research, A>,
    options: NodeOptions,
    cache: Option<Arc<dyn Cache>>,
) -> CompiledGraph<Research> {
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with(name, node, options)
        .add_edge(START, name)
        .add_edge(name, END);
    let options = match cache {
        Some(cache) => CompileOptions::new().cache(cache),
        None => CompileOptions::new(),
    };
    graph.compile_with(options).expect("compile")
}

/// A node that counts its runs and writes nothing.
fn counted(runs: &Runs) -> SyncNode<impl Fn(&Research) -> ResearchUpdate + use<>> {
    let runs = runs.clone();
    SyncNode::new(move |_: &Research| {
        runs.tick();
        ResearchUpdate::new()
    })
}

/// START sends one `write` task per comma-separated part of the topic; `write` (cached with
/// `policy`, counting its runs) logs its input.
fn send_graph(policy: CachePolicy, runs: &Runs) -> CompiledGraph<Research> {
    let runs = runs.clone();
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with(
            "write",
            move |Input(subject): Input<String>| {
                let runs = runs.clone();
                async move {
                    runs.tick();
                    ResearchUpdate::new().log(vec![subject])
                }
            },
            NodeOptions::new().cache(policy),
        )
        .add_conditional_edges(
            START,
            |s: &Research| SendTo::each("write", s.topic.split(',').map(str::to_owned)),
            ["write"],
        )
        .add_edge("write", END);
    graph
        .compile_with(CompileOptions::new().cache(Arc::new(InMemoryCache::new())))
        .expect("compile")
}

fn topic(topic: &str) -> ResearchUpdate {
    ResearchUpdate::new().topic(topic.to_owned())
}

async fn run(graph: &CompiledGraph<Research>, input: ResearchUpdate) -> Research {
    graph.invoke(input).await.expect("run").into_state()
}

/// The `updates` events of a run: (node, cached).
async fn updates(graph: &CompiledGraph<Research>, input: ResearchUpdate) -> Vec<(String, bool)> {
    let mut stream = graph.stream(input, StreamMode::Updates);
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        if let StreamPayload::Updates { node, cached, .. } = event.expect("event").payload {
            seen.push((node.to_string(), cached));
        }
    }
    seen
}

// ---------------------------------------------------------------------------------------
// Hits and misses

#[tokio::test]
async fn same_input_is_served_from_the_cache_without_running_the_node() {
    let runs = Runs::default();
    let graph = research_graph(Arc::new(InMemoryCache::new()), CachePolicy::new(), &runs);

    let first = run(&graph, topic("rust")).await;
    let second = run(&graph, topic("rust")).await;

    assert_eq!(
        runs.count(),
        1,
        "the second run took research's writes from the cache"
    );
    assert_eq!(second, first);
    assert_eq!(second.summary, "summary of rust");
    assert_eq!(
        second.log,
        ["summary of rust"],
        "nodes after a hit run as usual"
    );
}

#[tokio::test]
async fn different_input_misses_and_runs_the_node() {
    let runs = Runs::default();
    let graph = research_graph(Arc::new(InMemoryCache::new()), CachePolicy::new(), &runs);

    run(&graph, topic("rust")).await;
    let other = run(&graph, topic("go")).await;
    run(&graph, ResearchUpdate::new().topic("rust").reader("ada")).await;

    assert_eq!(
        runs.count(),
        3,
        "by default the key hashes the whole state the node reads"
    );
    assert_eq!(other.summary, "summary of go");
}

#[tokio::test]
async fn a_key_function_decides_which_inputs_are_the_same() {
    let runs = Runs::default();
    let policy = CachePolicy::new().key(|state: &Research| state.topic.clone());
    let graph = research_graph(Arc::new(InMemoryCache::new()), policy, &runs);

    run(&graph, ResearchUpdate::new().topic("rust").reader("ada")).await;
    let for_grace = run(&graph, ResearchUpdate::new().topic("rust").reader("grace")).await;
    run(&graph, topic("go")).await;

    assert_eq!(runs.count(), 2, "the reader is not part of the key");
    assert_eq!(for_grace.summary, "summary of rust");
    assert_eq!(for_grace.reader, "grace");
}

#[tokio::test]
async fn nodes_without_a_cache_policy_always_run() {
    let published = Runs::default();
    let cache = Arc::new(InMemoryCache::new());
    let graph = one_node(
        "publish",
        counted(&published),
        NodeOptions::new(),
        Some(cache.clone()),
    );

    run(&graph, topic("rust")).await;
    run(&graph, topic("rust")).await;

    assert_eq!(published.count(), 2);
    assert!(cache.is_empty(), "nothing was stored for an uncached node");
}

#[tokio::test]
async fn a_policy_without_a_cache_on_the_graph_runs_the_node_every_time() {
    let runs = Runs::default();
    let cached = NodeOptions::new().cache(CachePolicy::new());
    let graph = one_node("research", counted(&runs), cached, None);

    run(&graph, topic("rust")).await;
    run(&graph, topic("rust")).await;

    assert_eq!(runs.count(), 2);
    graph.clear_cache().await.expect("nothing to clear is fine");
}

#[tokio::test]
async fn two_nodes_with_the_same_input_do_not_share_entries() {
    let runs = Runs::default();
    let (first, second) = (runs.clone(), runs.clone());
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with(
            "summarize",
            SyncNode::new(move |s: &Research| {
                first.tick();
                ResearchUpdate::new().summary(format!("summary of {}", s.topic))
            }),
            NodeOptions::new().cache(CachePolicy::new()),
        )
        .add_node_with(
            "annotate",
            SyncNode::new(move |s: &Research| {
                second.tick();
                ResearchUpdate::new().log(vec![format!("note on {}", s.topic)])
            }),
            NodeOptions::new().cache(CachePolicy::new()),
        )
        .add_edge(START, "summarize")
        .add_edge(START, "annotate")
        .add_edge("summarize", END)
        .add_edge("annotate", END);
    let graph = graph
        .compile_with(CompileOptions::new().cache(Arc::new(InMemoryCache::new())))
        .expect("compile");

    let first_run = run(&graph, topic("rust")).await;
    let second_run = run(&graph, topic("rust")).await;

    assert_eq!(runs.count(), 2, "each node ran once, on the same input");
    assert_eq!(second_run, first_run);
    assert_eq!(second_run.summary, "summary of rust");
    assert_eq!(second_run.log, ["note on rust"]);
}

// ---------------------------------------------------------------------------------------
// What a hit applies

#[tokio::test]
async fn a_cached_command_routes_as_the_node_did() {
    let runs = Runs::default();
    let counted = runs.clone();
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with(
            "triage",
            SyncNode::new(move |s: &Research| {
                counted.tick();
                let target = if s.topic == "rust" { "deep" } else { "shallow" };
                Command::new()
                    .update(ResearchUpdate::new().summary(format!("triaged {}", s.topic)))
                    .goto(target)
            }),
            NodeOptions::new()
                .cache(CachePolicy::new())
                .destinations(["deep", "shallow"]),
        )
        .add_node(
            "deep",
            SyncNode::new(|_: &Research| ResearchUpdate::new().log(vec!["deep".into()])),
        )
        .add_node(
            "shallow",
            SyncNode::new(|_: &Research| ResearchUpdate::new().log(vec!["shallow".into()])),
        )
        .add_edge(START, "triage")
        .add_edge("deep", END)
        .add_edge("shallow", END);
    let graph = graph
        .compile_with(CompileOptions::new().cache(Arc::new(InMemoryCache::new())))
        .expect("compile");

    run(&graph, topic("rust")).await;
    let again = run(&graph, topic("rust")).await;

    assert_eq!(runs.count(), 1);
    assert_eq!(again.summary, "triaged rust");
    assert_eq!(again.log, ["deep"], "the cached goto still routes");
}

#[tokio::test]
async fn send_tasks_are_keyed_by_their_own_input() {
    let runs = Runs::default();
    let graph = send_graph(CachePolicy::new(), &runs);

    let first = run(&graph, topic("cats,dogs")).await;
    assert_eq!(runs.count(), 2);
    // A different state, but the same sends: every task is a hit.
    let second = run(&graph, ResearchUpdate::new().topic("cats,dogs").reader("x")).await;
    assert_eq!(runs.count(), 2);
    assert_eq!(second.log, first.log);
    run(&graph, topic("dogs,birds")).await;
    assert_eq!(runs.count(), 3, "only `birds` is new");
}

#[tokio::test]
async fn a_key_function_of_the_send_input_type() {
    let runs = Runs::default();
    let graph = send_graph(CachePolicy::new().key(|s: &String| s.to_lowercase()), &runs);

    run(&graph, topic("Cats")).await;
    let second = run(&graph, topic("CATS")).await;

    assert_eq!(runs.count(), 1);
    assert_eq!(
        second.log,
        ["Cats"],
        "a hit applies the writes of the run it came from"
    );
}

#[tokio::test]
async fn a_key_function_of_another_type_fails_the_run_with_the_types() {
    let runs = Runs::default();
    let policy = CachePolicy::new().key(|n: &u64| *n);
    let graph = research_graph(Arc::new(InMemoryCache::new()), policy, &runs);

    let error = graph
        .invoke(topic("rust"))
        .await
        .expect_err("wrong key type");

    assert!(
        matches!(&error, Error::InputType { node, .. } if node == "research"),
        "{error}"
    );
    assert!(error.to_string().contains("u64"), "{error}");
    assert_eq!(runs.count(), 0);
}

// ---------------------------------------------------------------------------------------
// What is never cached

#[tokio::test]
async fn errors_are_never_cached() {
    let attempts = Runs::default();
    let counted = attempts.clone();
    let flaky = SyncNode::new(move |_: &Research| -> Result<ResearchUpdate, String> {
        counted.tick();
        if counted.count() == 1 {
            Err("the service is down".to_owned())
        } else {
            Ok(ResearchUpdate::new().summary("fetched"))
        }
    });
    let cached = NodeOptions::new().cache(CachePolicy::new());
    let graph = one_node("flaky", flaky, cached, Some(Arc::new(InMemoryCache::new())));

    assert!(graph.invoke(topic("rust")).await.is_err());
    assert_eq!(run(&graph, topic("rust")).await.summary, "fetched");
    assert_eq!(run(&graph, topic("rust")).await.summary, "fetched");

    assert_eq!(attempts.count(), 2, "failed, ran again, then a hit");
}

#[tokio::test]
async fn interrupts_are_never_cached() {
    let runs = Runs::default();
    let counted = runs.clone();
    let mut graph = StateGraph::<Research>::new();
    graph
        .add_node_with(
            "approve",
            graphkit::nodes::SyncNodeWithContext::new(
                move |s: &Research, ctx: &NodeContext| -> Result<ResearchUpdate, Error> {
                    counted.tick();
                    let verdict = ctx.interrupt(format!("publish {}?", s.topic))?;
                    Ok(ResearchUpdate::new().summary(format!("verdict: {verdict}")))
                },
            ),
            NodeOptions::new().cache(CachePolicy::new()),
        )
        .add_edge(START, "approve")
        .add_edge("approve", END);
    let graph = graph
        .compile_with(
            CompileOptions::new()
                .checkpointer(Arc::new(InMemorySaver::new()))
                .cache(Arc::new(InMemoryCache::new())),
        )
        .expect("compile");
    let thread = |id: &str| RunConfig::new().thread_id(id);

    let paused = graph
        .invoke_with(topic("rust"), thread("a"))
        .await
        .expect("run");
    assert!(paused.paused().is_some());
    let paused_again = graph
        .invoke_with(topic("rust"), thread("b"))
        .await
        .expect("run");
    assert!(paused_again.paused().is_some(), "the pause was not cached");
    let done = graph
        .invoke_with(Command::resume("yes"), thread("a"))
        .await
        .expect("resume");
    assert_eq!(done.state().summary, "verdict: \"yes\"");

    // Now that it finished, the same input is a hit: a third thread does not pause.
    let cached = graph
        .invoke_with(topic("rust"), thread("c"))
        .await
        .expect("run");
    assert!(cached.paused().is_none());
    assert_eq!(cached.state().summary, "verdict: \"yes\"");
    assert_eq!(runs.count(), 3, "ran on a, on b, and on a's resume");
}

// ---------------------------------------------------------------------------------------
// Stream

#[tokio::test]
async fn cache_hits_are_marked_in_the_updates_stream() {
    let runs = Runs::default();
    let graph = research_graph(Arc::new(InMemoryCache::new()), CachePolicy::new(), &runs);

    let first = updates(&graph, topic("rust")).await;
    let second = updates(&graph, topic("rust")).await;

    let names =
        |events: &[(String, bool)]| events.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&first), ["research", "publish"]);
    assert_eq!(
        names(&second),
        names(&first),
        "a hit streams the same updates"
    );
    assert_eq!(
        first,
        [
            ("research".to_owned(), false),
            ("publish".to_owned(), false)
        ]
    );
    assert_eq!(
        second,
        [("research".to_owned(), true), ("publish".to_owned(), false)]
    );
}

// ---------------------------------------------------------------------------------------
// Time to live

#[tokio::test]
async fn entries_expire_after_their_ttl_on_the_cache_clock() {
    let clock = Arc::new(ManualClock::at(1_000_000));
    let cache = Arc::new(InMemoryCache::new().with_clock(clock.clone()));
    let runs = Runs::default();
    let policy = CachePolicy::new().ttl(Duration::from_secs(60));
    let graph = research_graph(cache, policy, &runs);

    run(&graph, topic("rust")).await;
    clock.advance(Duration::from_secs(59));
    run(&graph, topic("rust")).await;
    assert_eq!(runs.count(), 1, "59 s later the entry is alive");

    clock.advance(Duration::from_secs(1));
    run(&graph, topic("rust")).await;
    assert_eq!(
        runs.count(),
        2,
        "at 60 s it has expired, and the node runs again"
    );

    clock.advance(Duration::from_secs(30));
    run(&graph, topic("rust")).await;
    assert_eq!(runs.count(), 2, "the new entry lives 60 s from its own run");
}

// ---------------------------------------------------------------------------------------
// Clearing

#[tokio::test]
async fn clear_cache_runs_every_cached_node_again() {
    let runs = Runs::default();
    let graph = research_graph(Arc::new(InMemoryCache::new()), CachePolicy::new(), &runs);

    run(&graph, topic("rust")).await;
    graph.clear_cache().await.expect("clear");
    run(&graph, topic("rust")).await;

    assert_eq!(runs.count(), 2);
}

#[tokio::test]
async fn clear_cache_of_clears_only_the_named_nodes() {
    let cache: Arc<dyn Cache> = Arc::new(InMemoryCache::new());
    let (research_runs, other_runs) = (Runs::default(), Runs::default());
    let research = research_graph(Arc::clone(&cache), CachePolicy::new(), &research_runs);
    let cached = NodeOptions::new().cache(CachePolicy::new());
    let other = one_node(
        "annotate",
        counted(&other_runs),
        cached,
        Some(Arc::clone(&cache)),
    );
    run(&research, topic("rust")).await;
    run(&other, topic("rust")).await;

    research.clear_cache_of(["research"]).await.expect("clear");
    run(&research, topic("rust")).await;
    run(&other, topic("rust")).await;
    assert_eq!(research_runs.count(), 2, "cleared");
    assert_eq!(other_runs.count(), 1, "another node's entries stay");

    research.clear_cache().await.expect("clear");
    run(&other, topic("rust")).await;
    assert_eq!(
        other_runs.count(),
        1,
        "clear_cache clears this graph's nodes only"
    );
}

#[tokio::test]
async fn clear_cache_of_an_unknown_node_is_an_error() {
    let graph = research_graph(
        Arc::new(InMemoryCache::new()),
        CachePolicy::new(),
        &Runs::default(),
    );

    let error = graph
        .clear_cache_of(["reserch"])
        .await
        .expect_err("unknown");

    assert!(
        matches!(&error, Error::UnknownNode { node, .. } if node == "reserch"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------
// Namespaces

/// A cache that records the namespaces it is asked to store and counts its lookups, over
/// an in-memory one.
#[derive(Debug, Default)]
struct Recording {
    inner: InMemoryCache,
    stored: Mutex<Vec<String>>,
    lookups: AtomicUsize,
}

#[async_trait]
impl Cache for Recording {
    async fn get(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.inner.get(keys).await
    }

    async fn set(&self, entries: Vec<CacheEntry>) -> Result<(), StorageError> {
        self.stored
            .lock()
            .expect("lock")
            .extend(entries.iter().map(|e| e.key.namespace.clone()));
        self.inner.set(entries).await
    }

    async fn clear(&self, namespaces: Option<&[&str]>) -> Result<(), StorageError> {
        self.inner.clear(namespaces).await
    }
}

#[tokio::test]
async fn steps_without_a_cached_task_do_not_touch_the_cache() {
    let cache = Arc::new(Recording::default());
    let graph = research_graph(cache.clone(), CachePolicy::new(), &Runs::default());

    run(&graph, topic("rust")).await;

    assert_eq!(
        cache.lookups.load(Ordering::SeqCst),
        1,
        "one lookup, for `research`'s step; none for `publish`'s"
    );
    assert_eq!(*cache.stored.lock().expect("lock"), ["research"]);
}

#[tokio::test]
async fn a_subgraph_node_is_namespaced_by_the_node_it_runs_in() {
    let cache = Arc::new(Recording::default());
    let runs = Runs::default();
    let child = research_graph(cache.clone(), CachePolicy::new(), &runs);
    let mut parent = StateGraph::<Research>::new();
    parent
        .add_node_with(
            "research",
            counted(&runs),
            NodeOptions::new().cache(CachePolicy::new()),
        )
        .add_subgraph("deep_dive", child)
        .add_edge(START, "research")
        .add_edge("research", "deep_dive")
        .add_edge("deep_dive", END);
    let parent = parent
        .compile_with(CompileOptions::new().cache(cache.clone()))
        .expect("compile");

    run(&parent, topic("rust")).await;
    assert_eq!(
        runs.count(),
        2,
        "the parent's and the child's `research` both ran"
    );
    assert_eq!(
        *cache.stored.lock().expect("lock"),
        ["research", "deep_dive|research"]
    );

    run(&parent, topic("rust")).await;
    assert_eq!(runs.count(), 2, "both hit, each its own entry");

    parent.clear_cache_of(["deep_dive"]).await.expect("clear");
    run(&parent, topic("rust")).await;
    assert_eq!(
        runs.count(),
        3,
        "clearing a subgraph node clears the nodes inside it"
    );
}

// ---------------------------------------------------------------------------------------
// Backend conformance: what every `Cache` does, at the trait level.

fn key(namespace: &str, key: &str) -> CacheKey {
    CacheKey {
        namespace: namespace.to_owned(),
        key: key.to_owned(),
    }
}

fn entry(namespace: &str, name: &str, value: &[u8], ttl: Option<Duration>) -> CacheEntry {
    CacheEntry {
        key: key(namespace, name),
        value: value.to_vec(),
        ttl,
    }
}

/// Every behaviour of a cache whose clock is `clock`. Namespaces are below a root of this
/// call's own, so runs sharing a database do not meet; clearing everything is checked only
/// on a `private` cache (on a shared server it would clear other tests' entries).
async fn conformance(cache: &dyn Cache, clock: &ManualClock, private: bool) {
    let root = unique("cache");
    let ns = |rest: &str| format!("{root}{rest}");

    // Set, get, replace; a missing key and another namespace are misses.
    cache
        .set(vec![
            entry(&ns("|a"), "k1", b"one", None),
            entry(&ns("|a"), "k2", &[0, 159, 255], None),
        ])
        .await
        .expect("set");
    let got = cache
        .get(&[
            key(&ns("|a"), "k1"),
            key(&ns("|a"), "k2"),
            key(&ns("|a"), "k3"),
            key(&ns("|b"), "k1"),
        ])
        .await
        .expect("get");
    assert_eq!(
        got,
        [Some(b"one".to_vec()), Some(vec![0, 159, 255]), None, None]
    );
    cache
        .set(vec![entry(&ns("|a"), "k1", b"uno", None)])
        .await
        .expect("replace");
    assert_eq!(
        cache.get(&[key(&ns("|a"), "k1")]).await.expect("get"),
        [Some(b"uno".to_vec())]
    );

    // Time to live, on the cache's clock.
    cache
        .set(vec![entry(
            &ns("|ttl"),
            "k",
            b"v",
            Some(Duration::from_secs(10)),
        )])
        .await
        .expect("set");
    clock.advance(Duration::from_millis(9_999));
    assert_eq!(
        cache.get(&[key(&ns("|ttl"), "k")]).await.expect("get"),
        [Some(b"v".to_vec())]
    );
    clock.advance(Duration::from_millis(1));
    assert_eq!(
        cache.get(&[key(&ns("|ttl"), "k")]).await.expect("get"),
        [None]
    );
    assert_eq!(
        cache.get(&[key(&ns("|a"), "k1")]).await.expect("get"),
        [Some(b"uno".to_vec())],
        "no ttl: never expires"
    );
    cache
        .set(vec![entry(
            &ns("|ttl"),
            "k",
            b"w",
            Some(Duration::from_secs(10)),
        )])
        .await
        .expect("set again");
    assert_eq!(
        cache.get(&[key(&ns("|ttl"), "k")]).await.expect("get"),
        [Some(b"w".to_vec())],
        "an expired key takes a new entry"
    );

    // Clearing a namespace clears those below it, not its siblings with a longer name.
    cache
        .set(vec![
            entry(&ns("|n"), "k", b"1", None),
            entry(&ns("|n|child"), "k", b"2", None),
            entry(&ns("|nn"), "k", b"3", None),
        ])
        .await
        .expect("set");
    cache.clear(Some(&[&ns("|n")])).await.expect("clear");
    let got = cache
        .get(&[
            key(&ns("|n"), "k"),
            key(&ns("|n|child"), "k"),
            key(&ns("|nn"), "k"),
        ])
        .await
        .expect("get");
    assert_eq!(got, [None, None, Some(b"3".to_vec())]);

    // Clearing everything.
    if !private {
        return;
    }
    cache.clear(None).await.expect("clear all");
    let got = cache
        .get(&[key(&ns("|a"), "k1"), key(&ns("|nn"), "k")])
        .await
        .expect("get");
    assert_eq!(got, [None, None]);
}

#[tokio::test]
async fn in_memory_cache_conformance() {
    let clock = Arc::new(ManualClock::now());
    let cache = InMemoryCache::new().with_clock(clock.clone());
    conformance(&cache, &clock, true).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn sqlite_cache_conformance() {
    let clock = Arc::new(ManualClock::now());
    let cache = graphkit::cache::SqliteCache::in_memory()
        .await
        .expect("open")
        .with_clock(clock.clone());
    conformance(&cache, &clock, true).await;

    let dir = tempfile::tempdir().expect("tempdir");
    let file = graphkit::cache::SqliteCache::open(dir.path().join("cache.db"))
        .await
        .expect("open")
        .with_clock(clock.clone());
    conformance(&file, &clock, true).await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_cache_conformance() {
    let Some(url) = crate::backend_support::postgres_url() else {
        return;
    };
    let clock = Arc::new(ManualClock::now());
    let cache = graphkit::cache::PostgresCache::connect(&url)
        .await
        .expect("connect")
        .with_clock(clock.clone());
    conformance(&cache, &clock, false).await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_graph_on_the_sqlite_cache_hits_and_expires() {
    let clock = Arc::new(ManualClock::now());
    let cache = graphkit::cache::SqliteCache::in_memory()
        .await
        .expect("open")
        .with_clock(clock.clone());
    let runs = Runs::default();
    let policy = CachePolicy::new().ttl(Duration::from_secs(5));
    let graph = research_graph(Arc::new(cache), policy, &runs);

    let first = run(&graph, topic("rust")).await;
    let second = run(&graph, topic("rust")).await;
    assert_eq!((runs.count(), &second), (1, &first));
    clock.advance(Duration::from_secs(5));
    run(&graph, topic("rust")).await;
    assert_eq!(runs.count(), 2);
}

// ---------------------------------------------------------------------------------------
// Across processes: a second process (this test binary, filtered to `child_run`) finds
// what the first one stored.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod across_processes {
    use super::*;

    const BACKEND: &str = "GRAPHKIT_TEST_CACHE_BACKEND";
    const TARGET: &str = "GRAPHKIT_TEST_CACHE_TARGET";
    const TOPIC: &str = "GRAPHKIT_TEST_CACHE_TOPIC";
    const REPORT: &str = "graphkit-test: research ran";

    async fn open(backend: &str, target: &str) -> Arc<dyn Cache> {
        match backend {
            #[cfg(feature = "sqlite")]
            "sqlite" => Arc::new(
                graphkit::cache::SqliteCache::open(target)
                    .await
                    .expect("open"),
            ),
            #[cfg(feature = "postgres")]
            "postgres" => Arc::new(
                graphkit::cache::PostgresCache::connect(target)
                    .await
                    .expect("connect"),
            ),
            other => panic!("unknown backend {other}"),
        }
    }

    /// Does nothing in a normal run. Started by [`run_in_child`] as a child process, it runs
    /// the research graph once on the given cache and topic and reports how often
    /// `research` ran and whether its update was streamed as cached.
    #[test]
    fn child_run() {
        let (Ok(backend), Ok(target), Ok(topic_name)) = (
            std::env::var(BACKEND),
            std::env::var(TARGET),
            std::env::var(TOPIC),
        ) else {
            return;
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let runs = Runs::default();
            let graph = research_graph(open(&backend, &target).await, CachePolicy::new(), &runs);
            let events = updates(&graph, topic(&topic_name)).await;
            let cached = events
                .iter()
                .any(|(node, cached)| node == "research" && *cached);
            println!("{REPORT} {} times; cached: {cached}", runs.count());
        });
    }

    /// Runs [`child_run`] in another process: (times `research` ran, cached).
    fn run_in_child(backend: &str, target: &str, topic_name: &str) -> (usize, bool) {
        let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "node_cache::across_processes::child_run",
                "--exact",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(BACKEND, backend)
            .env(TARGET, target)
            .env(TOPIC, topic_name)
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the child failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let line = stdout
            .lines()
            .find_map(|line| {
                line.split_once(REPORT)
                    .map(|(_, rest)| rest.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("the child did not report: {stdout}"));
        let runs = line
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .expect("a count");
        (runs, line.ends_with("cached: true"))
    }

    /// The first process runs the node and stores its writes; a second process, then this
    /// one, take them from the shared cache. With `private` (no one else uses the
    /// database), clearing in this process is seen by the next.
    async fn shared_by_processes(backend: &str, target: &str, private: bool) {
        let topic_name = unique("topic");
        assert_eq!(
            run_in_child(backend, target, &topic_name),
            (1, false),
            "first process: a miss"
        );
        assert_eq!(
            run_in_child(backend, target, &topic_name),
            (0, true),
            "second process: a hit"
        );

        let runs = Runs::default();
        let graph = research_graph(open(backend, target).await, CachePolicy::new(), &runs);
        let state = run(&graph, topic(&topic_name)).await;
        assert_eq!(runs.count(), 0, "this process: a hit too");
        assert_eq!(state.summary, format!("summary of {topic_name}"));

        if !private {
            return;
        }
        graph.clear_cache().await.expect("clear");
        assert_eq!(
            run_in_child(backend, target, &topic_name),
            (1, false),
            "cleared for every process"
        );
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn sqlite_cache_hits_across_processes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cache.db");
        shared_by_processes("sqlite", &path.to_string_lossy(), true).await;
    }

    #[cfg(feature = "postgres")]
    #[tokio::test]
    async fn postgres_cache_hits_across_processes() {
        let Some(url) = crate::backend_support::postgres_url() else {
            return;
        };
        shared_by_processes("postgres", &url, false).await;
    }
}
