//! [`TerminationReason`]: why the research loop stopped, kept in the state and in the
//! report's metadata.

use serde::{Deserialize, Serialize};

/// Why the research loop stopped (the router's three criteria, in the order checked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminationReason {
    /// `current_depth >= max_depth`.
    MaxDepth,
    /// The latest reflection recommended stopping.
    ReflectionStop,
    /// No new entities in the last `stagnation_threshold` iterations.
    Stagnation,
}

impl std::fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::MaxDepth => "max_depth",
            Self::ReflectionStop => "reflection_stop",
            Self::Stagnation => "stagnation",
        })
    }
}
