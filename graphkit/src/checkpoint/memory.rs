//! [`InMemorySaver`]: checkpoints in process memory, for tests and short-lived runs.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use super::{CheckpointRecord, CheckpointTuple, Checkpointer, ListOptions, PendingWrite};
use crate::error::StorageError;

type Key = (String, String);

#[derive(Debug, Default)]
struct Inner {
    /// (thread, ns) -> records sorted by checkpoint id.
    threads: HashMap<Key, Vec<CheckpointRecord>>,
    /// (thread, ns, checkpoint id) -> writes in save order.
    writes: HashMap<(String, String, String), Vec<PendingWrite>>,
    locks: HashMap<String, String>,
}

/// Keeps checkpoints in memory; everything is lost when the process exits.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::checkpoint::InMemorySaver;
///
/// let saver = Arc::new(InMemorySaver::new());
/// ```
#[derive(Debug, Default)]
pub struct InMemorySaver {
    inner: Mutex<Inner>,
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every update is a single
        // insert or removal), so a poisoned lock is safe to keep using.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[async_trait]
impl Checkpointer for InMemorySaver {
    async fn put(&self, record: CheckpointRecord) -> Result<(), StorageError> {
        let mut inner = self.lock();
        let list = inner
            .threads
            .entry((record.thread_id.clone(), record.checkpoint_ns.clone()))
            .or_default();
        match list.binary_search_by(|r| r.checkpoint_id.cmp(&record.checkpoint_id)) {
            Ok(i) => list[i] = record,
            Err(i) => list.insert(i, record),
        }
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: &str,
        writes: Vec<PendingWrite>,
    ) -> Result<(), StorageError> {
        let mut inner = self.lock();
        let saved = inner
            .writes
            .entry((
                thread_id.to_owned(),
                checkpoint_ns.to_owned(),
                checkpoint_id.to_owned(),
            ))
            .or_default();
        for write in writes {
            match saved.iter_mut().find(|w| w.task_id == write.task_id) {
                Some(existing) => *existing = write,
                None => saved.push(write),
            }
        }
        Ok(())
    }

    async fn get(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<CheckpointTuple>, StorageError> {
        let inner = self.lock();
        let Some(list) = inner
            .threads
            .get(&(thread_id.to_owned(), checkpoint_ns.to_owned()))
        else {
            return Ok(None);
        };
        let record = match checkpoint_id {
            Some(id) => list.iter().find(|r| r.checkpoint_id == id),
            None => list.last(),
        };
        Ok(record.map(|record| CheckpointTuple {
            pending_writes: inner
                .writes
                .get(&(
                    thread_id.to_owned(),
                    checkpoint_ns.to_owned(),
                    record.checkpoint_id.clone(),
                ))
                .cloned()
                .unwrap_or_default(),
            record: record.clone(),
        }))
    }

    async fn list(
        &self,
        thread_id: &str,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<CheckpointRecord>, StorageError> {
        let inner = self.lock();
        let Some(list) = inner
            .threads
            .get(&(thread_id.to_owned(), checkpoint_ns.to_owned()))
        else {
            return Ok(Vec::new());
        };
        Ok(list
            .iter()
            .rev()
            .filter(|r| {
                options
                    .before
                    .as_deref()
                    .is_none_or(|before| r.checkpoint_id.as_str() < before)
            })
            .filter(|r| {
                options
                    .metadata
                    .as_ref()
                    .is_none_or(|filter| crate::filter::matches_filter(&r.metadata, filter))
            })
            .take(options.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), StorageError> {
        let mut inner = self.lock();
        inner.threads.retain(|(thread, _), _| thread != thread_id);
        inner.writes.retain(|(thread, _, _), _| thread != thread_id);
        Ok(())
    }

    async fn delete_run(&self, thread_id: &str, run_id: &str) -> Result<u64, StorageError> {
        let mut inner = self.lock();
        let mut gone = Vec::new();
        for ((thread, ns), records) in inner.threads.iter_mut() {
            if thread != thread_id {
                continue;
            }
            records.retain(|r| {
                let of_run = r.metadata.get("run_id").and_then(|v| v.as_str()) == Some(run_id);
                if of_run {
                    gone.push((ns.clone(), r.checkpoint_id.clone()));
                }
                !of_run
            });
        }
        for (ns, id) in &gone {
            inner
                .writes
                .remove(&(thread_id.to_owned(), ns.clone(), id.clone()));
        }
        Ok(gone.len() as u64)
    }

    async fn try_lock_thread(&self, thread_id: &str, run_id: &str) -> Result<bool, StorageError> {
        let mut inner = self.lock();
        match inner.locks.get(thread_id) {
            Some(holder) => Ok(holder == run_id),
            None => {
                inner.locks.insert(thread_id.to_owned(), run_id.to_owned());
                Ok(true)
            }
        }
    }

    async fn unlock_thread(&self, thread_id: &str, run_id: &str) -> Result<(), StorageError> {
        let mut inner = self.lock();
        if inner
            .locks
            .get(thread_id)
            .is_some_and(|holder| holder == run_id)
        {
            inner.locks.remove(thread_id);
        }
        Ok(())
    }
}
