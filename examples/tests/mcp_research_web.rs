//! The MCP research page in a real browser: headless Chromium driven over WebDriver.
//!
//! Needs Debian's `chromium` and `chromium-driver`; `.ci/run` installs them and sets
//! `GRAPHKIT_CHROMEDRIVER` (the chromedriver binary; `GRAPHKIT_CHROMIUM` overrides the
//! browser, `/usr/bin/chromium` by default). Without `GRAPHKIT_CHROMEDRIVER` the tests skip
//! and say so.
//!
//! Waiting is event-driven: an asynchronous WebDriver script resolves from a
//! MutationObserver when the page reaches the awaited state, bounded by the session's
//! script timeout; nothing sleeps.

// Shared with graphkit-tests' browser tests (one WebDriver client in the workspace).
#[path = "../../tests/src/webdriver.rs"]
mod webdriver;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use graphkit::checkpoint::InMemorySaver;
use graphkit_examples::mcp_research::{
    Engine, EngineConfig, McpServerSpec, connect, dataset, service, web,
};
use serde_json::{Value, json};

use webdriver::{Chromedriver, Session};

/// The browser, or `None` (with a message) when this machine has none configured.
fn browser_binaries() -> Option<(String, String)> {
    let Ok(driver) = std::env::var("GRAPHKIT_CHROMEDRIVER") else {
        eprintln!(
            "skipping the browser test: GRAPHKIT_CHROMEDRIVER is not set (install Debian's \
             chromium and chromium-driver and set it to /usr/bin/chromedriver, as .ci/run does)"
        );
        return None;
    };
    let chromium =
        std::env::var("GRAPHKIT_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_owned());
    Some((driver, chromium))
}

/// Serves `app` on 127.0.0.1 at a port of the system's choosing; answers its base URL.
async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("local address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// `target/` of this build (the test binary is `target/debug/deps/NAME`).
fn target_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.ancestors()
        .nth(3)
        .expect("target/debug/deps/test")
        .to_path_buf()
}

/// The real service: the offline stand-in model, the bundled events MCP server over stdio,
/// and in-memory checkpoints, served with its page.
async fn real_service() -> String {
    let server = McpServerSpec::Stdio(vec![env!("CARGO_BIN_EXE_graphkit-events-mcp").to_owned()]);
    let source = connect(&[server])
        .await
        .expect("start the events MCP server");
    let engine = Engine::new(EngineConfig::new(source, Arc::new(InMemorySaver::new())))
        .expect("the research engine");
    serve(service::router(engine)).await
}

// ------------------------------------------------------------------ test double

/// A recorded marker sequence of an offline run, as `POST /research` streams it.
const RECORDED_RUN: &[&str] = &[
    r#"RESEARCH_START:{"session_id":"research-replay-1"}"#,
    "PHASE:planning",
    "PROGRESS:5",
    "THINKING:Creating initial research plan...",
    "PHASE:decomposing",
    "THINKING:Executing decomposer...",
    "PHASE:aggregating",
    "THINKING:Executing aggregator...",
    r#"SOURCES:[{"title":"Flood response in Chile","url":"https://events.example/e/17"}]"#,
    r#"CHART_CONFIGS:[{"type":"bar","title":"Events by country","data":{"labels":["France","Chile","Kenya"],"datasets":[{"label":"events","data":[120,87,45]}]}}]"#,
    "PHASE:planning",
    "PROGRESS:32",
    "PHASE:sampling",
    "THINKING:Executing sampler...",
    r#"SOURCES:[{"title":"Flood response in Chile","url":"https://events.example/e/17"},{"title":"Harvest <b>report</b>","url":"https://events.example/e/42"}]"#,
    "PHASE:synthesizing",
    "PROGRESS:90",
    "FINAL_RESPONSE_START:",
    "MARKDOWN_CONTENT_START:",
    "## Research Report\n\nFrance has the **most** events (120).\n\n| Country | Events |\n|---|---:|\n| France | 120 |\n| Chile | 87 |\n\n- raw <img src=x onerror=\"document.body.dataset.pwned='1'\"> stays text\n- see [event 17](https://events.example/e/17)",
    "MARKDOWN_CONTENT_END:",
    r#"RESEARCH_COMPLETE:{"iterations":3,"docs_processed":50,"confidence":0.85}"#,
];

/// A run whose MCP server died: markers, then `ERROR:` and the end of the stream.
const FAILED_RUN: &[&str] = &[
    r#"RESEARCH_START:{"session_id":"research-replay-2"}"#,
    "PHASE:planning",
    "PROGRESS:5",
    "PHASE:aggregating",
    r#"ERROR:{"message":"the MCP server closed the connection"}"#,
];

/// A run whose report is hostile markdown (issue 27): raw HTML with scripts and event
/// handlers, `javascript:` links (one behind a control character), and a line of 4,000
/// backticks, followed by markdown that must still render.
fn hostile_run() -> Vec<String> {
    let report = [
        "## Hostile report",
        "<script>document.body.dataset.pwned = 'script'</script>",
        "<img src=x onerror=\"document.body.dataset.pwned = 'img'\">",
        "<svg onload=\"document.body.dataset.pwned = 'svg'\"></svg>",
        "<a href=\"javascript:document.body.dataset.pwned='a'\" onclick=\"document.body.dataset.pwned='click'\">raw link</a>",
        "[js](javascript:document.body.dataset.pwned='js') [ctl](\u{1}javascript:document.body.dataset.pwned='ctl') [ws]( JAVASCRIPT:document.body.dataset.pwned='ws')",
        "[ok](https://events.example/e/1)",
        &format!(
            "4,000 backticks {} and after them **still rendered**",
            "`".repeat(4000)
        ),
    ]
    .join("\n\n");
    [
        r#"RESEARCH_START:{"session_id":"research-replay-3"}"#,
        "PHASE:synthesizing",
        "FINAL_RESPONSE_START:",
        "MARKDOWN_CONTENT_START:",
        report.as_str(),
        "MARKDOWN_CONTENT_END:",
        r#"RESEARCH_COMPLETE:{"iterations":1}"#,
    ]
    .map(str::to_owned)
    .to_vec()
}

/// What the replaying test double shares with the test: the requests it got, and a gate
/// that holds [`RECORDED_RUN`] back before `FINAL_RESPONSE_START:` until the test opens it.
struct Replay {
    requests: Mutex<Vec<Value>>,
    gate: tokio::sync::Semaphore,
}

impl Replay {
    fn new() -> Self {
        Replay {
            requests: Mutex::new(Vec::new()),
            gate: tokio::sync::Semaphore::new(0),
        }
    }
}

/// Test double of the research service: `GET /research/tools` lists two tools and
/// `POST /research` replays [`RECORDED_RUN`] (or [`FAILED_RUN`] for a query containing
/// "fail", [`hostile_run`] for one containing "hostile") as a streamed SSE body, keeping each request for the test to inspect. The
/// recorded run stops before its report until [`Replay::gate`] gets a permit, so the test
/// can look at the page in the middle of a run.
fn replay_service(replay: Arc<Replay>) -> Router {
    Router::new()
        .route(
            "/research/tools",
            get(|| async {
                axum::Json(json!({ "tools": [
                    { "name": "analyze_all_events", "description": "Aggregate all events" },
                    { "name": "analyze_events_by_conclusion", "description": "Aggregate events of one conclusion" },
                ]}))
            }),
        )
        .route("/research", post(replay_run))
        .with_state(replay)
        .merge(web::routes())
}

async fn replay_run(
    State(replay): State<Arc<Replay>>,
    axum::Json(request): axum::Json<Value>,
) -> Response {
    let query = request["query"].as_str().unwrap_or_default().to_owned();
    replay.requests.lock().expect("requests lock").push(request);
    let events = |markers: &[&str]| -> String { markers.iter().map(|m| sse_event(m)).collect() };
    let (before, after) = if query.contains("fail") {
        (events(FAILED_RUN), String::new())
    } else if query.contains("hostile") {
        let run = hostile_run();
        (
            events(&run.iter().map(String::as_str).collect::<Vec<_>>()),
            String::new(),
        )
    } else {
        let at = RECORDED_RUN
            .iter()
            .position(|marker| *marker == "FINAL_RESPONSE_START:")
            .unwrap_or(RECORDED_RUN.len());
        (events(&RECORDED_RUN[..at]), events(&RECORDED_RUN[at..]))
    };
    let first = futures::stream::once(async move { Ok::<_, std::convert::Infallible>(before) });
    let rest = futures::stream::once(async move {
        if !after.is_empty() {
            // Held until the test has looked at the page mid-run.
            let permit = replay.gate.acquire().await;
            drop(permit);
        }
        Ok(after)
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/event-stream")],
        axum::body::Body::from_stream(futures::StreamExt::chain(first, rest)),
    )
        .into_response()
}

/// One SSE event: one `data:` line per line of `data`, then a blank line.
fn sse_event(data: &str) -> String {
    let mut event: String = data
        .split('\n')
        .map(|line| format!("data: {line}\n"))
        .collect();
    event.push('\n');
    event
}

// ------------------------------------------------------------------ page driving

/// What the page shows once a run ends, read in one script.
const PAGE_SUMMARY: &str = r#"
    const all = (css) => [...document.querySelectorAll(css)];
    return {
      state: document.body.dataset.state,
      phases: all('#phase-history li').map((li) => li.dataset.phase),
      progress: document.getElementById('progress').dataset.progress,
      thinking: all('#thinking-log li').map((li) => li.textContent),
      sources: all('#sources li').map((li) => li.textContent),
      source_links: all('#sources li a').map((a) => a.getAttribute('href')),
      bars: all('#charts svg rect.bar').map((bar) => Number(bar.dataset.value)),
      bar_labels: all('#charts svg rect.bar').map((bar) => bar.dataset.label),
      chart_titles: all('#charts figcaption').map((caption) => caption.textContent),
      report_h2: all('#report h2').map((h) => h.textContent),
      report_text: document.getElementById('report').textContent,
      report_tables: all('#report table').length,
      report_strong: all('#report strong').map((s) => s.textContent),
      report_links: all('#report a').map((a) => a.getAttribute('href')),
      report_images: all('#report img').length,
      pwned: document.body.dataset.pwned || null,
      error: document.getElementById('error').hidden ? null : document.getElementById('error').textContent,
      complete: document.getElementById('complete').textContent,
    };
"#;

/// Types `query` into the page, submits it and waits for the run to complete or fail;
/// answers [`PAGE_SUMMARY`].
async fn run_query(session: &Session, query: &str) -> Value {
    let runs_before = submit_query(session, query).await;
    wait_for_end(session, query, runs_before).await
}

/// Types `query` into the page and submits it; answers the page's run count before.
async fn submit_query(session: &Session, query: &str) -> Value {
    let runs_before = session
        .execute("return Number(document.body.dataset.run || 0)")
        .await
        .expect("read the run counter");
    let input = session.find("#query").await.expect("query box");
    session.clear(&input).await.expect("clear the query box");
    session
        .type_into(&input, query)
        .await
        .expect("type the query");
    let submit = session.find("#submit").await.expect("submit button");
    session.click(&submit).await.expect("submit");
    runs_before
}

/// Waits for the run after `runs_before` to complete or fail; answers [`PAGE_SUMMARY`].
async fn wait_for_end(session: &Session, query: &str, runs_before: Value) -> Value {
    let state = session
        .wait_for(&format!(
            "Number(document.body.dataset.run) > {runs_before} \
             && ['complete', 'error'].includes(document.body.dataset.state) \
             && !document.getElementById('submit').disabled && document.body.dataset.state"
        ))
        .await
        .expect("the run completes or fails within the script timeout");
    eprintln!("run {query:?} ended in state {state}");
    session.execute(PAGE_SUMMARY).await.expect("read the page")
}

/// Saves the whole page (the window grown to the document's height) as `target/NAME` and
/// says where.
async fn save_screenshot(session: &Session, name: &str) {
    let height = session
        .execute("return document.documentElement.scrollHeight")
        .await
        .expect("read the page height")
        .as_u64()
        .unwrap_or(1500);
    session
        .set_window_size(1280, (height + 200).clamp(800, 6000))
        .await
        .expect("resize the window");
    let png = session.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is a PNG");
    let path = target_dir().join(name);
    std::fs::write(&path, png).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    eprintln!("screenshot: {}", path.display());
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| item.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_shows_a_replayed_run_live_and_an_error_marker() {
    let Some((driver_binary, chromium)) = browser_binaries() else {
        return;
    };
    let replay = Arc::new(Replay::new());
    let base = serve(replay_service(replay.clone())).await;
    let driver =
        Chromedriver::start(&driver_binary, Duration::from_secs(60)).expect("chromedriver");
    let session = Session::chromium(&driver, &chromium)
        .await
        .expect("a browser session");
    session
        .navigate(&format!("{base}/"))
        .await
        .expect("open the page");

    // The tool list is filled from /research/tools; unchecking one sends the other alone.
    session
        .wait_for("document.getElementById('tool-list').dataset.loaded")
        .await
        .expect("the tool list loads");
    let tools = session
        .execute(
            "return [...document.querySelectorAll('#tool-list input')].map((box) => box.value)",
        )
        .await
        .expect("read the tools");
    assert_eq!(
        strings(&tools),
        ["analyze_all_events", "analyze_events_by_conclusion"]
    );
    let second = session
        .find(r#"#tool-list input[data-tool="analyze_events_by_conclusion"]"#)
        .await
        .expect("second tool box");
    session.click(&second).await.expect("uncheck it");

    let query = "Which countries have the most events?";
    let runs_before = submit_query(&session, query).await;
    // Mid-run (the double holds the report back): the page already shows what came.
    session
        .wait_for(
            "document.getElementById('progress').dataset.progress === '90' \
             && document.getElementById('phase').dataset.phase === 'synthesizing'",
        )
        .await
        .expect("the page shows the markers as they arrive");
    let live = session.execute(PAGE_SUMMARY).await.expect("read the page");
    assert_eq!(live["state"], "running", "{live:#}");
    assert_eq!(live["sources"].as_array().map(Vec::len), Some(2));
    assert_eq!(live["bars"], json!([120, 87, 45]));
    assert_eq!(live["report_h2"], json!([]), "no report before its markers");
    replay.gate.add_permits(1);
    let page = wait_for_end(&session, query, runs_before).await;
    assert_eq!(page["state"], "complete", "{page:#}");
    assert_eq!(
        strings(&page["phases"]),
        [
            "planning",
            "decomposing",
            "aggregating",
            "planning",
            "sampling",
            "synthesizing",
            "complete"
        ]
    );
    assert_eq!(page["progress"], "100");
    assert!(strings(&page["thinking"]).contains(&"Executing aggregator...".to_owned()));
    // The cumulative SOURCES list replaced the first one; markup in a title stays text.
    assert_eq!(
        strings(&page["sources"]),
        [
            "Flood response in Chilehttps://events.example/e/17",
            "Harvest <b>report</b>https://events.example/e/42"
        ]
    );
    assert_eq!(page["bars"], json!([120, 87, 45]));
    assert_eq!(strings(&page["bar_labels"]), ["France", "Chile", "Kenya"]);
    assert_eq!(strings(&page["chart_titles"]), ["Events by country"]);
    assert_eq!(strings(&page["report_h2"]), ["Research Report"]);
    assert_eq!(page["report_tables"], 1);
    assert_eq!(strings(&page["report_strong"]), ["most"]);
    assert_eq!(
        strings(&page["report_links"]),
        ["https://events.example/e/17"]
    );
    // Raw HTML in the report is shown, not run.
    assert_eq!(page["report_images"], 0);
    assert_eq!(page["pwned"], Value::Null);
    assert!(
        page["report_text"]
            .as_str()
            .unwrap_or_default()
            .contains("<img src=x")
    );
    assert!(
        page["complete"]
            .as_str()
            .unwrap_or_default()
            .contains("3 iterations")
    );
    {
        let requests = replay.requests.lock().expect("requests lock");
        assert_eq!(requests.len(), 1);
        assert_eq!(
            requests[0]["query"],
            "Which countries have the most events?"
        );
        assert_eq!(requests[0]["enabled_tools"], json!(["analyze_all_events"]));
        assert_eq!(requests[0]["max_iterations"], 10);
    }

    save_screenshot(&session, "mcp-research-page-replay.png").await;

    // A second run on the same page starts clean and shows the ERROR marker.
    let page = run_query(&session, "this one should fail").await;
    assert_eq!(page["state"], "error", "{page:#}");
    assert_eq!(page["error"], "the MCP server closed the connection");
    assert_eq!(strings(&page["phases"]), ["planning", "aggregating"]);
    assert_eq!(page["bars"], json!([]));
    assert_eq!(page["report_h2"], json!([]));

    // The page's renderer (the service's, through the page's script) and SSE parser on
    // inputs the runs above did not cover.
    let cases = session
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
               const { renderMarkdown: md, createSseParser } = window.mcpResearch;
               const events = [];
               const parser = createSseParser((data) => events.push(data));
               parser.push('data: A:1\r\ndata: two\r\n\r\n: keep-alive\n\ndata:B');
               parser.push(':2\n\n');
               parser.finish();
               Promise.all([
                 md('[x](javascript:alert(1)) [y](data:text/html,hi)'),
                 md('[a](https://e.org/a_b_c) _i_'),
                 md('```\n<b>x</b> **no**\n```'),
               ]).then(
                 ([script_link, underscore_url, fence]) =>
                   done({ script_link, underscore_url, fence, events }),
                 (error) => done({ error: String(error) }),
               );"#,
        )
        .await
        .expect("run the renderer");
    let case = |name: &str| cases[name].as_str().unwrap_or_default().to_owned();
    assert_eq!(case("script_link"), "<p>x y</p>\n", "{cases:#}");
    assert_eq!(
        case("underscore_url"),
        "<p><a href=\"https://e.org/a_b_c\">a</a> <em>i</em></p>\n"
    );
    assert_eq!(
        case("fence"),
        "<pre><code>&lt;b&gt;x&lt;/b&gt; **no**\n</code></pre>\n"
    );
    assert_eq!(cases["events"], json!(["A:1\ntwo", "B:2"]));

    session.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_renders_hostile_markdown_without_running_any_of_it() {
    let Some((driver_binary, chromium)) = browser_binaries() else {
        return;
    };
    let base = serve(replay_service(Arc::new(Replay::new()))).await;
    let driver =
        Chromedriver::start(&driver_binary, Duration::from_secs(60)).expect("chromedriver");
    let session = Session::chromium(&driver, &chromium)
        .await
        .expect("a browser session");
    session
        .navigate(&format!("{base}/"))
        .await
        .expect("open the page");
    session
        .wait_for("document.getElementById('tool-list').dataset.loaded")
        .await
        .expect("the tool list loads");

    let page = run_query(&session, "a hostile report").await;
    assert_eq!(page["state"], "complete", "{page:#}");
    // It rendered: the heading, and the markdown after the run of backticks.
    assert_eq!(strings(&page["report_h2"]), ["Hostile report"]);
    assert_eq!(strings(&page["report_strong"]), ["still rendered"]);
    let text = page["report_text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&"`".repeat(4000)),
        "the backticks show as text"
    );
    assert!(text.contains("<script>"), "raw HTML shows as text");
    // Nothing ran, and nothing could run later.
    assert_eq!(page["pwned"], Value::Null, "{page:#}");
    assert_eq!(page["report_images"], 0);
    assert_eq!(
        strings(&page["report_links"]),
        ["https://events.example/e/1"]
    );
    let dom = session
        .execute(
            r#"const report = document.getElementById('report');
               const all = [...report.querySelectorAll('*')];
               return {
                 active: report.querySelectorAll('script, img, svg, iframe, object, embed, form').length,
                 handlers: all.flatMap((e) => [...e.attributes].map((a) => a.name)).filter((n) => n.startsWith('on')),
                 protocols: [...report.querySelectorAll('a')].map((a) => a.protocol),
                 targets: [...report.querySelectorAll('a')].map((a) => a.target + ' ' + a.rel),
               };"#,
        )
        .await
        .expect("read the report's DOM");
    assert_eq!(dom["active"], 0, "{dom:#}");
    assert_eq!(dom["handlers"], json!([]), "{dom:#}");
    assert_eq!(dom["protocols"], json!(["https:"]), "{dom:#}");
    assert_eq!(dom["targets"], json!(["_blank noopener noreferrer"]));

    session.close().await.expect("close the browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_runs_a_research_session_of_the_real_service_to_its_report() {
    let Some((driver_binary, chromium)) = browser_binaries() else {
        return;
    };
    let base = real_service().await;
    let driver =
        Chromedriver::start(&driver_binary, Duration::from_secs(60)).expect("chromedriver");
    let session = Session::chromium(&driver, &chromium)
        .await
        .expect("a browser session");
    session
        .navigate(&format!("{base}/"))
        .await
        .expect("open the page");
    session
        .wait_for("document.getElementById('tool-list').dataset.loaded")
        .await
        .expect("the tool list loads");
    let tools = session
        .execute("return [...document.querySelectorAll('#tool-list input:checked')].map((box) => box.value)")
        .await
        .expect("read the tools");
    assert_eq!(
        strings(&tools),
        ["analyze_all_events", "analyze_events_by_conclusion"]
    );

    let page = run_query(&session, "Which countries have the most events?").await;
    save_screenshot(&session, "mcp-research-page.png").await;
    eprintln!("{page:#}");
    assert_eq!(page["state"], "complete", "{page:#}");
    assert_eq!(page["progress"], "100");

    // The stand-in's data flow: decompose + aggregate, sample + extract, then synthesise.
    let phases = strings(&page["phases"]);
    assert_eq!(
        phases.first().map(String::as_str),
        Some("planning"),
        "{phases:?}"
    );
    assert_eq!(
        phases.last().map(String::as_str),
        Some("complete"),
        "{phases:?}"
    );
    let position = |phase: &str| phases.iter().position(|seen| seen == phase);
    for phase in ["decomposing", "aggregating", "sampling", "synthesizing"] {
        assert!(
            position(phase).is_some(),
            "phase {phase} not shown in {phases:?}"
        );
    }
    assert!(position("aggregating") < position("sampling"));
    assert!(position("sampling") < position("synthesizing"));
    assert!(!strings(&page["thinking"]).is_empty());

    // Sources come from the sampled events; each is a link to the event.
    let links = strings(&page["source_links"]);
    assert!(!links.is_empty(), "{page:#}");
    assert!(
        links
            .iter()
            .all(|link| link.starts_with("https://events.example/")),
        "{links:?}"
    );

    // A chart of the country aggregation, drawn as SVG bars of the real counts.
    let bars = page["bars"].as_array().cloned().unwrap_or_default();
    assert!(!bars.is_empty(), "{page:#}");
    assert!(
        bars.iter()
            .all(|bar| bar.as_f64().is_some_and(|value| value > 0.0))
    );
    // The first bar is the country with the most events in the dataset, at its count.
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for event in dataset::events() {
        *counts.entry(event.country).or_default() += 1;
    }
    let (top_country, top_count) = counts
        .iter()
        .max_by_key(|(country, count)| (**count, std::cmp::Reverse(**country)))
        .expect("a non-empty dataset");
    assert_eq!(
        strings(&page["bar_labels"]).first().map(String::as_str),
        Some(*top_country)
    );
    assert_eq!(bars[0].as_u64(), Some(*top_count), "{page:#}");

    assert_eq!(strings(&page["report_h2"]), ["Research Report"]);
    assert!(
        page["report_text"]
            .as_str()
            .unwrap_or_default()
            .contains(top_country)
    );
    assert!(
        page["complete"]
            .as_str()
            .unwrap_or_default()
            .contains("3 iterations"),
        "{page:#}"
    );
    assert_eq!(page["error"], Value::Null);

    session.close().await.expect("close the browser");
}
