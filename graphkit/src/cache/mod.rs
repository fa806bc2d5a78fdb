//! Node caching: a node with a [`CachePolicy`] that runs again with the same input is not
//! run; its writes from the first run are applied instead, as LangGraph's node caching does.
//!
//! The policy is given per node ([`NodeOptions::cache`](crate::nodes::NodeOptions::cache)),
//! the [`Cache`] that keeps the writes to the compiled graph
//! ([`CompileOptions::cache`](crate::CompileOptions::cache)). Backends: in memory, SQLite
//! and PostgreSQL (the latter two behind the `sqlite` / `postgres` features, which a cache
//! shared by several processes or kept across restarts needs). See
//! `docs/howto-node-caching.md`.

mod key;
mod memory;
mod policy;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;

use std::time::Duration;

use async_trait::async_trait;

use crate::error::StorageError;

pub(crate) use key::{NAMESPACE_SEPARATOR, input_key};
pub use memory::InMemoryCache;
pub use policy::CachePolicy;
#[cfg(feature = "postgres")]
pub use postgres::PostgresCache;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteCache;

/// Where one cached value is kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey {
    /// The node's path: its name, after the names of the subgraph nodes it runs in, joined
    /// by `|` (`"summarize"`, or `"research|summarize"` inside the subgraph node
    /// `research`). Node names never hold a `|`.
    pub namespace: String,
    /// The hash of what the node read (or of its policy's key), as hex.
    pub key: String,
}

/// A value to cache, with its time to live (`None`: until cleared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// Where it goes.
    pub key: CacheKey,
    /// The value: a task's writes, encoded by graphkit.
    pub value: Vec<u8>,
    /// How long it may be returned, from when it is set.
    pub ttl: Option<Duration>,
}

/// Keeps the writes of cached nodes. Implemented by [`InMemoryCache`], `SqliteCache` and
/// `PostgresCache`; anything else (a Redis, say) can implement it too.
///
/// Values are opaque bytes to the cache. Expiry is measured on the cache's own clock, so
/// processes sharing one database should have their clocks roughly in step.
#[async_trait]
pub trait Cache: Send + Sync + std::fmt::Debug + 'static {
    /// The values of `keys`, in the same order: `None` for a key that holds nothing or
    /// whose entry has expired.
    async fn get(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, StorageError>;

    /// Stores `entries`, each replacing what its key held.
    async fn set(&self, entries: Vec<CacheEntry>) -> Result<(), StorageError>;

    /// Deletes every entry in the given namespaces and the namespaces below them (`"a"`
    /// covers `"a|b"`), or every entry with `None`.
    async fn clear(&self, namespaces: Option<&[&str]>) -> Result<(), StorageError>;
}

/// `true` when `namespace` is `parent` or below it.
pub(crate) fn is_below(namespace: &str, parent: &str) -> bool {
    namespace
        .strip_prefix(parent)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(NAMESPACE_SEPARATOR))
}

/// When an entry set at `now_ms` with `ttl` expires (`None`: never).
pub(crate) fn expires_at(now_ms: i64, ttl: Option<Duration>) -> Option<i64> {
    ttl.map(|ttl| now_ms.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)))
}
