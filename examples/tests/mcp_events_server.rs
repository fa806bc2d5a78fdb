//! The events MCP server (`graphkit-events-mcp`, seed 004): its answers against counts
//! computed here independently from the dataset, its tool errors, and the built binary used
//! by graphkit-tools' MCP client over stdio and over streamable HTTP.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use graphkit_examples::mcp_research::dataset::{self, CONCLUSIONS, EVENT_TYPES, Event, YEARS};
use graphkit_examples::mcp_research::events_server::{
    self, ANALYZE_ALL_EVENTS, ANALYZE_EVENTS_BY_CONCLUSION, AnalyzeArgs, EventsHttpServer, Query,
};
use graphkit_tools::mcp::McpClient;
use proptest::prelude::*;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_graphkit-events-mcp");

// ---------------------------------------------------------------------------------------
// Reference computation: plain loops over the events, written without the server's code.

/// An event's field as the JSON string the server keys buckets with.
fn field_of(event: &Event, field: &str) -> String {
    match field {
        "country" => event.country.to_owned(),
        "event_type" => event.event_type.to_owned(),
        "conclusion" => event.conclusion.to_owned(),
        "year" => event.year.to_string(),
        other => panic!("no reference for field {other}"),
    }
}

/// `[(key, count)]`, largest count first, then key.
fn reference_buckets<'a>(
    events: impl Iterator<Item = &'a Event>,
    field: &str,
) -> Vec<(String, u64)> {
    let mut counts = BTreeMap::<String, u64>::new();
    for event in events {
        *counts.entry(field_of(event, field)).or_default() += 1;
    }
    let mut buckets: Vec<(String, u64)> = counts.into_iter().collect();
    buckets.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    buckets
}

/// Ids of `events`, most recent year first, then by id.
fn reference_hit_order<'a>(events: impl Iterator<Item = &'a Event>) -> Vec<String> {
    let mut events: Vec<&Event> = events.collect();
    events.sort_by(|a, b| b.year.cmp(&a.year).then(a.id.cmp(&b.id)));
    events.into_iter().map(|e| e.id.clone()).collect()
}

fn buckets_of(answer: &Value) -> Vec<(String, u64)> {
    answer["aggregations"]["group_by"]["buckets"]
        .as_array()
        .expect("aggregations.group_by.buckets is a list")
        .iter()
        .map(|b| {
            (
                b["key"]
                    .as_str()
                    .expect("bucket keys are strings")
                    .to_owned(),
                b["doc_count"].as_u64().expect("doc_count is a number"),
            )
        })
        .collect()
}

fn hit_ids(hits: &Value) -> Vec<String> {
    hits["hits"]
        .as_array()
        .expect("hits.hits is a list")
        .iter()
        .map(|hit| {
            let id = hit["_id"].as_str().expect("_id is a string");
            assert_eq!(hit["_source"]["id"], id, "_source is the event of _id");
            id.to_owned()
        })
        .collect()
}

fn total_of(hits: &Value) -> u64 {
    assert_eq!(hits["total"]["relation"], "eq");
    hits["total"]["value"].as_u64().expect("hits.total.value")
}

// ---------------------------------------------------------------------------------------
// An in-process server and graphkit's MCP client.

struct Connected {
    _server: EventsHttpServer,
    client: Arc<McpClient>,
}

async fn connect() -> Connected {
    let server = events_server::spawn_http("127.0.0.1:0")
        .await
        .expect("binds a loopback port");
    let client = McpClient::http("events", server.url())
        .await
        .expect("graphkit's MCP client connects");
    Connected {
        _server: server,
        client,
    }
}

impl Connected {
    /// A successful call's `structuredContent`, checked to equal the JSON of its text.
    async fn ok(&self, tool: &str, args: Value) -> Value {
        let result = self
            .client
            .call_tool(tool, args.clone())
            .await
            .expect("the call reaches the server");
        assert!(!result.is_error, "{tool} {args} failed: {}", result.text);
        let structured = result.structured.expect("structuredContent");
        let text: Value = serde_json::from_str(&result.text).expect("the text is JSON");
        assert_eq!(text, structured, "text and structuredContent agree");
        structured
    }

    /// A successful `analyze_all_events` call's `structuredContent` (see [`ok`](Self::ok)).
    async fn all_events(&self, args: Value) -> Value {
        self.ok(ANALYZE_ALL_EVENTS, args).await
    }

    /// A tool error's message.
    async fn tool_error(&self, tool: &str, args: Value) -> String {
        let result = self
            .client
            .call_tool(tool, args.clone())
            .await
            .expect("a tool error is an answer, not a protocol failure");
        assert!(
            result.is_error,
            "{tool} {args} should be a tool error, got {}",
            result.text
        );
        result.text
    }
}

// ---------------------------------------------------------------------------------------
// The dataset.

#[test]
fn the_dataset_has_2000_well_formed_events_with_unique_ids() {
    let events = dataset::events();
    assert_eq!(events.len(), 2000);
    let ids: HashSet<&str> = events.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids.len(), events.len(), "ids are unique");
    for event in events {
        assert!(EVENT_TYPES.contains(&event.event_type), "{event:?}");
        assert!(CONCLUSIONS.contains(&event.conclusion), "{event:?}");
        assert!(YEARS.contains(&event.year), "{event:?}");
        assert!(
            event.url.starts_with("https://events.example/") && event.url.ends_with(&event.id),
            "{event:?}"
        );
        assert!(event.summary.contains(event.country), "{event:?}");
        assert!(!event.title.is_empty());
    }
    let titles: HashSet<&str> = events.iter().map(|e| e.title.as_str()).collect();
    assert!(titles.len() > 300, "titles vary: {} distinct", titles.len());
}

#[test]
fn the_dataset_is_skewed_so_the_top_countries_are_clear() {
    let buckets = reference_buckets(dataset::events().iter(), "country");
    assert!(buckets.len() >= 25, "{} countries", buckets.len());
    let (first, second, third) = (&buckets[0], &buckets[1], &buckets[2]);
    assert_eq!(first.0, "United States");
    assert_eq!(second.0, "India");
    assert_eq!(third.0, "China");
    assert!(first.1 > second.1 * 5 / 4, "{buckets:?}");
    assert!(second.1 > third.1 * 9 / 8, "{buckets:?}");
    let last = buckets.last().expect("countries");
    assert!(first.1 > last.1 * 20, "{buckets:?}");
    // Every event type and conclusion occurs, and recent years hold more events.
    assert_eq!(
        reference_buckets(dataset::events().iter(), "event_type").len(),
        10
    );
    assert_eq!(
        reference_buckets(dataset::events().iter(), "conclusion").len(),
        6
    );
    let early = dataset::events().iter().filter(|e| e.year < 2005).count();
    let late = dataset::events().iter().filter(|e| e.year >= 2020).count();
    assert!(late > early * 2, "early {early}, late {late}");
}

#[test]
fn the_dataset_is_the_same_in_every_build() {
    // Pinned values: a change to the generator or its seed shows up here (and in the
    // numbers the docs and the reports quote).
    let events = dataset::events();
    let us = events
        .iter()
        .filter(|e| e.country == "United States")
        .count();
    let first = &events[0];
    assert_eq!(
        (us, first.country, first.event_type, first.year),
        (
            PINNED_US_COUNT,
            PINNED_FIRST.0,
            PINNED_FIRST.1,
            PINNED_FIRST.2
        ),
        "first event: {first:?}"
    );
    assert_eq!(dataset::generate(dataset::SEED, 2000), events);
}

const PINNED_US_COUNT: usize = 333;
const PINNED_FIRST: (&str, &str, u16) = ("Argentina", "financial_fraud", 2017);

// ---------------------------------------------------------------------------------------
// Answers against the reference, through graphkit's MCP client.

#[tokio::test]
async fn grouping_all_events_by_country_counts_like_the_reference() {
    let server = connect().await;
    let answer = server.all_events(json!({"group_by": "country"})).await;
    let reference = reference_buckets(dataset::events().iter(), "country");
    assert_eq!(buckets_of(&answer), reference[..10], "top 10 by default");
    let cut: u64 = reference[10..].iter().map(|b| b.1).sum();
    assert_eq!(
        answer["aggregations"]["group_by"]["sum_other_doc_count"],
        cut
    );
    assert_eq!(answer["aggregations"]["group_by"]["field"], "country");
    assert_eq!(total_of(&answer["hits"]), 2000);
    let order = reference_hit_order(dataset::events().iter());
    assert_eq!(hit_ids(&answer["hits"]), order[..10]);
    // `_source` is the whole event.
    let first = &answer["hits"]["hits"][0]["_source"];
    let event = dataset::events()
        .iter()
        .find(|e| e.id == order[0])
        .expect("the hit is an event");
    assert_eq!(
        first,
        &serde_json::to_value(event).expect("events are JSON")
    );
    for key in [
        "title",
        "summary",
        "url",
        "country",
        "event_type",
        "conclusion",
        "year",
    ] {
        assert!(first.get(key).is_some(), "_source has {key}: {first}");
    }
}

#[tokio::test]
async fn equality_filters_and_a_year_range_select_the_same_events_as_the_reference() {
    let server = connect().await;
    let filters = r#"{"country": "France", "year": {"gte": 2015, "lte": 2020}}"#;
    let answer = server
        .all_events(json!({"group_by": "event_type", "filters": filters, "top_n": 100}))
        .await;
    let selected = || {
        dataset::events()
            .iter()
            .filter(|e| e.country == "France" && (2015..=2020).contains(&e.year))
    };
    assert!(selected().count() > 10, "the filter selects enough events");
    assert_eq!(
        buckets_of(&answer),
        reference_buckets(selected(), "event_type")
    );
    assert_eq!(total_of(&answer["hits"]), selected().count() as u64);
    let order = reference_hit_order(selected());
    assert_eq!(hit_ids(&answer["hits"]), order[..order.len().min(100)]);

    // Lists mean "any of", values are case-insensitive, a year alone is one year, and
    // `gt`/`lt` are exclusive.
    let answer = server.all_events(json!({
                "group_by": "country",
                "filters": r#"{"country": ["japan", "INDONESIA"], "event_type": "natural_disaster", "year": {"gt": 2010, "lt": 2020}}"#,
                "top_n": 100
            })).await;
    let selected = || {
        dataset::events().iter().filter(|e| {
            ["Japan", "Indonesia"].contains(&e.country)
                && e.event_type == "natural_disaster"
                && (2011..=2019).contains(&e.year)
        })
    };
    assert_eq!(
        buckets_of(&answer),
        reference_buckets(selected(), "country")
    );
    let answer = server
        .all_events(json!({"group_by": "conclusion", "filters": r#"{"year": 2024}"#, "top_n": 100}))
        .await;
    let in_2024 = || dataset::events().iter().filter(|e| e.year == 2024);
    assert_eq!(
        buckets_of(&answer),
        reference_buckets(in_2024(), "conclusion")
    );
}

#[tokio::test]
async fn a_filter_nothing_matches_gives_no_buckets_and_no_hits() {
    let server = connect().await;
    let answer = server
        .all_events(json!({"group_by": "country", "filters": r#"{"country": "Atlantis"}"#}))
        .await;
    assert_eq!(buckets_of(&answer), []);
    assert_eq!(total_of(&answer["hits"]), 0);
    assert_eq!(hit_ids(&answer["hits"]), Vec::<String>::new());
}

#[tokio::test]
async fn grouping_by_year_gives_string_keys_for_every_year() {
    let server = connect().await;
    let answer = server
        .all_events(json!({"group_by": "year", "top_n": 100}))
        .await;
    let buckets = buckets_of(&answer);
    assert_eq!(buckets, reference_buckets(dataset::events().iter(), "year"));
    assert_eq!(buckets.len(), 25, "2000 to 2024");
    assert_eq!(answer["aggregations"]["group_by"]["sum_other_doc_count"], 0);
}

#[tokio::test]
async fn top_n_cuts_the_buckets_and_the_hits() {
    let server = connect().await;
    let answer = server
        .all_events(json!({"group_by": "country", "top_n": 3}))
        .await;
    let reference = reference_buckets(dataset::events().iter(), "country");
    assert_eq!(buckets_of(&answer), reference[..3]);
    let kept: u64 = reference[..3].iter().map(|b| b.1).sum();
    assert_eq!(
        answer["aggregations"]["group_by"]["sum_other_doc_count"],
        2000 - kept
    );
    assert_eq!(hit_ids(&answer["hits"]).len(), 3);
    assert_eq!(total_of(&answer["hits"]), 2000, "the total is not cut");
}

#[tokio::test]
async fn without_group_by_the_answer_holds_hits_only() {
    let server = connect().await;
    let answer = server
        .all_events(json!({"filters": r#"{"event_type": "cyber_incident"}"#, "top_n": 25}))
        .await;
    assert!(answer.get("aggregations").is_none(), "{answer}");
    let selected = || {
        dataset::events()
            .iter()
            .filter(|e| e.event_type == "cyber_incident")
    };
    assert_eq!(total_of(&answer["hits"]), selected().count() as u64);
    assert_eq!(
        hit_ids(&answer["hits"]),
        reference_hit_order(selected())[..25]
    );
    // No arguments at all: the ten most recent events.
    let answer = server.all_events(json!({})).await;
    assert_eq!(
        hit_ids(&answer["hits"]),
        reference_hit_order(dataset::events().iter())[..10]
    );
}

#[tokio::test]
async fn samples_belong_to_their_bucket_and_meet_the_filters() {
    let server = connect().await;
    let answer = server
        .all_events(json!({
            "group_by": "country",
            "samples_per_bucket": 4,
            "filters": r#"{"year": {"gte": 2018}}"#,
            "top_n": 30
        }))
        .await;
    let buckets = answer["aggregations"]["group_by"]["buckets"]
        .as_array()
        .expect("buckets");
    assert!(buckets.len() > 20, "{} buckets", buckets.len());
    let mut small_bucket_seen = false;
    for bucket in buckets {
        let key = bucket["key"].as_str().expect("key");
        let doc_count = bucket["doc_count"].as_u64().expect("doc_count");
        let samples = &bucket["samples"]["hits"];
        assert_eq!(total_of(samples), doc_count, "{key}");
        let ids = hit_ids(samples);
        assert_eq!(ids.len() as u64, doc_count.min(4), "{key}");
        small_bucket_seen |= doc_count < 4;
        let distinct: HashSet<&String> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len(), "{key}: samples are distinct");
        for hit in samples["hits"].as_array().expect("sample hits") {
            assert_eq!(hit["_source"]["country"], key, "a sample of {key}");
            assert!(hit["_source"]["year"].as_u64().expect("year") >= 2018);
        }
    }
    assert!(
        small_bucket_seen,
        "a bucket smaller than samples_per_bucket is covered"
    );

    // Samples spread over the bucket: the largest bucket's samples span several years.
    let years: HashSet<&Value> = buckets[0]["samples"]["hits"]["hits"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|hit| &hit["_source"]["year"])
        .collect();
    assert!(years.len() >= 3, "{years:?}");

    // Without samples_per_bucket, buckets carry no samples.
    let answer = server.all_events(json!({"group_by": "country"})).await;
    assert!(
        answer["aggregations"]["group_by"]["buckets"][0]
            .get("samples")
            .is_none()
    );
}

#[tokio::test]
async fn analyze_events_by_conclusion_only_sees_that_conclusion() {
    let server = connect().await;
    let answer = server
        .ok(
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({"conclusion": "escalated", "group_by": "event_type", "top_n": 100}),
        )
        .await;
    let escalated = || {
        dataset::events()
            .iter()
            .filter(|e| e.conclusion == "escalated")
    };
    assert_eq!(
        buckets_of(&answer),
        reference_buckets(escalated(), "event_type")
    );
    assert_eq!(total_of(&answer["hits"]), escalated().count() as u64);
    for hit in answer["hits"]["hits"].as_array().expect("hits") {
        assert_eq!(hit["_source"]["conclusion"], "escalated");
    }
    // Combined with filters; grouping by conclusion gives the one bucket.
    let answer = server
        .ok(
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({
                "conclusion": "Under_Investigation",
                "group_by": "conclusion",
                "filters": r#"{"country": "United Kingdom"}"#
            }),
        )
        .await;
    let count = dataset::events()
        .iter()
        .filter(|e| e.conclusion == "under_investigation" && e.country == "United Kingdom")
        .count() as u64;
    assert!(count > 0);
    assert_eq!(
        buckets_of(&answer),
        [("under_investigation".to_owned(), count)]
    );
}

#[tokio::test]
async fn the_tools_advertise_their_arguments() {
    let server = connect().await;
    let tools = server.client.list_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, [ANALYZE_ALL_EVENTS, ANALYZE_EVENTS_BY_CONCLUSION]);
    let all = &tools[0].input_schema;
    for argument in ["group_by", "filters", "top_n", "samples_per_bucket"] {
        assert!(
            all["properties"][argument]["description"].is_string(),
            "{argument}: {all}"
        );
    }
    assert_eq!(
        all["properties"]["filters"]["type"],
        json!(["string", "null"]),
        "filters is advertised as a string"
    );
    assert_eq!(all["properties"]["top_n"]["minimum"], 1, "{all}");
    assert_eq!(all["properties"]["top_n"]["maximum"], 100, "{all}");
    let by_conclusion = &tools[1].input_schema;
    for argument in [
        "conclusion",
        "group_by",
        "filters",
        "top_n",
        "samples_per_bucket",
    ] {
        assert!(
            by_conclusion["properties"][argument]["description"].is_string(),
            "{argument}: {by_conclusion}"
        );
    }
    assert_eq!(
        tools[1].input_schema["required"],
        json!(["conclusion"]),
        "{}",
        tools[1].input_schema
    );
    assert!(
        tools[0].output_schema.is_some(),
        "a typed answer has an output schema"
    );
}

// ---------------------------------------------------------------------------------------
// Malformed arguments are tool errors that say what to send.

#[tokio::test]
async fn malformed_arguments_are_tool_errors_that_say_what_to_send() {
    let server = connect().await;
    let cases: [(&str, Value, &[&str]); 15] = [
        (
            ANALYZE_ALL_EVENTS,
            json!({"group_by": "country", "filters": "{country: France"}),
            &["`filters` is not valid JSON", r#"{\"country\":\"France\""#],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": "[1, 2]"}),
            &["`filters` must hold a JSON object"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": {"country": "France"}}),
            &["`filters` must be a string holding a JSON object"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": r#"{"colour": "red"}"#}),
            &["unknown key `colour`", "`country`", "`year`"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": r#"{"year": {"after": 2010}}"#}),
            &["unknown bound `after`", "`gte`"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": r#"{"year": "recent"}"#}),
            &["`year` must be a year"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"filters": r#"{"country": 7}"#}),
            &["the filter on `country` must be a string or a list of strings"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"group_by": "colour"}),
            &[
                "unknown field `colour`",
                "`country`, `event_type`, `conclusion`, `year`",
            ],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"group_by": "title"}),
            &["cannot group by `title`"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"group_by": "country", "top_n": 0}),
            &["`top_n` is 0; send a whole number from 1 to 100"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"samples_per_bucket": 3}),
            &["`samples_per_bucket` needs `group_by`"],
        ),
        (
            ANALYZE_ALL_EVENTS,
            json!({"group_by": "country", "limit": 5}),
            &["unexpected argument `limit`", "`top_n`"],
        ),
        (
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({"group_by": "country"}),
            &["`conclusion`"],
        ),
        (
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({"conclusion": "resolved", "groupby": "country"}),
            &["unexpected argument `groupby`", "`group_by`"],
        ),
        (
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({"conclusion": "won"}),
            &[
                "`conclusion` is \"won\"",
                "`resolved`",
                "`under_investigation`",
            ],
        ),
    ];
    for (tool, args, expected) in cases {
        let message = server.tool_error(tool, args.clone()).await;
        assert!(message.contains(tool), "{args}: {message}");
        for part in expected {
            assert!(message.contains(part), "{args}: {message:?} lacks {part:?}");
        }
    }
    // The server keeps serving after bad calls.
    let answer = server
        .all_events(json!({"group_by": "country", "top_n": 1}))
        .await;
    assert_eq!(buckets_of(&answer)[0].0, "United States");
}

// ---------------------------------------------------------------------------------------
// The query engine against the reference on generated queries.

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_filtered_grouping_matches_the_reference(
        countries in proptest::sample::subsequence(
            vec!["United States", "India", "Brazil", "Japan", "Kenya", "Iceland"], 0..=3),
        event_type in proptest::option::of(proptest::sample::select(EVENT_TYPES.to_vec())),
        from in 1998i64..2026,
        span in 0i64..30,
        group_by in proptest::sample::select(vec!["country", "event_type", "conclusion", "year"]),
        top_n in 1i64..=40,
    ) {
        let mut filters = serde_json::Map::new();
        if !countries.is_empty() {
            filters.insert("country".into(), json!(countries));
        }
        if let Some(event_type) = event_type {
            filters.insert("event_type".into(), json!(event_type));
        }
        filters.insert("year".into(), json!({"gte": from, "lte": from + span}));
        let query = Query::from_all_events(AnalyzeArgs {
            group_by: Some(group_by.to_owned()),
            filters: Some(Value::String(Value::Object(filters).to_string())),
            top_n: Some(top_n),
            samples_per_bucket: None,
        }).expect("valid arguments");
        let answer = serde_json::to_value(events_server::analyze(dataset::events(), &query))
            .expect("answers are JSON");

        let selected = || dataset::events().iter().filter(|e| {
            (countries.is_empty() || countries.contains(&e.country))
                && event_type.is_none_or(|t| t == e.event_type)
                && (from..=from + span).contains(&i64::from(e.year))
        });
        let reference = reference_buckets(selected(), group_by);
        let top_n = usize::try_from(top_n).expect("positive");
        prop_assert_eq!(buckets_of(&answer), &reference[..reference.len().min(top_n)]);
        let cut: u64 = reference.iter().skip(top_n).map(|b| b.1).sum();
        prop_assert_eq!(&answer["aggregations"]["group_by"]["sum_other_doc_count"], &json!(cut));
        let order = reference_hit_order(selected());
        prop_assert_eq!(total_of(&answer["hits"]), order.len() as u64);
        prop_assert_eq!(hit_ids(&answer["hits"]), &order[..order.len().min(top_n)]);
    }
}

// ---------------------------------------------------------------------------------------
// The built binary, through graphkit's MCP client.

/// What the in-process engine answers: the binary must answer the same.
fn expected(args: AnalyzeArgs) -> Value {
    let query = Query::from_all_events(args).expect("valid arguments");
    serde_json::to_value(events_server::analyze(dataset::events(), &query)).expect("JSON")
}

/// Checks `client`'s answer to the [`country_args`] call against the reference.
async fn answers_the_country_call_like_the_reference(client: &McpClient) {
    let (args, typed) = country_args();
    let result = client
        .call_tool(ANALYZE_ALL_EVENTS, args)
        .await
        .expect("tools/call");
    assert!(!result.is_error, "{}", result.text);
    assert_eq!(result.structured, Some(expected(typed)));
}

fn country_args() -> (Value, AnalyzeArgs) {
    (
        json!({"group_by": "country", "top_n": 5, "samples_per_bucket": 2,
               "filters": r#"{"year": {"gte": 2010}}"#}),
        AnalyzeArgs {
            group_by: Some("country".into()),
            filters: Some(json!(r#"{"year": {"gte": 2010}}"#)),
            top_n: Some(5),
            samples_per_bucket: Some(2),
        },
    )
}

#[tokio::test]
async fn the_binary_serves_the_tools_over_stdio() {
    let client = McpClient::stdio("events", BIN, Vec::<String>::new())
        .await
        .expect("the binary starts and completes the MCP handshake");
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, [ANALYZE_ALL_EVENTS, ANALYZE_EVENTS_BY_CONCLUSION]);
    answers_the_country_call_like_the_reference(&client).await;
    let error = client
        .call_tool(ANALYZE_ALL_EVENTS, json!({"filters": "not json"}))
        .await
        .expect("a tool error is an answer");
    assert!(error.is_error && error.text.contains("`filters` is not valid JSON"));
    client.close().await;
}

#[tokio::test]
async fn the_binary_serves_the_tools_over_streamable_http() {
    use tokio::io::AsyncBufReadExt;

    let mut child = tokio::process::Command::new(BIN)
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = lines
        .next_line()
        .await
        .expect("reads stdout")
        .expect("the binary prints its URL");
    let url = line
        .strip_prefix("serving MCP at ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );

    let client = McpClient::http("events", &url)
        .await
        .expect("graphkit's client connects over HTTP");
    answers_the_country_call_like_the_reference(&client).await;
    let result = client
        .call_tool(
            ANALYZE_EVENTS_BY_CONCLUSION,
            json!({"conclusion": "resolved", "group_by": "conclusion"}),
        )
        .await
        .expect("tools/call");
    let resolved = dataset::events()
        .iter()
        .filter(|e| e.conclusion == "resolved")
        .count();
    let structured = result.structured.expect("structuredContent");
    assert_eq!(
        buckets_of(&structured),
        [("resolved".to_owned(), resolved as u64)]
    );
    client.close().await;
    child.kill().await.expect("the server stops");
}
