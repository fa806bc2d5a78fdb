//! The think tool: a scratchpad step with no side effects.

use async_trait::async_trait;
use graphkit::State;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{Tool, ToolOutput, ToolRuntime, parse_args};

/// `think`: lets the model reason or plan in the middle of a task. It fetches nothing and
/// changes nothing; the thought is echoed back, logged with tracing, and written to the
/// `custom` stream as `{"thought": ...}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ThinkTool;

/// Arguments of `think`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ThinkArgs {
    /// The thought: reasoning, a plan, or a reflection on results so far.
    pub thought: String,
}

#[async_trait]
impl<S: State> Tool<S> for ThinkTool {
    fn name(&self) -> &str {
        "think"
    }

    fn description(&self) -> &str {
        "Think about something: reason about the results so far, plan next steps, or check a rule. It obtains no new information and changes nothing."
    }

    fn parameters(&self) -> Value {
        graphkit_llm::schema_for::<ThinkArgs>()
    }

    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> {
        let ThinkArgs { thought } = parse_args(<Self as Tool<S>>::name(self), args)?;
        tracing::debug!(%thought, "think");
        runtime
            .writer()
            .custom(serde_json::json!({ "thought": thought }));
        Ok(ToolOutput::Content(thought))
    }
}
