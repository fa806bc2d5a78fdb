//! The records of what the database schedules: crons (a schedule that creates runs on the
//! run queue) and expiry times (threads and store items with a `ttl`).
//!
//! A cron is a row with its next due time. Whichever worker process looks first creates
//! the due run and moves the next due time on, in one transaction
//! ([`Backend::fire_due_cron`](super::Backend::fire_due_cron)), so two processes never both
//! fire one tick, and a restart loses no cron.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use super::{MultitaskStrategy, NewRun, json_contains};
use crate::cron::{Schedule, TimeZone};
use crate::error::{Result, ServerError};
use crate::ids::new_id;
use crate::time::Timestamp;

/// The run a cron creates each time it fires, prepared (and checked) when the cron was
/// created or last changed: everything of a [`NewRun`] but its id and thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CronRun {
    /// The assistant the run runs.
    pub assistant_id: Uuid,
    /// The run's metadata.
    pub metadata: Map<String, Value>,
    /// The run's creation request, as the worker reads it.
    pub kwargs: Value,
    /// Its multitask strategy against runs in flight on the thread.
    pub multitask_strategy: MultitaskStrategy,
    /// Metadata merged into (or given to a new) thread.
    pub thread_metadata: Map<String, Value>,
}

/// A cron: a schedule and the run it creates.
#[derive(Debug, Clone, PartialEq)]
pub struct CronRecord {
    /// Its id.
    pub cron_id: Uuid,
    /// The assistant its runs run.
    pub assistant_id: Uuid,
    /// The thread its runs run on; `None`: each run gets a new thread.
    pub thread_id: Option<Uuid>,
    /// The cron expression (see [`crate::cron`]).
    pub schedule: String,
    /// The time zone the schedule is read in (`None`: UTC).
    pub timezone: Option<String>,
    /// No run is created after this time.
    pub end_time: Option<Timestamp>,
    /// The run-create body as the client sent it.
    pub payload: Map<String, Value>,
    /// The run it creates, prepared from `payload`.
    pub run: CronRun,
    /// For a cron without a thread: `delete` (the default) or `keep` each run's thread.
    pub on_run_completed: Option<String>,
    /// A disabled cron creates no runs.
    pub enabled: bool,
    /// When it fires next (`None`: never again).
    pub next_run_date: Option<Timestamp>,
    /// Its metadata.
    pub metadata: Map<String, Value>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl CronRecord {
    /// When the cron is next due after `now`: `None` when it is disabled, past its
    /// `end_time`, or its schedule never comes again.
    ///
    /// # Errors
    /// A validation error when the schedule or the time zone cannot be read.
    pub fn next_after(&self, now: Timestamp) -> Result<Option<Timestamp>> {
        if !self.enabled {
            return Ok(None);
        }
        let schedule = Schedule::parse(&self.schedule)?;
        let zone = match &self.timezone {
            None => TimeZone::UTC,
            Some(name) => TimeZone::parse(name)?,
        };
        Ok(schedule
            .next_after(now, zone)
            .filter(|next| self.end_time.is_none_or(|end| *next <= end)))
    }

    /// The run one firing creates: a new id, on the cron's thread, or on a new thread.
    pub fn new_run(&self) -> NewRun {
        NewRun {
            run_id: new_id(),
            thread_id: self.thread_id.unwrap_or_else(new_id),
            assistant_id: self.run.assistant_id,
            metadata: self.run.metadata.clone(),
            kwargs: self.run.kwargs.clone(),
            multitask_strategy: self.run.multitask_strategy,
            create_thread: self
                .thread_id
                .is_none()
                .then(|| self.run.thread_metadata.clone()),
            thread_metadata: self.run.thread_metadata.clone(),
            not_before: None,
        }
    }
}

/// What one firing did ([`Backend::fire_due_cron`](super::Backend::fire_due_cron)).
#[derive(Debug, Clone, PartialEq)]
pub struct FiredCron {
    /// The cron.
    pub cron_id: Uuid,
    /// The run it created; `None` when the run could not be created (its thread was
    /// deleted, or a `reject` strategy met a run in flight): the tick is skipped.
    pub run_id: Option<Uuid>,
    /// Why no run was created, if none was.
    pub skipped: Option<String>,
    /// When it fires next.
    pub next_run_date: Option<Timestamp>,
}

/// The columns crons can be sorted by (`sort_by` of a cron search).
pub const CRON_SORT_COLUMNS: &[&str] = &[
    "cron_id",
    "assistant_id",
    "thread_id",
    "created_at",
    "updated_at",
    "next_run_date",
    "end_time",
];

/// Filters for [`Backend::search_crons`](super::Backend::search_crons).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CronQuery {
    /// Only crons of this assistant.
    pub assistant_id: Option<Uuid>,
    /// Only crons of this thread.
    pub thread_id: Option<Uuid>,
    /// Only enabled (or disabled) crons.
    pub enabled: Option<bool>,
    /// Metadata the cron's metadata must contain (JSON containment).
    pub metadata: Option<Map<String, Value>>,
    /// At most this many (`None`: all).
    pub limit: Option<usize>,
    /// Skip this many.
    pub offset: usize,
    /// Order by this column, one of [`CRON_SORT_COLUMNS`] (default `created_at`).
    pub sort_by: Option<String>,
    /// Ascending instead of the default descending order.
    pub ascending: bool,
}

impl CronQuery {
    /// Whether `cron` passes the query's filters.
    pub fn matches(&self, cron: &CronRecord) -> bool {
        self.assistant_id.is_none_or(|a| a == cron.assistant_id)
            && self.thread_id.is_none_or(|t| Some(t) == cron.thread_id)
            && self.enabled.is_none_or(|e| e == cron.enabled)
            && self.metadata.as_ref().is_none_or(|m| {
                json_contains(
                    &Value::Object(cron.metadata.clone()),
                    &Value::Object(m.clone()),
                )
            })
    }

    /// `crons` (all matching) in the query's order, and the page it asks for; the same
    /// code on every backend, so they agree on order and ties.
    ///
    /// # Errors
    /// A validation error for a `sort_by` that is not one of [`CRON_SORT_COLUMNS`].
    pub fn order_and_page(&self, mut crons: Vec<CronRecord>) -> Result<Vec<CronRecord>> {
        let by = self.sort_by.as_deref().unwrap_or("created_at");
        if !CRON_SORT_COLUMNS.contains(&by) {
            return Err(ServerError::Validation(format!(
                "sort_by must be one of {}, not {by:?}",
                CRON_SORT_COLUMNS.join(", ")
            )));
        }
        crons.sort_by(|a, b| {
            let order = match by {
                "cron_id" => a.cron_id.cmp(&b.cron_id),
                "assistant_id" => a.assistant_id.cmp(&b.assistant_id),
                "thread_id" => a.thread_id.cmp(&b.thread_id),
                "updated_at" => a.updated_at.cmp(&b.updated_at),
                "next_run_date" => a.next_run_date.cmp(&b.next_run_date),
                "end_time" => a.end_time.cmp(&b.end_time),
                _ => a.created_at.cmp(&b.created_at),
            }
            .then_with(|| a.cron_id.cmp(&b.cron_id));
            if self.ascending {
                order
            } else {
                order.reverse()
            }
        });
        Ok(crons
            .into_iter()
            .skip(self.offset)
            .take(self.limit.unwrap_or(usize::MAX))
            .collect())
    }
}

/// `minutes` from `from`, as an expiry time.
pub(crate) fn expiry(from: Timestamp, minutes: f64) -> Timestamp {
    // At most a century, so the sum stays far from overflow.
    let micros = (minutes.clamp(0.0, 100.0 * 366.0 * 24.0 * 60.0) * 60_000_000.0) as i64;
    Timestamp(from.micros().saturating_add(micros))
}

/// A store item's namespace as the expiry table keys it: the labels as a JSON list.
pub(crate) fn namespace_key(namespace: &[&str]) -> String {
    serde_json::to_string(namespace).unwrap_or_default()
}

/// The namespace labels of a [`namespace_key`].
pub(crate) fn namespace_of(key: &str) -> Result<Vec<String>> {
    serde_json::from_str(key).map_err(|e| ServerError::backend("decode a store namespace", e))
}
