//! `graphkit-research-server`: `graphkit-server` (same flags, same demo graph `agent`)
//! serving the research workflows of this crate on their offline stand-in models and
//! local data (see [`graphkit_examples::served`]), plus `--workflows-dir`. Needs the
//! feature `server`:
//!
//! ```text
//! cargo run -p graphkit-examples --features server --bin graphkit-research-server -- --listen 127.0.0.1:2024
//! ```

use clap::Parser;
use graphkit_examples::served;
use graphkit_server::{Server, cli, demo, malloc};

/// The server's flags and where the workflows write their files.
#[derive(Debug, Parser)]
#[command(
    name = "graphkit-research-server",
    version,
    about = "Serve the graphkit research workflows over the LangGraph Platform API (langgraph-sdk 0.4.x, @langchain/langgraph-sdk 2.0.x, stream protocol v1), next to the demo graph `agent`."
)]
struct Flags {
    #[command(flatten)]
    server: cli::Args,
    /// Where the workflows write their files (due_diligence's audit trail and reports go
    /// to DIR/due_diligence/, entity_intel's outputs to DIR/entity_intel/THREAD/).
    #[arg(long, value_name = "DIR", default_value = "graphkit-server-workflows")]
    workflows_dir: std::path::PathBuf,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Before any thread: freed memory goes back to the system, as graphkit-server's own
    // binary does (see `graphkit_server::malloc`).
    malloc::reexec_with_malloc_tunables();
    tokio::runtime::Runtime::new()?.block_on(serve())
}

async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    cli::init_logging("info");
    let flags = Flags::parse();
    let server = Server::new().graph("agent", demo::agent_graph()?);
    let (server, services) = served::register(server, &flags.workflows_dir).await?;
    cli::run(flags.server, server).await?;
    services.shutdown().await;
    Ok(())
}
