//! The six nodes and the routing decision (the seed's `nodes/` and `edges/routing.py`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use graphkit::error::BoxError;
use graphkit::nodes::Goto;
use graphkit::{Input, NodeContext, RunConfig, RunContext, SendTo};
use graphkit_llm::{ChatModel, LlmError, Message, PriceTable};
use graphkit_tools::prebuilt::search::SearchBackend;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::prompts;
use super::report;
use super::report_file::{DueDiligenceReportFile, UsageTotals};
use super::schemas::{
    ConnectionMappingOutput, DueDiligenceReport, Entity, EntityMergeOutput, GraphNode,
    ReflectionOutput, SearchQueriesList, Source, WebSearchOutput, normalize,
};
use super::state::{
    DueDiligenceState as S, DueDiligenceStateUpdate as Update, RiskIndicators, SearchIterationData,
    SearchMemoryEntry,
};
use super::termination::TerminationReason;
use super::trail::{AuditTrail, file_safe};
use crate::shared::time::{now_ms, rfc3339};

/// Node names.
pub(crate) const INITIALIZE: &str = "initialize";
/// See [`INITIALIZE`].
pub(crate) const GENERATE_QUERIES: &str = "generate_queries";
/// See [`INITIALIZE`].
pub(crate) const EXECUTE_SEARCH: &str = "execute_search";
/// See [`INITIALIZE`].
pub(crate) const ANALYZE_AND_REFLECT: &str = "analyze_and_reflect";
/// See [`INITIALIZE`].
pub(crate) const MAP_CONNECTIONS: &str = "map_connections";
/// See [`INITIALIZE`].
pub(crate) const SYNTHESIZE_REPORT: &str = "synthesize_report";

/// What the nodes need besides the state.
pub struct Deps {
    /// Query generation and reflection (the seed's Claude role).
    pub strategy_model: Arc<dyn ChatModel>,
    /// Search extraction, entity merge, connections and the report (the seed's OpenAI role).
    pub search_model: Arc<dyn ChatModel>,
    /// The search backend (offline corpus or Tavily).
    pub search: Arc<dyn SearchBackend>,
    /// Pages read per search.
    pub results_per_search: usize,
    /// The audit files.
    pub audit: AuditTrail,
    /// Prices for the cost estimate.
    pub prices: PriceTable,
    /// Where `{session_id}_report.json` and `.html` go.
    pub reports_dir: PathBuf,
    /// Where the session id that names the audit file and the reports comes from.
    pub sessions: SessionIds,
}

/// Where a run's session id comes from. It names the run's audit file and reports, so on a
/// server it must not come from anything a client can write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SessionIds {
    /// `initialize` takes [`SESSION_ID_KEY`] from the run's config (the CLI sets it) or
    /// makes one, and the state's `session_id` names the files from then on (checked to
    /// be a plain name).
    #[default]
    FromState,
    /// `dd-<thread id>`, whatever the state or the config says: for a graph served to
    /// clients, who can set the state's `session_id` (input, `command.update`, a state
    /// update) and the config. The thread id is the server's. `initialize` writes the same
    /// id into the state, so a client that changes it changes a label, never a file name.
    PerThread,
}

impl SessionIds {
    /// The id naming the files of the run with `state` and `config`.
    fn file_key(self, state: &S, config: &RunConfig) -> Result<String, BoxError> {
        match self {
            Self::FromState => Ok(file_safe(&state.session_id)?.to_owned()),
            Self::PerThread => {
                let thread = config
                    .thread_id
                    .as_deref()
                    .ok_or("a served due-diligence run names its files after its thread: run it on a thread")?;
                Ok(file_safe(&format!("dd-{thread}"))?.to_owned())
            }
        }
    }
}

impl std::fmt::Debug for Deps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deps")
            .field("strategy_model", &self.strategy_model.model_name())
            .field("search_model", &self.search_model.model_name())
            .field("reports_dir", &self.reports_dir)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// Prices (USD per million tokens) of the seed's two models, for the cost estimate.
pub fn default_prices() -> PriceTable {
    PriceTable::new()
        .with("gpt-4o", 2.50, 10.00)
        .with("gpt-4o-mini", 0.15, 0.60)
        .with("claude-sonnet-4-20250514", 3.00, 15.00)
}

/// One search task: the input of an `execute_search` `Send`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SearchTask {
    /// The query.
    pub query: String,
    /// The iteration.
    pub depth: u32,
}

/// Model usage of a node, added to the state's counters.
#[derive(Debug, Default, Clone, Copy)]
struct Usage {
    calls: u64,
    input: u64,
    output: u64,
    cost: f64,
}

impl Usage {
    fn apply(self, update: Update) -> Update {
        update
            .model_calls(self.calls)
            .input_tokens(self.input)
            .output_tokens(self.output)
            .estimated_cost_usd(self.cost)
    }
}

impl Deps {
    fn audit(&self, session: &str, depth: u32, event: &str, fields: Value) -> Result<(), BoxError> {
        self.audit
            .record(session, depth, event, fields)
            .map_err(Into::into)
    }

    /// Starts one run of `node` (for a search, of its `query`): records `node_start`, with
    /// `"rerun": true` and the number of earlier starts when the trail already holds a
    /// start of the same node at the same depth (a resume runs the nodes of the step the
    /// killed process was in again), then emits the same as a custom stream event. Every
    /// event recorded through the returned [`Visit`] carries the same mark.
    fn visit(
        &self,
        state: &S,
        config: &RunConfig,
        node: &'static str,
        query: Option<&str>,
    ) -> Result<Visit<'_>, BoxError> {
        let session = self.sessions.file_key(state, config)?;
        let earlier = self
            .audit
            .count_start(&session, node, state.current_depth, query);
        let visit = Visit {
            deps: self,
            node,
            session,
            earlier,
        };
        let mut fields = json!({"node": node});
        if let Some(query) = query {
            fields["query"] = query.into();
        }
        if earlier > 0 {
            fields["earlier_starts"] = earlier.into();
        }
        visit.audit(state, "node_start", fields.clone())?;
        // On the run's stream too (`--stream` prints it), once the start is on disk.
        if let Some(writer) = graphkit::StreamWriter::current()
            && let Some(fields) = fields.as_object_mut().map(std::mem::take)
        {
            let mut event = json!({"event": "node_start", "depth": state.current_depth});
            if let Some(event) = event.as_object_mut() {
                event.extend(fields);
                if earlier > 0 {
                    event.insert("rerun".into(), true.into());
                }
            }
            writer.custom(event);
        }
        Ok(visit)
    }

    /// Asks `model` for a `T`, auditing the call (tokens, duration, cost) or its error.
    async fn ask<T: JsonSchema + DeserializeOwned>(
        &self,
        visit: &Visit<'_>,
        state: &S,
        model: &Arc<dyn ChatModel>,
        messages: &[Message],
        usage: &mut Usage,
    ) -> Result<Result<T, LlmError>, BoxError> {
        let node = visit.node;
        let started = Instant::now();
        let structured = Arc::clone(model).with_structured_output::<T>();
        let schema = structured.format().name.clone();
        let result = structured.invoke_with_raw(messages).await;
        let duration_ms = elapsed_ms(started);
        usage.calls += 1;
        match result {
            Ok((value, raw)) => {
                let tokens = raw.usage.unwrap_or_default();
                let name = model.model_name().to_owned();
                let cost = self.prices.cost(&name, tokens);
                usage.input += tokens.input_tokens;
                usage.output += tokens.output_tokens;
                usage.cost += cost.unwrap_or(0.0);
                visit.audit(
                    state,
                    "model_call",
                    json!({"node": node, "model": name, "schema": schema, "ok": true,
                           "input_tokens": tokens.input_tokens, "output_tokens": tokens.output_tokens,
                           "duration_ms": duration_ms, "estimated_cost_usd": cost}),
                )?;
                Ok(Ok(value))
            }
            Err(err) => {
                visit.audit(
                    state,
                    "model_call",
                    json!({"node": node, "model": model.model_name(), "schema": schema, "ok": false,
                           "duration_ms": duration_ms, "error": err.to_string()}),
                )?;
                visit.audit(
                    state,
                    "error",
                    json!({"node": node, "error": err.to_string()}),
                )?;
                Ok(Err(err))
            }
        }
    }
}

/// One run of a node, as the audit trail sees it (see [`Deps::visit`]).
struct Visit<'a> {
    deps: &'a Deps,
    node: &'static str,
    /// The session id naming the run's files (see [`SessionIds`]).
    session: String,
    /// Starts of the same node (same depth, same query) the trail held before this one.
    earlier: u32,
}

impl Visit<'_> {
    /// Records `event` with `fields`, marked `"rerun": true` when the node runs again.
    fn audit(&self, state: &S, event: &str, mut fields: Value) -> Result<(), BoxError> {
        if self.earlier > 0
            && let Some(fields) = fields.as_object_mut()
        {
            fields.insert("rerun".into(), true.into());
        }
        self.deps
            .audit(&self.session, state.current_depth, event, fields)
    }
}

fn elapsed_ms(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A new session id: `dd-<UTC time>-<random hex>`.
pub(crate) fn new_session_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let stamp: String = rfc3339(now_ms())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("dd-{stamp}-{:06x}", hasher.finish() & 0xff_ffff)
}

/// The [`RunConfig`](graphkit::RunConfig) value that gives `initialize` the session id
/// (the CLI's, kept in `run.json`), so a run resumed before `initialize`'s step was saved
/// keeps its id and its audit file.
pub const SESSION_ID_KEY: &str = "due_diligence_session_id";

/// The session id `initialize` gives a [`SessionIds::FromState`] run: [`SESSION_ID_KEY`]
/// when the run's config has it, else a new one.
fn session_id_for(ctx: &NodeContext) -> String {
    ctx.config()
        .value(SESSION_ID_KEY)
        .and_then(Value::as_str)
        .filter(|id| file_safe(id).is_ok())
        .map_or_else(new_session_id, str::to_owned)
}

/// `initialize`: session id, start time, depth 0, counters at 0.
pub async fn initialize(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let session_id = match deps.sessions {
        SessionIds::FromState => session_id_for(&ctx),
        SessionIds::PerThread => deps.sessions.file_key(&state, ctx.config())?,
    };
    let start = now_ms();
    let session = S {
        session_id: session_id.clone(),
        ..S::default()
    };
    let visit = deps.visit(&session, ctx.config(), INITIALIZE, None)?;
    visit.audit(
        &session,
        "node_end",
        json!({"node": INITIALIZE, "subject": state.subject, "max_depth": state.max_depth}),
    )?;
    Ok(Update::new()
        .session_id(session_id)
        .start_time(rfc3339(start))
        .current_depth(0u32)
        .should_continue(true)
        .termination_reason(None))
}

/// `generate_queries`: broad at depth 0, strategy-driven later; deduplicated against
/// everything executed; red-flag queries first; at most `max_queries_per_depth`.
pub async fn generate_queries(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let visit = deps.visit(&state, ctx.config(), GENERATE_QUERIES, None)?;
    let mut usage = Usage::default();
    let mut errors = 0;
    let proposed = match deps
        .ask::<SearchQueriesList>(
            &visit,
            &state,
            &deps.strategy_model,
            &prompts::queries(&state),
            &mut usage,
        )
        .await?
    {
        Ok(list) => list.queries,
        Err(_) => {
            errors += 1;
            Vec::new()
        }
    };
    let queries = select_queries(&state, proposed);
    if queries.is_empty() {
        visit.audit(
            &state,
            "no_new_queries",
            json!({"node": GENERATE_QUERIES, "note": "every proposed query was already executed (or none was proposed); routing on to reflection"}),
        )?;
    }
    ctx.writer()
        .custom(json!({"event": "queries", "depth": state.current_depth, "queries": queries}));
    visit.audit(
        &state,
        "node_end",
        json!({"node": GENERATE_QUERIES, "queries": queries}),
    )?;
    Ok(usage.apply(Update::new().current_queries(queries).error_count(errors)))
}

/// Deduplicates `proposed` against the executed queries and itself, puts queries about
/// red flags first (from depth 1), and keeps at most `max_queries_per_depth`.
pub fn select_queries(state: &S, proposed: Vec<String>) -> Vec<String> {
    let mut queries: Vec<String> = Vec::new();
    for query in proposed {
        let query = query.split_whitespace().collect::<Vec<_>>().join(" ");
        let key = normalize(&query);
        if key.is_empty()
            || state.was_executed(&query)
            || queries.iter().any(|q| normalize(q) == key)
        {
            continue;
        }
        queries.push(query);
    }
    if state.current_depth >= 1 {
        let flags: Vec<String> = state
            .risk_indicators
            .red_flags
            .iter()
            .map(|f| normalize(&f.text))
            .collect();
        let subject = normalize(&state.subject);
        let about_flag = |q: &String| {
            normalize(q).split(' ').any(|w| {
                w.len() >= 5 && !subject.contains(w) && flags.iter().any(|f| f.contains(w))
            })
        };
        // Stable: red-flag queries first, each group in the model's order.
        queries.sort_by_key(|q| !about_flag(q));
    }
    queries.truncate(usize::try_from(state.max_queries_per_depth.max(1)).unwrap_or(usize::MAX));
    queries
}

/// The router after `generate_queries`: one `Send` per query to `execute_search`, or
/// straight to `analyze_and_reflect` when there is nothing new to search.
pub(crate) fn fan_out_searches(state: &S) -> Vec<Goto> {
    if state.current_queries.is_empty() {
        return vec![Goto::Node(ANALYZE_AND_REFLECT.into())];
    }
    state
        .current_queries
        .iter()
        .map(|query| {
            Goto::Send(SendTo::new(
                EXECUTE_SEARCH,
                SearchTask {
                    query: query.clone(),
                    depth: state.current_depth,
                },
            ))
        })
        .collect()
}

/// `execute_search`: one query (one `Send`): the backend's pages, then the search model's
/// structured `WebSearchOutput`. A failed search is recorded, not fatal.
pub async fn execute_search(
    state: Arc<S>,
    Input(task): Input<SearchTask>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let started_at = rfc3339(now_ms());
    let started = Instant::now();
    let mut usage = Usage::default();
    // The task's state is the step's: its depth is the task's.
    let visit = deps.visit(&state, ctx.config(), EXECUTE_SEARCH, Some(&task.query))?;
    let outcome = search_once(&state, &task, &deps, &visit, &mut usage).await?;
    let duration_ms = elapsed_ms(started);
    let (output, error) = match outcome {
        Ok(output) => (Some(output), None),
        Err(error) => (None, Some(error)),
    };
    let event = if deps
        .audit
        .first_search(&visit.session, task.depth, &task.query)
    {
        "search"
    } else {
        "search_repeated"
    };
    visit.audit(
        &state,
        event,
        json!({"query": task.query, "ok": error.is_none(), "error": error,
               "sources": output.as_ref().map(|o| o.sources.iter().map(|s| &s.url).collect::<Vec<_>>()),
               "duration_ms": duration_ms}),
    )?;
    let failed = u64::from(error.is_some());
    Ok(usage.apply(
        Update::new()
            .search_memory(vec![SearchMemoryEntry {
                depth: task.depth,
                query: task.query.clone(),
                output,
                error,
                started_at,
                duration_ms,
            }])
            .queries_executed(vec![task.query])
            .search_count(1u64)
            .error_count(failed),
    ))
}

async fn search_once(
    state: &S,
    task: &SearchTask,
    deps: &Deps,
    visit: &Visit<'_>,
    usage: &mut Usage,
) -> Result<Result<WebSearchOutput, String>, BoxError> {
    let hits = match deps
        .search
        .search(&task.query, deps.results_per_search)
        .await
    {
        Ok(hits) => hits,
        Err(err) => return Ok(Err(format!("search failed: {err}"))),
    };
    let urls: Vec<String> = hits.iter().map(|h| h.url.clone()).collect();
    let pages = deps.search.extract(&urls).await.unwrap_or_default();
    let pages: Vec<Value> = hits
        .iter()
        .map(|hit| {
            let content = pages
                .iter()
                .find(|p| p.url == hit.url)
                .map_or(hit.snippet.as_str(), |p| p.content.as_str());
            json!({"title": hit.title, "url": hit.url, "content": crate::shared::truncate(content, 6000)})
        })
        .collect();
    let messages = prompts::web_search(&state.subject, &task.query, &pages);
    match deps
        .ask::<WebSearchOutput>(visit, state, &deps.search_model, &messages, usage)
        .await?
    {
        Ok(mut output) => {
            output.query = task.query.clone();
            let rejected = keep_sources_about_the_subject(state, &mut output, &pages);
            if !rejected.is_empty() {
                visit.audit(
                    state,
                    "sources_rejected",
                    json!({"query": task.query, "urls": rejected,
                           "reason": "the page names neither the subject in full nor an entity found about them"}),
                )?;
            }
            Ok(Ok(output))
        }
        Err(err) => Ok(Err(format!("extraction failed: {err}"))),
    }
}

/// The names a page must mention to count as being about the investigation: the subject's
/// full name, and the names and aliases of the people and organisations found about them so
/// far (a page about the subject's company is about the investigation; a page about
/// someone who shares the subject's surname is not).
fn identifiers(state: &S) -> Vec<&str> {
    std::iter::once(state.subject.as_str())
        .chain(
            state
                .discovered_entities
                .iter()
                .filter(|e| e.entity_type != super::schemas::EntityType::Location)
                .flat_map(|e| std::iter::once(&e.name).chain(&e.aliases))
                .map(String::as_str),
        )
        .collect()
}

/// The graph's check on a search's extraction, whatever the model: a source whose page
/// names none of the [`identifiers`] is dropped, with the key facts that cite it; when the
/// model listed no source but stated facts, the pages that name an identifier are its
/// sources. Returns the rejected URLs.
fn keep_sources_about_the_subject(
    state: &S,
    output: &mut WebSearchOutput,
    pages: &[Value],
) -> Vec<String> {
    let names = identifiers(state);
    let about = |url: &str| {
        pages
            .iter()
            .find(|p| p["url"] == url)
            .and_then(|p| p["content"].as_str())
            .is_some_and(|content| {
                names
                    .iter()
                    .any(|n| crate::shared::prose::names_in_full(content, n))
            })
    };
    if output.sources.is_empty() && !output.key_facts.is_empty() {
        output.sources = pages
            .iter()
            .filter(|p| about(p["url"].as_str().unwrap_or("")))
            .map(|p| Source {
                url: p["url"].as_str().unwrap_or("").to_owned(),
                title: p["title"].as_str().unwrap_or("").to_owned(),
            })
            .collect();
    }
    let (kept, rejected): (Vec<Source>, Vec<Source>) = std::mem::take(&mut output.sources)
        .into_iter()
        .partition(|s| about(&s.url));
    output.sources = kept;
    let rejected: Vec<String> = rejected.into_iter().map(|s| s.url).collect();
    output
        .key_facts
        .retain(|f| !rejected.iter().any(|url| f.contains(url.as_str())));
    rejected
}

/// `analyze_and_reflect`: reflection (strategy model), then the entity merge (search
/// model); records the iteration, increments the depth, and decides the route.
pub async fn analyze_and_reflect(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let visit = deps.visit(&state, ctx.config(), ANALYZE_AND_REFLECT, None)?;
    let depth = state.current_depth;
    let mut usage = Usage::default();
    let mut errors = Vec::new();

    let reflection = match deps
        .ask::<ReflectionOutput>(
            &visit,
            &state,
            &deps.strategy_model,
            &prompts::reflection(&state),
            &mut usage,
        )
        .await?
    {
        Ok(reflection) => reflection,
        Err(err) => {
            errors.push(format!("reflection failed: {err}"));
            ReflectionOutput {
                reasoning: format!(
                    "The reflection model failed ({err}); stopping, as there is no strategy to follow."
                ),
                ..ReflectionOutput::default()
            }
        }
    };

    let merged = match deps
        .ask::<EntityMergeOutput>(
            &visit,
            &state,
            &deps.search_model,
            &prompts::merge(
                &state.discovered_entities,
                &reflection.analysis_summary,
                depth,
            ),
            &mut usage,
        )
        .await?
    {
        Ok(merged) => merged,
        Err(err) => {
            errors.push(format!("entity merge failed: {err}"));
            EntityMergeOutput::default()
        }
    };
    let (entities, new_names) =
        reconcile_entities(&state.discovered_entities, merged.entities, depth);
    let indicators = RiskIndicators {
        red_flags: merged.red_flags,
        neutral: merged.neutral,
        positive: merged.positive,
    };

    let searches: Vec<&SearchMemoryEntry> = state.searches_at(depth).collect();
    let mut sources: Vec<Source> = Vec::new();
    for s in searches
        .iter()
        .filter_map(|s| s.output.as_ref())
        .flat_map(|o| &o.sources)
    {
        if !sources.iter().any(|known| known.url == s.url) {
            sources.push(s.clone());
        }
    }
    let iteration = SearchIterationData {
        depth,
        goal: match state.reflection_memory.last() {
            Some(previous) if depth > 0 => previous.query_strategy.clone(),
            _ => "broad coverage: biographical, professional, financial, legal".into(),
        },
        queries: searches.iter().map(|s| s.query.clone()).collect(),
        model: deps.search_model.model_name().to_owned(),
        entities_discovered: new_names.clone(),
        sources,
        errors: searches
            .iter()
            .filter_map(|s| s.error.as_ref().map(|e| format!("{}: {e}", s.query)))
            .chain(errors.iter().cloned())
            .collect(),
        started_at: searches
            .first()
            .map(|s| s.started_at.clone())
            .unwrap_or_else(|| rfc3339(now_ms())),
        duration_ms: searches.iter().map(|s| s.duration_ms).sum(),
    };

    // Depth is incremented before routing (seed §4).
    let new_depth = depth + 1;
    let entity_count = u32::try_from(entities.len()).unwrap_or(u32::MAX);
    let mut history = state.entity_count_history.clone();
    history.push(entity_count);
    let decision = should_continue_research(
        new_depth,
        state.max_depth,
        reflection.should_continue,
        &history,
        state.stagnation_threshold,
    );
    visit.audit(
        &state,
        "routing",
        json!({"node": ANALYZE_AND_REFLECT, "new_depth": new_depth, "max_depth": state.max_depth,
               "reflection_should_continue": reflection.should_continue,
               "entity_count_history": history,
               "decision": decision.map_or("continue_search".to_owned(), |r| format!("finalize ({r})"))}),
    )?;
    let failed = searches.iter().filter(|s| s.error.is_some()).count();
    let mut all_indicators = state.risk_indicators.clone();
    RiskIndicators::merge(&mut all_indicators, indicators.clone());
    ctx.writer().custom(json!({
        "event": "depth_done", "depth": depth, "max_depth": state.max_depth,
        "searches": searches.len(), "failed": failed, "entities": entity_count,
        "new_entities": new_names.len(), "red_flags": all_indicators.red_flags.len(),
        "decision": decision.map_or("continue".to_owned(), |r| format!("finalize: {r}")),
    }));
    visit.audit(
        &state,
        "node_end",
        json!({"node": ANALYZE_AND_REFLECT, "entities": entity_count, "new_entities": new_names}),
    )?;
    Ok(usage.apply(
        Update::new()
            .reflection_memory(vec![reflection.clone()])
            .should_continue(reflection.should_continue)
            .discovered_entities(entities)
            .risk_indicators(indicators)
            .search_iterations(vec![iteration])
            .entity_count_history(vec![entity_count])
            .current_depth(new_depth)
            .iteration_count(1u64)
            .error_count(errors.len() as u64)
            .termination_reason(decision),
    ))
}

/// Keeps every existing entity (a model that drops one does not lose it), adds the new
/// ones with `first_seen_depth = depth`, and returns the merged list with the new names.
pub(crate) fn reconcile_entities(
    existing: &[Entity],
    merged: Vec<Entity>,
    depth: u32,
) -> (Vec<Entity>, Vec<String>) {
    let mut out: Vec<Entity> = existing.to_vec();
    let mut new_names = Vec::new();
    for entity in merged.into_iter().filter(|e| !e.name.trim().is_empty()) {
        let known = out
            .iter()
            .position(|e| e.is_named(&entity.name) || entity.aliases.iter().any(|a| e.is_named(a)));
        match known {
            Some(i) => {
                let target = &mut out[i];
                for alias in std::iter::once(&entity.name).chain(&entity.aliases) {
                    if !target.is_named(alias) {
                        target.aliases.push(alias.clone());
                    }
                }
                for source in entity.sources {
                    if !target.sources.contains(&source) {
                        target.sources.push(source);
                    }
                }
                if target.description.is_empty() {
                    target.description = entity.description;
                }
            }
            None => {
                new_names.push(entity.name.clone());
                out.push(Entity {
                    first_seen_depth: depth,
                    ..entity
                });
            }
        }
    }
    (out, new_names)
}

/// The seed's `should_continue_research`, checked in order: max depth, reflection stop,
/// stagnation (no new entities in the last `stagnation_threshold` iterations); `None` =
/// continue searching. `depth` is the depth after the increment; `history` holds the
/// entity count after each iteration, this one included.
pub fn should_continue_research(
    depth: u32,
    max_depth: u32,
    reflection_continue: bool,
    history: &[u32],
    stagnation_threshold: u32,
) -> Option<TerminationReason> {
    if depth >= max_depth {
        return Some(TerminationReason::MaxDepth);
    }
    if !reflection_continue {
        return Some(TerminationReason::ReflectionStop);
    }
    let n = usize::try_from(stagnation_threshold).unwrap_or(usize::MAX);
    if n > 0 && history.len() > n {
        let latest = history[history.len() - 1];
        let before = history[history.len() - 1 - n];
        if latest <= before {
            return Some(TerminationReason::Stagnation);
        }
    }
    None
}

/// The router after `analyze_and_reflect`: every finalize path goes through
/// `map_connections`.
pub(crate) fn route_after_reflection(state: &S) -> &'static str {
    if state.termination_reason.is_some() {
        MAP_CONNECTIONS
    } else {
        GENERATE_QUERIES
    }
}

/// `map_connections`: the entity graph, patterns, suspicious connections, importance.
pub async fn map_connections(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let visit = deps.visit(&state, ctx.config(), MAP_CONNECTIONS, None)?;
    let mut usage = Usage::default();
    let (graph, errors) = match deps
        .ask::<ConnectionMappingOutput>(
            &visit,
            &state,
            &deps.search_model,
            &prompts::connections(&state),
            &mut usage,
        )
        .await?
    {
        Ok(graph) => (graph, 0u64),
        // Without the model: the entities as unconnected nodes, so the report still shows them.
        Err(_) => (
            ConnectionMappingOutput {
                nodes: state
                    .discovered_entities
                    .iter()
                    .map(|e| GraphNode {
                        id: e.name.clone(),
                        name: e.name.clone(),
                        entity_type: e.entity_type,
                        importance: super::schemas::Importance::Low,
                        importance_reasoning: "connection mapping failed; not assessed".into(),
                    })
                    .collect(),
                ..ConnectionMappingOutput::default()
            },
            1,
        ),
    };
    visit.audit(
        &state,
        "node_end",
        json!({"node": MAP_CONNECTIONS, "nodes": graph.nodes.len(), "edges": graph.edges.len(),
               "suspicious": graph.suspicious_connections.len()}),
    )?;
    Ok(usage.apply(Update::new().entity_graph(graph).error_count(errors)))
}

/// `synthesize_report`: the 18 sections, plus metadata; saves
/// `reports/{session_id}_report.json` and the HTML rendering.
pub async fn synthesize_report(
    state: Arc<S>,
    ctx: NodeContext,
    deps: RunContext<Deps>,
) -> Result<Update, BoxError> {
    let visit = deps.visit(&state, ctx.config(), SYNTHESIZE_REPORT, None)?;
    let mut usage = Usage::default();
    let (sections, errors) = match deps
        .ask::<DueDiligenceReport>(
            &visit,
            &state,
            &deps.search_model,
            &prompts::synthesis(&state),
            &mut usage,
        )
        .await?
    {
        Ok(sections) => (sections, 0u64),
        Err(err) => (report::fallback_report(&state, &err.to_string()), 1),
    };
    let mut sections = sections;
    if report::sources_read(&state) == 0 {
        report::mark_insufficient(&mut sections, &state.subject, state.search_count);
    }
    // The graph's own check, whatever the model wrote: the passage behind every finding
    // and entity, and the facts two sources disagree on, read from the sources' text.
    let urls = super::evidence::cited_urls(&sections, &state.discovered_entities);
    let texts: super::evidence::SourceTexts = if urls.is_empty() {
        Default::default()
    } else {
        match deps.search.extract(&urls).await {
            Ok(pages) => pages.into_iter().map(|p| (p.url, p.content)).collect(),
            Err(err) => {
                sections.information_gaps.push(format!(
                    "The sources could not be read again to quote their passages ({err}); the findings below carry URLs only."
                ));
                Default::default()
            }
        }
    };
    let evidence = super::evidence::attach(&mut sections, &state.discovered_entities, &texts);
    if evidence.unsupported_findings > 0 && !texts.is_empty() {
        sections.information_gaps.push(format!(
            "{} finding(s) have no passage in their sources that says them (shown without a quote); check them before relying on them.",
            evidence.unsupported_findings
        ));
    }
    for conflict in &evidence.fact_conflicts {
        let values: Vec<String> = conflict
            .values
            .iter()
            .map(|v| format!("{} ({})", v.value, v.passage.source))
            .collect();
        sections.information_gaps.push(format!(
            "Sources disagree on {}'s {}: {}; not resolved, check the primary record.",
            conflict.entity,
            conflict.fact,
            values.join(" vs ")
        ));
    }
    let file = DueDiligenceReportFile {
        report: sections,
        evidence,
        metadata: report::metadata(
            &state,
            deps.strategy_model.model_name(),
            deps.search_model.model_name(),
            usage_totals(&state, usage),
        ),
    };
    let session = &visit.session;
    let json_path = deps.reports_dir.join(format!("{session}_report.json"));
    crate::shared::run_dir::write_json_atomic(&json_path, &file)?;
    let html_path = deps.reports_dir.join(format!("{session}_report.html"));
    crate::shared::run_dir::write_text_atomic(
        &html_path,
        &report::render_html(&file, &state.entity_graph),
    )?;
    visit.audit(
        &state,
        "node_end",
        json!({"node": SYNTHESIZE_REPORT, "report": json_path.display().to_string(),
               "html": html_path.display().to_string(), "overall_risk": file.report.risk_assessment.overall_risk}),
    )?;
    Ok(usage.apply(
        Update::new()
            .report(Some(Box::new(file)))
            .error_count(errors),
    ))
}

/// The run's totals including this node's usage (the update is not applied yet).
fn usage_totals(state: &S, usage: Usage) -> UsageTotals {
    UsageTotals {
        model_calls: state.model_calls + usage.calls,
        input_tokens: state.input_tokens + usage.input,
        output_tokens: state.output_tokens + usage.output,
        estimated_cost_usd: state.estimated_cost_usd + usage.cost,
    }
}
