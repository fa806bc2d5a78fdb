//! [`SqliteStore`]: the store in an SQLite database.
//!
//! A namespace is stored as one text column, its parts joined with U+001F (the unit
//! separator, a control character, so it never occurs inside a part). The separator sorts
//! below every character a part may hold, so ordering by that column orders namespaces part
//! by part, and "starts with these parts" is a range of the column.

use std::path::Path;

use sqlx::sqlite::SqlitePool;

use super::sql::SQLITE;
use crate::checkpoint::SqliteSync;
use crate::error::StorageError;
use crate::sql::sqlite::{in_memory_pool, open_pool};
use crate::sql::{Migration, Schema, migrate_sqlite};

const BACKEND: &str = "sqlite store";

/// The store's schema history.
const SCHEMA: Schema = Schema {
    component: "store",
    upgrade: "graphkit",
    migrations: &[Migration {
        version: 1,
        description: "store items",
        sql: "
        CREATE TABLE graphkit_store (
            namespace     TEXT    NOT NULL,
            key           TEXT    NOT NULL,
            value         TEXT    NOT NULL,
            created_at_ms INTEGER NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            PRIMARY KEY (namespace, key)
        );
    ",
    }],
};

/// A [`Store`](crate::store::Store) in an SQLite database; it may share the file (and pool) of a
/// [`SqliteSaver`](crate::checkpoint::SqliteSaver).
///
/// ```no_run
/// use graphkit::checkpoint::SqliteSaver;
/// use graphkit::store::SqliteStore;
///
/// # async fn open() -> Result<(), graphkit::Error> {
/// let saver = SqliteSaver::open("app.db").await?;
/// let store = SqliteStore::from_pool(saver.pool().clone()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if needed) the database file at `path`, in WAL mode with a busy
    /// timeout, and migrates its schema.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        Self::from_pool(open_pool(path.as_ref(), BACKEND, SqliteSync::Full).await?).await
    }

    /// A private database in memory, lost when the store is dropped (for tests).
    pub async fn in_memory() -> Result<Self, StorageError> {
        Self::from_pool(in_memory_pool(BACKEND).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: SqlitePool) -> Result<Self, StorageError> {
        migrate_sqlite(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

super::sql::impl_sql_store!(SqliteStore, SQLITE, BACKEND);
