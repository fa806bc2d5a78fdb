//! Connecting to PostgreSQL, and the advisory lock keys every process must agree on.

use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use super::backend_error;
use crate::error::StorageError;

/// A 64-bit advisory lock key for `name` (FNV-1a): stable across processes, builds and
/// graphkit versions, which every process sharing the database must agree on.
pub(crate) fn advisory_key(name: &str) -> i64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// A pool on the database at `url`. One direct connection is tried first, so that a refused
/// connection or an unknown host is reported with its cause within `timeout`.
pub(crate) async fn connect_pool(
    url: &str,
    backend: &'static str,
    timeout: Duration,
) -> Result<PgPool, StorageError> {
    let options = connect_options(url, backend)?;
    // One direct attempt first: the pool retries a refused connection until its
    // acquire timeout and then says only "timed out"; this reports the cause at once.
    let host = options.get_host();
    let where_to = if host.contains(':') {
        format!("[{host}]:{}", options.get_port())
    } else {
        format!("{host}:{}", options.get_port())
    };
    match tokio::time::timeout(timeout, PgConnection::connect_with(&options)).await {
        Err(_) => {
            return Err(StorageError::backend(
                backend,
                format!(
                    "cannot connect to {where_to}: no answer within {timeout:?}; check the host and port, or raise the connect timeout"
                ),
            ));
        }
        Ok(Err(e)) => {
            return Err(backend_error(
                backend,
                &format!("cannot connect to {where_to}"),
                e,
            ));
        }
        Ok(Ok(connection)) => close(connection).await,
    }
    PgPoolOptions::new()
        .max_connections(8)
        .acquire_timeout(timeout.max(Duration::from_secs(1)))
        .connect_with(options)
        .await
        .map_err(|e| backend_error(backend, &format!("cannot connect to {where_to}"), e))
}

/// The connect options of `url`; an IPv6 literal host (`[::1]`) loses its brackets, which
/// the URL keeps but a socket address must not have.
fn connect_options(url: &str, backend: &'static str) -> Result<PgConnectOptions, StorageError> {
    let options = PgConnectOptions::from_str(url).map_err(|e| {
        StorageError::backend(
            backend,
            format!(
                "invalid PostgreSQL URL: {e}; expected postgres://user[:password]@host[:port]/database"
            ),
        )
    })?;
    let host = options.get_host().to_owned();
    Ok(
        match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(literal) => options.host(literal),
            None => options,
        },
    )
}

/// Closes a connection taken out of a pool (a thread lock's, or the first attempt's).
pub(crate) async fn close(connection: PgConnection) {
    if let Err(e) = connection.close().await {
        tracing::debug!(error = %e, "closing a thread-lock connection failed");
    }
}
