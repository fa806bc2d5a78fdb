//! Durable storage for the server: the [`Backend`] trait and its records.
//!
//! A backend keeps everything the API and the workers share: assistants, threads, the run
//! table (which is also the queue), the events of each run (with a per-run sequence number
//! that is the SSE `id`), and the graphkit checkpointer and store the graphs run on. Every
//! server process talking to the same backend sees the same threads and runs; workers in
//! any of them claim runs from the queue.
//!
//! Two implementations: [`SqliteBackend`] (embedded, one file, one process; wake-ups go
//! through an in-process [`Notifier`]) and, behind the `postgres` feature, a PostgreSQL
//! backend for several processes (LISTEN/NOTIFY for wake-ups).
//!
//! Followers of a run's stream ([`Backend::follow_run`]) replay the stored events, then
//! get each new one from memory as it is stored: one in-process [`EventFeeds`] entry per
//! followed run, filled by the backend as it writes (and, across PostgreSQL processes, by
//! one read per process per notification), not one database read per follower per event.
//!
//! The rules a backend enforces (the API and the workers rely on them):
//! - at most one run per thread is `running` at a time; [`Backend::claim_run`] takes the
//!   oldest due `pending` run of a thread that has none running;
//! - [`Backend::create_run`] applies the multitask strategy atomically with the insert
//!   (`reject` refuses while a run is in flight; `interrupt`/`rollback` flag the in-flight
//!   runs for cancellation);
//! - event sequence numbers increase strictly per run, and an event is readable before the
//!   run's terminal status is;
//! - **fencing**: each claim hands out a fresh lease token ([`RunRecord::lease_token`]).
//!   Every write a worker makes for a run (its events, heartbeats, its end or release, and
//!   the checkpoints of its graph through [`Backend::fenced_checkpointer`]) names the token
//!   and is checked by the database in the write's own statement or transaction: once the
//!   run was swept and claimed again, cancelled to its end, or deleted, the old holder's
//!   writes are refused ([`ServerError::LeaseLost`](crate::ServerError::LeaseLost),
//!   [`StorageError::Fenced`](graphkit::error::StorageError::Fenced)), however late it
//!   wakes up.

mod feed;
mod notify;
#[cfg(feature = "postgres")]
pub mod postgres;
mod schedule;
pub mod sqlite;
mod storage;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use graphkit::checkpoint::Checkpointer;
use graphkit::store::Store;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::Result;
use crate::time::Timestamp;

pub use feed::{EventFeeds, Followed, RunFollower};
pub use notify::{Notifier, Wakeup};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresBackend, PostgresOptions};
pub use schedule::{CRON_SORT_COLUMNS, CronQuery, CronRecord, CronRun, FiredCron};
pub(crate) use schedule::{expiry, namespace_key, namespace_of};
pub use sqlite::SqliteBackend;
pub use storage::{ChannelTally, ChannelValues, StoredCheckpoint, Tally, ThreadStorage};

/// An assistant: a graph with a configuration, at its current version. The server registers
/// one system assistant per graph (id [`crate::ids::system_assistant_id`]); clients create
/// more (`POST /assistants`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistantRecord {
    /// Its id.
    pub assistant_id: Uuid,
    /// The graph it runs.
    pub graph_id: String,
    /// Its run configuration (`{"configurable": {...}}`).
    pub config: Value,
    /// Its static context.
    pub context: Value,
    /// Free-form metadata (`{"created_by": "system"}` for system assistants).
    pub metadata: Map<String, Value>,
    /// Its name (the graph id for system assistants).
    pub name: String,
    /// A description, if any.
    pub description: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
    /// Its current version (1 when created; each update makes a new one).
    pub version: i64,
}

/// One version of an assistant, as `POST /assistants/{id}/versions` lists it: what the
/// assistant was at that version. Every create, update and system registration records one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssistantVersion {
    /// The assistant.
    pub assistant_id: Uuid,
    /// The version (1, 2, 3, ... per assistant).
    pub version: i64,
    /// The graph it runs at this version.
    pub graph_id: String,
    /// Its run configuration at this version.
    pub config: Value,
    /// Its static context at this version.
    pub context: Value,
    /// Its metadata at this version.
    pub metadata: Map<String, Value>,
    /// Its name at this version.
    pub name: String,
    /// Its description at this version.
    pub description: Option<String>,
    /// When this version was made.
    pub created_at: Timestamp,
}

impl AssistantVersion {
    /// The version `assistant` is at.
    pub fn of(assistant: &AssistantRecord) -> Self {
        Self {
            assistant_id: assistant.assistant_id,
            version: assistant.version,
            graph_id: assistant.graph_id.clone(),
            config: assistant.config.clone(),
            context: assistant.context.clone(),
            metadata: assistant.metadata.clone(),
            name: assistant.name.clone(),
            description: assistant.description.clone(),
            created_at: assistant.updated_at,
        }
    }

    /// `assistant` set back to this version (its id and creation time kept), changed `now`.
    pub fn restore(&self, assistant: &AssistantRecord, now: Timestamp) -> AssistantRecord {
        AssistantRecord {
            assistant_id: assistant.assistant_id,
            graph_id: self.graph_id.clone(),
            config: self.config.clone(),
            context: self.context.clone(),
            metadata: self.metadata.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            created_at: assistant.created_at,
            updated_at: now,
            version: self.version,
        }
    }
}

/// What an assistant update changes (`PATCH /assistants/{id}`); `None` keeps the current
/// value. The update makes a new version.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantPatch {
    /// A new graph (the API checks that it is served).
    pub graph_id: Option<String>,
    /// A new configuration, replacing the current one whole.
    pub config: Option<Value>,
    /// A new context, replacing the current one whole.
    pub context: Option<Value>,
    /// Metadata merged into the current metadata (keys replaced at the top level).
    pub metadata: Option<Map<String, Value>>,
    /// A new name.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
}

impl AssistantPatch {
    /// `current` with this patch applied, as `version`, changed `now`.
    pub fn apply(
        &self,
        current: &AssistantRecord,
        version: i64,
        now: Timestamp,
    ) -> AssistantRecord {
        let mut metadata = current.metadata.clone();
        if let Some(added) = &self.metadata {
            metadata.extend(added.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        AssistantRecord {
            assistant_id: current.assistant_id,
            graph_id: self
                .graph_id
                .clone()
                .unwrap_or_else(|| current.graph_id.clone()),
            config: self
                .config
                .clone()
                .unwrap_or_else(|| current.config.clone()),
            context: self
                .context
                .clone()
                .unwrap_or_else(|| current.context.clone()),
            metadata,
            name: self.name.clone().unwrap_or_else(|| current.name.clone()),
            description: self
                .description
                .clone()
                .or_else(|| current.description.clone()),
            created_at: current.created_at,
            updated_at: now,
            version,
        }
    }
}

/// Filters for [`Backend::assistant_versions`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VersionQuery {
    /// Metadata the version's metadata must contain (JSON containment).
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: usize,
}

/// The `NotFound` for a version an assistant does not have.
pub(crate) fn no_such_version(assistant_id: Uuid, version: i64) -> crate::ServerError {
    crate::ServerError::NotFound(format!(
        "Assistant {assistant_id} has no version {version}; list its versions with POST /assistants/{assistant_id}/versions"
    ))
}

/// Filters for [`Backend::search_assistants`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantQuery {
    /// Metadata the assistant's metadata must contain (JSON containment).
    pub metadata: Option<Map<String, Value>>,
    /// Only this graph.
    pub graph_id: Option<String>,
    /// Only this name.
    pub name: Option<String>,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: usize,
}

/// A run's status and why it was cancelled or failed ([`Backend::run_status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEnding {
    /// Its status.
    pub status: RunStatus,
    /// Why it was cancelled or failed, if it was.
    pub cancel_reason: Option<String>,
}

/// A thread's status as the API shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum ThreadStatus {
    /// No run in flight; the last one finished (or none ran).
    Idle,
    /// A run is pending or running.
    Busy,
    /// The last run paused on an interrupt.
    Interrupted,
    /// The last run failed.
    Error,
}

impl ThreadStatus {
    /// The API name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Busy => "busy",
            Self::Interrupted => "interrupted",
            Self::Error => "error",
        }
    }

    /// Parses the API name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "idle" => Self::Idle,
            "busy" => Self::Busy,
            "interrupted" => Self::Interrupted,
            "error" => Self::Error,
            _ => return None,
        })
    }
}

/// A thread row. `status` is [`ThreadStatus::Busy`] whenever one of its runs is pending or
/// running (the backend derives it), else the status the last run left.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadRecord {
    /// Its id.
    pub thread_id: Uuid,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its row last changed.
    pub updated_at: Timestamp,
    /// When its state last changed (a run ended or `update_state`).
    pub state_updated_at: Timestamp,
    /// Free-form metadata (`graph_id` and `assistant_id` once a run used it).
    pub metadata: Map<String, Value>,
    /// Its status.
    pub status: ThreadStatus,
    /// The config of its last run.
    pub config: Value,
    /// The state values after its last run (or `null`).
    pub values: Value,
    /// The pending interrupts, `{task_id: [{id, value}]}`.
    pub interrupts: Value,
    /// The last run's error, if it failed.
    pub error: Value,
}

/// What to do when a thread to create already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IfExists {
    /// Fail with 409 (the default).
    #[default]
    Raise,
    /// Return the existing thread.
    DoNothing,
}

/// A thread to create.
#[derive(Debug, Clone, PartialEq)]
pub struct NewThread {
    /// Its id (minted by the caller; clients may choose it).
    pub thread_id: Uuid,
    /// Its metadata.
    pub metadata: Map<String, Value>,
    /// What to do if the id is taken.
    pub if_exists: IfExists,
}

/// The columns threads can be sorted by (`sort_by` of a thread search).
pub const THREAD_SORT_COLUMNS: &[&str] = &[
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "status",
];

/// Filters for [`Backend::search_threads`] and [`Backend::count_threads`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThreadQuery {
    /// Metadata the thread's metadata must contain (JSON containment).
    pub metadata: Option<Map<String, Value>>,
    /// Values the thread's values must contain (JSON containment).
    pub values: Option<Map<String, Value>>,
    /// Only these ids.
    pub ids: Option<Vec<Uuid>>,
    /// Only this status.
    pub status: Option<ThreadStatus>,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: usize,
    /// Order by this column, one of [`THREAD_SORT_COLUMNS`] (default `created_at`); another
    /// is a [`ServerError::Validation`](crate::ServerError::Validation) on every backend.
    pub sort_by: Option<String>,
    /// Ascending instead of the default descending order.
    pub ascending: bool,
}

/// What a finished run leaves on its thread.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadOutcome {
    /// The status when no other run is in flight: idle, interrupted or error.
    pub status: ThreadStatus,
    /// The state values (JSON).
    pub values: Value,
    /// The pending interrupts, `{task_id: [{id, value}]}`.
    pub interrupts: Value,
    /// The error, if the run failed.
    pub error: Value,
}

impl ThreadOutcome {
    /// The outcome of a run that failed with `error` and left no state to read: the
    /// status is error, the values null, no interrupts.
    pub fn failed(error: Value) -> Self {
        Self {
            status: ThreadStatus::Error,
            values: Value::Null,
            interrupts: Value::Object(Map::new()),
            error,
        }
    }
}

/// Why the sweeper ended a run whose every attempt lost its worker: the run's
/// `cancel_reason`, and the error (as a worker's failure is shaped) that goes to the
/// thread and, as an `error` event, to the run's stream. Both backends say the same.
pub(crate) fn attempts_exceeded(run_id: impl std::fmt::Display, attempts: i64) -> (String, Value) {
    let message = format!("Run {run_id} exceeded max attempts ({attempts})");
    let error = serde_json::json!({"error": "RunAttemptsExceeded", "message": message});
    (message, error)
}

/// `(status, count)` rows as a backend's `GROUP BY status` gives them, in status order; a
/// status this build does not know is left out.
pub(crate) fn counts_by_status(rows: Vec<(String, i64)>) -> Vec<(RunStatus, u64)> {
    let mut counts: Vec<(RunStatus, u64)> = rows
        .into_iter()
        .filter_map(|(status, n)| Some((RunStatus::parse(&status)?, u64::try_from(n).ok()?)))
        .collect();
    counts.sort_by_key(|(status, _)| status.as_str());
    counts
}

/// A run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Queued.
    Pending,
    /// A worker holds it.
    Running,
    /// Finished (also when it paused on an interrupt).
    Success,
    /// Failed.
    Error,
    /// Timed out.
    Timeout,
    /// Cancelled.
    Interrupted,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [Self; 6] = [
        Self::Pending,
        Self::Running,
        Self::Success,
        Self::Error,
        Self::Timeout,
        Self::Interrupted,
    ];

    /// The API name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Success => "success",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Interrupted => "interrupted",
        }
    }

    /// Parses the API name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => Self::Pending,
            "running" => Self::Running,
            "success" => Self::Success,
            "error" => Self::Error,
            "timeout" => Self::Timeout,
            "interrupted" => Self::Interrupted,
            _ => return None,
        })
    }

    /// `true` once the run can no longer change.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }
}

/// How a new run treats runs already in flight on its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, Hash)]
#[serde(rename_all = "lowercase")]
pub enum MultitaskStrategy {
    /// Refuse the new run (409) while another is in flight.
    Reject,
    /// Cancel the in-flight runs (their checkpoints stay), then run.
    Interrupt,
    /// Cancel the in-flight runs and delete them with their checkpoints, then run.
    Rollback,
    /// Queue behind the in-flight runs (the server default).
    #[default]
    Enqueue,
}

impl MultitaskStrategy {
    /// The API name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
            Self::Enqueue => "enqueue",
        }
    }

    /// Parses the API name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "reject" => Self::Reject,
            "interrupt" => Self::Interrupt,
            "rollback" => Self::Rollback,
            "enqueue" => Self::Enqueue,
            _ => return None,
        })
    }

    /// What this strategy does to the runs in flight on the thread: `None` leaves them be
    /// (`reject` refuses instead, `enqueue` waits behind them).
    pub fn cancel_action(self) -> Option<CancelAction> {
        match self {
            Self::Interrupt => Some(CancelAction::Interrupt),
            Self::Rollback => Some(CancelAction::Rollback),
            Self::Reject | Self::Enqueue => None,
        }
    }
}

/// What a cancel does to a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, Hash)]
#[serde(rename_all = "lowercase")]
pub enum CancelAction {
    /// Stop it; the steps it finished stay. It ends `interrupted`.
    #[default]
    Interrupt,
    /// Stop it and delete it with the checkpoints it wrote.
    Rollback,
}

impl CancelAction {
    /// The API name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
        }
    }

    /// Parses the API name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "interrupt" => Self::Interrupt,
            "rollback" => Self::Rollback,
            _ => return None,
        })
    }
}

/// A run row: what the API returns and what the queue works on.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    /// Its id.
    pub run_id: Uuid,
    /// Its thread (stateless runs get a temporary one).
    pub thread_id: Uuid,
    /// The assistant it runs.
    pub assistant_id: Uuid,
    /// When it was created (a delayed run becomes due later: `NewRun::not_before`).
    pub created_at: Timestamp,
    /// When its row last changed.
    pub updated_at: Timestamp,
    /// Its status.
    pub status: RunStatus,
    /// Free-form metadata.
    pub metadata: Map<String, Value>,
    /// The creation request as the worker needs it (input, command, stream modes, config,
    /// interrupts, checkpoint, on_completion, ...): opaque to the backend.
    pub kwargs: Value,
    /// Its multitask strategy.
    pub multitask_strategy: MultitaskStrategy,
    /// How many times a worker has claimed it (0 while first pending).
    pub attempt: u32,
    /// The worker holding it, while running.
    pub worker_id: Option<String>,
    /// Until when the worker's lease holds.
    pub lease_until: Option<Timestamp>,
    /// The token of the current claim, while running: every write of the worker holding
    /// the run names it, and the database refuses the write once the token is no longer
    /// the run's (swept and claimed again, ended, deleted).
    pub lease_token: Option<Uuid>,
    /// A cancel asked for while it runs.
    pub cancel_requested: Option<CancelAction>,
    /// Why it ended `interrupted` or `error`, if it did.
    pub cancel_reason: Option<String>,
}

/// A run as the API shows it (`GET /threads/{id}/runs/{id}`, the `Run` of the SDKs; the
/// fields `select` may name are the API's `RUN_FIELDS`). Here, below both the API and the
/// worker, because a run's webhook sends the same JSON.
pub(crate) fn run_json(run: &RunRecord) -> Value {
    serde_json::json!({
        "run_id": run.run_id,
        "thread_id": run.thread_id,
        "assistant_id": run.assistant_id,
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "status": run.status.as_str(),
        "metadata": run.metadata,
        "kwargs": run.kwargs,
        "multitask_strategy": run.multitask_strategy.as_str(),
        "attempt": run.attempt,
        "worker_id": run.worker_id,
        "cancel_reason": run.cancel_reason,
    })
}

/// A run to insert.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// Its id (uuid7).
    pub run_id: Uuid,
    /// Its thread.
    pub thread_id: Uuid,
    /// The assistant it runs.
    pub assistant_id: Uuid,
    /// Metadata.
    pub metadata: Map<String, Value>,
    /// The creation request, as the worker reads it back.
    pub kwargs: Value,
    /// The multitask strategy to apply against runs in flight on the thread.
    pub multitask_strategy: MultitaskStrategy,
    /// Create the thread (with this metadata) if it does not exist; `None`: it must exist.
    pub create_thread: Option<Map<String, Value>>,
    /// Metadata merged into the thread's metadata (`graph_id`, `assistant_id`).
    pub thread_metadata: Map<String, Value>,
    /// When the run becomes due (`after_seconds`); `None`: now. The queue takes due runs in
    /// due-time order; the run's `created_at` stays its creation time.
    pub not_before: Option<Timestamp>,
}

/// What [`Backend::create_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedRun {
    /// The inserted run.
    pub run: RunRecord,
    /// Runs of the thread that the strategy cancelled (interrupt/rollback), whose workers
    /// were told.
    pub cancelled: Vec<Uuid>,
}

/// Filters for [`Backend::list_runs`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunQuery {
    /// Only this status.
    pub status: Option<RunStatus>,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: usize,
}

/// How a worker ends a run it holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// It finished (or paused on an interrupt).
    Success,
    /// It failed with this message.
    Error(String),
    /// It was cancelled (interrupt), with the reason.
    Interrupted(String),
    /// It was rolled back: delete the run (the worker already deleted its checkpoints).
    RolledBack,
}

impl RunEnd {
    /// The status the run ends in and the reason recorded with it; `None` when the run is
    /// deleted instead ([`RunEnd::RolledBack`]).
    pub fn recorded(&self) -> Option<(RunStatus, Option<&str>)> {
        match self {
            Self::Success => Some((RunStatus::Success, None)),
            Self::Error(message) => Some((RunStatus::Error, Some(message))),
            Self::Interrupted(reason) => Some((RunStatus::Interrupted, Some(reason))),
            Self::RolledBack => None,
        }
    }
}

/// What a heartbeat learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// The worker still holds the run; a cancel may have been asked for.
    Held {
        /// The cancel asked for, if any.
        cancel: Option<CancelAction>,
    },
    /// The run is no longer this worker's (swept, deleted): stop working on it.
    Lost,
}

/// What [`Backend::request_cancel`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The run was pending: it is now `interrupted` (or deleted, for rollback).
    CancelledPending,
    /// The run is running: its worker was told and will stop it.
    Requested,
    /// The run had already ended; nothing changed.
    AlreadyDone,
}

/// One event of a run's stream, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvent {
    /// Its sequence number within the run (strictly increasing from 1): the SSE `id`.
    pub seq: i64,
    /// The SSE event name (`metadata`, `values`, `updates|ns`, ...).
    pub event: String,
    /// The SSE data: one line of compact JSON.
    pub data: String,
}

/// The server's durable storage. See the [module docs](self) for the rules it enforces.
///
/// Wake-ups: [`Backend::watch_run`] resolves its [`Wakeup`] whenever the run gets a new
/// event, changes status or is asked to cancel; [`Backend::watch_queue`] whenever a run
/// may have become claimable. A waiter subscribes first, then reads, then waits, so no
/// change is missed; waiters also re-read on a timer, so a lost notification only delays.
#[async_trait]
pub trait Backend: Send + Sync + std::fmt::Debug + 'static {
    /// The checkpointer the server's graphs run on.
    fn checkpointer(&self) -> Arc<dyn Checkpointer>;
    /// The store the server's graphs (and the `/store` endpoints) use.
    fn store(&self) -> Arc<dyn Store>;
    /// The checkpointer a worker runs the graph of run `run_id` on while its claim `token`
    /// holds it: every checkpoint, pending write or deletion checks the token in its own
    /// transaction and is refused with
    /// [`StorageError::Fenced`](graphkit::error::StorageError::Fenced) once the token is no
    /// longer the run's. The run's lease stands in for the thread lock (taking the thread
    /// only checks the token), so a worker that stalled while holding the thread never
    /// keeps the run's next attempt out.
    fn fenced_checkpointer(&self, run_id: Uuid, token: Uuid) -> Arc<dyn Checkpointer>;

    // --- assistants ---

    /// Creates an assistant at its version, recording that version. When the id is taken,
    /// [`IfExists::Raise`] is a `Conflict` and [`IfExists::DoNothing`] returns the existing
    /// assistant unchanged (the server registers its system assistants so).
    async fn create_assistant(
        &self,
        assistant: &AssistantRecord,
        if_exists: IfExists,
    ) -> Result<AssistantRecord>;
    /// Applies `patch` as a new version (one above the highest recorded), which becomes the
    /// assistant's current one; `None` if it does not exist. Concurrent updates each get a
    /// version of their own.
    async fn update_assistant(
        &self,
        assistant_id: Uuid,
        patch: &AssistantPatch,
    ) -> Result<Option<AssistantRecord>>;
    /// Makes a recorded version the assistant's current one; `None` if the assistant does
    /// not exist, `NotFound` if it has no such version.
    async fn set_assistant_version(
        &self,
        assistant_id: Uuid,
        version: i64,
    ) -> Result<Option<AssistantRecord>>;
    /// Deletes an assistant with its versions (not its threads or runs); `false` if it did
    /// not exist.
    async fn delete_assistant(&self, assistant_id: Uuid) -> Result<bool>;
    /// The recorded versions of an assistant matching `query`, newest first (empty if it
    /// does not exist).
    async fn assistant_versions(
        &self,
        assistant_id: Uuid,
        query: &VersionQuery,
    ) -> Result<Vec<AssistantVersion>>;
    /// One assistant.
    async fn get_assistant(&self, assistant_id: Uuid) -> Result<Option<AssistantRecord>>;
    /// Assistants matching `query`, newest first.
    async fn search_assistants(&self, query: &AssistantQuery) -> Result<Vec<AssistantRecord>>;
    /// How many assistants match `query` (its limit and offset ignored).
    async fn count_assistants(&self, query: &AssistantQuery) -> Result<u64>;

    // --- threads ---

    /// Creates a thread; with [`IfExists::Raise`] an existing id is a `Conflict`, with
    /// [`IfExists::DoNothing`] the existing thread is returned.
    async fn create_thread(&self, thread: NewThread) -> Result<ThreadRecord>;
    /// One thread.
    async fn get_thread(&self, thread_id: Uuid) -> Result<Option<ThreadRecord>>;
    /// Merges `metadata` into the thread's metadata (keys replaced at the top level);
    /// `None` if the thread does not exist.
    async fn patch_thread(
        &self,
        thread_id: Uuid,
        metadata: &Map<String, Value>,
    ) -> Result<Option<ThreadRecord>>;
    /// Deletes the thread with its runs and their events and its crons (not its
    /// checkpoints: the caller deletes those through the checkpointer). `false` if it did not exist. Runs in flight
    /// are asked to cancel first.
    async fn delete_thread(&self, thread_id: Uuid) -> Result<bool>;
    /// Threads matching `query`.
    async fn search_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>>;
    /// How many threads match `query` (its limit and offset ignored).
    async fn count_threads(&self, query: &ThreadQuery) -> Result<u64>;
    /// Records the thread's state after a run or a state update (values, interrupts,
    /// status when idle, error).
    async fn set_thread_outcome(&self, thread_id: Uuid, outcome: &ThreadOutcome) -> Result<()>;
    /// The bytes the thread's checkpoints and pending writes occupy (every namespace), as
    /// measured by [`ThreadStorage::measure`] from the stored rows.
    async fn thread_storage(&self, thread_id: Uuid) -> Result<ThreadStorage>;

    // --- runs ---

    /// Inserts a run, applying its multitask strategy against the runs in flight on the
    /// thread, atomically: `Conflict` for `reject` while one is in flight, `NotFound` if
    /// the thread is missing and `create_thread` is `None`. Wakes the queue.
    async fn create_run(&self, run: NewRun) -> Result<CreatedRun>;
    /// One run; with a thread id, only if it belongs to that thread.
    async fn get_run(&self, thread_id: Option<Uuid>, run_id: Uuid) -> Result<Option<RunRecord>>;
    /// A run's status and cancel reason, without reading its request (which may be big):
    /// what a wait polls. `None` if the run does not exist.
    async fn run_status(&self, run_id: Uuid) -> Result<Option<RunEnding>>;
    /// The runs of a thread, newest first.
    async fn list_runs(&self, thread_id: Uuid, query: &RunQuery) -> Result<Vec<RunRecord>>;
    /// How many runs there are in each status (statuses without runs left out), over every
    /// thread: what `GET /metrics` reports.
    async fn count_runs_by_status(&self) -> Result<Vec<(RunStatus, u64)>>;
    /// Deletes a run and its events. `Conflict` while it is pending or running; `false` if
    /// it did not exist.
    async fn delete_run(&self, thread_id: Uuid, run_id: Uuid) -> Result<bool>;
    /// Claims the oldest due pending run of a thread with no running run: sets it
    /// `running`, held by `worker_id` until now + `lease` under a fresh
    /// [`lease_token`](RunRecord::lease_token), and increments its attempt.
    async fn claim_run(&self, worker_id: &str, lease: Duration) -> Result<Option<RunRecord>>;
    /// Extends the lease of a run the claim `token` still holds, and reports a cancel
    /// request; [`Lease::Lost`] once the token is no longer the run's.
    async fn heartbeat(&self, run_id: Uuid, token: Uuid, lease: Duration) -> Result<Lease>;
    /// Ends a run the claim `token` holds and records `outcome` on its thread, in one
    /// transaction; wakes the run's watchers and the queue. `false` if the token no longer
    /// held it (nothing changed).
    async fn finish_run(
        &self,
        run_id: Uuid,
        token: Uuid,
        end: RunEnd,
        outcome: Option<&ThreadOutcome>,
    ) -> Result<bool>;
    /// Puts a run the claim `token` holds back in the queue (graceful shutdown): `pending`,
    /// no worker. `false` if the token no longer held it.
    async fn release_run(&self, run_id: Uuid, token: Uuid) -> Result<bool>;
    /// Returns runs whose lease expired to the queue (`pending`, to resume as their next
    /// attempt), or ends them `error` once `max_attempts` claims were made. Returns the
    /// ids it changed.
    async fn sweep_expired(&self, max_attempts: u32) -> Result<Vec<Uuid>>;
    /// Cancels a run: a pending one at once (interrupted, or deleted for rollback), a
    /// running one by flagging it for its worker (who is woken). `None` if it does not
    /// exist (on that thread).
    async fn request_cancel(
        &self,
        thread_id: Option<Uuid>,
        run_id: Uuid,
        action: CancelAction,
    ) -> Result<Option<CancelOutcome>>;

    // --- run events ---

    /// Appends events to the stream of a run the claim `token` holds; returns the sequence
    /// number of the last one. Wakes the run's watchers.
    /// [`ServerError::LeaseLost`](crate::ServerError::LeaseLost) (nothing stored) once the
    /// token is no longer the run's.
    async fn append_events(
        &self,
        run_id: Uuid,
        token: Uuid,
        events: &[(String, String)],
    ) -> Result<i64>;
    /// The run's events with a sequence number above `after` (all with 0), in order.
    async fn read_events(&self, run_id: Uuid, after: i64) -> Result<Vec<RunEvent>>;
    /// The run's newest event named exactly `values` or `error` (a subgraph's
    /// `values|ns` is not one): what `runs/wait` and `join` answer. `None` when it has none.
    async fn last_result_event(&self, run_id: Uuid) -> Result<Option<RunEvent>>;
    /// The highest sequence number of the run's events (0 when it has none).
    async fn last_event_seq(&self, run_id: Uuid) -> Result<i64>;
    /// Deletes the events of runs that ended more than `age` ago; returns how many.
    async fn prune_events(&self, age: Duration) -> Result<u64>;

    // --- crons ---

    /// Inserts a cron (its id minted by the caller).
    async fn create_cron(&self, cron: &CronRecord) -> Result<()>;
    /// One cron.
    async fn get_cron(&self, cron_id: Uuid) -> Result<Option<CronRecord>>;
    /// Replaces a cron's row with `cron`, its next run date only when `reschedule` (else
    /// the stored one stays, so an update racing a firing cannot bring a fired tick
    /// back); `false` if it does not exist.
    async fn update_cron(&self, cron: &CronRecord, reschedule: bool) -> Result<bool>;
    /// Deletes a cron (not the runs it created); `false` if it did not exist.
    async fn delete_cron(&self, cron_id: Uuid) -> Result<bool>;
    /// Every cron `query`'s filters match, in no order (its limit, offset and order
    /// ignored): what [`Backend::search_crons`] and [`Backend::count_crons`] read.
    async fn crons_matching(&self, query: &CronQuery) -> Result<Vec<CronRecord>>;
    /// Crons matching `query`, in its order and page.
    async fn search_crons(&self, query: &CronQuery) -> Result<Vec<CronRecord>> {
        query.order_and_page(self.crons_matching(query).await?)
    }
    /// How many crons match `query` (its limit and offset ignored).
    async fn count_crons(&self, query: &CronQuery) -> Result<u64> {
        Ok(self.crons_matching(query).await?.len() as u64)
    }
    /// Fires one enabled cron due at `now` (its next run date at or before `now`), if
    /// any: creates its run on the queue ([`CronRecord::new_run`], as
    /// [`Backend::create_run`] would) and moves its next run date past `now`, in one
    /// transaction, so that of several processes only one fires a tick. When `reject` met
    /// a run in flight, the tick is skipped and the next run date still moves on; when the
    /// cron's thread is gone, the cron stops (no next run date). `None`: nothing is due.
    async fn fire_due_cron(&self, now: Timestamp) -> Result<Option<FiredCron>>;

    // --- expiry (ttl) ---

    /// Sets a thread's time to live: deleted `minutes` after now (and after each run
    /// created on it), or never with `None`. `false` if the thread does not exist.
    async fn set_thread_ttl(&self, thread_id: Uuid, minutes: Option<f64>) -> Result<bool>;
    /// A thread's time to live in minutes and when it expires; `None` when it has none
    /// (or does not exist).
    async fn thread_ttl(&self, thread_id: Uuid) -> Result<Option<(f64, Timestamp)>>;
    /// Up to `limit` threads whose expiry is at or before `now` and that have no run in
    /// flight, soonest expired first.
    async fn expired_threads(&self, now: Timestamp, limit: usize) -> Result<Vec<Uuid>>;
    /// Sets a store item's time to live: expired `minutes` after now, or never with
    /// `None`.
    async fn set_item_ttl(&self, namespace: &[&str], key: &str, minutes: Option<f64>)
    -> Result<()>;
    /// A store item's expiry (`None`: it does not expire). With `refresh`, an item not yet
    /// expired at `now` gets its full time to live again from `now`, and the new expiry is
    /// returned.
    async fn item_expiry(
        &self,
        namespace: &[&str],
        key: &str,
        now: Timestamp,
        refresh: bool,
    ) -> Result<Option<Timestamp>>;
    /// Up to `limit` store items (namespace, key) whose expiry is at or before `now`.
    async fn expired_items(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Vec<String>, String)>>;

    // --- wake-ups ---

    /// Resolves on a change of the run (new events, status, cancel request).
    fn watch_run(&self, run_id: Uuid) -> Wakeup;
    /// Resolves when a run may have become claimable.
    fn watch_queue(&self) -> Wakeup;

    // --- live events ---

    /// The live events of the runs followed in this process: the backend hands each
    /// event it stores to them, and tells them of status changes (its own and, for
    /// PostgreSQL, those of other processes).
    fn feeds(&self) -> &EventFeeds;

    /// Follows a run's events after `after` (0: from its first): the stored ones first,
    /// then each new one from memory as it is stored, until the run has ended. See
    /// [`RunFollower`].
    fn follow_run(&self, run_id: Uuid, after: i64) -> RunFollower {
        self.feeds().follow(run_id, after)
    }
}

/// JSON containment as PostgreSQL's `@>`: objects contain the keys of `needle` with
/// contained values, arrays contain every element of `needle`, scalars are equal.
///
/// ```
/// use graphkit_server::backend::json_contains;
/// use serde_json::json;
/// assert!(json_contains(&json!({"a": 1, "b": {"c": [1, 2]}}), &json!({"b": {"c": [2]}})));
/// assert!(!json_contains(&json!({"a": 1}), &json!({"a": 2})));
/// ```
pub fn json_contains(haystack: &Value, needle: &Value) -> bool {
    match (haystack, needle) {
        (Value::Object(h), Value::Object(n)) => n
            .iter()
            .all(|(k, v)| h.get(k).is_some_and(|hv| json_contains(hv, v))),
        (Value::Array(h), Value::Array(n)) => {
            n.iter().all(|v| h.iter().any(|hv| json_contains(hv, v)))
        }
        (h, n) => h == n,
    }
}
