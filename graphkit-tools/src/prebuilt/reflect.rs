//! The reflect tool: a model reflects on notes and recommends the next step, chosen from
//! a fixed set (the LLM-backed counterpart of [`ThinkTool`](super::think::ThinkTool)).

use async_trait::async_trait;
use graphkit::State;
use graphkit_llm::{ChatModel, Message, StructuredModel};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{Tool, ToolOutput, ToolRuntime, parse_args};

/// The default instructions of a [`ReflectTool`].
pub const DEFAULT_REFLECT_INSTRUCTIONS: &str = "You reflect on the progress of a task. \
Read the notes (recent tool results and history). Summarise what is known in a few sentences, \
list what is still missing or uncertain, and recommend the single most useful next step, \
with the reason for it.";

/// The recommendation a [`ReflectTool`] falls back to unless told otherwise.
pub const NO_RECOMMENDATION: &str = "none";

/// What the model is asked to fill in (the structured-output schema).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(rename = "reflection")]
struct ReflectionReply {
    /// What the notes show so far, in a few sentences.
    summary: String,
    /// What is still missing or uncertain.
    #[serde(default)]
    gaps: Vec<String>,
    /// The next step: exactly one of the allowed recommendations.
    recommendation: String,
    /// Why this step.
    reason: String,
}

/// The result of a reflection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reflection {
    /// What the notes show so far.
    pub summary: String,
    /// What is still missing or uncertain.
    pub gaps: Vec<String>,
    /// The recommended next step: always one of the tool's allowed recommendations,
    /// spelled as configured.
    pub recommendation: String,
    /// The model's reason for it.
    pub reason: String,
    /// What the model recommended when that was not allowed, even after being told the
    /// allowed set once; `recommendation` is then the fallback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_recommendation: Option<String>,
}

/// Arguments of the reflect tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReflectArgs {
    /// What to reflect on: the latest tool results, recent history, the goal.
    pub notes: String,
}

/// `reflect`: a model reads notes and answers with a [`Reflection`]: a summary, the gaps,
/// and a recommended next step from a fixed set (tool names, `stop`, ...), with a reason.
///
/// The recommendation is checked against the allowed set (ignoring case and surrounding
/// spaces or quotes). When the model picks something else, it is asked once more with the
/// allowed set spelled out; if it still does, the reflection carries the **fallback**
/// recommendation (`none` unless [`with_fallback`](Self::with_fallback) says otherwise)
/// and the rejected value in [`Reflection::rejected_recommendation`], so the caller can
/// apply its own rule. The fallback is always part of the allowed set.
///
/// Use it as a tool (arguments `{"notes": ...}`; the reply is the reflection as JSON, also
/// written to the `custom` stream as `{"reflection": ...}`) or call
/// [`reflect`](Self::reflect) from a node.
///
/// ```
/// use graphkit_llm::ScriptedModel;
/// use graphkit_tools::prebuilt::reflect::ReflectTool;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // A test double standing in for a real model.
/// let model = ScriptedModel::new([
///     r#"{"summary": "Birth and schooling found.", "gaps": ["career"], "recommendation": "url_crawler", "reason": "Britannica is not crawled yet."}"#,
/// ]);
/// let think = ReflectTool::new(model, ["url_crawler", "further_event_research", "stop"])
///     .with_name("think_tool");
/// let reflection = think.reflect("url_crawler(wikipedia): added 3 events").await?;
/// assert_eq!(reflection.recommendation, "url_crawler");
/// assert_eq!(think.allowed(), ["url_crawler", "further_event_research", "stop", "none"]);
/// # Ok::<(), graphkit_tools::ToolError>(()) }).unwrap();
/// ```
pub struct ReflectTool<M> {
    model: StructuredModel<M, ReflectionReply>,
    name: String,
    description: String,
    instructions: String,
    allowed: Vec<String>,
    fallback: String,
}

impl<M: std::fmt::Debug> std::fmt::Debug for ReflectTool<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReflectTool")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("allowed", &self.allowed)
            .field("fallback", &self.fallback)
            .finish_non_exhaustive()
    }
}

impl<M: ChatModel> ReflectTool<M> {
    /// A reflect tool over `model` that recommends one of `recommendations` (or the
    /// fallback, `none`). Duplicates and blank entries are dropped.
    pub fn new(model: M, recommendations: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut tool = Self {
            model: model.with_structured_output(),
            name: "reflect".to_owned(),
            description: "Reflect on the results so far: summarise them, name the gaps, and recommend the next step. It fetches nothing and changes nothing.".to_owned(),
            instructions: DEFAULT_REFLECT_INSTRUCTIONS.to_owned(),
            allowed: Vec::new(),
            fallback: NO_RECOMMENDATION.to_owned(),
        };
        for recommendation in recommendations {
            tool.allow(recommendation.into());
        }
        tool.allow(NO_RECOMMENDATION.to_owned());
        tool
    }

    fn allow(&mut self, recommendation: String) {
        let recommendation = recommendation.trim().to_owned();
        if !recommendation.is_empty() && self.canonical(&recommendation).is_none() {
            self.allowed.push(recommendation);
        }
    }

    /// Uses this name for the tool (the seed of workflow 003 calls it `think_tool`).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Uses this description for the tool (what the calling model reads).
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Replaces the instructions (the system prompt). The list of allowed recommendations
    /// is always appended to them.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// Falls back to this recommendation (added to the allowed set) instead of `none`.
    #[must_use]
    pub fn with_fallback(mut self, fallback: impl Into<String>) -> Self {
        let fallback = fallback.into();
        self.allow(fallback.clone());
        self.fallback = self
            .canonical(&fallback)
            .map_or(fallback, ToOwned::to_owned);
        self
    }

    /// The allowed recommendations, in order (the fallback included).
    pub fn allowed(&self) -> &[String] {
        &self.allowed
    }

    /// The allowed recommendation `candidate` names, ignoring case, spaces and quotes.
    fn canonical(&self, candidate: &str) -> Option<&str> {
        let candidate = candidate
            .trim()
            .trim_matches(|c| matches!(c, '"' | '\'' | '`'))
            .trim();
        self.allowed
            .iter()
            .find(|a| a.eq_ignore_ascii_case(candidate))
            .map(String::as_str)
    }

    fn system_prompt(&self) -> String {
        let allowed = self
            .allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "{}\n\nThe recommendation must be exactly one of: {allowed}. Use `{}` when none of the others fits.\n\
             Answer with a JSON object with the fields `summary` (string), `gaps` (list of strings), `recommendation` (string) and `reason` (string).",
            self.instructions, self.fallback
        )
    }

    /// Reflects on `notes`.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] when `notes` is blank; [`ToolError::Failed`] when the
    /// model fails or its reply cannot be read as a reflection (after one retry).
    pub async fn reflect(&self, notes: &str) -> Result<Reflection, ToolError> {
        if notes.trim().is_empty() {
            return Err(ToolError::InvalidArguments {
                tool: self.name.clone(),
                message: "`notes` is empty; pass the results and history to reflect on".into(),
            });
        }
        let mut conversation = vec![Message::system(self.system_prompt()), Message::user(notes)];
        let (reply, raw) = self.model.invoke_with_raw(&conversation).await?;
        if let Some(allowed) = self.canonical(&reply.recommendation) {
            return Ok(Self::reflection(reply, allowed.to_owned(), None));
        }
        tracing::info!(
            tool = %self.name,
            recommendation = %reply.recommendation,
            "reflection recommended something not allowed; asking once more"
        );
        conversation.push(raw.into());
        conversation.push(Message::user(format!(
            "`{}` is not an allowed recommendation. Answer again with the same JSON fields; the recommendation must be exactly one of: {}.",
            reply.recommendation,
            self.allowed.join(", ")
        )));
        let (second, _) = self.model.invoke_with_raw(&conversation).await?;
        if let Some(allowed) = self.canonical(&second.recommendation) {
            return Ok(Self::reflection(second, allowed.to_owned(), None));
        }
        tracing::warn!(
            tool = %self.name,
            recommendation = %second.recommendation,
            fallback = %self.fallback,
            "reflection recommended something not allowed twice; using the fallback"
        );
        let rejected = second.recommendation.clone();
        Ok(Self::reflection(
            second,
            self.fallback.clone(),
            Some(rejected),
        ))
    }

    fn reflection(
        reply: ReflectionReply,
        recommendation: String,
        rejected: Option<String>,
    ) -> Reflection {
        Reflection {
            summary: reply.summary,
            gaps: reply.gaps,
            recommendation,
            reason: reply.reason,
            rejected_recommendation: rejected,
        }
    }
}

#[async_trait]
impl<S: State, M: ChatModel + 'static> Tool<S> for ReflectTool<M> {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        graphkit_llm::schema_for::<ReflectArgs>()
    }

    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> {
        let ReflectArgs { notes } = parse_args(&self.name, args)?;
        let reflection = self.reflect(&notes).await?;
        tracing::debug!(tool = %self.name, recommendation = %reflection.recommendation, "reflect");
        runtime
            .writer()
            .custom(serde_json::json!({ "reflection": reflection }));
        Ok(ToolOutput::json(&reflection))
    }
}
