//! `graphkit-server`: serves the demo graph `agent` over the LangGraph Platform API. The
//! flags are [`graphkit_server::cli::Args`]; a program that serves graphs of its own calls
//! [`graphkit_server::cli::run`] with its [`Server`] (the research workflows of
//! `graphkit-examples` are served that way by its `graphkit-research-server`).

use std::process::ExitCode;

use clap::Parser;
use graphkit_server::{Server, cli, demo, malloc};

fn main() -> ExitCode {
    // Before any thread: freed memory goes back to the system (see `malloc`).
    malloc::reexec_with_malloc_tunables();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("graphkit-server: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve())
}

async fn serve() -> ExitCode {
    cli::init_logging("info");
    let args = cli::Args::parse();
    let served = match demo::agent_graph() {
        Ok(graph) => cli::run(args, Server::new().graph("agent", graph))
            .await
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // The message, not the error's Debug form (`Storage(Backend { .. })`).
            eprintln!("graphkit-server: {message}");
            ExitCode::FAILURE
        }
    }
}
