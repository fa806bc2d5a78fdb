//! The data sub-agents over MCP: [`Aggregator`], [`Sampler`], [`Scanner`]. Each picks its
//! tools (`tool_name` | `tool_names` | `use_all_enabled`), queries them **in parallel**,
//! and merges the answers (same-key buckets summed).

use std::collections::HashMap;

use async_trait::async_trait;
use graphkit_llm::{CallOptions, ChatModel, Message};
use graphkit_tools::ToolError;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::llm::extract_findings;
use super::{AgentContext, SubAgent, SubAgentFailure, failed};
use crate::mcp_research::prompts::{ANALYST, json_line};
use crate::mcp_research::source::{Hit, ToolAnswer, read_answer};
use crate::mcp_research::state::{
    AggregationResult, Bucket, ResearchPhase, Sample, Source, SubAgentOutput,
};

/// The arguments of the data sub-agents. Besides the tool selector, they are passed to
/// the MCP tool (`filters` as a JSON string; an object is turned into one).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DataArgs {
    /// One tool (the seed's original form).
    #[serde(default)]
    pub tool_name: Option<String>,
    /// Several tools.
    #[serde(default)]
    pub tool_names: Option<Vec<String>>,
    /// Every enabled tool.
    #[serde(default)]
    pub use_all_enabled: Option<bool>,
    /// The field to group by.
    #[serde(default)]
    pub group_by: Option<String>,
    /// Filters (JSON string: equality and year range).
    #[serde(default)]
    pub filters: Option<Value>,
    /// The most buckets (aggregator, sampler) or documents (scanner).
    #[serde(default)]
    pub top_n: Option<u32>,
    /// Samples per bucket (sampler).
    #[serde(default)]
    pub samples_per_bucket: Option<u32>,
}

const SELECTOR_KEYS: [&str; 3] = ["tool_name", "tool_names", "use_all_enabled"];

/// The tools a call names, among the `enabled` ones: `use_all_enabled`, else `tool_names`,
/// else `tool_name`, else every enabled tool. Names that are not enabled are returned
/// apart (the call notes them).
///
/// ```
/// use graphkit_examples::mcp_research::{DataArgs, select_tools};
///
/// let enabled = ["a".to_owned(), "b".to_owned()];
/// let args = DataArgs { tool_names: Some(vec!["b".into(), "zz".into()]), ..DataArgs::default() };
/// assert_eq!(select_tools(&args, &enabled), (vec!["b".to_owned()], vec!["zz".to_owned()]));
/// ```
pub fn select_tools(args: &DataArgs, enabled: &[String]) -> (Vec<String>, Vec<String>) {
    let named: Vec<String> = if args.use_all_enabled == Some(true) {
        enabled.to_vec()
    } else if let Some(names) = args.tool_names.as_ref().filter(|n| !n.is_empty()) {
        names.clone()
    } else if let Some(name) = args.tool_name.as_ref().filter(|n| !n.is_empty()) {
        vec![name.clone()]
    } else {
        enabled.to_vec()
    };
    let mut chosen = Vec::new();
    let mut dropped = Vec::new();
    for name in named {
        if enabled.contains(&name) {
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        } else {
            dropped.push(name);
        }
    }
    (chosen, dropped)
}

/// Merges the buckets of several tools: same keys summed, largest first (then by key),
/// at most `top_n` kept (the rest counted in `other_doc_count`). The result's `tool` is
/// the tools joined by `+`.
///
/// ```
/// use graphkit_examples::mcp_research::{Bucket, merge_buckets};
///
/// let b = |k: &str, n| Bucket { key: k.into(), doc_count: n };
/// let merged = merge_buckets("country", &[
///     ("a".into(), vec![b("Norway", 5), b("Chile", 2)]),
///     ("b".into(), vec![b("Chile", 4)]),
/// ], None);
/// assert_eq!(merged.tool, "a+b");
/// assert_eq!(merged.buckets, vec![b("Chile", 6), b("Norway", 5)]);
/// ```
pub fn merge_buckets(
    field: &str,
    per_tool: &[(String, Vec<Bucket>)],
    top_n: Option<usize>,
) -> AggregationResult {
    let mut sums: HashMap<&str, u64> = HashMap::new();
    for (_, buckets) in per_tool {
        for bucket in buckets {
            *sums.entry(bucket.key.as_str()).or_default() += bucket.doc_count;
        }
    }
    let mut buckets: Vec<Bucket> = sums
        .into_iter()
        .map(|(key, doc_count)| Bucket {
            key: key.to_owned(),
            doc_count,
        })
        .collect();
    buckets.sort_by(|a, b| b.doc_count.cmp(&a.doc_count).then(a.key.cmp(&b.key)));
    let mut other_doc_count = 0;
    if let Some(n) = top_n.filter(|n| *n < buckets.len()) {
        other_doc_count = buckets.drain(n..).map(|b| b.doc_count).sum();
    }
    AggregationResult {
        tool: per_tool
            .iter()
            .map(|(t, _)| t.as_str())
            .collect::<Vec<_>>()
            .join("+"),
        field: field.to_owned(),
        buckets,
        other_doc_count,
        filters: None,
    }
}

/// A parsed call: the tools, the arguments for the MCP tools, the notes about dropped names.
struct Prepared {
    args: DataArgs,
    tools: Vec<String>,
    mcp_args: Value,
    notes: Vec<String>,
}

/// The call's arguments, or why they cannot be used.
fn prepare(arguments: &Value, ctx: &AgentContext) -> Result<Prepared, String> {
    let object = match arguments {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(format!("arguments must be a JSON object, got {other}"));
        }
    };
    let args: DataArgs = serde_json::from_value(Value::Object(object.clone()))
        .map_err(|e| format!("invalid arguments: {e}"))?;
    let (tools, dropped) = select_tools(&args, &ctx.state.enabled_tools);
    let mut notes = Vec::new();
    if !dropped.is_empty() {
        notes.push(format!("ignored tools not enabled: {}", dropped.join(", ")));
    }
    if tools.is_empty() {
        return Err(format!(
            "no enabled tool to query{}; enabled: {}",
            notes.first().map(|n| format!(" ({n})")).unwrap_or_default(),
            ctx.state.enabled_tools.join(", ")
        ));
    }
    let mut mcp_args: Map<String, Value> = object
        .into_iter()
        .filter(|(k, _)| !SELECTOR_KEYS.contains(&k.as_str()))
        .collect();
    if let Some(filters) = mcp_args.get_mut("filters")
        && !filters.is_string()
    {
        *filters = if filters.is_null() {
            Value::String("{}".into())
        } else {
            Value::String(filters.to_string())
        };
    }
    Ok(Prepared {
        args,
        tools,
        mcp_args: Value::Object(mcp_args),
        notes,
    })
}

/// Calls every tool in parallel. An unreachable server fails the call; a tool error or an
/// unreadable answer is that tool's `Err`.
async fn query_tools(
    ctx: &AgentContext,
    tools: &[String],
    arguments: &Value,
) -> Result<Vec<(String, Result<ToolAnswer, String>)>, SubAgentFailure> {
    let calls = tools.iter().map(|tool| async move {
        let answer = match ctx.source.call_tool(tool, arguments.clone()).await {
            Ok(result) if result.is_error => Err(format!(
                "{tool} failed: {}",
                crate::shared::truncate(&result.text, 300)
            )),
            Ok(result) => read_answer(&result).map_err(|e| format!("{tool}: {e}")),
            Err(ToolError::UnknownTool { name, available }) => Err(format!(
                "the MCP server has no tool {name} (it has: {available})"
            )),
            Err(e) => {
                return Err(SubAgentFailure(format!(
                    "the MCP server cannot be reached ({e}); start it again and resume the session"
                )));
            }
        };
        Ok((tool.clone(), answer))
    });
    futures::future::join_all(calls).await.into_iter().collect()
}

impl Prepared {
    /// The tools' answers that worked (all queried in parallel); the failures go to the
    /// notes.
    async fn fetch(
        &mut self,
        ctx: &AgentContext,
    ) -> Result<Vec<(String, ToolAnswer)>, SubAgentFailure> {
        let answers = query_tools(ctx, &self.tools, &self.mcp_args).await?;
        Ok(split_answers(answers, &mut self.notes))
    }

    /// Sets the MCP argument `key`.
    fn set(&mut self, key: &str, value: Value) {
        if let Value::Object(map) = &mut self.mcp_args {
            map.insert(key.into(), value);
        }
    }

    /// Sets the MCP argument `key` unless the call gave it.
    fn set_default(&mut self, key: &str, value: Value) {
        if let Value::Object(map) = &mut self.mcp_args {
            map.entry(key).or_insert(value);
        }
    }

    /// The field to group by (`country` when the call names none), passed on to the tools.
    fn group_by(&mut self) -> String {
        let field = self
            .args
            .group_by
            .clone()
            .unwrap_or_else(|| "country".into());
        self.set("group_by", Value::String(field.clone()));
        field
    }
}

/// The extractor's findings from `documents`, and a note when there are none because the
/// model's reply was unusable.
async fn findings_of(
    ctx: &AgentContext,
    documents: &[(String, String)],
) -> (Vec<crate::mcp_research::state::Finding>, String) {
    match extract_findings(&ctx.model, &ctx.state.input, documents).await {
        Ok(findings) => (findings, String::new()),
        Err(problem) => (Vec::new(), format!("; no findings: {problem}")),
    }
}

/// The answers that worked, and a note listing the failures.
fn split_answers(
    answers: Vec<(String, Result<ToolAnswer, String>)>,
    notes: &mut Vec<String>,
) -> Vec<(String, ToolAnswer)> {
    answers
        .into_iter()
        .filter_map(|(tool, answer)| match answer {
            Ok(answer) => Some((tool, answer)),
            Err(problem) => {
                notes.push(problem);
                None
            }
        })
        .collect()
}

fn with_notes(mut output: SubAgentOutput, notes: &[String]) -> SubAgentOutput {
    if !notes.is_empty() {
        output.note = format!("{} ({})", output.note, notes.join("; "));
    }
    output
}

/// Sources of documents that have a URL.
fn sources_of<'a>(hits: impl IntoIterator<Item = &'a Hit>) -> Vec<Source> {
    hits.into_iter()
        .filter_map(|hit| {
            let url = hit.field("url");
            (!url.is_empty()).then(|| Source {
                title: {
                    let title = hit.field("title");
                    if title.is_empty() {
                        hit.id.clone()
                    } else {
                        title
                    }
                },
                url,
            })
        })
        .collect()
}

/// Aggregator: counts by `group_by` over the selected tools (buckets summed across tools),
/// plus a one-sentence note from the model.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Aggregator;

#[async_trait]
impl SubAgent for Aggregator {
    fn name(&self) -> &'static str {
        "aggregator"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Aggregating
    }

    fn description(&self) -> &'static str {
        "counts events by a field over MCP tools. Arguments: tool_name | tool_names | use_all_enabled, group_by (country, event_type, conclusion, year), filters (JSON string, e.g. \"{\\\"year\\\": {\\\"gte\\\": 2020}}\"), top_n."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let mut call = match prepare(arguments, ctx) {
            Ok(call) => call,
            Err(problem) => return Ok(failed(self.name(), problem)),
        };
        let field = call.group_by();
        let answers = call.fetch(ctx).await?;
        if answers.is_empty() {
            return Ok(failed(self.name(), call.notes.join("; ")));
        }
        let others: u64 = answers.iter().map(|(_, a)| a.other_doc_count).sum();
        let per_tool: Vec<(String, Vec<Bucket>)> = answers
            .into_iter()
            .map(|(tool, answer)| (tool, answer.buckets.into_iter().map(|(b, _)| b).collect()))
            .collect();
        let mut merged = merge_buckets(
            &field,
            &per_tool,
            call.args.top_n.map(|n| n.clamp(1, 100) as usize),
        );
        merged.other_doc_count += others;
        // The filters as an object (a call may give them as a JSON string), empty ones none.
        merged.filters = call
            .args
            .filters
            .clone()
            .map(|f| match f {
                Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
                other => other,
            })
            .filter(|f| !f.is_null() && f.as_object().is_none_or(|o| !o.is_empty()));
        let note = aggregation_note(&*ctx.model, &ctx.state.input, &merged).await;
        let output = SubAgentOutput {
            agent: self.name().into(),
            note,
            aggregations: vec![merged],
            ..SubAgentOutput::default()
        };
        Ok(with_notes(output, &call.notes))
    }
}

/// The model's one-sentence reading of an aggregation (the counts themselves when the
/// model fails).
async fn aggregation_note(
    model: &dyn ChatModel,
    query: &str,
    aggregation: &AggregationResult,
) -> String {
    let counted = format!(
        "{} buckets of {} over {} events from {}",
        aggregation.buckets.len(),
        aggregation.field,
        aggregation.total(),
        aggregation.tool
    );
    let request = [
        Message::system(ANALYST),
        Message::user(format!(
            "Query: {query}\nIn one sentence, what does this aggregation show?\nAGGREGATION: {}",
            json_line(&crate::mcp_research::prompts::aggregations_digest(
                std::slice::from_ref(aggregation)
            ))
        )),
    ];
    let options = CallOptions::new().temperature(0.0).max_tokens(120);
    match model
        .invoke_request(graphkit_llm::ChatRequest::new(request.to_vec()).with_options(options))
        .await
    {
        Ok(reply) if !reply.content.trim().is_empty() => format!(
            "{counted}: {}",
            crate::shared::truncate(reply.content.trim(), 240)
        ),
        _ => counted,
    }
}

/// Sampler: representative documents per bucket of `group_by` (samples under
/// `aggregations.group_by.buckets[].samples.hits.hits[]`, else top-level hits whose
/// `_source[group_by]` is the stratum); then the extractor's reading of them into findings.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sampler;

#[async_trait]
impl SubAgent for Sampler {
    fn name(&self) -> &'static str {
        "sampler"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Sampling
    }

    fn description(&self) -> &'static str {
        "fetches representative documents per bucket and extracts findings from them. Arguments: tool_name | tool_names | use_all_enabled, group_by, samples_per_bucket (1-10), top_n (buckets), filters."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let mut call = match prepare(arguments, ctx) {
            Ok(call) => call,
            Err(problem) => return Ok(failed(self.name(), problem)),
        };
        let field = call.group_by();
        let per_bucket = call.args.samples_per_bucket.unwrap_or(2).clamp(1, 10);
        call.set("samples_per_bucket", Value::from(per_bucket));
        call.set_default("top_n", Value::from(5));
        let answers = call.fetch(ctx).await?;
        if answers.is_empty() {
            return Ok(failed(self.name(), call.notes.join("; ")));
        }
        let mut samples: Vec<(Sample, Hit)> = Vec::new();
        for (tool, answer) in &answers {
            let mut from_buckets: Vec<(String, &Hit)> = answer
                .buckets
                .iter()
                .flat_map(|(bucket, hits)| hits.iter().map(move |h| (bucket.key.clone(), h)))
                .collect();
            if from_buckets.is_empty() {
                from_buckets = answer.hits.iter().map(|h| (h.field(&field), h)).collect();
            }
            for (stratum, hit) in from_buckets {
                samples.push((
                    Sample {
                        doc_id: hit.id.clone(),
                        content: hit.content(),
                        stratum,
                        tool: tool.clone(),
                    },
                    hit.clone(),
                ));
            }
        }
        let documents: Vec<(String, String)> = samples
            .iter()
            .take(12)
            .map(|(s, _)| (s.doc_id.clone(), format!("[{}] {}", s.stratum, s.content)))
            .collect();
        let (findings, extract_note) = findings_of(ctx, &documents).await;
        let output = SubAgentOutput {
            agent: self.name().into(),
            note: format!(
                "{} samples across {} strata of {field}, {} findings{extract_note}",
                samples.len(),
                samples
                    .iter()
                    .map(|(s, _)| s.stratum.as_str())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len(),
                findings.len()
            ),
            sources: sources_of(samples.iter().map(|(_, h)| h)),
            docs_processed: u32::try_from(samples.len()).unwrap_or(u32::MAX),
            samples: samples.into_iter().map(|(s, _)| s).collect(),
            findings,
            ..SubAgentOutput::default()
        };
        Ok(with_notes(output, &call.notes))
    }
}

/// Scanner: the documents matching `filters` (up to `top_n`), read into findings.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Scanner;

#[async_trait]
impl SubAgent for Scanner {
    fn name(&self) -> &'static str {
        "scanner"
    }

    fn phase(&self) -> ResearchPhase {
        ResearchPhase::Scanning
    }

    fn description(&self) -> &'static str {
        "reads the documents matching filters and extracts findings. Arguments: tool_name | tool_names | use_all_enabled, filters (JSON string), top_n (documents, default 10)."
    }

    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure> {
        let mut call = match prepare(arguments, ctx) {
            Ok(call) => call,
            Err(problem) => return Ok(failed(self.name(), problem)),
        };
        let top_n = call.args.top_n.unwrap_or(10).clamp(1, 50);
        call.set("top_n", Value::from(top_n));
        let answers = call.fetch(ctx).await?;
        if answers.is_empty() {
            return Ok(failed(self.name(), call.notes.join("; ")));
        }
        let mut seen = std::collections::HashSet::new();
        let hits: Vec<&Hit> = answers
            .iter()
            .flat_map(|(_, a)| a.hits.iter())
            .filter(|h| seen.insert(h.id.clone()))
            .take(top_n as usize)
            .collect();
        let documents: Vec<(String, String)> =
            hits.iter().map(|h| (h.id.clone(), h.content())).collect();
        let (findings, extract_note) = findings_of(ctx, &documents).await;
        let output = SubAgentOutput {
            agent: self.name().into(),
            note: format!(
                "{} documents scanned, {} findings{extract_note}",
                hits.len(),
                findings.len()
            ),
            sources: sources_of(hits.iter().copied()),
            docs_processed: u32::try_from(hits.len()).unwrap_or(u32::MAX),
            findings,
            ..SubAgentOutput::default()
        };
        Ok(with_notes(output, &call.notes))
    }
}
