//! [`PostgresStore`]: the store in PostgreSQL.
//!
//! As in the SQLite store, a namespace is one text column with its parts joined by U+001F;
//! with the "C" collation the column sorts byte by byte, so ordering by it orders namespaces
//! part by part and a prefix is a range. Values are JSON text, not JSONB: JSONB refuses
//! strings holding U+0000, and a put must not fail on what a value contains. Filters are
//! therefore checked here, on the rows of the prefix range.

use sqlx::postgres::PgPool;

use super::sql::POSTGRES;
use crate::checkpoint::PostgresSaver;
use crate::error::StorageError;
use crate::sql::postgres::connect_pool;
use crate::sql::{Migration, Schema, migrate_postgres};

const BACKEND: &str = "postgres store";

/// The store's schema history.
const SCHEMA: Schema = Schema {
    component: "store",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "store items",
        sql: r#"
        CREATE TABLE graphkit_store (
            namespace     TEXT COLLATE "C" NOT NULL,
            key           TEXT COLLATE "C" NOT NULL,
            value         TEXT   NOT NULL,
            created_at_ms BIGINT NOT NULL,
            updated_at_ms BIGINT NOT NULL,
            PRIMARY KEY (namespace, key)
        );
    "#,
    }],
};

/// A [`Store`](crate::store::Store) in PostgreSQL; it may share the database (and pool) of a
/// [`PostgresSaver`].
///
/// ```no_run
/// use graphkit::store::PostgresStore;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let store = PostgresStore::connect("postgres://app@db.internal/app").await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` and migrates its schema, giving up after
    /// [`PostgresSaver::CONNECT_TIMEOUT`] with the cause.
    pub async fn connect(url: &str) -> Result<Self, StorageError> {
        Self::from_pool(connect_pool(url, BACKEND, PostgresSaver::CONNECT_TIMEOUT).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: PgPool) -> Result<Self, StorageError> {
        migrate_postgres(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

super::sql::impl_sql_store!(PostgresStore, POSTGRES, BACKEND);
