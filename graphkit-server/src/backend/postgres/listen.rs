//! One `LISTEN` connection per process, fanned out in memory.
//!
//! Every server process holds a single [`PgListener`] on the four channels of its schema
//! (see [`Channels`]). Notifications carry ids only (`<run_id>` or `<run_id>:<seq>`); whoever
//! wakes reads the rows it needs, so a payload never nears PostgreSQL's 8000-byte cap and a
//! big `values` event never passes through the notify queue.
//!
//! Each notification wakes the process's [`Notifier`]: `runs_new` the queue, the others
//! the waiters of the run named (`wait`/`join` callers, and the worker holding the run,
//! which hears its cancel that way). The run's stream followers in this process share one
//! feed ([`crate::backend::EventFeeds`]): `run_events` tells it up to which event the run
//! has stored, and one of them reads the missing events for all. A notification lost while the connection was
//! down only delays: waiters also re-read on a timer, and the queue is woken on reconnect.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::backend::Notifier;

/// The notify channel names of one schema. Channels are per database, so each is prefixed
/// with the schema: two servers (or two tests) on different schemas never hear each other.
#[derive(Debug, Clone)]
pub(crate) struct Channels {
    /// A run became claimable (inserted, or swept back to `pending`). Payload: the run id.
    pub runs_new: String,
    /// An event was appended. Payload: `<run_id>:<seq>`.
    pub run_events: String,
    /// A run changed status (claimed, ended, swept). Payload: the run id.
    pub run_status: String,
    /// A cancel was requested for a run. Payload: the run id.
    pub run_control: String,
}

impl Channels {
    pub(crate) fn new(schema: &str) -> Self {
        Self {
            runs_new: format!("{schema}.runs_new"),
            run_events: format!("{schema}.run_events"),
            run_status: format!("{schema}.run_status"),
            run_control: format!("{schema}.run_control"),
        }
    }
}

/// Feeds the process's [`Notifier`] from its `LISTEN` connection.
#[derive(Debug, Clone)]
pub(crate) struct Fanout {
    channels: Channels,
    notifier: Notifier,
}

impl Fanout {
    pub(crate) fn new(channels: Channels, notifier: Notifier) -> Arc<Self> {
        Arc::new(Self { channels, notifier })
    }

    fn dispatch(&self, channel: &str, payload: &str) {
        if channel == self.channels.runs_new {
            self.notifier.notify_queue();
            return;
        }
        let mut parts = payload.split(':');
        let Ok(run_id) = Uuid::parse_str(parts.next().unwrap_or_default()) else {
            return;
        };
        if channel == self.channels.run_events {
            // `<run_id>:<last seq>`: this process's followers read what they have not seen.
            self.notifier.notify_run_events(run_id);
            if let Some(last) = parts.next().and_then(|seq| seq.parse().ok()) {
                self.notifier.feeds().announce(run_id, last);
            }
        } else {
            self.notifier.notify_run(run_id);
        }
    }

    /// Runs the process's `LISTEN` loop until `stop` is cancelled, reconnecting after a lost
    /// connection (and then waking every waiter, since notifications may have been missed).
    pub(crate) async fn listen(self: Arc<Self>, pool: PgPool, stop: CancellationToken) {
        let channels = [
            self.channels.runs_new.as_str(),
            self.channels.run_events.as_str(),
            self.channels.run_status.as_str(),
            self.channels.run_control.as_str(),
        ];
        'connect: while !stop.is_cancelled() {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(listener) => listener,
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN connection failed; retrying in 1 s");
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = tokio::time::sleep(Duration::from_secs(1)) => continue 'connect,
                    }
                }
            };
            listener.ignore_pool_close_event(true);
            if let Err(e) = listener.listen_all(channels).await {
                tracing::warn!(error = %e, "LISTEN failed; retrying in 1 s");
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => continue 'connect,
                }
            }
            // Anything sent before LISTEN took effect was missed: the queue and the followed
            // runs re-read now; other run waiters re-read on their own timer.
            self.notifier.notify_queue();
            self.notifier.feeds().all_changed();
            loop {
                let next = tokio::select! {
                    () = stop.cancelled() => return,
                    next = listener.try_recv() => next,
                };
                match next {
                    Ok(Some(notification)) => {
                        self.dispatch(notification.channel(), notification.payload());
                    }
                    Ok(None) => {
                        // The connection dropped and was re-established (LISTEN included).
                        tracing::debug!("LISTEN connection re-established");
                        self.notifier.notify_queue();
                        self.notifier.feeds().all_changed();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                        self.notifier.notify_queue();
                        continue 'connect;
                    }
                }
            }
        }
    }
}
