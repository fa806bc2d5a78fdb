//! `graphkit-server`: serves the demo graph `agent` over the LangGraph Platform API.
//! The flags are [`graphkit_server::cli::Args`].

use clap::Parser;
use graphkit_server::{Server, cli, demo};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = cli::Args::parse();
    cli::run(args, Server::new().graph("agent", demo::agent_graph()?)).await?;
    Ok(())
}
