//! Handoff tools (`transfer_to_<worker>`) and the messages that hand control back.

use std::sync::Arc;

use async_trait::async_trait;
use graphkit::{Command, KeyedUpdate};
use graphkit_llm::{AssistantMessage, Message, ToolCall};
use serde_json::{Value, json};

use crate::error::ToolError;
use crate::state::MessagesState;
use crate::tool::{Tool, ToolOutput, ToolRuntime, tool_message};

/// The prefix of every handoff tool's name: the model calls `transfer_to_<worker>`.
pub const HANDOFF_PREFIX: &str = "transfer_to_";

/// The handoff tool's name for `worker`: characters a tool name cannot have become `_`.
pub(crate) fn handoff_tool_name(worker: &str) -> String {
    let suffix: String = worker
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{HANDOFF_PREFIX}{suffix}")
}

/// What every handoff tool of one supervisor knows about the others.
#[derive(Debug)]
pub(crate) struct HandoffRules {
    /// The names of all handoff tools of the supervisor.
    pub(crate) names: Vec<String>,
    /// Refuse a second handoff in one assistant message.
    pub(crate) one_per_turn: bool,
    /// Refuse handoffs once this many succeeded since the last user message.
    pub(crate) max_handoffs: usize,
}

/// `transfer_to_<worker>`: answers the call and routes the graph to the worker's node.
#[derive(Debug)]
pub(crate) struct HandoffTool {
    pub(crate) name: String,
    pub(crate) worker: String,
    pub(crate) description: String,
    pub(crate) rules: Arc<HandoffRules>,
}

impl HandoffTool {
    /// Why this call may not hand off, if it may not.
    fn refusal(&self, history: &[Message], call_id: &str) -> Option<String> {
        // The handoffs asked before this one in the same reply (parallel calls all see
        // the same snapshot, so they are counted here, in call order).
        let earlier: Vec<&ToolCall> = match history.last() {
            Some(Message::Assistant(asked)) => asked
                .tool_calls
                .iter()
                .take_while(|c| c.id != call_id)
                .filter(|c| self.rules.names.contains(&c.name))
                .collect(),
            _ => Vec::new(),
        };
        if let (true, Some(first)) = (self.rules.one_per_turn, earlier.first()) {
            return Some(format!(
                "refused: only one worker per turn, and this turn already calls `{}`. Wait for that worker's answer, then call `{}` in a later turn if it is still needed",
                first.name, self.name
            ));
        }
        let done = successful_handoffs_this_turn(history, &self.rules.names);
        (done + earlier.len() >= self.rules.max_handoffs).then(|| {
            format!(
                "refused: the limit of {} delegations for this user turn is reached; answer the user with what the workers found",
                self.rules.max_handoffs
            )
        })
    }
}

#[async_trait]
impl<S: MessagesState> Tool<S> for HandoffTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(
        &self,
        _args: Value,
        runtime: ToolRuntime<S>,
    ) -> Result<ToolOutput<S>, ToolError> {
        if let Some(refusal) = self.refusal(runtime.state().messages(), runtime.tool_call_id()) {
            return Err(ToolError::Failed(refusal));
        }
        let reply = runtime.reply(format!("Successfully transferred to {}", self.worker));
        Ok(ToolOutput::Command(
            Command::new()
                .update(S::messages_update(KeyedUpdate::upsert([reply])))
                .goto(self.worker.as_str()),
        ))
    }
}

/// Handoffs answered without error since the last user message.
fn successful_handoffs_this_turn(history: &[Message], names: &[String]) -> usize {
    history
        .iter()
        .rev()
        .take_while(|m| !matches!(m, Message::User(_)))
        .filter(|m| {
            matches!(m, Message::Tool(t) if !t.is_error
                && t.name.as_deref().is_some_and(|n| names.iter().any(|h| h == n)))
        })
        .count()
}

/// The pair LangGraph adds after a worker: an assistant message calling
/// `transfer_back_to_<supervisor>` and the tool message answering it, so the supervisor's
/// model sees that control came back.
pub(crate) fn handoff_back_messages(worker: &str, supervisor: &str) -> [Message; 2] {
    let tool = format!("transfer_back_to_{supervisor}");
    let call = ToolCall::new(tool.clone(), json!({}));
    let call_id = call.id.clone();
    let asked = AssistantMessage::with_tool_calls(
        format!("Transferring back to {supervisor} (from {worker})"),
        vec![call],
    );
    let answered = tool_message(
        &call_id,
        &tool,
        format!("Successfully transferred back to {supervisor}"),
        false,
    );
    [Message::Assistant(asked), answered]
}
