//! `--model SPEC`: the workflow's deterministic offline stand-in, or any graphkit-llm spec.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use graphkit_llm::{
    AssistantMessage, ChatModel, ChatRequest, ChatStream, ClientOptions, LlmError, ModelSpec,
};

use super::ExampleError;

/// Which model a workflow role uses.
///
/// `offline` (the default) selects the workflow's own offline stand-in: a deterministic
/// program that drives the graph from the local corpus, needing no key and no network.
/// Anything else is a graphkit-llm spec (`openai:gpt-4o`, `anthropic:...`, `ollama:...`,
/// `openai-compatible:http://127.0.0.1:8091/v1#smol`).
///
/// ```
/// use graphkit_examples::shared::ModelChoice;
///
/// assert_eq!("offline".parse::<ModelChoice>()?, ModelChoice::Offline);
/// assert!(matches!("openai:gpt-4o".parse::<ModelChoice>()?, ModelChoice::Spec(_)));
/// assert!("gpt-4o".parse::<ModelChoice>().is_err());
/// # Ok::<(), graphkit_examples::shared::ExampleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelChoice {
    /// The workflow's offline stand-in.
    #[default]
    Offline,
    /// A real provider.
    Spec(ModelSpec),
}

impl ModelChoice {
    /// `true` for the offline stand-in.
    pub(crate) fn is_offline(&self) -> bool {
        matches!(self, Self::Offline)
    }

    /// Builds the model: `offline` for [`ModelChoice::Offline`], the provider otherwise
    /// (keys and base URLs from the environment; each call times out after
    /// `GRAPHKIT_MODEL_TIMEOUT_SECS` seconds, default 180, and is retried
    /// `GRAPHKIT_MODEL_RETRIES` times, default 2: size them for a slow local model so a run
    /// ends in bounded time). A provider's calls are counted in
    /// [`ModelHealth::process`], which the CLI reads at the end of a run.
    ///
    /// # Errors
    /// [`ExampleError::Model`] when the provider cannot be set up (a missing key names the
    /// variable to set), or [`ExampleError::Usage`] when one of the two variables is not a
    /// whole number.
    pub fn build(&self, offline: Arc<dyn ChatModel>) -> Result<Arc<dyn ChatModel>, ExampleError> {
        match self {
            Self::Offline if PromptLog::process().is_on() => {
                Ok(PromptLog::process().clone().watch(offline))
            }
            Self::Offline => Ok(offline),
            Self::Spec(spec) => {
                let options = ClientOptions::default()
                    .timeout(Duration::from_secs(env_number(TIMEOUT_VAR, 180)?))
                    .max_retries(
                        usize::try_from(env_number(RETRIES_VAR, 2)?).unwrap_or(usize::MAX),
                    );
                let slow_after = Duration::from_secs(env_number(SLOW_VAR, 30)?.max(1));
                Ok(ModelHealth::process().watch_within(
                    spec.build(options)?,
                    RunBudget::process().clone(),
                    slow_after,
                ))
            }
        }
    }
}

/// The seconds a real model's call may take before it is abandoned (and retried).
pub const TIMEOUT_VAR: &str = "GRAPHKIT_MODEL_TIMEOUT_SECS";
/// How many times a real model's failed or timed-out call is retried.
pub const RETRIES_VAR: &str = "GRAPHKIT_MODEL_RETRIES";
/// After how many seconds of waiting for one real model call a line on stderr says so
/// (and again every as many seconds), default 30.
pub const SLOW_VAR: &str = "GRAPHKIT_MODEL_SLOW_SECS";
/// The run's time budget in seconds for real model calls (`--time-budget`), default
/// [`DEFAULT_BUDGET_SECS`]; `0` means none.
pub const BUDGET_VAR: &str = "GRAPHKIT_RUN_BUDGET_SECS";
/// The default of `--time-budget`: sized so that a run against a slow local model (a
/// small model on one busy core) ends within about ten minutes, its last steps falling
/// back to what was gathered.
pub const DEFAULT_BUDGET_SECS: u64 = 420;

/// The whole number in the environment variable `name`, or `default` when it is unset.
fn env_number(name: &str, default: u64) -> Result<u64, ExampleError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => text.trim().parse().map_err(|_| {
            ExampleError::Usage(format!(
                "{name}={text:?} is not a whole number (seconds for {TIMEOUT_VAR}, {SLOW_VAR} and {BUDGET_VAR}, a count for {RETRIES_VAR})"
            ))
        }),
    }
}

impl std::str::FromStr for ModelChoice {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, ExampleError> {
        match s.trim() {
            "" | "offline" => Ok(Self::Offline),
            spec => Ok(Self::Spec(ModelSpec::parse(spec)?)),
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Offline => f.write_str("offline"),
            Self::Spec(spec) => spec.fmt(f),
        }
    }
}

/// The calls of the models a process built ([`ModelChoice::build`]) and how many failed
/// (the provider's errors once its retries are spent: an HTTP 429, a reply over the size
/// cap, a timeout; not a reply that did not parse). The workflows carry on past a failed
/// call (a todo blocked, a fallback report), so at the end of a run the CLI asks this
/// whether every call failed: such a run is recorded as failed and exits non-zero, naming
/// the last error, instead of looking like a run whose model had nothing to say.
///
/// ```
/// use std::sync::Arc;
/// use graphkit_examples::shared::models::ModelHealth;
/// use graphkit_llm::{ChatModel, Message, ScriptedModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let health = ModelHealth::default();
/// let model = health.watch(Arc::new(ScriptedModel::new(["ok"])));
/// model.invoke(&[Message::user("hi")]).await?;
/// assert!(model.invoke(&[Message::user("again")]).await.is_err()); // the script is spent
/// let counts = health.counts();
/// assert_eq!((counts.calls, counts.failed), (2, 1));
/// assert!(counts.all_failed().is_none());
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Debug, Clone, Default)]
pub struct ModelHealth(Arc<Mutex<HealthCounts>>);

/// What a [`ModelHealth`] counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HealthCounts {
    /// Calls made.
    pub calls: u64,
    /// Calls that failed.
    pub failed: u64,
    /// The last failure's message.
    pub last_error: Option<String>,
}

impl HealthCounts {
    /// The counts since `earlier` (the last error is this one's).
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            calls: self.calls.saturating_sub(earlier.calls),
            failed: self.failed.saturating_sub(earlier.failed),
            last_error: (self.failed > earlier.failed)
                .then(|| self.last_error.clone())
                .flatten(),
        }
    }

    /// `Some(why)` when there were calls and every one failed: `every model call failed
    /// (N of N); the last: ...`.
    pub fn all_failed(&self) -> Option<String> {
        (self.calls > 0 && self.failed == self.calls).then(|| {
            format!(
                "every model call failed ({} of {}); the last: {}",
                self.failed,
                self.calls,
                self.last_error.as_deref().unwrap_or("(no message)")
            )
        })
    }

    /// `Some(what)` when some calls failed: `K of N model calls failed; the last: ...`.
    pub fn some_failed(&self) -> Option<String> {
        (self.failed > 0).then(|| {
            format!(
                "{} of {} model calls failed; the last: {}",
                self.failed,
                self.calls,
                self.last_error.as_deref().unwrap_or("(no message)")
            )
        })
    }
}

impl ModelHealth {
    /// The counts of the models this process built with [`ModelChoice::build`].
    pub fn process() -> &'static Self {
        static PROCESS: OnceLock<ModelHealth> = OnceLock::new();
        PROCESS.get_or_init(Self::default)
    }

    /// `model`, its calls counted here (no budget, no "still waiting" lines: no timers
    /// needed).
    pub fn watch(&self, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        Arc::new(Watched {
            model,
            health: self.clone(),
            budget: None,
        })
    }

    /// `model`, its calls counted here and held to `budget`: once the budget is spent a
    /// call fails at once with [`LlmError::BudgetSpent`] (not sent), a call still waiting
    /// when it runs out is abandoned with that error, and a call waiting longer than
    /// `slow_after` says so on stderr (again every `slow_after`), unless the budget is
    /// quiet. Needs a Tokio runtime with timers (`enable_time`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use graphkit_examples::shared::models::{ModelHealth, RunBudget};
    /// use graphkit_llm::{ChatModel, LlmError, Message, ScriptedModel};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// let budget = RunBudget::default();
    /// budget.start(Some(Duration::ZERO), true); // already spent
    /// let health = ModelHealth::default();
    /// let model = health.watch_within(Arc::new(ScriptedModel::new(["ok"])), budget.clone(), Duration::from_secs(30));
    /// let err = model.invoke(&[Message::user("hi")]).await.unwrap_err();
    /// assert!(matches!(err, LlmError::BudgetSpent { .. }));
    /// assert_eq!(budget.refused(), 1);
    /// assert_eq!(health.counts().failed, 1);
    /// # });
    /// ```
    pub fn watch_within(
        &self,
        model: Arc<dyn ChatModel>,
        budget: RunBudget,
        slow_after: Duration,
    ) -> Arc<dyn ChatModel> {
        Arc::new(Watched {
            model,
            health: self.clone(),
            budget: Some((budget, slow_after)),
        })
    }

    /// What was counted so far.
    pub fn counts(&self) -> HealthCounts {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record<T>(&self, result: &Result<T, LlmError>) {
        let mut counts = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        counts.calls += 1;
        if let Err(err) = result {
            counts.failed += 1;
            counts.last_error = Some(err.to_string());
        }
    }
}

/// The time budget of a run's real model calls (`--time-budget`, [`BUDGET_VAR`]): the
/// CLI starts it when a run starts; models built with [`ModelChoice::build`] stop calling
/// once it is spent (see [`ModelHealth::watch_within`]), so the workflow's remaining steps
/// fall back to what was gathered and the run ends in bounded time. Its counts say how
/// many calls it refused or cut, for the run's summary.
#[derive(Debug, Clone, Default)]
pub struct RunBudget(Arc<Mutex<BudgetState>>);

#[derive(Debug, Default)]
struct BudgetState {
    /// When the budget ends and how long it was; `None`: no budget.
    deadline: Option<(Instant, Duration)>,
    /// No "still waiting" lines.
    quiet: bool,
    /// Calls not sent or abandoned because the budget was spent.
    refused: u64,
}

impl RunBudget {
    /// The budget of the models this process built with [`ModelChoice::build`].
    pub fn process() -> &'static Self {
        static PROCESS: OnceLock<RunBudget> = OnceLock::new();
        PROCESS.get_or_init(Self::default)
    }

    /// Starts the budget now: `limit` from now (`None`: no limit); `quiet` silences the
    /// "still waiting" lines. Resets the count of refused calls.
    pub fn start(&self, limit: Option<Duration>, quiet: bool) {
        let mut state = self.lock();
        state.deadline = limit.map(|limit| (Instant::now() + limit, limit));
        state.quiet = quiet;
        state.refused = 0;
    }

    /// `true` once the budget (if any) has run out.
    pub fn is_spent(&self) -> bool {
        matches!(self.left().0, Some((left, _)) if left.is_zero())
    }

    /// How many calls were not sent or were abandoned because the budget was spent.
    pub fn refused(&self) -> u64 {
        self.lock().refused
    }

    /// `Some(what)` when the budget refused or cut calls: for the run's summary.
    pub fn spent_note(&self) -> Option<String> {
        let state = self.lock();
        let (_, limit) = state.deadline?;
        (state.refused > 0).then(|| {
            format!(
                "the run's time budget of {} s for model calls was spent: {} model call(s) were not made or were cut short, \
                 so the steps after it used what was gathered (raise --time-budget or {BUDGET_VAR} for a fuller run)",
                limit.as_secs(),
                state.refused
            )
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The time left (`None`: no budget) and whether "still waiting" lines are wanted.
    fn left(&self) -> (Option<(Duration, Duration)>, bool) {
        let state = self.lock();
        let left = state
            .deadline
            .map(|(end, limit)| (end.saturating_duration_since(Instant::now()), limit));
        (left, state.quiet)
    }

    fn refuse(&self, model: &str, limit: Duration, during: bool) -> LlmError {
        self.lock().refused += 1;
        let what = if during {
            "ran out while waiting for the reply"
        } else {
            "is spent; the call was not sent"
        };
        LlmError::BudgetSpent {
            reason: format!(
                "{model}: the run's time budget of {} s for model calls {what}; raise --time-budget or {BUDGET_VAR}",
                limit.as_secs()
            ),
        }
    }

    /// Runs `call` within the budget, saying on stderr every `slow_after` that it is
    /// still waiting.
    async fn within<T>(
        &self,
        model: &str,
        slow_after: Duration,
        call: impl std::future::Future<Output = Result<T, LlmError>>,
    ) -> Result<T, LlmError> {
        let (left, quiet) = self.left();
        if let Some((left, limit)) = left
            && left.is_zero()
        {
            return Err(self.refuse(model, limit, false));
        }
        let started = Instant::now();
        let deadline = async {
            match left {
                Some((left, _)) => tokio::time::sleep(left).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(call);
        tokio::pin!(deadline);
        let mut ticks =
            tokio::time::interval_at(tokio::time::Instant::now() + slow_after, slow_after);
        loop {
            tokio::select! {
                result = &mut call => return result,
                () = &mut deadline => {
                    let limit = left.map_or(Duration::ZERO, |(_, limit)| limit);
                    return Err(self.refuse(model, limit, true));
                }
                _ = ticks.tick() => {
                    if !quiet {
                        let budget = match self.left().0 {
                            Some((left, _)) => format!("{} s of the run's budget left", left.as_secs()),
                            None => "no run budget".to_owned(),
                        };
                        eprintln!(
                            "model: still waiting for {model} after {} s ({budget})",
                            started.elapsed().as_secs()
                        );
                    }
                }
            }
        }
    }
}

/// `model`, answering a call the run's time budget refused ([`LlmError::BudgetSpent`])
/// with an empty reply instead of the error: for prebuilt agents (a supervisor, a ReAct
/// worker), whose turn then ends without a tool call, so that the workflow goes on to its
/// fallback and its report instead of failing. Other errors stay errors.
pub(crate) fn empty_when_spent(model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
    Arc::new(EmptyWhenSpent(model))
}

struct EmptyWhenSpent(Arc<dyn ChatModel>);

#[async_trait]
impl ChatModel for EmptyWhenSpent {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage, LlmError> {
        match self.0.chat(request).await {
            Err(LlmError::BudgetSpent { .. }) => Ok(AssistantMessage::text("")),
            other => other,
        }
    }
}

/// A model whose calls a [`ModelHealth`] counts, held to a [`RunBudget`].
struct Watched {
    model: Arc<dyn ChatModel>,
    health: ModelHealth,
    /// The budget and after how long a waiting call says so.
    budget: Option<(RunBudget, Duration)>,
}

#[async_trait]
impl ChatModel for Watched {
    fn model_name(&self) -> &str {
        self.model.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage, LlmError> {
        let call = self.model.chat(request);
        let result = match &self.budget {
            Some((budget, slow_after)) => {
                budget
                    .within(self.model.model_name(), *slow_after, call)
                    .await
            }
            None => call.await,
        };
        self.health.record(&result);
        result
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let call = self.model.chat_stream(request);
        let result = match &self.budget {
            Some((budget, slow_after)) => {
                budget
                    .within(self.model.model_name(), *slow_after, call)
                    .await
            }
            None => call.await,
        };
        self.health.record(&result);
        result
    }
}

/// `--print-prompts`: the requests a run's models were sent, for the workflow's docs. When
/// on, the offline models [`ModelChoice::build`] returns record each request as the JSON
/// body the OpenAI API would get (`openai:gpt-4o`: system and user messages, tools, and the
/// `response_format` with the JSON schema of structured output), one per role: the
/// shortest (fewest messages, then smallest text), so that parallel branches do not change
/// which is kept. A role is told apart by its system message (or, without one, by the
/// first line of its first message).
#[derive(Debug, Clone, Default)]
pub struct PromptLog(Arc<Mutex<Option<Vec<RolePrompt>>>>);

/// One role's request in a [`PromptLog`].
#[derive(Debug, Clone)]
struct RolePrompt {
    role: String,
    messages: usize,
    text: String,
}

impl PromptLog {
    /// The log of this process.
    pub fn process() -> &'static Self {
        static PROCESS: OnceLock<PromptLog> = OnceLock::new();
        PROCESS.get_or_init(Self::default)
    }

    /// Starts recording.
    pub fn turn_on(&self) {
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        log.get_or_insert_with(Vec::new);
    }

    /// `true` while recording.
    pub fn is_on(&self) -> bool {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// `model`, its requests recorded here.
    pub fn watch(self, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        Arc::new(Recorded { model, log: self })
    }

    fn record(&self, request: &ChatRequest) -> Result<(), LlmError> {
        let openai = graphkit_llm::OpenAiModel::new("gpt-4o", "");
        let body = openai.request_body(request, false)?;
        let text = serde_json::to_string_pretty(&body).map_err(|e| {
            LlmError::InvalidRequest(format!("the request cannot be written as JSON: {e}"))
        })?;
        let new = RolePrompt {
            role: role_key(request),
            messages: request.messages.len(),
            text,
        };
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(log) = log.as_mut() else {
            return Ok(());
        };
        match log.iter_mut().find(|p| p.role == new.role) {
            None => log.push(new),
            Some(kept) if (new.messages, &new.text) < (kept.messages, &kept.text) => *kept = new,
            Some(_) => {}
        }
        Ok(())
    }

    /// Each role (in the order first seen) and its request body, pretty-printed JSON.
    pub fn bodies(&self) -> Vec<(String, String)> {
        let log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter()
            .flatten()
            .map(|p| (p.role.clone(), p.text.clone()))
            .collect()
    }
}

/// What tells a request's role apart: its system message, else its first message, first
/// line, at most 100 characters.
fn role_key(request: &ChatRequest) -> String {
    let first = request
        .messages
        .iter()
        .find(|m| matches!(m, graphkit_llm::Message::System(_)))
        .or_else(|| request.messages.first())
        .map(graphkit_llm::Message::text)
        .unwrap_or_default();
    super::truncate(first.lines().next().unwrap_or("").trim(), 100)
}

/// A model whose requests a [`PromptLog`] records.
struct Recorded {
    model: Arc<dyn ChatModel>,
    log: PromptLog,
}

#[async_trait]
impl ChatModel for Recorded {
    fn model_name(&self) -> &str {
        self.model.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage, LlmError> {
        self.log.record(&request)?;
        self.model.chat(request).await
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        self.log.record(&request)?;
        self.model.chat_stream(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphkit_llm::Message;

    /// A model that never answers (a server that hangs).
    struct Hanging;

    #[async_trait]
    impl ChatModel for Hanging {
        fn model_name(&self) -> &str {
            "hanging"
        }

        async fn chat(&self, _request: ChatRequest) -> Result<AssistantMessage, LlmError> {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_call_still_waiting_when_the_budget_runs_out_is_abandoned_and_counted() {
        let budget = RunBudget::default();
        budget.start(Some(Duration::from_millis(20)), true);
        let health = ModelHealth::default();
        let model = health.watch_within(Arc::new(Hanging), budget.clone(), Duration::from_secs(30));
        let err = model
            .invoke(&[Message::user("hi")])
            .await
            .expect_err("the budget ends the call");
        assert!(
            matches!(&err, LlmError::BudgetSpent { reason } if reason.contains("ran out while waiting")),
            "{err}"
        );
        assert_eq!(budget.refused(), 1);
        assert_eq!(health.counts().failed, 1);
        let note = budget.spent_note().expect("a note");
        assert!(
            note.contains("1 model call(s)") && note.contains("--time-budget"),
            "{note}"
        );
        // Spent: the next call is not sent at all.
        let err = model
            .invoke(&[Message::user("again")])
            .await
            .expect_err("spent");
        assert!(err.to_string().contains("the call was not sent"), "{err}");
        assert_eq!(budget.refused(), 2);
    }

    #[tokio::test]
    async fn without_a_budget_nothing_is_refused_and_no_note_is_written() {
        let budget = RunBudget::default();
        budget.start(None, true);
        let model = ModelHealth::default().watch_within(
            Arc::new(graphkit_llm::ScriptedModel::new(["ok"])),
            budget.clone(),
            Duration::from_secs(30),
        );
        let reply = model.invoke(&[Message::user("hi")]).await.expect("a reply");
        assert_eq!(reply.content, "ok");
        assert_eq!(budget.refused(), 0);
        assert!(budget.spent_note().is_none());
    }
}
