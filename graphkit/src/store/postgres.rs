//! [`PostgresStore`]: the store in PostgreSQL.
//!
//! As in the SQLite store, a namespace is one text column with its parts joined by U+001F;
//! with the "C" collation the column sorts byte by byte, so ordering by it orders namespaces
//! part by part and a prefix is a range. Values are JSON text, not JSONB: JSONB refuses
//! strings holding U+0000, and a put must not fail on what a value contains. Filters are
//! therefore checked here, on the rows of the prefix range.

use async_trait::async_trait;
use serde_json::Value;
use sqlx::postgres::PgPool;

use super::sql::{
    POSTGRES, cut_namespaces, decode_item, join, prefix_bounds, read_search, search_paging,
    value_text,
};
use super::{Item, SearchQuery, Store, validate_key};
use crate::checkpoint::{PostgresSaver, now_ms};
use crate::error::Error;
use crate::sql::postgres::connect_pool;
use crate::sql::{Migration, Schema, backend_error, migrate_postgres};

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
        Self::from_pool(connect_pool(url, BACKEND, PostgresSaver::CONNECT_TIMEOUT).await?).await
    }

    /// Uses an existing pool, migrating its schema first.
    pub async fn from_pool(pool: PgPool) -> Result<Self, Error> {
        migrate_postgres(&pool, BACKEND, &SCHEMA).await?;
        Ok(Self { pool })
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

#[async_trait]
impl Store for PostgresStore {
    async fn put(&self, namespace: &[&str], key: &str, value: Value) -> Result<(), Error> {
        validate_key(namespace, Some(key))?;
        sqlx::query(POSTGRES.put.as_str())
            .bind(join(namespace))
            .bind(key)
            .bind(value_text(&value)?)
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .map_err(|e| backend_error(BACKEND, "saving an item", e))?;
        Ok(())
    }

    async fn get(&self, namespace: &[&str], key: &str) -> Result<Option<Item>, Error> {
        validate_key(namespace, Some(key))?;
        sqlx::query(POSTGRES.get.as_str())
            .bind(join(namespace))
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| backend_error(BACKEND, "reading an item", e))?
            .as_ref()
            .map(|row| decode_item(BACKEND, row))
            .transpose()
    }

    async fn delete(&self, namespace: &[&str], key: &str) -> Result<(), Error> {
        validate_key(namespace, Some(key))?;
        sqlx::query(POSTGRES.delete.as_str())
            .bind(join(namespace))
            .bind(key)
            .execute(&self.pool)
            .await
            .map_err(|e| backend_error(BACKEND, "deleting an item", e))?;
        Ok(())
    }

    async fn search(&self, prefix: &[&str], query: &SearchQuery) -> Result<Vec<Item>, Error> {
        validate_key(prefix, None)?;
        let (exact, low, high) = prefix_bounds(prefix);
        let (limit, offset) = search_paging(query);
        let rows = sqlx::query(POSTGRES.search.as_str())
            .bind(exact)
            .bind(low)
            .bind(high)
            .bind(limit)
            .bind(offset)
            .fetch(&self.pool);
        read_search(rows, BACKEND, query).await
    }

    async fn list_namespaces(
        &self,
        prefix: &[&str],
        max_depth: Option<usize>,
    ) -> Result<Vec<Vec<String>>, Error> {
        validate_key(prefix, None)?;
        let (exact, low, high) = prefix_bounds(prefix);
        let rows: Vec<String> = sqlx::query_scalar(POSTGRES.namespaces.as_str())
            .bind(exact)
            .bind(low)
            .bind(high)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| backend_error(BACKEND, "listing namespaces", e))?;
        Ok(cut_namespaces(&rows, max_depth))
    }
}
