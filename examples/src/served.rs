//! The workflows on a [`graphkit_server::Server`] (feature `server`; served by the
//! `graphkit-research-server` binary next to the demo graph `agent`), registered through
//! the server's public API only.
//!
//! | graph id | workflow | input |
//! |---|---|---|
//! | [`ARXIV_RESEARCH`] | arxiv-research over the offline arXiv corpus | `{"topic": "..."}` |
//! | [`MCP_RESEARCH`] | mcp-research over the bundled events MCP server | `{"input": "...", "max_iterations": 2}` |
//! | [`DUE_DILIGENCE`] | due-diligence over the local corpus `examples/corpora/due-diligence` | `{"subject": "...", "max_depth": 2, "max_queries_per_depth": 3, "stagnation_threshold": 2}` |
//! | [`BIOGRAPHY_EVENTS`] | biography-events over the local corpus `examples/corpora/biography` | `{"person_to_research": "Odile Marchetti"}` |
//! | [`ENTITY_INTEL`] | entity-intel over the offline corpus `examples/corpus`, one bundle per run | `{"research_directions": {"bundles": [...]}}` |
//!
//! All run offline: the models are the workflows' deterministic stand-ins (the same the
//! `graphkit-research` CLI uses by default) and the data sources are served from
//! 127.0.0.1 by this process (the arXiv corpus of `examples/fixtures/arxiv` over arXiv's
//! Atom API; the events dataset over MCP streamable HTTP).
//!
//! Where files go is fixed here, never taken from a client: due-diligence writes its
//! audit trail and reports under `files_dir/due_diligence/`, named `dd-<thread id>`
//! whatever its state's `session_id` or the run's config says, entity-intel writes under
//! `files_dir/entity_intel/<thread id>/` whatever its state's `output_directory` says.
//! Keep the returned [`BundledWorkflows`] alive as long as the server runs: dropping it
//! stops the local services.
//!
//! ```no_run
//! use graphkit_examples::served;
//! use graphkit_server::{Server, demo};
//!
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let files = std::path::Path::new("graphkit-server-workflows");
//! let (server, services) =
//!     served::register(Server::new().graph("agent", demo::agent_graph()?), files).await?;
//! server.serve("127.0.0.1:2024").await?;
//! services.shutdown().await;
//! # Ok(()) }
//! ```

use std::path::Path;
use std::sync::Arc;

use graphkit::CompileOptions;
use graphkit_llm::ChatModel;
use graphkit_server::{Server, ServerError};

use crate::arxiv_research::{self, GraphDeps, NodeDeps, OfflineArxiv};
use crate::biography_events::{self, Sites};
use crate::due_diligence::{self, AuditTrail};
use crate::entity_intel::{self, OutputFolder};
use crate::mcp_research::{self, ResearchDeps, SubAgentRegistry, events_server};
use crate::shared::search;

/// The graph id of the arxiv-research workflow.
pub const ARXIV_RESEARCH: &str = "arxiv_research";
/// The graph id of the mcp-research workflow.
pub const MCP_RESEARCH: &str = "mcp_research";
/// The graph id of the due-diligence workflow.
pub const DUE_DILIGENCE: &str = "due_diligence";
/// The graph id of the biography-events workflow.
pub const BIOGRAPHY_EVENTS: &str = "biography_events";
/// The graph id of the entity-intel workflow.
pub const ENTITY_INTEL: &str = "entity_intel";

/// The plan steps the arxiv-research planner keeps (the CLI's default).
const ARXIV_MAX_STEPS: usize = 6;

/// The local services the registered workflows read from (the offline arXiv corpus and
/// the events MCP server). Dropping it stops them; runs of the workflows then fail.
pub struct BundledWorkflows {
    arxiv: arxiv_research::OfflineArxivServer,
    events: events_server::EventsHttpServer,
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

/// Registers the five workflows on `server`, starting the local services they
/// read from on 127.0.0.1 (free ports). Workflows that write files write them under
/// `files_dir` (created by the first run that writes). The graphs are compiled without a
/// checkpointer: the server runs them on its backend's.
///
/// # Errors
/// [`ServerError::Startup`] when a local corpus cannot be read, a local service cannot
/// bind, or a graph does not build.
pub async fn register(
    server: Server,
    files_dir: &Path,
) -> Result<(Server, BundledWorkflows), ServerError> {
    let startup = |what: &str, err: &dyn std::fmt::Display| {
        ServerError::Startup(format!("the bundled workflow {what}: {err}"))
    };

    let corpus = OfflineArxiv::shipped().map_err(|e| startup(ARXIV_RESEARCH, &e))?;
    let arxiv = corpus
        .serve()
        .await
        .map_err(|e| startup(ARXIV_RESEARCH, &e))?;
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
        .map_err(|e| startup(ARXIV_RESEARCH, &e))?;

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
        .map_err(|e| startup(MCP_RESEARCH, &e))?;

    let dd_dir = files_dir.join(DUE_DILIGENCE);
    let dd_model: Arc<dyn ChatModel> = Arc::new(due_diligence::offline_model());
    let dd_deps = due_diligence::Deps {
        strategy_model: Arc::clone(&dd_model),
        search_model: dd_model,
        search: search::corpus(&due_diligence::corpus_dir())
            .map_err(|e| startup(DUE_DILIGENCE, &e))?,
        results_per_search: 3,
        audit: AuditTrail::new(dd_dir.join("audit")),
        prices: due_diligence::default_prices(),
        reports_dir: dd_dir.join("reports"),
        // Files named after the server's thread id: clients can write the state's
        // session id and the run's config.
        sessions: due_diligence::SessionIds::PerThread,
    };
    let dd_graph = due_diligence::build_graph(Arc::new(dd_deps), CompileOptions::new())
        .map_err(|e| startup(DUE_DILIGENCE, &e))?;

    let bio_deps = biography_events::Deps {
        model: biography_events::offline::offline_model(std::time::Duration::ZERO),
        search: search::corpus(&biography_events::default_corpus_dir())
            .map_err(|e| startup(BIOGRAPHY_EVENTS, &e))?,
        sites: Sites::offline(),
    };
    let bio_graph = biography_events::build_graph(&bio_deps, CompileOptions::new())
        .map_err(|e| startup(BIOGRAPHY_EVENTS, &e))?;

    let ei_model: Arc<dyn ChatModel> = Arc::new(entity_intel::offline_model());
    let ei_limits = entity_intel::Limits::default();
    let ei_graph = entity_intel::build_graph(
        entity_intel::AgentDeps {
            model: Arc::clone(&ei_model),
            tool_specs: Vec::new(),
            limits: ei_limits.clone(),
        },
        &entity_intel::ToolDeps {
            search: search::corpus(&search::default_corpus_dir())
                .map_err(|e| startup(ENTITY_INTEL, &e))?,
            summary_model: ei_model,
            summarize_after_messages: ei_limits.summarize_after_messages,
            web: None,
            outputs: OutputFolder::PerThread(files_dir.join(ENTITY_INTEL)),
        },
        CompileOptions::new(),
    )
    .map_err(|e| startup(ENTITY_INTEL, &e))?;

    let server = server
        .graph_without_schema(ARXIV_RESEARCH, arxiv_graph)
        .graph_without_schema(MCP_RESEARCH, mcp_graph)
        .graph_without_schema(DUE_DILIGENCE, dd_graph)
        .graph_without_schema(BIOGRAPHY_EVENTS, bio_graph)
        .graph_without_schema(ENTITY_INTEL, ei_graph);
    Ok((server, BundledWorkflows { arxiv, events }))
}
