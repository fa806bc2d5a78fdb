//! In-process wake-ups: [`Notifier`] hands out [`Wakeup`]s per run and for the queue, and
//! holds the process's [`EventFeeds`] (the live events of followed runs).
//!
//! The SQLite backend notifies directly after each write; the PostgreSQL backend feeds it
//! from LISTEN/NOTIFY, so waiters in every process wake the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use uuid::Uuid;

use super::feed::EventFeeds;

/// What a waiter waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Topic {
    Run(Uuid),
    Queue,
}

/// Keyed wake-up channels, and the feeds of followed runs. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Notifier {
    topics: Arc<Mutex<HashMap<Topic, watch::Sender<u64>>>>,
    feeds: EventFeeds,
}

/// Entries without waiters are dropped once the map holds more than this many.
const PRUNE_ABOVE: usize = 256;

impl Notifier {
    /// No topics yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn subscribe(&self, topic: Topic) -> Wakeup {
        let mut topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        if topics.len() > PRUNE_ABOVE {
            topics.retain(|_, sender| sender.receiver_count() > 0);
        }
        let receiver = topics
            .entry(topic)
            .or_insert_with(|| watch::channel(0).0)
            .subscribe();
        Wakeup { receiver }
    }

    fn notify(&self, topic: Topic) {
        let mut topics = self.topics.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(sender) = topics.get(&topic) {
            if sender.receiver_count() == 0 {
                topics.remove(&topic);
            } else {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// A wake-up for changes of one run.
    pub fn watch_run(&self, run_id: Uuid) -> Wakeup {
        self.subscribe(Topic::Run(run_id))
    }

    /// Wakes the waiters of one run after a change of its status or a cancel request; its
    /// followers in this process read its status once.
    pub fn notify_run(&self, run_id: Uuid) {
        self.notify(Topic::Run(run_id));
        self.feeds.status_changed(run_id);
    }

    /// Wakes the waiters of one run after new events were stored (its followers get the
    /// events through [`feeds`](Self::feeds), not through this).
    pub fn notify_run_events(&self, run_id: Uuid) {
        self.notify(Topic::Run(run_id));
    }

    /// The live events of the runs followed in this process.
    pub fn feeds(&self) -> &EventFeeds {
        &self.feeds
    }

    /// A wake-up for the run queue.
    pub fn watch_queue(&self) -> Wakeup {
        self.subscribe(Topic::Queue)
    }

    /// Wakes the workers waiting for runs.
    pub fn notify_queue(&self) {
        self.notify(Topic::Queue);
    }
}

/// Resolves [`changed`](Self::changed) after each notification since it was made (or since
/// the last `changed`). Notifications while nobody waits are not lost: the next `changed`
/// returns at once.
#[derive(Debug)]
pub struct Wakeup {
    receiver: watch::Receiver<u64>,
}

impl Wakeup {
    /// Waits for the next notification.
    pub async fn changed(&mut self) {
        if self.receiver.changed().await.is_err() {
            // The notifier is gone: nothing will ever wake us.
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_notification_before_waiting_is_not_lost() {
        let notifier = Notifier::new();
        let run = Uuid::now_v7();
        let mut wakeup = notifier.watch_run(run);
        notifier.notify_run(run);
        // Returns at once: the notification was recorded.
        wakeup.changed().await;
        let other = Uuid::now_v7();
        notifier.notify_run(other); // no waiter: nothing recorded, no entry kept
        let mut queue = notifier.watch_queue();
        notifier.notify_queue();
        queue.changed().await;
    }
}
