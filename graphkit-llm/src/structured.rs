//! Structured output: a model that answers with a typed value.

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, Message};
use crate::model::ChatModel;
use crate::request::{ChatRequest, ResponseFormat};

/// A model that answers with a `T` (see [`ChatModel::with_structured_output`]).
///
/// The schema of `T` is sent through the provider's native mechanism (OpenAI
/// `response_format` with `json_schema`, Anthropic forced tool use, Ollama `format`). If
/// the reply does not parse into `T`, the model is asked once more with the error shown
/// to it; if that fails too, the error carries the raw reply.
///
/// ```
/// use graphkit_llm::{ChatModel, Message, ScriptedModel};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
/// struct Verdict { approved: bool, reason: String }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([r#"{"approved": true, "reason": "fine"}"#]).with_structured_output::<Verdict>();
/// let verdict = model.invoke(&[Message::user("Review this.")]).await?;
/// assert!(verdict.approved);
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
pub struct StructuredModel<M, T> {
    model: M,
    format: ResponseFormat,
    output: PhantomData<fn() -> T>,
}

impl<M: std::fmt::Debug, T> std::fmt::Debug for StructuredModel<M, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredModel")
            .field("model", &self.model)
            .field("format", &self.format.name)
            .finish()
    }
}

impl<M: Clone, T> Clone for StructuredModel<M, T> {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            format: self.format.clone(),
            output: PhantomData,
        }
    }
}

impl<M: ChatModel, T: JsonSchema + DeserializeOwned> StructuredModel<M, T> {
    pub(crate) fn new(model: M) -> Self {
        Self {
            model,
            format: ResponseFormat::for_type::<T>(),
            output: PhantomData,
        }
    }

    /// The response format sent to the provider.
    pub fn format(&self) -> &ResponseFormat {
        &self.format
    }

    /// Asks the model and parses its reply into `T`.
    pub async fn invoke(&self, messages: &[Message]) -> Result<T> {
        self.invoke_with_raw(messages).await.map(|(value, _)| value)
    }

    /// Like [`invoke`](Self::invoke), also returning the raw reply (for usage and tracing).
    pub async fn invoke_with_raw(&self, messages: &[Message]) -> Result<(T, AssistantMessage)> {
        let mut conversation = messages.to_vec();
        let first = self.ask(&conversation).await?;
        let error = match parse_reply::<T>(&first.content) {
            Ok(value) => return Ok((value, first)),
            Err(error) => error,
        };
        tracing::info!(model = self.model.model_name(), %error, "structured output did not parse; asking once more");
        conversation.push(first.into());
        conversation.push(Message::user(format!(
            "Your reply could not be read as the requested JSON: {error}. \
             Reply again with only a JSON value that matches the schema `{}`.",
            self.format.name
        )));
        let second = self.ask(&conversation).await?;
        match parse_reply::<T>(&second.content) {
            Ok(value) => Ok((value, second)),
            Err(error) => Err(LlmError::StructuredOutput {
                type_name: std::any::type_name::<T>(),
                error,
                raw: second.content,
            }),
        }
    }

    async fn ask(&self, conversation: &[Message]) -> Result<AssistantMessage> {
        let mut request = ChatRequest::new(conversation);
        request.response_format = Some(self.format.clone());
        self.model.invoke_request(request).await
    }
}

/// Parses a reply into `T`, tolerating a Markdown code fence around the JSON.
fn parse_reply<T: DeserializeOwned>(content: &str) -> std::result::Result<T, String> {
    let text = content.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(text)
        .trim();
    if text.is_empty() {
        return Err("the reply is empty".into());
    }
    serde_json::from_str(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Point {
        x: i32,
    }

    #[test]
    fn parse_reply_accepts_fenced_json_and_names_the_problem() {
        assert_eq!(
            parse_reply::<Point>("```json\n{\"x\": 1}\n```"),
            Ok(Point { x: 1 })
        );
        assert_eq!(parse_reply::<Point>(" {\"x\": 2} "), Ok(Point { x: 2 }));
        let err = parse_reply::<Point>("{\"y\": 1}").expect_err("missing field");
        assert!(err.contains("missing field `x`"), "{err}");
        assert_eq!(
            parse_reply::<Point>("  ").expect_err("empty"),
            "the reply is empty"
        );
    }
}
