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

pub use backend::{CorpusPaper, OfflineArxiv, OfflineArxivServer, text_pdf};

pub use cli::{ArxivResearchArgs, arxiv_research_main};

pub use graph::{GraphDeps, build_graph};

pub use nodes::{
    NodeDeps, cited_numbers, expander, fact_gate, finish, gate, paper_text, planner, step_iterator,
    synthesizer,
};

pub use runner::{ArxivResearchOptions, check_options, compiled, run_arxiv_research};
pub use standin::offline_model;
pub use state::{
    Fact, FactKind, Plan, PlanStep, ResearchState, ResearchStateUpdate, reference_key,
};

pub use tools::{ADD_REFERENCE, ARXIV_SEARCH, SearchHit};
