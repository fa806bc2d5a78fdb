//! Structured output: a model that answers with a typed value, checked before it is
//! accepted and retried with the problem shown to the model.
//!
//! This module does not know the [`ChatModel`](crate::ChatModel) trait (whose
//! `with_structured_output` builds a [`StructuredModel`]): the model calls it makes are
//! passed in by `model.rs`.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, Message};
use crate::request::{ChatRequest, ResponseFormat};
use crate::schema::{drop_optional_nulls, validate};

/// How many times [`StructuredModel`] asks again after a reply it cannot accept, unless
/// [`retries`](StructuredModel::retries) says otherwise: one, so a model gets one chance to
/// correct itself and a broken one costs two calls, not more.
pub const DEFAULT_RETRIES: usize = 1;

type Validator<T> = dyn Fn(&T) -> std::result::Result<(), String> + Send + Sync;

/// A model that answers with a `T` (see
/// [`ChatModel::with_structured_output`](crate::ChatModel::with_structured_output)).
///
/// The schema of `T` goes out through the provider's native mechanism (OpenAI
/// `response_format` with `json_schema` — in strict mode on the OpenAI API, see
/// [`strict`](Self::strict) —, Anthropic forced tool use, Ollama `format`). Each reply is
/// accepted only when all of these pass, in order:
///
/// 1. it is JSON (a Markdown code fence around it is tolerated);
/// 2. it matches the JSON Schema of `T` (see [`schema::validate`](crate::schema::validate)),
///    after `null`s for optional properties are dropped
///    ([`schema::drop_optional_nulls`](crate::schema::drop_optional_nulls));
/// 3. it deserializes into `T`;
/// 4. every validator added with [`validate`](Self::validate) returns `Ok`.
///
/// Otherwise the reply and a user message quoting every problem found are added to the
/// conversation and the model is asked again, up to [`retries`](Self::retries) times
/// ([`DEFAULT_RETRIES`] unless set). When the last reply fails too, the call ends with
/// [`LlmError::StructuredOutput`] carrying that reply and its problems.
///
/// ```
/// use graphkit_llm::checks::word_range;
/// use graphkit_llm::{ChatModel, LlmError, Message, ScriptedModel};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize, JsonSchema)]
/// struct Verdict { approved: bool, reason: String }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new([
///     r#"{"approved": "yes"}"#,                          // wrong type, missing field
///     r#"{"approved": true, "reason": "fine"}"#,         // too short for the validator
///     r#"{"approved": true, "reason": "the tests pass"}"#,
/// ]);
/// let judge = model
///     .clone()
///     .with_structured_output::<Verdict>()
///     .retries(2)
///     .validate(|v| word_range("reason", &v.reason, 3..));
/// let verdict = judge.invoke(&[Message::user("Review this.")]).await?;
/// assert_eq!(verdict.reason, "the tests pass");
/// let second_try = model.requests()[1].messages.last().unwrap().text().to_owned();
/// assert!(second_try.contains("`$.approved`: expected boolean, found string \"yes\""));
/// assert!(second_try.contains("missing required property `reason`"));
/// # Ok::<(), LlmError>(()) }).unwrap();
/// ```
pub struct StructuredModel<M, T> {
    model: M,
    format: ResponseFormat,
    /// `true` when `T` is not an object (a list, a string, a number, an enum of strings):
    /// providers want an object at the top, so the schema asks for `{"value": ...}` and the
    /// reply's `value` is the `T`.
    wrapped: bool,
    retries: usize,
    check_schema: bool,
    validators: Vec<Arc<Validator<T>>>,
}

impl<M: std::fmt::Debug, T> std::fmt::Debug for StructuredModel<M, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StructuredModel")
            .field("model", &self.model)
            .field("format", &self.format.name)
            .field("strict", &self.format.strict)
            .field("retries", &self.retries)
            .field("check_schema", &self.check_schema)
            .field("validators", &self.validators.len())
            .finish()
    }
}

impl<M: Clone, T> Clone for StructuredModel<M, T> {
    fn clone(&self) -> Self {
        Self {
            model: self.model.clone(),
            format: self.format.clone(),
            wrapped: self.wrapped,
            retries: self.retries,
            check_schema: self.check_schema,
            validators: self.validators.clone(),
        }
    }
}

impl<M, T: JsonSchema + DeserializeOwned> StructuredModel<M, T> {
    pub(crate) fn new(model: M) -> Self {
        let mut format = ResponseFormat::for_type::<T>();
        let wrapped = format.schema.get("type").and_then(Value::as_str) != Some("object");
        if wrapped {
            format.schema = wrap_in_object(std::mem::take(&mut format.schema));
        }
        Self {
            model,
            format,
            wrapped,
            retries: DEFAULT_RETRIES,
            check_schema: true,
            validators: Vec::new(),
        }
    }

    /// Asks again at most `retries` times after a reply that is not accepted (0: never;
    /// the model is called at most `retries + 1` times per [`invoke`](Self::invoke)).
    #[must_use]
    pub fn retries(mut self, retries: usize) -> Self {
        self.retries = retries;
        self
    }

    /// Adds a check of the parsed value; `Err(message)` rejects the reply and the message
    /// is shown to the model on the retry. Several validators can be added; every failing
    /// one is reported at once. [`checks`](crate::checks) has ready-made ones.
    ///
    /// ```
    /// # use graphkit_llm::{ChatModel, ScriptedModel, checks::{non_empty, required_headings}};
    /// # #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # struct Report { body: String, sources: Vec<String> }
    /// let writer = ScriptedModel::new(["{}"])
    ///     .with_structured_output::<Report>()
    ///     .validate(|r| required_headings("body", &r.body, &["Findings", "Sources"]))
    ///     .validate(|r| non_empty("sources", &r.sources))
    ///     .validate(|r| if r.sources.iter().all(|s| s.starts_with("http")) { Ok(()) } else {
    ///         Err("every entry of `sources` must be a URL".into())
    ///     });
    /// ```
    #[must_use]
    pub fn validate(
        mut self,
        check: impl Fn(&T) -> std::result::Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.validators.push(Arc::new(check));
        self
    }

    /// Forces OpenAI strict mode on (`true`: a schema it cannot express is then an
    /// [`LlmError::InvalidRequest`]) or off (`false`). Unset, the OpenAI API gets strict
    /// mode whenever the schema can be rewritten for it (see
    /// [`schema::openai_strict`](crate::schema::openai_strict)) and OpenAI-compatible
    /// servers never do. Other providers ignore it.
    #[must_use]
    pub fn strict(mut self, strict: bool) -> Self {
        self.format.strict = Some(strict);
        self
    }

    /// Turns the local JSON Schema check (step 2) off or on (it is on by default). Turn it
    /// off only for a hand-written `JsonSchema` impl whose schema serde does not follow.
    #[must_use]
    pub fn schema_validation(mut self, on: bool) -> Self {
        self.check_schema = on;
        self
    }

    /// The response format sent to the provider.
    pub fn format(&self) -> &ResponseFormat {
        &self.format
    }

    /// How many retries a call may make.
    pub fn max_retries(&self) -> usize {
        self.retries
    }

    /// The wrapped model.
    pub(crate) fn model(&self) -> &M {
        &self.model
    }

    /// Asks `model_name` through `ask` until a reply is accepted or the retries are used
    /// up: the loop behind [`invoke_with_raw`](Self::invoke_with_raw).
    pub(crate) async fn ask_until_accepted<F, Fut>(
        &self,
        messages: &[Message],
        model_name: &str,
        ask: F,
    ) -> Result<(T, AssistantMessage)>
    where
        F: Fn(ChatRequest) -> Fut,
        Fut: Future<Output = Result<AssistantMessage>>,
    {
        let mut conversation = messages.to_vec();
        let mut attempts = 0;
        loop {
            let mut request = ChatRequest::new(conversation.as_slice());
            request.response_format = Some(self.format.clone());
            let reply = ask(request).await?;
            attempts += 1;
            let problems = match self.accept(&reply.content) {
                Ok(value) => return Ok((value, reply)),
                Err(problems) => problems,
            };
            if attempts > self.retries {
                return Err(LlmError::StructuredOutput {
                    type_name: std::any::type_name::<T>(),
                    error: problems.join("; "),
                    raw: reply.content,
                    attempts,
                });
            }
            tracing::info!(
                model = model_name,
                format = %self.format.name,
                attempt = attempts,
                problems = %problems.join("; "),
                "structured output not accepted; asking again"
            );
            conversation.push(reply.into());
            conversation.push(Message::user(correction(&self.format.name, &problems)));
        }
    }

    /// The reply as a `T`, or every problem found (each written for the model).
    fn accept(&self, content: &str) -> std::result::Result<T, Vec<String>> {
        let mut value = parse_json(content).map_err(|e| vec![e])?;
        // A reply that gives the bare value instead of `{"value": ...}` is taken as it.
        if self.wrapped && value.get("value").is_none() {
            value = serde_json::json!({ "value": value });
        }
        drop_optional_nulls(&mut value, &self.format.schema);
        if self.check_schema
            && let Err(violations) = validate(&value, &self.format.schema)
        {
            return Err(violations.iter().map(ToString::to_string).collect());
        }
        if self.wrapped {
            value = value
                .get_mut("value")
                .map(Value::take)
                .ok_or_else(|| vec!["missing required property `value`".to_owned()])?;
        }
        let parsed: T = serde_json::from_value(value)
            .map_err(|e| vec![format!("the JSON does not fit the expected shape: {e}")])?;
        let failed: Vec<String> = self
            .validators
            .iter()
            .filter_map(|check| check(&parsed).err())
            .collect();
        if failed.is_empty() {
            Ok(parsed)
        } else {
            Err(failed)
        }
    }
}

/// The follow-up message after a rejected reply: every problem, then what to do.
/// `{"value": schema}` as an object schema, with the schema's definitions moved to the top
/// (where its `$ref`s point).
fn wrap_in_object(mut schema: Value) -> Value {
    let defs = schema.as_object_mut().and_then(|map| map.remove("$defs"));
    let description = schema.get("description").cloned();
    let mut wrapper = serde_json::json!({
        "type": "object",
        "properties": { "value": schema },
        "required": ["value"],
        "additionalProperties": false,
    });
    if let Some(map) = wrapper.as_object_mut() {
        if let Some(defs) = defs {
            map.insert("$defs".into(), defs);
        }
        if let Some(description) = description {
            map.insert("description".into(), description);
        }
    }
    wrapper
}

fn correction(format: &str, problems: &[String]) -> String {
    let mut text = String::from("Your reply was not accepted:\n");
    for problem in problems {
        text.push_str("- ");
        text.push_str(problem);
        text.push('\n');
    }
    text.push_str(&format!(
        "Reply again with only a JSON value that matches the schema `{format}`, with these problems fixed."
    ));
    text
}

/// Parses a reply as JSON, tolerating a Markdown code fence around it.
fn parse_json(content: &str) -> std::result::Result<Value, String> {
    let text = content.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|rest| rest.trim_end().strip_suffix("```"))
        .unwrap_or(text)
        .trim();
    if text.is_empty() {
        return Err("the reply is empty; it must be a JSON value".into());
    }
    serde_json::from_str(text).map_err(|e| format!("the reply is not valid JSON: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parse_json_accepts_fenced_json_and_names_the_problem() {
        assert_eq!(parse_json("```json\n{\"x\": 1}\n```"), Ok(json!({"x": 1})));
        assert_eq!(parse_json(" {\"x\": 2} "), Ok(json!({"x": 2})));
        let err = parse_json("{\"x\": ").expect_err("truncated");
        assert!(err.starts_with("the reply is not valid JSON: EOF"), "{err}");
        assert_eq!(
            parse_json("  ").expect_err("empty"),
            "the reply is empty; it must be a JSON value"
        );
    }

    #[test]
    fn the_correction_lists_every_problem() {
        assert_eq!(
            correction("City", &["`$`: a".into(), "`$.b`: c".into()]),
            "Your reply was not accepted:\n- `$`: a\n- `$.b`: c\n\
             Reply again with only a JSON value that matches the schema `City`, with these problems fixed."
        );
    }
}
