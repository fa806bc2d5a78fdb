//! [`PostgresBackend`]: the server's storage on PostgreSQL, for any number of server
//! processes (and machines) on one database.
//!
//! The design (see `docs/server.md`, "Scaling out"):
//!
//! - **The run table is the queue.** A worker claims the oldest due `pending` run of a thread
//!   with no `running` run in one `UPDATE … WHERE run_id = (SELECT … FOR UPDATE SKIP LOCKED)`.
//!   A partial unique index `ON server_runs (thread_id) WHERE status = 'running'` makes "one
//!   running run per thread" the database's rule: a second claimer racing for another run of
//!   the same thread fails on the index and moves on.
//! - **Leases.** A claimed run holds `worker_id` and `lease_until`; the worker renews the
//!   lease by heartbeat. Any process's sweeper returns runs whose lease ran out to `pending`
//!   (to resume from the thread's last checkpoint as their next attempt), or ends them
//!   `error` once they used up their attempts.
//! - **LISTEN/NOTIFY** carries ids only: `runs_new` wakes workers, `run_events` and
//!   `run_status` wake stream readers and `wait`/`join` callers, `run_control` wakes the
//!   worker of a run asked to cancel. Each process holds one `LISTEN` connection and fans
//!   the notifications out in memory (module `listen`).
//! - Everything lives in one schema ([`PostgresOptions::schema`]), graphkit's checkpoint and
//!   store tables included, so one database can hold several independent servers.

mod listen;
mod schema;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use graphkit::checkpoint::{Checkpointer, PostgresSaver, WriteFence};
use graphkit::sql::migrate_postgres;
use graphkit::store::{PostgresStore, Store};
use serde_json::{Map, Value};
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row, Transaction};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use self::listen::{Channels, Fanout};
use super::{
    AssistantPatch, AssistantQuery, AssistantRecord, AssistantVersion, Backend, CancelAction,
    CancelOutcome, CreatedRun, CronQuery, CronRecord, EventFeeds, FiredCron, IfExists, Lease,
    MultitaskStrategy, NewRun, NewThread, Notifier, RunEnd, RunEnding, RunEvent, RunQuery,
    RunRecord, RunStatus, StoredCheckpoint, Tally, ThreadOutcome, ThreadQuery, ThreadRecord,
    ThreadStatus, ThreadStorage, VersionQuery, Wakeup, attempts_exceeded, counts_by_status, expiry,
    namespace_key, namespace_of, no_such_version,
};
use crate::error::{Result, ServerError, database_error, without_source_position};
use crate::time::Timestamp;

/// How to open a [`PostgresBackend`].
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// The schema holding every table of this server (created if missing). Servers that
    /// should share threads and runs use the same schema; a fresh schema is a fresh server.
    pub schema: String,
    /// The most connections the process's pool opens. A running run holds one more (its
    /// thread lock), and the process one more for `LISTEN`.
    pub max_connections: u32,
    /// How long to wait for the database when connecting.
    pub connect_timeout: Duration,
    /// How long PostgreSQL lets one of the process's transactions sit idle before it ends
    /// the session (`idle_in_transaction_session_timeout`). A worker paused in the middle
    /// of a fenced write holds its run's row; ending its session frees the run for the
    /// sweeper, and the paused worker's write fails when it wakes. The server's own
    /// transactions never wait on anything outside the database, so a lease is a safe
    /// value (the CLI sets it to `--lease-secs`).
    pub stalled_transaction_timeout: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        Self {
            schema: Self::DEFAULT_SCHEMA.to_owned(),
            max_connections: 10,
            connect_timeout: Duration::from_secs(5),
            stalled_transaction_timeout: Duration::from_secs(60),
        }
    }
}

impl PostgresOptions {
    /// The schema used unless told otherwise.
    pub const DEFAULT_SCHEMA: &'static str = "graphkit_server";

    /// The options with another schema.
    #[must_use]
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    /// The options with another [`stalled_transaction_timeout`](Self::stalled_transaction_timeout).
    #[must_use]
    pub fn stalled_transaction_timeout(mut self, timeout: Duration) -> Self {
        self.stalled_transaction_timeout = timeout;
        self
    }
}

/// The server's storage on PostgreSQL: assistants, threads, the run queue, run events, and
/// graphkit's [`PostgresSaver`] and [`PostgresStore`], all in one schema.
///
/// ```no_run
/// use graphkit_server::backend::postgres::{PostgresBackend, PostgresOptions};
///
/// # async fn open() -> Result<(), graphkit_server::ServerError> {
/// let backend = PostgresBackend::connect_with(
///     "postgres://app@db.internal/app",
///     PostgresOptions::default().schema("agents"),
/// )
/// .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PostgresBackend {
    pool: PgPool,
    channels: Channels,
    notifier: Notifier,
    checkpointer: Arc<PostgresSaver>,
    store: Arc<PostgresStore>,
    /// Stops the `LISTEN` task when the backend is dropped.
    stop: CancellationToken,
}

impl Drop for PostgresBackend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// A schema name must be a plain identifier: it is spliced into `search_path` and channel
/// names.
fn check_schema_name(schema: &str) -> Result<()> {
    let plain = !schema.is_empty()
        && schema.len() <= 48
        && schema
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !schema.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        Ok(())
    } else {
        Err(ServerError::Startup(format!(
            "invalid PostgreSQL schema name {schema:?}: use 1 to 48 letters, digits or underscores, not starting with a digit"
        )))
    }
}

fn db(doing: &str) -> impl Fn(sqlx::Error) -> ServerError + '_ {
    move |e| {
        // 22P05: a JSON string holding U+0000, which JSONB cannot store.
        if let sqlx::Error::Database(d) = &e
            && d.code().as_deref() == Some("22P05")
        {
            return ServerError::Validation(format!(
                "{doing}: metadata must not contain the character U+0000"
            ));
        }
        ServerError::Backend(format!("{doing}: {}", database_error(&e)))
    }
}

impl PostgresBackend {
    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) with the
    /// default [`PostgresOptions`] (schema `graphkit_server`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, PostgresOptions::default()).await
    }

    /// Connects to `url`, creates the schema if needed, migrates the server's, the
    /// checkpointer's and the store's tables, and starts the process's `LISTEN` connection.
    pub async fn connect_with(url: &str, options: PostgresOptions) -> Result<Self> {
        check_schema_name(&options.schema)?;
        let startup = |doing: &str, e: sqlx::Error| {
            ServerError::Startup(format!(
                "PostgreSQL at {}: {doing}: {}",
                redact(url),
                database_error(&e)
            ))
        };
        let base = PgConnectOptions::from_str(url).map_err(|e| {
            ServerError::Startup(format!(
                "invalid PostgreSQL URL: {e}; expected postgres://user[:password]@host[:port]/database"
            ))
        })?;
        // Create the schema on a connection of its own, then open the pool inside it.
        {
            use sqlx::Connection;
            let mut connection = tokio::time::timeout(
                options.connect_timeout,
                sqlx::PgConnection::connect_with(&base),
            )
            .await
            .map_err(|_| {
                ServerError::Startup(format!(
                    "PostgreSQL at {}: no answer within {:?}; check the host and port",
                    redact(url),
                    options.connect_timeout
                ))
            })?
            .map_err(|e| startup("cannot connect", e))?;
            let create = format!("CREATE SCHEMA IF NOT EXISTS \"{}\"", options.schema);
            // Two processes creating the schema at once may both pass IF NOT EXISTS; the
            // loser's unique violation means the schema is there, which is all we need.
            if let Err(e) = sqlx::raw_sql(sqlx::AssertSqlSafe(create))
                .execute(&mut connection)
                .await
            {
                let exists =
                    matches!(&e, sqlx::Error::Database(d) if d.code().as_deref() == Some("23505"));
                if !exists {
                    return Err(startup("cannot create the schema", e));
                }
            }
            let _ = connection.close().await;
        }
        // At least a second: 0 would switch the timeout off.
        let idle_ms = options
            .stalled_transaction_timeout
            .as_millis()
            .max(1000)
            .to_string();
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(2))
            .acquire_timeout(options.connect_timeout.max(Duration::from_secs(1)))
            .connect_with(base.options([
                ("search_path", options.schema.as_str()),
                ("idle_in_transaction_session_timeout", &idle_ms),
            ]))
            .await
            .map_err(|e| startup("cannot open the pool", e))?;
        migrate_postgres(&pool, "postgres server backend", &schema::SCHEMA)
            .await
            .map_err(|e| {
                ServerError::Startup(format!(
                    "PostgreSQL at {}: {}",
                    redact(url),
                    without_source_position(&e.to_string())
                ))
            })?;
        let checkpointer = Arc::new(PostgresSaver::from_pool(pool.clone()).await?);
        let store = Arc::new(PostgresStore::from_pool(pool.clone()).await?);
        let channels = Channels::new(&options.schema);
        let notifier = Notifier::new();
        let stop = CancellationToken::new();
        let fanout = Fanout::new(channels.clone(), notifier.clone());
        tokio::spawn(fanout.listen(pool.clone(), stop.clone()));
        Ok(Self {
            pool,
            channels,
            notifier,
            checkpointer,
            store,
            stop,
        })
    }

    /// The connection pool (its `search_path` is the backend's schema).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        self.pool
            .begin()
            .await
            .map_err(db("starting a transaction"))
    }

    /// Runs `query` on the pool and decodes the row it finds, if any.
    async fn fetch_optional<T>(
        &self,
        query: PgQuery<'_>,
        decode: fn(&PgRow) -> Result<T>,
        doing: &str,
    ) -> Result<Option<T>> {
        query
            .fetch_optional(&self.pool)
            .await
            .map_err(db(doing))?
            .as_ref()
            .map(decode)
            .transpose()
    }

    /// Runs `query` on the pool and decodes every row.
    async fn fetch_all<T>(
        &self,
        query: PgQuery<'_>,
        decode: fn(&PgRow) -> Result<T>,
        doing: &str,
    ) -> Result<Vec<T>> {
        query
            .fetch_all(&self.pool)
            .await
            .map_err(db(doing))?
            .iter()
            .map(decode)
            .collect()
    }

    /// Runs a `SELECT count(*) …` query on the pool.
    async fn count(&self, query: PgQuery<'_>, doing: &str) -> Result<u64> {
        let n: i64 = query
            .fetch_one(&self.pool)
            .await
            .map_err(db(doing))?
            .try_get(0)
            .map_err(|e| corrupt("a count", e))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

/// A query with its arguments bound.
type PgQuery<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

/// `url` without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// A timestamp column as microseconds since the epoch.
macro_rules! micros {
    ($col:literal) => {
        concat!("(extract(epoch FROM ", $col, ") * 1000000)::bigint")
    };
}

/// Binds a [`Timestamp`] as a `timestamptz` parameter: `micros_to_ts!("$3")`.
macro_rules! micros_to_ts {
    ($param:literal) => {
        concat!(
            "(timestamptz 'epoch' + ",
            $param,
            "::bigint * interval '1 microsecond')"
        )
    };
}

const ASSISTANT_COLUMNS: &str = concat!(
    "assistant_id, graph_id, config, context, metadata, name, description, version, ",
    micros!("created_at"),
    " AS created_us, ",
    micros!("updated_at"),
    " AS updated_us"
);

/// The thread columns; `status` is derived: busy while a run is pending or running.
const THREAD_COLUMNS: &str = concat!(
    "t.thread_id, t.metadata, t.config, t.values_json, t.interrupts_json, t.error_json, ",
    "CASE WHEN EXISTS (SELECT 1 FROM server_runs r WHERE r.thread_id = t.thread_id \
     AND r.status IN ('pending', 'running')) THEN 'busy' ELSE t.status END AS status, ",
    micros!("t.created_at"),
    " AS created_us, ",
    micros!("t.updated_at"),
    " AS updated_us, ",
    micros!("t.state_updated_at"),
    " AS state_updated_us"
);

const RUN_COLUMNS: &str = concat!(
    "run_id, thread_id, assistant_id, status, metadata, kwargs, multitask_strategy, attempt, ",
    "worker_id, lease_token, cancel_requested, cancel_reason, ",
    micros!("created_at"),
    " AS created_us, ",
    micros!("updated_at"),
    " AS updated_us, ",
    micros!("lease_until"),
    " AS lease_us"
);

fn corrupt(what: &str, e: impl std::fmt::Display) -> ServerError {
    ServerError::Backend(format!("reading {what}: {e}"))
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn json_text(row: &PgRow, column: &str) -> Result<Value> {
    let text: Option<String> = row.try_get(column).map_err(|e| corrupt(column, e))?;
    match text {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(&text).map_err(|e| corrupt(column, e)),
    }
}

fn decode_assistant(row: &PgRow) -> Result<AssistantRecord> {
    let get = |e| corrupt("an assistant", e);
    Ok(AssistantRecord {
        assistant_id: row.try_get("assistant_id").map_err(get)?,
        graph_id: row.try_get("graph_id").map_err(get)?,
        config: row.try_get("config").map_err(get)?,
        context: row.try_get("context").map_err(get)?,
        metadata: object(row.try_get("metadata").map_err(get)?),
        name: row.try_get("name").map_err(get)?,
        description: row.try_get("description").map_err(get)?,
        created_at: Timestamp(row.try_get("created_us").map_err(get)?),
        updated_at: Timestamp(row.try_get("updated_us").map_err(get)?),
        version: row.try_get("version").map_err(get)?,
    })
}

const VERSION_COLUMNS: &str = concat!(
    "assistant_id, version, graph_id, config, context, metadata, name, description, ",
    micros!("created_at"),
    " AS created_us"
);

fn decode_version(row: &PgRow) -> Result<AssistantVersion> {
    let get = |e| corrupt("an assistant version", e);
    Ok(AssistantVersion {
        assistant_id: row.try_get("assistant_id").map_err(get)?,
        version: row.try_get("version").map_err(get)?,
        graph_id: row.try_get("graph_id").map_err(get)?,
        config: row.try_get("config").map_err(get)?,
        context: row.try_get("context").map_err(get)?,
        metadata: object(row.try_get("metadata").map_err(get)?),
        name: row.try_get("name").map_err(get)?,
        description: row.try_get("description").map_err(get)?,
        created_at: Timestamp(row.try_get("created_us").map_err(get)?),
    })
}

/// An assistant, locked until the transaction ends (updates of it take turns).
async fn lock_assistant(
    tx: &mut Transaction<'_, Postgres>,
    assistant_id: Uuid,
) -> Result<Option<AssistantRecord>> {
    let sql = format!(
        "SELECT {ASSISTANT_COLUMNS} FROM server_assistants WHERE assistant_id = $1 FOR UPDATE"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(assistant_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db("reading an assistant"))?
        .as_ref()
        .map(decode_assistant)
        .transpose()
}

/// Makes `a` the assistant's current row (it exists).
async fn set_current(tx: &mut Transaction<'_, Postgres>, a: &AssistantRecord) -> Result<()> {
    sqlx::query(concat!(
        "UPDATE server_assistants SET graph_id = $2, config = $3, context = $4, metadata = $5, \
         name = $6, description = $7, version = $8, updated_at = ",
        micros_to_ts!("$9"),
        " WHERE assistant_id = $1"
    ))
    .bind(a.assistant_id)
    .bind(&a.graph_id)
    .bind(&a.config)
    .bind(&a.context)
    .bind(Value::Object(a.metadata.clone()))
    .bind(&a.name)
    .bind(&a.description)
    .bind(a.version)
    .bind(a.updated_at.micros())
    .execute(&mut **tx)
    .await
    .map_err(db("saving an assistant"))?;
    Ok(())
}

/// Records the version `a` is at.
async fn record_version(tx: &mut Transaction<'_, Postgres>, a: &AssistantRecord) -> Result<()> {
    sqlx::query(concat!(
        "INSERT INTO server_assistant_versions (assistant_id, version, graph_id, config, context, \
         metadata, name, description, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ",
        micros_to_ts!("$9"),
        ") ON CONFLICT (assistant_id, version) DO NOTHING"
    ))
    .bind(a.assistant_id)
    .bind(a.version)
    .bind(&a.graph_id)
    .bind(&a.config)
    .bind(&a.context)
    .bind(Value::Object(a.metadata.clone()))
    .bind(&a.name)
    .bind(&a.description)
    .bind(a.updated_at.micros())
    .execute(&mut **tx)
    .await
    .map_err(db("recording an assistant version"))?;
    Ok(())
}

fn decode_thread(row: &PgRow) -> Result<ThreadRecord> {
    let get = |e| corrupt("a thread", e);
    let status: String = row.try_get("status").map_err(get)?;
    Ok(ThreadRecord {
        thread_id: row.try_get("thread_id").map_err(get)?,
        created_at: Timestamp(row.try_get("created_us").map_err(get)?),
        updated_at: Timestamp(row.try_get("updated_us").map_err(get)?),
        state_updated_at: Timestamp(row.try_get("state_updated_us").map_err(get)?),
        metadata: object(row.try_get("metadata").map_err(get)?),
        status: ThreadStatus::parse(&status)
            .ok_or_else(|| corrupt("a thread", format!("unknown status {status:?}")))?,
        config: row.try_get("config").map_err(get)?,
        values: json_text(row, "values_json")?,
        interrupts: match json_text(row, "interrupts_json")? {
            Value::Null => Value::Object(Map::new()),
            v => v,
        },
        error: json_text(row, "error_json")?,
    })
}

fn decode_run(row: &PgRow) -> Result<RunRecord> {
    let get = |e| corrupt("a run", e);
    let status: String = row.try_get("status").map_err(get)?;
    let strategy: String = row.try_get("multitask_strategy").map_err(get)?;
    let cancel: Option<String> = row.try_get("cancel_requested").map_err(get)?;
    let attempt: i32 = row.try_get("attempt").map_err(get)?;
    let lease: Option<i64> = row.try_get("lease_us").map_err(get)?;
    Ok(RunRecord {
        run_id: row.try_get("run_id").map_err(get)?,
        thread_id: row.try_get("thread_id").map_err(get)?,
        assistant_id: row.try_get("assistant_id").map_err(get)?,
        created_at: Timestamp(row.try_get("created_us").map_err(get)?),
        updated_at: Timestamp(row.try_get("updated_us").map_err(get)?),
        status: RunStatus::parse(&status)
            .ok_or_else(|| corrupt("a run", format!("unknown status {status:?}")))?,
        metadata: object(row.try_get("metadata").map_err(get)?),
        kwargs: row.try_get("kwargs").map_err(get)?,
        multitask_strategy: MultitaskStrategy::parse(&strategy)
            .ok_or_else(|| corrupt("a run", format!("unknown strategy {strategy:?}")))?,
        attempt: u32::try_from(attempt).unwrap_or(0),
        worker_id: row.try_get("worker_id").map_err(get)?,
        lease_until: lease.map(Timestamp),
        lease_token: row.try_get("lease_token").map_err(get)?,
        cancel_requested: cancel.as_deref().and_then(CancelAction::parse),
        cancel_reason: row.try_get("cancel_reason").map_err(get)?,
    })
}

/// The columns of a cron row, in the order [`bind_cron`] binds them.
const CRON_COLUMNS: &str = "cron_id, assistant_id, thread_id, schedule, timezone, end_time_us, payload, \
     run_template, on_run_completed, enabled, next_run_us, metadata, created_us, updated_us";
const CRON_VALUES: &str = "($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)";

fn bind_cron<'q>(query: PgQuery<'q>, c: &CronRecord) -> Result<PgQuery<'q>> {
    let template =
        serde_json::to_value(&c.run).map_err(|e| ServerError::backend("encode a cron's run", e))?;
    Ok(query
        .bind(c.cron_id)
        .bind(c.assistant_id)
        .bind(c.thread_id)
        .bind(c.schedule.clone())
        .bind(c.timezone.clone())
        .bind(c.end_time.map(Timestamp::micros))
        .bind(Value::Object(c.payload.clone()))
        .bind(template)
        .bind(c.on_run_completed.clone())
        .bind(c.enabled)
        .bind(c.next_run_date.map(Timestamp::micros))
        .bind(Value::Object(c.metadata.clone()))
        .bind(c.created_at.micros())
        .bind(c.updated_at.micros()))
}

fn decode_cron(row: &PgRow) -> Result<CronRecord> {
    let get = |e| corrupt("a cron", e);
    let template: Value = row.try_get("run_template").map_err(get)?;
    Ok(CronRecord {
        cron_id: row.try_get("cron_id").map_err(get)?,
        assistant_id: row.try_get("assistant_id").map_err(get)?,
        thread_id: row.try_get("thread_id").map_err(get)?,
        schedule: row.try_get("schedule").map_err(get)?,
        timezone: row.try_get("timezone").map_err(get)?,
        end_time: row
            .try_get::<Option<i64>, _>("end_time_us")
            .map_err(get)?
            .map(Timestamp),
        payload: object(row.try_get("payload").map_err(get)?),
        run: serde_json::from_value(template).map_err(|e| corrupt("a cron's run", e))?,
        on_run_completed: row.try_get("on_run_completed").map_err(get)?,
        enabled: row.try_get("enabled").map_err(get)?,
        next_run_date: row
            .try_get::<Option<i64>, _>("next_run_us")
            .map_err(get)?
            .map(Timestamp),
        metadata: object(row.try_get("metadata").map_err(get)?),
        created_at: Timestamp(row.try_get("created_us").map_err(get)?),
        updated_at: Timestamp(row.try_get("updated_us").map_err(get)?),
    })
}

/// `SELECT {what}` over the assistants `query` matches (binding $1 to $3), then `tail`: the
/// one filter of `search_assistants` and `count_assistants`.
fn assistants_matching<'q>(what: &str, query: &AssistantQuery, tail: &str) -> PgQuery<'q> {
    let sql = format!(
        "SELECT {what} FROM server_assistants \
         WHERE ($1::jsonb IS NULL OR metadata @> $1) AND ($2::text IS NULL OR graph_id = $2) \
         AND ($3::text IS NULL OR name = $3) {tail}"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(query.metadata.clone().map(Value::Object))
        .bind(&query.graph_id)
        .bind(&query.name)
}

/// `SELECT {what}` over the threads `query` matches (binding $1 to $4; a thread's columns as
/// in [`THREAD_COLUMNS`], its status derived), then `tail`: the one filter of
/// `search_threads` and `count_threads`.
fn threads_matching<'q>(what: &str, query: &ThreadQuery, tail: &str) -> PgQuery<'q> {
    let sql = format!(
        "SELECT {what} FROM (SELECT {THREAD_COLUMNS} FROM server_threads t \
         WHERE ($1::jsonb IS NULL OR t.metadata @> $1) \
         AND ($2::jsonb IS NULL OR (t.values_json IS NOT NULL AND t.values_json::jsonb @> $2)) \
         AND ($3::uuid[] IS NULL OR t.thread_id = ANY($3))) t \
         WHERE ($4::text IS NULL OR status = $4) {tail}"
    );
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(query.metadata.clone().map(Value::Object))
        .bind(query.values.clone().map(Value::Object))
        .bind(query.ids.clone())
        .bind(query.status.map(ThreadStatus::as_str))
}

fn limit(limit: Option<usize>) -> i64 {
    limit.map_or(i64::MAX, |n| i64::try_from(n).unwrap_or(i64::MAX))
}

fn offset(offset: usize) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

fn lease_micros(lease: Duration) -> i64 {
    i64::try_from(lease.as_micros()).unwrap_or(i64::MAX)
}

/// How many times a claim retries after losing a race on the one-running-run index.
const CLAIM_RETRIES: usize = 8;

#[async_trait]
impl Backend for PostgresBackend {
    fn fenced_checkpointer(&self, run_id: Uuid, token: Uuid) -> Arc<dyn Checkpointer> {
        // `FOR SHARE`: a sweep or a deletion that would take the run waits for a write
        // that passed the fence to commit (the sweep skips the run instead), so no write
        // commits after the takeover.
        let fence = WriteFence::new(
            format!("run {run_id}"),
            "SELECT 1 FROM server_runs WHERE run_id = $1::uuid AND lease_token = $2::uuid \
             AND status = 'running' FOR SHARE",
            [run_id.to_string(), token.to_string()],
        );
        Arc::new(self.checkpointer.fenced(fence))
    }

    fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        self.checkpointer.clone()
    }

    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    // --- assistants ---

    async fn create_assistant(
        &self,
        a: &AssistantRecord,
        if_exists: IfExists,
    ) -> Result<AssistantRecord> {
        let mut tx = self.begin().await?;
        let inserted = sqlx::query(concat!(
            "INSERT INTO server_assistants (assistant_id, graph_id, config, context, metadata, name, \
             description, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ",
            micros_to_ts!("$9"),
            ", ",
            micros_to_ts!("$10"),
            ") ON CONFLICT (assistant_id) DO NOTHING"
        ))
        .bind(a.assistant_id)
        .bind(&a.graph_id)
        .bind(&a.config)
        .bind(&a.context)
        .bind(Value::Object(a.metadata.clone()))
        .bind(&a.name)
        .bind(&a.description)
        .bind(a.version)
        .bind(a.created_at.micros())
        .bind(a.updated_at.micros())
        .execute(&mut *tx)
        .await
        .map_err(db("creating an assistant"))?
        .rows_affected();
        if inserted == 0 {
            drop(tx);
            return match if_exists {
                IfExists::Raise => Err(ServerError::Conflict(format!(
                    "Assistant {} already exists; pass if_exists=\"do_nothing\" to get it instead",
                    a.assistant_id
                ))),
                IfExists::DoNothing => self.get_assistant(a.assistant_id).await?.ok_or_else(|| {
                    ServerError::Conflict(format!(
                        "Assistant {} was deleted while it was being created; try again",
                        a.assistant_id
                    ))
                }),
            };
        }
        record_version(&mut tx, a).await?;
        tx.commit().await.map_err(db("creating an assistant"))?;
        Ok(a.clone())
    }

    async fn update_assistant(
        &self,
        assistant_id: Uuid,
        patch: &AssistantPatch,
    ) -> Result<Option<AssistantRecord>> {
        let mut tx = self.begin().await?;
        let Some(current) = lock_assistant(&mut tx, assistant_id).await? else {
            return Ok(None);
        };
        let newest: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(version) FROM server_assistant_versions WHERE assistant_id = $1",
        )
        .bind(assistant_id)
        .fetch_one(&mut *tx)
        .await
        .map_err(db("reading an assistant's versions"))?;
        let version = newest.unwrap_or(0).max(current.version) + 1;
        let updated = patch.apply(&current, version, Timestamp::now());
        set_current(&mut tx, &updated).await?;
        record_version(&mut tx, &updated).await?;
        tx.commit().await.map_err(db("updating an assistant"))?;
        Ok(Some(updated))
    }

    async fn set_assistant_version(
        &self,
        assistant_id: Uuid,
        version: i64,
    ) -> Result<Option<AssistantRecord>> {
        let mut tx = self.begin().await?;
        let Some(current) = lock_assistant(&mut tx, assistant_id).await? else {
            return Ok(None);
        };
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM server_assistant_versions WHERE assistant_id = $1 AND version = $2"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(assistant_id)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db("reading an assistant version"))?;
        let Some(row) = row else {
            return Err(no_such_version(assistant_id, version));
        };
        let latest = decode_version(&row)?.restore(&current, Timestamp::now());
        set_current(&mut tx, &latest).await?;
        tx.commit()
            .await
            .map_err(db("setting an assistant's version"))?;
        Ok(Some(latest))
    }

    async fn delete_assistant(&self, assistant_id: Uuid) -> Result<bool> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM server_assistant_versions WHERE assistant_id = $1")
            .bind(assistant_id)
            .execute(&mut *tx)
            .await
            .map_err(db("deleting an assistant's versions"))?;
        let deleted = sqlx::query("DELETE FROM server_assistants WHERE assistant_id = $1")
            .bind(assistant_id)
            .execute(&mut *tx)
            .await
            .map_err(db("deleting an assistant"))?
            .rows_affected();
        tx.commit().await.map_err(db("deleting an assistant"))?;
        Ok(deleted > 0)
    }

    async fn assistant_versions(
        &self,
        assistant_id: Uuid,
        query: &VersionQuery,
    ) -> Result<Vec<AssistantVersion>> {
        let sql = format!(
            "SELECT {VERSION_COLUMNS} FROM server_assistant_versions WHERE assistant_id = $1 \
             AND ($2::jsonb IS NULL OR metadata @> $2) ORDER BY version DESC LIMIT $3 OFFSET $4"
        );
        let search = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(assistant_id)
            .bind(query.metadata.clone().map(Value::Object))
            .bind(limit(query.limit))
            .bind(offset(query.offset));
        self.fetch_all(search, decode_version, "reading an assistant's versions")
            .await
    }

    async fn get_assistant(&self, assistant_id: Uuid) -> Result<Option<AssistantRecord>> {
        let sql =
            format!("SELECT {ASSISTANT_COLUMNS} FROM server_assistants WHERE assistant_id = $1");
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(assistant_id);
        self.fetch_optional(query, decode_assistant, "reading an assistant")
            .await
    }

    async fn search_assistants(&self, query: &AssistantQuery) -> Result<Vec<AssistantRecord>> {
        let tail = "ORDER BY created_at DESC, assistant_id LIMIT $4 OFFSET $5";
        let search = assistants_matching(ASSISTANT_COLUMNS, query, tail)
            .bind(limit(query.limit))
            .bind(offset(query.offset));
        self.fetch_all(search, decode_assistant, "searching assistants")
            .await
    }

    async fn count_assistants(&self, query: &AssistantQuery) -> Result<u64> {
        self.count(
            assistants_matching("count(*)", query, ""),
            "counting assistants",
        )
        .await
    }

    // --- threads ---

    async fn create_thread(&self, thread: NewThread) -> Result<ThreadRecord> {
        let inserted = insert_thread(&self.pool, thread.thread_id, &thread.metadata).await?;
        if !inserted && thread.if_exists == IfExists::Raise {
            return Err(ServerError::Conflict(format!(
                "Thread with ID {} already exists",
                thread.thread_id
            )));
        }
        self.get_thread(thread.thread_id).await?.ok_or_else(|| {
            ServerError::NotFound(format!("Thread with ID {} not found", thread.thread_id))
        })
    }

    async fn get_thread(&self, thread_id: Uuid) -> Result<Option<ThreadRecord>> {
        let sql = format!("SELECT {THREAD_COLUMNS} FROM server_threads t WHERE t.thread_id = $1");
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(thread_id);
        self.fetch_optional(query, decode_thread, "reading a thread")
            .await
    }

    async fn patch_thread(
        &self,
        thread_id: Uuid,
        metadata: &Map<String, Value>,
    ) -> Result<Option<ThreadRecord>> {
        if !merge_thread_metadata(&self.pool, thread_id, metadata).await? {
            return Ok(None);
        }
        self.get_thread(thread_id).await
    }

    async fn delete_thread(&self, thread_id: Uuid) -> Result<bool> {
        let mut tx = self.begin().await?;
        let err = db("deleting a thread");
        // Its crons go with it (a cron on a thread runs only there). Before the thread's
        // lock: a firing takes the cron's row, then the thread's, in that order.
        sqlx::query("DELETE FROM server_crons WHERE thread_id = $1")
            .bind(thread_id)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        let existed = lock_thread(&mut tx, thread_id).await?;
        // Runs in flight lose their rows: a worker's next heartbeat finds its run gone and
        // stops it; the control notification makes that immediate.
        let in_flight: Vec<Uuid> = sqlx::query_scalar(
            "SELECT run_id FROM server_runs WHERE thread_id = $1 AND status IN ('pending', 'running')",
        )
        .bind(thread_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(&err)?;
        sqlx::query(
            "DELETE FROM server_run_events WHERE run_id IN (SELECT run_id FROM server_runs WHERE thread_id = $1)",
        )
        .bind(thread_id)
        .execute(&mut *tx)
        .await
        .map_err(&err)?;
        sqlx::query("DELETE FROM server_runs WHERE thread_id = $1")
            .bind(thread_id)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        sqlx::query("DELETE FROM server_threads WHERE thread_id = $1")
            .bind(thread_id)
            .execute(&mut *tx)
            .await
            .map_err(&err)?;
        for run_id in in_flight {
            notify_in(&mut tx, &self.channels.run_control, &run_id.to_string()).await?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(existed)
    }

    async fn search_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>> {
        // The columns of the inner select (timestamps as microseconds).
        let column = match query.sort_by.as_deref() {
            None | Some("created_at") => "created_us",
            Some("updated_at") => "updated_us",
            Some("thread_id") => "thread_id",
            Some("status") => "status",
            Some("state_updated_at") => "state_updated_us",
            Some(other) => {
                return Err(ServerError::Validation(format!(
                    "sort_by must be one of {}, not {other:?}",
                    super::THREAD_SORT_COLUMNS.join(", ")
                )));
            }
        };
        let direction = if query.ascending { "ASC" } else { "DESC" };
        let tail =
            format!("ORDER BY {column} {direction}, thread_id {direction} LIMIT $5 OFFSET $6");
        let search = threads_matching("*", query, &tail)
            .bind(limit(query.limit))
            .bind(offset(query.offset));
        self.fetch_all(search, decode_thread, "searching threads")
            .await
    }

    async fn count_threads(&self, query: &ThreadQuery) -> Result<u64> {
        self.count(threads_matching("count(*)", query, ""), "counting threads")
            .await
    }

    async fn set_thread_outcome(&self, thread_id: Uuid, outcome: &ThreadOutcome) -> Result<()> {
        set_outcome(
            &mut *self
                .pool
                .acquire()
                .await
                .map_err(db("recording a thread's state"))?,
            thread_id,
            outcome,
        )
        .await
    }

    // --- runs ---

    async fn create_run(&self, run: NewRun) -> Result<CreatedRun> {
        let mut tx = self.begin().await?;
        let (record, cancelled) = create_run_in(&mut tx, &self.channels, run).await?;
        tx.commit().await.map_err(db("creating a run"))?;
        Ok(CreatedRun {
            run: record,
            cancelled,
        })
    }

    async fn get_run(&self, thread_id: Option<Uuid>, run_id: Uuid) -> Result<Option<RunRecord>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs WHERE run_id = $1 AND ($2::uuid IS NULL OR thread_id = $2)"
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(run_id)
            .bind(thread_id);
        self.fetch_optional(query, decode_run, "reading a run")
            .await
    }

    async fn run_status(&self, run_id: Uuid) -> Result<Option<RunEnding>> {
        let row: Option<(String, Option<String>)> =
            sqlx::query_as("SELECT status, cancel_reason FROM server_runs WHERE run_id = $1")
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db("reading a run's status"))?;
        row.map(|(status, cancel_reason)| {
            Ok(RunEnding {
                status: RunStatus::parse(&status)
                    .ok_or_else(|| corrupt("a run", format!("unknown status {status:?}")))?,
                cancel_reason,
            })
        })
        .transpose()
    }

    async fn list_runs(&self, thread_id: Uuid, query: &RunQuery) -> Result<Vec<RunRecord>> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM server_runs WHERE thread_id = $1 \
             AND ($2::text IS NULL OR status = $2) ORDER BY created_at DESC, run_id DESC LIMIT $3 OFFSET $4"
        );
        let list = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(thread_id)
            .bind(query.status.map(RunStatus::as_str))
            .bind(limit(query.limit))
            .bind(offset(query.offset));
        self.fetch_all(list, decode_run, "listing runs").await
    }

    async fn count_runs_by_status(&self) -> Result<Vec<(RunStatus, u64)>> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, count(*) FROM server_runs GROUP BY status")
                .fetch_all(&self.pool)
                .await
                .map_err(db("counting runs"))?;
        Ok(counts_by_status(rows))
    }

    async fn delete_run(&self, thread_id: Uuid, run_id: Uuid) -> Result<bool> {
        let err = db("deleting a run");
        let mut tx = self.begin().await?;
        let status: Option<String> = sqlx::query_scalar(
            "SELECT status FROM server_runs WHERE run_id = $1 AND thread_id = $2 FOR UPDATE",
        )
        .bind(run_id)
        .bind(thread_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(&err)?;
        match status.as_deref() {
            None => return Ok(false),
            Some("pending" | "running") => {
                return Err(ServerError::Conflict(format!(
                    "Run {run_id} is still in flight; cancel it first, then delete it"
                )));
            }
            Some(_) => {}
        }
        delete_run_rows(&mut tx, run_id).await?;
        tx.commit().await.map_err(&err)?;
        Ok(true)
    }

    async fn claim_run(&self, worker_id: &str, lease: Duration) -> Result<Option<RunRecord>> {
        // The oldest due pending run whose thread has none running and no older pending
        // run (runs of a thread are strictly serial, in creation order). Two claimers racing
        // for two runs of one thread: the index on running runs fails the second.
        let sql = format!(
            "WITH claimed AS (UPDATE server_runs SET status = 'running', worker_id = $1, attempt = attempt + 1, \
             lease_until = clock_timestamp() + $2 * interval '1 microsecond', \
             started_at = COALESCE(started_at, now()), cancel_requested = NULL, updated_at = now(), \
             lease_token = $4 \
             WHERE run_id = ( \
               SELECT r.run_id FROM server_runs r \
               WHERE r.status = 'pending' AND r.due_at <= clock_timestamp() \
                 AND NOT EXISTS (SELECT 1 FROM server_runs x WHERE x.thread_id = r.thread_id \
                                 AND x.status = 'running') \
                 AND NOT EXISTS (SELECT 1 FROM server_runs y WHERE y.thread_id = r.thread_id \
                                 AND y.status = 'pending' AND y.due_at < r.due_at) \
               ORDER BY r.due_at \
               FOR UPDATE SKIP LOCKED LIMIT 1) \
             AND status = 'pending' \
             RETURNING {RUN_COLUMNS}) \
             SELECT claimed.*, pg_notify($3, claimed.run_id::text) FROM claimed"
        );
        for _ in 0..CLAIM_RETRIES {
            let claimed = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
                .bind(worker_id)
                .bind(lease_micros(lease))
                .bind(&self.channels.run_status)
                .bind(Uuid::now_v7())
                .fetch_optional(&self.pool)
                .await;
            match claimed {
                Ok(row) => return row.as_ref().map(decode_run).transpose(),
                Err(sqlx::Error::Database(d)) if d.code().as_deref() == Some("23505") => {
                    // Another worker just started a run of that thread: try the next run.
                }
                Err(e) => return Err(db("claiming a run")(e)),
            }
        }
        Ok(None)
    }

    async fn heartbeat(&self, run_id: Uuid, token: Uuid, lease: Duration) -> Result<Lease> {
        let row: Option<(Option<String>,)> = sqlx::query_as(
            "UPDATE server_runs SET lease_until = clock_timestamp() + $3 * interval '1 microsecond' \
             WHERE run_id = $1 AND lease_token = $2 AND status = 'running' RETURNING cancel_requested",
        )
        .bind(run_id)
        .bind(token)
        .bind(lease_micros(lease))
        .fetch_optional(&self.pool)
        .await
        .map_err(db("renewing a lease"))?;
        Ok(match row {
            Some((cancel,)) => Lease::Held {
                cancel: cancel.as_deref().and_then(CancelAction::parse),
            },
            None => Lease::Lost,
        })
    }

    async fn finish_run(
        &self,
        run_id: Uuid,
        token: Uuid,
        end: RunEnd,
        outcome: Option<&ThreadOutcome>,
    ) -> Result<bool> {
        let err = db("finishing a run");
        let mut tx = self.begin().await?;
        let Some(thread_id) = lock_thread_of(&mut tx, run_id).await? else {
            return Ok(false);
        };
        let held = sqlx::query(
            "SELECT 1 FROM server_runs WHERE run_id = $1 AND lease_token = $2 \
             AND status = 'running' FOR UPDATE",
        )
        .bind(run_id)
        .bind(token)
        .fetch_optional(&mut *tx)
        .await
        .map_err(&err)?
        .is_some();
        if !held {
            return Ok(false);
        }
        match end.recorded() {
            Some((status, reason)) => {
                sqlx::query(
                    "UPDATE server_runs SET status = $2, cancel_reason = COALESCE($3, cancel_reason), \
                     worker_id = NULL, lease_until = NULL, lease_token = NULL, ended_at = now(), \
                     updated_at = now() WHERE run_id = $1",
                )
                .bind(run_id)
                .bind(status.as_str())
                .bind(reason)
                .execute(&mut *tx)
                .await
                .map_err(&err)?;
            }
            None => delete_run_rows(&mut tx, run_id).await?,
        }
        if let Some(outcome) = outcome {
            set_outcome(&mut tx, thread_id, outcome).await?;
        }
        let id = run_id.to_string();
        notify_in(&mut tx, &self.channels.run_status, &id).await?;
        notify_in(&mut tx, &self.channels.runs_new, &id).await?;
        tx.commit().await.map_err(&err)?;
        Ok(true)
    }

    async fn release_run(&self, run_id: Uuid, token: Uuid) -> Result<bool> {
        let err = db("releasing a run");
        let mut tx = self.begin().await?;
        let released = sqlx::query(
            "UPDATE server_runs SET status = 'pending', worker_id = NULL, lease_until = NULL, \
             lease_token = NULL, updated_at = now() \
             WHERE run_id = $1 AND lease_token = $2 AND status = 'running'",
        )
        .bind(run_id)
        .bind(token)
        .execute(&mut *tx)
        .await
        .map_err(&err)?
        .rows_affected()
            > 0;
        if released {
            notify_in(&mut tx, &self.channels.runs_new, &run_id.to_string()).await?;
        }
        tx.commit().await.map_err(&err)?;
        Ok(released)
    }

    async fn sweep_expired(&self, max_attempts: u32) -> Result<Vec<Uuid>> {
        let err = db("sweeping expired leases");
        let mut tx = self.begin().await?;
        let max = i32::try_from(max_attempts).unwrap_or(i32::MAX);
        // Locks go thread first, then run, everywhere (as in create_run), so a sweep never
        // deadlocks with a run being created or finished on the same thread.
        let threads: Vec<Uuid> = sqlx::query_scalar(
            "SELECT thread_id FROM server_threads WHERE thread_id IN (SELECT thread_id FROM server_runs \
             WHERE status = 'running' AND lease_until < clock_timestamp()) \
             ORDER BY thread_id FOR UPDATE",
        )
        .fetch_all(&mut *tx)
        .await
        .map_err(&err)?;
        if threads.is_empty() {
            return Ok(Vec::new());
        }
        let swept: Vec<(Uuid, Uuid, String, i32)> = sqlx::query_as(
            "UPDATE server_runs SET \
               status = CASE WHEN attempt >= $1 THEN 'error' ELSE 'pending' END, \
               cancel_reason = CASE WHEN attempt >= $1 \
                 THEN 'Run ' || run_id || ' exceeded max attempts (' || attempt || ')' END, \
               ended_at = CASE WHEN attempt >= $1 THEN now() END, \
               worker_id = NULL, lease_until = NULL, lease_token = NULL, cancel_requested = NULL, \
               updated_at = now() \
             WHERE run_id IN (SELECT run_id FROM server_runs WHERE status = 'running' \
                              AND lease_until < clock_timestamp() AND thread_id = ANY($2) \
                              FOR UPDATE SKIP LOCKED) \
             RETURNING run_id, thread_id, status, attempt",
        )
        .bind(max)
        .bind(&threads)
        .fetch_all(&mut *tx)
        .await
        .map_err(&err)?;
        for (run_id, thread_id, status, attempt) in &swept {
            let id = run_id.to_string();
            if status == "error" {
                // Only the final failure reaches the stream (a retried attempt stays silent).
                let (_, error) = attempts_exceeded(run_id, i64::from(*attempt));
                append_locked(
                    &mut tx,
                    &self.channels,
                    *run_id,
                    None,
                    &[("error".to_owned(), error.to_string())],
                )
                .await?;
                let outcome = ThreadOutcome::failed(error);
                set_outcome_keep_values(&mut tx, *thread_id, &outcome).await?;
                notify_in(&mut tx, &self.channels.run_status, &id).await?;
            }
            notify_in(&mut tx, &self.channels.runs_new, &id).await?;
        }
        tx.commit().await.map_err(&err)?;
        if !swept.is_empty() {
            tracing::warn!(
                count = swept.len(),
                "returned runs of lost workers to the queue"
            );
        }
        Ok(swept.into_iter().map(|(run_id, ..)| run_id).collect())
    }

    async fn request_cancel(
        &self,
        thread_id: Option<Uuid>,
        run_id: Uuid,
        action: CancelAction,
    ) -> Result<Option<CancelOutcome>> {
        let err = db("cancelling a run");
        let mut tx = self.begin().await?;
        let status: Option<String> = sqlx::query_scalar(
            "SELECT status FROM server_runs WHERE run_id = $1 AND ($2::uuid IS NULL OR thread_id = $2) FOR UPDATE",
        )
        .bind(run_id)
        .bind(thread_id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(&err)?;
        let Some(status) = status else {
            return Ok(None);
        };
        let outcome = cancel_locked(&mut tx, &self.channels, run_id, &status, action).await?;
        tx.commit().await.map_err(&err)?;
        Ok(Some(outcome))
    }

    // --- run events ---

    async fn append_events(
        &self,
        run_id: Uuid,
        token: Uuid,
        events: &[(String, String)],
    ) -> Result<i64> {
        let mut tx = self.begin().await?;
        let last = append_locked(&mut tx, &self.channels, run_id, Some(token), events).await?;
        tx.commit().await.map_err(db("appending run events"))?;
        // This process's followers get them now; the others through the notification.
        if last > 0 {
            let first = last - i64::try_from(events.len()).unwrap_or(i64::MAX) + 1;
            self.notifier.feeds().publish(run_id, first, events);
        }
        Ok(last)
    }

    async fn read_events(&self, run_id: Uuid, after: i64) -> Result<Vec<RunEvent>> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, event, data FROM server_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq",
        )
        .bind(run_id)
        .bind(after)
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading run events"))?;
        Ok(rows
            .into_iter()
            .map(|(seq, event, data)| RunEvent { seq, event, data })
            .collect())
    }

    async fn thread_storage(&self, thread_id: Uuid) -> Result<ThreadStorage> {
        let thread = thread_id.to_string();
        let rows = sqlx::query(
            "SELECT payload, octet_length(metadata)::BIGINT AS metadata_bytes, is_snapshot \
             FROM graphkit_checkpoints WHERE thread_id = $1",
        )
        .bind(&thread)
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading a thread's checkpoints"))?;
        let checkpoints = rows
            .iter()
            .map(|row| {
                Ok(StoredCheckpoint {
                    payload: row.try_get("payload")?,
                    metadata_bytes: u64::try_from(row.try_get::<i64, _>("metadata_bytes")?)
                        .unwrap_or(0),
                    is_snapshot: row.try_get("is_snapshot")?,
                })
            })
            .collect::<std::result::Result<Vec<_>, sqlx::Error>>()
            .map_err(db("reading a thread's checkpoints"))?;
        let (count, bytes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*)::BIGINT, COALESCE(SUM(octet_length(payload)), 0)::BIGINT \
             FROM graphkit_checkpoint_writes WHERE thread_id = $1",
        )
        .bind(&thread)
        .fetch_one(&self.pool)
        .await
        .map_err(db("reading a thread's pending writes"))?;
        let writes = Tally {
            count: u64::try_from(count).unwrap_or(0),
            bytes: u64::try_from(bytes).unwrap_or(0),
        };
        Ok(ThreadStorage::measure(&checkpoints, writes))
    }

    async fn last_result_event(&self, run_id: Uuid) -> Result<Option<RunEvent>> {
        let row: Option<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, event, data FROM server_run_events \
             WHERE run_id = $1 AND event IN ('values', 'error') ORDER BY seq DESC LIMIT 1",
        )
        .bind(run_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db("reading a run's last values"))?;
        Ok(row.map(|(seq, event, data)| RunEvent { seq, event, data }))
    }

    async fn last_event_seq(&self, run_id: Uuid) -> Result<i64> {
        let seq: Option<i64> = sqlx::query_scalar(
            "SELECT COALESCE((SELECT last_seq FROM server_runs WHERE run_id = $1), \
             (SELECT max(seq) FROM server_run_events WHERE run_id = $1), 0)",
        )
        .bind(run_id)
        .fetch_one(&self.pool)
        .await
        .map_err(db("reading a run's last event"))?;
        Ok(seq.unwrap_or(0))
    }

    async fn prune_events(&self, age: Duration) -> Result<u64> {
        let deleted = sqlx::query(
            "DELETE FROM server_run_events e WHERE NOT EXISTS ( \
               SELECT 1 FROM server_runs r WHERE r.run_id = e.run_id \
               AND (r.ended_at IS NULL OR r.ended_at > clock_timestamp() - $1 * interval '1 microsecond'))",
        )
        .bind(lease_micros(age))
        .execute(&self.pool)
        .await
        .map_err(db("pruning run events"))?
        .rows_affected();
        Ok(deleted)
    }

    // --- crons ---

    async fn create_cron(&self, cron: &CronRecord) -> Result<()> {
        let sql = format!("INSERT INTO server_crons ({CRON_COLUMNS}) VALUES {CRON_VALUES}");
        bind_cron(sqlx::query(sqlx::AssertSqlSafe(sql)), cron)?
            .execute(&self.pool)
            .await
            .map_err(db("creating a cron"))?;
        Ok(())
    }

    async fn get_cron(&self, cron_id: Uuid) -> Result<Option<CronRecord>> {
        let query = sqlx::query("SELECT * FROM server_crons WHERE cron_id = $1").bind(cron_id);
        self.fetch_optional(query, decode_cron, "reading a cron")
            .await
    }

    async fn update_cron(&self, cron: &CronRecord, reschedule: bool) -> Result<bool> {
        let sql = "UPDATE server_crons SET assistant_id = $2, thread_id = $3, schedule = $4, \
             timezone = $5, end_time_us = $6, payload = $7, run_template = $8, on_run_completed = $9, \
             enabled = $10, next_run_us = CASE WHEN $15 THEN $11 ELSE next_run_us END, \
             metadata = $12, created_us = $13, updated_us = $14 WHERE cron_id = $1";
        let done = bind_cron(sqlx::query(sql), cron)?
            .bind(reschedule)
            .execute(&self.pool)
            .await
            .map_err(db("updating a cron"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_cron(&self, cron_id: Uuid) -> Result<bool> {
        let done = sqlx::query("DELETE FROM server_crons WHERE cron_id = $1")
            .bind(cron_id)
            .execute(&self.pool)
            .await
            .map_err(db("deleting a cron"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn crons_matching(&self, query: &CronQuery) -> Result<Vec<CronRecord>> {
        let search = sqlx::query(
            "SELECT * FROM server_crons WHERE ($1::uuid IS NULL OR assistant_id = $1) \
             AND ($2::uuid IS NULL OR thread_id = $2) AND ($3::boolean IS NULL OR enabled = $3) \
             AND ($4::jsonb IS NULL OR metadata @> $4)",
        )
        .bind(query.assistant_id)
        .bind(query.thread_id)
        .bind(query.enabled)
        .bind(query.metadata.clone().map(Value::Object));
        self.fetch_all(search, decode_cron, "searching crons").await
    }

    async fn fire_due_cron(&self, now: Timestamp) -> Result<Option<FiredCron>> {
        let err = db("firing a cron");
        let mut tx = self.begin().await?;
        // SKIP LOCKED: another process firing a cron makes this one take the next.
        let row = sqlx::query(
            "SELECT * FROM server_crons WHERE enabled AND next_run_us IS NOT NULL \
             AND next_run_us <= $1 ORDER BY next_run_us, cron_id LIMIT 1 FOR UPDATE SKIP LOCKED",
        )
        .bind(now.micros())
        .fetch_optional(&mut *tx)
        .await
        .map_err(&err)?;
        let Some(cron) = row.as_ref().map(decode_cron).transpose()? else {
            return Ok(None);
        };
        // A schedule that no longer parses (it was checked when stored) stops the cron.
        let mut next = cron.next_after(now).unwrap_or(None);
        let created = match create_run_in(&mut tx, &self.channels, cron.new_run()).await {
            Ok((run, _)) => Ok(run.run_id),
            Err(refused @ (ServerError::NotFound(_) | ServerError::Conflict(_))) => {
                tx.rollback().await.map_err(&err)?;
                tx = self.begin().await?;
                // A cron whose thread is gone stops (a thread's crons are deleted with it;
                // this one was created as the thread was being deleted).
                if matches!(refused, ServerError::NotFound(_)) {
                    next = None;
                }
                Err(refused.to_string())
            }
            Err(other) => return Err(other),
        };
        let moved = sqlx::query(
            "UPDATE server_crons SET next_run_us = $2 WHERE cron_id = $1 AND next_run_us = $3",
        )
        .bind(cron.cron_id)
        .bind(next.map(Timestamp::micros))
        .bind(cron.next_run_date.map(Timestamp::micros))
        .execute(&mut *tx)
        .await
        .map_err(&err)?;
        if moved.rows_affected() == 0 {
            // Another process fired it after the rollback: nothing to do here.
            return Ok(None);
        }
        tx.commit().await.map_err(&err)?;
        let (run_id, skipped) = match created {
            Ok(run_id) => (Some(run_id), None),
            Err(why) => (None, Some(why)),
        };
        Ok(Some(FiredCron {
            cron_id: cron.cron_id,
            run_id,
            skipped,
            next_run_date: next,
        }))
    }

    // --- expiry (ttl) ---

    async fn set_thread_ttl(&self, thread_id: Uuid, minutes: Option<f64>) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE server_threads SET ttl_minutes = $2, expires_us = $3 WHERE thread_id = $1",
        )
        .bind(thread_id)
        .bind(minutes)
        .bind(minutes.map(|m| expiry(Timestamp::now(), m).micros()))
        .execute(&self.pool)
        .await
        .map_err(db("setting a thread's ttl"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn thread_ttl(&self, thread_id: Uuid) -> Result<Option<(f64, Timestamp)>> {
        let found: Option<(Option<f64>, Option<i64>)> = sqlx::query_as(
            "SELECT ttl_minutes, expires_us FROM server_threads WHERE thread_id = $1",
        )
        .bind(thread_id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db("reading a thread's ttl"))?;
        Ok(match found {
            Some((Some(minutes), Some(expires))) => Some((minutes, Timestamp(expires))),
            _ => None,
        })
    }

    async fn expired_threads(&self, now: Timestamp, limit: usize) -> Result<Vec<Uuid>> {
        sqlx::query_scalar(
            "SELECT t.thread_id FROM server_threads t WHERE t.expires_us IS NOT NULL \
             AND t.expires_us <= $1 AND NOT EXISTS (SELECT 1 FROM server_runs r \
             WHERE r.thread_id = t.thread_id AND r.status IN ('pending', 'running')) \
             ORDER BY t.expires_us, t.thread_id LIMIT $2",
        )
        .bind(now.micros())
        .bind(self::limit(Some(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading expired threads"))
    }

    async fn set_item_ttl(
        &self,
        namespace: &[&str],
        key: &str,
        minutes: Option<f64>,
    ) -> Result<()> {
        let ns = namespace_key(namespace);
        let query = match minutes {
            Some(m) => sqlx::query(
                "INSERT INTO server_store_ttl (namespace, key, ttl_minutes, expires_us) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (namespace, key) DO UPDATE SET \
                 ttl_minutes = excluded.ttl_minutes, expires_us = excluded.expires_us",
            )
            .bind(ns)
            .bind(key.to_owned())
            .bind(m)
            .bind(expiry(Timestamp::now(), m).micros()),
            None => sqlx::query("DELETE FROM server_store_ttl WHERE namespace = $1 AND key = $2")
                .bind(ns)
                .bind(key.to_owned()),
        };
        query
            .execute(&self.pool)
            .await
            .map_err(db("setting a store item's ttl"))?;
        Ok(())
    }

    async fn item_expiry(
        &self,
        namespace: &[&str],
        key: &str,
        now: Timestamp,
        refresh: bool,
    ) -> Result<Option<Timestamp>> {
        let ns = namespace_key(namespace);
        let found: Option<(f64, i64)> = sqlx::query_as(
            "SELECT ttl_minutes, expires_us FROM server_store_ttl WHERE namespace = $1 AND key = $2",
        )
        .bind(&ns)
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(db("reading a store item's ttl"))?;
        let Some((minutes, expires)) = found else {
            return Ok(None);
        };
        if !refresh || expires <= now.micros() {
            return Ok(Some(Timestamp(expires)));
        }
        let renewed = expiry(now, minutes);
        sqlx::query(
            "UPDATE server_store_ttl SET expires_us = $3 WHERE namespace = $1 AND key = $2 \
             AND expires_us > $4",
        )
        .bind(&ns)
        .bind(key)
        .bind(renewed.micros())
        .bind(now.micros())
        .execute(&self.pool)
        .await
        .map_err(db("refreshing a store item's ttl"))?;
        Ok(Some(renewed))
    }

    async fn expired_items(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Vec<String>, String)>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT namespace, key FROM server_store_ttl WHERE expires_us <= $1 \
             ORDER BY expires_us LIMIT $2",
        )
        .bind(now.micros())
        .bind(self::limit(Some(limit)))
        .fetch_all(&self.pool)
        .await
        .map_err(db("reading expired store items"))?;
        rows.into_iter()
            .map(|(ns, key)| Ok((namespace_of(&ns)?, key)))
            .collect()
    }

    // --- wake-ups ---

    fn watch_run(&self, run_id: Uuid) -> Wakeup {
        self.notifier.watch_run(run_id)
    }

    fn watch_queue(&self) -> Wakeup {
        self.notifier.watch_queue()
    }

    fn feeds(&self) -> &EventFeeds {
        self.notifier.feeds()
    }
}

/// Inserts a run inside a transaction, applying its multitask strategy (see
/// [`Backend::create_run`]); returns it with the runs the strategy cancelled, and tells
/// the workers (on commit). A thread's time to live starts again with each run created
/// on it.
async fn create_run_in(
    tx: &mut Transaction<'static, Postgres>,
    channels: &Channels,
    run: NewRun,
) -> Result<(RunRecord, Vec<Uuid>)> {
    let err = db("creating a run");
    // The thread's row lock makes check-and-insert atomic against other creators.
    let mut exists = lock_thread(tx, run.thread_id).await?;
    if !exists && let Some(metadata) = &run.create_thread {
        insert_thread(&mut **tx, run.thread_id, metadata).await?;
        exists = lock_thread(tx, run.thread_id).await?;
    }
    if !exists {
        return Err(ServerError::NotFound(format!(
            "Thread or assistant not found: thread {} does not exist (create it first, or pass if_not_exists=\"create\")",
            run.thread_id
        )));
    }
    if !run.thread_metadata.is_empty() {
        merge_thread_metadata(&mut **tx, run.thread_id, &run.thread_metadata).await?;
    }
    let in_flight: Vec<(Uuid, String)> = sqlx::query_as(
        "SELECT run_id, status FROM server_runs WHERE thread_id = $1 \
             AND status IN ('pending', 'running') ORDER BY created_at FOR UPDATE",
    )
    .bind(run.thread_id)
    .fetch_all(&mut **tx)
    .await
    .map_err(&err)?;
    if run.multitask_strategy == MultitaskStrategy::Reject && !in_flight.is_empty() {
        return Err(ServerError::Conflict(
            super::sqlite::REJECT_MESSAGE.to_owned(),
        ));
    }
    let mut cancelled = Vec::new();
    if let Some(action) = run.multitask_strategy.cancel_action() {
        for (run_id, status) in in_flight {
            cancel_locked(tx, channels, run_id, &status, action).await?;
            cancelled.push(run_id);
        }
    }
    let sql = format!(
        "INSERT INTO server_runs (run_id, thread_id, assistant_id, status, metadata, kwargs, \
             multitask_strategy, created_at, updated_at, due_at) VALUES ($1, $2, $3, 'pending', $4, $5, $6, \
             clock_timestamp(), now(), GREATEST(clock_timestamp(), COALESCE({}, clock_timestamp()))) \
             RETURNING {RUN_COLUMNS}",
        micros_to_ts!("$7")
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(run.run_id)
        .bind(run.thread_id)
        .bind(run.assistant_id)
        .bind(Value::Object(run.metadata))
        .bind(&run.kwargs)
        .bind(run.multitask_strategy.as_str())
        .bind(run.not_before.map(Timestamp::micros))
        .fetch_one(&mut **tx)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(d) if d.code().as_deref() == Some("23505") => {
                ServerError::Conflict(format!("Run with ID {} already exists", run.run_id))
            }
            _ => err(e),
        })?;
    let record = decode_run(&row)?;
    sqlx::query(
        "UPDATE server_threads SET expires_us = $2 + (ttl_minutes * 60000000)::bigint \
             WHERE thread_id = $1 AND ttl_minutes IS NOT NULL",
    )
    .bind(record.thread_id)
    .bind(record.created_at.micros())
    .execute(&mut **tx)
    .await
    .map_err(&err)?;
    notify_in(tx, &channels.runs_new, &record.run_id.to_string()).await?;
    Ok((record, cancelled))
}

/// Locks the thread row of `run_id` (a run's thread never changes, so reading it first is
/// safe) and returns the thread id; `None` if the run does not exist. Every transaction
/// that locks a thread and a run locks the thread first.
async fn lock_thread_of(tx: &mut Transaction<'_, Postgres>, run_id: Uuid) -> Result<Option<Uuid>> {
    let thread_id: Option<Uuid> =
        sqlx::query_scalar("SELECT thread_id FROM server_runs WHERE run_id = $1")
            .bind(run_id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db("locking a run's thread"))?;
    let Some(thread_id) = thread_id else {
        return Ok(None);
    };
    lock_thread(tx, thread_id).await?;
    Ok(Some(thread_id))
}

/// Locks a thread's row; `false` if the thread does not exist.
async fn lock_thread(tx: &mut Transaction<'_, Postgres>, thread_id: Uuid) -> Result<bool> {
    let found = sqlx::query("SELECT 1 FROM server_threads WHERE thread_id = $1 FOR UPDATE")
        .bind(thread_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db("locking a thread"))?;
    Ok(found.is_some())
}

/// Inserts an idle thread unless its id is taken; `false` if it was.
async fn insert_thread(
    executor: impl sqlx::PgExecutor<'_>,
    thread_id: Uuid,
    metadata: &Map<String, Value>,
) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO server_threads (thread_id, metadata, status, config, created_at, updated_at, \
         state_updated_at) VALUES ($1, $2, 'idle', '{}', now(), now(), now()) \
         ON CONFLICT (thread_id) DO NOTHING",
    )
    .bind(thread_id)
    .bind(Value::Object(metadata.clone()))
    .execute(executor)
    .await
    .map_err(db("creating a thread"))?
    .rows_affected();
    Ok(inserted > 0)
}

/// Merges `metadata` into a thread's metadata (top-level keys replaced); `false` if the
/// thread does not exist.
async fn merge_thread_metadata(
    executor: impl sqlx::PgExecutor<'_>,
    thread_id: Uuid,
    metadata: &Map<String, Value>,
) -> Result<bool> {
    let updated = sqlx::query(
        "UPDATE server_threads SET metadata = metadata || $2, updated_at = now() WHERE thread_id = $1",
    )
    .bind(thread_id)
    .bind(Value::Object(metadata.clone()))
    .execute(executor)
    .await
    .map_err(db("updating a thread's metadata"))?
    .rows_affected();
    Ok(updated > 0)
}

/// Cancels a run whose row the transaction has locked (its current `status` given).
async fn cancel_locked(
    tx: &mut Transaction<'_, Postgres>,
    channels: &Channels,
    run_id: Uuid,
    status: &str,
    action: CancelAction,
) -> Result<CancelOutcome> {
    let err = db("cancelling a run");
    let id = run_id.to_string();
    match status {
        "pending" => {
            match action {
                CancelAction::Interrupt => {
                    sqlx::query(
                        "UPDATE server_runs SET status = 'interrupted', cancel_reason = 'cancelled before it started', \
                         ended_at = now(), updated_at = now() WHERE run_id = $1",
                    )
                    .bind(run_id)
                    .execute(&mut **tx)
                    .await
                    .map_err(&err)?;
                }
                CancelAction::Rollback => delete_run_rows(tx, run_id).await?,
            }
            notify_in(tx, &channels.run_status, &id).await?;
            Ok(CancelOutcome::CancelledPending)
        }
        "running" => {
            sqlx::query(
                "UPDATE server_runs SET cancel_requested = $2, updated_at = now() WHERE run_id = $1",
            )
            .bind(run_id)
            .bind(action.as_str())
            .execute(&mut **tx)
            .await
            .map_err(&err)?;
            notify_in(tx, &channels.run_control, &id).await?;
            Ok(CancelOutcome::Requested)
        }
        _ => Ok(CancelOutcome::AlreadyDone),
    }
}

async fn notify_in(tx: &mut Transaction<'_, Postgres>, channel: &str, payload: &str) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(channel)
        .bind(payload)
        .execute(&mut **tx)
        .await
        .map_err(db("sending a notification"))?;
    Ok(())
}

async fn delete_run_rows(tx: &mut Transaction<'_, Postgres>, run_id: Uuid) -> Result<()> {
    let err = db("deleting a run");
    sqlx::query("DELETE FROM server_run_events WHERE run_id = $1")
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(&err)?;
    sqlx::query("DELETE FROM server_runs WHERE run_id = $1")
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(&err)?;
    Ok(())
}

/// Appends events: the run's row hands out the sequence numbers (so they count 1, 2, 3, …
/// per run, and appends to one run serialize), the rows go in with one statement, and one
/// notification names the last.
async fn append_locked(
    tx: &mut Transaction<'_, Postgres>,
    channels: &Channels,
    run_id: Uuid,
    token: Option<Uuid>,
    events: &[(String, String)],
) -> Result<i64> {
    let err = db("appending run events");
    let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
    // With a token, only while the claim still holds the run (the fence of a worker's
    // events); without, the sweeper's own event on a run it ends.
    let last: Option<i64> = sqlx::query_scalar(
        "UPDATE server_runs SET last_seq = last_seq + $2 WHERE run_id = $1 \
         AND ($3::uuid IS NULL OR (lease_token = $3 AND status = 'running')) RETURNING last_seq",
    )
    .bind(run_id)
    .bind(count)
    .bind(token)
    .fetch_optional(&mut **tx)
    .await
    .map_err(&err)?;
    let Some(last) = last else {
        return match token {
            Some(_) => Err(ServerError::LeaseLost { run_id }),
            // A deleted run (rolled back, its thread deleted): its events have nowhere to go.
            None => Ok(0),
        };
    };
    if events.is_empty() {
        return Ok(last);
    }
    let first = last - count + 1;
    let seqs: Vec<i64> = (first..=last).collect();
    let names: Vec<&str> = events.iter().map(|(name, _)| name.as_str()).collect();
    let data: Vec<&str> = events.iter().map(|(_, data)| data.as_str()).collect();
    sqlx::query(
        "INSERT INTO server_run_events (run_id, seq, event, data) \
         SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[])",
    )
    .bind(run_id)
    .bind(&seqs)
    .bind(&names)
    .bind(&data)
    .execute(&mut **tx)
    .await
    .map_err(&err)?;
    notify_in(tx, &channels.run_events, &format!("{run_id}:{last}")).await?;
    Ok(last)
}

fn json_or_null(value: &Value) -> Option<String> {
    (!value.is_null()).then(|| value.to_string())
}

async fn set_outcome(
    connection: &mut sqlx::PgConnection,
    thread_id: Uuid,
    outcome: &ThreadOutcome,
) -> Result<()> {
    sqlx::query(
        "UPDATE server_threads SET status = $2, values_json = $3, interrupts_json = $4, error_json = $5, \
         updated_at = now(), state_updated_at = now() WHERE thread_id = $1",
    )
    .bind(thread_id)
    .bind(outcome.status.as_str())
    .bind(json_or_null(&outcome.values))
    .bind(json_or_null(&outcome.interrupts))
    .bind(json_or_null(&outcome.error))
    .execute(connection)
    .await
    .map_err(db("recording a thread's state"))?;
    Ok(())
}

/// [`set_outcome`] for a run that ended without a worker to read the state: the status and
/// the error change, the values stay as the last run left them.
async fn set_outcome_keep_values(
    connection: &mut sqlx::PgConnection,
    thread_id: Uuid,
    outcome: &ThreadOutcome,
) -> Result<()> {
    sqlx::query(
        "UPDATE server_threads SET status = $2, error_json = $3, updated_at = now() WHERE thread_id = $1",
    )
    .bind(thread_id)
    .bind(outcome.status.as_str())
    .bind(json_or_null(&outcome.error))
    .execute(connection)
    .await
    .map_err(db("recording a thread's state"))?;
    Ok(())
}
