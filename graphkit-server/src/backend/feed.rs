//! Live run events in memory: one [`Feed`] per run that has followers in this process, so
//! a run's events reach all of them as they are produced instead of each follower
//! re-reading the database.
//!
//! The database stays the record: a follower first replays the stored events after the
//! event id it starts from, then takes the rest from the feed. The seam is by event id
//! (the per-run sequence number): what the replay already gave is skipped, and a follower
//! whose next event is no longer (or not yet) in the feed's bounded buffer reads from the
//! database again. A follower that falls behind therefore never blocks the run or the
//! other followers.
//!
//! Who fills a feed:
//! - the process that stores events hands them over right after the commit
//!   ([`EventFeeds::publish`]);
//! - a commit announced by another process (PostgreSQL `NOTIFY`) only says up to which
//!   event id the run has events ([`EventFeeds::announce`]); one follower then reads what
//!   is missing, once for the whole process, and the feed hands it to the others;
//! - a change of the run's status ([`EventFeeds::status_changed`]) makes one follower
//!   read the run's status (and any events still missing) once for the whole process;
//!   when the run has ended, the feed is closed and its followers end after its last
//!   event.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use uuid::Uuid;

use super::{Backend, RunEvent};
use crate::error::Result;

/// A feed keeps at most this many of a run's latest events ...
const MAX_EVENTS: usize = 1024;
/// ... and at most this many bytes of their names and data (always the newest event).
const MAX_BYTES: usize = 8 << 20;
/// Entries of runs without followers are dropped once the map holds more than this many.
const PRUNE_ABOVE: usize = 256;
/// A follower's [`RunFollower::recheck`] reads the run again at most this often per
/// process (a lost notification only delays).
const RECHECK_EVERY: Duration = Duration::from_secs(1);

/// The feeds of the runs followed in this process. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct EventFeeds {
    runs: Arc<Mutex<HashMap<Uuid, Weak<Feed>>>>,
}

/// One run's live events and what its followers need to know about them.
#[derive(Debug)]
struct Feed {
    run_id: Uuid,
    state: Mutex<FeedState>,
    /// Bumped on every change; each follower holds a receiver.
    changed: watch::Sender<u64>,
    /// Held while one follower reads the database for the whole feed.
    refreshing: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct FeedState {
    /// The sequence number before the first buffered event.
    base: i64,
    /// The events `base + 1 ..= base + len`, oldest first.
    events: VecDeque<Arc<RunEvent>>,
    /// The bytes of `events` (names and data).
    bytes: usize,
    /// The highest sequence number announced by another process.
    announced: i64,
    /// The run's status may have changed: read it.
    status_changed: bool,
    /// The run has ended (or is gone): nothing follows the buffered events.
    ended: bool,
    /// When the run was last read because of a [`RunFollower::recheck`].
    rechecked: Instant,
}

impl FeedState {
    fn last(&self) -> i64 {
        self.base + self.events.len() as i64
    }

    /// Appends the events that follow the buffer; a batch that leaves a hole after it
    /// starts the buffer anew (followers before it read the database).
    fn push(&mut self, events: impl IntoIterator<Item = Arc<RunEvent>>) -> bool {
        let mut added = false;
        for event in events {
            if event.seq <= self.last() {
                continue;
            }
            if event.seq != self.last() + 1 {
                self.events.clear();
                self.bytes = 0;
                self.base = event.seq - 1;
            }
            self.bytes += event.event.len() + event.data.len();
            self.events.push_back(event);
            added = true;
        }
        while self.events.len() > 1 && (self.events.len() > MAX_EVENTS || self.bytes > MAX_BYTES) {
            if let Some(old) = self.events.pop_front() {
                self.bytes -= old.event.len() + old.data.len();
                self.base += 1;
            }
        }
        added
    }

    /// Whether the database holds something the feed has not seen yet.
    fn stale(&self) -> bool {
        !self.ended && (self.status_changed || self.announced > self.last())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Feed {
    fn wake(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    fn publish(&self, events: impl IntoIterator<Item = Arc<RunEvent>>) {
        if lock(&self.state).push(events) {
            self.wake();
        }
    }

    /// Brings the feed up to date from the database, once for all its followers: the
    /// follower that gets here first reads, the others find the feed fresh.
    async fn refresh(&self, backend: &dyn Backend) -> Result<()> {
        let _one_reader = self.refreshing.lock().await;
        let (after, read_status) = {
            let mut state = lock(&self.state);
            if !state.stale() {
                return Ok(());
            }
            let read_status = std::mem::take(&mut state.status_changed);
            (state.last(), read_status)
        };
        let read = async {
            // Events are stored before the run's final status: read the status first, then
            // the events, and an ended run's events are all there.
            let ended = if read_status {
                backend
                    .get_run(None, self.run_id)
                    .await?
                    .is_none_or(|run| run.status.is_terminal())
            } else {
                false
            };
            let events = backend.read_events(self.run_id, after).await?;
            Ok::<_, crate::error::ServerError>((ended, events))
        };
        match read.await {
            Ok((ended, events)) => {
                let mut state = lock(&self.state);
                state.push(events.into_iter().map(Arc::new));
                // Announced events that are not stored (the run was deleted) are not waited for.
                state.announced = state.announced.min(state.last());
                state.ended |= ended;
                drop(state);
                self.wake();
                Ok(())
            }
            Err(error) => {
                lock(&self.state).status_changed |= read_status;
                Err(error)
            }
        }
    }
}

impl EventFeeds {
    /// No feeds yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn feed(&self, run_id: Uuid) -> Option<Arc<Feed>> {
        let mut runs = lock(&self.runs);
        let feed = runs.get(&run_id)?.upgrade();
        if feed.is_none() {
            runs.remove(&run_id);
        }
        feed
    }

    /// Follows `run_id` from the event after `after` (0: from its first event).
    pub fn follow(&self, run_id: Uuid, after: i64) -> RunFollower {
        let feed = {
            let mut runs = lock(&self.runs);
            if runs.len() > PRUNE_ABOVE {
                runs.retain(|_, feed| feed.strong_count() > 0);
            }
            match runs.entry(run_id) {
                Entry::Occupied(mut entry) => match entry.get().upgrade() {
                    Some(feed) => feed,
                    None => {
                        let feed = new_feed(run_id);
                        entry.insert(Arc::downgrade(&feed));
                        feed
                    }
                },
                Entry::Vacant(entry) => {
                    let feed = new_feed(run_id);
                    entry.insert(Arc::downgrade(&feed));
                    feed
                }
            }
        };
        RunFollower {
            changed: feed.changed.subscribe(),
            feed,
            cursor: after,
            replayed: false,
        }
    }

    /// How many followers this process has now, and of how many runs.
    pub fn followers(&self) -> (usize, usize) {
        let feeds: Vec<Arc<Feed>> = lock(&self.runs)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        // Each follower holds one receiver of its feed's changes.
        let followers = feeds.iter().map(|f| f.changed.receiver_count()).sum();
        let runs = feeds
            .iter()
            .filter(|f| f.changed.receiver_count() > 0)
            .count();
        (followers, runs)
    }

    /// Hands events just stored for `run_id`, numbered from `first`, to its followers in
    /// this process (nothing to do when it has none).
    pub fn publish(&self, run_id: Uuid, first: i64, events: &[(String, String)]) {
        if let Some(feed) = self.feed(run_id) {
            feed.publish((first..).zip(events).map(|(seq, (event, data))| {
                Arc::new(RunEvent {
                    seq,
                    event: event.clone(),
                    data: data.clone(),
                })
            }));
        }
    }

    /// Another process stored events of `run_id` up to `last`: one of its followers here
    /// reads the ones this process has not seen.
    pub fn announce(&self, run_id: Uuid, last: i64) {
        if let Some(feed) = self.feed(run_id) {
            let mut state = lock(&feed.state);
            if last > state.last() && last > state.announced {
                state.announced = last;
                drop(state);
                feed.wake();
            }
        }
    }

    /// The status of `run_id` may have changed (it ended, was cancelled or deleted): one of
    /// its followers here reads it.
    pub fn status_changed(&self, run_id: Uuid) {
        if let Some(feed) = self.feed(run_id) {
            lock(&feed.state).status_changed = true;
            feed.wake();
        }
    }

    /// Notifications may have been missed (a lost `LISTEN` connection): every feed reads
    /// its run again.
    pub fn all_changed(&self) {
        let feeds: Vec<Arc<Feed>> = lock(&self.runs)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for feed in feeds {
            lock(&feed.state).status_changed = true;
            feed.wake();
        }
    }
}

fn new_feed(run_id: Uuid) -> Arc<Feed> {
    Arc::new(Feed {
        run_id,
        state: Mutex::new(FeedState {
            base: 0,
            events: VecDeque::new(),
            bytes: 0,
            announced: 0,
            // A new feed knows nothing of the run yet: the first look reads its status.
            status_changed: true,
            ended: false,
            rechecked: Instant::now(),
        }),
        changed: watch::channel(0).0,
        refreshing: tokio::sync::Mutex::new(()),
    })
}

/// What [`RunFollower::next`] found.
#[derive(Debug)]
pub enum Followed {
    /// The next events, in order (never empty).
    Events(Vec<Arc<RunEvent>>),
    /// Nothing new yet: wait for [`RunFollower::changed`].
    Waiting,
    /// The run has ended (or is gone) and every event was given.
    Ended,
}

/// One follower of a run's events: each event after its starting point exactly once, in
/// order. Made by [`Backend::follow_run`].
#[derive(Debug)]
pub struct RunFollower {
    feed: Arc<Feed>,
    changed: watch::Receiver<u64>,
    /// The last event given.
    cursor: i64,
    replayed: bool,
}

impl RunFollower {
    /// The run followed.
    pub fn run_id(&self) -> Uuid {
        self.feed.run_id
    }

    /// The sequence number of the last event given (the starting point before any).
    pub fn last_seq(&self) -> i64 {
        self.cursor
    }

    fn give(&mut self, events: Vec<Arc<RunEvent>>) -> Followed {
        let events: Vec<Arc<RunEvent>> =
            events.into_iter().filter(|e| e.seq > self.cursor).collect();
        match events.last() {
            Some(last) => {
                self.cursor = last.seq;
                Followed::Events(events)
            }
            None => Followed::Waiting,
        }
    }

    /// Reads the stored events after the cursor, shares them with the other followers,
    /// and gives them.
    async fn read(&mut self, backend: &dyn Backend) -> Result<Followed> {
        let events: Vec<Arc<RunEvent>> = backend
            .read_events(self.feed.run_id, self.cursor)
            .await?
            .into_iter()
            .map(Arc::new)
            .collect();
        self.feed.publish(events.iter().cloned());
        Ok(self.give(events))
    }

    /// The next events after the ones given, without waiting: from the database first (the
    /// replay, or when the follower fell behind the feed's buffer), then from memory.
    pub async fn next(&mut self, backend: &dyn Backend) -> Result<Followed> {
        if !self.replayed {
            self.replayed = true;
            if let events @ Followed::Events(_) = self.read(backend).await? {
                return Ok(events);
            }
        }
        loop {
            // Seen before looking, so a change after the look wakes `changed`.
            self.changed.borrow_and_update();
            let (events, behind, ended, stale) = {
                let state = lock(&self.feed.state);
                let behind = self.cursor < state.base;
                let events: Vec<Arc<RunEvent>> = if behind {
                    Vec::new()
                } else {
                    let skip = usize::try_from(self.cursor - state.base).unwrap_or(usize::MAX);
                    state.events.iter().skip(skip).cloned().collect()
                };
                (events, behind, state.ended, state.stale())
            };
            if behind {
                if let events @ Followed::Events(_) = self.read(backend).await? {
                    return Ok(events);
                }
                // The events before the buffer are gone from the database (the run was
                // deleted): carry on with what the buffer holds.
                self.cursor = lock(&self.feed.state).base.max(self.cursor);
                continue;
            }
            if let events @ Followed::Events(_) = self.give(events) {
                return Ok(events);
            }
            if ended {
                return Ok(Followed::Ended);
            }
            if !stale {
                return Ok(Followed::Waiting);
            }
            self.feed.refresh(backend).await?;
        }
    }

    /// Waits until the feed changed since the last [`next`](Self::next).
    pub async fn changed(&mut self) {
        if self.changed.changed().await.is_err() {
            // The feed is gone, which cannot happen while we hold it.
            std::future::pending::<()>().await;
        }
    }

    /// Asks for the run to be read again (a follower that heard nothing for a while: a
    /// notification may have been lost). At most once per second per process.
    pub fn recheck(&self) {
        let mut state = lock(&self.feed.state);
        if state.rechecked.elapsed() >= RECHECK_EVERY {
            state.rechecked = Instant::now();
            state.status_changed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64) -> Arc<RunEvent> {
        Arc::new(RunEvent {
            seq,
            event: "values".into(),
            data: format!("{{\"n\":{seq}}}"),
        })
    }

    #[test]
    fn the_buffer_stays_contiguous_and_bounded() {
        let feed = new_feed(Uuid::now_v7());
        let mut state = lock(&feed.state);
        assert!(state.push([event(1), event(2)]));
        assert!(!state.push([event(1), event(2)]), "duplicates are skipped");
        assert!(state.push([event(2), event(3)]));
        assert_eq!((state.base, state.last()), (0, 3));
        // A hole starts the buffer anew after it.
        assert!(state.push([event(7)]));
        assert_eq!((state.base, state.last()), (6, 7));
        state.push((8..8 + MAX_EVENTS as i64 + 10).map(event));
        assert_eq!(state.events.len(), MAX_EVENTS);
        assert_eq!(state.last(), 7 + MAX_EVENTS as i64 + 10);
        assert_eq!(state.events.front().map(|e| e.seq), Some(state.base + 1));
    }
}
