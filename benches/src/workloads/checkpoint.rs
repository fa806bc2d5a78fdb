//! W7 `checkpoint`: NOT YET RUNNABLE.
//!
//! W7 re-runs W1 (N = 100), W4 (K = 200) and W5 with a checkpointer (`memory`, `sqlite`,
//! `sqlitenormal`) and a durability (`sync`, `async`, `exit`). graphkit has the savers as
//! storage (`graphkit::checkpoint::{InMemorySaver, SqliteSaver}`), but a compiled graph
//! cannot be given a saver yet: the engine integration is in progress. Until it lands,
//! [`cases`] returns no case, the suite does not list any `ckpt_*` case, and nothing is
//! reported for W7. When it lands, build each case here from the W1/W4/W5 graph builders
//! (sync mode, a fresh thread id per run, a fresh SQLite file per timed run with the
//! schema created before the timer), and fill `checkpoint_stats`.

use crate::case::Case;

/// The W7 cases that can run with this build of graphkit: none yet (see the module docs).
pub fn cases() -> Vec<Case> {
    Vec::new()
}
