//! The functional API: an entrypoint calling tasks, whose finished results are saved and
//! not computed again when the entrypoint re-runs (after an interrupt, a failure, or a
//! process killed with SIGKILL), with `previous` and `Final`, concurrent tasks,
//! streaming, and an entrypoint as a node of a graph.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use graphkit::checkpoint::InMemorySaver;
use graphkit::func::{self, Entrypoint, EntrypointContext, EntrypointUpdate, Final};
use graphkit::streaming::{Scoped, StreamPayload};
use graphkit::{Command, END, Error, RunConfig, RunInput, START, State, StateGraph, StreamMode};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Counts the runs of each task of a test.
#[derive(Default, Debug)]
struct Runs {
    one: AtomicUsize,
    two: AtomicUsize,
    three: AtomicUsize,
}

impl Runs {
    fn counts(&self) -> [usize; 3] {
        [&self.one, &self.two, &self.three].map(|c| c.load(Ordering::SeqCst))
    }
}

fn thread(id: &str) -> RunConfig {
    RunConfig::new().thread_id(id)
}

/// one(n) = n + 1, two = one * 10, an approval asked by the entrypoint itself, then
/// three = two + 3.
fn approve_between_tasks(runs: Arc<Runs>) -> Entrypoint<u64, u64> {
    func::entrypoint("pipeline", move |n: u64, ctx: EntrypointContext<u64>| {
        let runs = Arc::clone(&runs);
        async move {
            let r = Arc::clone(&runs);
            let one = ctx
                .task("one", move |_| async move {
                    r.one.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(n + 1)
                })
                .await?;
            let r = Arc::clone(&runs);
            let two = ctx
                .task("two", move |_| async move {
                    r.two.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(one * 10)
                })
                .await?;
            let approved: bool = ctx.interrupt_as(json!({ "approve": two }))?;
            let r = Arc::clone(&runs);
            let three = ctx
                .task("three", move |_| async move {
                    r.three.fetch_add(1, Ordering::SeqCst);
                    Ok::<_, Error>(if approved { two + 3 } else { 0 })
                })
                .await?;
            Ok::<_, Error>(three)
        }
    })
    .expect("a valid entrypoint")
    .with_checkpointer(Arc::new(InMemorySaver::new()))
}

#[tokio::test]
async fn finished_tasks_are_not_run_again_when_an_interrupted_entrypoint_resumes() {
    let runs = Arc::new(Runs::default());
    let workflow = approve_between_tasks(Arc::clone(&runs));

    let paused = workflow.invoke_with(4, thread("t")).await.unwrap();
    assert!(paused.is_paused());
    assert_eq!(paused.interrupts()[0].payload, json!({ "approve": 50 }));
    assert_eq!(runs.counts(), [1, 1, 0]);

    let done = workflow
        .invoke_with(Command::resume(true), thread("t"))
        .await
        .unwrap();
    assert_eq!(done.into_state().into_output(), Some(53));
    assert_eq!(
        runs.counts(),
        [1, 1, 1],
        "one and two returned their saved results"
    );
}

#[tokio::test]
async fn a_new_input_on_the_thread_runs_every_task_again() {
    let runs = Arc::new(Runs::default());
    let workflow = approve_between_tasks(Arc::clone(&runs));
    let first = workflow.invoke_with(4, thread("t")).await.unwrap();
    assert!(first.is_paused());
    let resumed = workflow
        .invoke_with(Command::resume(true), thread("t"))
        .await
        .unwrap();
    assert!(resumed.is_finished());

    let second = workflow.invoke_with(5, thread("t")).await.unwrap();
    assert!(second.is_paused());
    let done = workflow
        .invoke_with(Command::resume(false), thread("t"))
        .await
        .unwrap();
    assert_eq!(done.into_state().into_output(), Some(0));
    assert_eq!(runs.counts(), [2, 2, 2]);
}

/// Two tasks that each ask a question; a task that prepares before them.
fn two_questions(runs: Arc<Runs>) -> Entrypoint<String, Vec<String>> {
    func::entrypoint(
        "survey",
        move |topic: String, ctx: EntrypointContext<Vec<String>>| {
            let runs = Arc::clone(&runs);
            async move {
                let r = Arc::clone(&runs);
                let intro = ctx
                    .task("prepare", move |_| async move {
                        r.one.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, Error>(format!("about {topic}"))
                    })
                    .await?;
                let mut answers = vec![intro];
                for (question, counter) in [("name?", 1), ("colour?", 2)] {
                    let r = Arc::clone(&runs);
                    let answer = ctx
                        .task("ask", move |task| async move {
                            let answer: String = task.interrupt_as(question)?;
                            let runs = if counter == 1 { &r.two } else { &r.three };
                            runs.fetch_add(1, Ordering::SeqCst);
                            Ok::<_, Error>(answer)
                        })
                        .await?;
                    answers.push(answer);
                }
                Ok::<_, Error>(answers)
            }
        },
    )
    .expect("a valid entrypoint")
    .with_checkpointer(Arc::new(InMemorySaver::new()))
}

#[tokio::test]
async fn an_interrupt_inside_a_task_is_answered_to_that_task() {
    let runs = Arc::new(Runs::default());
    let survey = two_questions(Arc::clone(&runs));

    let first = survey
        .invoke_with("tea".to_owned(), thread("s"))
        .await
        .unwrap();
    assert_eq!(first.interrupts()[0].payload, json!("name?"));
    let second = survey
        .invoke_with(Command::resume("Ada"), thread("s"))
        .await
        .unwrap();
    assert_eq!(second.interrupts()[0].payload, json!("colour?"));
    // The first `ask` finished with its answer; the second asks its own question, and
    // the next resume value is its answer, not the first task's again.
    let done = survey
        .invoke_with(Command::resume("green"), thread("s"))
        .await
        .unwrap();
    assert_eq!(
        done.into_state().into_output(),
        Some(vec![
            "about tea".to_owned(),
            "Ada".to_owned(),
            "green".to_owned()
        ])
    );
    assert_eq!(runs.counts(), [1, 1, 1], "each task finished once");
}

#[tokio::test]
async fn previous_is_what_the_last_invocation_on_the_thread_returned() {
    let counter = func::entrypoint(
        "count",
        |step: u32, ctx: EntrypointContext<u32>| async move {
            Ok::<_, Error>(ctx.previous().copied().unwrap_or(0) + step)
        },
    )
    .unwrap()
    .with_checkpointer(Arc::new(InMemorySaver::new()));

    let mut totals = Vec::new();
    for step in [1, 2, 3] {
        let out = counter.invoke_with(step, thread("c")).await.unwrap();
        totals.push(out.into_state().into_output().unwrap());
    }
    assert_eq!(totals, [1, 3, 6]);
    let other = counter.invoke_with(10, thread("other")).await.unwrap();
    assert_eq!(
        other.into_state().into_output(),
        Some(10),
        "threads keep their own"
    );
}

#[tokio::test]
async fn final_returns_one_value_and_saves_another_for_the_next_invocation() {
    let history = func::entrypoint_final(
        "history",
        |word: String, ctx: EntrypointContext<Vec<String>>| async move {
            let mut seen = ctx.previous().cloned().unwrap_or_default();
            let count = seen.len();
            seen.push(word);
            Ok::<_, Error>(Final::new(count, seen))
        },
    )
    .unwrap()
    .with_checkpointer(Arc::new(InMemorySaver::new()));

    let first = history
        .invoke_with("a".to_owned(), thread("h"))
        .await
        .unwrap();
    assert_eq!(first.into_state().output, Some(0));
    let second = history
        .invoke_with("b".to_owned(), thread("h"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(second.output, Some(1), "the returned value");
    assert_eq!(second.saved, Some(vec!["a".to_owned(), "b".to_owned()]));
    let state = history.get_state(&thread("h")).await.unwrap();
    assert_eq!(state.values.saved.map(|s| s.len()), Some(2));
}

#[tokio::test]
async fn tasks_called_before_any_is_awaited_run_concurrently() {
    // `first` can only finish once `second` ran: awaiting `first` alone would wait for
    // ever if `second` started only when awaited.
    let workflow = func::entrypoint(
        "pair",
        |_: (), ctx: EntrypointContext<(u8, u8)>| async move {
            let (tx, rx) = tokio::sync::oneshot::channel::<u8>();
            let first = ctx.task("first", move |_| async move {
                let from_second = rx.await.map_err(|e| Error::Runtime(e.to_string()))?;
                Ok::<_, Error>(from_second + 1)
            });
            let second = ctx.task("second", move |_| async move {
                let _ = tx.send(41);
                Ok::<_, Error>(2)
            });
            Ok::<_, Error>((first.await?, second.await?))
        },
    )
    .unwrap();
    assert_eq!(
        workflow
            .invoke(())
            .await
            .unwrap()
            .into_state()
            .into_output(),
        Some((42, 2))
    );
}

#[tokio::test]
async fn concurrent_tasks_that_finished_are_kept_when_a_sibling_fails() {
    let runs = Arc::new(Runs::default());
    let flaky_failed = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let failed = Arc::clone(&flaky_failed);
    let workflow = func::entrypoint("fan", move |n: u32, ctx: EntrypointContext<u32>| {
        let (runs, failed) = (Arc::clone(&r), Arc::clone(&failed));
        async move {
            let r = Arc::clone(&runs);
            let steady = ctx.task("steady", move |_| async move {
                r.one.fetch_add(1, Ordering::SeqCst);
                Ok::<_, Error>(n)
            });
            let r = Arc::clone(&runs);
            let flaky = ctx.task("flaky", move |_| async move {
                r.two.fetch_add(1, Ordering::SeqCst);
                if failed.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(Error::Runtime("the first call fails".into()));
                }
                Ok(n * 100)
            });
            let steady = steady.await?;
            Ok::<_, Error>(steady + flaky.await?)
        }
    })
    .unwrap()
    .with_checkpointer(Arc::new(InMemorySaver::new()));

    let error = workflow.invoke_with(3, thread("f")).await.unwrap_err();
    assert!(
        error.to_string().contains("task `flaky#0` failed"),
        "{error}"
    );
    let done = workflow
        .invoke_with(RunInput::Continue, thread("f"))
        .await
        .unwrap();
    assert_eq!(done.into_state().into_output(), Some(303));
    assert_eq!(runs.counts(), [1, 2, 0], "steady ran once, flaky twice");
}

#[tokio::test]
async fn an_entrypoint_streams_task_updates_custom_events_and_values() {
    let workflow = func::entrypoint(
        "shout",
        |text: String, ctx: EntrypointContext<String>| async move {
            let upper = ctx
                .task("upper", move |task| async move {
                    task.writer().custom(json!({ "progress": "uppercasing" }));
                    Ok::<_, Error>(text.to_uppercase())
                })
                .await?;
            Ok::<_, Error>(format!("{upper}!"))
        },
    )
    .unwrap();
    let events: Vec<_> = workflow
        .stream(
            "hi".to_owned(),
            [StreamMode::Updates, StreamMode::Custom, StreamMode::Values],
        )
        .map(Result::unwrap)
        .collect()
        .await;
    let seen: Vec<String> = events
        .iter()
        .map(|e| match &e.payload {
            StreamPayload::Custom { node, payload } => format!("custom {node} {payload}"),
            StreamPayload::Updates {
                node,
                update: Scoped::Subgraph(update),
                ..
            } => format!("task {node} {update}"),
            StreamPayload::Updates {
                node,
                update: Scoped::Root(update),
                ..
            } => {
                format!("updates {node} {:?}", update.output)
            }
            StreamPayload::Values(Scoped::Root(state)) => format!("values {:?}", state.output),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "values None",
            r#"custom upper {"progress":"uppercasing"}"#,
            r#"task upper "HI""#,
            r#"updates shout Some("HI!")"#,
            r#"values Some("HI!")"#,
        ]
    );
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Article {
    topic: String,
    summary: String,
    #[reducer(append)]
    log: Vec<String>,
}

#[tokio::test]
async fn an_entrypoint_runs_as_a_node_of_a_graph() {
    let summarise = func::entrypoint(
        "summarise",
        |topic: String, ctx: EntrypointContext<String>| async move {
            let words = ctx
                .task("words", move |_| async move {
                    Ok::<_, Error>(topic.split_whitespace().count())
                })
                .await?;
            Ok::<_, Error>(format!("{words} words"))
        },
    )
    .unwrap();
    let mut graph = StateGraph::<Article>::new();
    graph
        .add_subgraph_mapped(
            "summarise",
            summarise,
            |s: &Article| EntrypointUpdate::input(s.topic.clone()),
            |done| ArticleUpdate::new().summary(done.output.clone().unwrap_or_default()),
        )
        .add_node("publish", |s: Arc<Article>| async move {
            ArticleUpdate::new().log(vec![format!("published: {}", s.summary)])
        })
        .add_edge(START, "summarise")
        .add_edge("summarise", "publish")
        .add_edge("publish", END);
    let out = graph
        .compile()
        .unwrap()
        .invoke(ArticleUpdate::new().topic("rust graphs in practice"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(out.log, ["published: 4 words"]);
}

#[tokio::test]
async fn an_entrypoint_pauses_inside_a_parent_graph_and_resumes_without_redoing_tasks() {
    let runs = Arc::new(Runs::default());
    let child = approve_between_tasks(Arc::clone(&runs));
    let mut graph = StateGraph::<Article>::new();
    graph
        .add_subgraph_mapped(
            "pipeline",
            child,
            |s: &Article| EntrypointUpdate::input(s.topic.len() as u64),
            |done| ArticleUpdate::new().summary(format!("{:?}", done.output)),
        )
        .add_edge(START, "pipeline")
        .add_edge("pipeline", END);
    let parent = graph
        .compile_with(graphkit::CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))
        .unwrap();

    let paused = parent
        .invoke_with(ArticleUpdate::new().topic("four"), thread("p"))
        .await
        .unwrap();
    assert!(paused.is_paused());
    let done = parent
        .invoke_with(Command::resume(true), thread("p"))
        .await
        .unwrap()
        .into_state();
    assert_eq!(done.summary, "Some(53)");
    assert_eq!(runs.counts(), [1, 1, 1]);
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Tally {
    #[reducer(add)]
    total: u32,
}

#[tokio::test]
async fn a_task_can_run_a_compiled_graph() {
    let mut adder = StateGraph::<Tally>::new();
    adder
        .add_node("add_ten", |_: Arc<Tally>| async {
            TallyUpdate::new().total(10)
        })
        .add_edge(START, "add_ten")
        .add_edge("add_ten", END);
    let adder = adder.compile().unwrap();
    let workflow = func::entrypoint("outer", move |n: u32, ctx: EntrypointContext<u32>| {
        let adder = adder.clone();
        async move {
            let total = ctx
                .task("add", move |task| async move {
                    let done = task
                        .invoke_graph(&adder, TallyUpdate::new().total(n))
                        .await?;
                    Ok::<_, Error>(done.total)
                })
                .await?;
            Ok::<_, Error>(total)
        }
    })
    .unwrap();
    assert_eq!(
        workflow.invoke(5).await.unwrap().into_state().into_output(),
        Some(15)
    );
}

#[tokio::test]
async fn a_task_called_inside_a_task_is_saved_too() {
    let runs = Arc::new(Runs::default());
    let r = Arc::clone(&runs);
    let workflow = func::entrypoint("nested", move |n: u32, ctx: EntrypointContext<u32>| {
        let runs = Arc::clone(&r);
        async move {
            let outer = ctx
                .task("outer", move |task| async move {
                    runs.one.fetch_add(1, Ordering::SeqCst);
                    assert_eq!(task.call(), "outer#0");
                    let r = Arc::clone(&runs);
                    let inner = task
                        .task("inner", move |inner| async move {
                            r.two.fetch_add(1, Ordering::SeqCst);
                            assert_eq!(inner.call(), "outer#0/inner#0");
                            Ok::<_, Error>(n * 2)
                        })
                        .await?;
                    Ok::<_, Error>(inner + 1)
                })
                .await?;
            let extra: u32 = ctx.interrupt_as("extra?")?;
            Ok::<_, Error>(outer + extra)
        }
    })
    .unwrap()
    .with_checkpointer(Arc::new(InMemorySaver::new()));

    let paused = workflow.invoke_with(5, thread("n")).await.unwrap();
    assert!(paused.is_paused());
    let done = workflow
        .invoke_with(Command::resume(100), thread("n"))
        .await
        .unwrap();
    assert_eq!(done.into_state().into_output(), Some(111));
    assert_eq!(runs.counts(), [1, 1, 0]);
}

#[tokio::test]
async fn with_exit_durability_tasks_run_again_after_a_pause_and_the_entrypoint_gets_its_answer() {
    let runs = Arc::new(Runs::default());
    let workflow = approve_between_tasks(Arc::clone(&runs));
    let exit = thread("x").durability(graphkit::Durability::Exit);

    let paused = workflow.invoke_with(4, exit.clone()).await.unwrap();
    assert!(paused.is_paused());
    let done = workflow
        .invoke_with(Command::resume(true), exit)
        .await
        .unwrap();
    assert_eq!(done.into_state().into_output(), Some(53));
    assert_eq!(
        runs.counts(),
        [2, 2, 1],
        "nothing is saved while an Exit run goes"
    );
}

#[tokio::test]
async fn without_a_checkpointer_tasks_run_and_interrupts_are_refused() {
    let workflow = func::entrypoint("ask", |_: (), ctx: EntrypointContext<String>| async move {
        let answer: String = ctx.interrupt_as("anyone?")?;
        Ok::<_, Error>(answer)
    })
    .unwrap();
    let error = workflow.invoke(()).await.unwrap_err();
    assert!(matches!(error, Error::NoCheckpointer(_)), "{error:?}");
}

#[cfg(feature = "sqlite")]
mod crash {
    //! A process killed with SIGKILL while its third task runs: a new run on the thread
    //! does not run the two tasks that finished.

    use std::io::{BufRead, BufReader};
    use std::path::{Path, PathBuf};
    use std::process::{Command as Process, Stdio};

    use super::*;
    use graphkit::checkpoint::SqliteSaver;

    const ROLE: &str = "GRAPHKIT_FUNC_CRASH_DB";

    /// one = n + 1, two = one * 10, three = two + 3; `three` prints `three-started` and
    /// hangs when `hang` is set. Each finished task appends its name to `log`.
    fn pipeline(log: PathBuf, hang: bool, runs: Arc<Runs>) -> Entrypoint<u64, u64> {
        func::entrypoint("pipeline", move |n: u64, ctx: EntrypointContext<u64>| {
            let (log, runs) = (log.clone(), Arc::clone(&runs));
            async move {
                let (l, r) = (log.clone(), Arc::clone(&runs));
                let one = ctx
                    .task("one", move |_| async move {
                        r.one.fetch_add(1, Ordering::SeqCst);
                        append(&l, "one");
                        Ok::<_, Error>(n + 1)
                    })
                    .await?;
                let (l, r) = (log.clone(), Arc::clone(&runs));
                let two = ctx
                    .task("two", move |_| async move {
                        r.two.fetch_add(1, Ordering::SeqCst);
                        append(&l, "two");
                        Ok::<_, Error>(one * 10)
                    })
                    .await?;
                let (l, r) = (log.clone(), Arc::clone(&runs));
                let three = ctx
                    .task("three", move |_| async move {
                        if hang {
                            println!("three-started");
                            std::future::pending::<()>().await;
                        }
                        r.three.fetch_add(1, Ordering::SeqCst);
                        append(&l, "three");
                        Ok::<_, Error>(two + 3)
                    })
                    .await?;
                Ok::<_, Error>(three)
            }
        })
        .expect("a valid entrypoint")
    }

    fn append(log: &Path, line: &str) {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the log");
        writeln!(file, "{line}").expect("write the log");
        file.sync_all().expect("sync the log");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tasks_finished_before_a_sigkill_are_not_run_again() {
        if let Ok(db) = std::env::var(ROLE) {
            // The child: run until killed inside `three`.
            let saver = Arc::new(SqliteSaver::open(&db).await.expect("open sqlite"));
            let log = PathBuf::from(format!("{db}.log"));
            let result = pipeline(log, true, Arc::default())
                .with_checkpointer(saver)
                .invoke_with(4, thread("crash"))
                .await;
            panic!("the run should have been killed, but it ended with {result:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("functional.sqlite");
        let log = PathBuf::from(format!("{}.log", db.display()));
        let mut child = Process::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "functional::crash::tasks_finished_before_a_sigkill_are_not_run_again",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // `three` starts only after `two`'s result was saved: wait for its line.
        let stdout = child.stdout.take().unwrap();
        let started = tokio::task::spawn_blocking(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                // (The test harness prints the test's name on the same line first.)
                .any(|line| line.ends_with("three-started"))
        })
        .await
        .unwrap();
        assert!(started, "the child ended before its third task started");
        child.kill().unwrap();
        child.wait().unwrap();

        let runs = Arc::new(Runs::default());
        let saver = Arc::new(SqliteSaver::open(&db).await.unwrap());
        let done = pipeline(log.clone(), false, Arc::clone(&runs))
            .with_checkpointer(saver)
            .invoke_with(RunInput::Continue, thread("crash"))
            .await
            .unwrap();
        assert_eq!(done.into_state().into_output(), Some(53));
        assert_eq!(runs.counts(), [0, 0, 1], "only `three` ran after the crash");
        let lines = std::fs::read_to_string(&log).unwrap();
        assert_eq!(lines.lines().collect::<Vec<_>>(), ["one", "two", "three"]);
    }
}
