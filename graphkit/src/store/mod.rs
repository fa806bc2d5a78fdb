//! The store: memory shared across threads, as namespaced JSON documents.
//!
//! Nodes reach it through [`NodeContext::store`](crate::NodeContext::store). Backends: in
//! memory, SQLite and PostgreSQL (the latter two behind the `sqlite` / `postgres` features).

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::StorageError;

pub use memory::InMemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

/// A stored document.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Its namespace, for example `["users", "ada", "memories"]`.
    pub namespace: Vec<String>,
    /// Its key within the namespace.
    pub key: String,
    /// The document.
    pub value: Value,
    /// When it was first put, milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// When it was last put.
    pub updated_at_ms: i64,
}

/// What [`Store::search`] looks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchQuery {
    /// Only documents that are JSON objects holding every key here with an equal value.
    pub filter: Map<String, Value>,
    /// At most this many (default 10).
    pub limit: Option<usize>,
    /// Skip this many first.
    pub offset: usize,
}

/// Cross-thread key-value memory with namespaces.
///
/// Items are returned by `search` ordered by namespace, then key. Namespace parts and keys
/// are non-empty strings; an empty one is an error ([`StorageError::InvalidStoreKey`]).
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
    /// Inserts or replaces a document.
    async fn put(&self, namespace: &[&str], key: &str, value: Value) -> Result<(), StorageError>;

    /// A document, if present.
    async fn get(&self, namespace: &[&str], key: &str) -> Result<Option<Item>, StorageError>;

    /// Deletes a document (no error if absent).
    async fn delete(&self, namespace: &[&str], key: &str) -> Result<(), StorageError>;

    /// Documents whose namespace starts with `prefix` and that match the query.
    async fn search(&self, prefix: &[&str], query: &SearchQuery)
    -> Result<Vec<Item>, StorageError>;

    /// Distinct namespaces that start with `prefix`, truncated to `max_depth` parts if
    /// given, sorted.
    async fn list_namespaces(
        &self,
        prefix: &[&str],
        max_depth: Option<usize>,
    ) -> Result<Vec<Vec<String>>, StorageError>;
}

/// Checks namespace parts and a key: non-empty, no ASCII control characters.
pub(crate) fn validate_key(namespace: &[&str], key: Option<&str>) -> Result<(), StorageError> {
    let bad = |s: &str| s.is_empty() || s.chars().any(|c| c.is_ascii_control());
    if let Some(part) = namespace.iter().find(|p| bad(p)) {
        return Err(StorageError::InvalidStoreKey(format!(
            "namespace part {part:?}"
        )));
    }
    if let Some(key) = key.filter(|k| bad(k)) {
        return Err(StorageError::InvalidStoreKey(format!("key {key:?}")));
    }
    Ok(())
}

pub(crate) use crate::filter::matches_filter;
