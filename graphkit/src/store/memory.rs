//! [`InMemoryStore`]: the store in process memory.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use serde_json::Value;

use super::{Item, SearchQuery, Store, matches_filter, validate_key};
use crate::clock::now_ms;
use crate::error::StorageError;

/// A [`Store`] in memory; everything is lost when the process exits.
#[derive(Debug, Default)]
pub struct InMemoryStore {
    items: Mutex<BTreeMap<(Vec<String>, String), Item>>,
}

impl InMemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(Vec<String>, String), Item>> {
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn owned(namespace: &[&str]) -> Vec<String> {
    namespace.iter().map(|s| (*s).to_owned()).collect()
}

fn has_prefix(namespace: &[String], prefix: &[&str]) -> bool {
    namespace.len() >= prefix.len() && namespace.iter().zip(prefix).all(|(a, b)| a == b)
}

#[async_trait]
impl Store for InMemoryStore {
    async fn put(&self, namespace: &[&str], key: &str, value: Value) -> Result<(), StorageError> {
        validate_key(namespace, Some(key))?;
        let now = now_ms();
        let mut items = self.lock();
        let entry = items.entry((owned(namespace), key.to_owned()));
        let created_at_ms = match &entry {
            std::collections::btree_map::Entry::Occupied(e) => e.get().created_at_ms,
            std::collections::btree_map::Entry::Vacant(_) => now,
        };
        let item = Item {
            namespace: owned(namespace),
            key: key.to_owned(),
            value,
            created_at_ms,
            updated_at_ms: now,
        };
        match entry {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                e.insert(item);
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(item);
            }
        }
        Ok(())
    }

    async fn get(&self, namespace: &[&str], key: &str) -> Result<Option<Item>, StorageError> {
        validate_key(namespace, Some(key))?;
        Ok(self
            .lock()
            .get(&(owned(namespace), key.to_owned()))
            .cloned())
    }

    async fn delete(&self, namespace: &[&str], key: &str) -> Result<(), StorageError> {
        validate_key(namespace, Some(key))?;
        self.lock().remove(&(owned(namespace), key.to_owned()));
        Ok(())
    }

    async fn search(
        &self,
        prefix: &[&str],
        query: &SearchQuery,
    ) -> Result<Vec<Item>, StorageError> {
        validate_key(prefix, None)?;
        Ok(self
            .lock()
            .values()
            .filter(|item| {
                has_prefix(&item.namespace, prefix) && matches_filter(&item.value, &query.filter)
            })
            .skip(query.offset)
            .take(query.limit.unwrap_or(10))
            .cloned()
            .collect())
    }

    async fn list_namespaces(
        &self,
        prefix: &[&str],
        max_depth: Option<usize>,
    ) -> Result<Vec<Vec<String>>, StorageError> {
        validate_key(prefix, None)?;
        let mut namespaces: Vec<Vec<String>> = self
            .lock()
            .keys()
            .filter(|(namespace, _)| has_prefix(namespace, prefix))
            .map(|(namespace, _)| match max_depth {
                Some(depth) => namespace.iter().take(depth).cloned().collect(),
                None => namespace.clone(),
            })
            .collect();
        namespaces.sort();
        namespaces.dedup();
        Ok(namespaces)
    }
}
