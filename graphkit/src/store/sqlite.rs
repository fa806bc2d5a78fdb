//! [`SqliteStore`]: the store in an SQLite database.
//!
//! A namespace is stored as one text column, its parts joined with U+001F (the unit
//! separator, a control character, so it never occurs inside a part). The separator sorts
//! below every character a part may hold, so ordering by that column orders namespaces part
//! by part, and "starts with these parts" is a range of the column.

use std::path::Path;

use async_trait::async_trait;
use futures::TryStreamExt;
use serde_json::Value;
use sqlx::sqlite::SqlitePool;

use super::sql::{decode_item, join, prefix_bounds, split};
use super::{Item, SearchQuery, Store, matches_filter, validate_key};
use crate::checkpoint::sql::backend_error;
use crate::checkpoint::{SqliteSaver, now_ms};
use crate::error::Error;

const BACKEND: &str = "sqlite store";

/// The store's schema history: (version, description, SQL); never edit a released step.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "store items",
    "
        CREATE TABLE graphkit_store (
            namespace     TEXT    NOT NULL,
            key           TEXT    NOT NULL,
            value         TEXT    NOT NULL,
            created_at_ms INTEGER NOT NULL,
            updated_at_ms INTEGER NOT NULL,
            PRIMARY KEY (namespace, key)
        );
    ",
)];

/// A [`Store`] in an SQLite database; it may share the file (and pool) of a
/// [`SqliteSaver`].
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
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        Self::from_pool(SqliteSaver::open_pool(path.as_ref(), BACKEND).await?).await
    }

    /// A private database in memory, lost when the store is dropped (for tests).
    pub async fn in_memory() -> Result<Self, Error> {
        Self::from_pool(SqliteSaver::in_memory_pool(BACKEND).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: SqlitePool) -> Result<Self, Error> {
        SqliteSaver::migrate(&pool, BACKEND, "store", MIGRATIONS).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

fn error(doing: &str, e: sqlx::Error) -> Error {
    backend_error(BACKEND, doing, e)
}

#[async_trait]
impl Store for SqliteStore {
    async fn put(&self, namespace: &[&str], key: &str, value: Value) -> Result<(), Error> {
        validate_key(namespace, Some(key))?;
        let value = serde_json::to_string(&value).map_err(|source| Error::Serde {
            what: "a store value".to_owned(),
            source,
        })?;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO graphkit_store (namespace, key, value, created_at_ms, updated_at_ms) VALUES (?1, ?2, ?3, ?4, ?4) \
             ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(join(namespace))
        .bind(key)
        .bind(value)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(|e| error("saving an item", e))?;
        Ok(())
    }

    async fn get(&self, namespace: &[&str], key: &str) -> Result<Option<Item>, Error> {
        validate_key(namespace, Some(key))?;
        sqlx::query(
            "SELECT namespace, key, value, created_at_ms, updated_at_ms FROM graphkit_store \
             WHERE namespace = ?1 AND key = ?2",
        )
        .bind(join(namespace))
        .bind(key)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| error("reading an item", e))?
        .as_ref()
        .map(|row| decode_item(BACKEND, row))
        .transpose()
    }

    async fn delete(&self, namespace: &[&str], key: &str) -> Result<(), Error> {
        validate_key(namespace, Some(key))?;
        sqlx::query("DELETE FROM graphkit_store WHERE namespace = ?1 AND key = ?2")
            .bind(join(namespace))
            .bind(key)
            .execute(&self.pool)
            .await
            .map_err(|e| error("deleting an item", e))?;
        Ok(())
    }

    async fn search(&self, prefix: &[&str], query: &SearchQuery) -> Result<Vec<Item>, Error> {
        validate_key(prefix, None)?;
        let limit = query.limit.unwrap_or(10);
        // Without a filter, the database pages; with one, paging follows filtering, here.
        let (sql_limit, sql_offset) = if query.filter.is_empty() {
            (
                i64::try_from(limit).unwrap_or(i64::MAX),
                i64::try_from(query.offset).unwrap_or(i64::MAX),
            )
        } else {
            (-1, 0)
        };
        let (exact, low, high) = prefix_bounds(prefix);
        let mut rows = sqlx::query(
            "SELECT namespace, key, value, created_at_ms, updated_at_ms FROM graphkit_store \
             WHERE ?1 = '' OR namespace = ?1 OR (namespace >= ?2 AND namespace < ?3) \
             ORDER BY namespace, key LIMIT ?4 OFFSET ?5",
        )
        .bind(exact)
        .bind(low)
        .bind(high)
        .bind(sql_limit)
        .bind(sql_offset)
        .fetch(&self.pool);
        let mut skip = if query.filter.is_empty() {
            0
        } else {
            query.offset
        };
        let mut items = Vec::new();
        while items.len() < limit {
            let Some(row) = rows.try_next().await.map_err(|e| error("searching", e))? else {
                break;
            };
            let item = decode_item(BACKEND, &row)?;
            if !matches_filter(&item.value, &query.filter) {
                continue;
            }
            if skip > 0 {
                skip -= 1;
            } else {
                items.push(item);
            }
        }
        Ok(items)
    }

    async fn list_namespaces(
        &self,
        prefix: &[&str],
        max_depth: Option<usize>,
    ) -> Result<Vec<Vec<String>>, Error> {
        validate_key(prefix, None)?;
        let (exact, low, high) = prefix_bounds(prefix);
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT namespace FROM graphkit_store \
             WHERE ?1 = '' OR namespace = ?1 OR (namespace >= ?2 AND namespace < ?3)",
        )
        .bind(exact)
        .bind(low)
        .bind(high)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| error("listing namespaces", e))?;
        let mut namespaces: Vec<Vec<String>> = rows
            .iter()
            .map(|namespace| {
                let mut parts = split(namespace);
                parts.truncate(max_depth.unwrap_or(usize::MAX));
                parts
            })
            .collect();
        namespaces.sort();
        namespaces.dedup();
        Ok(namespaces)
    }
}
