//! Crash recovery: a run killed with SIGKILL mid-step resumes in a new process with the
//! same final state as an uninterrupted run, and no completed node runs twice. Also: a
//! second process is refused while the first holds the thread.
//!
//! Each test re-executes its own test binary as the child process (selected by an
//! environment variable), so parent and children share one graph definition.

#![cfg(any(feature = "sqlite", feature = "postgres"))]

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use graphkit::checkpoint::Checkpointer;
use graphkit::nodes::NodeOptions;
use graphkit::{CompileOptions, END, Error, RunConfig, RunInput, START, State, StateGraph};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Work {
    #[reducer(append)]
    done: Vec<String>,
    #[reducer(add)]
    total: u64,
}

const ROLE: &str = "GRAPHKIT_CRASH_ROLE";
const BACKEND: &str = "GRAPHKIT_CRASH_BACKEND";
const LOG: &str = "GRAPHKIT_CRASH_LOG";
const THREAD: &str = "GRAPHKIT_CRASH_THREAD";
/// How often each process of the concurrent-open test opens the shared file.
const OPEN_ROUNDS: usize = 10;

/// Appends `line` to the completion log (one line per finished node).
fn log_line(path: &Path, line: &str) {
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{line}");
        let _ = file.sync_all();
    }
}

fn read_log(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A node that adds `amount` to the total and its name to `done`, and logs its name to
/// `log` once it completed; with `hang`, it logs `{name}-started` (and prints it on its
/// own line of stdout) and hangs instead.
fn logging_node(
    name: &'static str,
    amount: u64,
    log: &Path,
    hang: bool,
) -> impl Fn(Arc<Work>) -> BoxFuture<'static, WorkUpdate> + Clone + Send + Sync + 'static {
    let log = log.to_path_buf();
    move |_: Arc<Work>| {
        let log = log.clone();
        Box::pin(async move {
            if hang {
                log_line(&log, &format!("{name}-started"));
                println!("{name}-started");
                tokio::time::sleep(Duration::from_secs(3600)).await;
            }
            log_line(&log, name);
            WorkUpdate::new().done(vec![name.to_string()]).total(amount)
        })
    }
}

/// Compiles `g`, with `saver` as its checkpointer if given.
fn compile(
    g: StateGraph<Work>,
    saver: Option<Arc<dyn Checkpointer>>,
) -> graphkit::CompiledGraph<Work> {
    let options = match saver {
        Some(saver) => CompileOptions::new().checkpointer(saver),
        None => CompileOptions::new(),
    };
    g.compile_with(options).expect("valid graph")
}

/// a → {b, slow} → join → c. `slow` hangs when `block` is set, so the run can be killed
/// while `b` has finished and `slow` has not.
fn graph(
    saver: Option<Arc<dyn Checkpointer>>,
    log: PathBuf,
    block: bool,
) -> graphkit::CompiledGraph<Work> {
    let mut g = StateGraph::<Work>::new();
    g.add_node("a", logging_node("a", 1, &log, false))
        .add_node("b", logging_node("b", 10, &log, false))
        .add_node("slow", logging_node("slow", 100, &log, block))
        .add_node("c", logging_node("c", 1000, &log, false))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "slow")
        .add_edge(["b", "slow"], "c")
        .add_edge("c", END);
    compile(g, saver)
}

/// a → sub [c1 → slow → c2] → z: the same graph with the hang inside a subgraph, so the
/// run can be killed after the child's `c1` finished and while its `slow` hangs.
fn subgraph_graph(
    saver: Option<Arc<dyn Checkpointer>>,
    log: PathBuf,
    block: bool,
) -> graphkit::CompiledGraph<Work> {
    let mut child = StateGraph::<Work>::new();
    child
        .add_node("c1", logging_node("c1", 10, &log, false))
        .add_node("slow", logging_node("slow", 100, &log, block))
        .add_node("c2", logging_node("c2", 1000, &log, false))
        .add_edge(START, "c1")
        .add_edge("c1", "slow")
        .add_edge("slow", "c2");
    let mut g = StateGraph::<Work>::new();
    g.add_node("a", logging_node("a", 1, &log, false))
        .add_subgraph("sub", child.compile().expect("valid child"))
        .add_node("z", logging_node("z", 10000, &log, false))
        .add_edge(START, "a")
        .add_edge("a", "sub")
        .add_edge("sub", "z")
        .add_edge("z", END);
    compile(g, saver)
}

/// a → {short, long}; long → slow; short → last, a deferred node: `short` triggers it in
/// step 2, and it waits for `slow` (step 3), which hangs when `block` is set, so the run
/// can be killed while `last` waits. Nothing else triggers `last`: if the wait were lost,
/// it would never run.
fn deferred_graph(
    saver: Option<Arc<dyn Checkpointer>>,
    log: PathBuf,
    block: bool,
) -> graphkit::CompiledGraph<Work> {
    let mut g = StateGraph::<Work>::new();
    g.add_node("a", logging_node("a", 1, &log, false))
        .add_node("short", logging_node("short", 10, &log, false))
        .add_node("long", logging_node("long", 100, &log, false))
        .add_node("slow", logging_node("slow", 1000, &log, block))
        .add_node_with(
            "last",
            logging_node("last", 10000, &log, false),
            NodeOptions::new().defer(),
        )
        .add_edge(START, "a")
        .add_edge("a", "short")
        .add_edge("a", "long")
        .add_edge("long", "slow")
        .add_edge("short", "last")
        .add_edge("slow", END)
        .add_edge("last", END);
    compile(g, saver)
}

async fn open_saver(backend: &str) -> Arc<dyn Checkpointer> {
    if let Some(path) = backend.strip_prefix("sqlite:") {
        #[cfg(feature = "sqlite")]
        return Arc::new(
            graphkit::checkpoint::SqliteSaver::open(path)
                .await
                .expect("open sqlite"),
        );
        #[cfg(not(feature = "sqlite"))]
        panic!("sqlite feature off: {path}");
    }
    if let Some(url) = backend.strip_prefix("postgres:") {
        #[cfg(feature = "postgres")]
        return Arc::new(
            graphkit::checkpoint::PostgresSaver::connect(url)
                .await
                .expect("connect postgres"),
        );
        #[cfg(not(feature = "postgres"))]
        panic!("postgres feature off: {url}");
    }
    panic!("unknown backend {backend}")
}

/// The child process: `run` starts the thread and hangs in `slow`; `resume` continues it
/// and prints the final state as JSON.
async fn child(role: &str) {
    let backend = std::env::var(BACKEND).expect("backend");
    let log = PathBuf::from(std::env::var(LOG).expect("log"));
    let thread = RunConfig::new().thread_id(std::env::var(THREAD).expect("thread"));
    let saver = open_saver(&backend).await;
    match role {
        "run" => {
            let result = graph(Some(saver), log, true)
                .invoke_with(WorkUpdate::new(), thread)
                .await;
            panic!("the run should have been killed, but it ended with {result:?}");
        }
        "sub-run" => {
            let result = subgraph_graph(Some(saver), log, true)
                .invoke_with(WorkUpdate::new(), thread)
                .await;
            panic!("the run should have been killed, but it ended with {result:?}");
        }
        "deferred-run" => {
            let result = deferred_graph(Some(saver), log, true)
                .invoke_with(WorkUpdate::new(), thread)
                .await;
            panic!("the run should have been killed, but it ended with {result:?}");
        }
        "resume" | "sub-resume" | "deferred-resume" => {
            let graph = match role {
                "resume" => graph(Some(saver), log, false),
                "sub-resume" => subgraph_graph(Some(saver), log, false),
                _ => deferred_graph(Some(saver), log, false),
            };
            let done = graph
                .invoke_with(RunInput::Continue, thread)
                .await
                .expect("resume")
                .into_state();
            println!("FINAL {}", serde_json::to_string(&done).expect("json"));
        }
        "open" => {
            // Several of these start at once on one new file, each opening and closing it
            // again and again: every open (create, WAL, migrate) must succeed, however it
            // overlaps with the others' opens, runs and closes.
            drop(saver);
            let thread_id = std::env::var(THREAD).expect("thread");
            for round in 0..OPEN_ROUNDS {
                let saver = open_saver(&backend).await;
                let config = RunConfig::new().thread_id(format!("{thread_id}-{round}"));
                let done = graph(Some(Arc::clone(&saver)), log.clone(), false)
                    .invoke_with(WorkUpdate::new(), config)
                    .await
                    .expect("run on a file other processes are opening")
                    .into_state();
                println!("FINAL {}", serde_json::to_string(&done).expect("json"));
            }
        }
        other => panic!("unknown role {other}"),
    }
}

fn spawn_child(
    test: &str,
    role: &str,
    backend: &str,
    log: &Path,
    thread: &str,
) -> std::process::Child {
    Process::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            &format!("crash_recovery::{test}"),
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(BACKEND, backend)
        .env(LOG, log)
        .env(THREAD, thread)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child")
}

/// Waits (bounded) until `ready` holds; this is synchronisation with the child, not timing.
async fn wait_until(what: &str, mut ready: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready().await {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn crash_and_resume(test: &str, backend: &str, dir: &Path) {
    let thread = format!("crash-{}-{}", std::process::id(), rand_suffix());
    let expected = graph(None, dir.join("reference.log"), false)
        .invoke(WorkUpdate::new())
        .await
        .expect("reference run")
        .into_state();

    let log = dir.join("completions.log");
    let mut first = spawn_child(test, "run", backend, &log, &thread);
    let saver = open_saver(backend).await;
    // Kill only once `b` finished (its write is saved) and `slow` is hanging.
    wait_until("b's pending write and slow's start", async || {
        let b_saved = match saver.get(&thread, "", None).await {
            Ok(Some(tuple)) => tuple.pending_writes.iter().any(|w| w.node == "b"),
            _ => false,
        };
        b_saved && read_log(&log).iter().any(|l| l == "slow-started")
    })
    .await;

    // While the first process holds the thread, a second run on it is refused.
    let busy = graph(Some(Arc::clone(&saver)), dir.join("busy.log"), false)
        .invoke_with(RunInput::Continue, RunConfig::new().thread_id(&thread))
        .await;
    assert!(
        matches!(&busy, Err(Error::ThreadBusy(t)) if *t == thread),
        "expected ThreadBusy, got {busy:?}"
    );

    first.kill().expect("SIGKILL the child");
    let _ = first.wait();

    let resumed = spawn_child(test, "resume", backend, &log, &thread);
    assert_resumed_once(resumed, &expected, &log, &["a", "b", "slow", "c"]);
}

/// Waits for the `resumed` child and checks that it ended where an uninterrupted run does
/// (`expected`), and that each of `nodes` completed exactly once over both processes.
fn assert_resumed_once(resumed: std::process::Child, expected: &Work, log: &Path, nodes: &[&str]) {
    let resumed = resumed.wait_with_output().expect("resume child");
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        resumed.status.success(),
        "resume failed: {stdout}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let finals = final_states(&stdout);
    let state = finals
        .first()
        .unwrap_or_else(|| panic!("no final state line in: {stdout}"));
    assert_eq!(
        state, expected,
        "the resumed run must end where an uninterrupted run does"
    );

    let completions: Vec<String> = read_log(log)
        .into_iter()
        .filter(|l| !l.ends_with("-started"))
        .collect();
    for node in nodes {
        assert_eq!(
            completions.iter().filter(|l| l == node).count(),
            1,
            "node {node} completed {completions:?}"
        );
    }
}

/// The states a child printed on its `FINAL {json}` lines, in order.
fn final_states(stdout: &str) -> Vec<Work> {
    stdout
        .lines()
        .filter_map(|l| l.split_once("FINAL ").map(|(_, json)| json))
        .map(|json| serde_json::from_str(json).expect("state"))
        .collect()
}

/// Kills a run inside a subgraph (the child's `c1` done, `slow` hanging), resumes it in a
/// new process, and checks that the child continued where it stopped.
async fn crash_inside_subgraph_and_resume(test: &str, backend: &str, dir: &Path) {
    let thread = format!("crash-sub-{}-{}", std::process::id(), rand_suffix());
    let expected = subgraph_graph(None, dir.join("reference.log"), false)
        .invoke(WorkUpdate::new())
        .await
        .expect("reference run")
        .into_state();

    let log = dir.join("completions.log");
    let mut first = spawn_child(test, "sub-run", backend, &log, &thread);
    // `slow` starts only after the child saved the checkpoint that ends `c1`'s step.
    wait_until("the child's slow node to start", async || {
        read_log(&log).iter().any(|l| l == "slow-started")
    })
    .await;
    first.kill().expect("SIGKILL the child");
    let _ = first.wait();

    let resumed = spawn_child(test, "sub-resume", backend, &log, &thread);
    assert_resumed_once(resumed, &expected, &log, &["a", "c1", "slow", "c2", "z"]);
}

/// Kills a run while a deferred node waits for a hanging branch, resumes it in a new
/// process, and checks that the deferred node ran once, at the end.
async fn crash_while_deferred_waits_and_resume(test: &str, backend: &str, dir: &Path) {
    let thread = format!("crash-deferred-{}-{}", std::process::id(), rand_suffix());
    let expected = deferred_graph(None, dir.join("reference.log"), false)
        .invoke(WorkUpdate::new())
        .await
        .expect("reference run")
        .into_state();

    let log = dir.join("completions.log");
    let mut first = spawn_child(test, "deferred-run", backend, &log, &thread);
    // `slow` starts only after the checkpoint that ends step 2 (where `last` began to
    // wait) was saved: read the child's stdout up to the line that says so (it ends the
    // test harness's `test ... ` line).
    let stdout = first.stdout.take().expect("the child's stdout");
    let reading = tokio::task::spawn_blocking(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|line| line.ends_with("slow-started"))
    });
    // A bound, so that a child stuck before `slow` fails the test instead of hanging it.
    let started = tokio::time::timeout(Duration::from_secs(120), reading).await;
    if !matches!(started, Ok(Ok(true))) {
        let _ = first.kill();
        panic!("the child did not start `slow`: {started:?}");
    }

    let saver = open_saver(backend).await;
    let config = RunConfig::new().thread_id(&thread);
    let waiting = deferred_graph(Some(saver), dir.join("read.log"), false)
        .get_state(&config)
        .await;
    // Killed before anything is asserted, so a failed assertion leaves no child hanging.
    first.kill().expect("SIGKILL the child");
    let _ = first.wait();
    let waiting = waiting.expect("the thread's state");
    assert_eq!(
        (waiting.next, waiting.deferred),
        (vec!["slow".to_string()], vec!["last".to_string()])
    );

    let resumed = spawn_child(test, "deferred-resume", backend, &log, &thread);
    assert_resumed_once(
        resumed,
        &expected,
        &log,
        &["a", "short", "long", "slow", "last"],
    );
    let completions = read_log(&log);
    assert_eq!(completions.last().map(String::as_str), Some("last"));
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_run_killed_while_a_deferred_node_waits_runs_it_once_when_resumed() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = format!("sqlite:{}", dir.path().join("threads.sqlite").display());
    crash_while_deferred_waits_and_resume(
        "sqlite_run_killed_while_a_deferred_node_waits_runs_it_once_when_resumed",
        &backend,
        dir.path(),
    )
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_run_killed_while_a_deferred_node_waits_runs_it_once_when_resumed() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let Some(backend) = postgres_backend("deferred crash") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    crash_while_deferred_waits_and_resume(
        "postgres_run_killed_while_a_deferred_node_waits_runs_it_once_when_resumed",
        &backend,
        dir.path(),
    )
    .await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_run_killed_inside_a_subgraph_resumes_inside_it() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = format!("sqlite:{}", dir.path().join("threads.sqlite").display());
    crash_inside_subgraph_and_resume(
        "sqlite_run_killed_inside_a_subgraph_resumes_inside_it",
        &backend,
        dir.path(),
    )
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_run_killed_inside_a_subgraph_resumes_inside_it() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let Some(backend) = postgres_backend("subgraph crash") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    crash_inside_subgraph_and_resume(
        "postgres_run_killed_inside_a_subgraph_resumes_inside_it",
        &backend,
        dir.path(),
    )
    .await;
}

/// The PostgreSQL backend of a crash test (`postgres:{url}`), or `None` (the test skipped)
/// without `GRAPHKIT_TEST_POSTGRES_URL`.
#[cfg(feature = "postgres")]
fn postgres_backend(test: &str) -> Option<String> {
    match std::env::var("GRAPHKIT_TEST_POSTGRES_URL") {
        Ok(url) => Some(format!("postgres:{url}")),
        Err(_) => {
            println!("skipping the PostgreSQL {test} test: GRAPHKIT_TEST_POSTGRES_URL is not set");
            None
        }
    }
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_run_killed_mid_step_resumes_in_a_new_process() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = format!("sqlite:{}", dir.path().join("threads.sqlite").display());
    crash_and_resume(
        "sqlite_run_killed_mid_step_resumes_in_a_new_process",
        &backend,
        dir.path(),
    )
    .await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_run_killed_mid_step_resumes_in_a_new_process() {
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let Some(backend) = postgres_backend("crash") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    crash_and_resume(
        "postgres_run_killed_mid_step_resumes_in_a_new_process",
        &backend,
        dir.path(),
    )
    .await;
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_file_opened_by_several_processes_at_once_opens_in_each() {
    const TEST: &str = "sqlite_file_opened_by_several_processes_at_once_opens_in_each";
    const PROCESSES: usize = 8;
    if let Ok(role) = std::env::var(ROLE) {
        return child(&role).await;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let backend = format!("sqlite:{}", dir.path().join("shared.sqlite").display());
    let expected = graph(None, dir.path().join("reference.log"), false)
        .invoke(WorkUpdate::new())
        .await
        .expect("reference run")
        .into_state();

    // All children start before any is waited for, so their opens overlap.
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            let log = dir.path().join(format!("open-{i}.log"));
            spawn_child(TEST, "open", &backend, &log, &format!("open-{i}"))
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let output = child.wait_with_output().expect("child process");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "process {i} could not open the shared file: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let finals = final_states(&stdout);
        assert_eq!(finals.len(), OPEN_ROUNDS, "process {i}: {stdout}");
        assert!(
            finals.iter().all(|state| *state == expected),
            "process {i} finished each run"
        );
    }
}
