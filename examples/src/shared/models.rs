//! `--model SPEC`: the workflow's deterministic offline stand-in, or any graphkit-llm spec.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use graphkit_llm::{ChatModel, ClientOptions, ModelSpec};

use super::ExampleError;

/// Which model a workflow role uses.
///
/// `offline` (the default) selects the workflow's own offline stand-in: a deterministic
/// program that drives the graph from the local corpus, needing no key and no network.
/// Anything else is a graphkit-llm spec (`openai:gpt-4o`, `anthropic:...`, `ollama:...`,
/// `openai-compatible:http://127.0.0.1:8091/v1#smol`).
///
/// ```
/// use graphkit_examples::shared::ModelChoice;
///
/// assert_eq!("offline".parse::<ModelChoice>()?, ModelChoice::Offline);
/// assert!(matches!("openai:gpt-4o".parse::<ModelChoice>()?, ModelChoice::Spec(_)));
/// assert!("gpt-4o".parse::<ModelChoice>().is_err());
/// # Ok::<(), graphkit_examples::shared::ExampleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelChoice {
    /// The workflow's offline stand-in.
    #[default]
    Offline,
    /// A real provider.
    Spec(ModelSpec),
}

impl ModelChoice {
    /// `true` for the offline stand-in.
    pub(crate) fn is_offline(&self) -> bool {
        matches!(self, Self::Offline)
    }

    /// Builds the model: `offline` for [`ModelChoice::Offline`], the provider otherwise
    /// (keys and base URLs from the environment; each call times out after
    /// `GRAPHKIT_MODEL_TIMEOUT_SECS` seconds, default 180, and is retried
    /// `GRAPHKIT_MODEL_RETRIES` times, default 2: size them for a slow local model so a run
    /// ends in bounded time).
    ///
    /// # Errors
    /// [`ExampleError::Model`] when the provider cannot be set up (a missing key names the
    /// variable to set), or [`ExampleError::Usage`] when one of the two variables is not a
    /// whole number.
    pub fn build(&self, offline: Arc<dyn ChatModel>) -> Result<Arc<dyn ChatModel>, ExampleError> {
        match self {
            Self::Offline => Ok(offline),
            Self::Spec(spec) => {
                let options = ClientOptions::default()
                    .timeout(Duration::from_secs(env_number(TIMEOUT_VAR, 180)?))
                    .max_retries(
                        usize::try_from(env_number(RETRIES_VAR, 2)?).unwrap_or(usize::MAX),
                    );
                Ok(spec.build(options)?)
            }
        }
    }
}

/// The seconds a real model's call may take before it is abandoned (and retried).
pub const TIMEOUT_VAR: &str = "GRAPHKIT_MODEL_TIMEOUT_SECS";
/// How many times a real model's failed or timed-out call is retried.
pub const RETRIES_VAR: &str = "GRAPHKIT_MODEL_RETRIES";

/// The whole number in the environment variable `name`, or `default` when it is unset.
fn env_number(name: &str, default: u64) -> Result<u64, ExampleError> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(text) => text.trim().parse().map_err(|_| {
            ExampleError::Usage(format!(
                "{name}={text:?} is not a whole number (seconds for {TIMEOUT_VAR}, a count for {RETRIES_VAR})"
            ))
        }),
    }
}

impl std::str::FromStr for ModelChoice {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, ExampleError> {
        match s.trim() {
            "" | "offline" => Ok(Self::Offline),
            spec => Ok(Self::Spec(ModelSpec::parse(spec)?)),
        }
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Offline => f.write_str("offline"),
            Self::Spec(spec) => spec.fmt(f),
        }
    }
}
