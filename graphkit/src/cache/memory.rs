//! [`InMemoryCache`]: node results in process memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;

use super::{Cache, CacheEntry, CacheKey, expires_at, is_below};
use crate::clock::{Clock, SystemClock};
use crate::error::StorageError;

/// A stored value and when it expires (milliseconds since the epoch).
type Stored = (Vec<u8>, Option<i64>);

/// Keeps cached node results in memory, for one process; lost when it exits.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::CompileOptions;
/// use graphkit::cache::InMemoryCache;
///
/// let options = CompileOptions::new().cache(Arc::new(InMemoryCache::new()));
/// ```
#[derive(Debug)]
pub struct InMemoryCache {
    entries: Mutex<HashMap<CacheKey, Stored>>,
    clock: Arc<dyn Clock>,
}

impl Default for InMemoryCache {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryCache {
    /// An empty cache on the system clock.
    pub fn new() -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            clock: Arc::new(SystemClock),
        }
    }

    /// Measures time to live on `clock` instead of the system clock (for tests).
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How many entries it holds, expired ones included until they are replaced or cleared.
    pub fn len(&self) -> usize {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// `true` when it holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[async_trait]
impl Cache for InMemoryCache {
    async fn get(&self, keys: &[CacheKey]) -> Result<Vec<Option<Vec<u8>>>, StorageError> {
        let now = self.clock.now_ms();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(keys
            .iter()
            .map(|key| match entries.get(key) {
                Some((_, Some(expiry))) if *expiry <= now => {
                    entries.remove(key);
                    None
                }
                Some((value, _)) => Some(value.clone()),
                None => None,
            })
            .collect())
    }

    async fn set(&self, new: Vec<CacheEntry>) -> Result<(), StorageError> {
        let now = self.clock.now_ms();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        for entry in new {
            entries.insert(entry.key, (entry.value, expires_at(now, entry.ttl)));
        }
        Ok(())
    }

    async fn clear(&self, namespaces: Option<&[&str]>) -> Result<(), StorageError> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match namespaces {
            None => entries.clear(),
            Some(namespaces) => {
                entries.retain(|key, _| !namespaces.iter().any(|ns| is_below(&key.namespace, ns)))
            }
        }
        Ok(())
    }
}
