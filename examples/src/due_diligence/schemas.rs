//! The structured outputs the models are asked for (the seed's `search_result.py` models).
//!
//! The seed gives fields only for `ReflectionOutput`; the others follow
//! `REQUIREMENTS.md` §001. Every field has a serde default, so a sparse reply from a weak
//! model still parses (an empty list instead of a failed run).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `generate_queries`' output (strategy model): the next search queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SearchQueriesList {
    /// Web search queries, most important first.
    #[serde(default)]
    pub queries: Vec<String>,
}

/// A page a finding came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Source {
    /// Its URL.
    #[serde(default)]
    pub url: String,
    /// Its title.
    #[serde(default)]
    pub title: String,
}

/// One search's structured result (search model), built from the pages the search found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WebSearchOutput {
    /// The query searched.
    #[serde(default)]
    pub query: String,
    /// What the pages say about the subject, in a few sentences.
    #[serde(default)]
    pub summary: String,
    /// Facts about the subject, one per item, each ending with `(source: URL)`.
    #[serde(default)]
    pub(crate) key_facts: Vec<String>,
    /// The pages used.
    #[serde(default)]
    pub sources: Vec<Source>,
}

/// `analyze_and_reflect`'s output (strategy model): the seed's simple, text-heavy schema.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReflectionOutput {
    /// Multi-section text: `## Findings`, `## Entities`, `## Relationships`,
    /// `## Risk assessment`, `## Gaps`.
    #[serde(default)]
    pub analysis_summary: String,
    /// Whether another round of searches is worth it.
    #[serde(default)]
    pub should_continue: bool,
    /// Why.
    #[serde(default)]
    pub reasoning: String,
    /// What to search next, in natural language, red flags and critical gaps first.
    #[serde(default)]
    pub query_strategy: String,
}

/// The kind of an entity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    /// A natural person.
    Person,
    /// A company, authority or other body.
    Organization,
    /// A place.
    Location,
    /// Anything else.
    #[default]
    #[serde(other)]
    Other,
}

/// A discovered entity, merged across iterations (aliases folded in).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Entity {
    /// The canonical name.
    #[serde(default)]
    pub name: String,
    /// Its kind.
    #[serde(default)]
    pub entity_type: EntityType,
    /// Other names it goes by.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// Who or what it is.
    #[serde(default)]
    pub description: String,
    /// The depth at which it was first found.
    #[serde(default)]
    pub first_seen_depth: u32,
    /// URLs it was found in.
    #[serde(default)]
    pub sources: Vec<String>,
}

impl Entity {
    /// `true` when `name` is this entity's name or one of its aliases (case-insensitive).
    pub(crate) fn is_named(&self, name: &str) -> bool {
        let wanted = normalize(name);
        normalize(&self.name) == wanted || self.aliases.iter().any(|a| normalize(a) == wanted)
    }
}

/// A risk indicator: a red flag, a neutral item or a positive (mitigating) one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Indicator {
    /// What was found.
    #[serde(default)]
    pub text: String,
    /// Where (URL), when known.
    #[serde(default)]
    pub source: String,
}

/// The entity-merge step's output (search model): the whole merged entity list, and the
/// risk indicators read from the reflection's risk section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct EntityMergeOutput {
    /// Every entity known so far, merged (existing ones kept, new ones added, aliases folded).
    #[serde(default)]
    pub entities: Vec<Entity>,
    /// Red flags found in this iteration.
    #[serde(default)]
    pub red_flags: Vec<Indicator>,
    /// Neutral items found in this iteration.
    #[serde(default)]
    pub(crate) neutral: Vec<Indicator>,
    /// Positive items found in this iteration.
    #[serde(default)]
    pub positive: Vec<Indicator>,
}

/// How important an entity is to the investigation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Importance {
    /// Central, or tied to a red flag.
    High,
    /// Connected to the subject.
    Medium,
    /// Peripheral.
    #[default]
    #[serde(other)]
    Low,
}

/// A node of the entity graph.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphNode {
    /// A stable id (the canonical name).
    #[serde(default)]
    pub id: String,
    /// The entity's name.
    #[serde(default)]
    pub name: String,
    /// Its kind.
    #[serde(default)]
    pub entity_type: EntityType,
    /// Its importance.
    #[serde(default)]
    pub(crate) importance: Importance,
    /// Why.
    #[serde(default)]
    pub(crate) importance_reasoning: String,
}

/// An edge of the entity graph: a relationship between two nodes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GraphEdge {
    /// The source node's id.
    #[serde(default)]
    pub source: String,
    /// The target node's id.
    #[serde(default)]
    pub target: String,
    /// The relationship (`chairman of`, `sole shareholder of`).
    #[serde(default)]
    pub(crate) relationship: String,
    /// The statement it rests on.
    #[serde(default)]
    pub evidence: String,
    /// URLs.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// A recurring pattern across connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Pattern {
    /// What recurs.
    #[serde(default)]
    pub description: String,
    /// The entities involved.
    #[serde(default)]
    pub entities: Vec<String>,
}

/// Severity of a risk or a suspicious connection.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Severity {
    /// Minor.
    #[default]
    Low,
    /// Worth a closer look.
    Medium,
    /// Serious.
    High,
    /// Disqualifying without mitigation.
    Critical,
}

/// A connection flagged as suspicious.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuspiciousConnection {
    /// What is suspicious.
    #[serde(default)]
    pub description: String,
    /// The entities involved.
    #[serde(default)]
    pub entities: Vec<String>,
    /// How serious.
    #[serde(default)]
    pub(crate) severity: Severity,
    /// Why.
    #[serde(default)]
    pub reasoning: String,
}

/// `map_connections`' output (search model): the entity graph and what it shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConnectionMappingOutput {
    /// One node per entity.
    #[serde(default)]
    pub nodes: Vec<GraphNode>,
    /// Relationships.
    #[serde(default)]
    pub edges: Vec<GraphEdge>,
    /// Recurring patterns.
    #[serde(default)]
    pub(crate) patterns: Vec<Pattern>,
    /// Suspicious connections.
    #[serde(default)]
    pub suspicious_connections: Vec<SuspiciousConnection>,
}

/// A statement of the report with its sources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// The statement.
    #[serde(default)]
    pub(crate) statement: String,
    /// URLs supporting it.
    #[serde(default)]
    pub sources: Vec<String>,
    /// The passages of those sources that say it, found by the graph in the sources' text
    /// (not written by the model); empty when none of its sources says it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub passages: Vec<Passage>,
}

/// A passage of a source: the sentence a reported statement or entity was read from,
/// quoted with its white space collapsed (see [`crate::shared::prose::quotes`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Passage {
    /// The source's URL.
    pub source: String,
    /// The sentence, as the source has it.
    pub text: String,
}

/// An entity as the report shows it: its name and kind, and the passage of each source
/// that names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReportedEntity {
    /// The entity's name.
    pub name: String,
    /// Its kind.
    pub entity_type: EntityType,
    /// One passage per source that names it (sources whose text does not name it give none).
    pub passages: Vec<Passage>,
}

/// Two or more sources disagree on a fact of an entity that has one value (its founding
/// year, its seat, an office and who holds it, an owner, a stake, an amount of one year,
/// the year of an event): every value is kept with its source and passage, none is chosen.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FactConflict {
    /// The entity.
    pub entity: String,
    /// The fact: `founded`, `seat`, `jurisdiction`, `born`, `birthplace`, `died`, `owner`,
    /// `stake in ORG`, `office at ORG` (a person's office), `chief executive` (who holds it),
    /// `fine (2021)`, `revenue (2022)`, `sanctioned (year)`, ...
    pub fact: String,
    /// Each value with the passage that states it, in the order the sources were read.
    pub values: Vec<StatedValue>,
}

/// A value of a fact as one source states it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatedValue {
    /// The value (`1998`, `Skelde`).
    pub value: String,
    /// Where it is stated.
    pub passage: Passage,
}

/// A section of prose plus findings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct ReportSection {
    /// A short paragraph.
    #[serde(default)]
    pub summary: String,
    /// The findings, with sources.
    #[serde(default)]
    pub findings: Vec<Finding>,
}

/// The overall risk level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    /// Concerns that need mitigation.
    Medium,
    /// Serious concerns.
    High,
    /// Do not proceed without escalation.
    Critical,
    /// Too little was found about the subject to assess a risk (no source about them).
    Insufficient,
    /// Sources about the subject were read and nothing of concern was found in them.
    #[default]
    #[serde(other)]
    Low,
}

/// One assessed risk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct Risk {
    /// `sanctions`, `corruption`, `governance`, `litigation`, ...
    #[serde(default)]
    pub(crate) category: String,
    /// How serious.
    #[serde(default)]
    pub(crate) severity: Severity,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// The evidence (statements or URLs).
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// Section 13: the risk assessment with severities.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RiskAssessment {
    /// The overall level.
    #[serde(default)]
    pub overall_risk: RiskLevel,
    /// The risks found.
    #[serde(default)]
    pub(crate) risks: Vec<Risk>,
}

/// How well a finding is supported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Strength {
    /// Several independent sources or an official record.
    Strong,
    /// One credible source.
    Moderate,
    /// Indirect or unsourced.
    #[default]
    #[serde(other)]
    Weak,
}

/// Section 16 entry: the strength of the evidence behind one finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(crate) struct EvidenceRating {
    /// The finding.
    #[serde(default)]
    pub finding: String,
    /// Its strength.
    #[serde(default)]
    pub(crate) strength: Strength,
    /// Its sources.
    #[serde(default)]
    pub sources: Vec<String>,
}

/// `synthesize_report`'s output (search model): the 18 sections of the due-diligence
/// report, in order. (The file adds [`ReportMetadata`](super::report_file::ReportMetadata).)
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DueDiligenceReport {
    /// 1. The conclusion in a paragraph.
    #[serde(default)]
    pub(crate) executive_summary: String,
    /// 2. Who the subject is.
    #[serde(default)]
    pub(crate) subject_overview: ReportSection,
    /// 3. What was searched, how deep, and why it stopped.
    #[serde(default)]
    pub(crate) scope_and_methodology: String,
    /// 4. Names, aliases and identifying facts.
    #[serde(default)]
    pub(crate) identity_verification: ReportSection,
    /// 5. Roles held.
    #[serde(default)]
    pub(crate) professional_history: ReportSection,
    /// 6. Companies the subject is tied to.
    #[serde(default)]
    pub(crate) corporate_affiliations: ReportSection,
    /// 7. Money: revenue, funding, holdings.
    #[serde(default)]
    pub(crate) financial_profile: ReportSection,
    /// 8. Court cases, regulators, investigations.
    #[serde(default)]
    pub(crate) legal_and_regulatory: ReportSection,
    /// 9. Sanctions lists and politically exposed persons.
    #[serde(default)]
    pub(crate) sanctions_and_pep_screening: ReportSection,
    /// 10. Negative press.
    #[serde(default)]
    pub(crate) adverse_media: ReportSection,
    /// 11. The important relationships, from the entity graph.
    #[serde(default)]
    pub(crate) key_relationships: ReportSection,
    /// 12. Suspicious patterns and connections.
    #[serde(default)]
    pub(crate) suspicious_patterns: ReportSection,
    /// 13. The risk assessment with severities.
    #[serde(default)]
    pub risk_assessment: RiskAssessment,
    /// 14. Red flags.
    #[serde(default)]
    pub red_flags: Vec<Finding>,
    /// 15. Mitigating factors (positive indicators).
    #[serde(default)]
    pub(crate) mitigating_factors: Vec<Finding>,
    /// 16. Evidence strength per finding.
    #[serde(default)]
    pub(crate) evidence_strength: Vec<EvidenceRating>,
    /// 17. What could not be established.
    #[serde(default)]
    pub(crate) information_gaps: Vec<String>,
    /// 18. What to do next.
    #[serde(default)]
    pub(crate) recommendations_and_next_steps: Vec<String>,
}

/// The graph's check of the report against the sources' text (not written by the model):
/// where each entity is named, the facts the sources disagree on, and how many findings
/// no passage of their sources says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SourceEvidence {
    /// The entities found, each with the passage of each source that names it.
    #[serde(default)]
    pub entities: Vec<ReportedEntity>,
    /// Facts of one value on which two sources read disagree, with every value.
    #[serde(default)]
    pub fact_conflicts: Vec<FactConflict>,
    /// Red flags and mitigating factors none of whose sources has a passage saying them.
    #[serde(default)]
    pub unsupported_findings: usize,
}

/// Lower case, inner whitespace collapsed: how queries and names are compared.
pub(crate) fn normalize(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}
