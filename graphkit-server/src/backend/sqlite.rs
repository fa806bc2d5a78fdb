//! [`SqliteBackend`]: the embedded default. One SQLite file holds the server's tables, the
//! checkpoints and the store; wake-ups are in-process. Meant for one server process (the
//! file's locks would let several share it, but their wake-ups would not cross processes:
//! use PostgreSQL for that).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use graphkit::checkpoint::{Checkpointer, SqliteSaver, WriteFence};
use graphkit::sql::{Migration, Schema, migrate_sqlite};
use graphkit::store::{SqliteStore, Store};
use serde_json::{Map, Value};
use sqlx::sqlite::{SqlitePool, SqliteRow};
use sqlx::{AssertSqlSafe, Row, Sqlite, Transaction};
use uuid::Uuid;

use super::{
    AssistantPatch, AssistantQuery, AssistantRecord, AssistantVersion, Backend, CancelAction,
    CancelOutcome, CreatedRun, CronQuery, CronRecord, EventFeeds, FiredCron, IfExists, Lease,
    MultitaskStrategy, NewRun, NewThread, Notifier, RunEnd, RunEnding, RunEvent, RunQuery,
    RunRecord, RunStatus, StoredCheckpoint, Tally, ThreadOutcome, ThreadQuery, ThreadRecord,
    ThreadStatus, ThreadStorage, VersionQuery, Wakeup, attempts_exceeded, counts_by_status, expiry,
    json_contains, namespace_key, namespace_of, no_such_version,
};
use crate::error::{Result, ServerError, database_error, without_source_position};
use crate::time::Timestamp;

/// The server's schema history, run by graphkit's migration runner (component `server` in
/// `graphkit_migrations`). A released migration is never edited.
const SCHEMA: Schema = Schema {
    component: "server",
    upgrade: "graphkit-server",
    migrations: &[
        Migration {
            version: 1,
            description: "assistants, threads, runs (the queue), run events",
            sql: "
    CREATE TABLE graphkit_server_assistants (
        assistant_id TEXT PRIMARY KEY,
        graph_id     TEXT NOT NULL,
        config       TEXT NOT NULL,
        context      TEXT NOT NULL,
        metadata     TEXT NOT NULL,
        name         TEXT NOT NULL,
        description  TEXT,
        created_at   INTEGER NOT NULL,
        updated_at   INTEGER NOT NULL,
        version      INTEGER NOT NULL
    );
    CREATE TABLE graphkit_server_threads (
        thread_id        TEXT PRIMARY KEY,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL,
        state_updated_at INTEGER NOT NULL,
        metadata         TEXT NOT NULL,
        status           TEXT NOT NULL,
        config           TEXT NOT NULL,
        state_values     TEXT NOT NULL,
        interrupts       TEXT NOT NULL,
        error            TEXT NOT NULL
    );
    CREATE TABLE graphkit_server_runs (
        run_id             TEXT PRIMARY KEY,
        thread_id          TEXT NOT NULL,
        assistant_id       TEXT NOT NULL,
        created_at         INTEGER NOT NULL,
        updated_at         INTEGER NOT NULL,
        status             TEXT NOT NULL,
        metadata           TEXT NOT NULL,
        kwargs             TEXT NOT NULL,
        multitask_strategy TEXT NOT NULL,
        attempt            INTEGER NOT NULL,
        worker_id          TEXT,
        lease_until        INTEGER,
        cancel_requested   TEXT,
        cancel_reason      TEXT,
        ended_at           INTEGER
    );
    CREATE UNIQUE INDEX graphkit_server_one_running_run_per_thread
        ON graphkit_server_runs (thread_id) WHERE status = 'running';
    CREATE INDEX graphkit_server_runs_by_thread ON graphkit_server_runs (thread_id, created_at);
    CREATE INDEX graphkit_server_runs_by_status ON graphkit_server_runs (status, created_at);
    CREATE TABLE graphkit_server_run_events (
        run_id TEXT NOT NULL,
        seq    INTEGER NOT NULL,
        event  TEXT NOT NULL,
        data   TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
    ",
        },
        Migration {
            version: 2,
            description: "a run's due time (after_seconds) apart from its creation time",
            // Until now `created_at` held the due time; it stays that for older runs.
            sql: "
    ALTER TABLE graphkit_server_runs ADD COLUMN due_at INTEGER NOT NULL DEFAULT 0;
    UPDATE graphkit_server_runs SET due_at = created_at;
    CREATE INDEX graphkit_server_runs_due ON graphkit_server_runs (status, due_at);
    ",
        },
        Migration {
            version: 3,
            description: "a lease token per claim, which fences the writes of a worker that lost the run",
            // Runs running at the upgrade have no token: their workers (of the old version)
            // are gone, and the sweeper returns the runs to the queue when their leases end.
            sql: "
    ALTER TABLE graphkit_server_runs ADD COLUMN lease_token TEXT;
    ",
        },
        Migration {
            version: 4,
            description: "assistant versions",
            // Every assistant so far is at the version its row holds; that is its one version.
            sql: "
    CREATE TABLE graphkit_server_assistant_versions (
        assistant_id TEXT NOT NULL,
        version      INTEGER NOT NULL,
        graph_id     TEXT NOT NULL,
        config       TEXT NOT NULL,
        context      TEXT NOT NULL,
        metadata     TEXT NOT NULL,
        name         TEXT NOT NULL,
        description  TEXT,
        created_at   INTEGER NOT NULL,
        PRIMARY KEY (assistant_id, version)
    );
    INSERT INTO graphkit_server_assistant_versions (assistant_id, version, graph_id, config, context, \
        metadata, name, description, created_at)
        SELECT assistant_id, version, graph_id, config, context, metadata, name, description, updated_at
        FROM graphkit_server_assistants;
    ",
        },
        Migration {
            version: 5,
            description: "crons; expiry times (ttl) of threads and store items",
            sql: "
    CREATE TABLE graphkit_server_crons (
        cron_id          TEXT PRIMARY KEY,
        assistant_id     TEXT NOT NULL,
        thread_id        TEXT,
        schedule         TEXT NOT NULL,
        timezone         TEXT,
        end_time         INTEGER,
        payload          TEXT NOT NULL,
        run_template     TEXT NOT NULL,
        on_run_completed TEXT,
        enabled          INTEGER NOT NULL,
        next_run_at      INTEGER,
        metadata         TEXT NOT NULL,
        created_at       INTEGER NOT NULL,
        updated_at       INTEGER NOT NULL
    );
    CREATE INDEX graphkit_server_crons_due ON graphkit_server_crons (next_run_at) WHERE enabled = 1;
    ALTER TABLE graphkit_server_threads ADD COLUMN ttl_minutes REAL;
    ALTER TABLE graphkit_server_threads ADD COLUMN expires_at INTEGER;
    CREATE INDEX graphkit_server_threads_expiry ON graphkit_server_threads (expires_at)
        WHERE expires_at IS NOT NULL;
    CREATE TABLE graphkit_server_store_ttl (
        namespace   TEXT NOT NULL,
        key         TEXT NOT NULL,
        ttl_minutes REAL NOT NULL,
        expires_at  INTEGER NOT NULL,
        PRIMARY KEY (namespace, key)
    );
    CREATE INDEX graphkit_server_store_ttl_expiry ON graphkit_server_store_ttl (expires_at);
    ",
        },
        Migration {
            version: 6,
            description: "a run's request (kwargs) in a table of its own",
            // SQLite rewrites a whole row when an update changes its size: with the request
            // in the run's row, claiming and ending a run with a big input rewrote the input.
            sql: "
    CREATE TABLE graphkit_server_run_kwargs (
        run_id TEXT PRIMARY KEY,
        kwargs TEXT NOT NULL
    );
    INSERT INTO graphkit_server_run_kwargs (run_id, kwargs)
        SELECT run_id, kwargs FROM graphkit_server_runs;
    ALTER TABLE graphkit_server_runs DROP COLUMN kwargs;
    ",
        },
    ],
};

/// The fence of a claim's writes: the run is still running under the claim's token. Checked
/// inside each write's `IMMEDIATE` transaction, which holds the file's write lock, so a
/// takeover commits either before the check (and the write is refused) or after the write.
const FENCE: &str = "SELECT 1 FROM graphkit_server_runs WHERE run_id = ?1 AND lease_token = ?2 AND status = 'running'";

/// A run's columns except its request (`kwargs`, in `graphkit_server_run_kwargs`): what
/// an insert or update returns.
const RUN_COLUMNS: &str = "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, \
     multitask_strategy, attempt, worker_id, lease_until, lease_token, cancel_requested, cancel_reason";

/// Runs with their requests (`r` the run, `k` its request).
const RUN_SELECT: &str = "SELECT r.run_id, r.thread_id, r.assistant_id, r.created_at, r.updated_at, r.status, \
     r.metadata, r.multitask_strategy, r.attempt, r.worker_id, r.lease_until, r.lease_token, \
     r.cancel_requested, r.cancel_reason, k.kwargs \
     FROM graphkit_server_runs r JOIN graphkit_server_run_kwargs k ON k.run_id = r.run_id";

const THREAD_SELECT: &str = "SELECT t.thread_id, t.created_at, t.updated_at, t.state_updated_at, t.metadata, \
     t.status, t.config, t.state_values, t.interrupts, t.error, \
     EXISTS (SELECT 1 FROM graphkit_server_runs r WHERE r.thread_id = t.thread_id \
             AND r.status IN ('pending', 'running')) AS busy \
     FROM graphkit_server_threads t";

/// The message of a `reject` refusal (the reference server's words).
pub const REJECT_MESSAGE: &str = "Thread is already running a task. Wait for it to finish or choose a different multitask strategy.";

/// The embedded backend: one SQLite file (WAL) for the server's tables, the checkpoints and
/// the store.
///
/// ```no_run
/// # async fn open() -> Result<(), graphkit_server::ServerError> {
/// let backend = graphkit_server::backend::SqliteBackend::open("graphkit-server.db").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteBackend {
    pool: SqlitePool,
    saver: Arc<SqliteSaver>,
    store: Arc<SqliteStore>,
    notifier: Notifier,
}

fn db(doing: &str) -> impl FnOnce(sqlx::Error) -> ServerError + '_ {
    move |e| ServerError::Backend(format!("{doing}: {}", database_error(&e)))
}

impl SqliteBackend {
    /// Opens (creating if needed) the database file and migrates its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let saver = SqliteSaver::open(path.as_ref()).await?;
        Self::from_saver(saver).await
    }

    /// A private database in memory (for tests and demos): lost when dropped.
    pub async fn in_memory() -> Result<Self> {
        Self::from_saver(SqliteSaver::in_memory().await?).await
    }

    async fn from_saver(saver: SqliteSaver) -> Result<Self> {
        let pool = saver.pool().clone();
        let store = SqliteStore::from_pool(pool.clone()).await?;
        migrate(&pool).await?;
        Ok(Self {
            pool,
            saver: Arc::new(saver),
            store: Arc::new(store),
            notifier: Notifier::new(),
        })
    }

    /// The pool (shared with the checkpointer and the store).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// A write transaction that holds the database's write lock from its first statement,
    /// so a read followed by a write never fails on a concurrent commit.
    async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(db("begin a transaction"))
    }

    /// The assistants `query` matches (all of them: its limit and offset ignored), newest
    /// first: the one filter of `search_assistants` and `count_assistants`.
    async fn assistants_matching(&self, query: &AssistantQuery) -> Result<Vec<AssistantRecord>> {
        let rows = sqlx::query(
            "SELECT * FROM graphkit_server_assistants ORDER BY created_at DESC, assistant_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db("read assistants"))?;
        let mut found = Vec::new();
        for row in &rows {
            let a = assistant_from_row(row)?;
            let keep = query.graph_id.as_ref().is_none_or(|g| *g == a.graph_id)
                && query.name.as_ref().is_none_or(|n| *n == a.name)
                && contains_metadata(&a.metadata, query.metadata.as_ref());
            if keep {
                found.push(a);
            }
        }
        Ok(found)
    }

    /// The threads `query` matches (all of them, unordered: its limit, offset and order
    /// ignored): the one filter of `search_threads` and `count_threads`.
    async fn threads_matching(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>> {
        let rows = sqlx::query(THREAD_SELECT)
            .fetch_all(&self.pool)
            .await
            .map_err(db("read threads"))?;
        let mut found = Vec::new();
        for row in &rows {
            let t = thread_from_row(row)?;
            let keep = contains_metadata(&t.metadata, query.metadata.as_ref())
                && query
                    .values
                    .as_ref()
                    .is_none_or(|v| json_contains(&t.values, &Value::Object(v.clone())))
                && query
                    .ids
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&t.thread_id))
                && query.status.is_none_or(|s| s == t.status);
            if keep {
                found.push(t);
            }
        }
        Ok(found)
    }
}

/// Whether `metadata` contains `wanted` (JSON containment; `None` wants nothing).
fn contains_metadata(metadata: &Map<String, Value>, wanted: Option<&Map<String, Value>>) -> bool {
    wanted
        .is_none_or(|m| json_contains(&Value::Object(metadata.clone()), &Value::Object(m.clone())))
}

/// The page of `items` a query's `offset` and `limit` select.
fn page<T>(items: Vec<T>, offset: usize, limit: Option<usize>) -> Vec<T> {
    items
        .into_iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .collect()
}

/// Migrates the server's tables. The checkpointer has migrated its own first, so
/// `graphkit_migrations` exists.
async fn migrate(pool: &SqlitePool) -> Result<()> {
    adopt_old_schema_table(pool).await?;
    migrate_sqlite(pool, "sqlite server backend", &SCHEMA)
        .await
        .map_err(|e| ServerError::Startup(without_source_position(&e.to_string())))
}

/// Databases made before the server's schema joined `graphkit_migrations` recorded its
/// versions in a table of their own, `graphkit_server_schema`: they are copied over (once:
/// a copied version is ignored), so the runner does not apply them again. The old table
/// stays, unused.
async fn adopt_old_schema_table(pool: &SqlitePool) -> Result<()> {
    let old: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'graphkit_server_schema')",
    )
    .fetch_one(pool)
    .await
    .map_err(db("read the schema version"))?;
    if old {
        sqlx::query(
            "INSERT OR IGNORE INTO graphkit_migrations (component, version, description, applied_at_ms) \
             SELECT ?1, version, 'recorded in graphkit_server_schema', ?2 FROM graphkit_server_schema",
        )
        .bind(SCHEMA.component)
        .bind(graphkit::checkpoint::now_ms())
        .execute(pool)
        .await
        .map_err(db("record the schema version"))?;
    }
    Ok(())
}

fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

fn parse_json(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| ServerError::backend(&format!("decode {what}"), e))
}

fn parse_object(text: &str, what: &str) -> Result<Map<String, Value>> {
    match parse_json(text, what)? {
        Value::Object(map) => Ok(map),
        _ => Ok(Map::new()),
    }
}

fn parse_id(text: &str) -> Result<Uuid> {
    Uuid::try_parse(text).map_err(|e| ServerError::backend("decode an id", e))
}

fn get<'r, T: sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite>>(
    row: &'r SqliteRow,
    column: &str,
) -> Result<T> {
    row.try_get(column)
        .map_err(|e| ServerError::backend(&format!("read column {column}"), e))
}

fn assistant_from_row(row: &SqliteRow) -> Result<AssistantRecord> {
    Ok(AssistantRecord {
        assistant_id: parse_id(&get::<String>(row, "assistant_id")?)?,
        graph_id: get(row, "graph_id")?,
        config: parse_json(&get::<String>(row, "config")?, "assistant config")?,
        context: parse_json(&get::<String>(row, "context")?, "assistant context")?,
        metadata: parse_object(&get::<String>(row, "metadata")?, "assistant metadata")?,
        name: get(row, "name")?,
        description: get(row, "description")?,
        created_at: Timestamp(get(row, "created_at")?),
        updated_at: Timestamp(get(row, "updated_at")?),
        version: get(row, "version")?,
    })
}

fn version_from_row(row: &SqliteRow) -> Result<AssistantVersion> {
    Ok(AssistantVersion {
        assistant_id: parse_id(&get::<String>(row, "assistant_id")?)?,
        version: get(row, "version")?,
        graph_id: get(row, "graph_id")?,
        config: parse_json(&get::<String>(row, "config")?, "assistant config")?,
        context: parse_json(&get::<String>(row, "context")?, "assistant context")?,
        metadata: parse_object(&get::<String>(row, "metadata")?, "assistant metadata")?,
        name: get(row, "name")?,
        description: get(row, "description")?,
        created_at: Timestamp(get(row, "created_at")?),
    })
}

/// An assistant, read inside a write transaction.
async fn assistant_in(
    tx: &mut Transaction<'static, Sqlite>,
    assistant_id: Uuid,
) -> Result<Option<AssistantRecord>> {
    let row = sqlx::query("SELECT * FROM graphkit_server_assistants WHERE assistant_id = ?1")
        .bind(assistant_id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db("read an assistant"))?;
    row.as_ref().map(assistant_from_row).transpose()
}

/// Writes `a` as the assistant's current row and records its version.
async fn save_assistant(tx: &mut Transaction<'static, Sqlite>, a: &AssistantRecord) -> Result<()> {
    sqlx::query(
        "INSERT INTO graphkit_server_assistants (assistant_id, graph_id, config, context, metadata, name, \
         description, created_at, updated_at, version) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) \
         ON CONFLICT (assistant_id) DO UPDATE SET graph_id = excluded.graph_id, config = excluded.config, \
         context = excluded.context, metadata = excluded.metadata, name = excluded.name, \
         description = excluded.description, updated_at = excluded.updated_at, version = excluded.version",
    )
    .bind(a.assistant_id.to_string())
    .bind(&a.graph_id)
    .bind(json_text(&a.config))
    .bind(json_text(&a.context))
    .bind(json_text(&a.metadata))
    .bind(&a.name)
    .bind(&a.description)
    .bind(a.created_at.micros())
    .bind(a.updated_at.micros())
    .bind(a.version)
    .execute(&mut **tx)
    .await
    .map_err(db("save an assistant"))?;
    sqlx::query(
        "INSERT OR IGNORE INTO graphkit_server_assistant_versions (assistant_id, version, graph_id, config, \
         context, metadata, name, description, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .bind(a.assistant_id.to_string())
    .bind(a.version)
    .bind(&a.graph_id)
    .bind(json_text(&a.config))
    .bind(json_text(&a.context))
    .bind(json_text(&a.metadata))
    .bind(&a.name)
    .bind(&a.description)
    .bind(a.updated_at.micros())
    .execute(&mut **tx)
    .await
    .map_err(db("record an assistant version"))?;
    Ok(())
}

fn thread_from_row(row: &SqliteRow) -> Result<ThreadRecord> {
    let busy: bool = get(row, "busy")?;
    let stored: String = get(row, "status")?;
    Ok(ThreadRecord {
        thread_id: parse_id(&get::<String>(row, "thread_id")?)?,
        created_at: Timestamp(get(row, "created_at")?),
        updated_at: Timestamp(get(row, "updated_at")?),
        state_updated_at: Timestamp(get(row, "state_updated_at")?),
        metadata: parse_object(&get::<String>(row, "metadata")?, "thread metadata")?,
        status: if busy {
            ThreadStatus::Busy
        } else {
            ThreadStatus::parse(&stored).unwrap_or(ThreadStatus::Idle)
        },
        config: parse_json(&get::<String>(row, "config")?, "thread config")?,
        values: parse_json(&get::<String>(row, "state_values")?, "thread values")?,
        interrupts: parse_json(&get::<String>(row, "interrupts")?, "thread interrupts")?,
        error: parse_json(&get::<String>(row, "error")?, "thread error")?,
    })
}

/// The columns of a cron row, in the order [`bind_cron`] binds them.
const CRON_COLUMNS: &str = "cron_id, assistant_id, thread_id, schedule, timezone, end_time, payload, \
     run_template, on_run_completed, enabled, next_run_at, metadata, created_at, updated_at";
const CRON_VALUES: &str = "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)";

type SqliteQuery<'q> = sqlx::query::Query<'q, Sqlite, sqlx::sqlite::SqliteArguments>;

fn bind_cron<'q>(query: SqliteQuery<'q>, c: &CronRecord) -> Result<SqliteQuery<'q>> {
    let template = serde_json::to_string(&c.run)
        .map_err(|e| ServerError::backend("encode a cron's run", e))?;
    Ok(query
        .bind(c.cron_id.to_string())
        .bind(c.assistant_id.to_string())
        .bind(c.thread_id.map(|t| t.to_string()))
        .bind(c.schedule.clone())
        .bind(c.timezone.clone())
        .bind(c.end_time.map(Timestamp::micros))
        .bind(json_text(&c.payload))
        .bind(template)
        .bind(c.on_run_completed.clone())
        .bind(c.enabled)
        .bind(c.next_run_date.map(Timestamp::micros))
        .bind(json_text(&c.metadata))
        .bind(c.created_at.micros())
        .bind(c.updated_at.micros()))
}

fn cron_from_row(row: &SqliteRow) -> Result<CronRecord> {
    let thread: Option<String> = get(row, "thread_id")?;
    let template: String = get(row, "run_template")?;
    Ok(CronRecord {
        cron_id: parse_id(&get::<String>(row, "cron_id")?)?,
        assistant_id: parse_id(&get::<String>(row, "assistant_id")?)?,
        thread_id: thread.as_deref().map(parse_id).transpose()?,
        schedule: get(row, "schedule")?,
        timezone: get(row, "timezone")?,
        end_time: get::<Option<i64>>(row, "end_time")?.map(Timestamp),
        payload: parse_object(&get::<String>(row, "payload")?, "cron payload")?,
        run: serde_json::from_str(&template)
            .map_err(|e| ServerError::backend("decode a cron's run", e))?,
        on_run_completed: get(row, "on_run_completed")?,
        enabled: get(row, "enabled")?,
        next_run_date: get::<Option<i64>>(row, "next_run_at")?.map(Timestamp),
        metadata: parse_object(&get::<String>(row, "metadata")?, "cron metadata")?,
        created_at: Timestamp(get(row, "created_at")?),
        updated_at: Timestamp(get(row, "updated_at")?),
    })
}

/// A run read with [`RUN_SELECT`], its request with it.
fn run_from_row(row: &SqliteRow) -> Result<RunRecord> {
    let kwargs = parse_json(&get::<String>(row, "kwargs")?, "run kwargs")?;
    run_from_columns(row, kwargs)
}

/// A run from its [`RUN_COLUMNS`] and its request.
fn run_from_columns(row: &SqliteRow, kwargs: Value) -> Result<RunRecord> {
    let status: String = get(row, "status")?;
    let strategy: String = get(row, "multitask_strategy")?;
    let cancel: Option<String> = get(row, "cancel_requested")?;
    let attempt: i64 = get(row, "attempt")?;
    let token: Option<String> = get(row, "lease_token")?;
    Ok(RunRecord {
        run_id: parse_id(&get::<String>(row, "run_id")?)?,
        thread_id: parse_id(&get::<String>(row, "thread_id")?)?,
        assistant_id: parse_id(&get::<String>(row, "assistant_id")?)?,
        created_at: Timestamp(get(row, "created_at")?),
        updated_at: Timestamp(get(row, "updated_at")?),
        status: RunStatus::parse(&status)
            .ok_or_else(|| ServerError::Backend(format!("unknown run status {status:?}")))?,
        metadata: parse_object(&get::<String>(row, "metadata")?, "run metadata")?,
        kwargs,
        multitask_strategy: MultitaskStrategy::parse(&strategy).unwrap_or_default(),
        attempt: u32::try_from(attempt).unwrap_or(0),
        worker_id: get(row, "worker_id")?,
        lease_until: get::<Option<i64>>(row, "lease_until")?.map(Timestamp),
        lease_token: token.as_deref().map(parse_id).transpose()?,
        cancel_requested: cancel.as_deref().and_then(CancelAction::parse),
        cancel_reason: get(row, "cancel_reason")?,
    })
}

async fn thread_in(
    tx: &mut Transaction<'static, Sqlite>,
    id: Uuid,
) -> Result<Option<ThreadRecord>> {
    let sql = format!("{THREAD_SELECT} WHERE t.thread_id = ?1");
    let row = sqlx::query(AssertSqlSafe(sql))
        .bind(id.to_string())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db("read a thread"))?;
    row.as_ref().map(thread_from_row).transpose()
}

async fn insert_thread(
    tx: &mut Transaction<'static, Sqlite>,
    id: Uuid,
    metadata: &Map<String, Value>,
) -> Result<()> {
    let now = Timestamp::now().micros();
    sqlx::query(
        "INSERT INTO graphkit_server_threads (thread_id, created_at, updated_at, state_updated_at, \
         metadata, status, config, state_values, interrupts, error) \
         VALUES (?1, ?2, ?2, ?2, ?3, 'idle', '{}', 'null', '{}', 'null')",
    )
    .bind(id.to_string())
    .bind(now)
    .bind(json_text(metadata))
    .execute(&mut **tx)
    .await
    .map_err(db("insert a thread"))?;
    Ok(())
}

async fn delete_run_rows(tx: &mut Transaction<'static, Sqlite>, run_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM graphkit_server_run_events WHERE run_id = ?1")
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(db("delete run events"))?;
    sqlx::query("DELETE FROM graphkit_server_run_kwargs WHERE run_id = ?1")
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(db("delete a run's request"))?;
    sqlx::query("DELETE FROM graphkit_server_runs WHERE run_id = ?1")
        .bind(run_id)
        .execute(&mut **tx)
        .await
        .map_err(db("delete a run"))?;
    Ok(())
}

/// Cancels one run inside a transaction: a pending one at once, a running one by flag.
async fn cancel_in(
    tx: &mut Transaction<'static, Sqlite>,
    run_id: &str,
    status: RunStatus,
    action: CancelAction,
) -> Result<CancelOutcome> {
    let now = Timestamp::now().micros();
    match (status, action) {
        (RunStatus::Pending, CancelAction::Rollback) => {
            delete_run_rows(tx, run_id).await?;
            Ok(CancelOutcome::CancelledPending)
        }
        (RunStatus::Pending, CancelAction::Interrupt) => {
            sqlx::query(
                "UPDATE graphkit_server_runs SET status = 'interrupted', cancel_reason = 'cancelled before it started', \
                 updated_at = ?2, ended_at = ?2 WHERE run_id = ?1",
            )
            .bind(run_id)
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(db("cancel a pending run"))?;
            Ok(CancelOutcome::CancelledPending)
        }
        (RunStatus::Running, action) => {
            sqlx::query(
                "UPDATE graphkit_server_runs SET cancel_requested = ?2, updated_at = ?3 WHERE run_id = ?1",
            )
            .bind(run_id)
            .bind(action.as_str())
            .bind(now)
            .execute(&mut **tx)
            .await
            .map_err(db("flag a running run for cancellation"))?;
            Ok(CancelOutcome::Requested)
        }
        _ => Ok(CancelOutcome::AlreadyDone),
    }
}

/// Appends `events` to a run's stream inside `tx`; returns the last sequence number.
async fn append_in(
    tx: &mut Transaction<'static, Sqlite>,
    run_id: &str,
    events: &[(String, String)],
) -> Result<i64> {
    let mut seq: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(seq), 0) FROM graphkit_server_run_events WHERE run_id = ?1",
    )
    .bind(run_id)
    .fetch_one(&mut **tx)
    .await
    .map_err(db("read the last event"))?;
    for (event, data) in events {
        seq += 1;
        sqlx::query(
            "INSERT INTO graphkit_server_run_events (run_id, seq, event, data) VALUES (?1, ?2, ?3, ?4)",
        )
        .bind(run_id)
        .bind(seq)
        .bind(event)
        .bind(data)
        .execute(&mut **tx)
        .await
        .map_err(db("append an event"))?;
    }
    Ok(seq)
}

/// Inserts a run inside a write transaction, applying its multitask strategy (see
/// [`Backend::create_run`]); returns it with the runs the strategy cancelled. A thread's
/// time to live starts again with each run created on it.
async fn create_run_in(
    tx: &mut Transaction<'static, Sqlite>,
    run: NewRun,
) -> Result<(RunRecord, Vec<Uuid>)> {
    let thread_id = run.thread_id.to_string();
    let thread = match thread_in(tx, run.thread_id).await? {
        Some(thread) => thread,
        None => match &run.create_thread {
            Some(metadata) => {
                insert_thread(tx, run.thread_id, metadata).await?;
                thread_in(tx, run.thread_id)
                    .await?
                    .ok_or_else(|| ServerError::Backend("the new thread vanished".into()))?
            }
            None => {
                return Err(ServerError::NotFound(format!(
                    "Thread or assistant not found: thread {} does not exist (create it first, or pass if_not_exists=\"create\")",
                    run.thread_id
                )));
            }
        },
    };
    let in_flight = sqlx::query(
        "SELECT run_id, status FROM graphkit_server_runs WHERE thread_id = ?1 \
             AND status IN ('pending', 'running') ORDER BY created_at",
    )
    .bind(&thread_id)
    .fetch_all(&mut **tx)
    .await
    .map_err(db("read runs in flight"))?;
    if run.multitask_strategy == MultitaskStrategy::Reject && !in_flight.is_empty() {
        return Err(ServerError::Conflict(REJECT_MESSAGE.into()));
    }
    let mut cancelled = Vec::new();
    if let Some(action) = run.multitask_strategy.cancel_action() {
        for row in &in_flight {
            let id: String = get(row, "run_id")?;
            let status: String = get(row, "status")?;
            let status = RunStatus::parse(&status).unwrap_or(RunStatus::Pending);
            cancel_in(tx, &id, status, action).await?;
            cancelled.push(parse_id(&id)?);
        }
    }
    if !run.thread_metadata.is_empty() {
        let mut metadata = thread.metadata;
        for (k, v) in &run.thread_metadata {
            metadata.insert(k.clone(), v.clone());
        }
        sqlx::query(
                "UPDATE graphkit_server_threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
            )
            .bind(&thread_id)
            .bind(json_text(&metadata))
            .bind(Timestamp::now().micros())
            .execute(&mut **tx)
            .await
            .map_err(db("update a thread's metadata"))?;
    }
    let now = Timestamp::now();
    let due_at = run.not_before.unwrap_or(now).max(now);
    let sql = format!(
        "INSERT INTO graphkit_server_runs (run_id, thread_id, assistant_id, created_at, updated_at, status, \
             metadata, multitask_strategy, attempt, due_at) \
             VALUES (?1, ?2, ?3, ?4, ?4, 'pending', ?5, ?6, 0, ?7) RETURNING {RUN_COLUMNS}"
    );
    let row = sqlx::query(AssertSqlSafe(sql))
        .bind(run.run_id.to_string())
        .bind(&thread_id)
        .bind(run.assistant_id.to_string())
        .bind(now.micros())
        .bind(json_text(&run.metadata))
        .bind(run.multitask_strategy.as_str())
        .bind(due_at.micros())
        .fetch_one(&mut **tx)
        .await
        .map_err(db("insert a run"))?;
    sqlx::query("INSERT INTO graphkit_server_run_kwargs (run_id, kwargs) VALUES (?1, ?2)")
        .bind(run.run_id.to_string())
        .bind(json_text(&run.kwargs))
        .execute(&mut **tx)
        .await
        .map_err(db("store a run's request"))?;
    sqlx::query(
            "UPDATE graphkit_server_threads SET expires_at = ?2 + CAST(ttl_minutes * 60000000 AS INTEGER) \
             WHERE thread_id = ?1 AND ttl_minutes IS NOT NULL",
        )
        .bind(&thread_id)
        .bind(now.micros())
        .execute(&mut **tx)
        .await
        .map_err(db("refresh a thread's expiry"))?;
    Ok((run_from_columns(&row, run.kwargs)?, cancelled))
}

async fn set_outcome_in(
    tx: &mut Transaction<'static, Sqlite>,
    thread_id: Uuid,
    outcome: &ThreadOutcome,
) -> Result<()> {
    let now = Timestamp::now().micros();
    sqlx::query(
        "UPDATE graphkit_server_threads SET status = ?2, state_values = ?3, interrupts = ?4, error = ?5, \
         updated_at = ?6, state_updated_at = ?6 WHERE thread_id = ?1",
    )
    .bind(thread_id.to_string())
    .bind(outcome.status.as_str())
    .bind(json_text(&outcome.values))
    .bind(json_text(&outcome.interrupts))
    .bind(json_text(&outcome.error))
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(db("record a thread's state"))?;
    Ok(())
}

#[async_trait]
impl Backend for SqliteBackend {
    fn checkpointer(&self) -> Arc<dyn Checkpointer> {
        self.saver.clone()
    }

    fn store(&self) -> Arc<dyn Store> {
        self.store.clone()
    }

    fn fenced_checkpointer(&self, run_id: Uuid, token: Uuid) -> Arc<dyn Checkpointer> {
        let fence = WriteFence::new(
            format!("run {run_id}"),
            FENCE,
            [run_id.to_string(), token.to_string()],
        );
        Arc::new(self.saver.fenced(fence))
    }

    async fn create_assistant(
        &self,
        a: &AssistantRecord,
        if_exists: IfExists,
    ) -> Result<AssistantRecord> {
        let mut tx = self.write().await?;
        if let Some(existing) = assistant_in(&mut tx, a.assistant_id).await? {
            return match if_exists {
                IfExists::DoNothing => Ok(existing),
                IfExists::Raise => Err(ServerError::Conflict(format!(
                    "Assistant {} already exists; pass if_exists=\"do_nothing\" to get it instead",
                    a.assistant_id
                ))),
            };
        }
        save_assistant(&mut tx, a).await?;
        tx.commit().await.map_err(db("create an assistant"))?;
        Ok(a.clone())
    }

    async fn update_assistant(
        &self,
        assistant_id: Uuid,
        patch: &AssistantPatch,
    ) -> Result<Option<AssistantRecord>> {
        let mut tx = self.write().await?;
        let Some(current) = assistant_in(&mut tx, assistant_id).await? else {
            return Ok(None);
        };
        let newest: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(version) FROM graphkit_server_assistant_versions WHERE assistant_id = ?1",
        )
        .bind(assistant_id.to_string())
        .fetch_one(&mut *tx)
        .await
        .map_err(db("read an assistant's versions"))?;
        let version = newest.unwrap_or(0).max(current.version) + 1;
        let updated = patch.apply(&current, version, Timestamp::now());
        save_assistant(&mut tx, &updated).await?;
        tx.commit().await.map_err(db("update an assistant"))?;
        Ok(Some(updated))
    }

    async fn set_assistant_version(
        &self,
        assistant_id: Uuid,
        version: i64,
    ) -> Result<Option<AssistantRecord>> {
        let mut tx = self.write().await?;
        let Some(current) = assistant_in(&mut tx, assistant_id).await? else {
            return Ok(None);
        };
        let row = sqlx::query(
            "SELECT * FROM graphkit_server_assistant_versions WHERE assistant_id = ?1 AND version = ?2",
        )
        .bind(assistant_id.to_string())
        .bind(version)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db("read an assistant version"))?;
        let Some(row) = row else {
            return Err(no_such_version(assistant_id, version));
        };
        let latest = version_from_row(&row)?.restore(&current, Timestamp::now());
        save_assistant(&mut tx, &latest).await?;
        tx.commit()
            .await
            .map_err(db("set an assistant's version"))?;
        Ok(Some(latest))
    }

    async fn delete_assistant(&self, assistant_id: Uuid) -> Result<bool> {
        let mut tx = self.write().await?;
        let id = assistant_id.to_string();
        sqlx::query("DELETE FROM graphkit_server_assistant_versions WHERE assistant_id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db("delete an assistant's versions"))?;
        let deleted = sqlx::query("DELETE FROM graphkit_server_assistants WHERE assistant_id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db("delete an assistant"))?
            .rows_affected();
        tx.commit().await.map_err(db("delete an assistant"))?;
        Ok(deleted > 0)
    }

    async fn assistant_versions(
        &self,
        assistant_id: Uuid,
        query: &VersionQuery,
    ) -> Result<Vec<AssistantVersion>> {
        let rows = sqlx::query(
            "SELECT * FROM graphkit_server_assistant_versions WHERE assistant_id = ?1 ORDER BY version DESC",
        )
        .bind(assistant_id.to_string())
        .fetch_all(&self.pool)
        .await
        .map_err(db("read an assistant's versions"))?;
        let mut found = Vec::new();
        for row in &rows {
            let v = version_from_row(row)?;
            if contains_metadata(&v.metadata, query.metadata.as_ref()) {
                found.push(v);
            }
        }
        Ok(page(found, query.offset, query.limit))
    }

    async fn get_assistant(&self, assistant_id: Uuid) -> Result<Option<AssistantRecord>> {
        let row = sqlx::query("SELECT * FROM graphkit_server_assistants WHERE assistant_id = ?1")
            .bind(assistant_id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db("read an assistant"))?;
        row.as_ref().map(assistant_from_row).transpose()
    }

    async fn search_assistants(&self, query: &AssistantQuery) -> Result<Vec<AssistantRecord>> {
        let found = self.assistants_matching(query).await?;
        Ok(page(found, query.offset, query.limit))
    }

    async fn count_assistants(&self, query: &AssistantQuery) -> Result<u64> {
        Ok(self.assistants_matching(query).await?.len() as u64)
    }

    async fn create_thread(&self, thread: NewThread) -> Result<ThreadRecord> {
        let mut tx = self.write().await?;
        if let Some(existing) = thread_in(&mut tx, thread.thread_id).await? {
            return match thread.if_exists {
                IfExists::DoNothing => Ok(existing),
                IfExists::Raise => Err(ServerError::Conflict(format!(
                    "Thread {} already exists",
                    thread.thread_id
                ))),
            };
        }
        insert_thread(&mut tx, thread.thread_id, &thread.metadata).await?;
        let created = thread_in(&mut tx, thread.thread_id)
            .await?
            .ok_or_else(|| ServerError::Backend("the new thread vanished".into()))?;
        tx.commit().await.map_err(db("commit a new thread"))?;
        Ok(created)
    }

    async fn get_thread(&self, thread_id: Uuid) -> Result<Option<ThreadRecord>> {
        let sql = format!("{THREAD_SELECT} WHERE t.thread_id = ?1");
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(thread_id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db("read a thread"))?;
        row.as_ref().map(thread_from_row).transpose()
    }

    async fn patch_thread(
        &self,
        thread_id: Uuid,
        metadata: &Map<String, Value>,
    ) -> Result<Option<ThreadRecord>> {
        let mut tx = self.write().await?;
        let Some(mut thread) = thread_in(&mut tx, thread_id).await? else {
            return Ok(None);
        };
        for (k, v) in metadata {
            thread.metadata.insert(k.clone(), v.clone());
        }
        let now = Timestamp::now();
        sqlx::query(
            "UPDATE graphkit_server_threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
        )
        .bind(thread_id.to_string())
        .bind(json_text(&thread.metadata))
        .bind(now.micros())
        .execute(&mut *tx)
        .await
        .map_err(db("update a thread"))?;
        tx.commit().await.map_err(db("commit a thread update"))?;
        thread.updated_at = now;
        Ok(Some(thread))
    }

    async fn delete_thread(&self, thread_id: Uuid) -> Result<bool> {
        let mut tx = self.write().await?;
        let id = thread_id.to_string();
        let runs: Vec<String> =
            sqlx::query_scalar("SELECT run_id FROM graphkit_server_runs WHERE thread_id = ?1")
                .bind(&id)
                .fetch_all(&mut *tx)
                .await
                .map_err(db("read a thread's runs"))?;
        for run in &runs {
            delete_run_rows(&mut tx, run).await?;
        }
        // Its crons go with it (a cron on a thread runs only there).
        sqlx::query("DELETE FROM graphkit_server_crons WHERE thread_id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db("delete a thread's crons"))?;
        let deleted = sqlx::query("DELETE FROM graphkit_server_threads WHERE thread_id = ?1")
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db("delete a thread"))?
            .rows_affected()
            > 0;
        tx.commit().await.map_err(db("commit a thread deletion"))?;
        // Workers of its runs find their lease lost at their next look.
        for run in runs.iter().filter_map(|r| Uuid::try_parse(r).ok()) {
            self.notifier.notify_run(run);
        }
        Ok(deleted)
    }

    async fn search_threads(&self, query: &ThreadQuery) -> Result<Vec<ThreadRecord>> {
        let mut threads = self.threads_matching(query).await?;
        let by = query.sort_by.as_deref().unwrap_or("created_at");
        if !super::THREAD_SORT_COLUMNS.contains(&by) {
            return Err(ServerError::Validation(format!(
                "sort_by must be one of {}, not {by:?}",
                super::THREAD_SORT_COLUMNS.join(", ")
            )));
        }
        threads.sort_by(|a, b| {
            let order = match by {
                "thread_id" => a.thread_id.cmp(&b.thread_id),
                "updated_at" => a.updated_at.cmp(&b.updated_at),
                "state_updated_at" => a.state_updated_at.cmp(&b.state_updated_at),
                "status" => a.status.as_str().cmp(b.status.as_str()),
                _ => a.created_at.cmp(&b.created_at),
            }
            .then_with(|| a.thread_id.cmp(&b.thread_id));
            if query.ascending {
                order
            } else {
                order.reverse()
            }
        });
        Ok(page(threads, query.offset, query.limit))
    }

    async fn count_threads(&self, query: &ThreadQuery) -> Result<u64> {
        Ok(self.threads_matching(query).await?.len() as u64)
    }

    async fn set_thread_outcome(&self, thread_id: Uuid, outcome: &ThreadOutcome) -> Result<()> {
        let mut tx = self.write().await?;
        set_outcome_in(&mut tx, thread_id, outcome).await?;
        tx.commit().await.map_err(db("commit a thread's state"))
    }

    async fn create_run(&self, run: NewRun) -> Result<CreatedRun> {
        let mut tx = self.write().await?;
        let (inserted, cancelled) = create_run_in(&mut tx, run).await?;
        tx.commit().await.map_err(db("commit a new run"))?;
        for id in &cancelled {
            self.notifier.notify_run(*id);
        }
        self.notifier.notify_queue();
        Ok(CreatedRun {
            run: inserted,
            cancelled,
        })
    }

    async fn get_run(&self, thread_id: Option<Uuid>, run_id: Uuid) -> Result<Option<RunRecord>> {
        let sql = format!("{RUN_SELECT} WHERE r.run_id = ?1");
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(run_id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db("read a run"))?;
        let run = row.as_ref().map(run_from_row).transpose()?;
        Ok(run.filter(|r| thread_id.is_none_or(|t| t == r.thread_id)))
    }

    async fn run_status(&self, run_id: Uuid) -> Result<Option<RunEnding>> {
        let row: Option<(String, Option<String>)> = sqlx::query_as(
            "SELECT status, cancel_reason FROM graphkit_server_runs WHERE run_id = ?1",
        )
        .bind(run_id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db("read a run's status"))?;
        row.map(|(status, cancel_reason)| {
            Ok(RunEnding {
                status: RunStatus::parse(&status).ok_or_else(|| {
                    ServerError::Backend(format!("unknown run status {status:?}"))
                })?,
                cancel_reason,
            })
        })
        .transpose()
    }

    async fn list_runs(&self, thread_id: Uuid, query: &RunQuery) -> Result<Vec<RunRecord>> {
        let sql = format!(
            "{RUN_SELECT} WHERE r.thread_id = ?1 \
             AND (?2 IS NULL OR r.status = ?2) ORDER BY r.created_at DESC, r.run_id DESC LIMIT ?3 OFFSET ?4"
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(thread_id.to_string())
            .bind(query.status.map(RunStatus::as_str))
            .bind(
                query
                    .limit
                    .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX)),
            )
            .bind(i64::try_from(query.offset).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db("list runs"))?;
        rows.iter().map(run_from_row).collect()
    }

    async fn count_runs_by_status(&self) -> Result<Vec<(RunStatus, u64)>> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM graphkit_server_runs GROUP BY status")
                .fetch_all(&self.pool)
                .await
                .map_err(db("count runs"))?;
        Ok(counts_by_status(rows))
    }

    async fn delete_run(&self, thread_id: Uuid, run_id: Uuid) -> Result<bool> {
        let mut tx = self.write().await?;
        let status: Option<String> = sqlx::query_scalar(
            "SELECT status FROM graphkit_server_runs WHERE run_id = ?1 AND thread_id = ?2",
        )
        .bind(run_id.to_string())
        .bind(thread_id.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db("read a run"))?;
        let Some(status) = status else {
            return Ok(false);
        };
        if RunStatus::parse(&status).is_some_and(|s| !s.is_terminal()) {
            return Err(ServerError::Conflict(format!(
                "run {run_id} is {status}; cancel it before deleting it"
            )));
        }
        delete_run_rows(&mut tx, &run_id.to_string()).await?;
        tx.commit().await.map_err(db("commit a run deletion"))?;
        Ok(true)
    }

    async fn claim_run(&self, worker_id: &str, lease: Duration) -> Result<Option<RunRecord>> {
        let mut tx = self.write().await?;
        let now = Timestamp::now();
        let next: Option<String> = sqlx::query_scalar(
            "SELECT r.run_id FROM graphkit_server_runs r WHERE r.status = 'pending' AND r.due_at <= ?1 \
             AND NOT EXISTS (SELECT 1 FROM graphkit_server_runs x WHERE x.thread_id = r.thread_id \
                             AND x.status = 'running') \
             ORDER BY r.due_at, r.run_id LIMIT 1",
        )
        .bind(now.micros())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db("find a pending run"))?;
        let Some(run_id) = next else {
            return Ok(None);
        };
        let sql = format!(
            "UPDATE graphkit_server_runs SET status = 'running', worker_id = ?2, attempt = attempt + 1, \
             lease_until = ?3, updated_at = ?4, lease_token = ?5 WHERE run_id = ?1 RETURNING {RUN_COLUMNS}"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(&run_id)
            .bind(worker_id)
            .bind(now.plus(lease).micros())
            .bind(now.micros())
            .bind(Uuid::now_v7().to_string())
            .fetch_one(&mut *tx)
            .await
            .map_err(db("claim a run"))?;
        let kwargs: String =
            sqlx::query_scalar("SELECT kwargs FROM graphkit_server_run_kwargs WHERE run_id = ?1")
                .bind(&run_id)
                .fetch_one(&mut *tx)
                .await
                .map_err(db("read a run's request"))?;
        let run = run_from_columns(&row, parse_json(&kwargs, "run kwargs")?)?;
        tx.commit().await.map_err(db("commit a claim"))?;
        self.notifier.notify_run(run.run_id);
        Ok(Some(run))
    }

    async fn heartbeat(&self, run_id: Uuid, token: Uuid, lease: Duration) -> Result<Lease> {
        let now = Timestamp::now();
        let row: Option<Option<String>> = sqlx::query_scalar(
            "UPDATE graphkit_server_runs SET lease_until = ?3 WHERE run_id = ?1 AND lease_token = ?2 \
             AND status = 'running' RETURNING cancel_requested",
        )
        .bind(run_id.to_string())
        .bind(token.to_string())
        .bind(now.plus(lease).micros())
        .fetch_optional(&self.pool)
        .await
        .map_err(db("renew a lease"))?;
        Ok(match row {
            None => Lease::Lost,
            Some(cancel) => Lease::Held {
                cancel: cancel.as_deref().and_then(CancelAction::parse),
            },
        })
    }

    async fn finish_run(
        &self,
        run_id: Uuid,
        token: Uuid,
        end: RunEnd,
        outcome: Option<&ThreadOutcome>,
    ) -> Result<bool> {
        let mut tx = self.write().await?;
        let id = run_id.to_string();
        let thread: Option<String> = sqlx::query_scalar(
            "SELECT thread_id FROM graphkit_server_runs WHERE run_id = ?1 AND lease_token = ?2 AND status = 'running'",
        )
        .bind(&id)
        .bind(token.to_string())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db("read a run"))?;
        let Some(thread) = thread else {
            return Ok(false);
        };
        let now = Timestamp::now().micros();
        match end.recorded() {
            None => delete_run_rows(&mut tx, &id).await?,
            Some((status, reason)) => {
                sqlx::query(
                    "UPDATE graphkit_server_runs SET status = ?2, cancel_reason = ?3, worker_id = NULL, \
                     lease_until = NULL, lease_token = NULL, updated_at = ?4, ended_at = ?4 WHERE run_id = ?1",
                )
                .bind(&id)
                .bind(status.as_str())
                .bind(reason)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db("end a run"))?;
            }
        }
        if let Some(outcome) = outcome {
            set_outcome_in(&mut tx, parse_id(&thread)?, outcome).await?;
        }
        tx.commit().await.map_err(db("commit a run's end"))?;
        self.notifier.notify_run(run_id);
        self.notifier.notify_queue();
        Ok(true)
    }

    async fn release_run(&self, run_id: Uuid, token: Uuid) -> Result<bool> {
        let released = sqlx::query(
            "UPDATE graphkit_server_runs SET status = 'pending', worker_id = NULL, lease_until = NULL, \
             lease_token = NULL, updated_at = ?3 WHERE run_id = ?1 AND lease_token = ?2 AND status = 'running'",
        )
        .bind(run_id.to_string())
        .bind(token.to_string())
        .bind(Timestamp::now().micros())
        .execute(&self.pool)
        .await
        .map_err(db("release a run"))?
        .rows_affected()
            > 0;
        if released {
            self.notifier.notify_run(run_id);
            self.notifier.notify_queue();
        }
        Ok(released)
    }

    async fn sweep_expired(&self, max_attempts: u32) -> Result<Vec<Uuid>> {
        let mut tx = self.write().await?;
        let now = Timestamp::now().micros();
        let expired = sqlx::query(
            "SELECT run_id, thread_id, attempt FROM graphkit_server_runs WHERE status = 'running' AND lease_until <= ?1",
        )
        .bind(now)
        .fetch_all(&mut *tx)
        .await
        .map_err(db("find expired leases"))?;
        let mut swept = Vec::new();
        for row in &expired {
            let id: String = get(row, "run_id")?;
            let attempt: i64 = get(row, "attempt")?;
            if attempt >= i64::from(max_attempts) {
                let (reason, error) = attempts_exceeded(&id, attempt);
                sqlx::query(
                    "UPDATE graphkit_server_runs SET status = 'error', cancel_reason = ?2, worker_id = NULL, \
                     lease_until = NULL, lease_token = NULL, updated_at = ?3, ended_at = ?3 WHERE run_id = ?1",
                )
                .bind(&id)
                .bind(&reason)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db("fail an expired run"))?;
                sqlx::query("UPDATE graphkit_server_threads SET status = 'error', error = ?2, updated_at = ?3 WHERE thread_id = ?1")
                    .bind(get::<String>(row, "thread_id")?)
                    .bind(json_text(&error))
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .map_err(db("record a thread's error"))?;
                // Only the final failure reaches the stream (a retried attempt stays silent).
                append_in(&mut tx, &id, &[("error".to_owned(), error.to_string())]).await?;
            } else {
                sqlx::query(
                    "UPDATE graphkit_server_runs SET status = 'pending', worker_id = NULL, lease_until = NULL, lease_token = NULL, \
                     updated_at = ?2 WHERE run_id = ?1",
                )
                .bind(&id)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db("requeue an expired run"))?;
            }
            swept.push(parse_id(&id)?);
        }
        tx.commit().await.map_err(db("commit a sweep"))?;
        for id in &swept {
            self.notifier.notify_run(*id);
        }
        if !swept.is_empty() {
            self.notifier.notify_queue();
        }
        Ok(swept)
    }

    async fn request_cancel(
        &self,
        thread_id: Option<Uuid>,
        run_id: Uuid,
        action: CancelAction,
    ) -> Result<Option<CancelOutcome>> {
        let mut tx = self.write().await?;
        let row =
            sqlx::query("SELECT thread_id, status FROM graphkit_server_runs WHERE run_id = ?1")
                .bind(run_id.to_string())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db("read a run"))?;
        let Some(row) = row else { return Ok(None) };
        let thread: String = get(&row, "thread_id")?;
        if thread_id.is_some_and(|t| t.to_string() != thread) {
            return Ok(None);
        }
        let status: String = get(&row, "status")?;
        let status = RunStatus::parse(&status).unwrap_or(RunStatus::Success);
        let outcome = cancel_in(&mut tx, &run_id.to_string(), status, action).await?;
        tx.commit().await.map_err(db("commit a cancel"))?;
        if outcome != CancelOutcome::AlreadyDone {
            self.notifier.notify_run(run_id);
            self.notifier.notify_queue();
        }
        Ok(Some(outcome))
    }

    async fn append_events(
        &self,
        run_id: Uuid,
        token: Uuid,
        events: &[(String, String)],
    ) -> Result<i64> {
        let mut tx = self.write().await?;
        let held = sqlx::query(FENCE)
            .bind(run_id.to_string())
            .bind(token.to_string())
            .fetch_optional(&mut *tx)
            .await
            .map_err(db("check a run's lease"))?
            .is_some();
        if !held {
            return Err(ServerError::LeaseLost { run_id });
        }
        let seq = append_in(&mut tx, &run_id.to_string(), events).await?;
        tx.commit().await.map_err(db("commit events"))?;
        let first = seq - i64::try_from(events.len()).unwrap_or(i64::MAX) + 1;
        self.notifier.feeds().publish(run_id, first, events);
        self.notifier.notify_run_events(run_id);
        Ok(seq)
    }

    async fn read_events(&self, run_id: Uuid, after: i64) -> Result<Vec<RunEvent>> {
        let rows = sqlx::query(
            "SELECT seq, event, data FROM graphkit_server_run_events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq",
        )
        .bind(run_id.to_string())
        .bind(after)
        .fetch_all(&self.pool)
        .await
        .map_err(db("read events"))?;
        rows.iter()
            .map(|row| {
                Ok(RunEvent {
                    seq: get(row, "seq")?,
                    event: get(row, "event")?,
                    data: get(row, "data")?,
                })
            })
            .collect()
    }

    async fn thread_storage(&self, thread_id: Uuid) -> Result<ThreadStorage> {
        let thread = thread_id.to_string();
        let rows = sqlx::query(
            "SELECT payload, length(CAST(metadata AS BLOB)) AS metadata_bytes, is_snapshot \
             FROM graphkit_checkpoints WHERE thread_id = ?1",
        )
        .bind(&thread)
        .fetch_all(&self.pool)
        .await
        .map_err(db("read a thread's checkpoints"))?;
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
            .map_err(db("read a thread's checkpoints"))?;
        let (count, bytes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), COALESCE(SUM(length(payload)), 0) \
             FROM graphkit_checkpoint_writes WHERE thread_id = ?1",
        )
        .bind(&thread)
        .fetch_one(&self.pool)
        .await
        .map_err(db("read a thread's pending writes"))?;
        let writes = Tally {
            count: u64::try_from(count).unwrap_or(0),
            bytes: u64::try_from(bytes).unwrap_or(0),
        };
        Ok(ThreadStorage::measure(&checkpoints, writes))
    }

    async fn last_result_event(&self, run_id: Uuid) -> Result<Option<RunEvent>> {
        let row: Option<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, event, data FROM graphkit_server_run_events \
             WHERE run_id = ?1 AND event IN ('values', 'error') ORDER BY seq DESC LIMIT 1",
        )
        .bind(run_id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db("read a run's last values"))?;
        Ok(row.map(|(seq, event, data)| RunEvent { seq, event, data }))
    }

    async fn last_event_seq(&self, run_id: Uuid) -> Result<i64> {
        sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq), 0) FROM graphkit_server_run_events WHERE run_id = ?1",
        )
        .bind(run_id.to_string())
        .fetch_one(&self.pool)
        .await
        .map_err(db("read the last event"))
    }

    async fn prune_events(&self, age: Duration) -> Result<u64> {
        let cutoff = Timestamp::now().micros() - i64::try_from(age.as_micros()).unwrap_or(i64::MAX);
        let done = sqlx::query(
            "DELETE FROM graphkit_server_run_events WHERE run_id IN \
             (SELECT run_id FROM graphkit_server_runs WHERE ended_at IS NOT NULL AND ended_at < ?1)",
        )
        .bind(cutoff)
        .execute(&self.pool)
        .await
        .map_err(db("prune events"))?;
        Ok(done.rows_affected())
    }

    async fn create_cron(&self, cron: &CronRecord) -> Result<()> {
        let sql =
            format!("INSERT INTO graphkit_server_crons ({CRON_COLUMNS}) VALUES {CRON_VALUES}");
        bind_cron(sqlx::query(AssertSqlSafe(sql)), cron)?
            .execute(&self.pool)
            .await
            .map_err(db("insert a cron"))?;
        Ok(())
    }

    async fn get_cron(&self, cron_id: Uuid) -> Result<Option<CronRecord>> {
        let row = sqlx::query("SELECT * FROM graphkit_server_crons WHERE cron_id = ?1")
            .bind(cron_id.to_string())
            .fetch_optional(&self.pool)
            .await
            .map_err(db("read a cron"))?;
        row.as_ref().map(cron_from_row).transpose()
    }

    async fn update_cron(&self, cron: &CronRecord, reschedule: bool) -> Result<bool> {
        let sql = "UPDATE graphkit_server_crons SET assistant_id = ?2, thread_id = ?3, schedule = ?4, \
             timezone = ?5, end_time = ?6, payload = ?7, run_template = ?8, on_run_completed = ?9, \
             enabled = ?10, next_run_at = CASE WHEN ?15 THEN ?11 ELSE next_run_at END, \
             metadata = ?12, created_at = ?13, updated_at = ?14 WHERE cron_id = ?1";
        let done = bind_cron(sqlx::query(sql), cron)?
            .bind(reschedule)
            .execute(&self.pool)
            .await
            .map_err(db("update a cron"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn delete_cron(&self, cron_id: Uuid) -> Result<bool> {
        let done = sqlx::query("DELETE FROM graphkit_server_crons WHERE cron_id = ?1")
            .bind(cron_id.to_string())
            .execute(&self.pool)
            .await
            .map_err(db("delete a cron"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn crons_matching(&self, query: &CronQuery) -> Result<Vec<CronRecord>> {
        let rows = sqlx::query("SELECT * FROM graphkit_server_crons")
            .fetch_all(&self.pool)
            .await
            .map_err(db("read crons"))?;
        let mut found = Vec::new();
        for row in &rows {
            let cron = cron_from_row(row)?;
            if query.matches(&cron) {
                found.push(cron);
            }
        }
        Ok(found)
    }

    async fn fire_due_cron(&self, now: Timestamp) -> Result<Option<FiredCron>> {
        let mut tx = self.write().await?;
        let row = sqlx::query(
            "SELECT * FROM graphkit_server_crons WHERE enabled = 1 AND next_run_at IS NOT NULL \
             AND next_run_at <= ?1 ORDER BY next_run_at, cron_id LIMIT 1",
        )
        .bind(now.micros())
        .fetch_optional(&mut *tx)
        .await
        .map_err(db("read due crons"))?;
        let Some(cron) = row.as_ref().map(cron_from_row).transpose()? else {
            return Ok(None);
        };
        // A schedule that no longer parses (it was checked when stored) stops the cron.
        let mut next = cron.next_after(now).unwrap_or(None);
        let created = match create_run_in(&mut tx, cron.new_run()).await {
            Ok((run, cancelled)) => Ok((run.run_id, cancelled)),
            Err(refused @ (ServerError::NotFound(_) | ServerError::Conflict(_))) => {
                // Nothing was written for the refused run; start over to be sure.
                tx.rollback().await.map_err(db("roll back a cron's run"))?;
                tx = self.write().await?;
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
            "UPDATE graphkit_server_crons SET next_run_at = ?2 WHERE cron_id = ?1 AND next_run_at = ?3",
        )
        .bind(cron.cron_id.to_string())
        .bind(next.map(Timestamp::micros))
        .bind(cron.next_run_date.map(Timestamp::micros))
        .execute(&mut *tx)
        .await
        .map_err(db("move a cron on"))?;
        if moved.rows_affected() == 0 {
            // Changed meanwhile (only possible after the rollback): look again next time.
            return Ok(None);
        }
        tx.commit().await.map_err(db("commit a cron's run"))?;
        let (run_id, skipped) = match created {
            Ok((run_id, cancelled)) => {
                for id in &cancelled {
                    self.notifier.notify_run(*id);
                }
                self.notifier.notify_queue();
                (Some(run_id), None)
            }
            Err(why) => (None, Some(why)),
        };
        Ok(Some(FiredCron {
            cron_id: cron.cron_id,
            run_id,
            skipped,
            next_run_date: next,
        }))
    }

    async fn set_thread_ttl(&self, thread_id: Uuid, minutes: Option<f64>) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE graphkit_server_threads SET ttl_minutes = ?2, expires_at = ?3 WHERE thread_id = ?1",
        )
        .bind(thread_id.to_string())
        .bind(minutes)
        .bind(minutes.map(|m| expiry(Timestamp::now(), m).micros()))
        .execute(&self.pool)
        .await
        .map_err(db("set a thread's ttl"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn thread_ttl(&self, thread_id: Uuid) -> Result<Option<(f64, Timestamp)>> {
        let found: Option<(Option<f64>, Option<i64>)> = sqlx::query_as(
            "SELECT ttl_minutes, expires_at FROM graphkit_server_threads WHERE thread_id = ?1",
        )
        .bind(thread_id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(db("read a thread's ttl"))?;
        Ok(match found {
            Some((Some(minutes), Some(expires))) => Some((minutes, Timestamp(expires))),
            _ => None,
        })
    }

    async fn expired_threads(&self, now: Timestamp, limit: usize) -> Result<Vec<Uuid>> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT t.thread_id FROM graphkit_server_threads t WHERE t.expires_at IS NOT NULL \
             AND t.expires_at <= ?1 AND NOT EXISTS (SELECT 1 FROM graphkit_server_runs r \
             WHERE r.thread_id = t.thread_id AND r.status IN ('pending', 'running')) \
             ORDER BY t.expires_at, t.thread_id LIMIT ?2",
        )
        .bind(now.micros())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db("read expired threads"))?;
        ids.iter().map(|id| parse_id(id)).collect()
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
                "INSERT INTO graphkit_server_store_ttl (namespace, key, ttl_minutes, expires_at) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (namespace, key) DO UPDATE SET \
                 ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at",
            )
            .bind(ns)
            .bind(key)
            .bind(m)
            .bind(expiry(Timestamp::now(), m).micros()),
            None => sqlx::query(
                "DELETE FROM graphkit_server_store_ttl WHERE namespace = ?1 AND key = ?2",
            )
            .bind(ns)
            .bind(key),
        };
        query
            .execute(&self.pool)
            .await
            .map_err(db("set a store item's ttl"))?;
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
            "SELECT ttl_minutes, expires_at FROM graphkit_server_store_ttl WHERE namespace = ?1 AND key = ?2",
        )
        .bind(&ns)
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(db("read a store item's ttl"))?;
        let Some((minutes, expires)) = found else {
            return Ok(None);
        };
        if !refresh || expires <= now.micros() {
            return Ok(Some(Timestamp(expires)));
        }
        let renewed = expiry(now, minutes);
        sqlx::query(
            "UPDATE graphkit_server_store_ttl SET expires_at = ?3 WHERE namespace = ?1 AND key = ?2 \
             AND expires_at > ?4",
        )
        .bind(&ns)
        .bind(key)
        .bind(renewed.micros())
        .bind(now.micros())
        .execute(&self.pool)
        .await
        .map_err(db("refresh a store item's ttl"))?;
        Ok(Some(renewed))
    }

    async fn expired_items(
        &self,
        now: Timestamp,
        limit: usize,
    ) -> Result<Vec<(Vec<String>, String)>> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT namespace, key FROM graphkit_server_store_ttl WHERE expires_at <= ?1 \
             ORDER BY expires_at LIMIT ?2",
        )
        .bind(now.micros())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db("read expired store items"))?;
        rows.into_iter()
            .map(|(ns, key)| Ok((namespace_of(&ns)?, key)))
            .collect()
    }

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
