//! Per-run configuration and per-node retry policies.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::context::run_context::ContextValues;
use crate::error::{BoxError, Error};

/// When a run with a checkpointer writes its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Each step's checkpoint is saved before the next step starts, and the writes of
    /// parallel tasks are saved as each task finishes. A crash loses at most the step in
    /// progress (minus its finished tasks).
    #[default]
    Sync,
    /// Checkpoints are saved in order by a background writer while the next step runs;
    /// the run waits for them before it returns. A crash may lose the last few steps.
    Async,
    /// One checkpoint when the run stops (finished, paused, or failed, with the failed
    /// step's finished tasks as pending writes). Fastest; a crash loses the whole run.
    Exit,
}

/// The default bound on super-steps per run (LangGraph's current default).
pub const DEFAULT_RECURSION_LIMIT: usize = 10_007;

/// Options for one run: limits, cancellation, thread, and user values.
///
/// ```
/// use graphkit::RunConfig;
///
/// let config = RunConfig::new()
///     .recursion_limit(50)
///     .max_concurrency(4)
///     .with_value("user", "ada");
/// assert_eq!(config.recursion_limit, 50);
/// assert_eq!(config.value("user").and_then(|v| v.as_str()), Some("ada"));
/// ```
#[derive(Clone)]
pub struct RunConfig {
    /// The most super-steps a run may take (set with [`recursion_limit`](Self::recursion_limit)).
    pub recursion_limit: usize,
    /// How many tasks of a step run at once, if bounded (set with
    /// [`max_concurrency`](Self::max_concurrency)).
    pub max_concurrency: Option<usize>,
    pub(crate) cancel: CancellationToken,
    /// The thread the run's checkpoints belong to (set with [`thread_id`](Self::thread_id)).
    pub thread_id: Option<String>,
    /// The checkpoint to start from, if not the thread's newest (set with
    /// [`checkpoint_id`](Self::checkpoint_id)).
    pub checkpoint_id: Option<String>,
    pub(crate) subgraphs: bool,
    pub(crate) values: Map<String, Value>,
    pub(crate) interrupt_before: Vec<Arc<str>>,
    pub(crate) interrupt_after: Vec<Arc<str>>,
    pub(crate) durability: Durability,
    pub(crate) context: ContextValues,
    pub(crate) checkpoint_metadata: Map<String, Value>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            max_concurrency: None,
            cancel: CancellationToken::new(),
            thread_id: None,
            checkpoint_id: None,
            subgraphs: false,
            values: Map::new(),
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            durability: Durability::Sync,
            context: ContextValues::default(),
            checkpoint_metadata: Map::new(),
        }
    }
}

impl fmt::Debug for RunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunConfig")
            .field("recursion_limit", &self.recursion_limit)
            .field("max_concurrency", &self.max_concurrency)
            .field("cancelled", &self.cancel.is_cancelled())
            .field("thread_id", &self.thread_id)
            .field("checkpoint_id", &self.checkpoint_id)
            .field("subgraphs", &self.subgraphs)
            .field("values", &self.values)
            .field("interrupt_before", &self.interrupt_before)
            .field("interrupt_after", &self.interrupt_after)
            .field("durability", &self.durability)
            .field("context", &self.context)
            .field("checkpoint_metadata", &self.checkpoint_metadata)
            .finish()
    }
}

impl RunConfig {
    /// The defaults: recursion limit [`DEFAULT_RECURSION_LIMIT`], unbounded concurrency.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds the number of super-steps one run (one `invoke` or `stream`, a resume
    /// included) may take; it must be at least 1, and a run with 0 fails with
    /// [`Error::InvalidRunConfig`](crate::Error::InvalidRunConfig).
    ///
    /// The budget counts the steps of this run only: a resumed thread gets the whole limit
    /// again, counted from the step it resumes (as in LangGraph).
    #[must_use]
    pub fn recursion_limit(mut self, limit: usize) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Runs at most `n` tasks of a super-step at once; it must be at least 1, and a run
    /// with 0 fails with [`Error::InvalidRunConfig`](crate::Error::InvalidRunConfig).
    #[must_use]
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = Some(n);
        self
    }

    /// Refuses settings no run can honour.
    pub(crate) fn validate(&self) -> Result<(), crate::error::Error> {
        let invalid = |message: &str| Err(crate::error::Error::InvalidRunConfig(message.into()));
        if self.recursion_limit == 0 {
            return invalid(
                "recursion_limit(0) allows no super-step; give it at least 1 (the default is DEFAULT_RECURSION_LIMIT)",
            );
        }
        if self.max_concurrency == Some(0) {
            return invalid("max_concurrency(0) would run no task; give it at least 1");
        }
        Ok(())
    }

    /// Cancels the run when `token` is cancelled.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// The conversation thread this run belongs to (needed with a checkpointer).
    #[must_use]
    pub fn thread_id(mut self, id: impl Into<String>) -> Self {
        self.thread_id = Some(id.into());
        self
    }

    /// Runs from this checkpoint of the thread instead of the latest (a fork).
    #[must_use]
    pub fn checkpoint_id(mut self, id: impl Into<String>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// Also streams the events of subgraphs (with their namespace).
    #[must_use]
    pub fn subgraphs(mut self, on: bool) -> Self {
        self.subgraphs = on;
        self
    }

    /// When checkpoints are written (see [`Durability`]; `Sync` by default).
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Pauses this run before these nodes (in addition to the graph's own list).
    #[must_use]
    pub fn interrupt_before<I: IntoIterator<Item = T>, T: Into<Arc<str>>>(
        mut self,
        nodes: I,
    ) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Pauses this run after these nodes (in addition to the graph's own list).
    #[must_use]
    pub fn interrupt_after<I: IntoIterator<Item = T>, T: Into<Arc<str>>>(
        mut self,
        nodes: I,
    ) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Adds a user value that nodes can read with [`RunConfig::value`].
    #[must_use]
    pub fn with_value(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.values.insert(key.into(), value.into());
        self
    }

    /// Gives the run a context value of type `C`: the graph's context type
    /// (`StateGraph<S, C>`), or a part of it, which nodes read with the
    /// [`RunContext`](crate::RunContext) argument; any type for run-time lookups
    /// ([`NodeContext::context`](crate::NodeContext::context), tools through their
    /// runtime). One value per type (a second replaces the first); it wins over the graph's
    /// value of that type ([`CompiledGraph::with_context`](crate::CompiledGraph::with_context)),
    /// and a part given here wins over what the graph's context provides for it; subgraphs
    /// see their parent run's values. LangGraph's `context=`.
    #[must_use]
    pub fn with_context<C: std::marker::Send + Sync + 'static>(mut self, value: C) -> Self {
        self.context.insert(Arc::new(value));
        self
    }

    /// [`with_context`](Self::with_context) with a value already shared; `C` may be a trait
    /// object (`with_shared_context::<dyn ChatModel>(model)`).
    #[must_use]
    pub fn with_shared_context<C: ?Sized + std::marker::Send + Sync + 'static>(
        mut self,
        value: Arc<C>,
    ) -> Self {
        self.context.insert(value);
        self
    }

    /// The run's context value of type `C`, if it was given one.
    pub fn context<C: ?Sized + std::marker::Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        self.context.get::<C>()
    }

    /// Adds a key to the metadata of every checkpoint this run saves (LangGraph's run
    /// `metadata`). A `run_id` here replaces the id graphkit records, so a host can find
    /// the checkpoints of its own runs (for example to roll one back).
    ///
    /// ```
    /// use graphkit::RunConfig;
    ///
    /// let config = RunConfig::new().with_checkpoint_metadata("run_id", "run-7");
    /// assert_eq!(config.checkpoint_metadata()["run_id"], "run-7");
    /// ```
    #[must_use]
    pub fn with_checkpoint_metadata(
        mut self,
        key: impl Into<String>,
        value: impl Into<Value>,
    ) -> Self {
        self.checkpoint_metadata.insert(key.into(), value.into());
        self
    }

    /// The extra checkpoint metadata (see [`with_checkpoint_metadata`](Self::with_checkpoint_metadata)).
    pub fn checkpoint_metadata(&self) -> &Map<String, Value> {
        &self.checkpoint_metadata
    }

    /// A user value.
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.values.get(key)
    }

    /// The run's cancellation token.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }
}

/// Decides whether a failed attempt is retried.
pub type RetryPredicate = Arc<dyn Fn(&BoxError) -> bool + Send + Sync>;

/// How a node is retried when it fails: attempts, exponential backoff, jitter, and which
/// errors count.
///
/// ```
/// use std::time::Duration;
/// use graphkit::RetryPolicy;
///
/// let policy = RetryPolicy::new(3).initial_interval(Duration::from_millis(10)).jitter(false);
/// assert_eq!(policy.delay_before(2), Duration::from_millis(10));
/// assert_eq!(policy.delay_before(3), Duration::from_millis(20));
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    initial_interval: Duration,
    backoff_factor: f64,
    max_interval: Duration,
    jitter: bool,
    retry_on: Option<RetryPredicate>,
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_interval", &self.initial_interval)
            .field("backoff_factor", &self.backoff_factor)
            .field("max_interval", &self.max_interval)
            .field("jitter", &self.jitter)
            .field("retry_on", &self.retry_on.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::new(3)
    }
}

impl RetryPolicy {
    /// Up to `max_attempts` runs in all (at least 1), starting 0.5 s apart and doubling up
    /// to 128 s, with jitter, retrying every error but graphkit's deterministic ones
    /// ([`retries_by_default`](Self::retries_by_default)).
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_interval: Duration::from_millis(500),
            backoff_factor: 2.0,
            max_interval: Duration::from_secs(128),
            jitter: true,
            retry_on: None,
        }
    }

    /// The wait before the second attempt.
    #[must_use]
    pub fn initial_interval(mut self, interval: Duration) -> Self {
        self.initial_interval = interval;
        self
    }

    /// The factor by which the wait grows after each attempt.
    #[must_use]
    pub fn backoff_factor(mut self, factor: f64) -> Self {
        self.backoff_factor = factor.max(1.0);
        self
    }

    /// The longest wait.
    #[must_use]
    pub fn max_interval(mut self, interval: Duration) -> Self {
        self.max_interval = interval;
        self
    }

    /// Adds up to 100% random extra wait, so retries from many tasks spread out.
    #[must_use]
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// Retries only errors for which `predicate` is true.
    #[must_use]
    pub fn retry_on(
        mut self,
        predicate: impl Fn(&BoxError) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_on = Some(Arc::new(predicate));
        self
    }

    /// How many attempts in all.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// `true` if `error` may be retried: by the predicate given to
    /// [`retry_on`](Self::retry_on), else by [`retries_by_default`](Self::retries_by_default).
    pub fn should_retry(&self, error: &BoxError) -> bool {
        match &self.retry_on {
            Some(predicate) => predicate(error),
            None => Self::retries_by_default(error),
        }
    }

    /// The rule a policy without [`retry_on`](Self::retry_on) follows: every error is retried
    /// except graphkit's own errors that would fail the same way again (a missing context or
    /// checkpointer, a bad update, input or store key, an unknown target, a panic, an
    /// overflow...). Graphkit's errors that can pass (a storage backend, a busy thread, a
    /// timeout) are retried, and so is any error of another type: graphkit cannot tell a
    /// transient one from a bug there. A predicate can build on it:
    ///
    /// ```
    /// use graphkit::{Error, RetryPolicy};
    /// use graphkit::error::BoxError;
    ///
    /// let policy = RetryPolicy::new(3).retry_on(|e: &BoxError| {
    ///     !e.to_string().contains("HTTP 400") && RetryPolicy::retries_by_default(e)
    /// });
    /// let missing: BoxError = Box::new(Error::MissingThreadId);
    /// assert!(!policy.should_retry(&missing));
    /// ```
    pub fn retries_by_default(error: &BoxError) -> bool {
        match error.downcast_ref::<Error>() {
            Some(error) => error.may_pass(),
            None => true,
        }
    }

    /// The wait before attempt number `attempt` (2 for the first retry), without jitter.
    /// Never above `max_interval`; intervals up to `Duration::MAX` work (no overflow).
    pub fn delay_before(&self, attempt: u32) -> Duration {
        let exponent = attempt.saturating_sub(2).min(64) as i32;
        let secs = self.initial_interval.as_secs_f64() * self.backoff_factor.powi(exponent);
        // f64 seconds round: near Duration::MAX the product may not convert back.
        Duration::try_from_secs_f64(secs.min(self.max_interval.as_secs_f64()))
            .map_or(self.max_interval, |d| d.min(self.max_interval))
    }

    pub(crate) fn jittered_delay(&self, attempt: u32) -> Duration {
        let base = self.delay_before(attempt);
        if self.jitter {
            let secs = base.as_secs_f64() * (1.0 + rand::random::<f64>());
            Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
        } else {
            base
        }
    }
}

#[cfg(test)]
mod retry_tests {
    use super::*;

    #[test]
    fn jitter_on_a_delay_near_duration_max_saturates() {
        let policy = RetryPolicy::new(3)
            .initial_interval(Duration::MAX)
            .max_interval(Duration::MAX);
        for attempt in 2..6 {
            assert!(policy.jittered_delay(attempt) >= Duration::from_secs(1 << 62));
        }
    }
}
