//! What the SQL stores share: how namespaces are stored, the statements (written once, see
//! [`Statements`]), and reading item rows.

use std::sync::LazyLock;

use futures::{Stream, TryStreamExt};
use serde_json::Value;
use sqlx::{ColumnIndex, Decode, Row, Type};

use super::{Item, SearchQuery, matches_filter};
use crate::error::StorageError;
use crate::sql::{Dialect, backend_error, sql_limit};

/// The separator of namespace parts in the `namespace` column.
pub(crate) const SEPARATOR: char = '\u{1f}';
/// The character after [`SEPARATOR`]: `prefix + SEPARATOR <= ns < prefix + AFTER_SEPARATOR`
/// holds exactly for the namespaces below `prefix`.
pub(crate) const AFTER_SEPARATOR: char = '\u{20}';

pub(crate) fn join(namespace: &[&str]) -> String {
    namespace.join("\u{1f}")
}

pub(crate) fn split(namespace: &str) -> Vec<String> {
    if namespace.is_empty() {
        Vec::new()
    } else {
        namespace.split(SEPARATOR).map(str::to_owned).collect()
    }
}

/// The bounds of the namespaces that start with `prefix`: (`exact`, `low`, `high`). An
/// empty prefix matches every namespace (`exact` is then empty).
pub(crate) fn prefix_bounds(prefix: &[&str]) -> (String, String, String) {
    let exact = join(prefix);
    let low = format!("{exact}{SEPARATOR}");
    let high = format!("{exact}{AFTER_SEPARATOR}");
    (exact, low, high)
}

/// The stores' statements in one dialect, each built from the one definition in
/// [`Statements::new`]. Parameters are listed as `(first, second, ...)`.
pub(crate) struct Statements {
    /// Inserts or replaces an item, keeping its creation time: (namespace, key, value, now).
    pub(crate) put: String,
    /// One item: (namespace, key).
    pub(crate) get: String,
    /// Deletes one item: (namespace, key).
    pub(crate) delete: String,
    /// The items below a prefix, ordered: (exact, low, high of [`prefix_bounds`], limit,
    /// offset; see [`search_paging`]).
    pub(crate) search: String,
    /// The distinct namespaces below a prefix: (exact, low, high of [`prefix_bounds`]).
    pub(crate) namespaces: String,
}

/// The stores' statements in SQLite's dialect.
#[cfg(feature = "sqlite")]
pub(crate) static SQLITE: LazyLock<Statements> = LazyLock::new(|| Statements::new(Dialect::Sqlite));
/// The stores' statements in PostgreSQL's dialect.
#[cfg(feature = "postgres")]
pub(crate) static POSTGRES: LazyLock<Statements> =
    LazyLock::new(|| Statements::new(Dialect::Postgres));

impl Statements {
    fn new(dialect: Dialect) -> Self {
        const SELECT: &str =
            "SELECT namespace, key, value, created_at_ms, updated_at_ms FROM graphkit_store";
        const BELOW_PREFIX: &str =
            "(?1 = '' OR namespace = ?1 OR (namespace >= ?2 AND namespace < ?3))";
        let statement = |text: &str| dialect.statement(text);
        Self {
            put: statement(
                "INSERT INTO graphkit_store (namespace, key, value, created_at_ms, updated_at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT (namespace, key) DO UPDATE SET \
                 value = excluded.value, updated_at_ms = excluded.updated_at_ms",
            ),
            get: statement(&format!("{SELECT} WHERE namespace = ?1 AND key = ?2")),
            delete: statement("DELETE FROM graphkit_store WHERE namespace = ?1 AND key = ?2"),
            search: statement(&format!(
                "{SELECT} WHERE {BELOW_PREFIX} ORDER BY namespace, key LIMIT ?4 OFFSET ?5"
            )),
            namespaces: statement(&format!(
                "SELECT DISTINCT namespace FROM graphkit_store WHERE {BELOW_PREFIX}"
            )),
        }
    }
}

/// A store value as stored (JSON text).
pub(crate) fn value_text(value: &Value) -> Result<String, StorageError> {
    serde_json::to_string(value).map_err(|source| StorageError::Serde {
        what: "a store value".to_owned(),
        source,
    })
}

/// The `LIMIT` and `OFFSET` of [`Statements::search`]: without a filter, the database pages;
/// with one, paging follows filtering, in [`read_search`].
pub(crate) fn search_paging(query: &SearchQuery) -> (i64, i64) {
    if query.filter.is_empty() {
        (
            sql_limit(Some(query.limit.unwrap_or(10))),
            i64::try_from(query.offset).unwrap_or(i64::MAX),
        )
    } else {
        (i64::MAX, 0)
    }
}

/// What `search` returns of the rows of [`Statements::search`]: decoded, filtered, paged.
/// Reading stops at the limit.
pub(crate) async fn read_search<R>(
    mut rows: impl Stream<Item = Result<R, sqlx::Error>> + Unpin,
    backend: &'static str,
    query: &SearchQuery,
) -> Result<Vec<Item>, StorageError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let limit = query.limit.unwrap_or(10);
    let mut skip = if query.filter.is_empty() {
        0
    } else {
        query.offset
    };
    let mut items = Vec::new();
    while items.len() < limit {
        let row = rows
            .try_next()
            .await
            .map_err(|e| backend_error(backend, "searching", e))?;
        let Some(row) = row else { break };
        let item = decode_item(backend, &row)?;
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

/// `list_namespaces`' answer from the namespaces [`Statements::namespaces`] found: each cut
/// to `max_depth` parts, sorted, without duplicates.
pub(crate) fn cut_namespaces(rows: &[String], max_depth: Option<usize>) -> Vec<Vec<String>> {
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
    namespaces
}

/// Reads one item row; a row that does not decode is an [`StorageError::Backend`] naming the item.
pub(crate) fn decode_item<'r, R>(backend: &'static str, row: &'r R) -> Result<Item, StorageError>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let error = |doing: &str, e: sqlx::Error| backend_error(backend, doing, e);
    let namespace: String = row
        .try_get("namespace")
        .map_err(|e| error("reading an item", e))?;
    let key: String = row
        .try_get("key")
        .map_err(|e| error("reading an item", e))?;
    let unreadable = |what: String| {
        StorageError::backend(
            backend,
            format!(
                "item {key:?} in namespace {:?} cannot be read: {what}",
                split(&namespace)
            ),
        )
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

/// The [`Store`](super::Store) methods of an SQL store, written once: `$store` has a
/// `pool` field, `$statements` are its dialect's [`Statements`] and `$backend` names it in
/// errors. (A macro, not a generic function: sqlx's bounds for one function over both pool
/// types outweigh the bodies.)
macro_rules! impl_sql_store {
    ($store:ty, $statements:expr, $backend:expr) => {
        #[async_trait::async_trait]
        impl $crate::store::Store for $store {
            async fn put(
                &self,
                namespace: &[&str],
                key: &str,
                value: serde_json::Value,
            ) -> Result<(), $crate::error::StorageError> {
                use $crate::store::sql::{join, value_text};
                $crate::store::validate_key(namespace, Some(key))?;
                sqlx::query($statements.put.as_str())
                    .bind(join(namespace))
                    .bind(key)
                    .bind(value_text(&value)?)
                    .bind($crate::clock::now_ms())
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::sql::backend_error($backend, "saving an item", e))?;
                Ok(())
            }

            async fn get(
                &self,
                namespace: &[&str],
                key: &str,
            ) -> Result<Option<$crate::store::Item>, $crate::error::StorageError> {
                use $crate::store::sql::{decode_item, join};
                $crate::store::validate_key(namespace, Some(key))?;
                sqlx::query($statements.get.as_str())
                    .bind(join(namespace))
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(|e| $crate::sql::backend_error($backend, "reading an item", e))?
                    .as_ref()
                    .map(|row| decode_item($backend, row))
                    .transpose()
            }

            async fn delete(
                &self,
                namespace: &[&str],
                key: &str,
            ) -> Result<(), $crate::error::StorageError> {
                use $crate::store::sql::join;
                $crate::store::validate_key(namespace, Some(key))?;
                sqlx::query($statements.delete.as_str())
                    .bind(join(namespace))
                    .bind(key)
                    .execute(&self.pool)
                    .await
                    .map_err(|e| $crate::sql::backend_error($backend, "deleting an item", e))?;
                Ok(())
            }

            async fn search(
                &self,
                prefix: &[&str],
                query: &$crate::store::SearchQuery,
            ) -> Result<Vec<$crate::store::Item>, $crate::error::StorageError> {
                use $crate::store::sql::{prefix_bounds, read_search, search_paging};
                $crate::store::validate_key(prefix, None)?;
                let (exact, low, high) = prefix_bounds(prefix);
                let (limit, offset) = search_paging(query);
                let rows = sqlx::query($statements.search.as_str())
                    .bind(exact)
                    .bind(low)
                    .bind(high)
                    .bind(limit)
                    .bind(offset)
                    .fetch(&self.pool);
                read_search(rows, $backend, query).await
            }

            async fn list_namespaces(
                &self,
                prefix: &[&str],
                max_depth: Option<usize>,
            ) -> Result<Vec<Vec<String>>, $crate::error::StorageError> {
                use $crate::store::sql::{cut_namespaces, prefix_bounds};
                $crate::store::validate_key(prefix, None)?;
                let (exact, low, high) = prefix_bounds(prefix);
                let rows: Vec<String> = sqlx::query_scalar($statements.namespaces.as_str())
                    .bind(exact)
                    .bind(low)
                    .bind(high)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(|e| $crate::sql::backend_error($backend, "listing namespaces", e))?;
                Ok(cut_namespaces(&rows, max_depth))
            }
        }
    };
}
pub(crate) use impl_sql_store;
