//! The offline stand-in for the planner and the LLM sub-agents, built on
//! [`StandInModel`]: **a test double, not a language model**. It reads the same requests
//! a model gets and answers through the same paths (schema-checked structured replies),
//! following the seed's data flow: iteration 1 decomposer + aggregator, iteration 2
//! sampler (whose extraction reads the samples), iteration 3 `synthesize`. Its report is
//! composed from the real aggregation numbers in the request.

use graphkit_llm::{ChatRequest, StandInModel};
use serde_json::{Value, json};

use super::nodes::{PlannerDecision, SYNTHESIZE};
use super::prompts::{labelled, section};
use super::state::{
    AggregationResult, Evidence, Finding, Perspective, Source, SubAgentCall, SubQuestion,
};
use super::subagents::report::{REPORT_HEADING, period_label};
use super::subagents::{
    Extraction, GapReport, PerspectiveList, ReportDraft, SubQuestionList, ValidationReport,
    compose_report,
};

/// The offline stand-in (see the module docs).
pub fn offline_model() -> StandInModel {
    StandInModel::new("mcp-research-offline")
        .on_structured(plan)
        .on_structured(|req: &ChatRequest| decompose(req.last_user_text()))
        .on_structured(|req: &ChatRequest| PerspectiveList {
            perspectives: perspectives(labelled(req.last_user_text(), "Query:")),
        })
        .on_structured(|req: &ChatRequest| extract(req.last_user_text()))
        .on_structured(|_: &ChatRequest| ValidationReport { issues: Vec::new() })
        .on_structured(|_: &ChatRequest| GapReport { gaps: Vec::new() })
        .on_structured(|req: &ChatRequest| report(req.last_user_text()))
        .on_text(|req: &ChatRequest| aggregation_note(req.last_user_text()))
}

/// The field a query asks about: event type, conclusion, year, else country.
pub(crate) fn field_for(query: &str) -> &'static str {
    let q = query.to_lowercase();
    if q.contains("type") || q.contains("kind") {
        "event_type"
    } else if q.contains("conclusion") || q.contains("outcome") {
        "conclusion"
    } else if q.contains("year") || q.contains("trend") || q.contains("over time") {
        "year"
    } else {
        "country"
    }
}

/// Countries by region, for a question that names a region rather than countries (general
/// geography, not the dataset's list: a name the data does not have matches nothing).
const REGIONS: &[(&str, &[&str])] = &[
    (
        "europe",
        &[
            "Germany",
            "France",
            "United Kingdom",
            "Poland",
            "Norway",
            "Iceland",
            "Spain",
            "Italy",
            "Portugal",
            "Netherlands",
            "Belgium",
            "Sweden",
            "Finland",
            "Denmark",
            "Austria",
            "Switzerland",
            "Ireland",
            "Greece",
            "Czech Republic",
            "Hungary",
            "Romania",
            "Ukraine",
        ],
    ),
    (
        "asia",
        &[
            "India",
            "China",
            "Japan",
            "Indonesia",
            "Philippines",
            "Vietnam",
            "Turkey",
            "South Korea",
            "Thailand",
            "Malaysia",
            "Pakistan",
            "Bangladesh",
            "Singapore",
        ],
    ),
    (
        "africa",
        &[
            "Egypt",
            "South Africa",
            "Nigeria",
            "Kenya",
            "Ethiopia",
            "Ghana",
            "Morocco",
            "Algeria",
            "Tanzania",
        ],
    ),
    (
        "latin america",
        &[
            "Mexico",
            "Brazil",
            "Colombia",
            "Argentina",
            "Chile",
            "Peru",
            "Venezuela",
        ],
    ),
    (
        "south america",
        &[
            "Brazil",
            "Colombia",
            "Argentina",
            "Chile",
            "Peru",
            "Venezuela",
            "Ecuador",
        ],
    ),
    ("north america", &["United States", "Canada", "Mexico"]),
    (
        "oceania",
        &["Australia", "New Zealand", "Fiji", "Papua New Guinea"],
    ),
];

/// Other words for the event types (`cyberattack` is a `cyber_incident`).
const TYPE_WORDS: &[(&str, &str)] = &[
    ("cyberattack", "cyber_incident"),
    ("cyber attack", "cyber_incident"),
    ("hack", "cyber_incident"),
    ("fraud", "financial_fraud"),
    ("earthquake", "natural_disaster"),
    ("flood", "natural_disaster"),
    ("disaster", "natural_disaster"),
    ("summit", "diplomatic_summit"),
    ("outbreak", "public_health_alert"),
    ("epidemic", "public_health_alert"),
    ("trade deal", "trade_agreement"),
    ("outage", "infrastructure_failure"),
];

/// The four-digit years a question names, in order.
fn years_in(q: &str) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    for (at, _) in q.char_indices().filter(|(_, c)| c.is_ascii_digit()) {
        if q[..at].ends_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let digits: String = q[at..].chars().take_while(char::is_ascii_digit).collect();
        if digits.len() == 4
            && let Ok(year) = digits.parse::<i64>()
            && (1900..=2100).contains(&year)
        {
            out.push((at, year));
        }
    }
    out
}

/// The periods a question names, in order, as the tool's `year` filter takes them:
/// `before 2000` (`lt`), `after 2010` (`gt`), `since 2018` / `from 2018` (`gte`),
/// `until 2010` (`lte`), `the 1990s` (`gte` 1990, `lte` 1999), `between 2010 and 2015` /
/// `from 2010 to 2015` (one range), and a bare year (that year).
fn periods_in(q: &str) -> Vec<Value> {
    let years = years_in(q);
    let word_before = |at: usize| {
        q[..at]
            .split_whitespace()
            .last()
            .unwrap_or_default()
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_owned()
    };
    let mut periods = Vec::new();
    let mut i = 0;
    while let Some(&(at, year)) = years.get(i) {
        i += 1;
        if q[at + 4..].starts_with('s') {
            periods.push(json!({"gte": year, "lte": year + 9}));
            continue;
        }
        let before = word_before(at);
        if let Some(&(next_at, next)) = years.get(i)
            && matches!(before.as_str(), "between" | "from")
            && matches!(word_before(next_at).as_str(), "and" | "to" | "until")
        {
            i += 1;
            periods.push(json!({"gte": year.min(next), "lte": year.max(next)}));
            continue;
        }
        periods.push(match before.as_str() {
            "since" | "from" => json!({"gte": year}),
            "after" => json!({"gt": year}),
            "before" => json!({"lt": year}),
            "until" | "through" => json!({"lte": year}),
            _ => json!(year),
        });
    }
    periods
}

/// Words that make a question with two periods a comparison of them.
const COMPARING: &[&str] = &[
    " vs ", " vs. ", "versus", "compare", "differ", "change", "against", " than ",
];

/// The two periods a question compares (`before 2000 vs after 2010`, `the 1990s compared
/// with the 2000s`), each as a `year` filter; `None` when it does not compare two.
pub(crate) fn compared_periods(query: &str) -> Option<[Value; 2]> {
    let q = query.to_lowercase();
    let periods = periods_in(&q);
    match &periods[..] {
        [a, b] if COMPARING.iter().any(|w| q.contains(w)) => Some([a.clone(), b.clone()]),
        _ => None,
    }
}

/// The time window a question names: one period (see [`periods_in`]); several periods
/// that are not compared span from the first to the last year; `the last 5 years` ends
/// in 2024, the dataset's last year.
fn time_window(q: &str) -> Option<Value> {
    let periods = periods_in(q);
    if let [one] = &periods[..] {
        return Some(one.clone());
    }
    let years: Vec<i64> = years_in(q).into_iter().map(|(_, y)| y).collect();
    if let (Some(first), Some(last)) = (years.iter().min(), years.iter().max())
        && years.len() >= 2
    {
        return Some(json!({"gte": first, "lte": last}));
    }
    let last = q.find("last ")?;
    let n: i64 = q[last + 5..].split_whitespace().next()?.parse().ok()?;
    let last_year = i64::from(*super::dataset::YEARS.end());
    q[last..]
        .contains("year")
        .then(|| json!({"gte": last_year - n + 1, "lte": last_year}))
}

/// The filters a question asks for, as the tool's schema offers them: countries (named,
/// or by region), event types, conclusions and a time window. `None` when it names none.
pub(crate) fn filters_for(query: &str) -> Option<Value> {
    let q = query.to_lowercase();
    let mut filters = serde_json::Map::new();
    let mut countries: Vec<&str> = Vec::new();
    for (region, members) in REGIONS {
        if q.contains(region) {
            countries.extend(members.iter());
        }
    }
    for name in REGIONS.iter().flat_map(|(_, members)| members.iter()) {
        if q.contains(&name.to_lowercase()) && !countries.contains(name) {
            countries.push(name);
        }
    }
    if !countries.is_empty() {
        filters.insert("country".into(), json!(countries));
    }
    let mut types: Vec<&str> = super::dataset::EVENT_TYPES
        .iter()
        .copied()
        .filter(|t| q.contains(&t.replace('_', " ")))
        .collect();
    for (word, kind) in TYPE_WORDS {
        if q.contains(word) && !types.contains(kind) {
            types.push(kind);
        }
    }
    if !types.is_empty() {
        filters.insert("event_type".into(), json!(types));
    }
    let conclusions: Vec<&str> = super::dataset::CONCLUSIONS
        .iter()
        .copied()
        .filter(|c| q.contains(&c.replace('_', " ")))
        .collect();
    if !conclusions.is_empty() {
        filters.insert("conclusion".into(), json!(conclusions));
    }
    // Two periods compared are two calls, each with its own window (see `plan`).
    if compared_periods(&q).is_none()
        && let Some(window) = time_window(&q)
    {
        filters.insert("year".into(), window);
    }
    (!filters.is_empty()).then_some(Value::Object(filters))
}

/// `filters` with the `year` window of `period` (a question's filters, for one of the
/// periods it compares).
fn in_period(filters: Option<&Value>, period: &Value) -> Value {
    let mut filters = filters.cloned().unwrap_or_else(|| json!({}));
    filters["year"] = period.clone();
    filters
}

/// The field to group by: the one the question names (`by conclusion`, `per year`,
/// `over time`), else [`field_for`]'s guess; a field the filters fix to one value is not
/// worth grouping by, so then the next one that is not.
pub(crate) fn group_for(query: &str, filters: Option<&Value>) -> &'static str {
    let q = query.to_lowercase();
    let named = [
        ("country", "country"),
        ("countries", "country"),
        ("type", "event_type"),
        ("kind", "event_type"),
        ("conclusion", "conclusion"),
        ("outcome", "conclusion"),
        ("year", "year"),
    ]
    .iter()
    .find(|(word, _)| q.contains(&format!("by {word}")) || q.contains(&format!("per {word}")))
    .map(|(_, field)| *field);
    let fixed = |field: &str| {
        filters
            .and_then(|f| f.get(field))
            .is_some_and(|v| !v.is_array() || v.as_array().is_some_and(|a| a.len() == 1))
    };
    let guess = named.unwrap_or_else(|| field_for(query));
    if !fixed(guess) {
        return guess;
    }
    ["conclusion", "event_type", "country", "year"]
        .into_iter()
        .find(|f| !fixed(f))
        .unwrap_or(guess)
}

fn plan(req: &ChatRequest) -> PlannerDecision {
    let text = req.last_user_text();
    let query = labelled(text, "Query:");
    let iteration: u32 = labelled(text, "Iteration:")
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let enabled: Vec<&str> = labelled(text, "Enabled tools:")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let tool = enabled
        .iter()
        .find(|t| **t == "analyze_all_events")
        .or(enabled.first())
        .copied()
        .unwrap_or_default();
    let filters = filters_for(query);
    let field = group_for(query, filters.as_ref());
    let with_filters = |mut arguments: Value| {
        if let Some(f) = &filters {
            arguments["filters"] = f.clone();
        }
        arguments
    };
    let call = |agent: &str, arguments: Value| SubAgentCall {
        agent_name: agent.into(),
        arguments,
    };
    let periods = compared_periods(query);
    match (iteration, &periods) {
        // Two periods compared: one aggregation per period, same grouping and filters.
        (1, Some(periods)) => PlannerDecision {
            sub_agent_calls: std::iter::once(call("decomposer", json!({ "query": query })))
                .chain(periods.iter().map(|period| {
                    call(
                        "aggregator",
                        json!({ "tool_name": tool, "group_by": field, "top_n": 10,
                                "filters": in_period(filters.as_ref(), period) }),
                    )
                }))
                .collect(),
            next_action: None,
            confidence: Some(0.4),
            reasoning: format!(
                "(offline stand-in) compare the periods {} and {}: count events by {field} in each",
                period_label(&periods[0]),
                period_label(&periods[1])
            ),
        },
        (2, Some(periods)) => PlannerDecision {
            sub_agent_calls: periods
                .iter()
                .map(|period| {
                    call(
                        "sampler",
                        json!({ "tool_name": tool, "group_by": field, "samples_per_bucket": 1, "top_n": 3,
                                "filters": in_period(filters.as_ref(), period) }),
                    )
                })
                .collect(),
            next_action: None,
            confidence: Some(0.6),
            reasoning: format!(
                "(offline stand-in) sample documents of each period's largest {field} buckets"
            ),
        },
        (1, None) => PlannerDecision {
            sub_agent_calls: vec![
                call("decomposer", json!({ "query": query })),
                call(
                    "aggregator",
                    with_filters(json!({ "tool_name": tool, "group_by": field, "top_n": 10 })),
                ),
            ],
            next_action: None,
            confidence: Some(0.4),
            reasoning: format!(
                "(offline stand-in) decompose the question and count events by {field}{}",
                filters
                    .as_ref()
                    .map(|f| format!(" where {f}"))
                    .unwrap_or_default()
            ),
        },
        (2, None) => PlannerDecision {
            sub_agent_calls: vec![call(
                "sampler",
                with_filters(
                    json!({ "tool_name": tool, "group_by": field, "samples_per_bucket": 2, "top_n": 5 }),
                ),
            )],
            next_action: None,
            confidence: Some(0.6),
            reasoning: format!(
                "(offline stand-in) sample documents from the largest {field} buckets and extract findings"
            ),
        },
        _ => PlannerDecision {
            sub_agent_calls: Vec::new(),
            next_action: Some(SYNTHESIZE.into()),
            confidence: Some(0.85),
            reasoning: "(offline stand-in) the counts and samples answer the question".into(),
        },
    }
}

fn decompose(text: &str) -> SubQuestionList {
    let query = labelled(text, "Query:");
    let field = group_for(query, filters_for(query).as_ref()).replace('_', " ");
    let questions = [
        format!("How are the events distributed by {field}?"),
        format!("Which {field} values have the most events?"),
        format!("What do typical events of the largest {field} groups report?"),
        "How confident can we be given the data available?".to_owned(),
    ];
    SubQuestionList {
        sub_questions: questions
            .into_iter()
            .enumerate()
            .map(|(i, question)| SubQuestion {
                id: format!("q{}", i + 1),
                question,
            })
            .collect(),
    }
}

fn perspectives(query: &str) -> Vec<Perspective> {
    [
        ("analyst", "the counts behind"),
        ("reporter", "the stories behind"),
        ("skeptic", "what could bias the data on"),
    ]
    .into_iter()
    .map(|(name, angle)| Perspective {
        name: name.into(),
        angle: format!("{angle}: {query}"),
    })
    .collect()
}

fn extract(text: &str) -> Extraction {
    let docs: Vec<Value> = section(text, "DOCUMENTS:");
    let findings = docs
        .iter()
        .take(6)
        .filter_map(|doc| {
            let id = doc["doc_id"].as_str()?;
            let body = doc["text"].as_str()?;
            let first = body.split(". ").next().unwrap_or(body).trim();
            Some(Finding {
                claim: crate::shared::truncate(first, 200),
                evidence: vec![Evidence {
                    doc_id: id.into(),
                    quote: crate::shared::truncate(body, 160),
                }],
                confidence: Some(0.7),
            })
        })
        .collect();
    Extraction { findings }
}

fn report(text: &str) -> ReportDraft {
    let aggregations: Vec<AggregationResult> = section(text, "AGGREGATIONS:");
    let findings: Vec<Finding> = section(text, "FINDINGS:");
    let sources: Vec<Source> = section(text, "SOURCES:");
    let query = labelled(text, "Query:");
    let mut draft = compose_report(query, &aggregations, &findings, &sources);
    let mut filters = filters_for(query).map_or_else(|| "none".to_owned(), |f| format!("`{f}`"));
    if let Some([a, b]) = compared_periods(query) {
        filters.push_str(&format!(
            "; periods compared: {} and {}",
            period_label(&a),
            period_label(&b)
        ));
    }
    draft.markdown = draft.markdown.replacen(
        REPORT_HEADING,
        &format!(
            "{REPORT_HEADING}\n\n*Written by the offline stand-in (a deterministic program, not a \
             model) from the tools' real numbers. Filters it read from the question: {filters}.*"
        ),
        1,
    );
    draft
}

fn aggregation_note(text: &str) -> String {
    let aggregations: Vec<AggregationResult> = section(text, "AGGREGATION:");
    match aggregations
        .first()
        .and_then(|a| a.buckets.first().map(|b| (a, b)))
    {
        Some((a, top)) => format!(
            "{} has the most events by {} ({} of the {} counted).",
            top.key,
            a.field,
            top.doc_count,
            a.total()
        ),
        None => "The aggregation is empty.".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_becomes_the_tools_filters_and_grouping() {
        let q = "Which event types dominate in Oceania between 2012 and 2008?";
        let filters = filters_for(q).expect("filters");
        assert_eq!(filters["year"], json!({"gte": 2008, "lte": 2012}));
        assert!(
            filters["country"]
                .as_array()
                .is_some_and(|c| c.contains(&json!("New Zealand")))
        );
        assert_eq!(group_for(q, Some(&filters)), "event_type");

        let q = "How did cyberattacks in Chile end, by conclusion, since 2019?";
        let filters = filters_for(q).expect("filters");
        assert_eq!(filters["event_type"], json!(["cyber_incident"]));
        assert_eq!(filters["country"], json!(["Chile"]));
        assert_eq!(filters["year"], json!({"gte": 2019}));
        assert_eq!(group_for(q, Some(&filters)), "conclusion");

        // A field the filters fix to one value is not the grouping.
        let q = "How many events did France have before 2005?";
        let filters = filters_for(q).expect("filters");
        assert_eq!(filters["year"], json!({"lt": 2005}));
        assert_eq!(group_for(q, Some(&filters)), "conclusion");

        assert_eq!(
            filters_for("Which events in the last 5 years?").expect("filters")["year"],
            json!({"gte": 2020, "lte": 2024})
        );
        assert_eq!(filters_for("Which countries have the most events?"), None);
    }
}
