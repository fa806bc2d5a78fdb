//! [`PostgresStore`]: the store in PostgreSQL.
//!
//! As in the SQLite store, a namespace is one text column with its parts joined by U+001F;
//! with the "C" collation the column sorts byte by byte, so ordering by it orders namespaces
//! part by part and a prefix is a range. Values are JSON text, not JSONB: JSONB refuses
//! strings holding U+0000, and a put must not fail on what a value contains. Filters are
//! therefore checked here, on the rows of the prefix range.

use async_trait::async_trait;
use futures::TryStreamExt;
use serde_json::Value;
use sqlx::postgres::PgPool;

use super::sql::{decode_item, join, prefix_bounds, split};
use super::{Item, SearchQuery, Store, matches_filter, validate_key};
use crate::checkpoint::sql::backend_error;
use crate::checkpoint::{PostgresSaver, now_ms};
use crate::error::Error;

const BACKEND: &str = "postgres store";

/// The store's schema history: (version, description, SQL); never edit a released step.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    1,
    "store items",
    r#"
        CREATE TABLE graphkit_store (
            namespace     TEXT COLLATE "C" NOT NULL,
            key           TEXT COLLATE "C" NOT NULL,
            value         TEXT   NOT NULL,
            created_at_ms BIGINT NOT NULL,
            updated_at_ms BIGINT NOT NULL,
            PRIMARY KEY (namespace, key)
        );
    "#,
)];

/// A [`Store`] in PostgreSQL; it may share the database (and pool) of a
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
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::from_pool(
            PostgresSaver::connect_pool(url, BACKEND, PostgresSaver::CONNECT_TIMEOUT).await?,
        )
        .await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: PgPool) -> Result<Self, Error> {
        PostgresSaver::migrate(&pool, BACKEND, "store", MIGRATIONS).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

fn error(doing: &str, e: sqlx::Error) -> Error {
    backend_error(BACKEND, doing, e)
}

#[async_trait]
impl Store for PostgresStore {
    async fn put(&self, namespace: &[&str], key: &str, value: Value) -> Result<(), Error> {
        validate_key(namespace, Some(key))?;
        let value = serde_json::to_string(&value).map_err(|source| Error::Serde {
            what: "a store value".to_owned(),
            source,
        })?;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO graphkit_store (namespace, key, value, created_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $4) \
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
             WHERE namespace = $1 AND key = $2",
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
        sqlx::query("DELETE FROM graphkit_store WHERE namespace = $1 AND key = $2")
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
                Some(i64::try_from(limit).unwrap_or(i64::MAX)),
                i64::try_from(query.offset).unwrap_or(i64::MAX),
            )
        } else {
            (None, 0)
        };
        let (exact, low, high) = prefix_bounds(prefix);
        let mut rows = sqlx::query(
            "SELECT namespace, key, value, created_at_ms, updated_at_ms FROM graphkit_store \
             WHERE ($1 = '' OR namespace = $1 OR (namespace >= $2 AND namespace < $3)) \
             ORDER BY namespace, key LIMIT $4 OFFSET $5",
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
             WHERE $1 = '' OR namespace = $1 OR (namespace >= $2 AND namespace < $3)",
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
