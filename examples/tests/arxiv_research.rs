//! The arXiv research workflow (seed 002): the reference key and `merge_facts`, the fact
//! gate, the clear sentinel, the PDF fallback, the synthesizer's sources, bad input, and
//! a run killed in the expander and resumed — all through the real graph, the real arXiv
//! client (against the offline server on 127.0.0.1) and the offline stand-in.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use graphkit::State;
use graphkit::checkpoint::{Checkpointer, InMemorySaver};
use graphkit_examples::arxiv_research::{
    self as ar, ArxivResearchOptions, CorpusPaper, Fact, FactKind, GraphDeps, NodeDeps,
    OfflineArxiv, OfflineArxivServer, ResearchState, ResearchStateUpdate, reference_key,
};
use graphkit_examples::shared::{ExampleError, Progress, ProgressMode, StopSignal};
use graphkit_llm::{AssistantMessage, ChatModel, ChatRequest, LlmError, StandInModel};
use proptest::prelude::*;

// ---------------------------------------------------------------- reference key

fn reference() -> Fact {
    Fact::new(FactKind::ScholarReference, "")
}

proptest! {
    #[test]
    fn arxiv_versions_prefixes_and_abs_or_pdf_urls_give_one_key(
        yymm in 1000u32..9999, num in 10000u32..99999, v1 in 1u8..9, v2 in 1u8..9,
        upper in any::<bool>(), pdf in any::<bool>(),
    ) {
        let id = format!("{yymm}.{num}");
        let a = Fact { arxiv_id: Some(format!("{}{id}v{v1}", if upper { "arXiv:" } else { "" })), ..reference() };
        let b = Fact {
            url: Some(format!("https://arxiv.org/{}/{id}v{v2}{}", if pdf { "pdf" } else { "abs" }, if pdf { ".pdf" } else { "" })),
            title: Some("Something else".into()),
            ..reference()
        };
        let key = reference_key(&a);
        prop_assert_eq!(key.clone(), Some(format!("arxiv:{id}")));
        prop_assert_eq!(reference_key(&b), key);
    }

    #[test]
    fn the_first_present_identifier_wins_arxiv_then_doi_then_url_then_title_year(
        has_id in any::<bool>(), has_doi in any::<bool>(), has_url in any::<bool>(), has_title in any::<bool>(),
    ) {
        let fact = Fact {
            arxiv_id: has_id.then(|| "2401.00001v3".to_owned()),
            doi: has_doi.then(|| "https://doi.org/10.1/ABC".to_owned()),
            url: has_url.then(|| "https://example.org/paper".to_owned()),
            title: has_title.then(|| "A Title".to_owned()),
            year: Some(2024),
            ..reference()
        };
        let expected = if has_id {
            Some("arxiv:2401.00001".to_owned())
        } else if has_doi {
            Some("doi:10.1/abc".to_owned())
        } else if has_url {
            Some("url:example.org/paper".to_owned())
        } else if has_title {
            Some("title:a title|2024".to_owned())
        } else {
            None
        };
        prop_assert_eq!(reference_key(&fact), expected);
    }

    #[test]
    fn urls_match_across_scheme_host_case_trailing_slash_fragment_and_utm(
        path in "[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}", https in any::<bool>(), slash in any::<bool>(),
        fragment in proptest::option::of("[a-z]{1,5}"), utm in any::<bool>(),
    ) {
        let plain = Fact { url: Some(format!("http://example.org/{path}")), ..reference() };
        let noisy = Fact {
            url: Some(format!(
                "{}://EXAMPLE.org/{path}{}{}{}",
                if https { "https" } else { "HTTP" },
                if slash { "/" } else { "" },
                if utm { "?utm_source=x&utm_medium=y" } else { "" },
                fragment.map(|f| format!("#{f}")).unwrap_or_default(),
            )),
            ..reference()
        };
        prop_assert_eq!(reference_key(&noisy), reference_key(&plain));
    }

    #[test]
    fn titles_match_ignoring_case_punctuation_and_spacing_but_not_the_year(
        words in proptest::collection::vec("[a-zA-Z0-9]{1,8}", 1..6), year in 1990u16..2030,
    ) {
        let a = Fact { title: Some(words.join(" ")), year: Some(year), ..reference() };
        let b = Fact { title: Some(format!("  {}. ", words.join(" ,  ").to_uppercase())), year: Some(year), ..reference() };
        let c = Fact { year: Some(year + 1), ..a.clone() };
        prop_assert_eq!(reference_key(&a), reference_key(&b));
        prop_assert_ne!(reference_key(&a), reference_key(&c));
    }

    #[test]
    fn other_kinds_have_no_key_whatever_they_carry(kind in 1usize..7) {
        let kinds = [FactKind::ScholarReference, FactKind::Finding, FactKind::Draft, FactKind::Critique,
            FactKind::PlanStep, FactKind::GeneralReference, FactKind::Note];
        let fact = Fact { kind: kinds[kind], arxiv_id: Some("2401.00001".into()), ..reference() };
        prop_assert_eq!(reference_key(&fact), None);
    }
}

#[test]
fn merge_facts_replaces_a_reference_in_place_latest_wins_and_appends_other_kinds() {
    let mut state = ResearchState::default();
    let v1 = Fact {
        arxiv_id: Some("2401.10001v1".into()),
        title: Some("old".into()),
        ..reference()
    };
    let note = Fact::new(FactKind::Note, "n");
    let other = Fact {
        doi: Some("10.1/x".into()),
        ..reference()
    };
    state
        .apply_update(ResearchStateUpdate::new().facts(vec![v1, note.clone(), other.clone()]))
        .unwrap();
    let v2 = Fact {
        url: Some("https://arxiv.org/abs/2401.10001v2".into()),
        title: Some("new".into()),
        extended_summary: Some("s".into()),
        ..reference()
    };
    state
        .apply_update(ResearchStateUpdate::new().facts(vec![v2.clone(), note.clone()]))
        .unwrap();
    assert_eq!(state.facts, vec![v2, note.clone(), other, note]);
}

// ---------------------------------------------------------------- harness

fn paper(id: &str, title: &str, pdf: bool) -> CorpusPaper {
    CorpusPaper {
        id: id.into(),
        title: title.into(),
        authors: vec!["A. Author".into()],
        published: "2024-01-01T00:00:00Z".into(),
        summary: format!("{title}: an abstract about widgets and gadgets."),
        doi: None,
        url: None,
        journal_ref: None,
        body: format!("Full text body of {title}, on widgets."),
        pdf,
    }
}

/// Five distinct papers that all match the stand-in's queries about widgets.
fn five_papers() -> OfflineArxiv {
    OfflineArxiv::from_papers(
        (1..=5)
            .map(|n| {
                paper(
                    &format!("2401.0000{n}v1"),
                    &format!("Widget paper {n}"),
                    true,
                )
            })
            .collect(),
    )
}

fn deps(
    model: Arc<dyn ChatModel>,
    server: &OfflineArxivServer,
    expander: Option<Arc<dyn ChatModel>>,
) -> GraphDeps {
    GraphDeps {
        supervisor: Arc::clone(&model),
        worker: Arc::clone(&model),
        nodes: NodeDeps {
            planner: Arc::clone(&model),
            expander: expander.unwrap_or_else(|| Arc::clone(&model)),
            synthesizer: model,
            arxiv: server.client(),
            max_steps: 6,
        },
        worker_max_iterations: 8,
    }
}

fn options(
    topic: &str,
    k: u32,
    deps: GraphDeps,
    saver: Arc<dyn Checkpointer>,
    thread: &str,
) -> ArxivResearchOptions {
    ArxivResearchOptions {
        topic: topic.into(),
        top_k: 5,
        max_citations_per_step: k,
        deps,
        checkpointer: saver,
        thread: thread.into(),
        max_concurrency: 1,
        stream: false,
        progress: Progress::with_mode("steps", ProgressMode::Quiet),
        stop: StopSignal::new(),
    }
}

async fn run(corpus: OfflineArxiv, adds: usize, k: u32) -> (ResearchState, StandInModel) {
    let server = corpus
        .serve()
        .await
        .expect("start the offline arXiv server");
    let model = ar::offline_model(adds);
    let shared: Arc<dyn ChatModel> = Arc::new(model.clone());
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let state = ar::run_arxiv_research(&options(
        "widgets",
        k,
        deps(shared, &server, None),
        saver,
        "t",
    ))
    .await
    .expect("the run finishes");
    (state, model)
}

fn references_of_step(state: &ResearchState, step: usize) -> Vec<&Fact> {
    state
        .facts
        .iter()
        .filter(|f| f.is_reference() && f.step_idx == Some(step))
        .collect()
}

// ---------------------------------------------------------------- the gate

#[tokio::test]
async fn the_fact_gate_admits_exactly_k_of_five_papers_the_worker_adds() {
    let (state, model) = run(five_papers(), 5, 3).await;
    // The worker really offered five in step 1 (five add_scholar_reference_tool calls).
    let adds = model
        .requests()
        .iter()
        .flat_map(|r| r.messages.iter())
        .filter_map(|m| m.as_assistant())
        .flat_map(|a| a.tool_calls.iter())
        .filter(|c| c.name == ar::ADD_REFERENCE)
        .map(|c| c.id.clone())
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert!(adds >= 5, "the worker made {adds} add calls");
    let first: Vec<&str> = references_of_step(&state, 0)
        .iter()
        .map(|f| f.title.as_deref().unwrap())
        .collect();
    assert_eq!(
        first,
        ["Widget paper 1", "Widget paper 2", "Widget paper 3"]
    );
    // Step 2 offers the same five again: the three known collapse, two are new.
    let second: Vec<&str> = references_of_step(&state, 1)
        .iter()
        .map(|f| f.title.as_deref().unwrap())
        .collect();
    assert_eq!(second, ["Widget paper 4", "Widget paper 5"]);
    assert!(references_of_step(&state, 2).is_empty());
    assert!(state.done);
}

#[test]
fn the_gate_counts_against_what_the_step_already_admitted_and_lets_other_kinds_through() {
    let refs: Vec<Fact> = (1..=5)
        .map(|n| Fact {
            arxiv_id: Some(format!("2401.0000{n}")),
            ..reference()
        })
        .collect();
    let existing = vec![refs[0].clone()];
    let mut pending = refs.clone();
    pending.insert(2, Fact::new(FactKind::GeneralReference, "blog"));
    pending.push(Fact {
        arxiv_id: Some("2401.00002v2".into()),
        ..reference()
    });
    let (admitted, count) = ar::gate(&existing, &pending, 3, 1);
    let ids: Vec<Option<&str>> = admitted.iter().map(|f| f.arxiv_id.as_deref()).collect();
    assert_eq!(ids, [Some("2401.00002"), None, Some("2401.00003")]);
    assert_eq!(count, 2);
}

// ---------------------------------------------------------------- the clear sentinel

#[tokio::test]
async fn each_plan_step_starts_with_cleared_pending_facts_and_a_reset_count() {
    let mut state = ResearchState {
        pending_facts: vec![reference()],
        step_citation_count: 3,
        plan: Some(ar::Plan {
            main_query: "q".into(),
            steps: vec![ar::PlanStep::default(); 2],
            success_criteria: vec![],
        }),
        ..ResearchState::default()
    };
    let update = ar::step_iterator(Arc::new(state.clone())).await.unwrap();
    assert_eq!(update.pending_facts.as_ref().map(|u| u.clear), Some(true));
    state.apply_update(update).unwrap();
    assert!(state.pending_facts.is_empty());
    assert_eq!(state.step_citation_count, 0);
    assert!(state.messages[0].text().starts_with("PLAN STEP 1/2"));

    // Through the graph: after the run nothing is pending, and every step's gate saw
    // only its own step's references (step 2 never re-admits step 1's pending ones).
    let (done, _) = run(five_papers(), 5, 3).await;
    assert!(done.pending_facts.is_empty());
    let steps: Vec<Option<usize>> = done
        .facts
        .iter()
        .filter(|f| f.is_reference())
        .map(|f| f.step_idx)
        .collect();
    assert_eq!(steps, [Some(0), Some(0), Some(0), Some(1), Some(1)]);
}

// ---------------------------------------------------------------- PDF fallback

#[tokio::test]
async fn the_expander_reads_the_pdf_and_falls_back_to_the_abstract_without_one_or_for_a_corrupt_one()
 {
    let corpus = OfflineArxiv::from_papers(vec![
        paper("2401.00001v1", "Good PDF", true),
        paper("2401.00002v1", "No PDF", false),
        paper("2401.00003v1", "Corrupt PDF", true),
    ])
    .with_pdf_bytes(
        "2401.00003v1",
        b"%PDF-1.4\nthis is not a PDF body\n%%EOF".to_vec(),
    );
    let server = corpus.serve().await.unwrap();
    let arxiv = server.client();
    let fact = |id: &str, title: &str| Fact {
        arxiv_id: Some(id.into()),
        title: Some(title.into()),
        abstract_text: Some(format!("{title} abstract")),
        ..reference()
    };
    let (source, text) = ar::paper_text(&arxiv, &fact("2401.00001v1", "Good PDF")).await;
    assert_eq!(source, "pdf");
    assert!(text.contains("Full text body of Good PDF"), "{text}");
    let (source, text) = ar::paper_text(&arxiv, &fact("2401.00002v1", "No PDF")).await;
    assert_eq!(
        (source, text.contains("No PDF abstract")),
        ("abstract", true)
    );
    let (source, text) = ar::paper_text(&arxiv, &fact("2401.00003v1", "Corrupt PDF")).await;
    assert_eq!(
        (source, text.contains("Corrupt PDF abstract")),
        ("abstract", true)
    );

    // Through the graph: every paper still gets a summary, marked with its source.
    let (state, _) = run(
        OfflineArxiv::from_papers(vec![
            paper("2401.00001v1", "Good widget PDF", true),
            paper("2401.00002v1", "No widget PDF", false),
            paper("2401.00003v1", "Corrupt widget PDF", true),
        ])
        .with_pdf_bytes("2401.00003v1", b"%PDF-1.4 garbage".to_vec()),
        3,
        3,
    )
    .await;
    let sources: Vec<(&str, &str)> = state
        .facts
        .iter()
        .filter(|f| f.is_reference())
        .map(|f| {
            (
                f.title.as_deref().unwrap(),
                f.summary_source.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [
            ("Good widget PDF", "pdf"),
            ("No widget PDF", "abstract"),
            ("Corrupt widget PDF", "abstract")
        ]
    );
}

#[test]
fn the_generated_pdf_is_a_real_pdf_whose_text_can_be_extracted() {
    let pdf = ar::text_pdf(&["Hello (PDF) world".into(), "second line".into()]);
    let text = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(graphkit_tools::prebuilt::arxiv::pdf_text(pdf))
        .unwrap();
    assert!(
        text.contains("Hello (PDF) world") && text.contains("second line"),
        "{text}"
    );
}

// ---------------------------------------------------------------- synthesizer

#[tokio::test]
async fn the_synthesizer_cites_only_references_with_an_extended_summary() {
    let server = five_papers().serve().await.unwrap();
    let model = ar::offline_model(3);
    let summarised = Fact {
        arxiv_id: Some("2401.00001".into()),
        title: Some("Summarised".into()),
        extended_summary: Some("A summary.".into()),
        ..reference()
    };
    let bare = Fact {
        arxiv_id: Some("2401.00002".into()),
        title: Some("Bare".into()),
        ..reference()
    };
    let state = ResearchState {
        topic: "widgets".into(),
        facts: vec![bare, summarised],
        ..ResearchState::default()
    };
    let d = deps(Arc::new(model.clone()), &server, None);
    let update = ar::synthesizer(Arc::new(state), graphkit::RunContext(Arc::new(d.nodes)))
        .await
        .unwrap();
    let mut after = ResearchState::default();
    after.apply_update(update).unwrap();
    let draft = &after.facts[0];
    assert_eq!(draft.kind, FactKind::Draft);
    assert!(
        draft.content.contains("## Sources\n\n1. *Summarised*"),
        "{}",
        draft.content
    );
    assert!(!draft.content.contains("Bare"), "{}", draft.content);
    assert!(draft.content.contains("*Summarised*"));
    assert_eq!(ar::cited_numbers(&draft.content).iter().max(), Some(&1));
    for section in ar::prompts::SECTIONS {
        assert!(draft.content.contains(&format!("## {section}")));
    }
    assert_eq!(after.messages[0].text(), draft.content);
    let asked = model.requests()[0].last_user_text().to_owned();
    assert!(
        asked.contains("[1] Summarised") && !asked.contains("Bare"),
        "{asked}"
    );
}

// ---------------------------------------------------------------- bad input

#[test]
fn an_empty_topic_or_k_zero_is_refused_with_what_to_do() {
    let err = ar::check_options("  ", 5, 3, 6).unwrap_err();
    assert!(
        matches!(err, ExampleError::Usage(ref m) if m.contains("the topic is empty")),
        "{err}"
    );
    let err = ar::check_options("t", 5, 0, 6).unwrap_err();
    assert!(
        err.to_string()
            .contains("--max-citations-per-step must be at least 1"),
        "{err}"
    );
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn the_cli_refuses_an_empty_topic_and_k_zero_with_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["arxiv-research", ""],
        vec!["arxiv-research", "x", "--max-citations-per-step", "0"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
            .current_dir(dir.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("error: "), "{err}");
        assert!(
            !dir.path().join("graphkit-runs").exists(),
            "bad input created a run directory"
        );
    }
}

#[tokio::test]
async fn an_atom_feed_that_does_not_parse_reaches_the_worker_as_a_clear_tool_error_and_the_run_still_ends()
 {
    let broken = five_papers().with_feed("<feed><entry><title>cut off");
    let server = broken.serve().await.unwrap();
    let err = server.client().search("widgets", 5).await.unwrap_err();
    assert!(err.to_string().contains("the arXiv Atom feed"), "{err}");

    let (state, model) = run(five_papers().with_feed("not xml <<<"), 3, 3).await;
    let tool_errors: Vec<String> = model
        .requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .filter(|t| t.is_error && t.name.as_deref() == Some(ar::ARXIV_SEARCH))
        .map(|t| t.content.clone())
        .collect();
    assert!(
        !tool_errors.is_empty() && tool_errors[0].contains("Atom"),
        "{tool_errors:?}"
    );
    assert!(state.done);
    assert!(state.facts.iter().all(|f| !f.is_reference()));
    let draft = state
        .facts
        .iter()
        .find(|f| f.kind == FactKind::Draft)
        .unwrap();
    assert!(draft.content.contains("No source could be summarised"));
    assert!(
        draft
            .content
            .contains("No new reference was admitted for plan step(s) 1, 2, 3")
    );
}

// ---------------------------------------------------------------- kill and resume

/// The expander's model for the interrupted run: the stand-in, except that its `stop_at`-th
/// summary request never returns (the process "dies" there) and tells the test.
struct DiesAt {
    inner: StandInModel,
    calls: AtomicUsize,
    stop_at: usize,
    died: Arc<tokio::sync::Notify>,
    answered: Mutex<Vec<String>>,
}

#[async_trait]
impl ChatModel for DiesAt {
    fn model_name(&self) -> &str {
        "dies-at"
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage, LlmError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.stop_at {
            self.died.notify_one();
            std::future::pending::<()>().await;
        }
        let title = request
            .last_user_text()
            .lines()
            .find_map(|l| l.strip_prefix("Title: "))
            .unwrap_or_default()
            .to_owned();
        self.answered.lock().expect("not poisoned").push(title);
        self.inner.chat(request).await
    }
}

#[tokio::test]
async fn a_run_killed_in_the_expander_resumes_without_summarising_a_paper_twice_and_reports_the_same()
 {
    // Uninterrupted.
    let (whole, _) = run(five_papers(), 5, 3).await;
    let report = |s: &ResearchState| {
        s.facts
            .iter()
            .find(|f| f.kind == FactKind::Draft)
            .unwrap()
            .content
            .clone()
    };

    let server = five_papers().serve().await.unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let model: Arc<dyn ChatModel> = Arc::new(ar::offline_model(5));
    let died = Arc::new(tokio::sync::Notify::new());
    let first = Arc::new(DiesAt {
        inner: ar::offline_model(5),
        calls: AtomicUsize::new(0),
        stop_at: 3,
        died: Arc::clone(&died),
        answered: Mutex::new(Vec::new()),
    });
    let opts = options(
        "widgets",
        3,
        deps(
            Arc::clone(&model),
            &server,
            Some(first.clone() as Arc<dyn ChatModel>),
        ),
        Arc::clone(&saver),
        "killed",
    );
    tokio::select! {
        result = ar::run_arxiv_research(&opts) => panic!("the run should have died, got {result:?}"),
        () = died.notified() => {} // dropping the run here is the kill
    }
    let before = first.answered.lock().unwrap().clone();
    assert_eq!(before.len(), 2, "{before:?}");

    let second = Arc::new(DiesAt {
        inner: ar::offline_model(5),
        calls: AtomicUsize::new(0),
        stop_at: usize::MAX,
        died: Arc::new(tokio::sync::Notify::new()),
        answered: Mutex::new(Vec::new()),
    });
    let opts = options(
        "widgets",
        3,
        deps(model, &server, Some(second.clone() as Arc<dyn ChatModel>)),
        saver,
        "killed",
    );
    // The dropped run releases its thread from a task it spawns: let that task run.
    let mut resumed = None;
    for _ in 0..10_000 {
        match ar::run_arxiv_research(&opts).await {
            Err(ExampleError::Graph(graphkit::Error::ThreadBusy(_))) => {
                tokio::task::yield_now().await
            }
            other => {
                resumed = Some(other.unwrap());
                break;
            }
        }
    }
    let resumed = resumed.expect("the killed run's thread was never released");
    let after = second.answered.lock().unwrap().clone();
    let mut all: Vec<String> = before.iter().chain(after.iter()).cloned().collect();
    all.sort();
    assert_eq!(
        all,
        (1..=5)
            .map(|n| format!("Widget paper {n}"))
            .collect::<Vec<_>>(),
        "before {before:?}, after {after:?}"
    );
    assert_eq!(report(&resumed), report(&whole));
}

#[test]
fn the_cli_sigkilled_in_the_expander_resumes_and_writes_the_report_of_an_uninterrupted_run() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let bin = env!("CARGO_BIN_EXE_graphkit-research");
    let dir = tempfile::tempdir().unwrap();
    let (whole, killed) = (dir.path().join("whole"), dir.path().join("killed"));
    let out = Command::new(bin)
        .current_dir(dir.path())
        .args(["arxiv-research", "-q", "--out"])
        .arg(&whole)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A slow run (the stand-in waits 200 ms per reply, one paper at a time), killed with
    // SIGKILL once the second summary has finished: a task's end is reported just before
    // its pending write is saved, and with one paper at a time the second starts only
    // after the first is saved — so at least one summary is on disk.
    let mut child = Command::new(bin)
        .current_dir(dir.path())
        .args([
            "arxiv-research",
            "--offline-delay-ms",
            "200",
            "--max-concurrency",
            "1",
            "--out",
        ])
        .arg(&killed)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        let second = line.contains("expander: 2 paper(s) summarised");
        seen.push(line);
        if second {
            break;
        }
    }
    assert!(
        seen.last().is_some_and(|l| l.contains("expander: 2")),
        "{seen:#?}"
    );
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    assert!(!killed.join("report.md").exists());

    let out = Command::new(bin)
        .current_dir(dir.path())
        .args(["arxiv-research", "--resume", "--out"])
        .arg(&killed)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("resuming from the last checkpoint"), "{err}");
    assert!(
        !err.contains("PLAN STEP"),
        "the resumed run redid a plan step: {err}"
    );
    // At least the first summary was kept: the resumed run summarises at most four.
    assert!(!err.contains("expander: 5 paper(s)"), "{err}");
    let read = |d: &std::path::Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    assert_eq!(read(&killed, "report.md"), read(&whole, "report.md"));
    assert_eq!(read(&killed, "facts.json"), read(&whole, "facts.json"));
}

/// A weak real model (the local llama.cpp server) on the offline corpus: the run ends on
/// its own within its limits — a report, or a clear error from the planner or the
/// synthesizer — and never panics. It takes minutes on the small local model, so it runs on
/// demand (`GRAPHKIT_TEST_LLM_SLOW=1`); CI runs its bounded twin through the CLI with a time
/// budget (`real_model.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weak_real_model_ends_on_its_own_within_limits() {
    let Some(spec) = common::slow_local_model_spec() else {
        return;
    };
    let model = graphkit_llm::init_chat_model(&spec).expect("model");
    let server = OfflineArxiv::shipped()
        .expect("corpus")
        .serve()
        .await
        .expect("server");
    let mut d = deps(model, &server, None);
    d.nodes.max_steps = 1;
    d.worker_max_iterations = 3;
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    // An unusable plan or report no longer fails the run: the report says so instead.
    let state = ar::run_arxiv_research(&options("speculative decoding", 3, d, saver, "weak"))
        .await
        .expect("the run ends with a report");
    assert!(state.done);
    assert!(state.facts.iter().any(|f| f.kind == FactKind::Draft));
}

#[tokio::test]
async fn each_step_keeps_the_workers_deliverable_as_a_finding() {
    let (state, _) = run(five_papers(), 3, 3).await;
    let findings: Vec<&Fact> = state
        .facts
        .iter()
        .filter(|f| f.kind == FactKind::Finding)
        .collect();
    assert_eq!(findings.len(), 3);
    assert!(
        findings[0].content.starts_with("Find the main methods"),
        "{}",
        findings[0].content
    );
    assert!(findings[0].content.contains("(arXiv:2401.00001v1)"));
    assert_eq!(findings[2].step_idx, Some(2));
    assert!(state.facts.iter().all(|f| f.kind != FactKind::Note));
}

#[tokio::test]
async fn a_missing_deliverable_block_or_a_step_never_delegated_leaves_a_note() {
    use graphkit_llm::{Message, ToolCall};
    let handed_back = Message::Assistant(AssistantMessage::with_tool_calls(
        "",
        vec![ToolCall::new(
            "transfer_back_to_supervisor",
            serde_json::json!({}),
        )],
    ));
    let state = |messages: Vec<Message>| {
        Arc::new(ResearchState {
            messages,
            ..ResearchState::default()
        })
    };
    let plain = state(vec![
        Message::user("PLAN STEP 1/1\nTask: t"),
        Message::assistant("Some papers, no block."),
        handed_back,
    ]);
    let update = ar::fact_gate(plain, graphkit::RunConfig::new())
        .await
        .unwrap();
    let mut after = ResearchState::default();
    after.apply_update(update).unwrap();
    let kinds: Vec<(FactKind, &str)> = after
        .facts
        .iter()
        .map(|f| (f.kind, f.content.as_str()))
        .collect();
    assert_eq!(kinds[1], (FactKind::Finding, "Some papers, no block."));
    assert_eq!(kinds[0].0, FactKind::Note);
    assert!(
        kinds[0].1.contains("no ==DELIVERABLE== block"),
        "{}",
        kinds[0].1
    );

    let never = state(vec![
        Message::user("PLAN STEP 1/1\nTask: t"),
        Message::assistant("I'll do it myself."),
    ]);
    let update = ar::fact_gate(never, graphkit::RunConfig::new())
        .await
        .unwrap();
    let mut after = ResearchState::default();
    after.apply_update(update).unwrap();
    assert_eq!(after.facts.len(), 1);
    assert!(
        after.facts[0].content.contains("did not delegate"),
        "{}",
        after.facts[0].content
    );
}

#[tokio::test]
async fn top_k_comes_from_the_run_config_and_bounds_what_the_search_returns() {
    let server = five_papers().serve().await.expect("server");
    let model = ar::offline_model(5);
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let mut opts = options(
        "widgets",
        5,
        deps(Arc::new(model.clone()), &server, None),
        saver,
        "k",
    );
    opts.top_k = 2;
    let state = ar::run_arxiv_research(&opts)
        .await
        .expect("the run finishes");
    // The search tool's schema offers no result count to the model...
    let request = model
        .requests()
        .into_iter()
        .find(|r| r.offers_tool(ar::ARXIV_SEARCH))
        .expect("a worker request");
    let search = request
        .tools
        .iter()
        .find(|t| t.name == ar::ARXIV_SEARCH)
        .expect("search tool");
    assert_eq!(search.parameters["required"], serde_json::json!(["query"]));
    assert!(search.parameters["properties"].get("max_results").is_none());
    // ...and every search returned the two of the run config.
    let results: Vec<usize> = model
        .requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .filter(|t| t.name.as_deref() == Some(ar::ARXIV_SEARCH))
        .map(|t| {
            serde_json::from_str::<Vec<ar::SearchHit>>(&t.content)
                .expect("hits")
                .len()
        })
        .collect();
    assert!(
        !results.is_empty() && results.iter().all(|&n| n == 2),
        "{results:?}"
    );
    assert_eq!(state.facts.iter().filter(|f| f.is_reference()).count(), 2);
}

// ---------------------------------------------------------------- duplicates in a run

/// The keys `add_scholar_reference_tool` acknowledged during the run (as the worker saw
/// the tool results), one per call.
fn recorded_keys(model: &StandInModel) -> Vec<String> {
    use graphkit_llm::Message;
    let mut seen = std::collections::HashSet::new();
    model
        .requests()
        .iter()
        .flat_map(|r| r.messages.iter())
        .filter_map(|m| match m {
            Message::Tool(t)
                if t.name.as_deref() == Some(ar::ADD_REFERENCE)
                    && seen.insert(t.tool_call_id.clone()) =>
            {
                Some(
                    t.content
                        .split_once("(key ")?
                        .1
                        .split_once(')')?
                        .0
                        .to_owned(),
                )
            }
            _ => None,
        })
        .collect()
}

/// A run over the shipped corpus on `topic`: the worker records all five hits of each
/// step and the gate admits up to five, so only the key limits what is kept.
async fn run_shipped(topic: &str) -> (ResearchState, StandInModel) {
    let server = OfflineArxiv::shipped()
        .expect("the shipped corpus")
        .serve()
        .await
        .expect("start the offline arXiv server");
    let model = ar::offline_model(5);
    let shared: Arc<dyn ChatModel> = Arc::new(model.clone());
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let state = ar::run_arxiv_research(&options(
        topic,
        5,
        deps(shared, &server, None),
        saver,
        "dups",
    ))
    .await
    .expect("the run finishes");
    (state, model)
}

/// The keys of the references in `facts`, each once per reference.
fn reference_keys(state: &ResearchState) -> Vec<String> {
    let references: Vec<&Fact> = state.facts.iter().filter(|f| f.is_reference()).collect();
    let keys: Vec<String> = references.iter().filter_map(|f| reference_key(f)).collect();
    assert_eq!(keys.len(), references.len(), "every reference has a key");
    keys
}

#[tokio::test]
async fn an_offline_run_meets_the_title_year_duplicate_and_keeps_the_first_of_the_pair() {
    let (state, model) = run_shipped("graph neural networks for molecules").await;
    let key = "title:graph neural networks for molecular property prediction|2024";
    let recorded = recorded_keys(&model);
    assert!(
        recorded.iter().filter(|k| *k == key).count() >= 2,
        "the worker recorded `{key}` fewer than twice: {recorded:?}"
    );
    let keys = reference_keys(&state);
    assert_eq!(keys.iter().filter(|k| *k == key).count(), 1, "{keys:?}");
    let kept: Vec<&Fact> = state
        .facts
        .iter()
        .filter(|f| f.is_reference() && reference_key(f).as_deref() == Some(key))
        .collect();
    assert_eq!(
        kept[0].authors,
        ["Chen Wei", "Aisha Bello"],
        "the first recorded is kept"
    );
    assert_eq!(
        (kept[0].arxiv_id.as_deref(), kept[0].doi.as_deref()),
        (None, None)
    );
}

#[tokio::test]
async fn an_offline_run_meets_the_id_doi_and_url_duplicates_and_keeps_one_reference_per_key() {
    let (state, model) = run_shipped("retrieval augmented generation").await;

    let doi = "doi:10.5555/rag-bench.2024.3";
    let url = "url:journals.example.org/tacl/articles/long-context-vs-rag";
    let arxiv = "arxiv:2401.10001";
    let recorded = recorded_keys(&model);
    for key in [arxiv, doi, url] {
        assert!(
            recorded.iter().filter(|k| *k == key).count() >= 2,
            "the worker recorded `{key}` fewer than twice: {recorded:?}"
        );
    }

    let references: Vec<&Fact> = state.facts.iter().filter(|f| f.is_reference()).collect();
    let keys = reference_keys(&state);
    let mut unique = keys.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), keys.len(), "one reference per key: {keys:?}");
    for key in [arxiv, doi, url] {
        assert_eq!(
            keys.iter().filter(|k| *k == key).count(),
            1,
            "`{key}` in {keys:?}"
        );
    }
    // The first of each pair was admitted; the later one collapsed into it.
    let titles: Vec<&str> = references
        .iter()
        .filter_map(|f| f.title.as_deref())
        .collect();
    assert!(titles.contains(&"Benchmarking Retrieval-Augmented Generation: Faithfulness, Attribution and Answer Quality"), "{titles:?}");
    assert!(
        !titles.iter().any(|t| t.starts_with("RAG-Bench")),
        "{titles:?}"
    );
    assert!(
        titles
            .iter()
            .any(|t| t.starts_with("Long-Context Models versus")),
        "{titles:?}"
    );
    assert!(
        !titles
            .iter()
            .any(|t| t.starts_with("Long Context or Retrieval?")),
        "{titles:?}"
    );
    let published = references
        .iter()
        .find(|f| f.doi.is_some())
        .expect("a DOI reference");
    assert_eq!(published.arxiv_id, None);
    assert!(
        published.extended_summary.is_some(),
        "published versions are summarised too"
    );
}

#[tokio::test]
async fn a_planner_and_a_synthesizer_that_fail_leave_a_report_saying_what_was_not_the_models() {
    let server = five_papers().serve().await.expect("server");
    let failing: Arc<dyn ChatModel> = Arc::new(graphkit_llm::FunctionModel::new(|_| {
        Err(LlmError::Function("the model is down".into()))
    }));
    let shared: Arc<dyn ChatModel> = Arc::new(ar::offline_model(2));
    let mut d = deps(Arc::clone(&shared), &server, None);
    d.nodes.planner = Arc::clone(&failing);
    d.nodes.synthesizer = failing;
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let state = ar::run_arxiv_research(&options("widgets", 3, d, saver, "down"))
        .await
        .expect("the run ends with a report");
    let report = &state
        .facts
        .iter()
        .find(|f| f.kind == FactKind::Draft)
        .expect("a report")
        .content;
    assert!(
        report.contains("**Plan not the model's:**")
            && report.contains("the model is down")
            && report.contains("fell back to one step searching the topic itself"),
        "{report}"
    );
    assert!(report.contains("**Not synthesized.**"), "{report}");
    // The summaries gathered are shown unedited, numbered as in the sources list.
    let summarised: Vec<&Fact> = state
        .facts
        .iter()
        .filter(|f| f.is_reference() && f.extended_summary.is_some())
        .collect();
    assert!(!summarised.is_empty(), "{report}");
    assert!(report.contains("[1] *"), "{report}");
    let plan = state.plan.as_ref().expect("the fallback plan");
    assert_eq!(plan.steps.len(), 1);
    assert_eq!(plan.main_query, "widgets");
}
