//! The tracing of every model call: the `llm.call` span it runs in, and the record of its
//! tokens and latency (or its error) when it ends.

use std::time::Instant;

use tracing::Span;

use crate::error::LlmError;
use crate::message::Usage;

/// The span every call runs in: `llm.call` with the model, and the tokens and latency
/// recorded when it ends.
pub(crate) fn call_span(model: &str, streamed: bool) -> Span {
    tracing::info_span!(
        "llm.call",
        model = model,
        streamed = streamed,
        input_tokens = tracing::field::Empty,
        output_tokens = tracing::field::Empty,
        latency_ms = tracing::field::Empty,
    )
}

/// Records a finished call on its span and as an event.
pub(crate) fn record_call(
    span: &Span,
    model: &str,
    outcome: std::result::Result<Option<Usage>, &LlmError>,
    started: Instant,
) {
    let latency_ms = started.elapsed().as_millis() as u64;
    span.record("latency_ms", latency_ms);
    match outcome {
        Ok(usage) => {
            let usage = usage.unwrap_or_default();
            span.record("input_tokens", usage.input_tokens);
            span.record("output_tokens", usage.output_tokens);
            tracing::info!(
                parent: span,
                model,
                input_tokens = usage.input_tokens,
                output_tokens = usage.output_tokens,
                latency_ms,
                "llm call finished"
            );
        }
        Err(error) => {
            tracing::warn!(parent: span, model, latency_ms, %error, "llm call failed");
        }
    }
}
