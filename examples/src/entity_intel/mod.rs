//! # entity_intel — the entity-intel research agent (seed 000)
//!
//! Research directions (bundles of entities, each with directions) become a todo list
//! (`generate_todos`, structured output); a research agent works through it in a
//! `research_agent` ⇄ `tools` loop with stateful tools; writing a file saves the output,
//! records it, and — when the history is long — summarizes and resets the conversation
//! from inside the tool; `verify_findings` checks every reported value against the passage
//! of its source; `finalize_output` writes `research_complete.json`. Bundles run in
//! parallel, bounded by a semaphore, each on its own checkpointed thread.
//!
//! The guide page `docs/workflows/entity-intel.md` explains the graph, the state, the
//! tools and the limits, and how to run it offline or with a real model.

mod cli;
mod graph;
pub mod input;
mod nodes;
mod offline;
mod output_folder;
pub mod prompts;
mod runner;
mod state;
pub mod todo;
mod tools;
mod verify;
mod web_tools;

pub use cli::{EntityIntelArgs, entity_intel_main};
pub use graph::build_graph;
pub use input::EntitiesResearchDirections;

pub use nodes::{AgentDeps, Limits, RUN_SESSION_KEY};

pub use offline::offline_model;
pub use output_folder::OutputFolder;

pub use runner::{EntityIntelOptions, RunSummary, run_entity_intel};

pub use state::{
    EntityIntelResearchState, EntityIntelResearchStateUpdate, FindingsCheck, OutputCheck,
    TodoBudget, Unverified,
};
pub use todo::TodoStatus;

pub use tools::{ToolDeps, research_tools};
pub use web_tools::WebTools;

/// The sample input shipped with the crate (`examples/inputs/entity-intel.json`).
pub fn sample_input_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("inputs")
        .join("entity-intel.json")
}
