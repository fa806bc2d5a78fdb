//! [`offline_model`]: the offline stand-in (a test double, not a model) for both model
//! roles of the due-diligence workflow, built on [`StandInModel`].

use graphkit_llm::{ChatRequest, StandInModel};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::nodes::reconcile_entities;
use super::prompts::{data_of, section_lines};
use super::schemas::{
    ConnectionMappingOutput, DueDiligenceReport, Entity, EntityMergeOutput, EntityType,
    EvidenceRating, Finding, GraphEdge, GraphNode, Importance, Indicator, Pattern,
    ReflectionOutput, ReportSection, Risk, RiskAssessment, RiskLevel, SearchQueriesList, Severity,
    Source, Strength, SuspiciousConnection, WebSearchOutput, normalize,
};
use crate::shared::prose::{is_fact_sheet, names_in_full, sentences};

/// **Offline stand-in (a test double), not a language model.** A deterministic program
/// that plays both model roles of the due-diligence graph (strategy and search) so the
/// workflow runs with no key and no network (the default, `--model offline`).
///
/// It is a [`StandInModel`] answering as `offline-due-diligence` (its
/// [`requests`](StandInModel::requests) are the requests received so far;
/// [`with_delay`](StandInModel::with_delay) makes it wait like a model) with one handler per
/// structured output the graph asks for, each reading only what a real model would read:
/// the prompt's data block (a prompt without one fails the call, and so does any request
/// that is not one of these structured outputs).
///
/// - `SearchQueriesList`: at depth 0, four broad queries (biography, career, finances,
///   legal record) naming the subject; later, the lines of the latest query strategy.
/// - `WebSearchOutput`: the pages that name the subject's surname; the summary is their
///   titles and first sentences, the key facts their `- **Label:** value` lines with the
///   page URL.
/// - `ReflectionOutput`: sorts the key facts into the five sections; continues while a
///   `See also` lead has not been searched yet (leads from pages with a red flag first).
/// - `EntityMergeOutput`: parses the Entities section and merges names and aliases.
/// - `ConnectionMappingOutput`: edges from the Relationships lines, importance from red
///   flags and connections, suspicious connections from the red flags.
/// - `DueDiligenceReport`: the 18 sections filled from the digest by keyword rules.
///
/// Everything it writes comes from the corpus pages; nothing is invented. Use `--model`,
/// `--strategy-model` and `--search-model` with real providers for real research.
pub fn offline_model() -> StandInModel {
    let model = StandInModel::new("offline-due-diligence");
    let model = answer(model, queries);
    let model = answer(model, web_search);
    let model = answer(model, reflection);
    let model = answer(model, merge);
    let model = answer(model, connections);
    answer(model, report)
}

/// Answers the structured output `T` with `rule` applied to the prompt's data block.
fn answer<T: Serialize + JsonSchema + 'static>(
    model: StandInModel,
    rule: fn(&Value) -> T,
) -> StandInModel {
    model.try_on_structured(move |request: &ChatRequest| {
        data_of(request.last_user_text())
            .map(|data| rule(&data))
            .ok_or("the prompt has no data block to answer from")
    })
}

fn str_of<'a>(data: &'a Value, key: &str) -> &'a str {
    data.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(data: &Value, key: &str) -> Vec<String> {
    data.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn queries(data: &Value) -> SearchQueriesList {
    let subject = str_of(data, "subject");
    let depth = data.get("depth").and_then(Value::as_u64).unwrap_or(0);
    let queries = if depth == 0 {
        [
            "biography background",
            "professional career companies",
            "financial assets ownership",
            "legal litigation regulatory",
        ]
        .iter()
        .map(|topic| format!("{subject} {topic}"))
        .collect()
    } else {
        str_of(data, "query_strategy")
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- "))
            .map(str::to_owned)
            .collect()
    };
    SearchQueriesList { queries }
}

/// `Label: value (source: URL)` → (label, value, URL).
fn parse_fact(fact: &str) -> (&str, &str, &str) {
    let (body, source) = fact
        .rsplit_once(" (source: ")
        .map_or((fact, ""), |(b, s)| (b, s.trim_end_matches(')')));
    let (label, value) = body.split_once(": ").unwrap_or(("", body));
    (label.trim(), value.trim(), source.trim())
}

/// The name a lead query starts with (`Caldera Nominees Ltd subcontract payments` →
/// `Caldera Nominees Ltd`): the longest prefix of its leading capitalised words (two at
/// least, when it has two) that `content` names in full.
fn lead_named_in(query: &str, content: &str) -> bool {
    let run: Vec<&str> = query
        .split_whitespace()
        .take_while(|w| w.starts_with(char::is_uppercase))
        .collect();
    let least = run.len().min(2);
    (least.max(1)..=run.len())
        .rev()
        .any(|n| least > 0 && names_in_full(content, &run[..n].join(" ")))
}

/// Whether a page is about the investigation: it names the subject in full, or (for a
/// lead's query, which does not name the subject) the lead's name. A page that shares only
/// the subject's surname is someone else's.
fn about_the_investigation(subject: &str, query: &str, content: &str) -> bool {
    names_in_full(content, subject)
        || (!names_in_full(query, subject) && lead_named_in(query, content))
}

/// Words that make a sentence of prose an adverse finding, and words that make it a
/// cleared or dismissed one (a neutral item).
const ADVERSE: &[&str] = &[
    "sanction",
    "designated",
    "embargo",
    "fraud",
    "sued",
    "lawsuit",
    "indicted",
    "charged with",
    "convicted",
    "brib",
    "launder",
    "embezzl",
    "investigat",
    "inquiry",
    "prosecut",
    "shell company",
    "fined",
    "penalt",
    "arrested",
    "seized",
    "misconduct",
    "default",
];
const CLEARED: &[&str] = &[
    "cleared",
    "dismissed",
    "acquitted",
    "no evidence",
    "not a party",
    "withdrawn",
    "lifted",
];

/// Corporate suffixes that end an organisation's name in prose.
const ORG_SUFFIXES: &[&str] = &[
    "Ltd",
    "Ltd.",
    "Limited",
    "Inc",
    "Inc.",
    "LLC",
    "LLP",
    "PLC",
    "SA",
    "AG",
    "GmbH",
    "BV",
    "NV",
    "Group",
    "Holdings",
    "Partners",
    "Capital",
    "Bank",
    "Corp",
    "Corp.",
    "Corporation",
    "Company",
    "Trust",
    "Fund",
    "Ventures",
    "Logistics",
    "Shipping",
    "Trading",
    "Freight",
];

/// The organisations a sentence names: runs of capitalised words that end with a corporate
/// suffix (`Orvane Freight Ltd`).
fn organisations_in(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for raw in sentence.split_whitespace() {
        let word = raw.trim_matches(|c: char| ",;:()\"'".contains(c));
        let word = word.strip_suffix("'s").unwrap_or(word);
        if word.starts_with(char::is_uppercase) {
            run.push(word.trim_end_matches('.'));
        } else {
            run.clear();
            continue;
        }
        let suffix =
            ORG_SUFFIXES.contains(&word) || ORG_SUFFIXES.contains(&word.trim_end_matches('.'));
        if suffix && run.len() >= 2 {
            let name = run.join(" ");
            if !out.contains(&name) {
                out.push(name);
            }
        }
        if raw.ends_with([',', ';', ':', ')']) || (raw.ends_with('.') && !suffix) {
            run.clear();
        }
    }
    // `Orvane Freight Ltd` and `Freight Ltd` from one run: keep the longest.
    let all = out.clone();
    out.retain(|n| !all.iter().any(|m| m != n && m.ends_with(&format!(" {n}"))));
    out
}

/// The key facts of a prose page (no `- **Label:** value` lines), read sentence by
/// sentence as a model would: the subject as a person, the organisations named beside the
/// subject, adverse sentences as red flags (or neutral items when they say the matter was
/// cleared), the organisations in a red flag as leads, and the other sentences that name
/// the subject as findings. Every fact ends with its page's URL.
fn prose_facts(subject: &str, url: &str, content: &str) -> Vec<String> {
    let surname = subject.split_whitespace().last().unwrap_or(subject);
    let mut facts = Vec::new();
    let mut push = |fact: String| {
        let fact = format!("{fact} (source: {url})");
        if !facts.contains(&fact) {
            facts.push(fact);
        }
    };
    let sentences = sentences(content);
    if let Some(first) = sentences
        .iter()
        .find(|s| !s.starts_with('#') && names_in_full(s, subject))
    {
        push(format!(
            "Person: {subject} — {}",
            first.trim_end_matches('.')
        ));
    }
    for sentence in sentences.iter().filter(|s| s.ends_with(['.', '!', '?'])) {
        let lower = sentence.to_lowercase();
        let text = sentence.trim_end_matches('.');
        let names_subject = names_in_full(sentence, surname);
        let orgs = organisations_in(sentence);
        for org in &orgs {
            push(format!("Organization: {org} — named in: {text}"));
            if names_subject {
                push(format!("Link: {subject} — named with — {org}"));
            }
        }
        if ADVERSE.iter().any(|k| lower.contains(k)) {
            if CLEARED.iter().any(|k| lower.contains(k)) {
                push(format!("Neutral: {text}"));
            } else {
                push(format!("Red flag: {text}"));
                for org in &orgs {
                    push(format!("See also: {org}"));
                }
            }
        } else if names_subject {
            push(format!("Finding: {text}"));
        }
    }
    facts
}

fn web_search(data: &Value) -> WebSearchOutput {
    let subject = str_of(data, "subject");
    let query = str_of(data, "query");
    let mut out = WebSearchOutput {
        query: query.to_owned(),
        ..WebSearchOutput::default()
    };
    let mut summary = Vec::new();
    for page in data
        .get("pages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (title, url, content) = (
            str_of(page, "title"),
            str_of(page, "url"),
            str_of(page, "content"),
        );
        if !about_the_investigation(subject, query, content) {
            continue;
        }
        let first_sentence = content
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('-'))
            .and_then(|l| sentences(l).into_iter().next())
            .unwrap_or_default();
        summary.push(format!(
            "{title}: {}.",
            first_sentence.trim_end_matches('.')
        ));
        if is_fact_sheet(content) {
            for line in content.lines() {
                let Some(rest) = line.trim().strip_prefix("- **") else {
                    continue;
                };
                let Some((label, value)) = rest.split_once(":**") else {
                    continue;
                };
                out.key_facts.push(format!(
                    "{}: {} (source: {url})",
                    label.trim(),
                    value.trim()
                ));
            }
        } else {
            out.key_facts.extend(prose_facts(subject, url, content));
        }
        out.sources.push(Source {
            url: url.to_owned(),
            title: title.to_owned(),
        });
    }
    out.summary = if summary.is_empty() {
        format!("No page found by this search is about {subject}.")
    } else {
        summary.join(" ")
    };
    out
}

fn reflection(data: &Value) -> ReflectionOutput {
    let executed: Vec<String> = strings(data, "queries_executed")
        .iter()
        .map(|q| normalize(q))
        .collect();
    let (mut findings, mut entities, mut links, mut risks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut leads: Vec<(bool, String)> = Vec::new();
    for result in data
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let facts = strings(result, "key_facts");
        let has_flag = facts.iter().any(|f| parse_fact(f).0 == "Red flag");
        for fact in &facts {
            let (label, value, source) = parse_fact(fact);
            match label {
                "Person" | "Organization" | "Location" => entities.push(fact.clone()),
                "Link" => links.push(format!("{value} (source: {source})")),
                "Red flag" | "Neutral" | "Positive" => risks.push(fact.clone()),
                "See also" => leads.push((has_flag, value.to_owned())),
                _ => findings.push(fact.clone()),
            }
        }
    }
    for gap in strings(data, "previous_gaps") {
        leads.push((false, gap));
    }
    leads.sort_by_key(|(flag, _)| !flag);
    let mut open: Vec<String> = Vec::new();
    for (_, lead) in leads {
        if !executed.contains(&normalize(&lead))
            && !open.iter().any(|o| normalize(o) == normalize(&lead))
        {
            open.push(lead);
        }
    }
    let dedup = |mut v: Vec<String>| {
        let mut seen = Vec::new();
        v.retain(|x| {
            let fresh = !seen.contains(x);
            seen.push(x.clone());
            fresh
        });
        v
    };
    let section = |title: &str, lines: Vec<String>| {
        let body: String = dedup(lines).iter().map(|l| format!("- {l}\n")).collect();
        format!("## {title}\n{body}")
    };
    let analysis_summary = [
        section("Findings", findings),
        section("Entities", entities),
        section("Relationships", links),
        section("Risk assessment", risks),
        section("Gaps", open.clone()),
    ]
    .join("\n");
    let should_continue = !open.is_empty();
    ReflectionOutput {
        analysis_summary,
        should_continue,
        reasoning: if should_continue {
            format!(
                "{} lead(s) from the pages are not searched yet.",
                open.len()
            )
        } else {
            "Every lead the pages suggest has been searched; further searches would repeat what is known.".into()
        },
        query_strategy: if should_continue {
            let lines: String = open.iter().map(|l| format!("- {l}\n")).collect();
            format!("Follow the open leads, red flags first:\n{lines}")
        } else {
            String::new()
        },
    }
}

/// `Person: Name (also known as A; B) — description (source: URL)` → an entity.
fn parse_entity(line: &str, depth: u32) -> Option<Entity> {
    let (label, value, source) = parse_fact(line);
    let entity_type = match label {
        "Person" => EntityType::Person,
        "Organization" => EntityType::Organization,
        "Location" => EntityType::Location,
        _ => return None,
    };
    let (head, description) = value.split_once(" — ").unwrap_or((value, ""));
    let (name, aliases) = match head.split_once(" (also known as ") {
        Some((name, rest)) => (
            name,
            rest.trim_end_matches(')')
                .split(';')
                .map(|a| a.trim().to_owned())
                .collect(),
        ),
        None => (head, Vec::new()),
    };
    Some(Entity {
        name: name.trim().to_owned(),
        entity_type,
        aliases,
        description: description.trim().to_owned(),
        first_seen_depth: depth,
        sources: if source.is_empty() {
            Vec::new()
        } else {
            vec![source.to_owned()]
        },
    })
}

fn indicator(line: &str) -> (String, Indicator) {
    let (label, value, source) = parse_fact(line);
    (
        label.to_owned(),
        Indicator {
            text: value.to_owned(),
            source: source.to_owned(),
        },
    )
}

fn merge(data: &Value) -> EntityMergeOutput {
    let depth = u32::try_from(data.get("depth").and_then(Value::as_u64).unwrap_or(0)).unwrap_or(0);
    let existing: Vec<Entity> = data
        .get("existing_entities")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let summary = str_of(data, "analysis_summary");
    let found: Vec<Entity> = section_lines(summary, "Entities")
        .iter()
        .filter_map(|l| parse_entity(l, depth))
        .collect();
    let (entities, _) = reconcile_entities(&existing, found, depth);
    let mut out = EntityMergeOutput {
        entities,
        ..EntityMergeOutput::default()
    };
    for line in section_lines(summary, "Risk assessment") {
        match indicator(&line) {
            (label, item) if label == "Red flag" => out.red_flags.push(item),
            (label, item) if label == "Neutral" => out.neutral.push(item),
            (label, item) if label == "Positive" => out.positive.push(item),
            _ => {}
        }
    }
    out
}

fn entities_of(data: &Value) -> Vec<Entity> {
    data.get("entities")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

fn indicators(data: &Value, key: &str) -> Vec<Indicator> {
    data.get(key)
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default()
}

/// The entities a text mentions (by name or alias).
fn mentioned<'a>(entities: &'a [Entity], text: &str) -> Vec<&'a Entity> {
    let text = text.to_lowercase();
    entities
        .iter()
        .filter(|e| {
            std::iter::once(&e.name)
                .chain(&e.aliases)
                .any(|n| text.contains(&n.to_lowercase()))
        })
        .collect()
}

fn severity_of(text: &str) -> Severity {
    let t = text.to_lowercase();
    if ["sanction", "designated", "embargo", "brib"]
        .iter()
        .any(|k| t.contains(k))
    {
        Severity::High
    } else {
        Severity::Medium
    }
}

fn connections(data: &Value) -> ConnectionMappingOutput {
    let subject = str_of(data, "subject");
    let entities = entities_of(data);
    let flags = indicators(data, "red_flags");
    let resolve = |name: &str| {
        entities
            .iter()
            .find(|e| e.is_named(name.trim()))
            .map(|e| e.name.clone())
    };
    let mut edges: Vec<GraphEdge> = Vec::new();
    for line in strings(data, "relationships") {
        let (body, source) = line
            .rsplit_once(" (source: ")
            .map_or((line.as_str(), ""), |(b, s)| (b, s.trim_end_matches(')')));
        let parts: Vec<&str> = body.split(" — ").collect();
        let [a, relationship, b] = parts[..] else {
            continue;
        };
        let (Some(source_id), Some(target_id)) = (resolve(a), resolve(b)) else {
            continue;
        };
        if edges.iter().any(|e| {
            e.source == source_id && e.target == target_id && e.relationship == relationship
        }) {
            continue;
        }
        edges.push(GraphEdge {
            source: source_id,
            target: target_id,
            relationship: relationship.to_owned(),
            evidence: body.to_owned(),
            sources: if source.is_empty() {
                Vec::new()
            } else {
                vec![source.to_owned()]
            },
        });
    }
    let degree = |name: &str| {
        edges
            .iter()
            .filter(|e| e.source == name || e.target == name)
            .count()
    };
    let nodes = entities
        .iter()
        .map(|e| {
            let flagged = flags
                .iter()
                .any(|f| !mentioned(std::slice::from_ref(e), &f.text).is_empty());
            let (importance, importance_reasoning) = if e.is_named(subject) {
                (
                    Importance::High,
                    "the subject of the investigation".to_owned(),
                )
            } else if flagged {
                (Importance::High, "named in a red flag".to_owned())
            } else if degree(&e.name) > 0 {
                (
                    Importance::Medium,
                    format!("connected to {} other entit(ies)", degree(&e.name)),
                )
            } else {
                (
                    Importance::Low,
                    "mentioned, with no mapped connection".to_owned(),
                )
            };
            GraphNode {
                id: e.name.clone(),
                name: e.name.clone(),
                entity_type: e.entity_type,
                importance,
                importance_reasoning,
            }
        })
        .collect();
    let patterns = entities
        .iter()
        .filter(|e| degree(&e.name) >= 3)
        .map(|e| {
            let mut others: Vec<String> = edges
                .iter()
                .filter_map(|x| {
                    if x.source == e.name {
                        Some(x.target.clone())
                    } else if x.target == e.name {
                        Some(x.source.clone())
                    } else {
                        None
                    }
                })
                .collect();
            others.dedup();
            Pattern {
                description: format!(
                    "{} recurs across {} connections: {}",
                    e.name,
                    others.len(),
                    others.join(", ")
                ),
                entities: std::iter::once(e.name.clone()).chain(others).collect(),
            }
        })
        .collect();
    let suspicious_connections = flags
        .iter()
        .filter_map(|f| {
            let named: Vec<String> = mentioned(&entities, &f.text)
                .iter()
                .map(|e| e.name.clone())
                .collect();
            (!named.is_empty()).then(|| SuspiciousConnection {
                description: f.text.clone(),
                entities: named,
                severity: severity_of(&f.text),
                reasoning: format!("tied to a red flag (source: {})", f.source),
            })
        })
        .collect();
    ConnectionMappingOutput {
        nodes,
        edges,
        patterns,
        suspicious_connections,
    }
}

fn finding(text: &str, source: &str) -> Finding {
    Finding {
        statement: text.to_owned(),
        sources: if source.is_empty() {
            Vec::new()
        } else {
            vec![source.to_owned()]
        },
        ..Finding::default()
    }
}

fn facts_labelled(facts: &[String], labels: &[&str]) -> Vec<Finding> {
    facts
        .iter()
        .map(|f| parse_fact(f))
        .filter(|(label, _, _)| labels.contains(label))
        .map(|(_, value, source)| finding(value, source))
        .collect()
}

fn section(summary: String, findings: Vec<Finding>) -> ReportSection {
    ReportSection { summary, findings }
}

fn matching(items: &[Indicator], keywords: &[&str]) -> Vec<Finding> {
    items
        .iter()
        .filter(|i| {
            let t = i.text.to_lowercase();
            keywords.iter().any(|k| t.contains(k))
        })
        .map(|i| finding(&i.text, &i.source))
        .collect()
}

fn category_of(text: &str) -> &'static str {
    let t = text.to_lowercase();
    if ["sanction", "designated", "embargo"]
        .iter()
        .any(|k| t.contains(k))
    {
        "sanctions"
    } else if ["brib", "procurement", "prosecutor"]
        .iter()
        .any(|k| t.contains(k))
    {
        "corruption"
    } else if ["shell", "nominee", "not disclosed", "undisclosed"]
        .iter()
        .any(|k| t.contains(k))
    {
        "governance and transparency"
    } else {
        "litigation and reputation"
    }
}

/// How the stand-in's executive summary starts: every report it writes says who wrote it.
const OFFLINE_NOTE: &str =
    "(Written by the offline stand-in, a deterministic program, not a model.) ";

fn report(data: &Value) -> DueDiligenceReport {
    let subject = str_of(data, "subject");
    let facts = strings(data, "key_facts");
    let entities = entities_of(data);
    let risk = data.get("risk_indicators").cloned().unwrap_or(Value::Null);
    let (flags, neutral, positive) = (
        indicators(&risk, "red_flags"),
        indicators(&risk, "neutral"),
        indicators(&risk, "positive"),
    );
    let graph: ConnectionMappingOutput = data
        .get("entity_graph")
        .cloned()
        .and_then(|v| serde_json::from_value(v).ok())
        .unwrap_or_default();
    let the_subject = entities.iter().find(|e| e.is_named(subject));
    let all: Vec<Indicator> = flags
        .iter()
        .chain(&neutral)
        .chain(&positive)
        .cloned()
        .collect();

    let risks: Vec<Risk> = flags
        .iter()
        .map(|f| Risk {
            category: category_of(&f.text).to_owned(),
            severity: severity_of(&f.text),
            description: f.text.clone(),
            evidence: vec![f.source.clone()],
        })
        .collect();
    let overall_risk = match risks.iter().map(|r| r.severity).max() {
        Some(Severity::Critical) => RiskLevel::Critical,
        Some(Severity::High) => RiskLevel::High,
        Some(_) => RiskLevel::Medium,
        None if facts.is_empty() && entities.is_empty() => RiskLevel::Insufficient,
        None => RiskLevel::Low,
    };
    let level = format!("{overall_risk:?}").to_lowercase();
    let executive_summary = OFFLINE_NOTE.to_owned()
        + &match flags.first() {
            Some(first) => format!(
                "Overall risk for {subject}: {level}. {} red flag(s) were found, the first: {} {} positive item(s) were found.",
                flags.len(),
                first.text,
                positive.len()
            ),
            None => format!(
                "Overall risk for {subject}: {level}. No red flag was found; {} positive item(s) were found.",
                positive.len()
            ),
        };
    let sanctions = matching(&all, &["sanction", "designat", "embargo"]);
    let mut gaps = strings(data, "open_gaps");
    if sanctions.is_empty() {
        gaps.push(format!("No sanctions or PEP list was screened directly; no designation of {subject} was found in the sources."));
    }
    let mut recommendations: Vec<String> = flags
        .iter()
        .map(|f| match category_of(&f.text) {
            "sanctions" => format!("Escalate to sanctions compliance and obtain licensing advice before any dealing: {}", f.text),
            "corruption" => format!("Request the status of the investigation and a legal opinion: {}", f.text),
            "governance and transparency" => format!("Obtain beneficial-ownership and disclosure documents: {}", f.text),
            _ => format!("Review the underlying records: {}", f.text),
        })
        .collect();
    recommendations.push(format!(
        "Verify {subject}'s identity documents against the aliases found."
    ));
    DueDiligenceReport {
        executive_summary,
        subject_overview: section(
            the_subject.map_or_else(
                || format!("{subject}: no profile found."),
                |e| format!("{}: {}", e.name, e.description),
            ),
            facts_labelled(&facts, &["Person"])
                .into_iter()
                .filter(|f| f.statement.starts_with(subject))
                .collect(),
        ),
        scope_and_methodology: format!(
            "{} queries over {} iteration(s) of search and reflection; the loop stopped by {}. Sources: the offline corpus, read by the offline stand-in (a deterministic program, not a model).",
            strings(data, "queries_executed").len(),
            data.get("depth_reached")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            str_of(data, "termination_reason")
        ),
        identity_verification: section(
            the_subject.map_or_else(String::new, |e| {
                format!("Also known as: {}.", e.aliases.join("; "))
            }),
            the_subject
                .map(|e| {
                    e.sources
                        .iter()
                        .map(|s| finding(&format!("{} identified", e.name), s))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        professional_history: section(
            String::new(),
            facts_labelled(&facts, &["Role", "Education"]),
        ),
        corporate_affiliations: section(
            String::new(),
            entities
                .iter()
                .filter(|e| e.entity_type == EntityType::Organization)
                .map(|e| {
                    finding(
                        &format!("{}: {}", e.name, e.description),
                        e.sources.first().map_or("", String::as_str),
                    )
                })
                .collect(),
        ),
        financial_profile: section(String::new(), facts_labelled(&facts, &["Finance"])),
        legal_and_regulatory: section(
            String::new(),
            matching(
                &all,
                &[
                    "court",
                    "claim",
                    "tribunal",
                    "prosecutor",
                    "investigat",
                    "designat",
                    "lawsuit",
                    "settled",
                ],
            ),
        ),
        sanctions_and_pep_screening: section(
            if sanctions.is_empty() {
                "No sanctions designation found in the sources.".into()
            } else {
                String::new()
            },
            sanctions,
        ),
        adverse_media: section(
            String::new(),
            flags.iter().map(|f| finding(&f.text, &f.source)).collect(),
        ),
        key_relationships: section(
            String::new(),
            graph
                .edges
                .iter()
                .map(|e| {
                    finding(
                        &format!("{} — {} — {}", e.source, e.relationship, e.target),
                        e.sources.first().map_or("", String::as_str),
                    )
                })
                .collect(),
        ),
        suspicious_patterns: section(
            graph
                .patterns
                .iter()
                .map(|p| p.description.clone())
                .collect::<Vec<_>>()
                .join(" "),
            graph
                .suspicious_connections
                .iter()
                .map(|s| finding(&s.description, ""))
                .collect(),
        ),
        risk_assessment: RiskAssessment {
            overall_risk,
            risks,
        },
        red_flags: flags.iter().map(|f| finding(&f.text, &f.source)).collect(),
        mitigating_factors: positive
            .iter()
            .map(|p| finding(&p.text, &p.source))
            .collect(),
        evidence_strength: flags
            .iter()
            .chain(&positive)
            .map(|i| EvidenceRating {
                finding: i.text.clone(),
                strength: if i.source.is_empty() {
                    Strength::Weak
                } else {
                    Strength::Moderate
                },
                sources: vec![i.source.clone()],
            })
            .collect(),
        information_gaps: gaps,
        recommendations_and_next_steps: recommendations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::due_diligence::prompts::DATA_MARKER;
    use graphkit_llm::{ChatModel, LlmError, Message};
    use serde_json::json;

    fn prompt(data: &Value) -> Message {
        Message::user(format!("Write the queries.\n\n{DATA_MARKER}\n{data}"))
    }

    #[tokio::test]
    async fn answers_a_structured_request_from_its_data_block() {
        let model = offline_model();
        let list = model
            .clone()
            .with_structured_output::<SearchQueriesList>()
            .invoke(&[prompt(&json!({"subject": "Ada Quill", "depth": 0}))])
            .await
            .unwrap();
        assert_eq!(list.queries.len(), 4);
        assert_eq!(list.queries[0], "Ada Quill biography background");
        let later = model
            .clone()
            .with_structured_output::<SearchQueriesList>()
            .invoke(&[prompt(&json!({
                "subject": "Ada Quill", "depth": 1,
                "query_strategy": "Follow the open leads:\n- Quill Holdings\n- Port Ellery court"
            }))])
            .await
            .unwrap();
        assert_eq!(later.queries, ["Quill Holdings", "Port Ellery court"]);
        assert_eq!(model.requests().len(), 2);
        assert_eq!(model.model_name(), "offline-due-diligence");
    }

    #[tokio::test]
    async fn a_request_it_cannot_read_fails_as_a_stand_in_error() {
        let model = offline_model();
        let err = model
            .clone()
            .with_structured_output::<SearchQueriesList>()
            .retries(0)
            .invoke(&[Message::user("Write the queries.")])
            .await
            .unwrap_err();
        assert!(
            matches!(&err, LlmError::StandIn { problem, .. }
                if problem.contains("the prompt has no data block to answer from")),
            "{err}"
        );
        let err = model.invoke(&[Message::user("hello")]).await.unwrap_err();
        assert!(
            matches!(&err, LlmError::StandIn { problem, .. }
                if problem.contains("no handler for a free-text request")),
            "{err}"
        );
    }
}
