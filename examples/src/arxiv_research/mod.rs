//! # arxiv_research — the plan-driven arXiv deep research workflow (seed 002)
//!
//! A planner turns the topic into a [`Plan`]; for each step, `step_iterator` posts one
//! PLAN STEP message; a [`Supervisor`](graphkit_tools::Supervisor) hands it to the
//! `arxiv_agent` worker (a ReAct agent with `arxiv_search` and
//! `add_scholar_reference_tool`), keeping only the worker's last message; `fact_gate`
//! admits at most K new references per step into `facts` (merged by [`reference_key`]);
//! after the last step the expander summarises each admitted paper from its PDF (or its
//! abstract), and the synthesizer writes the report from the summarised references only.
//!
//! Offline, the corpus in `examples/fixtures/arxiv/` is served from 127.0.0.1 to the real
//! arXiv client ([`OfflineArxiv`]), and [`offline_model`] (a test double) plays every
//! role. The guide page is `docs/workflows/arxiv-research.md`.

mod backend;
mod cli;
mod graph;
mod nodes;
pub mod prompts;
mod runner;
mod standin;
mod state;
mod tools;

pub use backend::{CorpusPaper, OfflineArxiv, OfflineArxivServer, default_corpus_path, text_pdf};
pub use cli::{ArxivResearchArgs, DEFAULT_TOPIC, arxiv_research_main};
pub use graph::{GraphDeps, build_graph, build_supervisor};
pub use nodes::{
    ADVANCE, ARXIV_AGENT, DEFAULT_MAX_CITATIONS, EXPANDER, ExtendedSummary, FACT_GATE, FINISH,
    MAX_CITATIONS_KEY, NodeDeps, PLANNER, ReportBody, STEP_ITERATOR, SUPERVISOR, SYNTHESIZER,
    after_advance, citations_in_range, cited_numbers, expander, fact_gate, finish, gate,
    paper_text, planner, source_line, step_iterator, synthesizer,
};
pub use runner::{
    ArxivResearchOptions, check_options, compiled, run_arxiv_research, write_artifacts,
};
pub use standin::offline_model;
pub use state::{
    Fact, FactKind, Plan, PlanStep, ResearchState, ResearchStateUpdate, arxiv_id_from_url,
    normalize_arxiv_id, normalize_doi, normalize_title, normalize_url, reference_key,
};
pub use tools::{
    ADD_REFERENCE, ARXIV_SEARCH, AddReferenceArgs, DEFAULT_TOP_K, SearchArgs, SearchHit, TOP_K_KEY,
    worker_tools,
};
