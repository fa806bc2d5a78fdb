//! The workflows on inputs they were not written for (issue 25): subjects, pages and
//! topics written here, in the shipped corpora's neighbourhood and outside it, including
//! prose-only pages, a person who shares a surname with someone in the corpus, and a
//! subject about whom nothing exists. Each test says what a user would be hurt by: another
//! subject's facts reported, "low risk" for someone nobody wrote about, a red flag stated in
//! prose missed.

use std::path::Path;
use std::sync::Arc;

use graphkit_examples::due_diligence::{
    DueDiligenceOptions, DueDiligenceOutcome, Investigation, offline_model, run_due_diligence,
};
use graphkit_examples::shared::prose::quotes;
use graphkit_examples::shared::{RunDir, RunTarget};
use graphkit_llm::ChatModel;
use graphkit_tools::prebuilt::search::{LocalCorpus, SearchBackend};
use serde_json::Value;

/// A corpus of `(file name, text)` pages in a fresh directory.
fn corpus_of(pages: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text) in pages {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write page");
    }
    dir
}

/// The text of `url` as the search backend over `corpus` gives it to the workflows.
async fn source_text(corpus: &Path, url: &str) -> String {
    let backend = LocalCorpus::open(corpus).expect("corpus");
    let pages = backend.extract(&[url.to_owned()]).await.expect("extract");
    pages
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no page at {url} in the corpus"))
        .content
}

// ---------------------------------------------------------------------------------------
// due-diligence

/// News pages in prose only: a sanctioned company, a fraud suit, a dismissed inquiry, and
/// a page about another man with the same surname who is under investigation.
const RAVNSBORG_PAGES: &[(&str, &str)] = &[
    (
        "ravnsborg-harbour-news.md",
        "# Harbour Ledger — a freight owner's troubles\n\n\
         Bertil Ravnsborg built Orvane Freight Ltd into the largest cold-chain carrier on the \
         Skelde coast. Since March 2022 Orvane Freight Ltd has been sanctioned by the Skelde \
         Trade Council for shipping dual-use parts to an embargoed port. Ravnsborg said the \
         company had complied with every licence it held.\n",
    ),
    (
        "ravnsborg-capital-suit.md",
        "# Pension funds take Ravnsborg's firm to court\n\n\
         In 2023 three pension funds sued Ravnsborg Capital Partners, the investment firm of \
         Bertil Ravnsborg, for fraud over valuations of its harbour fund. Dr. Inga Sollie, who \
         speaks for the funds, said losses exceeded 40.5 million crowns. A separate 2019 \
         bribery inquiry into Bertil Ravnsborg was dismissed for lack of evidence.\n",
    ),
    (
        "agnete-ravnsborg.md",
        "# Agnete Ravnsborg, councillor\n\n\
         Agnete Ravnsborg, a Skelde city councillor, is under investigation for misuse of \
         campaign funds by Lyrum Media Group. She denies the claims.\n",
    ),
];

fn dd_options(dir: &Path, corpus: &Path) -> DueDiligenceOptions {
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    let search: Arc<dyn SearchBackend> = Arc::new(LocalCorpus::open(corpus).expect("corpus"));
    DueDiligenceOptions {
        strategy_model: Arc::clone(&model),
        search_model: model,
        search,
        results_per_search: 3,
        max_concurrent_searches: 2,
        target: RunTarget::new(
            "unseen",
            RunDir::create(dir).expect("run dir"),
            Arc::new(graphkit::checkpoint::InMemorySaver::new()),
        ),
        session_id: None,
    }
}

async fn investigate(subject: &str, pages: &[(&str, &str)]) -> (Value, DueDiligenceOutcome) {
    let corpus = corpus_of(pages);
    let (report, outcome, _) = investigate_in(subject, corpus.path()).await;
    (report, outcome)
}

/// The report as JSON, the outcome, and the HTML report.
async fn investigate_in(subject: &str, corpus: &Path) -> (Value, DueDiligenceOutcome, String) {
    let run = tempfile::tempdir().expect("tempdir");
    let investigation = Investigation {
        max_depth: 3,
        ..Investigation::new(subject, "")
    };
    let outcome = run_due_diligence(&investigation, &dd_options(run.path(), corpus))
        .await
        .expect("run");
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&outcome.summary.report_json).expect("report"),
    )
    .expect("report json");
    let html = std::fs::read_to_string(&outcome.summary.report_html).expect("html report");
    (report, outcome, html)
}

fn statements(report: &Value, section: &str) -> Vec<String> {
    report[section]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["statement"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn due_diligence_reads_red_flags_stated_in_prose_with_their_sources() {
    let (report, outcome) = investigate("Bertil Ravnsborg", RAVNSBORG_PAGES).await;
    let flags = statements(&report, "red_flags");
    assert!(
        flags.iter().any(|f| f.contains("sanctioned")),
        "the sanction is a red flag: {flags:?}"
    );
    assert!(
        flags.iter().any(|f| f.contains("fraud")),
        "the fraud suit is a red flag: {flags:?}"
    );
    assert!(
        !flags.iter().any(|f| f.contains("dismissed")),
        "a dismissed inquiry is not a red flag: {flags:?}"
    );
    assert!(
        !flags.iter().any(|f| f.contains("Agnete")),
        "another Ravnsborg's investigation is not this subject's: {flags:?}"
    );
    for flag in report["red_flags"].as_array().expect("red flags") {
        let sources = flag["sources"].as_array().expect("sources");
        assert!(
            sources
                .iter()
                .all(|s| s.as_str().is_some_and(|s| s.contains("ravnsborg-"))),
            "each red flag points to its page: {flag}"
        );
    }
    assert_eq!(report["risk_assessment"]["overall_risk"], "high");
    let names: Vec<&str> = outcome
        .state
        .discovered_entities
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    for name in [
        "Bertil Ravnsborg",
        "Orvane Freight Ltd",
        "Ravnsborg Capital Partners",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.contains("Agnete") || n.contains("Lyrum")),
        "{names:?}"
    );
}

#[tokio::test]
async fn due_diligence_quotes_the_passage_behind_every_red_flag_and_entity() {
    let corpus = corpus_of(RAVNSBORG_PAGES);
    let (report, _, html) = investigate_in("Bertil Ravnsborg", corpus.path()).await;
    let flags = report["red_flags"].as_array().expect("red flags");
    assert!(!flags.is_empty());
    assert!(
        html.contains(
            "<blockquote class=\"src\">“Since March 2022 Orvane Freight Ltd has been sanctioned"
        ),
        "the HTML report quotes the sanction's passage"
    );
    for flag in flags {
        let passages = flag["passages"].as_array().expect("passages");
        assert!(!passages.is_empty(), "every red flag has a passage: {flag}");
        for passage in passages {
            let (url, text) = (
                passage["source"].as_str().expect("source"),
                passage["text"].as_str().expect("text"),
            );
            assert!(
                quotes(&source_text(corpus.path(), url).await, text),
                "{text:?} is not in {url}"
            );
        }
    }
    let entities = report["evidence"]["entities"].as_array().expect("entities");
    let named = |name: &str| {
        entities
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {entities:?}"))
    };
    for name in ["Orvane Freight Ltd", "Ravnsborg Capital Partners"] {
        let passages = named(name)["passages"].as_array().expect("passages");
        assert!(!passages.is_empty(), "{name} has a passage");
        for passage in passages {
            let url = passage["source"].as_str().expect("source");
            let text = passage["text"].as_str().expect("text");
            assert!(text.contains(name), "{text:?} names {name}");
            assert!(quotes(&source_text(corpus.path(), url).await, text));
        }
    }
    assert_eq!(report["evidence"]["unsupported_findings"], 0);
}

/// Two trade pages on one freight broker that disagree on its founding year and seat.
const HOLLOWAY_PAGES: &[(&str, &str)] = &[
    (
        "holloway-profile.md",
        "# Tamsin Holloway, shipping broker\n\n\
         Tamsin Holloway runs Greywater Salvage Ltd, a salvage broker. Greywater Salvage Ltd \
         was founded in 2009 and is headquartered in Port Ellis. Holloway trained as a marine \
         surveyor.\n",
    ),
    (
        "greywater-registry-note.md",
        "# Registry note on a salvage broker\n\n\
         Filings list Tamsin Holloway as the director of Greywater Salvage Ltd. According to \
         the filings, Greywater Salvage Ltd was founded in 2012 and is registered in Marrow \
         Quay.\n",
    ),
];

#[tokio::test]
async fn due_diligence_flags_sources_that_disagree_on_a_company_with_both_values() {
    let (report, _) = investigate("Tamsin Holloway", HOLLOWAY_PAGES).await;
    let conflicts = report["evidence"]["fact_conflicts"]
        .as_array()
        .expect("fact conflicts");
    let fact = |name: &str| {
        conflicts
            .iter()
            .find(|c| c["entity"] == "Greywater Salvage Ltd" && c["fact"] == name)
            .unwrap_or_else(|| panic!("no {name} conflict in {conflicts:#?}"))
    };
    let values = |c: &Value| -> Vec<(String, String)> {
        c["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| {
                (
                    v["value"].as_str().unwrap_or_default().to_owned(),
                    v["passage"]["source"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect()
    };
    let founded = values(fact("founded"));
    assert!(
        founded
            .iter()
            .any(|(v, s)| v == "2009" && s.contains("holloway-profile"))
            && founded
                .iter()
                .any(|(v, s)| v == "2012" && s.contains("greywater-registry-note")),
        "{founded:?}"
    );
    let seat = values(fact("seat"));
    assert!(
        seat.iter().any(|(v, _)| v == "Port Ellis") && seat.iter().any(|(v, _)| v == "Marrow Quay"),
        "{seat:?}"
    );
    let gaps: Vec<&str> = report["information_gaps"]
        .as_array()
        .expect("gaps")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        gaps.iter()
            .any(|g| g.contains("Sources disagree on Greywater Salvage Ltd's founded")),
        "the report says it too: {gaps:?}"
    );
}

/// Two prose pages on a cold-storage executive that disagree on her office, on who owns her
/// company and on the amount of its 2021 fine, and agree on its seat.
const OYELARAN_PAGES: &[(&str, &str)] = &[
    (
        "oyelaran-trade-profile.md",
        "# Cold chain people: Marguerite Oyelaran\n\n\
         Marguerite Oyelaran is the chief executive of Tessaly Cold Storage AG, which runs \
         bonded warehouses on the Varden river. Tessaly Cold Storage AG is registered in \
         Varden. Tessaly Cold Storage AG is a subsidiary of Brennick Holdings plc. In 2021 \
         Tessaly Cold Storage AG was fined EUR 1.2 million by the Varden customs office.\n",
    ),
    (
        "tessaly-registry-digest.md",
        "# Registry digest: bonded warehouse operators\n\n\
         Registry filings name Marguerite Oyelaran as the chair of Tessaly Cold Storage AG. \
         Tessaly Cold Storage AG is registered in Varden. Tessaly Cold Storage AG is owned by \
         Quorvane Capital. In 2021 Tessaly Cold Storage AG was fined EUR 3.4 million for \
         mislabelled imports.\n",
    ),
];

#[tokio::test]
async fn due_diligence_flags_disagreeing_offices_owners_and_amounts_with_both_passages() {
    let corpus = corpus_of(OYELARAN_PAGES);
    let (report, _, _) = investigate_in("Marguerite Oyelaran", corpus.path()).await;
    let conflicts = report["evidence"]["fact_conflicts"]
        .as_array()
        .expect("fact conflicts");
    let values = |entity: &str, fact: &str| -> Vec<(String, String, String)> {
        let conflict = conflicts
            .iter()
            .find(|c| c["entity"] == entity && c["fact"] == fact)
            .unwrap_or_else(|| panic!("no {fact} conflict of {entity} in {conflicts:#?}"));
        conflict["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| {
                let text = |k: &str| v["passage"][k].as_str().unwrap_or_default().to_owned();
                (
                    v["value"].as_str().unwrap_or_default().to_owned(),
                    text("source"),
                    text("text"),
                )
            })
            .collect()
    };
    let has = |found: &[(String, String, String)], value: &str, page: &str| {
        found
            .iter()
            .any(|(v, source, _)| v == value && source.contains(page))
    };
    for (entity, fact, first, second) in [
        (
            "Marguerite Oyelaran",
            "office at Tessaly Cold Storage AG",
            "chief executive",
            "chair",
        ),
        (
            "Tessaly Cold Storage AG",
            "owner",
            "Brennick Holdings plc",
            "Quorvane Capital",
        ),
        (
            "Tessaly Cold Storage AG",
            "fine (2021)",
            "EUR 1.2 million",
            "EUR 3.4 million",
        ),
    ] {
        let found = values(entity, fact);
        assert!(
            has(&found, first, "oyelaran-trade-profile")
                && has(&found, second, "tessaly-registry-digest"),
            "{entity} {fact}: {found:#?}"
        );
        // Each value is quoted from its own page.
        for (value, source, passage) in &found {
            assert!(
                passage.contains(value.as_str()) || fact.starts_with("office"),
                "{passage:?} gives {value}"
            );
            assert!(
                quotes(&source_text(corpus.path(), source).await, passage),
                "{passage:?} is not in {source}"
            );
        }
    }
    // The pages agree on the seat: no conflict there.
    assert!(
        !conflicts.iter().any(|c| c["fact"] == "seat"),
        "{conflicts:#?}"
    );
}

#[tokio::test]
async fn due_diligence_on_a_subject_nobody_wrote_about_is_insufficient_not_low_risk() {
    // Only a namesake is in the corpus: her page must not be read as the subject's.
    let (report, outcome) = investigate("Halvor Ravnsborg", RAVNSBORG_PAGES).await;
    assert_eq!(report["risk_assessment"]["overall_risk"], "insufficient");
    assert!(
        report["executive_summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("Insufficient information")),
        "{}",
        report["executive_summary"]
    );
    let summary = report["executive_summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("offline stand-in") && !summary.contains(": low"),
        "{summary}"
    );
    assert!(statements(&report, "red_flags").is_empty());
    assert_eq!(report["metadata"]["statistics"]["sources"], 0);
    assert!(
        outcome
            .state
            .discovered_entities
            .iter()
            .all(|e| !e.name.contains("Bertil") && !e.name.contains("Agnete")),
        "{:?}",
        outcome.state.discovered_entities
    );
}

#[tokio::test]
async fn due_diligence_on_an_empty_corpus_is_insufficient() {
    let (report, _) = investigate(
        "Maren Ottesdatter",
        &[("unrelated.md", "# Tides\n\nThe tide tables for 2024.\n")],
    )
    .await;
    assert_eq!(report["risk_assessment"]["overall_risk"], "insufficient");
}

// ---------------------------------------------------------------------------------------
// biography-events

/// Three authors, two of whom share the surname Brakstad, on the offline sites.
const BRAKSTAD_PAGES: &[(&str, &str)] = &[
    (
        "wikipedia.example/wiki/Sunniva_Brakstad.md",
        "---\nurl: https://en.wikipedia.example/wiki/Sunniva_Brakstad\n---\n# Sunniva Brakstad\n\n\
         Sunniva Brakstad (1931–2004) was a Norwegian novelist.\n\n## Life\n\n\
         Sunniva Brakstad was born on 2 May 1931 in Tromsø. Her novel The Salt Road was \
         published in Oslo on 14 September 1962. Brakstad died on 9 November 2004 in Bergen.\n",
    ),
    (
        "britannica.example/biography/Eirik-Brakstad.md",
        "---\nurl: https://www.britannica.example/biography/Eirik-Brakstad\n---\n# Eirik Brakstad | Norwegian painter\n\n\
         Eirik Brakstad, Norwegian painter.\n\nEirik Brakstad was born on 3 March 1890 in \
         Trondheim. His painting Fjord Light was exhibited in Paris on 1 June 1925.\n",
    ),
];

async fn biography(
    person: &str,
    pages: Option<&[(&str, &str)]>,
) -> graphkit_examples::biography_events::BiographyState {
    use graphkit_examples::biography_events::{
        BiographyOptions, Limits, Sites, default_corpus_dir, offline::stand_in,
        run_biography_events,
    };
    let corpus = pages.map(corpus_of);
    let search: Arc<dyn SearchBackend> = Arc::new(
        LocalCorpus::open(
            corpus
                .as_ref()
                .map_or_else(default_corpus_dir, |c| c.path().to_path_buf()),
        )
        .expect("corpus"),
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let options = BiographyOptions {
        model: Arc::new(stand_in()),
        search,
        sites: Sites::offline(),
        limits: Limits::default(),
        target: RunTarget::new(
            "unseen",
            RunDir::create(dir.path().join("run")).expect("run dir"),
            Arc::new(graphkit::checkpoint::InMemorySaver::new()),
        ),
    };
    run_biography_events(person, None, &options)
        .await
        .expect("run")
        .1
}

/// Sunniva Brakstad on the three sites; Britannica gives another year of death.
const BRAKSTAD_THREE_SITES: &[(&str, &str)] = &[
    BRAKSTAD_PAGES[0],
    BRAKSTAD_PAGES[1],
    (
        "britannica.example/biography/Sunniva-Brakstad.md",
        "---\nurl: https://www.britannica.example/biography/Sunniva-Brakstad\n---\n# Sunniva Brakstad | Norwegian novelist\n\n\
         Sunniva Brakstad, Norwegian novelist.\n\nSunniva Brakstad was born on 2 May 1931 in \
         Tromsø. Brakstad died on 9 November 2006 in Bergen.\n",
    ),
    (
        "biography.example/authors-writers/sunniva-brakstad.md",
        "---\nurl: https://www.biography.example/authors-writers/sunniva-brakstad\n---\n# Sunniva Brakstad: Biography\n\n\
         Novelist Sunniva Brakstad.\n\nBrakstad was born in 1931. The Salt Road was published in 1962.\n",
    ),
];

#[tokio::test]
async fn biography_reads_every_authoritative_page_and_flags_a_conflicting_death_date() {
    let state = biography("Sunniva Brakstad", Some(BRAKSTAD_THREE_SITES)).await;
    let death = state
        .events
        .iter()
        .find(|e| e.name.to_lowercase().contains("death") || e.name.to_lowercase().contains("died"))
        .unwrap_or_else(|| panic!("no death event: {:#?}", state.events));
    assert!(
        death.conflicts.iter().any(|c| c.field == "date"
            && c.values.iter().any(|v| v.contains("2004"))
            && c.values.iter().any(|v| v.contains("2006"))),
        "the two years of death are flagged: {death:#?}"
    );
}

/// The URL a test page gives in its front matter.
fn url_of(page: &str) -> &str {
    page.lines()
        .find_map(|l| l.strip_prefix("url: "))
        .unwrap_or_default()
}

#[tokio::test]
async fn biography_quotes_the_sentence_of_its_page_behind_every_event() {
    let state = biography("Sunniva Brakstad", Some(BRAKSTAD_THREE_SITES)).await;
    assert!(!state.events.is_empty());
    for event in &state.events {
        let page = BRAKSTAD_THREE_SITES
            .iter()
            .find(|(_, text)| url_of(text) == event.source_url)
            .unwrap_or_else(|| panic!("{event:#?} names no page of the corpus"));
        assert!(!event.passage.is_empty(), "{event:#?} has no passage");
        assert!(
            quotes(page.1, &event.passage),
            "{:?} is not in {}",
            event.passage,
            event.source_url
        );
        if let Some(year) = event.date.year {
            assert!(event.passage.contains(&year.to_string()), "{event:#?}");
        }
        for other in event
            .also_read_from
            .iter()
            .filter(|o| !o.passage.is_empty())
        {
            let page = BRAKSTAD_THREE_SITES
                .iter()
                .find(|(_, text)| url_of(text) == other.url)
                .unwrap_or_else(|| panic!("{other:?} names no page of the corpus"));
            assert!(quotes(page.1, &other.passage), "{other:?}");
        }
    }
    // The death both sites date is read from both, each page with its own sentence.
    let death = state
        .events
        .iter()
        .find(|e| e.name == "Death")
        .expect("death");
    assert!(
        death
            .also_read_from
            .iter()
            .any(|o| o.passage.contains("2006")),
        "{death:#?}"
    );
}

/// Maren Lykke on two sites that give two years for one novel's publication.
const LYKKE_PAGES: &[(&str, &str)] = &[
    (
        "wikipedia.example/wiki/Maren_Lykke.md",
        "---\nurl: https://en.wikipedia.example/wiki/Maren_Lykke\n---\n# Maren Lykke\n\n\
         Maren Lykke (1948–2019) was a Danish novelist.\n\n## Life\n\n\
         Maren Lykke was born on 4 April 1948 in Aarhus. Her novel The Glass Harbour was \
         published in Copenhagen on 2 October 1979. Lykke died on 1 March 2019 in Odense.\n",
    ),
    (
        "britannica.example/biography/Maren-Lykke.md",
        "---\nurl: https://www.britannica.example/biography/Maren-Lykke\n---\n# Maren Lykke | Danish novelist\n\n\
         Maren Lykke, Danish novelist.\n\nMaren Lykke was born on 4 April 1948 in Aarhus. \
         The Glass Harbour was published in 1981 in Copenhagen.\n",
    ),
];

#[tokio::test]
async fn biography_flags_two_sources_giving_two_years_for_one_publication() {
    let state = biography("Maren Lykke", Some(LYKKE_PAGES)).await;
    let publications: Vec<_> = state
        .events
        .iter()
        .filter(|e| e.description.contains("The Glass Harbour"))
        .collect();
    assert_eq!(
        publications.len(),
        1,
        "one novel, one event: {:#?}",
        state.events
    );
    let conflict = publications[0]
        .conflicts
        .iter()
        .find(|c| c.field == "date")
        .unwrap_or_else(|| panic!("no date conflict: {:#?}", publications[0]));
    assert!(
        conflict.values.iter().any(|v| v.contains("1979"))
            && conflict.values.iter().any(|v| v.contains("1981")),
        "{conflict:#?}"
    );
    assert_eq!(conflict.sources.len(), conflict.values.len());
    assert!(
        conflict.sources.iter().any(|s| s.contains("Wikipedia"))
            && conflict.sources.iter().any(|s| s.contains("Britannica")),
        "{conflict:#?}"
    );
}

#[tokio::test]
async fn biography_of_an_unknown_person_is_empty_not_a_namesakes_timeline() {
    // The shipped corpus has Odile Marchetti; Ada Marchetti is nobody in it.
    let state = biography("Ada Marchetti", None).await;
    assert!(state.events.is_empty(), "{:#?}", state.events);
}

#[tokio::test]
async fn biography_of_a_new_author_keeps_out_a_namesakes_events() {
    let state = biography("Sunniva Brakstad", Some(BRAKSTAD_PAGES)).await;
    let names: Vec<String> = state
        .events
        .iter()
        .map(|e| format!("{} {} {}", e.name, e.description, e.date.display()))
        .collect();
    assert!(
        names.iter().any(|n| n.contains("1931")),
        "her birth is found: {names:#?}"
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains("1890") || n.contains("Fjord Light") || n.contains("1925")),
        "Eirik Brakstad's events are not hers: {names:#?}"
    );
}

// ---------------------------------------------------------------------------------------
// arxiv-research

fn arxiv_cli(dir: &Path, args: &[&str]) -> (String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir)
        .arg("arxiv-research")
        .args(["-q", "--out"])
        .arg(dir.join("run"))
        .args(args)
        .output()
        .expect("run the CLI");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let report = std::fs::read_to_string(dir.join("run").join("report.md")).expect("report.md");
    (report, stderr)
}

#[test]
fn arxiv_on_a_topic_the_corpus_does_not_cover_says_insufficient_and_cites_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (report, _) = arxiv_cli(dir.path(), &["protein folding with language models"]);
    assert!(report.contains("**Insufficient evidence.**"), "{report}");
    assert!(report.contains("## Left out as off-topic"), "{report}");
    let sources = report.split("## Sources").nth(1).unwrap_or_default();
    assert!(
        !sources.lines().any(|l| l.starts_with("1.")),
        "no off-topic paper is cited as evidence: {report}"
    );
}

#[test]
fn arxiv_on_a_reworded_covered_topic_admits_only_on_topic_papers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (report, _) = arxiv_cli(
        dir.path(),
        &["speculative decoding with draft models for faster inference"],
    );
    assert!(!report.contains("Insufficient evidence"), "{report}");
    let sources = report.split("## Sources").nth(1).unwrap_or_default();
    assert!(
        sources.contains("Speculative") || sources.contains("Draft"),
        "{report}"
    );
    assert!(
        !sources.contains("Molecular") && !sources.contains("Retrieval"),
        "{report}"
    );
}

#[test]
fn arxiv_reads_another_paper_corpus_given_with_corpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    let paper = |id: &str, title: &str, summary: &str| {
        serde_json::json!({"id": id, "title": title, "authors": ["R. Ndlovu"],
            "published": "2023-04-01T00:00:00Z", "summary": summary,
            "body": format!("{title}. {summary} Further sections discuss coral reef bleaching surveys.")})
    };
    let corpus = serde_json::json!({"papers": [
        paper("2304.00001v1", "Coral Reef Bleaching under Marine Heatwaves",
              "We measure coral bleaching across reefs during marine heatwaves."),
        paper("2304.00002v1", "Satellite Monitoring of Coral Reef Bleaching",
              "Satellite sea-surface temperatures predict coral reef bleaching events."),
        paper("2304.00003v1", "A Survey of Sorting Algorithms",
              "We compare quicksort and mergesort on modern hardware."),
    ]});
    let file = dir.path().join("papers.json");
    std::fs::write(&file, corpus.to_string()).expect("write corpus");
    let (report, _) = arxiv_cli(
        dir.path(),
        &[
            "coral reef bleaching",
            "--corpus",
            file.to_str().expect("utf-8 path"),
        ],
    );
    let sources = report.split("## Sources").nth(1).unwrap_or_default();
    assert!(sources.contains("Coral Reef Bleaching"), "{report}");
    assert!(!sources.contains("Sorting"), "{report}");
}

// ---------------------------------------------------------------------------------------
// mcp-research

fn mcp_report(question: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir.path())
        .args(["mcp-research", question, "--out"])
        .arg(&run)
        .output()
        .expect("run the CLI");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(run.join("report.md")).expect("report.md")
}

/// The dataset's countries in Europe.
const EUROPE: [&str; 8] = [
    "Germany",
    "France",
    "United Kingdom",
    "Poland",
    "Norway",
    "Iceland",
    "Spain",
    "Italy",
];

/// The count of events meeting `keep`, grouped by `key`, largest first.
fn reference_counts(
    keep: impl Fn(&graphkit_examples::mcp_research::dataset::Event) -> bool,
    key: impl Fn(&graphkit_examples::mcp_research::dataset::Event) -> String,
) -> Vec<(String, usize)> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for event in graphkit_examples::mcp_research::dataset::events()
        .iter()
        .filter(|e| keep(e))
    {
        *counts.entry(key(event)).or_default() += 1;
    }
    let mut counts: Vec<(String, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    counts
}

#[test]
fn mcp_research_answers_a_region_and_time_window_question_with_filtered_counts() {
    let report = mcp_report("Which event types dominate in Europe since 2015?");
    let expected = reference_counts(
        |e| EUROPE.contains(&e.country) && e.year >= 2015,
        |e| e.event_type.to_owned(),
    );
    let (top, count) = &expected[0];
    assert!(
        report.contains(&format!("| {top} | {count} |")),
        "the largest event type in Europe since 2015 is {top} ({count}): {report}"
    );
    let total: usize = expected.iter().map(|(_, c)| c).sum();
    assert!(report.contains(&format!("{total} events")), "{report}");
    assert!(report.contains("offline stand-in"), "{report}");
    assert!(!report.contains("| United States |"), "{report}");
}

#[test]
fn mcp_research_groups_one_event_type_by_conclusion() {
    let report = mcp_report("How did cyber incidents end? Break them down by conclusion.");
    let expected = reference_counts(
        |e| e.event_type == "cyber_incident",
        |e| e.conclusion.to_owned(),
    );
    for (conclusion, count) in expected.iter().take(3) {
        assert!(
            report.contains(&format!("| {conclusion} | {count} |")),
            "{conclusion}: {count} expected in {report}"
        );
    }
}

/// The cells of the row of `key` in the report's comparison table.
fn comparison_row(report: &str, key: &str) -> Vec<String> {
    let section = report
        .split("### Comparison")
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison in {report}"));
    section
        .lines()
        .find(|l| l.starts_with(&format!("| {key} |")))
        .map(|l| {
            l.split('|')
                .map(|c| c.trim().to_owned())
                .filter(|c| !c.is_empty())
                .collect()
        })
        .unwrap_or_else(|| panic!("no row for {key} in {section}"))
}

/// Checks a comparison of two periods against the dataset: the heading, each period's
/// total, and each period's largest group with its count in both periods.
fn assert_compares(
    report: &str,
    labels: [&str; 2],
    keep: [&dyn Fn(&graphkit_examples::mcp_research::dataset::Event) -> bool; 2],
    key: &dyn Fn(&graphkit_examples::mcp_research::dataset::Event) -> String,
) {
    let [la, lb] = labels;
    assert!(
        report.contains(&format!("### Comparison: {la} vs {lb}")),
        "{report}"
    );
    let a = reference_counts(keep[0], key);
    let b = reference_counts(keep[1], key);
    let total = |c: &[(String, usize)]| c.iter().map(|(_, n)| n).sum::<usize>();
    assert!(
        report.contains(&format!("{} {la}, {} {lb}.", total(&a), total(&b))),
        "totals {} and {}: {report}",
        total(&a),
        total(&b)
    );
    let count_in =
        |c: &[(String, usize)], k: &str| c.iter().find(|(x, _)| x == k).map_or(0, |(_, n)| *n);
    let row = comparison_row(report, &a[0].0);
    assert_eq!(row[1], a[0].1.to_string(), "{row:?}");
    if row[3] != "—" {
        assert_eq!(row[3], count_in(&b, &a[0].0).to_string(), "{row:?}");
    }
    let row = comparison_row(report, &b[0].0);
    assert_eq!(row[3], b[0].1.to_string(), "{row:?}");
}

#[test]
fn mcp_research_compares_event_types_before_and_after_two_years() {
    let report =
        mcp_report("How did the event types before 2008 compare with the event types after 2016?");
    assert_compares(
        &report,
        ["before 2008", "after 2016"],
        [&|e| e.year < 2008, &|e| e.year > 2016],
        &|e| e.event_type.to_owned(),
    );
    assert!(report.contains("offline stand-in"), "{report}");
}

#[test]
fn mcp_research_compares_two_decades_by_country() {
    let report =
        mcp_report("Which countries had the most events in the 2000s compared with the 2010s?");
    assert_compares(
        &report,
        ["the 2000s", "the 2010s"],
        [&|e| (2000..=2009).contains(&e.year), &|e| {
            (2010..=2019).contains(&e.year)
        }],
        &|e| e.country.to_owned(),
    );
}

#[test]
fn mcp_research_compares_two_windows_of_one_event_type_in_a_region() {
    let report = mcp_report(
        "Compare protests in Europe between 2000 and 2005 with protests between 2019 and 2024, by conclusion.",
    );
    let protest_in_europe = |e: &graphkit_examples::mcp_research::dataset::Event| {
        e.event_type == "protest" && EUROPE.contains(&e.country)
    };
    assert_compares(
        &report,
        ["2000–2005", "2019–2024"],
        [
            &|e| protest_in_europe(e) && (2000..=2005).contains(&e.year),
            &|e| protest_in_europe(e) && (2019..=2024).contains(&e.year),
        ],
        &|e| e.conclusion.to_owned(),
    );
}

#[test]
fn mcp_research_on_a_question_no_event_matches_says_nothing_was_found() {
    let report = mcp_report("Which protests happened in Oceania before 1990?");
    assert!(report.contains("**Nothing found:**"), "{report}");
}

// ---------------------------------------------------------------------------------------
// entity-intel

/// The shipped corpus plus a company and its co-founder written in prose only.
fn entity_corpus() -> tempfile::TempDir {
    entity_corpus_with(&[
        (
            "brightfen-robotics.md",
            "# Brightfen Robotics builds harvest arms for vertical farms\n\n\
             Brightfen Robotics Inc. was founded in 2017 by Dr. Mira Osei and Tomas Lind. The \
             Leeds-based company makes robotic harvesting arms for indoor farms. In 2022 it \
             raised GBP 12 million in a Series A round led by Harrow Peak Capital.\n",
        ),
        (
            "mira-osei.md",
            "# Mira Osei\n\nDr. Mira Osei is the chief technology officer of Brightfen \
             Robotics Inc., which she co-founded in 2017. She holds a PhD in mechanical \
             engineering from the University of Leeds (2014) and previously worked as a \
             research engineer at Kestrel Automation.\n",
        ),
    ])
}

/// The shipped corpus plus `pages`.
fn entity_corpus_with(pages: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = corpus_of(pages);
    let shipped = graphkit_examples::shared::search::default_corpus_dir();
    for entry in std::fs::read_dir(shipped).expect("shipped corpus") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
        }
    }
    dir
}

#[test]
fn entity_intel_reads_prose_pages_of_a_new_company_and_its_cofounder_and_blocks_a_nobody() {
    let corpus = entity_corpus();
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("input.json");
    std::fs::write(
        &input,
        r#"{"bundles": [{"bundleId": "guest_mira_osei_010", "entities": [
          {"entityType": "PERSON", "name": "Mira Osei", "directions": [
            {"key": "roleAffiliationConfirmation", "objective": "Confirm Mira Osei's current role.",
             "fieldsToExtract": ["currentRole", "affiliation", "education"]}]},
          {"entityType": "BUSINESS", "name": "Brightfen Robotics", "directions": [
            {"key": "businessIdentityOverview", "objective": "Identify Brightfen Robotics.",
             "fieldsToExtract": ["foundedYear", "founders", "headquarters", "rounds", "leadInvestors"]}]},
          {"entityType": "PERSON", "name": "Jonas Varga", "directions": [
            {"key": "roleAffiliationConfirmation", "objective": "Confirm Jonas Varga's current role.",
             "fieldsToExtract": ["currentRole", "affiliation"]}]}]}]}"#,
    )
    .expect("write input");
    let run = dir.path().join("run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir.path())
        .args(["entity-intel", "-q", "--input"])
        .arg(&input)
        .arg("--corpus")
        .arg(corpus.path())
        .arg("--out")
        .arg(&run)
        .output()
        .expect("run the CLI");
    let bundle = run.join("guest_mira_osei_010");
    let read = |name: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(bundle.join(name)).unwrap_or_else(|e| {
                panic!(
                    "{name}: {e}; stderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            }),
        )
        .expect("json")
    };
    let person = read("guest_mira_osei_roleAffiliationConfirmation.json");
    let value = |file: &Value, field: &str| file["fields"][field]["value"].clone();
    assert_eq!(value(&person, "currentRole"), "chief technology officer");
    assert_eq!(value(&person, "affiliation"), "Brightfen Robotics Inc.");
    assert_eq!(
        value(&person, "education"),
        "PhD in mechanical engineering from the University of Leeds"
    );
    let company = read("biz_brightfen_robotics_businessIdentityOverview.json");
    assert_eq!(value(&company, "foundedYear"), "2017");
    assert_eq!(value(&company, "founders"), "Dr. Mira Osei and Tomas Lind");
    assert_eq!(value(&company, "headquarters"), "Leeds");
    assert_eq!(value(&company, "leadInvestors"), "Harrow Peak Capital");
    let master = read("research_complete.json");
    let status = |name: &str| {
        master["todoList"]["todos"]
            .as_array()
            .expect("todos")
            .iter()
            .find(|t| t["entityName"] == name)
            .map(|t| (t["status"].clone(), t["notes"].clone()))
            .expect("todo")
    };
    assert_eq!(status("Mira Osei").0, "completed");
    let (varga, notes) = status("Jonas Varga");
    assert_eq!(varga, "blocked", "nothing about him was found: {notes}");
    assert!(
        notes
            .as_str()
            .is_some_and(|n| n.starts_with("No source about Jonas Varga")),
        "{notes}"
    );
}

/// Runs entity-intel on `input` (JSON) over `corpus`; returns the run's temporary folder
/// and the folder of the bundle `bundle`.
fn entity_intel_cli(
    corpus: &Path,
    input: &str,
    bundle: &str,
) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("input.json");
    std::fs::write(&file, input).expect("write input");
    let run = dir.path().join("run");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir.path())
        .args(["entity-intel", "-q", "--input"])
        .arg(&file)
        .arg("--corpus")
        .arg(corpus)
        .arg("--out")
        .arg(&run)
        .output()
        .expect("run the CLI");
    let folder = run.join(bundle);
    assert!(
        folder.join("research_complete.json").exists(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, folder)
}

fn json_file(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// A company on two prose pages that disagree on its founding year and its seat; its
/// website is mentioned in a sentence that does not state it.
const QUILLMERE_PAGES: &[(&str, &str)] = &[
    (
        "quillmere-analytics.md",
        "# Quillmere Analytics maps river pollution from orbit\n\n\
         Quillmere Analytics was founded in 2015 by Hana Petrov and Idris Vale. The \
         Bristol-based company sells satellite estimates of river pollution to water \
         utilities. Its website lists clients in nine countries. Chief executive Hana Petrov \
         said the firm would double its staff.\n",
    ),
    (
        "quillmere-seed-round.md",
        "# Quillmere Analytics raises seed funding\n\n\
         Quillmere Analytics, founded in 2016 and headquartered in Cardiff, raised GBP 3 \
         million in a seed round led by Osprey Fields Ventures. Its chief executive officer \
         Hana Petrov said the money would pay for new sensors.\n",
    ),
];

const QUILLMERE_INPUT: &str = r#"{"bundles": [{"bundleId": "biz_quillmere_020", "entities": [
  {"entityType": "BUSINESS", "name": "Quillmere Analytics", "directions": [
    {"key": "businessIdentityOverview", "objective": "Identify Quillmere Analytics.",
     "fieldsToExtract": ["foundedYear", "headquarters", "chiefExecutive", "leadInvestors", "website"]}]}]}]}"#;

#[tokio::test]
async fn entity_intel_quotes_each_value_flags_disagreeing_pages_and_leaves_an_unstated_field_missing()
 {
    let corpus = entity_corpus_with(QUILLMERE_PAGES);
    let (_dir, bundle) = entity_intel_cli(corpus.path(), QUILLMERE_INPUT, "biz_quillmere_020");
    let file = json_file(&bundle.join("biz_quillmere_analytics_businessIdentityOverview.json"));
    let field = |name: &str| file["fields"][name].clone();
    // Every value carries its source and the passage it was read from, which the source has.
    let mut quoted = Vec::new();
    for (name, entry) in file["fields"].as_object().expect("fields") {
        let mut entries = vec![entry.clone()];
        entries.extend(
            entry["conflictingValues"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        for e in entries.iter().filter(|e| !e["value"].is_null()) {
            let url = e["sourceUrl"].as_str().expect("sourceUrl");
            let passage = e["passage"].as_str().expect("passage");
            assert!(
                quotes(&source_text(corpus.path(), url).await, passage),
                "{name}: {passage:?} is not in {url}"
            );
            quoted.push(name.clone());
        }
    }
    assert!(quoted.len() >= 4, "{quoted:?}");
    // Two pages, two founding years and two seats: both kept, flagged, neither chosen silently.
    for (name, values) in [
        ("foundedYear", ["2015", "2016"]),
        ("headquarters", ["Bristol", "Cardiff"]),
    ] {
        let entry = field(name);
        assert_eq!(entry["disputed"], true, "{name}: {entry}");
        let found: Vec<(&str, &str)> = entry["conflictingValues"]
            .as_array()
            .expect("conflicting values")
            .iter()
            .map(|v| {
                (
                    v["value"].as_str().unwrap_or(""),
                    v["sourceUrl"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert!(
            found.contains(&(values[0], "corpus://quillmere-analytics.md"))
                || found
                    .iter()
                    .any(|(v, u)| *v == values[0] && u.contains("quillmere-analytics")),
            "{name}: {found:?}"
        );
        assert!(
            found
                .iter()
                .any(|(v, u)| *v == values[1] && u.contains("quillmere-seed-round")),
            "{name}: {found:?}"
        );
    }
    assert!(
        file["conflicts"].as_array().is_some_and(|c| c.len() == 2),
        "{}",
        file["conflicts"]
    );
    // Both pages name the same chief executive: no conflict.
    assert_eq!(field("chiefExecutive")["value"], "Hana Petrov");
    assert!(field("chiefExecutive")["disputed"].is_null());
    assert_eq!(field("leadInvestors")["value"], "Osprey Fields Ventures");
    // A sentence that mentions the website is not the website.
    assert!(field("website")["value"].is_null(), "{}", field("website"));
    let master = json_file(&bundle.join("research_complete.json"));
    let todo = &master["todoList"]["todos"][0];
    assert_eq!(todo["status"], "blocked", "a field was not found: {todo}");
    let notes = todo["notes"].as_str().unwrap_or_default();
    assert!(notes.contains("website"), "{notes}");
    assert!(notes.contains("foundedYear, headquarters"), "{notes}");
}

#[test]
fn entity_intel_on_a_person_nobody_wrote_about_reports_no_value_and_blocks_the_todo() {
    let corpus = entity_corpus_with(&[]);
    let (_dir, bundle) = entity_intel_cli(
        corpus.path(),
        r#"{"bundles": [{"bundleId": "guest_aurelio_banfi_030", "entities": [
          {"entityType": "PERSON", "name": "Aurelio Banfi", "directions": [
            {"key": "professionalBackground", "objective": "Summarize Aurelio Banfi's background.",
             "fieldsToExtract": ["education", "previousRoles", "currentRole"]}]}]}]}"#,
        "guest_aurelio_banfi_030",
    );
    let file = json_file(&bundle.join("guest_aurelio_banfi_professionalBackground.json"));
    for (name, entry) in file["fields"].as_object().expect("fields") {
        assert!(entry["value"].is_null(), "{name}: {entry}");
        assert!(entry["passage"].is_null(), "{name}: {entry}");
    }
    assert_eq!(file["sources"], serde_json::json!([]));
    let master = json_file(&bundle.join("research_complete.json"));
    let todo = &master["todoList"]["todos"][0];
    assert_eq!(todo["status"], "blocked", "{todo}");
    assert!(
        todo["notes"]
            .as_str()
            .is_some_and(|n| n.starts_with("No source about Aurelio Banfi")),
        "{todo}"
    );
}
