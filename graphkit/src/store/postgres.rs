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
use sqlx::Row;
use sqlx::postgres::{PgPool, PgRow};

use super::{Item, SearchQuery, Store, matches_filter, validate_key};
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
    /// Connects to the database at `url` and migrates its schema.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        Self::from_pool(PostgresSaver::connect_pool(url, BACKEND).await?).await
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

/// The separator of namespace parts in the `namespace` column.
const SEPARATOR: char = '\u{1f}';
/// The character after [`SEPARATOR`]: `prefix + SEPARATOR <= ns < prefix + AFTER_SEPARATOR`
/// holds exactly for the namespaces below `prefix`.
const AFTER_SEPARATOR: char = '\u{20}';

fn join(namespace: &[&str]) -> String {
    namespace.join("\u{1f}")
}

fn split(namespace: &str) -> Vec<String> {
    if namespace.is_empty() {
        Vec::new()
    } else {
        namespace.split(SEPARATOR).map(str::to_owned).collect()
    }
}

/// The bounds of the namespaces that start with `prefix`: (`exact`, `low`, `high`). An
/// empty prefix matches every namespace (`exact` is then empty).
fn prefix_bounds(prefix: &[&str]) -> (String, String, String) {
    let exact = join(prefix);
    let low = format!("{exact}{SEPARATOR}");
    let high = format!("{exact}{AFTER_SEPARATOR}");
    (exact, low, high)
}

fn error(doing: &str, e: sqlx::Error) -> Error {
    Error::Backend {
        backend: BACKEND,
        message: format!("{doing}: {e}"),
    }
}

fn decode_item(row: &PgRow) -> Result<Item, Error> {
    let namespace: String = row
        .try_get("namespace")
        .map_err(|e| error("reading an item", e))?;
    let key: String = row
        .try_get("key")
        .map_err(|e| error("reading an item", e))?;
    let unreadable = |what: String| Error::Backend {
        backend: BACKEND,
        message: format!(
            "item {key:?} in namespace {:?} cannot be read: {what}",
            split(&namespace)
        ),
    };
    let value: String = row
        .try_get("value")
        .map_err(|e| unreadable(e.to_string()))?;
    Ok(Item {
        value: serde_json::from_str(&value)
            .map_err(|e| unreadable(format!("value is not JSON: {e}")))?,
        created_at_ms: row
            .try_get("created_at_ms")
            .map_err(|e| unreadable(e.to_string()))?,
        updated_at_ms: row
            .try_get("updated_at_ms")
            .map_err(|e| unreadable(e.to_string()))?,
        namespace: split(&namespace),
        key,
    })
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
        .map(decode_item)
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
            let item = decode_item(&row)?;
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
