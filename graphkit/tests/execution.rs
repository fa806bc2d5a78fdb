//! Super-step execution semantics.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use graphkit::error::StorageError;
use graphkit::nodes::NodeOptions;
use graphkit::{
    Command, END, Error, Input, NodeContext, RetryPolicy, RunConfig, START, SendTo, State,
    StateGraph, SyncNode,
};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    #[reducer(append)]
    seen: Vec<String>,
    #[reducer(add)]
    count: u32,
    last: String,
}

fn mark(name: &'static str) -> impl Fn(Arc<Log>) -> std::future::Ready<LogUpdate> + Clone {
    move |_| std::future::ready(LogUpdate::new().seen(vec![name.to_string()]))
}

/// Compiles `g` and runs it from the empty state to its end.
async fn run(g: StateGraph<Log>) -> Log {
    g.compile()
        .unwrap()
        .invoke(LogUpdate::new())
        .await
        .unwrap()
        .into_state()
}

/// Compiles `g` and runs it from the empty state: the error it fails with.
async fn run_to_error(g: StateGraph<Log>) -> Error {
    g.compile()
        .unwrap()
        .invoke(LogUpdate::new())
        .await
        .unwrap_err()
}

#[tokio::test]
async fn parallel_tasks_see_the_same_snapshot_and_apply_in_name_order() {
    // Each branch records how many entries it saw: both must see the pre-step state.
    fn observe(name: &'static str) -> impl Fn(Arc<Log>) -> std::future::Ready<LogUpdate> {
        move |s| std::future::ready(LogUpdate::new().seen(vec![format!("{name}:{}", s.seen.len())]))
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("start", mark("start"))
        .add_node("zeta", observe("zeta"))
        .add_node("alpha", observe("alpha"))
        .add_node("mid", observe("mid"))
        .add_edge(START, "start")
        .add_edge("start", "zeta")
        .add_edge("start", "alpha")
        .add_edge("start", "mid");
    let out = run(g).await;
    assert_eq!(out.seen, ["start", "alpha:1", "mid:1", "zeta:1"]);
}

#[tokio::test]
async fn routers_see_the_post_step_state() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_node("b", mark("b"))
        .add_node("yes", mark("yes"))
        .add_edge(START, "a")
        .add_edge(START, "b")
        // The router after `a` sees b's write too: both ran in the same step.
        .add_conditional_edges(
            "a",
            |s: &Log| if s.seen.len() == 2 { "yes" } else { END },
            ["yes", END],
        );
    let out = run(g).await;
    assert_eq!(out.seen, ["a", "b", "yes"]);
}

#[tokio::test]
async fn join_edge_fires_once_after_all_sources() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_node("b1", mark("b1"))
        .add_node("b2", mark("b2"))
        .add_node("join", mark("join"))
        .add_edge(START, "a")
        .add_edge(START, "b1")
        .add_edge("b1", "b2")
        .add_edge(["a", "b2"], "join")
        .add_edge("join", END);
    let out = run(g).await;
    // `a` finishes in step 1, `b2` in step 2: the join waits for both and runs once.
    assert_eq!(out.seen, ["a", "b1", "b2", "join"]);
}

#[tokio::test]
async fn send_runs_a_node_once_per_input_in_send_order() {
    async fn work(Input(i): Input<u32>) -> LogUpdate {
        // Later sends finish first; the apply order must not change.
        tokio::time::sleep(Duration::from_millis(u64::from(10 - i))).await;
        LogUpdate::new().seen(vec![format!("w{i}")]).count(i)
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("work", work)
        .add_node("reduce", mark("reduce"))
        .add_conditional_edges(
            START,
            |_: &Log| {
                (0..5u32)
                    .map(|i| SendTo::new("work", i))
                    .collect::<Vec<_>>()
            },
            ["work"],
        )
        .add_edge("work", "reduce")
        .add_edge("reduce", END);
    let out = run(g).await;
    assert_eq!(out.seen, ["w0", "w1", "w2", "w3", "w4", "reduce"]);
    assert_eq!(out.count, 10);
}

#[tokio::test]
async fn a_send_with_the_wrong_input_type_names_the_node() {
    async fn work(Input(_): Input<u32>) -> LogUpdate {
        LogUpdate::new()
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("work", work).add_conditional_edges(
        START,
        |_: &Log| SendTo::new("work", "text".to_string()),
        ["work"],
    );
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::InputType { node, found, .. } if node == "work" && found.contains("String")),
        "{err}"
    );
}

#[tokio::test]
async fn command_updates_and_routes_while_static_edges_still_fire() {
    async fn decide(_: Arc<Log>) -> Command<Log> {
        Command::new()
            .update(LogUpdate::new().seen(vec!["decide".into()]))
            .goto("extra")
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("decide", decide)
        .add_node("extra", mark("extra"))
        .add_node("always", mark("always"))
        .add_edge(START, "decide")
        .add_edge("decide", "always");
    let out = run(g).await;
    assert_eq!(out.seen, ["decide", "always", "extra"]);
}

#[tokio::test]
async fn a_command_to_an_unknown_node_is_an_error() {
    async fn lost(_: Arc<Log>) -> Command<Log> {
        Command::goto_only("nowhere")
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("lost", lost).add_edge(START, "lost");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::UnknownTarget { from, target } if from == "lost" && target == "nowhere"),
        "{err}"
    );
}

#[tokio::test]
async fn a_router_returning_an_undeclared_target_is_an_error() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_node("b", mark("b"))
        .add_node("c", mark("c"))
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &Log| "c", ["b", END])
        .add_edge("c", END);
    // `c` is reachable only through the router's (wrong) choice, so declare it elsewhere.
    g.add_edge(START, "c");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::UndeclaredTarget { target, .. } if target == "c"),
        "{err}"
    );
}

#[tokio::test]
async fn a_dynamic_router_to_an_unknown_node_is_an_error_not_a_silent_end() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_edge(START, "a")
        .add_dynamic_conditional_edges("a", |_: &Log| "ghost".to_string());
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::UnknownTarget { target, .. } if target == "ghost"),
        "{err}"
    );
}

#[tokio::test]
async fn a_router_that_panics_or_errors_is_reported_with_its_node() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_edge(START, "a")
        .add_conditional_edges(
            "a",
            |_: &Log| -> &'static str { panic!("router bug") },
            [END],
        );
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::RouterFailed { node, message } if node == "a" && message.contains("router bug")),
        "{err}"
    );

    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_edge(START, "a")
        .add_conditional_edges(
            "a",
            |_: &Log| -> Result<&'static str, String> { Err("no route".into()) },
            [END],
        );
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::RouterFailed { message, .. } if message == "no route"),
        "{err}"
    );
}

#[tokio::test]
async fn two_writers_of_a_last_value_field_in_one_step_fail_the_run() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", |_: Arc<Log>| async { LogUpdate::new().last("a") })
        .add_node("b", |_: Arc<Log>| async { LogUpdate::new().last("b") })
        .add_edge(START, "a")
        .add_edge(START, "b");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::InvalidConcurrentUpdate { field: "last", first, second } if first == "a" && second == "b"),
        "{err}"
    );
}

#[tokio::test]
async fn the_recursion_limit_stops_an_endless_conditional_loop() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("spin", SyncNode::new(|_: &Log| LogUpdate::new().count(1)))
        .add_edge(START, "spin")
        .add_conditional_edges("spin", |_: &Log| "spin", ["spin", END]);
    let err = g
        .compile()
        .unwrap()
        .invoke_with(LogUpdate::new(), RunConfig::new().recursion_limit(7))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::RecursionLimit { limit: 7 }));
    assert!(err.to_string().contains("recursion_limit"));
}

#[tokio::test]
async fn a_loop_may_use_exactly_the_recursion_limit() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("spin", SyncNode::new(|_: &Log| LogUpdate::new().count(1)))
        .add_edge(START, "spin")
        .add_conditional_edges(
            "spin",
            |s: &Log| if s.count < 7 { "spin" } else { END },
            ["spin", END],
        );
    let out = g
        .compile()
        .unwrap()
        .invoke_with(LogUpdate::new(), RunConfig::new().recursion_limit(7))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.count, 7);
}

#[tokio::test(start_paused = true)]
async fn a_failing_node_is_retried_by_its_policy() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let flaky = move |ctx: NodeContext| {
        let counter = Arc::clone(&counter);
        async move {
            counter.fetch_add(1, Ordering::SeqCst);
            let outcome: Outcome = if ctx.attempt() < 3 {
                Err("transient".into())
            } else {
                Ok(LogUpdate::new().last(format!("attempt {}", ctx.attempt())))
            };
            outcome
        }
    };
    let mut g = StateGraph::<Log>::new();
    g.add_node_with(
        "flaky",
        flaky,
        NodeOptions::new().retry(RetryPolicy::new(3).initial_interval(Duration::from_millis(5))),
    )
    .add_edge(START, "flaky");
    let out = run(g).await;
    assert_eq!(out.last, "attempt 3");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

type Outcome = Result<LogUpdate, Box<dyn std::error::Error + std::marker::Send + Sync>>;

#[tokio::test(start_paused = true)]
async fn retries_stop_at_max_attempts_and_report_them() {
    let mut g = StateGraph::<Log>::new();
    g.add_node_with(
        "broken",
        |_: Arc<Log>| async { Outcome::Err("always".into()) },
        NodeOptions::new().retry(RetryPolicy::new(2).initial_interval(Duration::from_millis(1))),
    )
    .add_edge(START, "broken");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::NodeFailed { node, attempts: 2, .. } if node == "broken"),
        "{err}"
    );
}

/// How many times a node failing with `error` runs under `policy` (the run fails).
async fn attempts_of(policy: RetryPolicy, error: fn() -> graphkit::error::BoxError) -> usize {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let mut g = StateGraph::<Log>::new();
    g.add_node_with(
        "failing",
        move |_: Arc<Log>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Outcome::Err(error()) }
        },
        NodeOptions::new().retry(policy),
    )
    .add_edge(START, "failing");
    assert!(g.compile().unwrap().invoke(LogUpdate::new()).await.is_err());
    calls.load(Ordering::SeqCst)
}

#[tokio::test(start_paused = true)]
async fn retry_on_limits_which_errors_are_retried() {
    let policy = RetryPolicy::new(5).retry_on(|e| !e.to_string().starts_with("fatal"));
    assert_eq!(attempts_of(policy, || "fatal: bad key".into()).await, 1);
}

#[tokio::test(start_paused = true)]
async fn the_default_retry_rule_does_not_retry_graphkits_deterministic_errors() {
    // Would fail the same way again: one attempt.
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || Box::new(Error::MissingThreadId)).await,
        1
    );
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || Box::new(Error::NoCheckpointer(
            "interrupt"
        )))
        .await,
        1
    );
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || Box::new(Error::InvalidRunInput(
            "no".into()
        )))
        .await,
        1
    );
    // May pass: every attempt.
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || Box::new(Error::Storage(
            StorageError::Backend {
                backend: "sqlite",
                message: "database is locked".into(),
            }
        )))
        .await,
        3
    );
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || Box::new(Error::ThreadBusy(
            "t".into()
        )))
        .await,
        3
    );
    // Another type's error: graphkit cannot tell, so it retries.
    assert_eq!(
        attempts_of(RetryPolicy::new(3), || "HTTP 503".into()).await,
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_node_that_runs_past_its_timeout_fails() {
    let mut g = StateGraph::<Log>::new();
    g.add_node_with(
        "slow",
        |_: Arc<Log>| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            LogUpdate::new()
        },
        NodeOptions::new().timeout(Duration::from_millis(50)),
    )
    .add_edge(START, "slow");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::NodeTimeout { node, .. } if node == "slow"),
        "{err}"
    );
}

#[tokio::test]
async fn a_panicking_node_fails_the_run_with_its_message() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("boom", |_: Arc<Log>| async {
        if true {
            panic!("kaboom");
        }
        LogUpdate::new()
    })
    .add_node("fine", mark("fine"))
    .add_edge(START, "boom")
    .add_edge(START, "fine");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::NodePanicked { node, message } if node == "boom" && message == "kaboom"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_bounds_tasks_in_flight() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (Arc::clone(&running), Arc::clone(&peak));
    let work = move |Input(i): Input<u64>| {
        let (r, p) = (Arc::clone(&r), Arc::clone(&p));
        async move {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            p.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(10 + i)).await;
            r.fetch_sub(1, Ordering::SeqCst);
            LogUpdate::new().count(1)
        }
    };
    let mut g = StateGraph::<Log>::new();
    g.add_node("work", work).add_conditional_edges(
        START,
        |_: &Log| {
            (0..10u64)
                .map(|i| SendTo::new("work", i))
                .collect::<Vec<_>>()
        },
        ["work"],
    );
    let out = g
        .compile()
        .unwrap()
        .invoke_with(LogUpdate::new(), RunConfig::new().max_concurrency(3))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.count, 10);
    assert_eq!(peak.load(Ordering::SeqCst), 3);
}

/// A graph whose one node cancels `token` and then sleeps for an hour.
fn cancels_then_sleeps(token: &tokio_util::sync::CancellationToken) -> StateGraph<Log> {
    let inner = token.clone();
    let mut g = StateGraph::<Log>::new();
    g.add_node("stuck", move |_: Arc<Log>| {
        let inner = inner.clone();
        async move {
            inner.cancel();
            tokio::time::sleep(Duration::from_secs(3600)).await;
            LogUpdate::new()
        }
    })
    .add_edge(START, "stuck");
    g
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_token_stops_the_run() {
    let token = tokio_util::sync::CancellationToken::new();
    let err = cancels_then_sleeps(&token)
        .compile()
        .unwrap()
        .invoke_with(LogUpdate::new(), RunConfig::new().cancellation(token))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled));
}

/// A cancelled run releases its thread before it returns: the next run on the thread
/// (here a direct lock attempt, with no await in between for a background unlock to run)
/// never finds it busy.
#[tokio::test(start_paused = true)]
async fn a_cancelled_run_has_released_its_thread_when_it_returns() {
    use graphkit::checkpoint::{Checkpointer, InMemorySaver};
    let token = tokio_util::sync::CancellationToken::new();
    let saver = Arc::new(InMemorySaver::new());
    let graph = cancels_then_sleeps(&token)
        .compile_with(graphkit::CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    let config = RunConfig::new().thread_id("t").cancellation(token);
    let err = graph
        .invoke_with(LogUpdate::new(), config)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Cancelled), "{err}");
    assert!(
        saver.try_lock_thread("t", "the next run").await.unwrap(),
        "the cancelled run still held the thread"
    );
}

/// A run dropped mid-step (its process "killed" from inside, as a caller dropping the
/// future does) still frees its thread: from a task on the runtime, so the next run on the
/// thread gets it once that task has run.
#[tokio::test]
async fn a_dropped_run_frees_its_thread_from_the_runtime() {
    use graphkit::checkpoint::{Checkpointer, InMemorySaver};
    let started = Arc::new(tokio::sync::Notify::new());
    let signal = Arc::clone(&started);
    let mut g = StateGraph::<Log>::new();
    g.add_node("stuck", move |_: Arc<Log>| {
        let signal = Arc::clone(&signal);
        async move {
            signal.notify_one();
            std::future::pending::<()>().await;
            LogUpdate::new()
        }
    })
    .add_edge(START, "stuck");
    let saver = Arc::new(InMemorySaver::new());
    let graph = g
        .compile_with(graphkit::CompileOptions::new().checkpointer(saver.clone()))
        .unwrap();
    tokio::select! {
        result = graph.invoke_with(LogUpdate::new(), RunConfig::new().thread_id("t")) => {
            panic!("the run should not finish: {result:?}")
        }
        () = started.notified() => {} // dropping the run here
    }
    let mut freed = false;
    for _ in 0..10_000 {
        if saver.try_lock_thread("t", "the next run").await.unwrap() {
            freed = true;
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(freed, "the dropped run never freed its thread");
}

#[tokio::test]
async fn an_empty_update_still_fires_static_edges() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("quiet", |_: Arc<Log>| async {})
        .add_node("next", mark("next"))
        .add_edge(START, "quiet")
        .add_edge("quiet", "next");
    let out = run(g).await;
    assert_eq!(out.seen, ["next"]);
}

#[test]
fn invoke_blocking_runs_from_sync_code_and_refuses_inside_a_runtime() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a")).add_edge(START, "a");
    let g = g.compile().unwrap();
    assert_eq!(
        g.invoke_blocking(LogUpdate::new(), RunConfig::new())
            .unwrap()
            .into_state()
            .seen,
        ["a"]
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let err = rt
        .block_on(async { g.invoke_blocking(LogUpdate::new(), RunConfig::new()) })
        .unwrap_err();
    assert!(matches!(err, Error::BlockingInAsync));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compiled_graph_serves_concurrent_runs() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("inc", SyncNode::new(|_: &Log| LogUpdate::new().count(1)))
        .add_edge(START, "inc")
        .add_conditional_edges(
            "inc",
            |s: &Log| if s.count < 5 { "inc" } else { END },
            ["inc", END],
        );
    let g = g.compile().unwrap();
    let runs = (0..50).map(|_| {
        let g = g.clone();
        tokio::spawn(async move { g.invoke(LogUpdate::new()).await })
    });
    for run in futures::future::join_all(runs).await {
        assert_eq!(run.unwrap().unwrap().into_state().count, 5);
    }
}

#[tokio::test]
async fn a_node_can_return_several_updates_with_routes_and_sends() {
    async fn fan(_: Arc<Log>) -> graphkit::nodes::NodeOutput<Log> {
        graphkit::nodes::NodeOutput::Writes {
            updates: vec![
                LogUpdate::new().seen(vec!["one".into()]),
                LogUpdate::new().seen(vec!["two".into()]),
            ],
            gotos: vec![SendTo::new("work", 7u32).into(), "done".into()],
        }
    }
    async fn work(Input(n): Input<u32>) -> LogUpdate {
        LogUpdate::new().count(n)
    }
    let mut g = StateGraph::<Log>::new();
    g.add_node("fan", fan)
        .add_node("work", work)
        .add_node("done", mark("done"))
        .add_edge(START, "fan");
    let out = run(g).await;
    assert_eq!(out.seen, ["one", "two", "done"]);
    assert_eq!(out.count, 7);
}

#[tokio::test]
async fn a_router_with_a_path_map_routes_by_label() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("grade", |s: Arc<Log>| async move {
        LogUpdate::new()
            .seen(vec!["grade".into()])
            .count(s.count + 3)
    })
    .add_node("publish", mark("publish"))
    .add_edge(START, "grade")
    .add_conditional_edges_mapped(
        "grade",
        |s: &Log| if s.count >= 6 { "pass" } else { "retry" },
        [("pass", "publish"), ("retry", "grade")],
    )
    .add_edge("publish", END);
    let out = run(g).await;
    assert_eq!(out.seen, ["grade", "grade", "publish"]);
}

#[tokio::test]
async fn a_router_returning_a_label_outside_its_path_map_is_an_error_naming_it() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_edge(START, "a")
        .add_conditional_edges_mapped("a", |_: &Log| "maybe", [("yes", END), ("no", END)]);
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::UnknownRouteLabel { from, label, labels }
            if from == "a" && label == "maybe" && labels == &["yes", "no"]),
        "{err}"
    );
}

#[tokio::test]
async fn a_recursion_limit_of_zero_is_refused_not_raised_to_one() {
    let mut g = StateGraph::<Log>::new();
    g.add_node("a", mark("a"))
        .add_edge(START, "a")
        .add_edge("a", END);
    let graph = g.compile().unwrap();
    let err = graph
        .invoke_with(LogUpdate::new(), RunConfig::new().recursion_limit(0))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRunConfig(m) if m.contains("recursion_limit(0)")),
        "{err}"
    );
    let err = graph
        .invoke_with(LogUpdate::new(), RunConfig::new().max_concurrency(0))
        .await
        .unwrap_err();
    assert!(matches!(&err, Error::InvalidRunConfig(_)), "{err}");
}

#[tokio::test]
async fn two_overwrites_of_one_list_in_one_step_fail_the_run_naming_both_writers() {
    use graphkit::AppendUpdate;
    let replace = |name: &'static str| {
        move |_: Arc<Log>| async move {
            LogUpdate::new().seen(AppendUpdate::replace([name.to_string()]))
        }
    };
    let mut g = StateGraph::<Log>::new();
    g.add_node("left", replace("left"))
        .add_node("right", replace("right"))
        .add_edge(START, "left")
        .add_edge(START, "right");
    let err = run_to_error(g).await;
    assert!(
        matches!(&err, Error::SecondOverwrite { field: "seen", first, second }
            if first == "left" && second == "right"),
        "{err}"
    );
}

#[tokio::test]
async fn one_overwrite_of_a_list_in_a_step_wins_over_the_step_s_appends() {
    use graphkit::AppendUpdate;
    let mut g = StateGraph::<Log>::new();
    g.add_node("reset", |_: Arc<Log>| async {
        LogUpdate::new().seen(AppendUpdate::replace(["reset".to_string()]))
    })
    .add_node("zadd", mark("zadd"))
    .add_edge(START, "reset")
    .add_edge(START, "zadd");
    let out = g
        .compile()
        .unwrap()
        .invoke(LogUpdate::new().seen(vec!["before".to_string()]))
        .await
        .unwrap()
        .into_state();
    // `zadd` applies after `reset`, and its append is dropped, as one applied before would
    // be cleared.
    assert_eq!(out.seen, ["reset"]);
}

#[tokio::test]
async fn nodes_read_the_run_context_by_type_and_subgraphs_see_it_too() {
    use graphkit::RunContext;
    struct Greeting {
        text: &'static str,
    }
    struct Limit {
        max: u32,
    }
    let mut inner = StateGraph::<Log, Limit>::new();
    inner
        .add_node("inner", |_: Arc<Log>, limit: RunContext<Limit>| async move {
            LogUpdate::new().count(limit.max)
        })
        .add_edge(START, "inner")
        .add_edge("inner", END);
    let mut g = StateGraph::<Log, Greeting>::new();
    g.add_node(
        "greet",
        |_: Arc<Log>, greeting: RunContext<Greeting>| async move {
            LogUpdate::new().seen(vec![greeting.text.to_string()])
        },
    )
    .add_subgraph("sub", inner.compile().unwrap())
    .add_edge(START, "greet")
    .add_edge("greet", "sub")
    .add_edge("sub", END);
    let graph = g.compile().unwrap();
    let config = RunConfig::new()
        .with_context(Greeting { text: "hello" })
        .with_context(Limit { max: 7 });
    let out = graph
        .invoke_with(LogUpdate::new(), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(
        (out.seen.as_slice(), out.count),
        (&["hello".to_string()][..], 7)
    );

    let err = graph
        .invoke_with(
            LogUpdate::new(),
            RunConfig::new().with_context(Limit { max: 1 }),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("Greeting") && err.to_string().contains("with_context"),
        "{err}"
    );
}
