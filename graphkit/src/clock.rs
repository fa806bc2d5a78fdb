//! Wall-clock time as the stored records keep it. Below `checkpoint/`, `store/`, `cache/`
//! and `sql/`, which all stamp rows with it.
//!
//! [`Clock`] is the same time behind a trait, for what must be tested without waiting: a
//! cache entry's time to live is measured on its cache's clock, which a test replaces with a
//! [`ManualClock`] and moves forward by hand.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A source of wall-clock time, in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + Debug + 'static {
    /// The current time.
    fn now_ms(&self) -> i64;
}

/// The system's clock ([`now_ms`]): what every backend uses unless given another.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that stands still until moved: for tests of time to live and expiry that must
/// not sleep.
///
/// ```
/// use std::time::Duration;
/// use graphkit::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::at(1_000);
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_ms(), 3_000);
/// ```
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock showing `ms` milliseconds since the Unix epoch.
    pub fn at(ms: i64) -> Self {
        Self(AtomicI64::new(ms))
    }

    /// A clock showing the system's time now (and standing still from then on).
    pub fn now() -> Self {
        Self::at(now_ms())
    }

    /// Moves the clock forward by `by` (whole milliseconds).
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |t| {
                Some(t.saturating_add(ms))
            })
            .ok();
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
