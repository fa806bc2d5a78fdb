//! The bundled example workflows of `graphkit-examples`, registered on a [`Server`] with
//! their offline stand-in models and local data (feature `workflows`, on by default; the
//! `graphkit-server` binary serves them next to the demo graph `agent`).
//!
//! | graph id | workflow | input |
//! |---|---|---|
//! | [`ARXIV_RESEARCH`] | arxiv-research over the offline arXiv corpus | `{"topic": "..."}` |
//! | [`MCP_RESEARCH`] | mcp-research over the bundled events MCP server | `{"input": "...", "max_iterations": 2}` |
//! | [`DUE_DILIGENCE`] | due-diligence over the local corpus `examples/corpora/due-diligence` | `{"subject": "...", "max_depth": 2, "max_queries_per_depth": 3, "stagnation_threshold": 2}` |
//! | [`BIOGRAPHY_EVENTS`] | biography-events over the local corpus `examples/corpora/biography` | `{"person_to_research": "Odile Marchetti"}` |
//!
//! All run offline: the models are the workflows' deterministic stand-ins (the same the
//! `graphkit-research` CLI uses by default) and the data sources are served from
//! 127.0.0.1 by this process (the arXiv corpus of `examples/fixtures/arxiv` over arXiv's
//! Atom API; the events dataset over MCP streamable HTTP). due-diligence writes its audit
//! trail and report files under `files_dir/due_diligence/`. Keep the returned
//! [`BundledWorkflows`] alive as long as the server runs: dropping it stops those
//! local services.
//!
//! ```no_run
//! use graphkit_server::{Server, demo, workflows};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let files = std::path::Path::new("graphkit-server-workflows");
//! let (server, services) =
//!     workflows::register(Server::new().graph("agent", demo::agent_graph()?), files).await?;
//! server.serve("127.0.0.1:2024").await?;
//! drop(services);
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::Arc;

use graphkit::CompileOptions;
use graphkit_examples::arxiv_research::{self, GraphDeps, NodeDeps, OfflineArxiv};
use graphkit_examples::biography_events::{self, Sites};
use graphkit_examples::due_diligence::{self, AuditTrail};
use graphkit_examples::mcp_research::{
    self, ResearchDeps, SubAgentRegistry, events_server, events_server::EventsHttpServer,
};
use graphkit_llm::ChatModel;

use crate::error::Result;
use crate::{Server, ServerError};

/// The graph id of the arxiv-research workflow.
pub const ARXIV_RESEARCH: &str = "arxiv_research";
/// The graph id of the mcp-research workflow.
pub const MCP_RESEARCH: &str = "mcp_research";
/// The graph id of the due-diligence workflow.
pub const DUE_DILIGENCE: &str = "due_diligence";
/// The graph id of the biography-events workflow.
pub const BIOGRAPHY_EVENTS: &str = "biography_events";
/// Every graph id [`register`] adds.
pub const GRAPH_IDS: [&str; 4] = [
    ARXIV_RESEARCH,
    MCP_RESEARCH,
    DUE_DILIGENCE,
    BIOGRAPHY_EVENTS,
];

/// The plan steps the arxiv-research planner keeps (the CLI's default).
const ARXIV_MAX_STEPS: usize = 6;

/// The local services the registered workflows read from (the offline arXiv corpus and
/// the events MCP server). Dropping it stops them; runs of the workflows then fail.
pub struct BundledWorkflows {
    arxiv: arxiv_research::OfflineArxivServer,
    events: EventsHttpServer,
}

impl std::fmt::Debug for BundledWorkflows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundledWorkflows")
            .field("arxiv", &self.arxiv.addr())
            .field("events", &self.events.url())
            .finish()
    }
}

impl BundledWorkflows {
    /// Stops the local services, waiting for the events server to close its sessions.
    pub async fn shutdown(self) {
        let Self { arxiv, events } = self;
        drop(arxiv);
        if let Err(err) = events.shutdown().await {
            tracing::warn!("the events MCP server did not stop cleanly: {err}");
        }
    }
}

/// Registers the bundled workflows ([`GRAPH_IDS`]) on `server`, starting the local
/// services they read from on 127.0.0.1 (free ports). Workflows that write files write
/// them under `files_dir` (created by the first run that writes). The graphs are compiled
/// without a checkpointer: the server runs them on its backend's.
///
/// # Errors
/// [`ServerError::Startup`] when a local corpus cannot be read, a local service cannot
/// bind, or a graph does not build.
pub async fn register(server: Server, files_dir: &Path) -> Result<(Server, BundledWorkflows)> {
    let startup = |what: &str, err: &dyn std::fmt::Display| {
        ServerError::Startup(format!("the bundled workflow {what}: {err}"))
    };

    let corpus = OfflineArxiv::shipped().map_err(|e| startup("arxiv_research", &e))?;
    let arxiv = corpus
        .serve()
        .await
        .map_err(|e| startup("arxiv_research", &e))?;
    let offline: Arc<dyn ChatModel> = Arc::new(arxiv_research::offline_model(3));
    let deps = GraphDeps {
        supervisor: Arc::clone(&offline),
        worker: Arc::clone(&offline),
        nodes: NodeDeps {
            planner: Arc::clone(&offline),
            expander: Arc::clone(&offline),
            synthesizer: offline,
            arxiv: arxiv.client(),
            max_steps: ARXIV_MAX_STEPS,
        },
        worker_max_iterations: 8,
    };
    let arxiv_graph = arxiv_research::build_graph(&deps, CompileOptions::new())
        .map_err(|e| startup("arxiv_research", &e))?;

    let events = events_server::spawn_http("127.0.0.1:0")
        .await
        .map_err(|e| startup("mcp_research (events MCP server)", &e))?;
    let source =
        mcp_research::connect(&[mcp_research::McpServerSpec::Http(events.url().to_owned())])
            .await
            .map_err(|e| startup("mcp_research (events MCP server)", &e))?;
    let mcp_deps = ResearchDeps {
        model: Arc::new(mcp_research::offline_model()),
        source,
        registry: SubAgentRegistry::standard(),
        max_parallel_sub_agents: 4,
        confidence_threshold: 0.8,
    };
    let mcp_graph = mcp_research::build_graph(Arc::new(mcp_deps), CompileOptions::new())
        .map_err(|e| startup("mcp_research", &e))?;

    let dd_dir = files_dir.join(DUE_DILIGENCE);
    let dd_model: Arc<dyn ChatModel> = Arc::new(due_diligence::offline_model());
    let dd_deps = due_diligence::Deps {
        strategy_model: Arc::clone(&dd_model),
        search_model: dd_model,
        search: graphkit_examples::shared::search::corpus(&due_diligence::corpus_dir())
            .map_err(|e| startup("due_diligence", &e))?,
        results_per_search: 3,
        audit: AuditTrail::new(dd_dir.join("audit")),
        prices: due_diligence::default_prices(),
        reports_dir: dd_dir.join("reports"),
    };
    let dd_graph = due_diligence::build_graph(Arc::new(dd_deps), CompileOptions::new())
        .map_err(|e| startup("due_diligence", &e))?;

    let bio_deps = biography_events::Deps {
        model: biography_events::offline::offline_model(std::time::Duration::ZERO),
        search: graphkit_examples::shared::search::corpus(&biography_events::default_corpus_dir())
            .map_err(|e| startup("biography_events", &e))?,
        sites: Sites::offline(),
    };
    let bio_graph = biography_events::build_graph(&bio_deps, CompileOptions::new())
        .map_err(|e| startup("biography_events", &e))?;

    let server = server
        .graph_without_schema(ARXIV_RESEARCH, arxiv_graph)
        .graph_without_schema(MCP_RESEARCH, mcp_graph)
        .graph_without_schema(DUE_DILIGENCE, dd_graph)
        .graph_without_schema(BIOGRAPHY_EVENTS, bio_graph);
    Ok((server, BundledWorkflows { arxiv, events }))
}
