//! Subgraphs keep their own checkpoints in the parent's thread, under the namespace of
//! the task they run in: an interrupted or failed child resumes inside, without running
//! its finished nodes again; interrupts compiled into the child pause the parent; the
//! child's state and history are readable through the parent's thread; a later run of
//! the same subgraph node starts fresh. Every scenario runs on the in-memory saver, the
//! SQLite saver with the `sqlite` feature, and the PostgreSQL saver with the `postgres`
//! feature when `GRAPHKIT_TEST_POSTGRES_URL` names a server.

#![allow(clippy::unwrap_used)] // tests may unwrap: a panic is a failed test

use crate::backend_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use graphkit::checkpoint::{Checkpointer, InMemorySaver, ListOptions};
use graphkit::{
    Command, CompileOptions, CompiledGraph, END, Error, NodeContext, Resume, RunConfig, RunInput,
    START, Scoped, State, StateGraph,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Doc {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    rounds: u32,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Inner {
    #[reducer(append)]
    notes: Vec<String>,
}

/// How often each node ran (started), by name.
#[derive(Clone, Default)]
struct Runs(Arc<Mutex<HashMap<String, usize>>>);

impl Runs {
    fn hit(&self, node: &str) {
        *self.0.lock().unwrap().entry(node.to_owned()).or_default() += 1;
    }

    fn of(&self, node: &str) -> usize {
        self.0
            .lock()
            .unwrap()
            .get(node)
            .copied()
            .unwrap_or_default()
    }
}

/// A node that logs its name.
fn step(
    runs: &Runs,
    name: &'static str,
) -> impl Fn(Arc<Doc>) -> std::future::Ready<DocUpdate> + Send + Sync + 'static {
    let runs = runs.clone();
    move |_| {
        runs.hit(name);
        std::future::ready(DocUpdate::new().log(vec![name.to_owned()]))
    }
}

/// A node that asks `questions` in order and logs the answers.
fn ask(
    runs: &Runs,
    name: &'static str,
    questions: &'static [&'static str],
) -> impl Fn(NodeContext) -> std::future::Ready<Result<DocUpdate, Error>> + Send + Sync + 'static {
    let runs = runs.clone();
    move |ctx: NodeContext| {
        runs.hit(name);
        let answers: Result<Vec<String>, Error> =
            questions.iter().map(|q| ctx.interrupt_as(q)).collect();
        std::future::ready(answers.map(|a| DocUpdate::new().log(a)))
    }
}

/// The savers to run each scenario on (the SQLite file lives as long as the guard).
async fn savers() -> Vec<(
    &'static str,
    Arc<dyn Checkpointer>,
    Option<tempfile::TempDir>,
)> {
    #[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(unused_mut))]
    let mut savers: Vec<(
        &'static str,
        Arc<dyn Checkpointer>,
        Option<tempfile::TempDir>,
    )> = vec![("memory", Arc::new(InMemorySaver::new()), None)];
    #[cfg(feature = "sqlite")]
    {
        let dir = tempfile::tempdir().unwrap();
        let sqlite = graphkit::checkpoint::SqliteSaver::open(dir.path().join("checkpoints.db"))
            .await
            .unwrap();
        savers.push(("sqlite", Arc::new(sqlite), Some(dir)));
    }
    #[cfg(feature = "postgres")]
    if let Some(url) = backend_support::postgres_url() {
        let pg = graphkit::checkpoint::PostgresSaver::connect(&url)
            .await
            .unwrap();
        savers.push(("postgres", Arc::new(pg), None));
    }
    savers
}

fn with_saver(saver: &Arc<dyn Checkpointer>) -> CompileOptions {
    CompileOptions::new().checkpointer(Arc::clone(saver))
}

fn thread(backend: &str, test: &str) -> RunConfig {
    RunConfig::new().thread_id(backend_support::unique(&format!("{test}-{backend}")))
}

/// before → sub [c1 → ask → c2] → after
fn review_graph(
    runs: &Runs,
    questions: &'static [&'static str],
    saver: &Arc<dyn Checkpointer>,
) -> CompiledGraph<Doc> {
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("c1", step(runs, "c1"))
        .add_node("ask", ask(runs, "ask", questions))
        .add_node("c2", step(runs, "c2"))
        .add_edge(START, "c1")
        .add_edge("c1", "ask")
        .add_edge("ask", "c2");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_node("before", step(runs, "before"))
        .add_subgraph("sub", child.compile().unwrap())
        .add_node("after", step(runs, "after"))
        .add_edge(START, "before")
        .add_edge("before", "sub")
        .add_edge("sub", "after")
        .add_edge("after", END);
    parent.compile_with(with_saver(saver)).unwrap()
}

fn interrupted(result: Result<graphkit::Outcome<Doc>, Error>) -> Vec<graphkit::Interrupt> {
    match result {
        Ok(graphkit::Outcome::Paused(graphkit::Paused { interrupts, .. })) => interrupts,
        other => panic!("expected the run to pause, got {other:?}"),
    }
}

#[tokio::test]
async fn an_interrupted_child_resumes_inside_without_running_its_finished_nodes_again() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["ship it?"], &saver);
        let config = thread(backend, "child-interrupt");

        let paused = interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        assert_eq!(paused.len(), 1, "{backend}");
        assert_eq!(paused[0].node, "sub", "{backend}: the parent task pauses");
        assert_eq!(paused[0].payload, json!("ship it?"), "{backend}");

        // The parent shows where the child stands.
        let snapshot = graph.get_state_with_subgraphs(&config).await.unwrap();
        assert_eq!(snapshot.next, ["sub"], "{backend}");
        let task = &snapshot.tasks[0];
        let child = task.state.as_ref().expect("the child's checkpoint");
        assert_eq!(Some(&child.checkpoint_ns), task.checkpoint_ns.as_ref());
        assert!(child.checkpoint_ns.starts_with("sub:"), "{backend}");
        assert_eq!(child.next, ["ask"], "{backend}");
        assert_eq!(child.values["log"], json!(["before", "c1"]), "{backend}");
        assert_eq!(child.interrupts.len(), 1, "{backend}");
        assert_eq!(child.interrupts[0].node, "ask", "{backend}");
        // Plain get_state names the namespace but does not load the child.
        let plain = graph.get_state(&config).await.unwrap();
        assert_eq!(plain.tasks[0].checkpoint_ns, task.checkpoint_ns);
        assert!(plain.tasks[0].state.is_none());

        let done = graph
            .invoke_with(Command::<Doc>::resume("yes"), config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(
            done.log,
            ["before", "c1", "yes", "c2", "after"],
            "{backend}"
        );
        assert_eq!(runs.of("before"), 1, "{backend}");
        assert_eq!(runs.of("c1"), 1, "{backend}: c1 finished before the pause");
        assert_eq!(runs.of("ask"), 2, "{backend}: asked, then answered");
        assert_eq!(runs.of("c2"), 1, "{backend}");
        assert_eq!(runs.of("after"), 1, "{backend}");
        assert_eq!(graph.get_state(&config).await.unwrap().values.log, done.log);
    }
}

#[tokio::test]
async fn each_answer_reaches_the_child_once_when_a_child_node_asks_twice() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["first?", "second?"], &saver);
        let config = thread(backend, "two-questions");

        let paused = interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        assert_eq!(paused[0].payload, json!("first?"), "{backend}");
        let paused = interrupted(
            graph
                .invoke_with(Command::<Doc>::resume("one"), config.clone())
                .await,
        );
        assert_eq!(paused[0].payload, json!("second?"), "{backend}");
        // Resuming by the interrupt's id works as with a node of the parent.
        let by_id = Resume::by_id([(paused[0].id.clone(), "two")]);
        let done = graph
            .invoke_with(RunInput::Resume(by_id), config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(
            done.log,
            ["before", "c1", "one", "two", "c2", "after"],
            "{backend}"
        );
        assert_eq!((runs.of("c1"), runs.of("ask")), (1, 3), "{backend}");
    }
}

#[tokio::test]
async fn a_failed_child_resumes_at_the_node_that_failed() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let fail = Arc::new(AtomicBool::new(true));
        let mut child = StateGraph::<Doc>::new();
        let flaky = {
            let (runs, fail) = (runs.clone(), Arc::clone(&fail));
            move |_: Arc<Doc>| {
                runs.hit("flaky");
                let failing = fail.load(Ordering::SeqCst);
                async move {
                    if failing {
                        Err(std::io::Error::other("the service is down"))
                    } else {
                        Ok(DocUpdate::new().log(vec!["flaky".into()]))
                    }
                }
            }
        };
        child
            .add_node("c1", step(&runs, "c1"))
            .add_node("flaky", flaky)
            .add_node("c2", step(&runs, "c2"))
            .add_edge(START, "c1")
            .add_edge("c1", "flaky")
            .add_edge("flaky", "c2");
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph("sub", child.compile().unwrap())
            .add_node("after", step(&runs, "after"))
            .add_edge(START, "sub")
            .add_edge("sub", "after");
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let config = thread(backend, "child-failure");

        let failed = graph.invoke_with(DocUpdate::new(), config.clone()).await;
        assert!(
            matches!(&failed, Err(Error::NodeFailed { node, .. }) if node == "sub"),
            "{backend}: {failed:?}"
        );
        let snapshot = graph.get_state_with_subgraphs(&config).await.unwrap();
        let child = snapshot.tasks[0].state.as_ref().unwrap();
        assert_eq!(child.next, ["flaky"], "{backend}");
        assert!(
            child.tasks[0]
                .error
                .as_deref()
                .is_some_and(|e| e.contains("the service is down")),
            "{backend}: {:?}",
            child.tasks
        );

        fail.store(false, Ordering::SeqCst);
        let done = graph
            .invoke_with(RunInput::Continue, config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, ["c1", "flaky", "c2", "after"], "{backend}");
        assert_eq!(runs.of("c1"), 1, "{backend}: c1 is not run again");
        assert_eq!(runs.of("flaky"), 2, "{backend}");
    }
}

#[tokio::test]
async fn interrupts_compiled_into_the_child_pause_the_parent() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let mut child = StateGraph::<Doc>::new();
        child
            .add_node("c1", step(&runs, "c1"))
            .add_node("c2", step(&runs, "c2"))
            .add_node("c3", step(&runs, "c3"))
            .add_edge(START, "c1")
            .add_edge("c1", "c2")
            .add_edge("c2", "c3");
        let child = child
            .compile_with(
                CompileOptions::new()
                    .interrupt_before(["c2"])
                    .interrupt_after(["c2"]),
            )
            .unwrap();
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph("sub", child)
            .add_node("after", step(&runs, "after"))
            .add_edge(START, "sub")
            .add_edge("sub", "after");
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let config = thread(backend, "child-static");

        let paused = interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        assert_eq!(paused[0].node, "sub", "{backend}");
        let child = graph.get_state_with_subgraphs(&config).await.unwrap().tasks[0]
            .state
            .clone()
            .unwrap();
        assert_eq!(child.next, ["c2"], "{backend}");
        assert_eq!(child.interrupts[0].kind, graphkit::InterruptKind::Before);
        assert_eq!((runs.of("c1"), runs.of("c2")), (1, 0), "{backend}");

        // Continuing passes the breakpoint; the next one (after c2) pauses again.
        interrupted(graph.invoke_with(RunInput::Continue, config.clone()).await);
        let child = graph.get_state_with_subgraphs(&config).await.unwrap().tasks[0]
            .state
            .clone()
            .unwrap();
        assert_eq!(child.interrupts[0].kind, graphkit::InterruptKind::After);
        assert_eq!(child.next, ["c3"], "{backend}");
        assert_eq!((runs.of("c2"), runs.of("c3")), (1, 0), "{backend}");

        let done = graph
            .invoke_with(RunInput::Continue, config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, ["c1", "c2", "c3", "after"], "{backend}");
        for node in ["c1", "c2", "c3", "after"] {
            assert_eq!(runs.of(node), 1, "{backend}: {node}");
        }
    }
}

#[tokio::test]
async fn the_child_history_is_read_through_the_parent_thread() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["ok?"], &saver);
        let config = thread(backend, "child-history");
        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        let ns = graph.get_state(&config).await.unwrap().tasks[0]
            .checkpoint_ns
            .clone()
            .unwrap();
        graph
            .invoke_with(Command::<Doc>::resume("fine"), config.clone())
            .await
            .unwrap()
            .into_state();

        let history = graph
            .get_subgraph_state_history(&config, &ns, &ListOptions::default())
            .await
            .unwrap();
        // Newest first: the child's input, then one checkpoint per child step.
        let steps: Vec<i64> = history.iter().map(|s| s.step).collect();
        assert_eq!(steps, [3, 2, 1, 0], "{backend}");
        let nexts: Vec<Vec<String>> = history.iter().map(|s| s.next.clone()).collect();
        assert_eq!(
            nexts,
            [
                vec![],
                vec!["c2".to_owned()],
                vec!["ask".into()],
                vec!["c1".into()]
            ],
            "{backend}"
        );
        assert_eq!(
            history[0].values["log"],
            json!(["before", "c1", "fine", "c2"]),
            "{backend}"
        );
        assert!(history.iter().all(|s| s.checkpoint_ns == ns));
        // The child's input saved no (empty) update.
        assert_eq!(history[3].metadata["writes"], json!([]), "{backend}");
        // The parent's own history is unchanged by the child's checkpoints.
        let parent = graph
            .get_state_history(&config, &ListOptions::default())
            .await
            .unwrap();
        assert!(parent.iter().all(|s| s.checkpoint_ns.is_empty()));
        assert_eq!(
            parent[0].values.log,
            history[0].values["log"]
                .as_array()
                .map(|l| {
                    let mut log: Vec<String> =
                        l.iter().map(|v| v.as_str().unwrap().to_owned()).collect();
                    log.push("after".into());
                    log
                })
                .unwrap()
        );

        let wrong = graph
            .get_subgraph_state_history(&config, "before:0", &ListOptions::default())
            .await;
        assert!(
            matches!(&wrong, Err(Error::NotASubgraph { node, .. }) if node == "before"),
            "{wrong:?}"
        );
    }
}

#[tokio::test]
async fn a_later_run_of_the_same_subgraph_node_starts_fresh() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let mut child = StateGraph::<Doc>::new();
        child
            .add_node("c1", step(&runs, "c1"))
            .add_node("ask", ask(&runs, "ask", &["again?"]))
            .add_edge(START, "c1")
            .add_edge("c1", "ask");
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph("sub", child.compile().unwrap())
            .add_node("count", |_: Arc<Doc>| async { DocUpdate::new().rounds(1) })
            .add_edge(START, "sub")
            .add_edge("sub", "count")
            .add_conditional_edges(
                "count",
                |d: &Doc| if d.rounds < 2 { "sub" } else { END },
                ["sub", END],
            );
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let config = thread(backend, "fresh-again");

        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        // The second run of `sub` asks again rather than reusing the first answer.
        let paused = interrupted(
            graph
                .invoke_with(Command::<Doc>::resume("a"), config.clone())
                .await,
        );
        assert_eq!(paused[0].payload, json!("again?"), "{backend}");
        let done = graph
            .invoke_with(Command::<Doc>::resume("b"), config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, ["c1", "a", "c1", "b"], "{backend}");
        assert_eq!((runs.of("c1"), runs.of("ask")), (2, 4), "{backend}");
    }
}

#[tokio::test]
async fn nested_and_mapped_subgraphs_resume_at_the_innermost_node() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let inner_step = |name: &'static str| {
            let runs = runs.clone();
            move |_: Arc<Inner>| {
                runs.hit(name);
                std::future::ready(InnerUpdate::new().notes(vec![name.to_owned()]))
            }
        };
        let asker = {
            let runs = runs.clone();
            move |ctx: NodeContext| {
                runs.hit("deep_ask");
                std::future::ready(
                    ctx.interrupt_as::<String>("deep?")
                        .map(|a| InnerUpdate::new().notes(vec![a])),
                )
            }
        };
        let mut deepest = StateGraph::<Inner>::new();
        deepest
            .add_node("d1", inner_step("d1"))
            .add_node("deep_ask", asker)
            .add_edge(START, "d1")
            .add_edge("d1", "deep_ask");
        let mut middle = StateGraph::<Inner>::new();
        middle
            .add_node("m1", inner_step("m1"))
            .add_subgraph("deep", deepest.compile().unwrap())
            .add_edge(START, "m1")
            .add_edge("m1", "deep");
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph_mapped(
                "mid",
                middle.compile().unwrap(),
                |_: &Doc| InnerUpdate::new(),
                |i: &Inner| DocUpdate::new().log(i.notes.clone()),
            )
            .add_edge(START, "mid");
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let config = thread(backend, "nested");

        let paused = interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        assert_eq!(
            (paused[0].node.as_str(), &paused[0].payload),
            ("mid", &json!("deep?"))
        );
        let snapshot = graph.get_state_with_subgraphs(&config).await.unwrap();
        let mid = snapshot.tasks[0].state.as_ref().unwrap();
        assert_eq!(mid.next, ["deep"], "{backend}");
        let deep = mid.tasks[0].state.as_ref().unwrap();
        assert_eq!(deep.next, ["deep_ask"], "{backend}");
        assert_eq!(deep.values["notes"], json!(["m1", "d1"]), "{backend}");
        let deep_ns = mid.tasks[0].checkpoint_ns.clone().unwrap();
        assert!(deep_ns.starts_with(&format!("{}|deep:", mid.checkpoint_ns)));
        let deep_history = graph
            .get_subgraph_state_history(&config, &deep_ns, &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(deep_history[0].next, ["deep_ask"], "{backend}");

        let done = graph
            .invoke_with(Command::<Doc>::resume("deep answer"), config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, ["m1", "d1", "deep answer"], "{backend}");
        assert_eq!(
            (runs.of("m1"), runs.of("d1"), runs.of("deep_ask")),
            (1, 1, 2),
            "{backend}"
        );
    }
}

#[tokio::test]
async fn a_command_to_the_parent_from_a_checkpointed_child_still_routes_in_the_parent() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let mut child = StateGraph::<Doc>::new();
        child
            .add_node("c1", step(&runs, "c1"))
            .add_node("escalate", |_: Arc<Doc>| async {
                Command::<Doc>::new()
                    .update(DocUpdate::new().log(vec!["escalated".into()]))
                    .goto("human")
                    .to_parent()
            })
            .add_edge(START, "c1")
            .add_edge("c1", "escalate");
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph("sub", child.compile().unwrap())
            .add_node("human", step(&runs, "human"))
            .add_edge(START, "sub");
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let done = graph
            .invoke_with(DocUpdate::new(), thread(backend, "to-parent"))
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, ["escalated", "human"], "{backend}");
    }
}

#[tokio::test]
async fn without_a_checkpointer_a_subgraph_runs_as_before() {
    let runs = Runs::default();
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("c1", step(&runs, "c1"))
        .add_node("c2", step(&runs, "c2"))
        .add_edge(START, "c1")
        .add_edge("c1", "c2");
    // Compiled breakpoints need checkpoints; without them the child runs through.
    let child = child
        .compile_with(CompileOptions::new().interrupt_before(["c2"]))
        .unwrap();
    let mut parent = StateGraph::<Doc>::new();
    parent.add_subgraph("sub", child).add_edge(START, "sub");
    let done = parent
        .compile()
        .unwrap()
        .invoke(DocUpdate::new())
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["c1", "c2"]);
}

#[tokio::test]
async fn a_resume_that_also_updates_the_parent_still_resumes_inside_the_child() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["ship it?"], &saver);
        let config = thread(backend, "resume-with-update");
        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        let ns = graph.get_state(&config).await.unwrap().tasks[0]
            .checkpoint_ns
            .clone();

        // The update moves the pending step to a new checkpoint; the child keeps its
        // namespace, so it continues where it stopped.
        let command = Command::<Doc>::resume("yes").update(DocUpdate::new().rounds(7));
        let done = graph
            .invoke_with(command, config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(
            done.log,
            ["before", "c1", "yes", "c2", "after"],
            "{backend}"
        );
        assert_eq!(done.rounds, 7, "{backend}");
        assert_eq!((runs.of("c1"), runs.of("ask")), (1, 2), "{backend}");
        let history = graph
            .get_subgraph_state_history(&config, ns.as_deref().unwrap(), &ListOptions::default())
            .await
            .unwrap();
        assert_eq!(history[0].next, Vec::<String>::new(), "{backend}");
    }
}

#[tokio::test]
async fn a_child_resumed_after_a_full_snapshot_hands_every_write_to_the_parent_once() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        // Big writes make the child's checkpoints full snapshots rather than deltas.
        let big = "x".repeat(40 * 1024);
        let mut child = StateGraph::<Doc>::new();
        let write_big = {
            let big = big.clone();
            move |_: Arc<Doc>| std::future::ready(DocUpdate::new().log(vec![big.clone()]))
        };
        child
            .add_node("big1", write_big.clone())
            .add_node("big2", write_big)
            .add_node("ask", ask(&runs, "ask", &["go on?"]))
            .add_edge(START, "big1")
            .add_edge("big1", "big2")
            .add_edge("big2", "ask");
        let mut parent = StateGraph::<Doc>::new();
        parent
            .add_subgraph("sub", child.compile().unwrap())
            .add_edge(START, "sub");
        let graph = parent.compile_with(with_saver(&saver)).unwrap();
        let config = thread(backend, "snapshot-child");

        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        let done = graph
            .invoke_with(Command::<Doc>::resume("yes"), config.clone())
            .await
            .unwrap()
            .into_state();
        assert_eq!(done.log, [big.as_str(), big.as_str(), "yes"], "{backend}");
    }
}

#[tokio::test]
async fn with_async_durability_the_child_resumes_inside_too() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let graph = review_graph(&runs, &["ok?"], &saver);
    let config = thread("memory", "async-durability").durability(graphkit::Durability::Async);
    interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
    let done = graph
        .invoke_with(Command::<Doc>::resume("ok"), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["before", "c1", "ok", "c2", "after"]);
    assert_eq!((runs.of("c1"), runs.of("ask")), (1, 2));
}

#[tokio::test]
async fn with_exit_durability_a_resumed_child_runs_again_from_its_start() {
    // Nothing is saved while the run goes, so the child has no checkpoints to resume
    // from: as before, it runs again as a whole.
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let graph = review_graph(&runs, &["ok?"], &saver);
    let config = thread("memory", "exit-durability").durability(graphkit::Durability::Exit);
    interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
    assert!(
        graph.get_state_with_subgraphs(&config).await.unwrap().tasks[0]
            .state
            .is_none()
    );
    let done = graph
        .invoke_with(Command::<Doc>::resume("ok"), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["before", "c1", "ok", "c2", "after"]);
    assert_eq!((runs.of("c1"), runs.of("ask")), (2, 2));
}

/// (namespace, node, update) of the updates a stream carried, the child's as JSON.
async fn streamed_updates(
    graph: &CompiledGraph<Doc>,
    input: impl Into<RunInput<Doc>>,
    config: RunConfig,
) -> Vec<(Vec<String>, String, serde_json::Value)> {
    use futures::StreamExt;
    use graphkit::{StreamMode, StreamPayload};
    let mut events = graph.stream_with(input, config.subgraphs(true), [StreamMode::Updates]);
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let Ok(event) = event else { break };
        let ns: Vec<String> = event.namespace.iter().map(|s| s.to_string()).collect();
        match event.payload {
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } => {
                seen.push((ns, node.to_string(), serde_json::to_value(update).unwrap()));
            }
            StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(update),
                ..
            } => {
                seen.push((ns, node.to_string(), update));
            }
            _ => {}
        }
    }
    seen
}

#[tokio::test]
async fn a_checkpointed_child_streams_under_its_namespace_without_an_empty_input_update() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let graph = review_graph(&runs, &["ok?"], &saver);
    let config = thread("memory", "streaming");

    let first = streamed_updates(&graph, DocUpdate::new(), config.clone()).await;
    let nodes: Vec<(&[String], &str)> = first
        .iter()
        .map(|(ns, node, _)| (ns.as_slice(), node.as_str()))
        .collect();
    assert_eq!(
        nodes,
        [
            (&[] as &[String], "before"),
            (&["sub:2".to_owned()][..], "c1")
        ]
    );
    // Resumed: the child's next nodes stream under the subgraph node's namespace, and
    // the parent gets the child's writes (c1's too) as the subgraph node's update.
    let resumed = streamed_updates(&graph, Command::<Doc>::resume("ok"), config).await;
    let child: Vec<&str> = resumed
        .iter()
        .filter(|(ns, _, _)| ns.len() == 1 && ns[0].starts_with("sub:"))
        .map(|(_, node, _)| node.as_str())
        .collect();
    assert_eq!(child, ["ask", "c2"]);
    let parent: Vec<&str> = resumed
        .iter()
        .filter(|(ns, _, _)| ns.is_empty())
        .map(|(_, node, _)| node.as_str())
        .collect();
    assert_eq!(parent, ["sub", "sub", "sub", "after"]);
    let empty = serde_json::to_value(DocUpdate::new()).unwrap();
    assert!(
        first
            .iter()
            .chain(&resumed)
            .all(|(_, _, update)| update != &empty),
        "no empty update: {resumed:?}"
    );
}

#[tokio::test]
async fn parallel_interrupts_in_a_child_are_answered_one_after_the_other() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let mut child = StateGraph::<Doc>::new();
    child
        .add_node("q1", ask(&runs, "q1", &["first?"]))
        .add_node("q2", ask(&runs, "q2", &["second?"]))
        .add_edge(START, "q1")
        .add_edge(START, "q2");
    let mut parent = StateGraph::<Doc>::new();
    parent
        .add_subgraph("sub", child.compile().unwrap())
        .add_edge(START, "sub");
    let graph = parent.compile_with(with_saver(&saver)).unwrap();
    let config = thread("memory", "parallel-child");

    // The parent shows the child's first paused task; the other waits its turn.
    let paused = interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].payload, json!("first?"));
    let child = graph.get_state_with_subgraphs(&config).await.unwrap().tasks[0]
        .state
        .clone()
        .unwrap();
    assert_eq!(child.interrupts.len(), 2);

    let paused = interrupted(
        graph
            .invoke_with(Command::<Doc>::resume("one"), config.clone())
            .await,
    );
    assert_eq!(paused[0].payload, json!("second?"));
    let done = graph
        .invoke_with(Command::<Doc>::resume("two"), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["one", "two"]);
    // q1 asked, then finished with its answer (its output was saved while q2 paused).
    assert_eq!((runs.of("q1"), runs.of("q2")), (2, 3));
}

#[tokio::test]
async fn the_childs_own_state_is_edited_while_the_run_is_paused_inside_it() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["ship it?"], &saver);
        let config = thread(backend, "child-edit");
        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        let ns = graph.get_state(&config).await.unwrap().tasks[0]
            .checkpoint_ns
            .clone()
            .expect("the subgraph task's namespace");

        // As the child's `ask` node: its answer is the edit, and `c2` is next in the child.
        let edited = graph
            .update_subgraph_state(&config, &ns, json!({"log": ["edited"]}), "ask")
            .await
            .unwrap();
        let child = graph.get_state_with_subgraphs(&config).await.unwrap().tasks[0]
            .state
            .clone()
            .expect("the child's state");
        assert_eq!(child.checkpoint_id, edited, "{backend}");
        assert_eq!(
            child.values["log"],
            json!(["before", "c1", "edited"]),
            "{backend}"
        );
        assert_eq!(child.next, ["c2"], "{backend}");
        assert!(child.interrupts.is_empty(), "{backend}");

        let done = graph
            .invoke_with(RunInput::Continue, config.clone())
            .await
            .unwrap()
            .finished()
            .unwrap();
        assert_eq!(
            done.log,
            ["before", "c1", "edited", "c2", "after"],
            "{backend}"
        );
        assert_eq!(
            runs.of("ask"),
            1,
            "{backend}: the edit answered in its place"
        );
        assert_eq!(runs.of("c1"), 1, "{backend}");
    }
}

#[tokio::test]
async fn a_child_edit_must_be_the_childs_update_and_name_a_subgraph() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let runs = Runs::default();
    let graph = review_graph(&runs, &["ship it?"], &saver);
    let config = thread("memory", "child-edit-errors");
    interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
    let ns = graph.get_state(&config).await.unwrap().tasks[0]
        .checkpoint_ns
        .clone()
        .unwrap();
    let wrong_type = graph
        .update_subgraph_state(&config, &ns, json!({"log": 3}), "ask")
        .await;
    assert!(
        matches!(wrong_type, Err(Error::Serde { .. })),
        "{wrong_type:?}"
    );
    let not_a_child = graph
        .update_subgraph_state(&config, "before:x", json!({}), "ask")
        .await;
    assert!(
        matches!(not_a_child, Err(Error::NotASubgraph { .. })),
        "{not_a_child:?}"
    );
    let unknown_node = graph
        .update_subgraph_state(&config, &ns, json!({}), "nope")
        .await;
    assert!(
        matches!(unknown_node, Err(Error::UnknownNode { .. })),
        "{unknown_node:?}"
    );
    // Nothing was written: the run still resumes as before.
    let done = graph
        .invoke_with(Command::<Doc>::resume("yes"), config)
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.log, ["before", "c1", "yes", "c2", "after"]);
}

#[tokio::test]
async fn deleting_a_run_removes_its_checkpoints_in_the_childs_namespace_too() {
    for (backend, saver, _guard) in savers().await {
        let runs = Runs::default();
        let graph = review_graph(&runs, &["ok?"], &saver);
        let config = thread(backend, "delete-run").with_checkpoint_metadata("run_id", "run-1");
        interrupted(graph.invoke_with(DocUpdate::new(), config.clone()).await);
        let ns = graph.get_state(&config).await.unwrap().tasks[0]
            .checkpoint_ns
            .clone()
            .unwrap();
        let thread_id = config.thread_id.clone().unwrap();
        let child = |saver: Arc<dyn Checkpointer>, thread_id: String, ns: String| async move {
            saver
                .list(&thread_id, &ns, &ListOptions::default())
                .await
                .unwrap()
        };
        let saved = child(Arc::clone(&saver), thread_id.clone(), ns.clone()).await;
        assert!(!saved.is_empty(), "{backend}: the child saved checkpoints");
        assert!(
            saved.iter().all(|c| c.metadata["run_id"] == "run-1"),
            "{backend}: the child's checkpoints carry the run's metadata"
        );
        let deleted = saver.delete_run(&thread_id, "run-1").await.unwrap();
        assert!(deleted > saved.len() as u64, "{backend}: parent and child");
        assert!(
            child(Arc::clone(&saver), thread_id.clone(), ns)
                .await
                .is_empty(),
            "{backend}: no checkpoint of the run is left in the child's namespace"
        );
        assert!(
            child(saver, thread_id, String::new()).await.is_empty(),
            "{backend}"
        );
    }
}
