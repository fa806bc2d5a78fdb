//! HTTP for providers, with the reliability policy applied to every request: timeout,
//! retries with exponential backoff and jitter (honouring `Retry-After`), a concurrency
//! limit and a requests-per-minute limit.
//!
//! Cancellation: every wait here (limits, backoff, the request itself) is a future that
//! stops when dropped, so dropping a call's future abandons the request and frees its slot.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use reqwest::header::HeaderMap;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{LlmError, Result, shorten};

/// Reliability settings of a provider client.
///
/// ```
/// use std::time::Duration;
/// use graphkit_llm::ClientOptions;
///
/// let options = ClientOptions::default()
///     .timeout(Duration::from_secs(30))
///     .max_retries(5)
///     .max_concurrency(4)
///     .requests_per_minute(60);
/// assert_eq!(options.max_retries, 5);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    /// The longest a whole (non-streamed) request may take; for streams, the longest
    /// silence between two pieces. Default 120 s.
    pub timeout: Duration,
    /// The longest connecting may take. Default 10 s.
    pub connect_timeout: Duration,
    /// Retries after the first attempt on 429, 5xx, connection errors and timeouts. Default 3.
    pub max_retries: usize,
    /// The first backoff delay; it doubles each retry, with jitter. Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest backoff delay (a `Retry-After` from the server is honoured up to
    /// [`max_retry_after`](Self::max_retry_after)). Default 30 s.
    pub max_backoff: Duration,
    /// The longest `Retry-After` honoured; longer waits fail the call. Default 120 s.
    pub max_retry_after: Duration,
    /// The largest reply read, in bytes (a whole body, or a whole stream); larger replies
    /// fail with [`LlmError::ResponseTooLarge`]. Default 32 MiB.
    pub max_response_bytes: usize,
    /// At most this many requests in flight per model. Default: no limit.
    pub max_concurrency: Option<usize>,
    /// At most this many requests started per minute per model. Default: no limit.
    pub requests_per_minute: Option<u32>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
            max_response_bytes: 32 * 1024 * 1024,
            max_concurrency: None,
            requests_per_minute: None,
        }
    }
}

impl ClientOptions {
    /// Sets the request timeout.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the number of retries.
    #[must_use]
    pub fn max_retries(mut self, retries: usize) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the backoff range.
    #[must_use]
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the largest reply read, in bytes.
    #[must_use]
    pub fn max_response_bytes(mut self, limit: usize) -> Self {
        self.max_response_bytes = limit;
        self
    }

    /// Limits the requests in flight.
    #[must_use]
    pub fn max_concurrency(mut self, limit: usize) -> Self {
        self.max_concurrency = Some(limit.max(1));
        self
    }

    /// Limits the requests started per minute.
    #[must_use]
    pub fn requests_per_minute(mut self, limit: u32) -> Self {
        self.requests_per_minute = Some(limit.max(1));
        self
    }
}

/// An HTTP client for one provider and model, with its limits.
#[derive(Clone)]
pub(crate) struct Transport {
    provider: &'static str,
    client: reqwest::Client,
    options: ClientOptions,
    slots: Option<Arc<Semaphore>>,
    rate: Option<Arc<DefaultDirectRateLimiter>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("options", &self.options)
            .finish()
    }
}

/// A successful response, holding its concurrency slot until dropped.
pub(crate) struct Admitted {
    pub(crate) response: reqwest::Response,
    pub(crate) slot: Option<OwnedSemaphorePermit>,
    pub(crate) limits: StreamLimits,
}

impl Transport {
    pub(crate) fn new(provider: &'static str, options: ClientOptions) -> Self {
        let client = crate::http::client_builder()
            .connect_timeout(options.connect_timeout)
            .read_timeout(options.timeout)
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        let slots = options.max_concurrency.map(|n| Arc::new(Semaphore::new(n)));
        let rate = options
            .requests_per_minute
            .and_then(NonZeroU32::new)
            .map(|n| Arc::new(RateLimiter::direct(Quota::per_minute(n))));
        Self {
            provider,
            client,
            options,
            slots,
            rate,
        }
    }

    /// POSTs `body` and returns the JSON reply, retrying as configured.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<Value> {
        let attempt = || async {
            let admitted = self.send(url, headers, body, true).await?;
            let text = self.read_body(url, admitted.response).await?;
            serde_json::from_str::<Value>(&text).map_err(|e| LlmError::MalformedResponse {
                provider: self.provider,
                detail: format!("the body is not JSON ({e})"),
                raw: shorten(&text),
            })
        };
        self.with_retries(attempt).await
    }

    /// POSTs `body` and returns the response once its status is a success, retrying as
    /// configured; the body is left to stream.
    pub(crate) async fn post_stream(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<Admitted> {
        self.with_retries(|| self.send(url, headers, body, false))
            .await
    }

    async fn with_retries<T, F, Fut>(&self, attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let backoff = ExponentialBuilder::default()
            .with_min_delay(self.options.initial_backoff)
            .with_max_delay(self.options.max_backoff)
            .with_max_times(self.options.max_retries)
            .with_jitter();
        let max_retry_after = self.options.max_retry_after;
        attempt
            .retry(backoff)
            .sleep(tokio::time::sleep)
            .when(|e: &LlmError| e.is_retryable() && e.retry_after().is_none_or(|d| d <= max_retry_after))
            .adjust(|e, delay| delay.map(|d| e.retry_after().unwrap_or(d)))
            .notify(|e, delay| tracing::warn!(provider = self.provider, error = %e, ?delay, "retrying model request"))
            .await
    }

    async fn send(
        &self,
        url: &str,
        headers: &HeaderMap,
        body: &Value,
        whole: bool,
    ) -> Result<Admitted> {
        let slot = match &self.slots {
            Some(slots) => Some(Arc::clone(slots).acquire_owned().await.map_err(|_| {
                LlmError::InvalidRequest("the model's concurrency limiter was closed".into())
            })?),
            None => None,
        };
        if let Some(rate) = &self.rate {
            rate.until_ready().await;
        }
        let mut request = self.client.post(url).headers(headers.clone()).json(body);
        if whole {
            request = request.timeout(self.options.timeout);
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.request_error(url, e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(Admitted {
                response,
                slot,
                limits: self.stream_limits(),
            });
        }
        let retry_after = retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        Err(LlmError::Http {
            provider: self.provider,
            status: status.as_u16(),
            message: error_message(&text),
            retry_after,
        })
    }

    /// The whole body as text, at most `max_response_bytes` of it.
    async fn read_body(&self, url: &str, mut response: reqwest::Response) -> Result<String> {
        let limit = self.options.max_response_bytes;
        if response.content_length().is_some_and(|n| n > limit as u64) {
            return Err(self.too_large());
        }
        let mut body = Vec::new();
        while let Some(piece) = response
            .chunk()
            .await
            .map_err(|e| self.request_error(url, e))?
        {
            if body.len() + piece.len() > limit {
                return Err(self.too_large());
            }
            body.extend_from_slice(&piece);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    fn too_large(&self) -> LlmError {
        LlmError::ResponseTooLarge {
            provider: self.provider,
            limit: self.options.max_response_bytes,
        }
    }

    /// The limits a streamed body is read under.
    fn stream_limits(&self) -> StreamLimits {
        StreamLimits {
            provider: self.provider,
            idle: self.options.timeout,
            max_bytes: self.options.max_response_bytes,
        }
    }

    pub(crate) fn request_error(&self, url: &str, error: reqwest::Error) -> LlmError {
        if error.is_timeout() {
            LlmError::Timeout {
                provider: self.provider,
                timeout: self.options.timeout,
            }
        } else {
            LlmError::Connection {
                provider: self.provider,
                url: url.to_owned(),
                source: error,
            }
        }
    }
}

/// How a streamed body is bounded: the silence allowed between two pieces, and its size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamLimits {
    pub(crate) provider: &'static str,
    pub(crate) idle: Duration,
    pub(crate) max_bytes: usize,
}

/// The longest wait a `Retry-After` header is read as; anything longer (`1e20`, `inf`) is
/// this, and so above any sensible [`ClientOptions::max_retry_after`], which fails the call.
const RETRY_AFTER_CEILING: Duration = Duration::from_secs(24 * 60 * 60);

/// The wait a response asks for: `retry-after-ms` (OpenAI), else `Retry-After` in seconds.
/// Values of any size are clamped to [`RETRY_AFTER_CEILING`]; negative or unreadable ones
/// are ignored.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name: &str| {
        let value = headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()?;
        (value >= 0.0).then_some(value)
    };
    let clamp = |secs: f64| {
        Duration::try_from_secs_f64(secs)
            .map_or(RETRY_AFTER_CEILING, |d| d.min(RETRY_AFTER_CEILING))
    };
    if let Some(ms) = read("retry-after-ms") {
        return Some(clamp(ms / 1000.0));
    }
    read("retry-after").map(clamp)
}

/// The human-readable message of an error body in any of the providers' shapes:
/// `{"error": {"message": …}}` (OpenAI, Anthropic), `{"error": "…"}` (Ollama), or the text.
fn error_message(body: &str) -> String {
    let Ok(value) = serde_json::from_str::<Value>(body) else {
        return if body.trim().is_empty() {
            "(empty body)".into()
        } else {
            shorten(body.trim())
        };
    };
    let error = value.get("error").unwrap_or(&value);
    error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map_or_else(|| shorten(body), str::to_owned)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        let mut headers = HeaderMap::new();
        assert_eq!(retry_after(&headers), None);
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
    }

    #[test]
    fn retry_after_of_any_size_is_clamped_instead_of_panicking() {
        for huge in ["1e20", "1e308", "inf", "18446744073709551616"] {
            let mut headers = HeaderMap::new();
            headers.insert("retry-after", HeaderValue::from_static(huge));
            assert_eq!(retry_after(&headers), Some(RETRY_AFTER_CEILING), "{huge}");
            let mut headers = HeaderMap::new();
            headers.insert("retry-after-ms", HeaderValue::from_static(huge));
            assert_eq!(retry_after(&headers), Some(RETRY_AFTER_CEILING), "{huge}");
        }
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("-5"));
        headers.insert("retry-after-ms", HeaderValue::from_static("NaN"));
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn error_message_understands_each_provider_shape() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"auth"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(r#"{"type":"error","error":{"type":"x","message":"overloaded"}}"#),
            "overloaded"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("gateway down"), "gateway down");
        assert_eq!(error_message(""), "(empty body)");
    }
}
