//! What the SQL caches share: the statements (written once, in SQLite's dialect) and the
//! [`Cache`](super::Cache) methods over either pool.

use std::sync::LazyLock;

use super::NAMESPACE_SEPARATOR;
use crate::sql::Dialect;

/// The character after [`NAMESPACE_SEPARATOR`]: `ns + SEPARATOR <= n < ns + AFTER` holds
/// exactly for the namespaces below `ns`.
const AFTER_SEPARATOR: char = '}';
const _: () = assert!(NAMESPACE_SEPARATOR as u32 + 1 == AFTER_SEPARATOR as u32);

/// The bounds of the namespaces below `namespace`: (`low`, `high`).
pub(crate) fn below_bounds(namespace: &str) -> (String, String) {
    (
        format!("{namespace}{NAMESPACE_SEPARATOR}"),
        format!("{namespace}{AFTER_SEPARATOR}"),
    )
}

/// The caches' statements in one dialect. Parameters are listed as `(first, second, ...)`.
pub(crate) struct Statements {
    /// A live entry's value: (namespace, key, now).
    pub(crate) get: String,
    /// Inserts or replaces an entry: (namespace, key, value, expires_at_ms or NULL).
    pub(crate) set: String,
    /// Deletes a namespace and those below it: (namespace, low, high of [`below_bounds`]).
    pub(crate) clear: String,
    /// Deletes every entry.
    pub(crate) clear_all: String,
}

/// The caches' statements in SQLite's dialect.
#[cfg(feature = "sqlite")]
pub(crate) static SQLITE: LazyLock<Statements> = LazyLock::new(|| Statements::new(Dialect::Sqlite));
/// The caches' statements in PostgreSQL's dialect.
#[cfg(feature = "postgres")]
pub(crate) static POSTGRES: LazyLock<Statements> =
    LazyLock::new(|| Statements::new(Dialect::Postgres));

impl Statements {
    fn new(dialect: Dialect) -> Self {
        let statement = |text: &str| dialect.statement(text);
        Self {
            get: statement(
                "SELECT value FROM graphkit_cache WHERE namespace = ?1 AND key = ?2 \
                 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)",
            ),
            set: statement(
                "INSERT INTO graphkit_cache (namespace, key, value, expires_at_ms) \
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (namespace, key) DO UPDATE SET \
                 value = excluded.value, expires_at_ms = excluded.expires_at_ms",
            ),
            clear: statement(
                "DELETE FROM graphkit_cache WHERE namespace = ?1 \
                 OR (namespace >= ?2 AND namespace < ?3)",
            ),
            clear_all: statement("DELETE FROM graphkit_cache"),
        }
    }
}

/// The [`Cache`](super::Cache) methods of an SQL cache, written once: `$cache` has `pool`
/// and `clock` fields, `$statements` are its dialect's [`Statements`] and `$backend` names
/// it in errors. (A macro, as for the SQL stores: sqlx's bounds for one function over both
/// pool types outweigh the bodies.)
macro_rules! impl_sql_cache {
    ($cache:ty, $pool:ty, $statements:expr, $backend:expr) => {
        impl $cache {
            /// Measures time to live on `clock` instead of the system clock (for tests).
            #[must_use]
            pub fn with_clock(mut self, clock: std::sync::Arc<dyn $crate::clock::Clock>) -> Self {
                self.clock = clock;
                self
            }

            /// The connection pool.
            pub fn pool(&self) -> &$pool {
                &self.pool
            }
        }

        #[async_trait::async_trait]
        impl $crate::cache::Cache for $cache {
            async fn get(
                &self,
                keys: &[$crate::cache::CacheKey],
            ) -> Result<Vec<Option<Vec<u8>>>, $crate::error::StorageError> {
                let now = self.clock.now_ms();
                let mut values = Vec::with_capacity(keys.len());
                for key in keys {
                    let value: Option<Vec<u8>> = sqlx::query_scalar($statements.get.as_str())
                        .bind(key.namespace.as_str())
                        .bind(key.key.as_str())
                        .bind(now)
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| {
                            $crate::sql::backend_error($backend, "reading a cache entry", e)
                        })?;
                    values.push(value);
                }
                Ok(values)
            }

            async fn set(
                &self,
                entries: Vec<$crate::cache::CacheEntry>,
            ) -> Result<(), $crate::error::StorageError> {
                let now = self.clock.now_ms();
                let error = |e| $crate::sql::backend_error($backend, "saving a cache entry", e);
                let mut tx = self.pool.begin().await.map_err(error)?;
                for entry in entries {
                    sqlx::query($statements.set.as_str())
                        .bind(entry.key.namespace)
                        .bind(entry.key.key)
                        .bind(entry.value)
                        .bind($crate::cache::expires_at(now, entry.ttl))
                        .execute(&mut *tx)
                        .await
                        .map_err(error)?;
                }
                tx.commit().await.map_err(error)
            }

            async fn clear(
                &self,
                namespaces: Option<&[&str]>,
            ) -> Result<(), $crate::error::StorageError> {
                let error = |e| $crate::sql::backend_error($backend, "clearing the cache", e);
                let Some(namespaces) = namespaces else {
                    sqlx::query($statements.clear_all.as_str())
                        .execute(&self.pool)
                        .await
                        .map_err(error)?;
                    return Ok(());
                };
                let mut tx = self.pool.begin().await.map_err(error)?;
                for namespace in namespaces {
                    let (low, high) = $crate::cache::sql::below_bounds(namespace);
                    sqlx::query($statements.clear.as_str())
                        .bind(*namespace)
                        .bind(low)
                        .bind(high)
                        .execute(&mut *tx)
                        .await
                        .map_err(error)?;
                }
                tx.commit().await.map_err(error)
            }
        }
    };
}
pub(crate) use impl_sql_cache;
