//! [`PostgresSaver`]: checkpoints in PostgreSQL, for several processes or machines that
//! share threads.
//!
//! The schema is created and migrated on connect (see [`SCHEMA`]), under a transaction
//! advisory lock so that processes starting together do not race. Thread locks are
//! session-level advisory locks, each held on a connection of its own for as long as the run
//! holds the thread: when the holder dies, its connection closes and the server releases
//! the lock. While a run holds its thread, the thread's checkpoints are written on that
//! connection (one round trip each, with no pool checkout); once the lock is released the
//! connection is kept for the next lock, rather than a new one being opened per run.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use sqlx::postgres::{PgConnection, PgPool};
use tokio::sync::Mutex;

use super::sql::{
    POSTGRES, bind_checkpoint, bind_write, execute_each, get_checkpoint, list_checkpoints,
    metadata_text,
};
use super::{
    CheckpointRecord, CheckpointTuple, Checkpointer, ListOptions, PendingWrite, WriteFence,
};
use crate::error::StorageError;
use crate::sql::postgres::{advisory_key, close, connect_pool};
use crate::sql::{Migration, Schema, backend_error, migrate_postgres};

const BACKEND: &str = "postgres checkpointer";

/// The checkpointer's schema history. Ids and namespaces use the "C" collation so they sort
/// byte by byte, as checkpoint ids are meant to. Metadata is JSON text rather than JSONB:
/// JSONB refuses strings holding U+0000, and a checkpoint must never fail to save because
/// of what a user put in its metadata.
const SCHEMA: Schema = Schema {
    component: "checkpoint",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "checkpoints, pending writes",
        sql: r#"
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
    }],
};

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
    /// Connections whose thread lock was released, kept to hold the next one.
    spare: std::sync::Mutex<Vec<PgConnection>>,
    /// The condition every write checks first, for a saver made by [`fenced`](Self::fenced).
    fence: Option<WriteFence>,
}

struct HeldLock {
    run_id: String,
    /// The connection holding the lock; the thread's checkpoints are written on it too.
    connection: Arc<Mutex<PgConnection>>,
}

/// The most released lock connections a saver keeps for reuse.
const MAX_SPARE_CONNECTIONS: usize = 4;

/// Tries to take the advisory lock `key` on `connection`.
async fn try_advisory_lock(connection: &mut PgConnection, key: i64) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(key)
        .fetch_one(connection)
        .await
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
    pub async fn connect(url: &str) -> Result<Self, StorageError> {
        Self::connect_with_timeout(url, Self::CONNECT_TIMEOUT).await
    }

    /// [`connect`](Self::connect) with its own connect timeout.
    pub async fn connect_with_timeout(url: &str, timeout: Duration) -> Result<Self, StorageError> {
        Self::from_pool(connect_pool(url, BACKEND, timeout).await?).await
    }

    /// Uses an existing pool (for example one shared with a
    /// [`PostgresStore`](crate::store::PostgresStore)), migrating its schema first. Each
    /// thread lock held takes one more connection, outside the pool's limit (kept open
    /// for the next lock once released, up to four).
    pub async fn from_pool(pool: PgPool) -> Result<Self, StorageError> {
        migrate_postgres(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self {
            pool,
            locks: Mutex::default(),
            spare: std::sync::Mutex::default(),
            fence: None,
        })
    }

    /// The same database, with every write (checkpoints, pending writes, deleting a run or
    /// a thread) refused unless `fence` passes in the write's own transaction; taking the
    /// thread only checks the fence, with no advisory lock (see [`WriteFence`]). Cheap: the
    /// pool is shared.
    #[must_use]
    pub fn fenced(&self, fence: WriteFence) -> Self {
        Self {
            pool: self.pool.clone(),
            locks: Mutex::default(),
            spare: std::sync::Mutex::default(),
            fence: Some(fence),
        }
    }

    /// Begins a transaction and checks the fence, if any, in it.
    async fn begin_write(
        &self,
        doing: &'static str,
    ) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StorageError> {
        let err = |e| backend_error(BACKEND, doing, e);
        let mut tx = self.pool.begin().await.map_err(err)?;
        if let Some(fence) = &self.fence {
            let mut query = sqlx::query(sqlx::AssertSqlSafe(fence.query().to_owned()));
            for param in fence.params() {
                query = query.bind(param.clone());
            }
            if query.fetch_optional(&mut *tx).await.map_err(err)?.is_none() {
                return Err(fence.refused(doing));
            }
        }
        Ok(tx)
    }

    /// Keeps `connection`, which holds no thread lock, for the next lock (up to
    /// [`MAX_SPARE_CONNECTIONS`]), or closes it.
    async fn keep_or_close(&self, connection: PgConnection) {
        let extra = {
            let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
            if spare.len() < MAX_SPARE_CONNECTIONS {
                spare.push(connection);
                None
            } else {
                Some(connection)
            }
        };
        if let Some(connection) = extra {
            close(connection).await;
        }
    }

    /// The connection pool, to share it with a store or to inspect the tables.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

fn thread_lock_key(thread_id: &str) -> i64 {
    advisory_key(&format!("graphkit thread {thread_id}"))
}

#[async_trait]
impl Checkpointer for PostgresSaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), StorageError> {
        let err = |e| backend_error(BACKEND, "saving a checkpoint", e);
        let metadata = metadata_text(&record)?;
        let insert = bind_checkpoint!(
            sqlx::query(POSTGRES.insert_checkpoint.as_str()),
            record,
            metadata
        );
        if self.fence.is_none() {
            // On the connection of the thread's lock when this saver holds it: what the
            // by-hand floor does (one connection, one round trip per checkpoint).
            let held = (self.locks.lock().await)
                .get(&record.thread_id)
                .map(|held| Arc::clone(&held.connection));
            let outcome = match held {
                Some(connection) => {
                    let mut connection = connection.lock().await;
                    insert.execute(&mut *connection).await
                }
                None => insert.execute(&self.pool).await,
            };
            outcome.map_err(err)?;
            return Ok(());
        }
        let mut tx = self.begin_write("saving a checkpoint").await?;
        insert.execute(&mut *tx).await.map_err(err)?;
        tx.commit().await.map_err(err)
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), StorageError> {
        let err = |e| backend_error(BACKEND, "saving pending writes", e);
        let mut tx = self.begin_write("saving pending writes").await?;
        for write in &writes {
            let query = sqlx::query(POSTGRES.upsert_write.as_str());
            bind_write!(query, thread_id, checkpoint_ns, checkpoint_id, write)
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
    ) -> Result<Option<CheckpointTuple>, StorageError> {
        get_checkpoint!(
            &self.pool,
            POSTGRES,
            BACKEND,
            thread_id,
            checkpoint_ns,
            checkpoint_id
        )
        .await
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, StorageError> {
        list_checkpoints!(
            &self.pool,
            POSTGRES,
            BACKEND,
            thread_id,
            checkpoint_ns,
            options
        )
        .await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        let err = |e| backend_error(BACKEND, "deleting a thread", e);
        let mut tx = self.begin_write("deleting a thread").await?;
        execute_each!(tx, &POSTGRES.delete_thread, err, thread_id);
        tx.commit().await.map_err(err)
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, StorageError> {
        let err = |e| backend_error(BACKEND, "deleting a run's checkpoints", e);
        let mut tx = self.begin_write("deleting a run's checkpoints").await?;
        let deleted = execute_each!(tx, &POSTGRES.delete_run, err, thread_id, run_id);
        tx.commit().await.map_err(err)?;
        Ok(deleted)
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, StorageError> {
        if self.fence.is_some() {
            // The fence is the lock: whoever passes it holds the thread.
            self.begin_write("taking the thread").await?;
            return Ok(true);
        }
        let err = |e| backend_error(BACKEND, "locking a thread", e);
        // Held across the round trip so two runs of this process cannot both take the thread.
        let mut locks = self.locks.lock().await;
        if let Some(held) = locks.get(thread_id) {
            return Ok(held.run_id == run_id);
        }
        let key = thread_lock_key(thread_id);
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        // A kept connection the server has closed since is dropped for a fresh one.
        let reused = match spare {
            Some(mut connection) => match try_advisory_lock(&mut connection, key).await {
                Ok(taken) => Some((connection, taken)),
                Err(e) => {
                    tracing::debug!(error = %e, "a kept thread-lock connection failed; opening another");
                    None
                }
            },
            None => None,
        };
        let (connection, taken) = match reused {
            Some(reused) => reused,
            None => {
                let mut connection = self.pool.acquire().await.map_err(err)?.detach();
                let taken = try_advisory_lock(&mut connection, key).await.map_err(err)?;
                (connection, taken)
            }
        };
        if taken {
            locks.insert(
                thread_id.to_owned(),
                HeldLock {
                    run_id: run_id.to_owned(),
                    connection: Arc::new(Mutex::new(connection)),
                },
            );
        } else {
            self.keep_or_close(connection).await;
        }
        Ok(taken)
    }

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), StorageError> {
        if self.fence.is_some() {
            return Ok(()); // nothing was locked (see try_lock_thread)
        }
        let held = {
            let mut locks = self.locks.lock().await;
            match locks.get(thread_id) {
                Some(held) if held.run_id == run_id => locks.remove(thread_id),
                _ => None,
            }
        };
        let Some(HeldLock { connection, .. }) = held else {
            return Ok(());
        };
        // Unlocking explicitly frees the thread at once; closing alone would free it only
        // when the server notices the connection is gone.
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(thread_lock_key(thread_id))
            .execute(&mut *connection.lock().await)
            .await;
        // (A checkpoint write still in flight holds the connection too: it is then
        // dropped, and so closed, with the write.)
        let Ok(connection) = Arc::try_unwrap(connection).map(Mutex::into_inner) else {
            return Ok(());
        };
        match unlocked {
            Ok(_) => self.keep_or_close(connection).await,
            Err(e) => {
                // The connection is broken, so its session, and the lock with it, is ending anyway.
                tracing::warn!(thread_id, error = %e, "could not unlock a thread explicitly; dropping its connection");
                close(connection).await;
            }
        }
        Ok(())
    }
}
