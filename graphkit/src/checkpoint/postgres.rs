//! [`PostgresSaver`]: checkpoints in PostgreSQL, for several processes or machines that
//! share threads.
//!
//! The schema is created and migrated on connect (see [`MIGRATIONS`]), under a transaction
//! advisory lock so that processes starting together do not race. Thread locks are
//! session-level advisory locks, each held on a connection of its own for as long as the run
//! holds the thread: when the holder dies, its connection closes and the server releases
//! the lock.

use std::collections::HashMap;

use async_trait::async_trait;
use futures::TryStreamExt;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions, PgRow};
use sqlx::{Connection, Row};
use tokio::sync::Mutex;

use super::sql::{backend_error, decode_record};
use super::{CheckpointRecord, CheckpointTuple, Checkpointer, ListOptions, PendingWrite, now_ms};
use crate::error::Error;

const BACKEND: &str = "postgres checkpointer";

/// One step of a schema's history: (version, description, SQL). Versions count 1, 2, 3, ...;
/// the statements run in one transaction. Once released, a migration is never edited: a
/// change is a new migration with the next version.
pub(crate) type Migration = (i64, &'static str, &'static str);

/// The checkpointer's schema history. Ids and namespaces use the "C" collation so they sort
/// byte by byte, as checkpoint ids are meant to. Metadata is JSON text rather than JSONB:
/// JSONB refuses strings holding U+0000, and a checkpoint must never fail to save because
/// of what a user put in its metadata.
const MIGRATIONS: &[Migration] = &[(
    1,
    "checkpoints, pending writes",
    r#"
        CREATE TABLE graphkit_checkpoints (
            thread_id      TEXT COLLATE "C" NOT NULL,
            checkpoint_ns  TEXT COLLATE "C" NOT NULL,
            checkpoint_id  TEXT COLLATE "C" NOT NULL,
            parent_id      TEXT,
            format_version BIGINT  NOT NULL,
            step           BIGINT  NOT NULL,
            source         TEXT    NOT NULL,
            created_at_ms  BIGINT  NOT NULL,
            metadata       TEXT    NOT NULL,
            is_snapshot    BOOLEAN NOT NULL,
            payload        BYTEA   NOT NULL,
            PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id)
        );
        CREATE TABLE graphkit_checkpoint_writes (
            seq           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            thread_id     TEXT  NOT NULL,
            checkpoint_ns TEXT  NOT NULL,
            checkpoint_id TEXT  NOT NULL,
            task_id       TEXT  NOT NULL,
            node          TEXT  NOT NULL,
            payload       BYTEA NOT NULL,
            UNIQUE (thread_id, checkpoint_ns, checkpoint_id, task_id)
        );
    "#,
)];

/// Saves checkpoints in PostgreSQL.
///
/// Runs in several processes (or on several machines) may share threads through it: a
/// thread's lock is a PostgreSQL advisory lock, so a second run on a busy thread is refused
/// wherever it starts, and a run whose process dies releases the thread with its connection.
///
/// ```no_run
/// use std::sync::Arc;
/// use graphkit::checkpoint::PostgresSaver;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let saver = Arc::new(PostgresSaver::connect("postgres://app@db.internal/app").await?);
/// # Ok(()) }
/// ```
pub struct PostgresSaver {
    pool: PgPool,
    /// Thread id -> the run holding it from this saver, and the connection holding the
    /// advisory lock (outside the pool, so the lock lives exactly as long as the hold).
    locks: Mutex<HashMap<String, HeldLock>>,
}

struct HeldLock {
    run_id: String,
    connection: PgConnection,
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSaver")
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl PostgresSaver {
    /// How long [`connect`](Self::connect) waits for the server by default.
    pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

    /// Connects to the database at `url` (for example `postgres://user@host:5432/db`, or
    /// `postgres://user@[::1]:5432/db` for an IPv6 address) and migrates its schema.
    /// Gives up after [`CONNECT_TIMEOUT`](Self::CONNECT_TIMEOUT) with the cause
    /// (connection refused, unknown host, no answer).
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::connect_with_timeout(url, Self::CONNECT_TIMEOUT).await
    }

    /// [`connect`](Self::connect) with its own connect timeout.
    pub async fn connect_with_timeout(url: &str, timeout: Duration) -> Result<Self, Error> {
        Self::from_pool(Self::connect_pool(url, BACKEND, timeout).await?).await
    }

    /// Uses an existing pool (for example one shared with a
    /// [`PostgresStore`](crate::store::PostgresStore)), migrating its schema first. Each
    /// thread lock held takes one more connection, outside the pool's limit.
    pub async fn from_pool(pool: PgPool) -> Result<Self, Error> {
        Self::migrate(&pool, BACKEND, "checkpoint", MIGRATIONS).await?;
        Ok(Self {
            pool,
            locks: Mutex::default(),
        })
    }

    /// The connection pool, to share it with a store or to inspect the tables.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) async fn connect_pool(
        url: &str,
        backend: &'static str,
        timeout: Duration,
    ) -> Result<PgPool, Error> {
        let options = connect_options(url, backend)?;
        // One direct attempt first: the pool retries a refused connection until its
        // acquire timeout and then says only "timed out"; this reports the cause at once.
        let host = options.get_host();
        let where_to = if host.contains(':') {
            format!("[{host}]:{}", options.get_port())
        } else {
            format!("{host}:{}", options.get_port())
        };
        match tokio::time::timeout(timeout, PgConnection::connect_with(&options)).await {
            Err(_) => {
                return Err(Error::Backend {
                    backend,
                    message: format!(
                        "cannot connect to {where_to}: no answer within {timeout:?}; check the host and port, or raise the connect timeout"
                    ),
                });
            }
            Ok(Err(e)) => {
                return Err(backend_error(
                    backend,
                    &format!("cannot connect to {where_to}"),
                    e,
                ));
            }
            Ok(Ok(connection)) => close(connection).await,
        }
        PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(timeout.max(Duration::from_secs(1)))
            .connect_with(options)
            .await
            .map_err(|e| backend_error(backend, &format!("cannot connect to {where_to}"), e))
    }

    /// Applies the migrations of `component` that the database has not seen, in order, in one
    /// transaction that first takes a transaction-level advisory lock, so processes starting
    /// at once apply each migration exactly once.
    pub(crate) async fn migrate(
        pool: &PgPool,
        backend: &'static str,
        component: &str,
        migrations: &[Migration],
    ) -> Result<(), Error> {
        let err = |e| backend_error(backend, "schema migration failed", e);
        let mut tx = pool.begin().await.map_err(err)?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(advisory_key("graphkit migrations"))
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS graphkit_migrations (
                component     TEXT   NOT NULL,
                version       BIGINT NOT NULL,
                description   TEXT   NOT NULL,
                applied_at_ms BIGINT NOT NULL,
                PRIMARY KEY (component, version)
            )",
        )
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let applied: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(version), 0) FROM graphkit_migrations WHERE component = $1",
        )
        .bind(component)
        .fetch_one(&mut *tx)
        .await
        .map_err(err)?;
        let known = migrations.last().map_or(0, |m| m.0);
        if applied > known {
            return Err(Error::Backend {
                backend,
                message: format!(
                    "the database's {component} schema is at version {applied}, newer than this build knows ({known}); upgrade graphkit"
                ),
            });
        }
        for &(version, description, sql) in migrations.iter().filter(|m| m.0 > applied) {
            sqlx::raw_sql(sql).execute(&mut *tx).await.map_err(err)?;
            sqlx::query(
                "INSERT INTO graphkit_migrations (component, version, description, applied_at_ms) VALUES ($1, $2, $3, $4)",
            )
            .bind(component)
            .bind(version)
            .bind(description)
            .bind(now_ms())
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }
}

/// A 64-bit advisory lock key for `name` (FNV-1a): stable across processes, builds and
/// graphkit versions, which every process sharing the database must agree on.
fn advisory_key(name: &str) -> i64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    i64::from_ne_bytes(hash.to_ne_bytes())
}

fn thread_lock_key(thread_id: &str) -> i64 {
    advisory_key(&format!("graphkit thread {thread_id}"))
}

/// A query of checkpoint rows, in the column order [`decode_record`] reads.
macro_rules! select_checkpoints {
    ($where:literal) => {
        concat!(
            "SELECT checkpoint_id, parent_id, format_version, step, source, created_at_ms, metadata, is_snapshot, \
             payload FROM graphkit_checkpoints ",
            $where
        )
    };
}

fn decode_write(row: &PgRow, thread_id: &str, checkpoint_id: &str) -> Result<PendingWrite, Error> {
    let column = |name: &str, e: sqlx::Error| Error::CorruptCheckpoint {
        thread_id: thread_id.to_owned(),
        checkpoint_id: checkpoint_id.to_owned(),
        message: format!("pending write column {name}: {e}"),
    };
    Ok(PendingWrite {
        task_id: row.try_get("task_id").map_err(|e| column("task_id", e))?,
        node: row.try_get("node").map_err(|e| column("node", e))?,
        payload: row.try_get("payload").map_err(|e| column("payload", e))?,
    })
}

#[async_trait]
impl Checkpointer for PostgresSaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), Error> {
        let metadata = serde_json::to_string(&record.metadata).map_err(|source| Error::Serde {
            what: "checkpoint metadata".to_owned(),
            source,
        })?;
        sqlx::query(
            "INSERT INTO graphkit_checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_id, format_version, \
             step, source, created_at_ms, metadata, is_snapshot, payload) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id) DO UPDATE SET \
             parent_id = excluded.parent_id, format_version = excluded.format_version, step = excluded.step, \
             source = excluded.source, created_at_ms = excluded.created_at_ms, metadata = excluded.metadata, \
             is_snapshot = excluded.is_snapshot, payload = excluded.payload",
        )
        .bind(&record.thread_id)
        .bind(&record.checkpoint_ns)
        .bind(&record.checkpoint_id)
        .bind(&record.parent_id)
        .bind(i64::from(record.format_version))
        .bind(record.step)
        .bind(record.source.as_str())
        .bind(record.created_at_ms)
        .bind(metadata)
        .bind(record.is_snapshot)
        .bind(&record.payload)
        .execute(&self.pool)
        .await
        .map_err(|e| backend_error(BACKEND, "saving a checkpoint", e))?;
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), Error> {
        let err = |e| backend_error(BACKEND, "saving pending writes", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        for write in writes {
            // On a task id already saved, the row (and so its place in the order) stays.
            sqlx::query(
                "INSERT INTO graphkit_checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id, node, payload) \
                 VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id) DO UPDATE SET \
                 node = excluded.node, payload = excluded.payload",
            )
            .bind(thread_id)
            .bind(checkpoint_ns)
            .bind(checkpoint_id)
            .bind(&write.task_id)
            .bind(&write.node)
            .bind(&write.payload)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<CheckpointTuple>, Error> {
        let err = |e| backend_error(BACKEND, "reading a checkpoint", e);
        let row = match checkpoint_id {
            Some(id) => sqlx::query(select_checkpoints!(
                "WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3"
            ))
            .bind(thread_id)
            .bind(checkpoint_ns)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?,
            None => sqlx::query(select_checkpoints!(
                "WHERE thread_id = $1 AND checkpoint_ns = $2 ORDER BY checkpoint_id DESC LIMIT 1"
            ))
            .bind(thread_id)
            .bind(checkpoint_ns)
            .fetch_optional(&self.pool)
            .await
            .map_err(err)?,
        };
        let Some(row) = row else { return Ok(None) };
        let record = decode_record(&row, thread_id, checkpoint_ns)?;
        let pending_writes = sqlx::query(
            "SELECT task_id, node, payload FROM graphkit_checkpoint_writes \
             WHERE thread_id = $1 AND checkpoint_ns = $2 AND checkpoint_id = $3 ORDER BY seq",
        )
        .bind(thread_id)
        .bind(checkpoint_ns)
        .bind(&record.checkpoint_id)
        .fetch_all(&self.pool)
        .await
        .map_err(err)?
        .iter()
        .map(|row| decode_write(row, thread_id, &record.checkpoint_id))
        .collect::<Result<_, _>>()?;
        Ok(Some(CheckpointTuple {
            record,
            pending_writes,
        }))
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, Error> {
        let err = |e| backend_error(BACKEND, "listing checkpoints", e);
        let limit = options.limit.unwrap_or(usize::MAX);
        // With a metadata filter the limit applies after filtering, which happens here.
        let sql_limit = match (&options.metadata, options.limit) {
            (None, Some(limit)) => Some(i64::try_from(limit).unwrap_or(i64::MAX)),
            _ => None,
        };
        let mut rows = sqlx::query(select_checkpoints!(
            "WHERE thread_id = $1 AND checkpoint_ns = $2 AND ($3::text IS NULL OR checkpoint_id < $3) \
             ORDER BY checkpoint_id DESC LIMIT $4"
        ))
        .bind(thread_id)
        .bind(checkpoint_ns)
        .bind(options.before.as_deref())
        .bind(sql_limit)
        .fetch(&self.pool);
        let mut records = Vec::new();
        while records.len() < limit {
            let Some(row) = rows.try_next().await.map_err(err)? else {
                break;
            };
            let record = decode_record(&row, thread_id, checkpoint_ns)?;
            if options
                .metadata
                .as_ref()
                .is_none_or(|filter| crate::store::matches_filter(&record.metadata, filter))
            {
                records.push(record);
            }
        }
        Ok(records)
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), Error> {
        let err = |e| backend_error(BACKEND, "deleting a thread", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        for sql in [
            "DELETE FROM graphkit_checkpoint_writes WHERE thread_id = $1",
            "DELETE FROM graphkit_checkpoints WHERE thread_id = $1",
        ] {
            sqlx::query(sql)
                .bind(thread_id)
                .execute(&mut *tx)
                .await
                .map_err(err)?;
        }
        tx.commit().await.map_err(err)
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, Error> {
        let err = |e| backend_error(BACKEND, "deleting a run's checkpoints", e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        sqlx::query(
            "DELETE FROM graphkit_checkpoint_writes WHERE thread_id = $1 AND checkpoint_id IN \
             (SELECT checkpoint_id FROM graphkit_checkpoints WHERE thread_id = $1 \
              AND (metadata::jsonb ->> 'run_id') = $2)",
        )
        .bind(thread_id)
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
        let deleted = sqlx::query(
            "DELETE FROM graphkit_checkpoints WHERE thread_id = $1 AND (metadata::jsonb ->> 'run_id') = $2",
        )
        .bind(thread_id)
        .bind(run_id)
        .execute(&mut *tx)
        .await
        .map_err(err)?
        .rows_affected();
        tx.commit().await.map_err(err)?;
        Ok(deleted)
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, Error> {
        let err = |e| backend_error(BACKEND, "locking a thread", e);
        // Held across the round trip so two runs of this process cannot both take the thread.
        let mut locks = self.locks.lock().await;
        if let Some(held) = locks.get(thread_id) {
            return Ok(held.run_id == run_id);
        }
        let mut connection = self.pool.acquire().await.map_err(err)?.detach();
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
            .bind(thread_lock_key(thread_id))
            .fetch_one(&mut connection)
            .await
            .map_err(err)?;
        if taken {
            locks.insert(
                thread_id.to_owned(),
                HeldLock {
                    run_id: run_id.to_owned(),
                    connection,
                },
            );
        } else {
            close(connection).await;
        }
        Ok(taken)
    }

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), Error> {
        let held = {
            let mut locks = self.locks.lock().await;
            match locks.get(thread_id) {
                Some(held) if held.run_id == run_id => locks.remove(thread_id),
                _ => None,
            }
        };
        let Some(HeldLock { mut connection, .. }) = held else {
            return Ok(());
        };
        // Unlocking explicitly frees the thread at once; closing alone would free it only
        // when the server notices the connection is gone.
        if let Err(e) = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(thread_lock_key(thread_id))
            .execute(&mut connection)
            .await
        {
            // The connection is broken, so its session, and the lock with it, is ending anyway.
            tracing::warn!(thread_id, error = %e, "could not unlock a thread explicitly; dropping its connection");
        }
        close(connection).await;
        Ok(())
    }
}

/// The connect options of `url`; an IPv6 literal host (`[::1]`) loses its brackets, which
/// the URL keeps but a socket address must not have.
fn connect_options(url: &str, backend: &'static str) -> Result<PgConnectOptions, Error> {
    let options = PgConnectOptions::from_str(url).map_err(|e| Error::Backend {
        backend,
        message: format!(
            "invalid PostgreSQL URL: {e}; expected postgres://user[:password]@host[:port]/database"
        ),
    })?;
    let host = options.get_host().to_owned();
    Ok(
        match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(literal) => options.host(literal),
            None => options,
        },
    )
}

async fn close(connection: PgConnection) {
    if let Err(e) = connection.close().await {
        tracing::debug!(error = %e, "closing a thread-lock connection failed");
    }
}
