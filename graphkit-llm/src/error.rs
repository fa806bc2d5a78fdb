//! The crate's error type.

use std::time::Duration;

/// Everything that can go wrong when talking to a chat model.
///
/// Each message says what happened and, where there is something to do, what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// A provider needs an API key and the environment variable holding it is not set.
    #[error(
        "{provider} needs an API key: set the environment variable {var} (or pass a key explicitly)"
    )]
    MissingApiKey {
        /// The provider, e.g. `openai`.
        provider: &'static str,
        /// The environment variable that was read.
        var: &'static str,
    },

    /// A model spec string could not be understood.
    #[error(
        "invalid model spec {spec:?}: {reason}; expected `openai:MODEL`, `anthropic:MODEL`, `ollama:MODEL` \
         or `openai-compatible:BASE_URL#MODEL`"
    )]
    InvalidSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The request cannot be sent as built (for example, no messages).
    #[error("invalid request: {0}")]
    InvalidRequest(String),

    /// The server answered with an error status (after any retries).
    #[error("{provider} answered HTTP {status}: {message}{}", hint_for_status(*status))]
    Http {
        /// The provider.
        provider: &'static str,
        /// The HTTP status code.
        status: u16,
        /// The error message from the body, or the body itself.
        message: String,
        /// How long the server asked us to wait (`Retry-After`), if it said.
        retry_after: Option<Duration>,
    },

    /// The server could not be reached, or the connection broke.
    #[error(
        "could not reach {provider} at {url}: {source}; check the base URL and that the server is running"
    )]
    Connection {
        /// The provider.
        provider: &'static str,
        /// The URL that was requested.
        url: String,
        /// The underlying error.
        #[source]
        source: reqwest::Error,
    },

    /// The request took longer than the configured timeout.
    #[error(
        "{provider} did not answer within {timeout:?}; raise the timeout with `ClientOptions::timeout` if the model is slow"
    )]
    Timeout {
        /// The provider.
        provider: &'static str,
        /// The timeout in force.
        timeout: Duration,
    },

    /// The server's reply was not in the shape the provider's protocol documents.
    #[error("{provider} sent a reply that could not be read: {detail}; raw reply: {raw}")]
    MalformedResponse {
        /// The provider.
        provider: &'static str,
        /// What was wrong.
        detail: String,
        /// The raw reply (possibly shortened).
        raw: String,
    },

    /// The reply is larger than the configured limit; reading stopped there.
    #[error(
        "{provider} sent a reply larger than {limit} bytes; raise `ClientOptions::max_response_bytes` if such replies are expected"
    )]
    ResponseTooLarge {
        /// The provider.
        provider: &'static str,
        /// The limit in force.
        limit: usize,
    },

    /// A streamed reply went silent for longer than the idle timeout.
    #[error(
        "{provider} stream stalled: no data for {idle:?}; the server may be overloaded, retry the call or raise `ClientOptions::timeout`"
    )]
    StreamStalled {
        /// The provider.
        provider: &'static str,
        /// The idle timeout in force.
        idle: Duration,
    },

    /// A streamed reply ended before the provider's end-of-stream marker.
    #[error(
        "{provider} stream ended before it was complete (no {expected}); the connection was probably cut, retry the call"
    )]
    StreamTruncated {
        /// The provider.
        provider: &'static str,
        /// The end marker that never came.
        expected: &'static str,
    },

    /// A tool call's arguments are not valid JSON.
    #[error(
        "the model called tool {name:?} with arguments that are not valid JSON ({error}): {raw}"
    )]
    ToolArguments {
        /// The tool's name.
        name: String,
        /// The parse error.
        error: String,
        /// The raw arguments.
        raw: String,
    },

    /// The model's structured output was still not accepted after every retry: it did not
    /// parse, broke the schema, or failed a validator (see
    /// [`StructuredModel`](crate::StructuredModel)).
    #[error(
        "the model's reply does not match the schema of {type_name} after {attempts} attempt(s) ({error}); \
         raise `retries`, make the prompt or the validators clearer, or use a stronger model; raw reply: {}",
        shorten(.raw)
    )]
    StructuredOutput {
        /// The Rust type that was requested.
        type_name: &'static str,
        /// The last problem found: a parse error, schema violations, or validator messages.
        error: String,
        /// The model's last raw reply.
        raw: String,
        /// How many replies were asked for in all (the retries plus one).
        attempts: usize,
    },

    /// A [`StandInModel`](crate::StandInModel) (an offline test double) got a request it
    /// has no handler for, or its handler answered in a way the request does not allow.
    #[error("StandInModel {model:?}: {problem}")]
    StandIn {
        /// The stand-in's name.
        model: String,
        /// What went wrong and what to add or change.
        problem: String,
    },

    /// A [`ScriptedModel`](crate::ScriptedModel) was called more times than it has replies.
    #[error(
        "ScriptedModel has no reply left (it was given {given}); add more replies to the script"
    )]
    ScriptExhausted {
        /// How many replies the script had.
        given: usize,
    },

    /// A [`FunctionModel`](crate::FunctionModel)'s closure returned an error.
    #[error("FunctionModel failed: {0}")]
    Function(String),

    /// The caller's time budget ran out: the call was not sent, or was abandoned while
    /// waiting for the reply. Not retryable: the budget stays spent.
    #[error("call abandoned: {reason}")]
    BudgetSpent {
        /// What ran out and how to give more time.
        reason: String,
    },
}

fn hint_for_status(status: u16) -> &'static str {
    match status {
        401 | 403 => " (check the API key)",
        404 => " (check the model name and the base URL)",
        429 => " (rate limited: lower the request rate or raise the retry budget)",
        500..=599 => " (server error: retry later)",
        _ => "",
    }
}

impl LlmError {
    /// `true` for errors that a retry may fix: 429, 5xx, connection failures and timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => *status == 429 || (500..=599).contains(status),
            Self::Connection { .. } | Self::Timeout { .. } => true,
            _ => false,
        }
    }

    /// The wait the server asked for with `Retry-After`, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// `Result` with [`LlmError`].
///
/// Only at this path (`graphkit_llm::error::Result`), not at the crate root: `use graphkit_llm::*` keeps the
/// prelude's `Result`, and glob imports of several graphkit crates do not collide.
pub type Result<T, E = LlmError> = std::result::Result<T, E>;

/// Shortens a raw body for an error message.
pub(crate) fn shorten(raw: &str) -> String {
    const LIMIT: usize = 2000;
    if raw.len() <= LIMIT {
        return raw.to_owned();
    }
    let mut end = LIMIT;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &raw[..end], raw.len())
}
