//! `graphkit-server`: serves the demo graph `agent` over the LangGraph Platform API. The
//! flags are [`graphkit_server::cli::Args`]; a program that serves graphs of its own calls
//! [`graphkit_server::cli::run`] with its [`Server`] (the research workflows of
//! `graphkit-examples` are served that way by its `graphkit-research-server`).

use clap::Parser;
use graphkit_server::{Server, cli, demo};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging("info");
    let args = cli::Args::parse();
    cli::run(args, Server::new().graph("agent", demo::agent_graph()?)).await?;
    Ok(())
}
