//! The project's own MCP server over the [synthetic events dataset](super::dataset): two
//! tools that count, group and sample events, answering in the Elasticsearch-like shape the
//! research agent reads (seed 004's "MCP Protocol Agreement").
//!
//! Tools ([`ANALYZE_ALL_EVENTS`], [`ANALYZE_EVENTS_BY_CONCLUSION`]) take:
//!
//! | argument | type | default | meaning |
//! |---|---|---|---|
//! | `conclusion` | string | — | only `analyze_events_by_conclusion`, required: one of [`CONCLUSIONS`](super::dataset::CONCLUSIONS) |
//! | `group_by` | string | none | `country`, `event_type`, `conclusion` or `year` |
//! | `filters` | string (JSON object) | none | e.g. `{"country":"France","year":{"gte":2015,"lte":2020}}` |
//! | `top_n` | integer 1-100 | 10 | buckets kept, and hits returned |
//! | `samples_per_bucket` | integer 0-20 | 0 | events returned inside each bucket (needs `group_by`) |
//!
//! The answer (`structuredContent`, and the same JSON as text):
//!
//! ```json
//! {
//!   "aggregations": {"group_by": {
//!     "field": "country",
//!     "buckets": [{"key": "United States", "doc_count": 333,
//!                  "samples": {"hits": {"total": {"value": 333, "relation": "eq"},
//!                                       "hits": [{"_id": "evt-0268", "_source": {...}}]}}}],
//!     "sum_other_doc_count": 517}},
//!   "hits": {"total": {"value": 2000, "relation": "eq"},
//!            "hits": [{"_id": "evt-0014", "_source": {"id": "evt-0014", "country": ...}}]}
//! }
//! ```
//!
//! `aggregations` is there only with `group_by`. Buckets are sorted by `doc_count`
//! (largest first), then by `key`; keys are strings (years too: `"2019"`). `hits.hits` are
//! the first `top_n` matching events, most recent year first, then by id. Samples are spread
//! evenly over a bucket's events in that same order. Bad arguments (an unknown field, filters
//! that are not a JSON object, `top_n` out of range, ...) are MCP tool errors (`isError`)
//! whose message says what to send.
//!
//! A call's work is bounded: `filters` is at most [`MAX_FILTERS_BYTES`] of JSON, a list in
//! it holds at most [`MAX_FILTER_VALUES`] values of at most [`MAX_FILTER_VALUE_CHARS`]
//! characters each, so one call compares each of the 2,000 events with at most
//! 5 × [`MAX_FILTER_VALUES`] short values. Over HTTP the server has the session and request
//! size limits of [`McpServer`] (listed in `docs/security.md`).
//!
//! Start it with the `graphkit-events-mcp` binary (stdio by default, `--http ADDR` for
//! streamable HTTP), or in-process with [`spawn_http`] / [`serve_stdio`].

use std::collections::HashMap;
use std::net::SocketAddr;

use graphkit_tools::ToolError;
use graphkit_tools::mcp::McpServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::oneshot;

use super::dataset::{self, CONCLUSIONS, Event, Field};

/// The name the server introduces itself with.
pub(crate) const SERVER_NAME: &str = "graphkit-events";

/// The tool over every event.
pub const ANALYZE_ALL_EVENTS: &str = "analyze_all_events";

/// The tool over the events of one conclusion (its extra, required `conclusion` argument).
pub const ANALYZE_EVENTS_BY_CONCLUSION: &str = "analyze_events_by_conclusion";

/// `top_n` when the call gives none.
pub(crate) const DEFAULT_TOP_N: usize = 10;

/// The largest `top_n`.
pub(crate) const MAX_TOP_N: usize = 100;

/// The largest `samples_per_bucket`.
pub(crate) const MAX_SAMPLES_PER_BUCKET: usize = 20;

/// The most bytes of JSON `filters` may hold.
pub const MAX_FILTERS_BYTES: usize = 16 * 1024;

/// The most values one filter's list may hold (`{"country": [...]}`, `{"year": [...]}`).
pub const MAX_FILTER_VALUES: usize = 100;

/// The most characters of one text filter value.
pub const MAX_FILTER_VALUE_CHARS: usize = 200;

/// An example of `filters`, quoted in error messages.
const FILTERS_EXAMPLE: &str = r#"{"country":"France","year":{"gte":2015,"lte":2020}}"#;

/// Arguments of `analyze_all_events`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// The field to group events by: `country`, `event_type`, `conclusion` or `year`.
    /// Without it the answer holds hits only.
    #[serde(default)]
    pub group_by: Option<String>,
    /// Filters as a JSON object encoded in a string. Keys: `id`, `country`, `event_type`,
    /// `conclusion` (a value, or a list of accepted values; case-insensitive) and `year` (a
    /// number, a list of numbers, or a range such as {"gte":2015,"lte":2020}; `gt` and `lt`
    /// too). Example: "{\"country\":\"France\",\"year\":{\"gte\":2015,\"lte\":2020}}".
    #[serde(default)]
    #[schemars(with = "Option<String>")]
    pub filters: Option<Value>,
    /// How many buckets to keep (largest first) and how many hits to return, 1 to 100.
    /// Default 10.
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub top_n: Option<i64>,
    /// How many example events to return inside each bucket, 0 to 20 (needs `group_by`).
    /// Default 0.
    #[serde(default)]
    #[schemars(range(min = 0, max = 20))]
    pub samples_per_bucket: Option<i64>,
}

/// Arguments of `analyze_events_by_conclusion`: `conclusion`, plus the arguments of
/// `analyze_all_events`.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
pub(crate) struct ByConclusionArgs {
    /// Only events with this conclusion: `resolved`, `contained`, `ongoing`, `escalated`,
    /// `inconclusive` or `under_investigation`.
    pub conclusion: String,
    /// `group_by`, `filters`, `top_n` and `samples_per_bucket`, as for
    /// `analyze_all_events`. (Unknown arguments are still refused: the server checks every
    /// call against the advertised properties.)
    #[serde(flatten)]
    pub analyze: AnalyzeArgs,
}

/// A checked query: what [`analyze`] computes.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The field to group by, if any.
    pub group_by: Option<Field>,
    /// Every condition an event must meet.
    pub filters: Vec<Condition>,
    /// Buckets kept and hits returned.
    pub top_n: usize,
    /// Events returned inside each bucket.
    pub samples_per_bucket: usize,
}

/// One filter condition.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// A text field equals one of the values (ASCII case-insensitive).
    Equals {
        /// The field.
        field: Field,
        /// The accepted values.
        any_of: Vec<String>,
    },
    /// The year is one of these.
    YearIn(Vec<i64>),
    /// The year lies in `min..=max` (an open end is `None`).
    YearRange {
        /// The smallest accepted year.
        min: Option<i64>,
        /// The largest accepted year.
        max: Option<i64>,
    },
}

impl Condition {
    /// Whether `event` meets the condition.
    pub fn matches(&self, event: &Event) -> bool {
        match self {
            Condition::Equals { field, any_of } => event
                .text(*field)
                .is_some_and(|value| any_of.iter().any(|v| v.eq_ignore_ascii_case(value))),
            Condition::YearIn(years) => years.contains(&i64::from(event.year)),
            Condition::YearRange { min, max } => {
                let year = i64::from(event.year);
                min.is_none_or(|min| year >= min) && max.is_none_or(|max| year <= max)
            }
        }
    }
}

impl Query {
    /// Checks the arguments of `analyze_all_events`.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] naming the argument and what to send instead.
    pub fn from_all_events(args: AnalyzeArgs) -> Result<Query, ToolError> {
        let invalid = |message: String| invalid(ANALYZE_ALL_EVENTS, message);
        Query::build(args).map_err(invalid)
    }

    /// Checks the arguments of `analyze_events_by_conclusion`.
    ///
    /// # Errors
    /// As [`from_all_events`](Self::from_all_events), and when `conclusion` is not one of
    /// [`CONCLUSIONS`].
    pub(crate) fn from_by_conclusion(args: ByConclusionArgs) -> Result<Query, ToolError> {
        let invalid = |message: String| invalid(ANALYZE_EVENTS_BY_CONCLUSION, message);
        let conclusion = args.conclusion.trim();
        let Some(conclusion) = CONCLUSIONS
            .into_iter()
            .find(|known| known.eq_ignore_ascii_case(conclusion))
        else {
            return Err(invalid(format!(
                "`conclusion` is {:?}; send one of {}",
                args.conclusion,
                quoted(&CONCLUSIONS)
            )));
        };
        let mut query = Query::build(args.analyze).map_err(invalid)?;
        query.filters.insert(
            0,
            Condition::Equals {
                field: Field::Conclusion,
                any_of: vec![conclusion.to_owned()],
            },
        );
        Ok(query)
    }

    fn build(args: AnalyzeArgs) -> Result<Query, String> {
        let AnalyzeArgs {
            group_by,
            filters,
            top_n,
            samples_per_bucket,
        } = args;
        let group_by = match group_by.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(name) => Some(parse_group_by(name)?),
        };
        let filters = match filters {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(text)) => parse_filters(&text)?,
            Some(other) => {
                return Err(format!(
                    "`filters` must be a string holding a JSON object, got the JSON value {other}; send it encoded as a string, for example {:?}",
                    FILTERS_EXAMPLE
                ));
            }
        };
        let top_n = in_range("top_n", top_n, DEFAULT_TOP_N, 1, MAX_TOP_N)?;
        let samples_per_bucket = in_range(
            "samples_per_bucket",
            samples_per_bucket,
            0,
            0,
            MAX_SAMPLES_PER_BUCKET,
        )?;
        if samples_per_bucket > 0 && group_by.is_none() {
            return Err(
                "`samples_per_bucket` needs `group_by`: name the field whose buckets the samples come from (e.g. \"group_by\": \"country\"), or leave `samples_per_bucket` out for hits only"
                    .into(),
            );
        }
        Ok(Query {
            group_by,
            filters,
            top_n,
            samples_per_bucket,
        })
    }

    /// Whether `event` meets every filter.
    pub fn matches(&self, event: &Event) -> bool {
        self.filters
            .iter()
            .all(|condition| condition.matches(event))
    }
}

fn invalid(tool: &str, message: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message,
    }
}

fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("`{v}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn groupable_names() -> String {
    quoted(&Field::GROUPABLE.map(Field::name))
}

fn parse_group_by(name: &str) -> Result<Field, String> {
    match Field::from_name(&name.to_ascii_lowercase()) {
        Some(field) if Field::GROUPABLE.contains(&field) => Ok(field),
        Some(field) => Err(format!(
            "cannot group by `{field}` (every event has its own value); group by one of {}",
            groupable_names()
        )),
        None => Err(format!(
            "`group_by` names an unknown field `{name}`; group by one of {}",
            groupable_names()
        )),
    }
}

/// The filter keys: fields with a short value.
const FILTER_FIELDS: [Field; 5] = [
    Field::Id,
    Field::Country,
    Field::EventType,
    Field::Conclusion,
    Field::Year,
];

fn parse_filters(text: &str) -> Result<Vec<Condition>, String> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    if text.len() > MAX_FILTERS_BYTES {
        return Err(format!(
            "`filters` is {} bytes long; send at most {MAX_FILTERS_BYTES} (a few conditions, each with at most {MAX_FILTER_VALUES} values)",
            text.len()
        ));
    }
    let object: Map<String, Value> = match serde_json::from_str(text) {
        Ok(Value::Object(object)) => object,
        Ok(other) => {
            return Err(format!(
                "`filters` must hold a JSON object, got {other}; send for example {FILTERS_EXAMPLE:?}"
            ));
        }
        Err(err) => {
            return Err(format!(
                "`filters` is not valid JSON ({err}); send a JSON object as a string, for example {FILTERS_EXAMPLE:?}"
            ));
        }
    };
    let filter_names = quoted(&FILTER_FIELDS.map(Field::name));
    object
        .into_iter()
        .map(|(key, value)| {
            let field = Field::from_name(&key)
                .filter(|field| FILTER_FIELDS.contains(field))
                .ok_or_else(|| {
                    format!("`filters` has an unknown key `{key}`; filter on {filter_names}")
                })?;
            if field == Field::Year {
                parse_year_condition(value)
            } else {
                parse_text_condition(field, value)
            }
        })
        .collect()
}

fn parse_text_condition(field: Field, value: Value) -> Result<Condition, String> {
    let wrong = |got: &Value| {
        format!(
            "the filter on `{field}` must be a string or a list of strings, got {got}; for example {{\"{field}\": \"value\"}}"
        )
    };
    let any_of = match value {
        Value::String(text) => vec![text],
        Value::Array(values) if values.len() > MAX_FILTER_VALUES => {
            return Err(too_many_values(&field.to_string(), values.len()));
        }
        Value::Array(values) if !values.is_empty() => values
            .into_iter()
            .map(|value| match value {
                Value::String(text) => Ok(text),
                other => Err(wrong(&other)),
            })
            .collect::<Result<_, _>>()?,
        Value::Array(_) => {
            return Err(format!(
                "the filter on `{field}` is an empty list, which no event matches; give at least one value or leave the key out"
            ));
        }
        other => return Err(wrong(&other)),
    };
    if let Some(long) = any_of
        .iter()
        .find(|value| value.chars().count() > MAX_FILTER_VALUE_CHARS)
    {
        return Err(format!(
            "a value of the filter on `{field}` is {} characters long; send values of at most {MAX_FILTER_VALUE_CHARS}",
            long.chars().count()
        ));
    }
    Ok(Condition::Equals {
        field,
        any_of: any_of.into_iter().map(|v| v.trim().to_owned()).collect(),
    })
}

fn parse_year_condition(value: Value) -> Result<Condition, String> {
    const HOW: &str = r#"a year (2019), a list of years ([2019, 2020]) or a range ({"gte": 2015, "lte": 2020}; also "gt" and "lt")"#;
    match value {
        Value::Array(values) if values.len() > MAX_FILTER_VALUES => {
            Err(too_many_values("year", values.len()))
        }
        Value::Array(values) if !values.is_empty() => values
            .iter()
            .map(|value| {
                year_number(value).ok_or_else(|| format!("`year` must be {HOW}, got {value}"))
            })
            .collect::<Result<_, _>>()
            .map(Condition::YearIn),
        Value::Object(bounds) => {
            let (mut min, mut max) = (None, None);
            for (op, bound) in &bounds {
                let year = year_number(bound).ok_or_else(|| {
                    format!("the `year` bound `{op}` must be a whole number, got {bound}")
                })?;
                match op.as_str() {
                    "gte" => min = Some(min.map_or(year, |m: i64| m.max(year))),
                    "gt" => min = Some(min.map_or(year + 1, |m: i64| m.max(year + 1))),
                    "lte" => max = Some(max.map_or(year, |m: i64| m.min(year))),
                    "lt" => max = Some(max.map_or(year - 1, |m: i64| m.min(year - 1))),
                    _ => {
                        return Err(format!(
                            "the `year` range has an unknown bound `{op}`; use `gte`, `gt`, `lte` and `lt`, e.g. {{\"gte\": 2015, \"lte\": 2020}}"
                        ));
                    }
                }
            }
            if bounds.is_empty() {
                return Err(format!("the `year` range is empty; `year` must be {HOW}"));
            }
            Ok(Condition::YearRange { min, max })
        }
        other => year_number(&other)
            .map(|year| Condition::YearIn(vec![year]))
            .ok_or_else(|| format!("`year` must be {HOW}, got {other}")),
    }
}

/// The refusal of a filter list of `count` values.
fn too_many_values(field: &str, count: usize) -> String {
    format!(
        "the filter on `{field}` lists {count} values; send at most {MAX_FILTER_VALUES} (for years, a range such as {{\"gte\": 2015, \"lte\": 2020}} covers any span)"
    )
}

/// A whole number, or a string holding one (`"2019"`, as models sometimes send).
fn year_number(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

fn in_range(
    name: &str,
    value: Option<i64>,
    default: usize,
    min: usize,
    max: usize,
) -> Result<usize, String> {
    let Some(value) = value else {
        return Ok(default);
    };
    usize::try_from(value)
        .ok()
        .filter(|value| (min..=max).contains(value))
        .ok_or_else(|| format!("`{name}` is {value}; send a whole number from {min} to {max}"))
}

/// The answer of both tools (see the [module docs](self) for the JSON).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Analysis<'a> {
    /// The buckets, when the call named `group_by`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregations: Option<Aggregations<'a>>,
    /// The matching events: their count and the first `top_n`.
    pub hits: Hits<'a>,
}

/// `aggregations`: one terms aggregation named `group_by`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Aggregations<'a> {
    /// The buckets of the field the call grouped by.
    pub group_by: Terms<'a>,
}

/// The buckets of one field.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Terms<'a> {
    /// The field grouped by.
    pub field: &'static str,
    /// Largest `doc_count` first, then by key; at most `top_n`.
    pub buckets: Vec<Bucket<'a>>,
    /// Matching events in the buckets cut by `top_n`.
    pub sum_other_doc_count: usize,
}

/// One value of the grouped field and how many matching events have it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Bucket<'a> {
    /// The value (a string; years too).
    pub key: String,
    /// How many matching events have it.
    pub doc_count: usize,
    /// Example events of this bucket, when `samples_per_bucket` > 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples<'a>>,
}

/// A bucket's example events (Elasticsearch `top_hits` style).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Samples<'a> {
    /// The bucket's events (total) and the samples (hits).
    pub hits: Hits<'a>,
}

/// Matching events: how many, and some of them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Hits<'a> {
    /// How many events match.
    pub total: Total,
    /// Some of them, most recent year first, then by id.
    pub hits: Vec<Hit<'a>>,
}

/// A count, Elasticsearch style (`relation` is always `eq`: counts are exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Total {
    /// The count.
    pub value: usize,
    /// `eq`.
    pub relation: &'static str,
}

impl Total {
    fn exact(value: usize) -> Total {
        Total {
            value,
            relation: "eq",
        }
    }
}

/// One event in an answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Hit<'a> {
    /// The event's id.
    #[serde(rename = "_id")]
    pub id: &'a str,
    /// The whole event.
    #[serde(rename = "_source")]
    pub source: &'a Event,
}

impl<'a> Hit<'a> {
    fn of(event: &'a Event) -> Hit<'a> {
        Hit {
            id: &event.id,
            source: event,
        }
    }
}

/// Runs `query` over `events`: one pass to filter (in answer order: most recent year
/// first, then id), one to count buckets.
pub fn analyze<'a>(events: &'a [Event], query: &Query) -> Analysis<'a> {
    let mut matching: Vec<&Event> = events.iter().filter(|e| query.matches(e)).collect();
    matching.sort_by(|a, b| b.year.cmp(&a.year).then_with(|| a.id.cmp(&b.id)));
    let aggregations = query.group_by.map(|field| Aggregations {
        group_by: terms(&matching, field, query),
    });
    Analysis {
        aggregations,
        hits: Hits {
            total: Total::exact(matching.len()),
            hits: matching
                .iter()
                .take(query.top_n)
                .map(|e| Hit::of(e))
                .collect(),
        },
    }
}

/// A bucket key, without allocating per event.
#[derive(PartialEq, Eq, Hash)]
enum Key<'a> {
    Text(&'a str),
    Year(u16),
}

fn terms<'a>(matching: &[&'a Event], field: Field, query: &Query) -> Terms<'a> {
    let mut members: HashMap<Key<'a>, Vec<&'a Event>> = HashMap::new();
    for &event in matching {
        let key = match event.text(field) {
            Some(text) => Key::Text(text),
            None => Key::Year(event.year),
        };
        members.entry(key).or_default().push(event);
    }
    let mut buckets: Vec<(String, Vec<&'a Event>)> = members
        .into_iter()
        .map(|(key, events)| {
            let key = match key {
                Key::Text(text) => text.to_owned(),
                Key::Year(year) => year.to_string(),
            };
            (key, events)
        })
        .collect();
    buckets.sort_by(|(a_key, a), (b_key, b)| b.len().cmp(&a.len()).then_with(|| a_key.cmp(b_key)));
    let sum_other_doc_count = buckets
        .iter()
        .skip(query.top_n)
        .map(|(_, events)| events.len())
        .sum();
    buckets.truncate(query.top_n);
    Terms {
        field: field.name(),
        buckets: buckets
            .into_iter()
            .map(|(key, events)| Bucket {
                key,
                doc_count: events.len(),
                samples: (query.samples_per_bucket > 0).then(|| Samples {
                    hits: Hits {
                        total: Total::exact(events.len()),
                        hits: spread(&events, query.samples_per_bucket)
                            .map(Hit::of)
                            .collect(),
                    },
                }),
            })
            .collect(),
        sum_other_doc_count,
    }
}

/// `k` of `events`, evenly spaced (all of them when there are at most `k`).
fn spread<'e, 'a>(events: &'e [&'a Event], k: usize) -> impl Iterator<Item = &'a Event> + 'e {
    let n = events.len();
    let k = k.min(n);
    (0..k).map(move |i| events[i * n / k])
}

/// The events server: both tools over [`dataset::events`], not yet serving. Serve it with
/// `serve_stdio`, `serve_io` or `bind_http` (graphkit-tools' [`McpServer`]).
pub fn server() -> McpServer {
    McpServer::new(SERVER_NAME, env!("CARGO_PKG_VERSION"))
        .instructions(
            "Tools over a synthetic dataset of 2,000 world events (2000-2024). Use group_by to count events per country, event_type, conclusion or year; filters (a JSON object in a string) to narrow them; samples_per_bucket to read example events of each bucket; no group_by to list matching events.",
        )
        .tool(
            ANALYZE_ALL_EVENTS,
            "Counts and lists events of the whole dataset. With group_by: buckets {key, doc_count} under aggregations.group_by.buckets (largest first, at most top_n, with samples_per_bucket example events each); always: hits.total and the first top_n matching events under hits.hits [{_id, _source}].",
            |args: AnalyzeArgs| async move {
                let query = Query::from_all_events(args)?;
                Ok(analyze(dataset::events(), &query))
            },
        )
        .tool(
            ANALYZE_EVENTS_BY_CONCLUSION,
            "Like analyze_all_events, over the events with one conclusion (required argument `conclusion`: resolved, contained, ongoing, escalated, inconclusive or under_investigation).",
            |args: ByConclusionArgs| async move {
                let query = Query::from_by_conclusion(args)?;
                Ok(analyze(dataset::events(), &query))
            },
        )
}

/// Serves the events server on this process's stdin and stdout until the client closes
/// stdin. Log to stderr only meanwhile.
///
/// # Errors
/// [`ToolError::Mcp`] when the MCP handshake fails.
pub async fn serve_stdio() -> Result<(), ToolError> {
    server().serve_stdio().await
}

/// An events server running in-process over streamable HTTP; made by [`spawn_http`].
/// Dropping it (or [`shutdown`](Self::shutdown)) stops the server.
#[derive(Debug)]
pub struct EventsHttpServer {
    url: String,
    local_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), ToolError>>>,
}

impl EventsHttpServer {
    /// The MCP endpoint, e.g. `http://127.0.0.1:40123/mcp`: give it to
    /// `McpClient::http`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops the server and waits until its listener and sessions are closed.
    ///
    /// # Errors
    /// [`ToolError::Failed`] when the server task panicked.
    pub async fn shutdown(mut self) -> Result<(), ToolError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await.map_err(|e| {
                ToolError::failed(format!("the events MCP server task failed: {e}"))
            })?,
            None => Ok(()),
        }
    }
}

impl Drop for EventsHttpServer {
    fn drop(&mut self) {
        // Dropping the sender ends `run_until`; the task then closes its sessions.
        self.stop.take();
    }
}

/// Starts the events server on `addr` over streamable HTTP, on the current tokio runtime.
/// Port 0 picks a free port: read [`EventsHttpServer::url`].
///
/// ```no_run
/// # async fn run() -> Result<(), graphkit_tools::ToolError> {
/// use graphkit_examples::mcp_research::events_server;
/// use graphkit_tools::mcp::McpClient;
///
/// let server = events_server::spawn_http("127.0.0.1:0").await?;
/// let client = McpClient::http("events", server.url()).await?;
/// let answer = client
///     .call_tool("analyze_all_events", serde_json::json!({"group_by": "country", "top_n": 3}))
///     .await?;
/// assert!(!answer.is_error);
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`ToolError::Mcp`] when `addr` cannot be bound.
pub async fn spawn_http(
    addr: impl tokio::net::ToSocketAddrs,
) -> Result<EventsHttpServer, ToolError> {
    let bound = server().bind_http(addr).await?;
    let url = bound.url();
    let local_addr = bound.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(bound.run_until(async move {
        let _ = stopped.await;
    }));
    Ok(EventsHttpServer {
        url,
        local_addr,
        stop: Some(stop),
        task: Some(task),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn year_filter(text: &str) -> Result<Vec<Condition>, String> {
        parse_filters(text)
    }

    #[test]
    fn year_bounds_become_an_inclusive_range() {
        assert_eq!(
            year_filter(r#"{"year": {"gt": 2010, "lt": 2015}}"#),
            Ok(vec![Condition::YearRange {
                min: Some(2011),
                max: Some(2014)
            }])
        );
        assert_eq!(
            year_filter(r#"{"year": "2019"}"#),
            Ok(vec![Condition::YearIn(vec![2019])])
        );
    }

    #[test]
    fn filter_lists_and_values_over_their_caps_are_refused_with_the_cap() {
        let countries = |n: usize| serde_json::json!({ "country": vec!["France"; n] }).to_string();
        assert!(year_filter(&countries(MAX_FILTER_VALUES)).is_ok());
        let err = year_filter(&countries(MAX_FILTER_VALUES + 1)).unwrap_err();
        assert!(err.contains("lists 101 values; send at most 100"), "{err}");
        let years = serde_json::json!({ "year": vec![2019; MAX_FILTER_VALUES + 1] }).to_string();
        let err = year_filter(&years).unwrap_err();
        assert!(err.contains("`year` lists 101 values"), "{err}");
        let long = serde_json::json!({ "id": "e".repeat(MAX_FILTER_VALUE_CHARS + 1) }).to_string();
        let err = year_filter(&long).unwrap_err();
        assert!(err.contains("at most 200"), "{err}");
    }

    #[test]
    fn a_million_filter_values_are_refused_before_they_are_parsed() {
        // The probe of issue 27: this list cost 69 s of CPU in one call.
        let huge = serde_json::json!({ "country": vec!["x"; 1_000_000] }).to_string();
        let err = year_filter(&huge).unwrap_err();
        assert!(
            err.contains(&format!("send at most {MAX_FILTERS_BYTES}")),
            "{err}"
        );
        let query = Query::from_all_events(AnalyzeArgs {
            filters: Some(Value::String(huge)),
            ..AnalyzeArgs::default()
        });
        assert!(matches!(query, Err(ToolError::InvalidArguments { .. })));
    }

    #[test]
    fn spread_takes_evenly_spaced_events_and_never_more_than_there_are() {
        let events = dataset::generate(1, 10);
        let refs: Vec<&Event> = events.iter().collect();
        let picked: Vec<&str> = spread(&refs, 3).map(|e| e.id.as_str()).collect();
        assert_eq!(picked, ["evt-0001", "evt-0004", "evt-0007"]);
        assert_eq!(spread(&refs, 50).count(), 10);
        assert_eq!(spread(&refs[..0], 5).count(), 0);
    }
}
