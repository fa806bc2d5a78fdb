//! OpenTelemetry export of graphkit's tracing spans (feature `otel`).
//!
//! graphkit describes a run with `tracing` spans (`run`, `step`, `node`, `checkpoint_save`,
//! and `tool` / `llm.call` in the other crates; see `docs/observability.md`). This module turns
//! them into OpenTelemetry spans and sends them to a collector over OTLP/HTTP (protobuf), in
//! batches on a background thread, so a run shows up as one trace in Jaeger, Tempo, Honeycomb
//! or any other OTLP backend.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), graphkit::error::TelemetryError> {
//! // Sends to http://localhost:4318/v1/traces unless OTEL_EXPORTER_OTLP_ENDPOINT says otherwise.
//! let otel = graphkit::otel::OtelExporter::new("my-agent").install()?;
//! tracing_subscriber::registry()
//!     .with(tracing_subscriber::EnvFilter::new("info"))
//!     .with(otel.layer())
//!     .init();
//! // ... build and run graphs ...
//! otel.shutdown()?; // flushes the spans still queued
//! # Ok(()) }
//! ```
//!
//! The exporter honours the standard variables `OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_HEADERS` and
//! `OTEL_EXPORTER_OTLP_TIMEOUT`; values given to the builder win over them.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use tracing_opentelemetry::OpenTelemetryLayer;

use crate::error::TelemetryError;

/// The `tracing` layer that records spans into OpenTelemetry.
///
/// Add it to a `tracing_subscriber::registry()`; `S` is the subscriber type, inferred there.
pub type OtelLayer<S> = OpenTelemetryLayer<S, Tracer>;

/// Configures an OTLP/HTTP span exporter.
///
/// Build it with [`OtelExporter::new`], adjust it, then [`install`](OtelExporter::install) it
/// to get an [`OtelGuard`] that hands out the `tracing` layer and flushes on shutdown.
#[derive(Debug, Clone)]
pub struct OtelExporter {
    service_name: String,
    endpoint: Option<String>,
    headers: HashMap<String, String>,
    timeout: Option<Duration>,
}

impl OtelExporter {
    /// An exporter reporting as `service_name` (the `service.name` resource attribute).
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            endpoint: None,
            headers: HashMap::new(),
            timeout: None,
        }
    }

    /// An exporter configured from the environment, or `None` when neither
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` nor `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
    ///
    /// This is what binaries use to export only when asked to.
    pub fn from_env(service_name: impl Into<String>) -> Option<Self> {
        let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
        (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
            .then(|| Self::new(service_name))
    }

    /// The full URL spans are posted to, for example `http://collector:4318/v1/traces`.
    ///
    /// Without it, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, then `OTEL_EXPORTER_OTLP_ENDPOINT` plus
    /// `/v1/traces`, then `http://localhost:4318/v1/traces` is used.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// Adds a header sent with every export (an API key, for example).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// How long one export request may take before it is abandoned (default 10 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Builds the exporter and its batch processor (a background thread).
    ///
    /// Fails with [`TelemetryError`] when the endpoint or a header is invalid.
    pub fn install(self) -> Result<OtelGuard, TelemetryError> {
        // The exporter's reqwest client needs a rustls crypto provider: ring, unless the
        // application installed one (graphkit-llm's `http::install_tls_provider` does the same).
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(endpoint) = self.endpoint {
            builder = builder.with_endpoint(endpoint);
        }
        if !self.headers.is_empty() {
            builder = builder.with_headers(self.headers);
        }
        if let Some(timeout) = self.timeout {
            builder = builder.with_timeout(timeout);
        }
        let exporter = builder.build().map_err(|error| {
            TelemetryError(format!("the OTLP exporter could not be built: {error}"))
        })?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name(self.service_name)
                    .build(),
            )
            .build();
        let tracer = provider.tracer("graphkit");
        Ok(OtelGuard { provider, tracer })
    }
}

/// An installed exporter: hands out `tracing` layers and flushes the queued spans.
///
/// Dropping the guard also shuts the exporter down (flushing first); call
/// [`shutdown`](OtelGuard::shutdown) to see whether the last export succeeded.
#[derive(Debug)]
pub struct OtelGuard {
    provider: SdkTracerProvider,
    tracer: Tracer,
}

impl OtelGuard {
    /// A `tracing` layer exporting through this guard's provider.
    pub fn layer<S>(&self) -> OtelLayer<S>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer.clone())
    }

    /// Exports every span finished so far, waiting for the collector's answer.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.provider
            .force_flush()
            .map_err(|error| TelemetryError(format!("flushing spans failed: {error}")))
    }

    /// Flushes and stops the exporter.
    pub fn shutdown(self) -> Result<(), TelemetryError> {
        self.provider
            .shutdown()
            .map_err(|error| TelemetryError(format!("shutting the exporter down failed: {error}")))
    }
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        // A second shutdown (after `shutdown()`) reports "already shut down"; nothing to do.
        let _ = self.provider.shutdown();
    }
}
