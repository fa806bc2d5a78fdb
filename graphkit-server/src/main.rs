//! `graphkit-server`: serves the demo graph `agent` and (feature `workflows`, on by
//! default) the bundled example workflows `arxiv_research`, `mcp_research` and
//! `due_diligence` over the LangGraph Platform API. The flags are
//! [`graphkit_server::cli::Args`] plus `--workflows-dir`.

use clap::Parser;
use graphkit_server::{Server, cli, demo};

/// The server's flags and, with the bundled workflows, where they write their files.
#[derive(Debug, Parser)]
#[command(
    name = "graphkit-server",
    version,
    about = "Serve graphkit graphs over the LangGraph Platform API (langgraph-sdk 0.4.x, @langchain/langgraph-sdk 2.0.x, stream protocol v1): the demo graph `agent` and the bundled example workflows."
)]
struct Flags {
    #[command(flatten)]
    server: cli::Args,
    /// Where the bundled workflows write their files (due_diligence's audit trail and
    /// reports go to DIR/due_diligence/).
    #[cfg(feature = "workflows")]
    #[arg(long, value_name = "DIR", default_value = "graphkit-server-workflows")]
    workflows_dir: std::path::PathBuf,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging("info");
    let flags = Flags::parse();
    let server = Server::new().graph("agent", demo::agent_graph()?);
    #[cfg(feature = "workflows")]
    {
        let (server, services) =
            graphkit_server::workflows::register(server, &flags.workflows_dir).await?;
        cli::run(flags.server, server).await?;
        services.shutdown().await;
    }
    #[cfg(not(feature = "workflows"))]
    cli::run(flags.server, server).await?;
    Ok(())
}
