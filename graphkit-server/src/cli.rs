//! The command line of the `graphkit-server` binary, as a library: a host binary that serves
//! its own graphs gets the same flags by calling [`run`] with its [`Server`].
//!
//! ```no_run
//! use clap::Parser;
//! use graphkit_server::{Server, cli, demo};
//!
//! # async fn main_() -> Result<(), Box<dyn std::error::Error>> {
//! let args = cli::Args::parse();
//! cli::run(args, Server::new().graph("agent", demo::agent_graph()?)).await?;
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use crate::backend::{Backend, SqliteBackend};
use crate::error::{Result, without_source_position};
use crate::{Server, ServerError, WorkerSettings};

/// Serve graphkit graphs over the LangGraph Platform API (langgraph-sdk 0.4.x,
/// @langchain/langgraph-sdk 2.0.x, stream protocol v1).
#[derive(Debug, Clone, Parser)]
#[command(name = "graphkit-server", version)]
pub struct Args {
    /// Address to listen on (loopback unless told otherwise; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:2024")]
    pub listen: String,
    /// Storage: an SQLite file path, or a postgres:// URL (several processes may share one).
    #[arg(long, default_value = "graphkit-server.db")]
    pub database: String,
    /// PostgreSQL only: the schema holding the server's tables (created if missing).
    /// Processes that should share threads and runs use the same schema.
    #[arg(
        long,
        env = "GRAPHKIT_SERVER_SCHEMA",
        default_value = "graphkit_server"
    )]
    pub database_schema: String,
    /// Require this key in the `x-api-key` header of every request (else 401).
    #[arg(long, env = "GRAPHKIT_SERVER_API_KEY")]
    pub api_key: Option<String>,
    /// Let browser pages on this origin call the server (CORS), e.g. http://localhost:5173;
    /// repeat it for more, or give `*` for any. Without it, no cross-origin page may.
    #[arg(
        long = "cors-origin",
        value_name = "ORIGIN",
        env = "GRAPHKIT_SERVER_CORS_ORIGINS",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// Seconds a request's whole body may take to arrive after its headers; a body still
    /// incomplete then gets 408 and its connection is closed.
    #[arg(long, default_value_t = crate::DEFAULT_BODY_READ_TIMEOUT.as_secs_f64())]
    pub body_read_timeout_secs: f64,
    /// Runs this process executes at once (0: serve HTTP only).
    #[arg(long, default_value_t = 10)]
    pub workers: usize,
    /// Only execute runs; serve no HTTP.
    #[arg(long)]
    pub workers_only: bool,
    /// Seconds a worker's claim on a run holds without a heartbeat. A process that dies
    /// loses its runs to another process after at most this plus the sweep interval
    /// (heartbeats every third of it, sweeps every half).
    #[arg(long, default_value_t = 30.0)]
    pub lease_secs: f64,
    /// Claims per run before a run whose workers keep dying fails for good.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: u32,
    /// Let run webhooks reach loopback, private and other non-public addresses (tests,
    /// intranets). Off: such a `webhook` is refused with a 422.
    #[arg(long)]
    pub webhook_allow_private: bool,
}

impl Args {
    /// The worker settings these flags ask for.
    ///
    /// # Errors
    /// [`ServerError::Startup`] for a lease that is not a positive number of seconds.
    pub fn worker_settings(&self) -> Result<WorkerSettings> {
        let lease = positive_seconds("--lease-secs", self.lease_secs)?;
        if self.max_attempts == 0 {
            return Err(ServerError::Startup(
                "--max-attempts must be at least 1".into(),
            ));
        }
        Ok(WorkerSettings {
            lease,
            heartbeat: lease / 3,
            sweep_every: lease / 2,
            max_attempts: self.max_attempts,
            webhooks: crate::WebhookSettings {
                allow_private: self.webhook_allow_private,
                ..crate::WebhookSettings::default()
            },
            ..WorkerSettings::default()
        })
    }

    /// The body read timeout `--body-read-timeout-secs` asks for.
    ///
    /// # Errors
    /// [`ServerError::Startup`] for a timeout that is not a positive number of seconds.
    pub fn body_read_timeout(&self) -> Result<Duration> {
        positive_seconds("--body-read-timeout-secs", self.body_read_timeout_secs)
    }

    /// Opens the storage `--database` names.
    ///
    /// # Errors
    /// [`ServerError::Startup`] if it cannot be opened (or PostgreSQL support is not built).
    pub async fn open_backend(&self) -> Result<Arc<dyn Backend>> {
        let database = self.database.as_str();
        if database.starts_with("postgres://") || database.starts_with("postgresql://") {
            return self.open_postgres().await;
        }
        Ok(Arc::new(
            SqliteBackend::open(PathBuf::from(database)).await?,
        ))
    }

    #[cfg(feature = "postgres")]
    async fn open_postgres(&self) -> Result<Arc<dyn Backend>> {
        use crate::backend::postgres::{PostgresBackend, PostgresOptions};
        let options = PostgresOptions::default()
            .schema(self.database_schema.clone())
            .stalled_transaction_timeout(self.worker_settings()?.lease);
        Ok(Arc::new(
            PostgresBackend::connect_with(&self.database, options).await?,
        ))
    }

    #[cfg(not(feature = "postgres"))]
    async fn open_postgres(&self) -> Result<Arc<dyn Backend>> {
        Err(ServerError::Startup(
            "this build has no PostgreSQL support: rebuild with `--features postgres`".into(),
        ))
    }
}

/// `seconds` given to `flag` as a duration, or a startup error unless it is positive.
fn positive_seconds(flag: &str, seconds: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            ServerError::Startup(format!(
                "{flag} {seconds} is not a positive number of seconds"
            ))
        })
}

/// `error` as a [`ServerError::Startup`], its text without a database's C source position.
fn startup_error(error: ServerError) -> ServerError {
    match error {
        ServerError::Startup(text) => ServerError::Startup(without_source_position(&text)),
        other => ServerError::Startup(without_source_position(&other.to_string())),
    }
}

/// Installs the stderr logger of a server binary: `RUST_LOG` when set, else `default`
/// (for example `"info"`).
pub fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .init();
}

/// Serves `server` (its graphs registered) as `args` say, until Ctrl-C or SIGTERM; then
/// stops gracefully (runs in progress go back to the queue).
///
/// Prints `listening on http://ADDR` to stdout once the address is bound (the actual port
/// when `--listen` asked for port 0), for scripts and tests that start the binary.
///
/// # Errors
/// [`ServerError::Startup`] if the storage cannot be opened or the address bound.
pub async fn run(args: Args, server: Server) -> Result<()> {
    let backend = args.open_backend().await.map_err(startup_error)?;
    let mut server = server
        .backend(backend)
        .workers(args.workers)
        .cors_origins(args.cors_origins.clone())
        .workers_only(args.workers_only)
        .body_read_timeout(args.body_read_timeout()?)
        .worker_settings(args.worker_settings()?);
    if let Some(key) = args.api_key {
        server = server.api_key(key);
    }
    let running = server.start(args.listen.as_str()).await?;
    match running.local_addr() {
        Some(addr) => println!("listening on http://{addr}"),
        None => println!("workers only, no HTTP"),
    }
    crate::server::shutdown_signal().await;
    tracing::info!("stopping: runs in progress go back to the queue");
    running.shutdown().await;
    Ok(())
}
