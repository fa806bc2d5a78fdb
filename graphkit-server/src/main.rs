//! `graphkit-server`: serves the demo graph `agent` over the LangGraph Platform API.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Parser;
use graphkit_server::backend::{Backend, SqliteBackend};
use graphkit_server::{Server, ServerError, demo};

/// Serve graphkit graphs over the LangGraph Platform API (langgraph-sdk 0.4.x,
/// @langchain/langgraph-sdk 2.0.x, stream protocol v1).
#[derive(Debug, Parser)]
#[command(name = "graphkit-server", version)]
struct Args {
    /// Address to listen on (loopback unless told otherwise).
    #[arg(long, default_value = "127.0.0.1:2024")]
    listen: String,
    /// Storage: an SQLite file path, or a postgres:// URL (several processes may share one).
    #[arg(long, default_value = "graphkit-server.db")]
    database: String,
    /// Require this key in the `x-api-key` header of every request (else 401).
    #[arg(long, env = "GRAPHKIT_SERVER_API_KEY")]
    api_key: Option<String>,
    /// Runs this process executes at once (0: serve HTTP only).
    #[arg(long, default_value_t = 10)]
    workers: usize,
    /// Only execute runs; serve no HTTP.
    #[arg(long)]
    workers_only: bool,
}

async fn open_backend(database: &str) -> Result<Arc<dyn Backend>, ServerError> {
    if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        return open_postgres(database).await;
    }
    Ok(Arc::new(
        SqliteBackend::open(PathBuf::from(database)).await?,
    ))
}

/// The PostgreSQL backend lives in `backend::postgres` (feature `postgres`); until it is
/// wired in here, a postgres:// URL is refused with a clear message.
async fn open_postgres(_url: &str) -> Result<Arc<dyn Backend>, ServerError> {
    Err(ServerError::Startup(
        "this build cannot open a postgres:// database yet; use an SQLite file path".into(),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();
    let backend = open_backend(&args.database).await?;
    let mut server = Server::new()
        .graph("agent", demo::agent_graph()?)
        .backend(backend)
        .workers(args.workers)
        .workers_only(args.workers_only);
    if let Some(key) = args.api_key {
        server = server.api_key(key);
    }
    server.serve(args.listen.as_str()).await?;
    Ok(())
}
