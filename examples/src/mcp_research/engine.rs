//! [`Engine`]: research sessions on the graph. [`Engine::start`] checks a
//! [`ResearchRequest`], runs (or resumes) the session in its own task and hands back its
//! [`Marker`] stream; the run goes on when the receiver is dropped. Sessions are threads
//! of the checkpointer (thread = session id), so [`Engine::status`] works after a restart
//! and posting a session again resumes it from its last checkpoint.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use graphkit::checkpoint::Checkpointer;
use graphkit::{
    CompileOptions, CompiledGraph, Error as GraphError, RunConfig, RunInput, StreamMode,
    StreamPayload,
};
use graphkit_llm::{ChatModel, ModelSpec};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::graph::build_graph;
use super::marker::{CompleteStats, Marker, progress_for};
use super::nodes::ResearchDeps;
use super::source::EventsSource;
use super::state::{ResearchAgentState, ResearchAgentStateUpdate, ResearchPhase};
use super::subagents::SubAgentRegistry;
use crate::shared::{ExampleError, ModelChoice};

/// The super-steps a session may take: five per iteration for 50 iterations, plus the
/// ends (`check_completion` bounds the iterations; this only guards against a bug).
const RECURSION_LIMIT: usize = 5 * 50 + 20;

/// The providers a request may name (`offline` is the deterministic stand-in).
pub(crate) const PROVIDERS: [&str; 4] = ["anthropic", "openai", "ollama", "offline"];

/// The body of `POST /research`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResearchRequest {
    /// The question (required, not empty).
    pub query: String,
    /// The session to start or resume (default: a new `research-{uuid}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The MCP tools to use (default: every tool discovered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// `anthropic`, `openai`, `ollama` or `offline` (default: the server's model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_provider: Option<String>,
    /// The provider's model (default: the provider's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_model: Option<String>,
    /// The most planning iterations, 1-50 (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u32>,
}

impl ResearchRequest {
    /// A request for `query` with every default.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            ..Self::default()
        }
    }

    /// Checks the request.
    ///
    /// # Errors
    /// [`ExampleError::Input`] naming the field: an empty query, a bad session id, an
    /// unknown provider, `max_iterations` outside 1..=50, an empty tool name.
    pub fn validate(&self) -> Result<(), ExampleError> {
        let bad = |message: String| ExampleError::Input {
            origin: "request".into(),
            message,
        };
        if self.query.trim().is_empty() {
            return Err(bad("`query` is required and must not be empty".into()));
        }
        if self.query.len() > 4000 {
            return Err(bad("`query` is longer than 4000 bytes; shorten it".into()));
        }
        if let Some(id) = &self.session_id
            && (id.is_empty()
                || id.len() > 128
                || !id
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
        {
            return Err(bad(format!(
                "`session_id` `{id}` must be 1-128 letters, digits, `-`, `_` or `.`"
            )));
        }
        if let Some(provider) = &self.llm_provider
            && !PROVIDERS.contains(&provider.as_str())
        {
            return Err(bad(format!(
                "`llm_provider` `{provider}` is not one of {}",
                PROVIDERS.join(", ")
            )));
        }
        if let Some(n) = self.max_iterations
            && !(1..=50).contains(&n)
        {
            return Err(bad(format!(
                "`max_iterations` {n} must be between 1 and 50"
            )));
        }
        if let Some(tools) = &self.enabled_tools
            && tools.iter().any(|t| t.trim().is_empty())
        {
            return Err(bad("`enabled_tools` has an empty name".into()));
        }
        Ok(())
    }
}

/// `GET /research/status/{session_id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionStatus {
    /// The session.
    pub session_id: String,
    /// The current phase.
    pub phase: ResearchPhase,
    /// 0-100.
    pub progress: u8,
    /// Planning iterations so far.
    pub iteration: u32,
    /// Findings so far.
    pub findings_count: usize,
    /// Documents read so far.
    pub docs_processed: u32,
    /// `true` once the report is written.
    pub complete: bool,
    /// The overall confidence (0-1).
    pub confidence: f32,
    /// `true` while this process runs the session.
    pub running: bool,
}

impl SessionStatus {
    fn of(session_id: &str, state: &ResearchAgentState, running: bool) -> Self {
        Self {
            session_id: session_id.to_owned(),
            phase: state.current_phase,
            progress: progress_for(
                state.current_phase,
                state.iteration_count.max(1),
                state.max_iterations,
            ),
            iteration: state.iteration_count,
            findings_count: state.findings.len(),
            docs_processed: state.docs_processed,
            complete: state.final_report.is_some(),
            confidence: state.overall_confidence,
            running,
        }
    }
}

/// What an [`Engine`] runs with.
#[derive(Clone)]
pub struct EngineConfig {
    /// The MCP tools.
    pub source: Arc<dyn EventsSource>,
    /// Where sessions live (SQLite by default, so they survive a restart).
    pub checkpointer: Arc<dyn Checkpointer>,
    /// The model when a request names no provider (`--model`).
    pub default_model: ModelChoice,
    /// The offline stand-in (for `offline`).
    pub offline: Arc<dyn ChatModel>,
    /// Calls of one batch run at once (4).
    pub max_parallel_sub_agents: usize,
    /// Confidence at which the research goes to synthesis (0.8).
    pub confidence_threshold: f32,
    /// `max_iterations` when a request gives none (10).
    pub default_max_iterations: u32,
}

impl EngineConfig {
    /// The seed's defaults (offline model, 4 parallel sub-agents, threshold 0.8, 10
    /// iterations) over `source` and `checkpointer`.
    pub fn new(source: Arc<dyn EventsSource>, checkpointer: Arc<dyn Checkpointer>) -> Self {
        Self {
            source,
            checkpointer,
            default_model: ModelChoice::Offline,
            offline: Arc::new(super::standin::offline_model()),
            max_parallel_sub_agents: 4,
            confidence_threshold: 0.8,
            default_max_iterations: 10,
        }
    }
}

/// A started session: its id, its markers, and the run's end (the final state, or the
/// error the ERROR marker carried).
#[derive(Debug)]
pub struct Session {
    /// The session id (the checkpointer thread).
    pub session_id: String,
    /// The markers as they come; the run goes on if this is dropped.
    pub markers: mpsc::UnboundedReceiver<Marker>,
    /// The run's end.
    pub finished: tokio::task::JoinHandle<Result<ResearchAgentState, String>>,
}

/// Runs research sessions (cheap to clone; clones share the sessions).
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    config: EngineConfig,
    running: Mutex<HashSet<String>>,
    /// The graph without a live model, for reading sessions' state.
    reader: CompiledGraph<ResearchAgentState>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("default_model", &self.inner.config.default_model)
            .field("running", &self.running_sessions())
            .finish_non_exhaustive()
    }
}

/// A new session id: `research-` and a random UUID (v4).
pub(crate) fn new_session_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let mut b = bytes;
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "research-{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl Engine {
    /// An engine over `config`.
    ///
    /// # Errors
    /// [`ExampleError::Graph`] when the graph does not build (a bug).
    pub fn new(config: EngineConfig) -> Result<Self, ExampleError> {
        let reader = build_graph(
            Arc::new(Self::deps_with(&config, Arc::clone(&config.offline))),
            CompileOptions::new().checkpointer(Arc::clone(&config.checkpointer)),
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                running: Mutex::new(HashSet::new()),
                reader,
            }),
        })
    }

    fn deps_with(config: &EngineConfig, model: Arc<dyn ChatModel>) -> ResearchDeps {
        ResearchDeps {
            model,
            source: Arc::clone(&config.source),
            registry: SubAgentRegistry::standard(),
            max_parallel_sub_agents: config.max_parallel_sub_agents,
            confidence_threshold: config.confidence_threshold,
        }
    }

    /// The MCP tools the engine uses.
    pub fn source(&self) -> &Arc<dyn EventsSource> {
        &self.inner.config.source
    }

    /// The graph (for drawing it).
    pub fn graph(&self) -> &CompiledGraph<ResearchAgentState> {
        &self.inner.reader
    }

    /// The sessions this process is running.
    pub(crate) fn running_sessions(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        ids.sort();
        ids
    }

    /// The model for a provider and model name (`""`: the engine's default).
    ///
    /// # Errors
    /// [`ExampleError::Input`] for an unknown provider; [`ExampleError::Model`] when the
    /// provider cannot be set up (a missing key names the variable).
    pub(crate) fn model_for(
        &self,
        provider: &str,
        model: &str,
    ) -> Result<Arc<dyn ChatModel>, ExampleError> {
        let offline = Arc::clone(&self.inner.config.offline);
        let choice = match provider {
            "" => self.inner.config.default_model.clone(),
            "offline" => ModelChoice::Offline,
            "anthropic" | "openai" | "ollama" => {
                let name = if model.is_empty() {
                    match provider {
                        "anthropic" => "claude-sonnet-4-20250514",
                        "openai" => "gpt-4o-mini",
                        _ => "qwen2.5",
                    }
                } else {
                    model
                };
                ModelChoice::Spec(ModelSpec::parse(&format!("{provider}:{name}"))?)
            }
            other => {
                return Err(ExampleError::Input {
                    origin: "request".into(),
                    message: format!(
                        "`llm_provider` `{other}` is not one of {}",
                        PROVIDERS.join(", ")
                    ),
                });
            }
        };
        choice.build(offline)
    }

    /// The state of `session_id`, `None` when there is no such session.
    ///
    /// # Errors
    /// [`ExampleError::Graph`] when the checkpointer fails.
    pub async fn state(
        &self,
        session_id: &str,
    ) -> Result<Option<ResearchAgentState>, ExampleError> {
        let config = RunConfig::new().thread_id(session_id.to_owned());
        match self.inner.reader.get_state(&config).await {
            Ok(snapshot) => Ok(Some(snapshot.values)),
            Err(GraphError::CheckpointNotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The status of `session_id` (from its checkpoints), `None` when it is unknown.
    ///
    /// # Errors
    /// [`ExampleError::Graph`] when the checkpointer fails.
    pub async fn status(&self, session_id: &str) -> Result<Option<SessionStatus>, ExampleError> {
        let running = self.is_running(session_id);
        Ok(match self.state(session_id).await? {
            Some(state) => Some(SessionStatus::of(session_id, &state, running)),
            None if running => Some(SessionStatus::of(
                session_id,
                &ResearchAgentState::default(),
                true,
            )),
            None => None,
        })
    }

    fn is_running(&self, session_id: &str) -> bool {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(session_id)
    }

    /// Starts `request`: a new session, or the continuation of the session it names (a
    /// finished one replays its report). Everything that can be refused is refused here,
    /// before any marker.
    ///
    /// # Errors
    /// [`ExampleError::Input`] for an invalid request; [`ExampleError::SessionBusy`] when
    /// the session is running; [`ExampleError::Model`] when the model cannot be set up;
    /// [`ExampleError::Graph`] when the checkpointer fails.
    pub async fn start(&self, request: ResearchRequest) -> Result<Session, ExampleError> {
        request.validate()?;
        let session_id = request.session_id.clone().unwrap_or_else(new_session_id);
        let existing = self.state(&session_id).await?;
        let (provider, model_name) = match &existing {
            Some(state) => (state.llm_provider.clone(), state.llm_model.clone()),
            None => (
                request.llm_provider.clone().unwrap_or_default(),
                request.llm_model.clone().unwrap_or_default(),
            ),
        };
        let model = self.model_for(&provider, &model_name)?;
        {
            let mut running = self
                .inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !running.insert(session_id.clone()) {
                return Err(ExampleError::SessionBusy(session_id));
            }
        }
        let guard = RunningGuard {
            engine: self.clone(),
            session_id: session_id.clone(),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let engine = self.clone();
        let id = session_id.clone();
        let max_iterations = request
            .max_iterations
            .unwrap_or(self.inner.config.default_max_iterations);
        let input = existing.map_or_else(
            || {
                RunInput::from(
                    ResearchAgentStateUpdate::new()
                        .input(request.query.trim().to_owned())
                        .conversation_id(id.clone())
                        .llm_provider(provider.clone())
                        .llm_model(model_name.clone())
                        .max_iterations(max_iterations)
                        .requested_tools(request.enabled_tools.clone().unwrap_or_default())
                        .current_phase(ResearchPhase::Planning),
                )
            },
            |_| RunInput::Continue,
        );
        let finished = tokio::spawn(async move {
            let _guard = guard;
            engine.run(id, model, input, Sender::new(tx)).await
        });
        Ok(Session {
            session_id,
            markers: rx,
            finished,
        })
    }

    async fn run(
        &self,
        session_id: String,
        model: Arc<dyn ChatModel>,
        input: RunInput<ResearchAgentState>,
        mut out: Sender,
    ) -> Result<ResearchAgentState, String> {
        out.send(Marker::ResearchStart {
            session_id: session_id.clone(),
        });
        let resumed = matches!(input, RunInput::Continue);
        let state_before = if resumed {
            self.state(&session_id).await.ok().flatten()
        } else {
            None
        };
        if let Some(state) = &state_before {
            if state.final_report.is_some() {
                out.send(Marker::thinking(
                    "The session is complete; its report follows",
                ));
                out.send(Marker::Phase(ResearchPhase::Complete));
                out.send(Marker::Progress(100));
                out.send_final(state);
                return Ok(state.clone());
            }
            out.send(Marker::thinking(format!(
                "Resuming session {session_id} from its last checkpoint (iteration {})",
                state.iteration_count
            )));
        }
        let result = self.drive(&session_id, model, input, &mut out).await;
        match result {
            Ok(state) => match &state.final_report {
                Some(_) => {
                    out.send_final(&state);
                    Ok(state)
                }
                None => {
                    let message =
                        "the run ended without a report; post the session again to resume it"
                            .to_owned();
                    out.send(Marker::Error {
                        message: message.clone(),
                    });
                    Err(message)
                }
            },
            Err(message) => {
                let message = format!(
                    "{message}. The session's finished steps are saved: post {{\"query\": …, \"session_id\": \"{session_id}\"}} again to resume it"
                );
                out.send(Marker::Error {
                    message: message.clone(),
                });
                Err(message)
            }
        }
    }

    async fn drive(
        &self,
        session_id: &str,
        model: Arc<dyn ChatModel>,
        input: RunInput<ResearchAgentState>,
        out: &mut Sender,
    ) -> Result<ResearchAgentState, String> {
        let deps = Self::deps_with(&self.inner.config, model);
        let graph = build_graph(
            Arc::new(deps),
            CompileOptions::new().checkpointer(Arc::clone(&self.inner.config.checkpointer)),
        )
        .map_err(|e| e.to_string())?;
        // Five super-steps per iteration at most 50 iterations, plus the ends.
        let config = RunConfig::new()
            .thread_id(session_id.to_owned())
            .recursion_limit(RECURSION_LIMIT);
        let mut stream = graph.stream_with(input, config, [StreamMode::Custom]);
        while let Some(event) = stream.next().await {
            match event {
                Ok(event) => {
                    if let StreamPayload::Custom { payload, .. } = event.payload
                        && let Ok(marker) = serde_json::from_value::<Marker>(payload)
                    {
                        out.send(marker);
                    }
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        stream
            .into_final_state()
            .ok_or_else(|| "the run ended without a final state".to_owned())
    }
}

/// Removes a session from the running set when its task ends (however it ends).
struct RunningGuard {
    engine: Engine,
    session_id: String,
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.engine
            .inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session_id);
    }
}

/// The marker channel: drops repeated PHASE and PROGRESS values (PHASE is sent on every
/// change), and ignores a receiver that went away (the run goes on).
struct Sender {
    tx: mpsc::UnboundedSender<Marker>,
    phase: Option<ResearchPhase>,
    progress: Option<u8>,
}

impl Sender {
    fn new(tx: mpsc::UnboundedSender<Marker>) -> Self {
        Self {
            tx,
            phase: None,
            progress: None,
        }
    }

    fn send(&mut self, marker: Marker) {
        match &marker {
            Marker::Phase(p) if self.phase == Some(*p) => return,
            Marker::Phase(p) => self.phase = Some(*p),
            Marker::Progress(p) if self.progress == Some(*p) => return,
            Marker::Progress(p) => self.progress = Some(*p),
            _ => {}
        }
        let _ = self.tx.send(marker);
    }

    /// FINAL_RESPONSE_START, the report between the MARKDOWN markers, RESEARCH_COMPLETE.
    fn send_final(&mut self, state: &ResearchAgentState) {
        self.send(Marker::FinalResponseStart);
        self.send(Marker::MarkdownContentStart);
        self.send(Marker::MarkdownContent(
            state.final_report.clone().unwrap_or_default(),
        ));
        self.send(Marker::MarkdownContentEnd);
        self.send(Marker::ResearchComplete(CompleteStats {
            iterations: state.iteration_count,
            docs_processed: state.docs_processed,
            confidence: state.overall_confidence,
        }));
    }
}
