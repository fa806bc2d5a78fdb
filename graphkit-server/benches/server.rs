//! Throughput and latency of graphkit-server on its demo graph `agent`, measured from outside
//! over HTTP against real server processes (not a timed test: figures go to
//! `docs/benchmarks.md`).
//!
//! ```sh
//! # SQLite (one process), then PostgreSQL with one and three processes, then the stream cost
//! GRAPHKIT_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//!   cargo bench -p graphkit-server --bench server
//! # one configuration
//! cargo bench -p graphkit-server --bench server -- --only sqlite --clients 8 --runs 400
//! cargo bench -p graphkit-server --bench server -- --only followers --followers 1000
//! # against another build of the server (to compare)
//! GRAPHKIT_BENCH_SERVER=/path/to/graphkit-server cargo bench -p graphkit-server --bench server
//! # against another server already running (benches/server-vs-langgraph.sh starts
//! # `langgraph dev` with the Python twin of `agent` and does this)
//! cargo bench -p graphkit-server --bench server -- --only against-wait,against-stream \
//!   --against http://127.0.0.1:2024 --against-pid PID --against-label "langgraph dev"
//! ```
//!
//! Each configuration starts fresh server processes (`--listen 127.0.0.1:0`; a temporary
//! SQLite file, or a fresh PostgreSQL schema dropped afterwards), creates one thread per run
//! untimed, then lets `--clients` concurrent clients send `POST /threads/{id}/runs/wait`
//! round-robin over the processes (`NAME-stream`: `POST /threads/{id}/runs/stream` with the
//! values mode, read to its end). It reports runs/s (runs over the wall time of the timed
//! phase) and the p50/p95/p99 latency of one run as the client sees it. Every answer is
//! checked for the echo, so a broken server fails the bench instead of producing fast numbers.
//! `big-message` sends one `runs/wait` whose message is 9 MB and reads the server's memory
//! before, right after and 5 s later.
//!
//! The follower fan-out (`--only followers`, SQLite, one process; `followers-postgres-2`,
//! two processes on PostgreSQL with the followers split between them) starts one run that
//! sleeps `--follow-sleep` seconds, joins `--followers` clients to its stream (from its first
//! event, `Last-Event-ID: 0`), and reports how long after the run ended (its `updated_at`)
//! their streams ended: p50, p99 and the slowest. `--follow-history N` runs N turns on the
//! thread first (untimed), so each `values` event of the followed run carries a longer
//! conversation.
//!
//! The stream cost compares, on one process and one client, the median latency of a
//! `runs/wait` with the median latency of a `runs/stream` of the same run that reads every
//! event of the modes values, updates, debug, tasks and checkpoints, and divides the
//! difference by the number of events.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

/// The server binary this bench drives, built by cargo with the bench's features.
const SERVER: &str = env!("CARGO_BIN_EXE_graphkit-server");

/// The server binary to drive: `GRAPHKIT_BENCH_SERVER` (another build, to compare) or
/// [`SERVER`].
fn server_binary() -> String {
    std::env::var("GRAPHKIT_BENCH_SERVER")
        .ok()
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| SERVER.to_owned())
}

type BenchResult<T> = Result<T, String>;

struct Options {
    clients: usize,
    runs: usize,
    stream_runs: usize,
    followers: usize,
    follow_sleep: f64,
    follow_history: usize,
    only: Option<String>,
    postgres: Option<String>,
    /// Another server already running (e.g. `langgraph dev` serving the Python twin of
    /// `agent`): the `against-*` configurations drive it.
    against: Option<String>,
    /// That server's process id, to read its memory (`/proc/PID/status`).
    against_pid: Option<u32>,
    /// What the `against-*` lines call that server.
    against_label: String,
}

fn parse_options() -> BenchResult<Options> {
    let mut options = Options {
        clients: 8,
        runs: 400,
        stream_runs: 100,
        followers: 1000,
        follow_sleep: 15.0,
        follow_history: 0,
        only: None,
        against: None,
        against_pid: None,
        against_label: "other".to_owned(),
        postgres: std::env::var("GRAPHKIT_TEST_POSTGRES_URL")
            .ok()
            .filter(|url| !url.is_empty()),
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            "--clients" => options.clients = number(&value("--clients")?)?,
            "--runs" => options.runs = number(&value("--runs")?)?,
            "--stream-runs" => options.stream_runs = number(&value("--stream-runs")?)?,
            "--followers" => options.followers = number(&value("--followers")?)?,
            "--follow-history" => options.follow_history = number(&value("--follow-history")?)?,
            "--follow-sleep" => {
                let text = value("--follow-sleep")?;
                options.follow_sleep = text
                    .parse()
                    .map_err(|_| format!("--follow-sleep {text:?} is not a number of seconds"))?;
            }
            "--only" => options.only = Some(value("--only")?),
            "--postgres" => options.postgres = Some(value("--postgres")?),
            "--against" => {
                options.against = Some(value("--against")?.trim_end_matches('/').to_owned());
            }
            "--against-pid" => {
                let text = value("--against-pid")?;
                options.against_pid = Some(
                    text.parse()
                        .map_err(|_| format!("--against-pid {text:?} is not a process id"))?,
                );
            }
            "--against-label" => options.against_label = value("--against-label")?,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; use --clients N, --runs N, --stream-runs N, \
                     --followers N, --follow-sleep SECS, --follow-history N, --only NAME[,NAME] \
                     (sqlite, sqlite-stream, postgres-1, postgres-1-stream, postgres-3, stream, \
                     big-message, followers, followers-postgres-2, against-wait, \
                     against-stream, against-big-message), --postgres URL, --against URL, \
                     --against-pid PID, --against-label NAME"
                ));
            }
        }
    }
    if options.clients == 0 || options.runs == 0 {
        return Err("--clients and --runs must be at least 1".to_owned());
    }
    Ok(options)
}

fn number(text: &str) -> BenchResult<usize> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a whole number"))
}

/// One server process, killed when dropped.
struct ServerProcess {
    child: Child,
    base: String,
}

impl ServerProcess {
    fn start(database: &str, extra: &[&str]) -> BenchResult<Self> {
        let server = server_binary();
        let mut child = Command::new(&server)
            .args(["--listen", "127.0.0.1:0", "--database", database])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {server}: {e}"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout was not piped")?;
        let mut lines = BufReader::new(stdout).lines();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.map_err(|e| format!("reading the server's stdout: {e}"))?;
            if let Some(rest) = line.split("listening on ").nth(1) {
                let address = rest.trim();
                base = Some(if address.starts_with("http") {
                    address.to_owned()
                } else {
                    format!("http://{address}")
                });
                break;
            }
        }
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        match base {
            Some(base) => Ok(Self { child, base }),
            None => {
                let _ = child.kill();
                Err(format!(
                    "{server} exited before printing `listening on ADDR`"
                ))
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a configuration keeps its data; cleaned up when dropped.
enum Database {
    Sqlite(tempfile::TempDir),
    Postgres { url: String, schema: String },
}

impl Database {
    fn sqlite() -> BenchResult<Self> {
        tempfile::tempdir()
            .map(Database::Sqlite)
            .map_err(|e| format!("no temporary directory: {e}"))
    }

    fn postgres(url: &str, label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        Database::Postgres {
            url: url.to_owned(),
            schema: format!("gk_bench_{label}_{}_{nanos}", std::process::id()),
        }
    }

    fn start(&self, processes: usize) -> BenchResult<Vec<ServerProcess>> {
        match self {
            Database::Sqlite(dir) => {
                let path = dir.path().join("server.db");
                let url = path.display().to_string();
                (0..processes)
                    .map(|_| ServerProcess::start(&url, &[]))
                    .collect()
            }
            Database::Postgres { url, schema } => (0..processes)
                .map(|_| ServerProcess::start(url, &["--database-schema", schema]))
                .collect(),
        }
    }

    async fn drop_schema(&self) {
        if let Database::Postgres { url, schema } = self {
            drop_postgres_schema(url, schema).await;
        }
    }
}

#[cfg(feature = "postgres")]
async fn drop_postgres_schema(url: &str, schema: &str) {
    use sqlx::Connection;
    if let Ok(mut connection) = sqlx::PgConnection::connect(url).await {
        let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
        if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut connection)
            .await
        {
            eprintln!("could not drop the bench schema {schema}: {e}");
        }
        let _ = connection.close().await;
    }
}

#[cfg(not(feature = "postgres"))]
async fn drop_postgres_schema(_url: &str, _schema: &str) {}

fn user_input(text: &str) -> Value {
    json!({"messages": [{"role": "user", "content": text}]})
}

async fn post_json(http: &reqwest::Client, url: &str, body: &Value) -> BenchResult<Value> {
    let response = http
        .post(url)
        .json(body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("POST {url} answered {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("POST {url} sent no JSON ({e}): {text}"))
}

async fn new_thread(http: &reqwest::Client, base: &str) -> BenchResult<String> {
    let thread = post_json(http, &format!("{base}/threads"), &json!({})).await?;
    thread["thread_id"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("POST /threads gave no thread_id: {thread}"))
}

/// One `runs/wait`, checked for the echo.
async fn run_wait(http: &reqwest::Client, base: &str, thread: &str, text: &str) -> BenchResult<()> {
    let url = format!("{base}/threads/{thread}/runs/wait");
    let body = json!({"assistant_id": "agent", "input": user_input(text)});
    let values = post_json(http, &url, &body).await?;
    let echo = format!("echo: {text}");
    let last = values["messages"]
        .as_array()
        .and_then(|m| m.last())
        .and_then(|m| m["content"].as_str());
    if last == Some(echo.as_str()) {
        Ok(())
    } else {
        Err(format!(
            "runs/wait on {thread} did not echo {text:?}: {values}"
        ))
    }
}

/// One `runs/stream`, read to the end; returns the number of events (heartbeats excluded).
async fn run_stream(
    http: &reqwest::Client,
    base: &str,
    thread: &str,
    modes: &Value,
) -> BenchResult<usize> {
    let url = format!("{base}/threads/{thread}/runs/stream");
    let body =
        json!({"assistant_id": "agent", "input": user_input("stream"), "stream_mode": modes});
    let response = http
        .post(&url)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("POST {url} answered {}", response.status()));
    }
    let mut body = response.bytes_stream();
    let mut events = 0;
    let mut pending = Vec::new();
    let mut saw_echo = false;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("reading {url}: {e}"))?;
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let block: Vec<u8> = pending.drain(..end + 4).collect();
            if block.starts_with(b"event:") {
                events += 1;
            }
            saw_echo |= block.windows(12).any(|w| w == b"echo: stream");
        }
        // A server that frames with LF only.
        while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = pending.drain(..end + 2).collect();
            if block.starts_with(b"event:") {
                events += 1;
            }
            saw_echo |= block.windows(12).any(|w| w == b"echo: stream");
        }
    }
    if saw_echo {
        Ok(events)
    } else {
        Err(format!("the stream of {url} never carried the echo"))
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// What each client of a throughput configuration sends.
#[derive(Clone, Copy)]
enum Load {
    /// `POST /threads/{id}/runs/wait`, checked for the echo.
    Wait,
    /// `POST /threads/{id}/runs/stream` with `stream_mode` values, read to its end and
    /// checked for the echo.
    Stream,
}

/// A throughput configuration on servers already listening at `bases`: `clients` concurrent
/// clients, `runs` timed runs in all, round-robin over the servers.
async fn throughput(
    label: &str,
    bases: &[String],
    load: Load,
    options: &Options,
) -> BenchResult<Value> {
    let http = graphkit_llm::http::client_builder()
        .timeout(Duration::from_secs(300))
        .pool_max_idle_per_host(options.clients)
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    let modes = json!(["values"]);
    let one = move |http: reqwest::Client, base: String, thread: String, text: &'static str| {
        let modes = modes.clone();
        async move {
            match load {
                Load::Wait => run_wait(&http, &base, &thread, text).await,
                Load::Stream => run_stream(&http, &base, &thread, &modes).await.map(drop),
            }
        }
    };
    // Untimed: one thread per run (spread over the processes) and a warm-up run per client.
    let mut threads = Vec::with_capacity(options.runs);
    for i in 0..options.runs {
        threads.push(new_thread(&http, &bases[i % bases.len()]).await?);
    }
    for c in 0..options.clients {
        let base = &bases[c % bases.len()];
        let thread = new_thread(&http, base).await?;
        one(http.clone(), base.clone(), thread, "warm-up").await?;
    }

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..options.clients {
        let mine: Vec<(String, String)> = threads
            .iter()
            .enumerate()
            .filter(|(i, _)| i % options.clients == c)
            .map(|(i, t)| (bases[i % bases.len()].clone(), t.clone()))
            .collect();
        let http = http.clone();
        let one = one.clone();
        tasks.spawn(async move {
            let mut latencies = Vec::with_capacity(mine.len());
            for (base, thread) in mine {
                let sent = Instant::now();
                one(http.clone(), base, thread, "bench").await?;
                latencies.push(sent.elapsed());
            }
            BenchResult::Ok(latencies)
        });
    }
    let mut latencies = Vec::with_capacity(options.runs);
    while let Some(joined) = tasks.join_next().await {
        latencies.extend(joined.map_err(|e| format!("a client task failed: {e}"))??);
    }
    let wall = started.elapsed();
    latencies.sort();
    let round = |value: f64| (value * 10.0).round() / 10.0;
    Ok(json!({
        "config": label,
        "load": match load { Load::Wait => "runs/wait", Load::Stream => "runs/stream" },
        "processes": bases.len(),
        "clients": options.clients,
        "runs": latencies.len(),
        "runs_per_s": round(latencies.len() as f64 / wall.as_secs_f64()),
        "p50_ms": round(ms(percentile(&latencies, 50.0))),
        "p95_ms": round(ms(percentile(&latencies, 95.0))),
        "p99_ms": round(ms(percentile(&latencies, 99.0))),
        "wall_s": (wall.as_secs_f64() * 100.0).round() / 100.0,
    }))
}

/// A process's resident memory and its peak so far, in MB (`VmRSS`, `VmHWM` of
/// `/proc/PID/status`; `None` where there is no such file).
fn memory_mb(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map(|kb| (kb / 1024.0 * 10.0).round() / 10.0)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// One `runs/wait` whose user message is 9 MB, on a fresh thread of the server at `base`:
/// how long it took, and the server's memory before, right after, and 5 s later (has it
/// given the memory back?).
async fn big_message(label: &str, base: &str, pid: Option<u32>) -> BenchResult<Value> {
    let http = graphkit_llm::http::client_builder()
        .timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    // Warm the server up first (its first run builds caches and connections).
    let warm = new_thread(&http, base).await?;
    run_wait(&http, base, &warm, "warm-up").await?;
    let text: String = "graphkit ".repeat(9 * 1024 * 1024 / 9);
    let thread = new_thread(&http, base).await?;
    let before = pid.and_then(memory_mb);
    let started = Instant::now();
    run_wait(&http, base, &thread, &text).await?;
    let took = started.elapsed();
    let after = pid.and_then(memory_mb);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let later = pid.and_then(memory_mb);
    let rss = |m: Option<(f64, f64)>| m.map(|(rss, _)| rss);
    Ok(json!({
        "config": label,
        "load": "runs/wait, one 9 MB message",
        "message_bytes": text.len(),
        "wait_ms": (ms(took) * 10.0).round() / 10.0,
        "rss_before_mb": rss(before),
        "rss_after_mb": rss(after),
        "rss_5s_later_mb": rss(later),
        "rss_peak_mb": later.map(|(_, peak)| peak),
    }))
}

/// The stream cost on one process, one client.
async fn stream_cost(database: &Database, options: &Options) -> BenchResult<Value> {
    let servers = database.start(1)?;
    let base = servers[0].base.clone();
    let http = graphkit_llm::http::client_builder()
        .timeout(Duration::from_secs(300))
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    let modes = json!(["values", "updates", "debug", "tasks", "checkpoints"]);
    let warm = new_thread(&http, &base).await?;
    run_wait(&http, &base, &warm, "warm-up").await?;
    run_stream(&http, &base, &warm, &modes).await?;

    let mut waits = Vec::with_capacity(options.stream_runs);
    let mut streams = Vec::with_capacity(options.stream_runs);
    let mut events = 0;
    // Interleaved, so load changes hit both sides alike.
    for _ in 0..options.stream_runs {
        let thread = new_thread(&http, &base).await?;
        let sent = Instant::now();
        run_wait(&http, &base, &thread, "bench").await?;
        waits.push(sent.elapsed());
        let thread = new_thread(&http, &base).await?;
        let sent = Instant::now();
        events = run_stream(&http, &base, &thread, &modes).await?;
        streams.push(sent.elapsed());
    }
    drop(servers);
    waits.sort();
    streams.sort();
    let wait = percentile(&waits, 50.0);
    let stream = percentile(&streams, 50.0);
    let per_event_us = if events > 0 {
        (stream.as_secs_f64() - wait.as_secs_f64()) * 1e6 / events as f64
    } else {
        0.0
    };
    Ok(json!({
        "config": "stream-cost",
        "modes": modes,
        "runs": options.stream_runs,
        "events_per_run": events,
        "wait_p50_ms": (ms(wait) * 100.0).round() / 100.0,
        "stream_p50_ms": (ms(stream) * 100.0).round() / 100.0,
        "overhead_per_event_us": per_event_us.round(),
    }))
}

/// Microseconds since the epoch of the server's `2026-11-23T06:21:15.853308+00:00`.
fn parse_timestamp(text: &str) -> BenchResult<i64> {
    let bad =
        || format!("{text:?} is not a timestamp of the form 2026-11-23T06:21:15.853308+00:00");
    let (date, time) = text.split_once('T').ok_or_else(bad)?;
    let time = time.strip_suffix("+00:00").ok_or_else(bad)?;
    let field = |s: &str| s.parse::<i64>().map_err(|_| bad());
    let mut ymd = date.splitn(3, '-');
    let (y, m, d) = (
        field(ymd.next().unwrap_or_default())?,
        field(ymd.next().unwrap_or_default())?,
        field(ymd.next().unwrap_or_default())?,
    );
    let (hms, micros) = time.split_once('.').ok_or_else(bad)?;
    let mut parts = hms.splitn(3, ':');
    let (hh, mm, ss) = (
        field(parts.next().unwrap_or_default())?,
        field(parts.next().unwrap_or_default())?,
        field(parts.next().unwrap_or_default())?,
    );
    // Howard Hinnant's days_from_civil.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Ok(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + field(micros)?)
}

fn now_micros() -> i64 {
    graphkit_server::time::Timestamp::now().micros()
}

/// One follower: joins the run's stream from its first event, tells `attached` once the
/// first event arrived, and reads to the end. Returns when the stream ended (µs since the
/// epoch) and how many events it read; fails unless the echo came.
async fn follow_run(
    http: reqwest::Client,
    url: String,
    attached: tokio::sync::mpsc::Sender<()>,
) -> BenchResult<(i64, usize)> {
    let response = http
        .get(&url)
        .header("Last-Event-ID", "0")
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("GET {url} answered {}", response.status()));
    }
    let mut body = response.bytes_stream();
    let (mut events, mut pending, mut saw_echo) = (0, Vec::new(), false);
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("reading {url}: {e}"))?;
        pending.extend_from_slice(&chunk);
        while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let block: Vec<u8> = pending.drain(..end + 4).collect();
            if block.starts_with(b"event:") {
                events += 1;
                if events == 1 {
                    let _ = attached.send(()).await;
                }
            }
            saw_echo |= block.windows(12).any(|w| w == b"echo: follow");
        }
    }
    let ended = now_micros();
    if saw_echo {
        Ok((ended, events))
    } else {
        Err(format!(
            "the stream of {url} ended without the run's answer"
        ))
    }
}

/// The follower fan-out: `--followers` clients join one run's stream (round-robin over
/// `processes`) while it sleeps `--follow-sleep` seconds; how long after the run ended
/// (its `updated_at`, written when it finished) each follower's stream ended.
async fn followers(
    label: &str,
    database: &Database,
    processes: usize,
    options: &Options,
) -> BenchResult<Value> {
    let servers = database.start(processes)?;
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let http = graphkit_llm::http::client_builder()
        .timeout(Duration::from_secs(600))
        .pool_max_idle_per_host(options.followers + 8)
        .build()
        .map_err(|e| format!("http client: {e}"))?;
    for base in &bases {
        let warm = new_thread(&http, base).await?;
        run_wait(&http, base, &warm, "warm-up").await?;
    }
    let thread = new_thread(&http, &bases[0]).await?;
    // A conversation so far: each `values` event of the followed run carries all of it.
    for turn in 0..options.follow_history {
        run_wait(&http, &bases[0], &thread, &format!("turn {turn}")).await?;
    }
    let input =
        json!({"messages": [{"role": "user", "content": "follow"}], "sleep": options.follow_sleep});
    let run = post_json(
        &http,
        &format!("{}/threads/{thread}/runs", bases[0]),
        &json!({"assistant_id": "agent", "input": input, "stream_mode": ["values"],
                "stream_resumable": true}),
    )
    .await?;
    let run_id = run["run_id"]
        .as_str()
        .ok_or_else(|| format!("POST runs gave no run_id: {run}"))?
        .to_owned();
    let started = Instant::now();
    let (attached, mut attaching) = tokio::sync::mpsc::channel(options.followers.max(1));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..options.followers {
        let url = format!(
            "{}/threads/{thread}/runs/{run_id}/stream",
            bases[i % bases.len()]
        );
        tasks.spawn(follow_run(http.clone(), url, attached.clone()));
    }
    drop(attached);
    for _ in 0..options.followers {
        if attaching.recv().await.is_none() {
            break;
        }
    }
    let attach_s = started.elapsed().as_secs_f64();
    let run_path = format!("{}/threads/{thread}/runs/{run_id}", bases[0]);
    let status = get_json(&http, &run_path).await?;
    if status["status"] != "running" {
        return Err(format!(
            "the run was {} before all {} followers had joined ({attach_s:.1} s); \
             raise --follow-sleep",
            status["status"], options.followers
        ));
    }
    let mut ends = Vec::with_capacity(options.followers);
    let mut events = 0;
    while let Some(joined) = tasks.join_next().await {
        let (ended, count) = joined.map_err(|e| format!("a follower task failed: {e}"))??;
        ends.push(ended);
        events = count;
    }
    let run = get_json(&http, &run_path).await?;
    if run["status"] != "success" {
        return Err(format!("the followed run ended {}: {run}", run["status"]));
    }
    let run_ended = parse_timestamp(run["updated_at"].as_str().unwrap_or_default())?;
    drop(servers);
    let mut lags: Vec<Duration> = ends
        .iter()
        .map(|&end| Duration::from_micros(u64::try_from(end - run_ended).unwrap_or(0)))
        .collect();
    lags.sort();
    let round = |d: Duration| (ms(d) * 10.0).round() / 10.0;
    Ok(json!({
        "config": label,
        "processes": processes,
        "history_turns": options.follow_history,
        "followers": lags.len(),
        "events_per_follower": events,
        "attach_s": (attach_s * 100.0).round() / 100.0,
        "end_lag_p50_ms": round(percentile(&lags, 50.0)),
        "end_lag_p99_ms": round(percentile(&lags, 99.0)),
        "end_lag_max_ms": round(lags.last().copied().unwrap_or_default()),
    }))
}

async fn get_json(http: &reqwest::Client, url: &str) -> BenchResult<Value> {
    let response = http
        .get(url)
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !status.is_success() {
        return Err(format!("GET {url} answered {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|e| format!("GET {url} sent no JSON ({e}): {text}"))
}

fn wanted(options: &Options, name: &str) -> bool {
    options
        .only
        .as_deref()
        .is_none_or(|only| only.split(',').any(|one| one.trim() == name))
}

/// The throughput configurations of `processes` fresh servers on `database`: `name`
/// (`runs/wait`) and `name-stream` (`runs/stream`), each when wanted.
async fn wait_and_stream(
    name: &str,
    database: &Database,
    processes: usize,
    options: &Options,
) -> BenchResult<()> {
    for (load, config) in [
        (Load::Wait, name.to_owned()),
        (Load::Stream, format!("{name}-stream")),
    ] {
        if !wanted(options, &config) {
            continue;
        }
        let servers = database.start(processes)?;
        let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
        println!("{}", throughput(&config, &bases, load, options).await?);
    }
    Ok(())
}

async fn run(options: Options) -> BenchResult<()> {
    if wanted(&options, "sqlite") || wanted(&options, "sqlite-stream") {
        let database = Database::sqlite()?;
        wait_and_stream("sqlite", &database, 1, &options).await?;
    }
    for processes in [1, 3] {
        let name = format!("postgres-{processes}");
        if !wanted(&options, &name) && !wanted(&options, &format!("{name}-stream")) {
            continue;
        }
        let Some(url) = options.postgres.as_deref() else {
            eprintln!("skipping {name}: set GRAPHKIT_TEST_POSTGRES_URL or pass --postgres URL");
            continue;
        };
        if !cfg!(feature = "postgres") {
            eprintln!(
                "skipping {name}: build the bench with the `postgres` feature (on by default)"
            );
            continue;
        }
        let database = Database::postgres(url, &format!("p{processes}"));
        let result = wait_and_stream(&name, &database, processes, &options).await;
        database.drop_schema().await;
        result?;
    }
    if wanted(&options, "stream") {
        let database = Database::sqlite()?;
        println!("{}", stream_cost(&database, &options).await?);
    }
    if wanted(&options, "big-message") {
        let database = Database::sqlite()?;
        let servers = database.start(1)?;
        let pid = servers[0].child.id();
        println!(
            "{}",
            big_message("sqlite", &servers[0].base, Some(pid)).await?
        );
    }
    if let Some(base) = options.against.as_deref() {
        let label = format!("against {}", options.against_label);
        let bases = [base.to_owned()];
        if wanted(&options, "against-wait") {
            println!(
                "{}",
                throughput(&label, &bases, Load::Wait, &options).await?
            );
        }
        if wanted(&options, "against-stream") {
            println!(
                "{}",
                throughput(&label, &bases, Load::Stream, &options).await?
            );
        }
        if wanted(&options, "against-big-message") {
            println!("{}", big_message(&label, base, options.against_pid).await?);
        }
    }
    if wanted(&options, "followers") {
        let database = Database::sqlite()?;
        println!("{}", followers("followers", &database, 1, &options).await?);
    }
    if wanted(&options, "followers-postgres-2") {
        match options.postgres.as_deref() {
            Some(url) if cfg!(feature = "postgres") => {
                let database = Database::postgres(url, "f2");
                let result = followers("followers-postgres-2", &database, 2, &options).await;
                database.drop_schema().await;
                println!("{}", result?);
            }
            _ => eprintln!(
                "skipping followers-postgres-2: set GRAPHKIT_TEST_POSTGRES_URL and build with the `postgres` feature"
            ),
        }
    }
    Ok(())
}

fn main() {
    let outcome = parse_options().and_then(|options| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("no tokio runtime: {e}"))?
            .block_on(run(options))
    });
    if let Err(message) = outcome {
        eprintln!("server bench failed: {message}");
        std::process::exit(1);
    }
}
