//! `graphkit-events-mcp`: the project's own MCP server over the synthetic events dataset
//! (tools `analyze_all_events` and `analyze_events_by_conclusion`), for the mcp-research
//! agent and any other MCP client.

use std::process::ExitCode;

use clap::Parser;
use graphkit_examples::mcp_research::events_server;

/// Serves the synthetic events dataset (2,000 fictional events) over MCP: tools
/// `analyze_all_events` and `analyze_events_by_conclusion` group, filter and sample events.
///
/// Over stdio (the default) it speaks MCP on stdin/stdout until stdin closes; configure it
/// in an MCP client as the command `graphkit-events-mcp`. With --http it serves streamable
/// HTTP at http://ADDR/mcp until Ctrl-C, and prints that URL on stdout. Logs go to stderr
/// (RUST_LOG picks what, e.g. RUST_LOG=info; off by default).
#[derive(Debug, Parser)]
#[command(name = "graphkit-events-mcp", version)]
struct Cli {
    /// Serve streamable HTTP on this address instead of stdio (port 0 picks a free port).
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
}

fn main() -> ExitCode {
    // Stderr only (on stdio, stdout is the protocol channel); RUST_LOG picks what is logged.
    let _logging = graphkit_examples::shared::logging::init("graphkit-events-mcp");
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.http {
            None => events_server::serve_stdio().await,
            Some(addr) => {
                let bound = events_server::server().bind_http(addr.as_str()).await?;
                graphkit_examples::shared::stdout::print_line(&format!(
                    "serving MCP at {}",
                    bound.url()
                ));
                tracing::info!(url = %bound.url(), "events MCP server listening");
                bound
                    .run_until(async {
                        let _ = tokio::signal::ctrl_c().await;
                    })
                    .await
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::from(1)
        }
    }
}
