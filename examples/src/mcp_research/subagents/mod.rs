//! The nine sub-agents of the seed in a registry (`name → SubAgent`). Each has its
//! arguments, its phase and its part of [`SubAgentOutput`]:
//!
//! - over MCP (+ the model): [`Aggregator`], [`Sampler`], [`Scanner`] ([`data`]);
//! - the model only: [`Decomposer`], [`PerspectiveAgent`], [`Extractor`],
//!   [`Synthesizer`], [`Validator`], [`GapAnalyzer`] ([`llm`]).
//!
//! A call that cannot do its work (bad arguments, an MCP tool error, an unusable model
//! reply) returns an output marked `failed` with the reason, and the run goes on. Only an
//! MCP server that cannot be reached fails the call with [`SubAgentFailure`]: the step
//! fails and the session can be resumed once the server is back.

pub(crate) mod data;
pub(crate) mod llm;
pub(crate) mod report;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use graphkit_llm::ChatModel;
use serde_json::Value;

use super::source::EventsSource;
use super::state::{ResearchAgentState, ResearchPhase, SubAgentOutput};

pub(crate) use data::{Aggregator, Sampler, Scanner};
pub use data::{DataArgs, merge_buckets, select_tools};
pub(crate) use llm::{
    Decomposer, Extraction, Extractor, GapAnalyzer, GapReport, PerspectiveAgent, PerspectiveList,
    SubQuestionList, ValidationReport, Validator,
};
pub(crate) use report::{ReportDraft, Synthesizer, compose_report, write_report};

/// What a sub-agent works with: the state before the batch, the model, the MCP tools.
#[derive(Clone)]
pub struct AgentContext {
    /// The state when the batch started (calls of one batch do not see each other).
    pub state: Arc<ResearchAgentState>,
    /// The model of the session.
    pub model: Arc<dyn ChatModel>,
    /// The MCP tools.
    pub source: Arc<dyn EventsSource>,
}

/// A sub-agent could not run because the MCP server cannot be reached: the step fails.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SubAgentFailure(pub String);

/// One sub-agent.
#[async_trait]
pub trait SubAgent: Send + Sync {
    /// Its registry name (`aggregator`).
    fn name(&self) -> &'static str;
    /// The phase shown while it runs.
    fn phase(&self) -> ResearchPhase;
    /// What it does and its arguments, for the planner prompt.
    fn description(&self) -> &'static str;
    /// Runs one call.
    ///
    /// # Errors
    /// [`SubAgentFailure`] only when the MCP server cannot be reached.
    async fn run(
        &self,
        arguments: &Value,
        ctx: &AgentContext,
    ) -> Result<SubAgentOutput, SubAgentFailure>;
}

/// The sub-agents by name.
#[derive(Clone)]
pub struct SubAgentRegistry {
    agents: BTreeMap<&'static str, Arc<dyn SubAgent>>,
}

impl std::fmt::Debug for SubAgentRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.agents.keys()).finish()
    }
}

impl Default for SubAgentRegistry {
    fn default() -> Self {
        Self::standard()
    }
}

impl SubAgentRegistry {
    /// The seed's nine sub-agents.
    pub fn standard() -> Self {
        let agents: [Arc<dyn SubAgent>; 9] = [
            Arc::new(Aggregator),
            Arc::new(Sampler),
            Arc::new(Scanner),
            Arc::new(Decomposer),
            Arc::new(PerspectiveAgent),
            Arc::new(Extractor),
            Arc::new(Synthesizer),
            Arc::new(Validator),
            Arc::new(GapAnalyzer),
        ];
        Self {
            agents: agents.into_iter().map(|a| (a.name(), a)).collect(),
        }
    }

    /// The agent called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn SubAgent>> {
        self.agents.get(name)
    }

    /// The names, sorted.
    pub fn names(&self) -> Vec<&'static str> {
        self.agents.keys().copied().collect()
    }

    /// One line per agent: `- name: description`.
    pub(crate) fn describe(&self) -> String {
        self.agents
            .values()
            .map(|a| format!("- {}: {}\n", a.name(), a.description()))
            .collect()
    }
}

/// An output of `agent` that did nothing, saying why.
pub fn failed(agent: &str, note: impl Into<String>) -> SubAgentOutput {
    SubAgentOutput {
        agent: agent.to_owned(),
        note: note.into(),
        failed: true,
        ..SubAgentOutput::default()
    }
}

/// The output of `agent` from the model's `reply`: what `output` makes of it (the note
/// and the content; the agent is set here), or, when the reply was unusable, an output
/// that did nothing, saying why.
pub(crate) fn from_reply<T>(
    agent: &str,
    reply: Result<T, String>,
    output: impl FnOnce(T) -> SubAgentOutput,
) -> SubAgentOutput {
    match reply {
        Ok(reply) => SubAgentOutput {
            agent: agent.to_owned(),
            ..output(reply)
        },
        Err(problem) => failed(agent, problem),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_has_the_nine_agents_of_the_seed_with_their_phases() {
        let registry = SubAgentRegistry::standard();
        assert_eq!(
            registry.names(),
            [
                "aggregator",
                "decomposer",
                "extractor",
                "gap_analyzer",
                "perspective",
                "sampler",
                "scanner",
                "synthesizer",
                "validator"
            ]
        );
        let phase = |n: &str| registry.get(n).map(|a| a.phase());
        assert_eq!(phase("aggregator"), Some(ResearchPhase::Aggregating));
        assert_eq!(phase("decomposer"), Some(ResearchPhase::Decomposing));
        assert_eq!(phase("sampler"), Some(ResearchPhase::Sampling));
        assert_eq!(phase("scanner"), Some(ResearchPhase::Scanning));
        assert_eq!(phase("extractor"), Some(ResearchPhase::Extracting));
        assert_eq!(phase("validator"), Some(ResearchPhase::Validating));
        assert_eq!(phase("synthesizer"), Some(ResearchPhase::Synthesizing));
        assert_eq!(phase("perspective"), Some(ResearchPhase::Planning));
        assert_eq!(phase("gap_analyzer"), Some(ResearchPhase::Planning));
    }
}
