//! Providers: thin adapters from [`ChatRequest`](crate::ChatRequest) to each wire protocol
//! and back. They share the transport (reliability) and the stream framing here.

pub mod anthropic;
#[cfg(test)]
mod fuzz;
pub mod ollama;
pub mod openai;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::stream::{BoxStream, StreamExt};

use crate::chunk::ChatChunk;
use crate::error::{LlmError, Result, shorten};
use crate::transport::{Admitted, StreamLimits};

/// How a streamed body is cut into payloads.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Framing {
    /// Server-sent events: each event's `data`.
    Sse,
    /// Newline-delimited JSON: each non-empty line.
    Lines,
}

/// What one payload of a stream means.
pub(crate) enum Step {
    /// A piece of the reply.
    Chunk(ChatChunk),
    /// Nothing to report (pings, bookkeeping events).
    Skip,
    /// The provider's end-of-stream marker, possibly with a last piece.
    Done(Option<ChatChunk>),
}

/// The payloads of a streamed response body.
fn payloads(
    admitted: Admitted,
    provider: &'static str,
    framing: Framing,
) -> BoxStream<'static, Result<String>> {
    let Admitted {
        response,
        slot,
        limits,
    } = admitted;
    let bytes = bounded(response.bytes_stream().boxed(), limits);
    let stream = match framing {
        Framing::Sse => bytes
            .eventsource()
            .map(move |event| {
                event.map(|e| e.data).map_err(|e| match e {
                    EventStreamError::Transport(e) => e,
                    other => LlmError::MalformedResponse {
                        provider,
                        detail: format!("the event stream is not valid: {other}"),
                        raw: String::new(),
                    },
                })
            })
            .boxed(),
        Framing::Lines => {
            let lines = futures::stream::unfold(
                (bytes, Vec::<u8>::new(), false),
                move |(mut bytes, mut buffer, ended)| async move {
                    loop {
                        if let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                            let line: Vec<u8> = buffer.drain(..=end).collect();
                            return Some((Ok(line), (bytes, buffer, ended)));
                        }
                        if ended {
                            if buffer.is_empty() {
                                return None;
                            }
                            let rest = std::mem::take(&mut buffer);
                            return Some((Ok(rest), (bytes, buffer, true)));
                        }
                        match bytes.next().await {
                            Some(Ok(piece)) => buffer.extend_from_slice(&piece),
                            Some(Err(e)) => return Some((Err(e), (bytes, buffer, true))),
                            None => {
                                return (!buffer.is_empty()).then(|| {
                                    (Ok(std::mem::take(&mut buffer)), (bytes, Vec::new(), true))
                                });
                            }
                        }
                    }
                },
            );
            lines
                .filter_map(move |line| async move {
                    match line {
                        Ok(line) => {
                            let text = String::from_utf8_lossy(&line).trim().to_owned();
                            (!text.is_empty()).then_some(Ok(text))
                        }
                        Err(e) => Some(Err(e)),
                    }
                })
                .boxed()
        }
    };
    // The concurrency slot lives as long as the body is being read.
    stream
        .map(move |item| {
            let _slot = &slot;
            item
        })
        .boxed()
}

/// The body's pieces, failing with [`LlmError::StreamStalled`] when no piece comes within
/// the idle timeout and with [`LlmError::ResponseTooLarge`] past the size limit. The first
/// error ends the stream.
fn bounded<B: AsRef<[u8]> + Send + 'static>(
    bytes: BoxStream<'static, reqwest::Result<B>>,
    limits: StreamLimits,
) -> BoxStream<'static, Result<B>> {
    let StreamLimits {
        provider,
        idle,
        max_bytes,
    } = limits;
    let stalled = move || LlmError::StreamStalled { provider, idle };
    futures::stream::unfold(Some((bytes, 0usize)), move |state| async move {
        let (mut bytes, total) = state?;
        let item = match tokio::time::timeout(idle, bytes.next()).await {
            Err(_) => Err(stalled()),
            Ok(None) => return None,
            Ok(Some(Err(e))) if e.is_timeout() => Err(stalled()),
            Ok(Some(Err(e))) => Err(LlmError::MalformedResponse {
                provider,
                detail: format!("the stream broke: {e}"),
                raw: String::new(),
            }),
            Ok(Some(Ok(piece))) if total + piece.as_ref().len() > max_bytes => {
                Err(LlmError::ResponseTooLarge {
                    provider,
                    limit: max_bytes,
                })
            }
            Ok(Some(Ok(piece))) => {
                let total = total + piece.as_ref().len();
                return Some((Ok(piece), Some((bytes, total))));
            }
        };
        Some((item, None))
    })
    .boxed()
}

/// Turns a streamed response into chunks with `parse`, failing with
/// [`LlmError::StreamTruncated`] if the body ends before `parse` reported the end marker.
pub(crate) fn chunk_stream(
    admitted: Admitted,
    provider: &'static str,
    framing: Framing,
    end_marker: &'static str,
    parse: impl FnMut(&str) -> Result<Step> + Send + 'static,
) -> BoxStream<'static, Result<ChatChunk>> {
    let payloads = payloads(admitted, provider, framing);
    futures::stream::unfold(Some((payloads, parse)), move |state| async move {
        let (mut payloads, mut parse) = state?;
        loop {
            let Some(payload) = payloads.next().await else {
                return Some((
                    Err(LlmError::StreamTruncated {
                        provider,
                        expected: end_marker,
                    }),
                    None,
                ));
            };
            let step = payload.and_then(|p| parse(&p));
            match step {
                Ok(Step::Chunk(chunk)) => return Some((Ok(chunk), Some((payloads, parse)))),
                Ok(Step::Skip) => continue,
                Ok(Step::Done(Some(chunk))) => return Some((Ok(chunk), None)),
                Ok(Step::Done(None)) => return None,
                Err(e) => return Some((Err(e), None)),
            }
        }
    })
    .boxed()
}

/// A JSON payload of a stream, or a clear error naming the provider.
pub(crate) fn parse_payload(provider: &'static str, payload: &str) -> Result<serde_json::Value> {
    serde_json::from_str(payload).map_err(|e| LlmError::MalformedResponse {
        provider,
        detail: format!("a streamed piece is not JSON ({e})"),
        raw: shorten(payload),
    })
}

/// The string at `key` in a JSON object.
pub(crate) fn string_of(value: &serde_json::Value, key: &str) -> Option<String> {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

/// An error the server reported inside a stream that had started with a success status.
pub(crate) fn stream_error(provider: &'static str, message: &str) -> LlmError {
    LlmError::Http {
        provider,
        status: 200,
        message: format!("error inside the stream: {message}"),
        retry_after: None,
    }
}

/// An environment variable, treating empty as unset.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// `url` without trailing slashes.
pub(crate) fn trim_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_owned()
}
