//! [`SqliteCache`]: node results in an SQLite database, shared by the processes that open
//! the file and kept across restarts.

use std::path::Path;
use std::sync::Arc;

use sqlx::sqlite::SqlitePool;

use super::sql::SQLITE;
use crate::checkpoint::SqliteSync;
use crate::clock::{Clock, SystemClock};
use crate::error::StorageError;
use crate::sql::sqlite::{in_memory_pool, open_pool};
use crate::sql::{Migration, Schema, migrate_sqlite};

const BACKEND: &str = "sqlite cache";

/// The cache's schema history.
const SCHEMA: Schema = Schema {
    component: "cache",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "cached node writes",
        sql: "
        CREATE TABLE graphkit_cache (
            namespace     TEXT    NOT NULL,
            key           TEXT    NOT NULL,
            value         BLOB    NOT NULL,
            expires_at_ms INTEGER,
            PRIMARY KEY (namespace, key)
        );
    ",
    }],
};

/// A [`Cache`](crate::cache::Cache) in an SQLite database (LangGraph's `SqliteCache`); it
/// may share the file (and pool) of a [`SqliteSaver`](crate::checkpoint::SqliteSaver).
///
/// ```no_run
/// use std::sync::Arc;
/// use graphkit::CompileOptions;
/// use graphkit::cache::SqliteCache;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let cache = SqliteCache::open("cache.db").await?;
/// let options = CompileOptions::new().cache(Arc::new(cache));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteCache {
    pool: SqlitePool,
    clock: Arc<dyn Clock>,
}

impl SqliteCache {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with a busy
    /// timeout, and migrates its schema. A lost cache only costs runs, so commits do not
    /// wait for the disk (`synchronous = NORMAL`).
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::from_pool(open_pool(path.as_ref(), BACKEND, SqliteSync::Normal).await?).await
    }

    /// A private database in memory, lost when the cache is dropped (for tests).
    pub async fn in_memory() -> Result<Self, StorageError> {
        Self::from_pool(in_memory_pool(BACKEND).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: SqlitePool) -> Result<Self, StorageError> {
        migrate_sqlite(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self {
            pool,
            clock: Arc::new(SystemClock),
        })
    }
}

super::sql::impl_sql_cache!(SqliteCache, SqlitePool, SQLITE, BACKEND);
