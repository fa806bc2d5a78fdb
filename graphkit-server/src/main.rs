//! `graphkit-server`: serves the demo graph `agent` and (feature `workflows`, on by
//! default) the bundled example workflows `arxiv_research` and `mcp_research` over the
//! LangGraph Platform API. The flags are [`graphkit_server::cli::Args`].

use clap::Parser;
use graphkit_server::{Server, cli, demo};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging("info");
    let args = cli::Args::parse();
    let server = Server::new().graph("agent", demo::agent_graph()?);
    #[cfg(feature = "workflows")]
    {
        let (server, services) = graphkit_server::workflows::register(server).await?;
        cli::run(args, server).await?;
        services.shutdown().await;
    }
    #[cfg(not(feature = "workflows"))]
    cli::run(args, server).await?;
    Ok(())
}
