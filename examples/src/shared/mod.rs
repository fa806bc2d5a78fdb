//! Infrastructure every research workflow shares: choosing models (`--model`), opening
//! checkpointers (`--checkpoint`), the search backend (`--corpus`: the offline corpus, or
//! Tavily), run directories, progress lines and the error type.

pub mod checkpoint;
mod error;
pub mod models;
pub mod progress;
pub mod run_dir;
pub mod search;
pub mod time;

pub use checkpoint::CheckpointChoice;
pub use error::ExampleError;
pub use models::ModelChoice;
pub use progress::Progress;
pub use run_dir::{RunDir, RunManifest};

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
