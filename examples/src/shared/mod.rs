//! Infrastructure every research workflow shares: the common options ([`CommonArgs`]),
//! choosing models (`--model`), opening checkpointers (`--checkpoint`), the search backend
//! (`--corpus`: the offline corpus, or Tavily), run directories and `run.json`
//! ([`RunSession`]: new runs and `--resume`), the run fields every runner takes
//! ([`RunTarget`]), the run listing ([`runs`]), progress
//! ([`Progress`]), Ctrl-C ([`StopSignal`]), `--stream` JSON lines ([`stream`]) and the error
//! type.

pub(crate) mod args;
pub(crate) mod checkpoint;
pub(crate) mod command;
mod error;
pub(crate) mod interrupt;
pub mod logging;
pub mod models;
pub(crate) mod progress;
pub mod prose;
pub mod run_dir;
pub(crate) mod run_target;
pub mod runs;
pub mod search;
pub(crate) mod session;
pub mod stdout;
pub(crate) mod stream;
pub mod time;

pub use args::CommonArgs;
pub use checkpoint::CheckpointChoice;

pub use error::ExampleError;
pub use interrupt::StopSignal;
pub use models::ModelChoice;
pub use progress::{Progress, ProgressMode};

pub use run_dir::{RunDir, RunStatus};
pub use run_target::RunTarget;
pub(crate) use session::GivenOptions;
pub use session::{RunRequest, RunSession};

/// `text` cut at a character boundary to at most `max` bytes, with `…` when cut.
pub fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
