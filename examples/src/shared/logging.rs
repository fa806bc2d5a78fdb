//! Logging for the bundled binaries: `RUST_LOG` picks what is logged to stderr (nothing by
//! default), and, when built with the `otel` feature and `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, the spans are also exported over OTLP/HTTP
//! (those at `info` and above unless `RUST_LOG` says otherwise).

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Keeps the OpenTelemetry exporter (if any) alive; dropping it flushes the queued spans.
#[derive(Debug)]
#[must_use = "dropping the guard stops the span export"]
pub struct Logging {
    /// Held for its `Drop` (the flush), never read.
    #[cfg(feature = "otel")]
    _otel: Option<graphkit::otel::OtelGuard>,
}

/// Installs the global subscriber for a binary called `service`.
///
/// Errors setting up the exporter are reported on stderr and leave plain logging in place:
/// a broken collector address must not stop a research run.
pub fn init(service: &str) -> Logging {
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(EnvFilter::from_default_env());
    let registry = tracing_subscriber::registry().with(fmt);
    #[cfg(feature = "otel")]
    {
        let otel = graphkit::otel::OtelExporter::from_env(service).and_then(|exporter| {
            exporter
                .install()
                .inspect_err(|err| eprintln!("warning: spans are not exported: {err}"))
                .ok()
        });
        if let Some(guard) = &otel {
            // Exported spans follow RUST_LOG when it is set, else everything at info and above
            // (run, step, node, tool, llm.call), while stderr stays quiet by default.
            let filter =
                EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
            registry.with(guard.layer().with_filter(filter)).init();
        } else {
            registry.init();
        }
        Logging { _otel: otel }
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = service;
        registry.init();
        Logging {}
    }
}
