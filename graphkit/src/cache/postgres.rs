//! [`PostgresCache`]: node results in PostgreSQL, shared by every process that connects.
//!
//! With the "C" collation the namespace column sorts byte by byte, so the namespaces below
//! one are a range of it, as in the SQLite cache.

use std::sync::Arc;

use sqlx::postgres::PgPool;

use super::sql::POSTGRES;
use crate::checkpoint::PostgresSaver;
use crate::clock::{Clock, SystemClock};
use crate::error::StorageError;
use crate::sql::postgres::connect_pool;
use crate::sql::{Migration, Schema, migrate_postgres};

const BACKEND: &str = "postgres cache";

/// The cache's schema history.
const SCHEMA: Schema = Schema {
    component: "cache",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "cached node writes",
        sql: r#"
        CREATE TABLE graphkit_cache (
            namespace     TEXT COLLATE "C" NOT NULL,
            key           TEXT COLLATE "C" NOT NULL,
            value         BYTEA  NOT NULL,
            expires_at_ms BIGINT,
            PRIMARY KEY (namespace, key)
        );
    "#,
    }],
};

/// A [`Cache`](crate::cache::Cache) in PostgreSQL; it may share the database (and pool) of
/// a [`PostgresSaver`].
///
/// ```no_run
/// use std::sync::Arc;
/// use graphkit::CompileOptions;
/// use graphkit::cache::PostgresCache;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let cache = PostgresCache::connect("postgres://app@db.internal/app").await?;
/// let options = CompileOptions::new().cache(Arc::new(cache));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresCache {
    pool: PgPool,
    clock: Arc<dyn Clock>,
}

impl PostgresCache {
    /// Connects to the database at `url` and migrates its schema, giving up after
    /// [`PostgresSaver::CONNECT_TIMEOUT`] with the cause.
    pub async fn connect(url: &str) -> Result<Self, StorageError> {
        Self::from_pool(connect_pool(url, BACKEND, PostgresSaver::CONNECT_TIMEOUT).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: PgPool) -> Result<Self, StorageError> {
        migrate_postgres(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self {
            pool,
            clock: Arc::new(SystemClock),
        })
    }
}

super::sql::impl_sql_cache!(PostgresCache, PgPool, POSTGRES, BACKEND);
