//! The biography events workflow (seed 003) end to end on the offline corpus with the
//! offline stand-in: the seed's example flow, every termination path, merging, the
//! history cap, incremental runs, bad input, and resuming after a crash.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use graphkit::checkpoint::{Checkpointer, InMemorySaver};
use graphkit_examples::biography_events::merge::{EventMatches, merge_events};
use graphkit_examples::biography_events::offline::{obvious_matches, stand_in};
use graphkit_examples::biography_events::prompts::{THINK_FORMAT, ThinkOutput};
use graphkit_examples::biography_events::{
    BiographyOptions, BiographyState, Event, EventDate, Limits, Sites, default_corpus_dir, event,
    run_biography_events,
};
use graphkit_examples::shared::{ExampleError, RunDir, RunTarget, StopSignal};
use graphkit_llm::{ChatModel, Message};
use graphkit_tools::ToolError;
use graphkit_tools::prebuilt::search::{ExtractedPage, LocalCorpus, SearchBackend, SearchResult};

fn corpus() -> Arc<dyn SearchBackend> {
    Arc::new(LocalCorpus::open(default_corpus_dir()).unwrap())
}

fn options(dir: &tempfile::TempDir, model: Arc<dyn ChatModel>, limits: Limits) -> BiographyOptions {
    options_with(dir, model, corpus(), Arc::new(InMemorySaver::new()), limits)
}

fn options_with(
    dir: &tempfile::TempDir,
    model: Arc<dyn ChatModel>,
    search: Arc<dyn SearchBackend>,
    checkpointer: Arc<dyn Checkpointer>,
    limits: Limits,
) -> BiographyOptions {
    BiographyOptions {
        model,
        search,
        sites: Sites::offline(),
        limits,
        target: RunTarget::new(
            "test",
            RunDir::create(dir.path().join("run")).unwrap(),
            checkpointer,
        ),
    }
}

async fn run(person: &str, limits: Limits) -> BiographyState {
    let dir = tempfile::tempdir().unwrap();
    run_biography_events(person, None, &options(&dir, Arc::new(stand_in()), limits))
        .await
        .unwrap()
        .1
}

fn tools(state: &BiographyState) -> Vec<&str> {
    state.messages.iter().map(|e| e.tool.as_str()).collect()
}

fn event_named<'a>(state: &'a BiographyState, name: &str) -> &'a Event {
    state
        .events
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no {name} event in {:#?}", state.events))
}

#[tokio::test]
async fn the_seed_flow_finds_crawls_twice_deepens_and_stops_when_think_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(&dir, Arc::new(stand_in()), Limits::default());
    let (summary, state) = run_biography_events("Odile Marchetti", None, &opts)
        .await
        .unwrap();

    assert_eq!(
        tools(&state),
        [
            "url_finder",
            "url_crawler",
            "url_crawler",
            "further_event_research"
        ]
    );
    assert_eq!(state.tool_calls, 4);
    assert!(
        state
            .stop_reason
            .as_deref()
            .unwrap()
            .starts_with("think_tool recommended stopping"),
        "{:?}",
        state.stop_reason
    );
    // url_finder: three sites, Wikipedia first, no news pages.
    assert_eq!(state.urls.len(), 3);
    assert!(state.urls[0].contains("wikipedia.example"));
    assert!(state.urls[1].contains("britannica.example"));
    assert!(state.urls[2].contains("biography.example"));
    assert_eq!(state.crawled, state.urls[..2]);
    // The supervisor called the graphs as tools: each call an assistant message, each
    // answered by the tool's reply.
    let calls: Vec<(String, serde_json::Value)> = state
        .tool_messages
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| (format!("{}:{}", c.name, c.id), c.arguments.clone()))
        .collect();
    assert_eq!(
        calls,
        [
            (
                "url_crawler:call_2".into(),
                serde_json::json!({"url": state.urls[0]})
            ),
            (
                "url_crawler:call_3".into(),
                serde_json::json!({"url": state.urls[1]})
            ),
            (
                "further_event_research:call_4".into(),
                serde_json::json!({"gap_targets": 5})
            ),
        ]
    );
    let replies: Vec<&Message> = state
        .tool_messages
        .iter()
        .filter(|m| m.role() == "tool")
        .collect();
    assert_eq!(replies.len(), 3);
    assert!(
        replies[2].text().contains("targeted searches"),
        "{:?}",
        replies[2]
    );
    // Every history entry has think's reflection and recommendation.
    assert!(
        state
            .messages
            .iter()
            .all(|e| e.think.is_some() && e.recommendation.is_some())
    );
    assert_eq!(
        state.messages[1].recommendation.as_deref(),
        Some("url_crawler")
    );
    assert_eq!(
        state.messages[2].recommendation.as_deref(),
        Some("further_event_research")
    );
    assert_eq!(state.messages[3].recommendation.as_deref(), Some("none"));

    // The paraphrased birth was merged (one birth), its conflicting day flagged.
    assert_eq!(state.events.iter().filter(|e| e.name == "Birth").count(), 1);
    let birth = event_named(&state, "Birth");
    assert_eq!(
        birth.date,
        EventDate::ymd(1902, 3, 14),
        "Wikipedia's day is kept"
    );
    assert_eq!(birth.source, "Wikipedia");
    assert_eq!(birth.conflicts.len(), 1);
    assert_eq!(birth.conflicts[0].field, "date");
    assert_eq!(
        birth.conflicts[0].values,
        ["14 March 1902", "16 March 1902"]
    );
    assert_eq!(birth.conflicts[0].sources, ["Wikipedia", "Britannica"]);
    // The targeted search filled the marriage's day and place from a news page.
    let marriage = event_named(&state, "Marriage");
    assert_eq!(marriage.date, EventDate::ymd(1931, 6, 20));
    assert_eq!(marriage.location.as_deref(), Some("Ravenna"));
    assert_eq!(
        event_named(&state, "Publication").location.as_deref(),
        Some("Milan")
    );
    assert_eq!(
        state
            .events
            .iter()
            .filter(|e| e.name == "Publication")
            .count(),
        1
    );

    // Outputs.
    let run = dir.path().join("run");
    let events: Vec<Event> =
        serde_json::from_str(&std::fs::read_to_string(run.join("events.json")).unwrap()).unwrap();
    let dates: Vec<_> = events.iter().map(|e| e.date).collect();
    let mut sorted = dates.clone();
    sorted.sort_by(|a, b| a.chronological(b));
    assert_eq!(dates, sorted, "events.json is in date order");
    assert_eq!(events.first().unwrap().name, "Birth");
    assert_eq!(events.last().unwrap().name, "Death");
    let history: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("history.json")).unwrap()).unwrap();
    assert_eq!(history.as_array().unwrap().len(), 4);
    let run_summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run_summary.json")).unwrap())
            .unwrap();
    assert_eq!(run_summary["toolCalls"], 4);
    assert_eq!(summary.events, state.events.len());
    assert!(summary.full_detail_share > 0.5);
    let timeline = std::fs::read_to_string(run.join("timeline.md")).unwrap();
    assert!(
        timeline.contains("| 20 June 1931 | Marriage | Ravenna |"),
        "{timeline}"
    );
    assert!(timeline.contains("Conflicts between sources"));
}

#[tokio::test]
async fn the_run_stops_at_the_maximum_of_tool_calls() {
    let state = run(
        "Odile Marchetti",
        Limits {
            max_tool_calls: 2,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(state.tool_calls, 2);
    assert_eq!(tools(&state), ["url_finder", "url_crawler"]);
    assert_eq!(
        state.stop_reason.as_deref(),
        Some("reached the maximum of 2 tool calls")
    );
}

#[tokio::test]
async fn the_run_stops_when_two_calls_change_nothing() {
    // Tobias Wren's three pages say the same things in fewer words.
    let state = run("Tobias Wren", Limits::default()).await;
    assert_eq!(
        tools(&state),
        ["url_finder", "url_crawler", "url_crawler", "url_crawler"]
    );
    assert_eq!(state.events_changed_history, [false, true, false, false]);
    assert_eq!(
        state.stop_reason.as_deref(),
        Some("no change to the events in the last 2 tool calls")
    );
    assert_eq!(state.events.len(), 2);
}

#[tokio::test]
async fn the_run_stops_when_more_than_80_percent_of_events_have_full_details() {
    let state = run("Halina Vosk", Limits::default()).await;
    assert_eq!(tools(&state), ["url_finder", "url_crawler"]);
    assert_eq!(state.events.len(), 5);
    assert!(state.events.iter().all(Event::has_full_details));
    assert_eq!(
        state.stop_reason.as_deref(),
        Some("100% of the events have full details (more than 80%)")
    );
}

#[tokio::test]
async fn the_run_stops_when_nothing_is_left_to_crawl_with_too_few_events() {
    // A think tool that keeps asking for pages; the supervisor runs out of them.
    let model = stand_in().on_structured_json(THINK_FORMAT, |_| {
        serde_json::to_value(ThinkOutput {
            summary: "more pages".into(),
            gaps: vec![],
            recommendation: "url_crawler".into(),
            reason: "crawl everything".into(),
        })
        .map_err(|e| e.to_string())
    });
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        no_change_window: 5,
        ..Limits::default()
    };
    let (_, state) =
        run_biography_events("Tobias Wren", None, &options(&dir, Arc::new(model), limits))
            .await
            .unwrap();
    assert_eq!(state.crawled.len(), 3);
    assert_eq!(
        state.stop_reason.as_deref(),
        Some("no URLs left to crawl and only 2 events (fewer than 5)")
    );
}

#[test]
fn the_seeds_merge_example_merges_two_births_into_one() {
    let supervisor = Event {
        id: "1".into(),
        name: "Birth".into(),
        description: "Born in NYC 1891".into(),
        location: Some("NYC".into()),
        ..Event::default()
    };
    let tool = Event {
        id: "4".into(),
        name: "Birth".into(),
        description: "Born in Yorkville to immigrants".into(),
        location: Some("Yorkville".into()),
        source: "Wikipedia".into(),
        ..Event::default()
    };
    // The stand-in's matching (what the merge prompt is answered with offline).
    let matches = obvious_matches(
        std::slice::from_ref(&supervisor),
        std::slice::from_ref(&tool),
    );
    let (merged, changed) = merge_events(&[supervisor], &[tool], &matches);
    assert!(changed);
    assert_eq!(
        merged,
        [Event {
            id: "1".into(),
            name: "Birth".into(),
            description: "Born in NYC/Yorkville 1891 to immigrants".into(),
            location: Some("Yorkville".into()),
            source: "Wikipedia".into(),
            ..Event::default()
        }]
    );
}

#[test]
fn conflicting_places_from_two_sources_are_flagged_and_the_primary_source_wins() {
    let known = Event {
        id: "2".into(),
        name: "Death".into(),
        description: "Died in Geneva".into(),
        source: "Britannica".into(),
        location: Some("Geneva".into()),
        date: EventDate::ymd(1977, 11, 8),
        ..Event::default()
    };
    let new = Event {
        id: String::new(),
        name: "Death".into(),
        description: "Died in Lausanne".into(),
        source: "Wikipedia".into(),
        location: Some("Lausanne".into()),
        date: EventDate::ymd(1977, 11, 8),
        ..Event::default()
    };
    let matches = EventMatches {
        matches: vec![graphkit_examples::biography_events::merge::EventMatch {
            new_event: 1,
            existing_id: "2".into(),
            merged_description: "Died in Lausanne or Geneva".into(),
        }],
    };
    let (merged, _) = merge_events(&[known], &[new], &matches);
    let death = &merged[0];
    assert_eq!(death.id, "2");
    assert_eq!(death.location.as_deref(), Some("Lausanne"));
    assert_eq!(death.source, "Wikipedia");
    assert_eq!(death.conflicts.len(), 1);
    assert_eq!(death.conflicts[0].field, "location");
    assert_eq!(death.conflicts[0].values, ["Lausanne", "Geneva"]);
    assert_eq!(death.conflicts[0].sources, ["Wikipedia", "Britannica"]);
}

#[tokio::test]
async fn the_history_stays_capped_with_older_entries_folded_into_a_summary() {
    let state = run(
        "Odile Marchetti",
        Limits {
            history_cap: 3,
            ..Limits::default()
        },
    )
    .await;
    assert_eq!(state.messages.len(), 3);
    assert_eq!(state.messages[0].tool, "summary");
    assert!(
        state.messages[0].summary.contains("url_finder("),
        "{}",
        state.messages[0].summary
    );
    assert_eq!(state.messages[2].tool, "further_event_research");
}

fn complete_events() -> Vec<Event> {
    vec![
        Event {
            id: "1".into(),
            name: "Birth".into(),
            description: "Born".into(),
            date: EventDate::ymd(1902, 3, 14),
            location: Some("Trieste".into()),
            ..Event::default()
        },
        Event {
            id: "2".into(),
            name: "Death".into(),
            description: "Died".into(),
            date: EventDate::ymd(1977, 11, 8),
            location: Some("Geneva".into()),
            ..Event::default()
        },
    ]
}

#[tokio::test]
async fn an_incremental_run_without_gaps_stops_at_once_with_zero_tool_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (summary, state) = run_biography_events(
        "Odile Marchetti",
        Some(complete_events()),
        &options(&dir, Arc::new(stand_in()), Limits::default()),
    )
    .await
    .unwrap();
    assert_eq!(state.tool_calls, 0);
    assert_eq!(summary.tool_calls, 0);
    assert_eq!(state.events, complete_events());
    assert_eq!(
        state.stop_reason.as_deref(),
        Some("the initial events have no gaps: nothing to research")
    );
    assert_eq!(tools(&state), ["check_gaps"]);
}

#[tokio::test]
async fn an_incremental_run_with_gaps_runs_the_normal_flow_and_keeps_the_given_ids() {
    let mut initial = complete_events();
    initial[0].date.day = None;
    initial[0].id = "b".into();
    let dir = tempfile::tempdir().unwrap();
    let (_, state) = run_biography_events(
        "Odile Marchetti",
        Some(initial),
        &options(&dir, Arc::new(stand_in()), Limits::default()),
    )
    .await
    .unwrap();
    assert_eq!(tools(&state)[..2], ["check_gaps", "url_finder"]);
    let birth = event_named(&state, "Birth");
    assert_eq!(birth.id, "b");
    assert_eq!(birth.date, EventDate::ymd(1902, 3, 14));
}

#[tokio::test]
async fn bad_input_gets_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_biography_events(
        "  ",
        None,
        &options(&dir, Arc::new(stand_in()), Limits::default()),
    )
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("the person to research is empty"),
        "{err}"
    );

    let err =
        event::parse_initial_events("events.json", "[{\"id\": \"1\", \"name\": ").unwrap_err();
    assert!(matches!(err, ExampleError::Input { .. }));
    assert!(err.to_string().contains("not JSON"), "{err}");

    let month_13 = r#"[{"id": "1", "name": "Birth", "description": "", "date": {"year": 1902, "month": 13, "day": null}}]"#;
    let err = event::parse_initial_events("events.json", month_13).unwrap_err();
    assert!(err.to_string().contains("month 13 is not a month"), "{err}");

    let wrong_type =
        r#"[{"id": "1", "name": "Birth", "description": "", "date": {"year": "1902"}}]"#;
    let err = event::parse_initial_events("events.json", wrong_type).unwrap_err();
    assert!(err.to_string().contains("[0].date.year"), "{err}");

    let err = run_biography_events(
        "X",
        None,
        &options(
            &dir,
            Arc::new(stand_in()),
            Limits {
                max_tool_calls: 0,
                ..Limits::default()
            },
        ),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("--max-tool-calls"), "{err}");
}

/// A search backend (a test double) whose page extraction fails once for URLs containing
/// `fail_on`, as a crash in the middle of a crawl would.
struct FailingOnce {
    inner: Arc<dyn SearchBackend>,
    fail_on: &'static str,
    failed: AtomicBool,
}

#[async_trait]
impl SearchBackend for FailingOnce {
    async fn search(&self, query: &str, max: usize) -> Result<Vec<SearchResult>, ToolError> {
        self.inner.search(query, max).await
    }
    async fn extract(&self, urls: &[String]) -> Result<Vec<ExtractedPage>, ToolError> {
        if urls.iter().any(|u| u.contains(self.fail_on))
            && !self.failed.swap(true, Ordering::SeqCst)
        {
            return Err(ToolError::Failed(
                "connection reset (simulated crash)".into(),
            ));
        }
        self.inner.extract(urls).await
    }
}

#[tokio::test]
async fn a_run_that_crashed_mid_crawl_resumes_from_its_checkpoint_and_ends_like_an_uninterrupted_run()
 {
    let uninterrupted = run("Odile Marchetti", Limits::default()).await;

    let dir = tempfile::tempdir().unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let model = stand_in();
    let failing = Arc::new(FailingOnce {
        inner: corpus(),
        fail_on: "britannica",
        failed: AtomicBool::new(false),
    });
    let first = options_with(
        &dir,
        Arc::new(model.clone()),
        failing.clone(),
        Arc::clone(&saver),
        Limits::default(),
    );
    let err = run_biography_events("Odile Marchetti", None, &first)
        .await
        .unwrap_err();
    assert!(matches!(err, ExampleError::Graph(_)), "{err}");
    let calls_before = model.requests().len();

    // Starting again without --resume is refused; with it, the run continues.
    assert!(
        run_biography_events("Odile Marchetti", None, &first)
            .await
            .unwrap_err()
            .to_string()
            .contains("--resume")
    );
    let mut resumed = first;
    resumed.target.resume = true;
    let (summary, state) = run_biography_events("", None, &resumed).await.unwrap();
    assert!(summary.resumed);
    assert_eq!(state.events, uninterrupted.events);
    assert_eq!(state.messages, uninterrupted.messages);
    assert_eq!(state.tool_calls, 4);
    // The Wikipedia crawl was not redone: only Britannica's crawl onwards asked the model.
    let wikipedia_crawl_prompts = model.requests()[calls_before..]
        .iter()
        .filter(|r| {
            r.last_user_text()
                .contains("Trieste to a family of ship chandlers")
        })
        .filter(|r| r.last_user_text().contains("<chunks>"))
        .count();
    assert_eq!(wikipedia_crawl_prompts, 0);
}

#[tokio::test]
async fn the_tool_graphs_stream_their_nodes_under_the_tool_call_namespace() {
    use futures::StreamExt;
    use graphkit::{CompileOptions, RunConfig, Scoped, StreamMode, StreamPayload};
    use graphkit_examples::biography_events::{BiographyStateUpdate, Deps, build_graph};

    let deps = Deps {
        model: Arc::new(stand_in()),
        search: corpus(),
        sites: Sites::offline(),
    };
    let graph = build_graph(&deps, CompileOptions::new()).unwrap();
    let input = BiographyStateUpdate::new()
        .person_to_research("Odile Marchetti".to_owned())
        .limits(Limits::default());
    let mut stream = graph.stream_with(
        input,
        RunConfig::new().subgraphs(true),
        [StreamMode::Updates],
    );
    // Each event of a tool graph: ["tools:<step>", "<tool>:<call id>"] / node.
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        if let StreamPayload::Updates {
            node,
            update: Scoped::Subgraph(_),
            ..
        } = event.payload
        {
            let namespace: Vec<String> = event.namespace.iter().map(|s| s.to_string()).collect();
            let tool_node = namespace[0].split(':').next().unwrap_or("").to_owned();
            seen.push(format!("{tool_node}/{}/{node}", namespace[1]));
        }
    }
    let crawls: Vec<&String> = seen
        .iter()
        .filter(|s| s.ends_with("/structure_events"))
        .collect();
    assert_eq!(
        crawls,
        [
            "tools/url_crawler:call_2/structure_events",
            "tools/url_crawler:call_3/structure_events"
        ]
    );
    assert_eq!(
        seen.iter()
            .filter(|s| *s == "tools/further_event_research:call_4/extract_updates")
            .count(),
        1
    );
}

/// A weak real model (the local llama.cpp server) must not break the run: bounded to one
/// tool call (url_finder, then think_tool on the real model), it ends within its limits
/// with a stop reason and writes the outputs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weak_real_model_ends_within_limits_and_writes_outputs() {
    let Some(spec) = common::local_model_spec() else {
        return;
    };
    let model = graphkit_llm::init_chat_model(&spec).expect("model");
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_tool_calls: 1,
        ..Limits::default()
    };
    let (summary, state) = run_biography_events("Halina Vosk", None, &options(&dir, model, limits))
        .await
        .expect("the run ends");
    assert_eq!(state.tool_calls, 1);
    assert_eq!(summary.stop_reason, "reached the maximum of 1 tool calls");
    assert_eq!(state.messages.len(), 1);
    assert!(state.messages[0].think.is_some());
    for file in [
        "events.json",
        "history.json",
        "run_summary.json",
        "timeline.md",
    ] {
        assert!(dir.path().join("run").join(file).exists(), "{file}");
    }
}

#[tokio::test]
async fn a_stop_request_ends_the_run_at_a_checkpoint_and_resume_finishes_it() {
    let uninterrupted = run("Odile Marchetti", Limits::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let first = options_with(
        &dir,
        Arc::new(stand_in()),
        corpus(),
        Arc::clone(&saver),
        Limits::default(),
    );
    first.target.stop.request(); // as a Ctrl-C would
    let err = run_biography_events("Odile Marchetti", None, &first)
        .await
        .unwrap_err();
    assert!(matches!(err, ExampleError::Interrupted), "{err}");
    assert!(!dir.path().join("run").join("events.json").exists());

    let mut resumed = first;
    resumed.target.resume = true;
    resumed.target.stop = StopSignal::new();
    let (summary, state) = run_biography_events("", None, &resumed).await.unwrap();
    assert!(summary.resumed);
    assert_eq!(state.events, uninterrupted.events);
    assert_eq!(state.tool_calls, 4);
}
