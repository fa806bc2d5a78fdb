//! [`StandInModel`]: an offline stand-in (a test double) that answers each request by
//! what it asks for, so a graph runs along the same paths it takes with a real model.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::error::{LlmError, Result};
use crate::message::{AssistantMessage, new_message_id};
use crate::model::ChatModel;
use crate::request::{ChatRequest, ResponseFormat, ToolChoice, ToolSpec};
use crate::schema::validate;

type StructuredFn = dyn Fn(&ChatRequest) -> std::result::Result<Value, String> + Send + Sync;
type ToolsFn = dyn Fn(&ChatRequest, &[ToolSpec]) -> AssistantMessage + Send + Sync;
type TextFn = dyn Fn(&ChatRequest) -> String + Send + Sync;

/// **Offline stand-in (a test double), not a language model.** A deterministic program
/// that plays a model's part in a graph so the graph runs with no key and no network,
/// and tests see the same requests and replies a real run would.
///
/// Each request goes to the handler for what it asks for:
///
/// - a **structured-output** request (it has a [`ResponseFormat`]) goes to the handler
///   registered for that format's name ([`on_structured`](Self::on_structured) registers
///   one by type). The value is sent back as JSON text, so the caller's
///   [`StructuredModel`](crate::StructuredModel) parses and validates it exactly as it
///   would a real reply — a value its validators reject is retried and fails like a weak
///   model's would;
/// - a request **offering tools** goes to the [`on_tools`](Self::on_tools) policy, which
///   answers with real tool calls (or text). Each call must name an offered tool and its
///   arguments must match that tool's JSON Schema, and a `tool_choice` of `Required` or a
///   named tool must be obeyed; otherwise the call fails with [`LlmError::StandIn`], so
///   a stand-in cannot take a path a real model could not;
/// - anything else (and tool requests when no policy is set) goes to
///   [`on_text`](Self::on_text).
///
/// A request with no matching handler fails with [`LlmError::StandIn`] naming what to
/// add. The stand-in records every request ([`requests`](Self::requests)); clones share
/// the record. Handlers see the whole [`ChatRequest`]; its helpers
/// ([`last_user_text`](ChatRequest::last_user_text),
/// [`latest_tool_results`](ChatRequest::latest_tool_results),
/// [`tool_names`](ChatRequest::tool_names), ...) read what a policy usually needs.
///
/// ```
/// use graphkit_llm::{ChatModel, ChatRequest, Message, StandInModel, ToolCall, ToolSpec};
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use serde_json::json;
///
/// #[derive(Debug, Serialize, Deserialize, JsonSchema)]
/// struct Plan { steps: Vec<String> }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = StandInModel::new("planner-offline")
///     .on_structured(|req: &ChatRequest| Plan {
///         steps: req.last_user_text().split(", ").map(str::to_owned).collect(),
///     })
///     .on_tools(|req, _tools| match req.latest_tool_results().next() {
///         None => ToolCall::new("search", json!({"query": req.last_user_text()})).into(),
///         Some(result) => format!("Found: {}", result.content).into(),
///     })
///     .on_text(|req| format!("(offline) {}", req.last_user_text()));
///
/// let plan = model.clone().with_structured_output::<Plan>().invoke(&[Message::user("read, write")]).await?;
/// assert_eq!(plan.steps, ["read", "write"]);
///
/// let search = ToolSpec::new("search", "Search.", json!({"type": "object",
///     "properties": {"query": {"type": "string"}}, "required": ["query"]}));
/// let agent = model.clone().bind_tools([search]);
/// let turn = agent.invoke(&[Message::user("rust")]).await?;
/// assert_eq!(turn.tool_calls[0].arguments, json!({"query": "rust"}));
///
/// assert_eq!(model.invoke(&[Message::user("hi")]).await?.content, "(offline) hi");
/// assert_eq!(model.requests().len(), 3);
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct StandInModel {
    name: String,
    structured: Vec<(String, Arc<StructuredFn>)>,
    tools: Option<Arc<ToolsFn>>,
    text: Option<Arc<TextFn>>,
    delay: Duration,
    requests: Arc<Mutex<Vec<ChatRequest>>>,
}

impl std::fmt::Debug for StandInModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandInModel")
            .field("name", &self.name)
            .field("formats", &self.formats())
            .field("tools", &self.tools.is_some())
            .field("text", &self.text.is_some())
            .finish_non_exhaustive()
    }
}

impl StandInModel {
    /// A stand-in with no handlers, reporting `name` as its
    /// [`model_name`](ChatModel::model_name).
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            structured: Vec::new(),
            tools: None,
            text: None,
            delay: Duration::ZERO,
            requests: Arc::default(),
        }
    }

    /// Answers structured-output requests for `T` (by the format name
    /// [`ResponseFormat::for_type::<T>()`](ResponseFormat::for_type) gives, the one
    /// `with_structured_output::<T>()` sends) with `answer(request)`.
    #[must_use]
    pub fn on_structured<T: Serialize + JsonSchema>(
        self,
        answer: impl Fn(&ChatRequest) -> T + Send + Sync + 'static,
    ) -> Self {
        self.try_on_structured(move |request| Ok::<T, String>(answer(request)))
    }

    /// Like [`on_structured`](Self::on_structured), for a handler that can fail: an
    /// `Err(reason)` fails the call with [`LlmError::StandIn`] carrying `reason` (use it
    /// when the request lacks what the handler reads, as a malformed prompt would leave a
    /// model with nothing to answer).
    ///
    /// ```
    /// use graphkit_llm::{ChatModel, ChatRequest, Message, StandInModel};
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    /// struct Count { n: usize }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let model = StandInModel::new("counter").try_on_structured(|req: &ChatRequest| {
    ///     let text = req.last_user_text();
    ///     let n = text.strip_prefix("count: ").ok_or("no `count:` line")?;
    ///     Ok::<_, &str>(Count { n: n.split(',').count() })
    /// });
    /// let counted = model.clone().with_structured_output::<Count>();
    /// assert_eq!(counted.invoke(&[Message::user("count: a,b")]).await?.n, 2);
    /// let err = counted.retries(0).invoke(&[Message::user("hello")]).await.unwrap_err();
    /// assert!(err.to_string().contains("no `count:` line"), "{err}");
    /// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
    /// ```
    #[must_use]
    pub fn try_on_structured<T: Serialize + JsonSchema, E: std::fmt::Display>(
        self,
        answer: impl Fn(&ChatRequest) -> std::result::Result<T, E> + Send + Sync + 'static,
    ) -> Self {
        let name = ResponseFormat::for_type::<T>().name;
        self.on_structured_json(name, move |request| {
            let value = answer(request).map_err(|e| e.to_string())?;
            serde_json::to_value(value).map_err(|e| e.to_string())
        })
    }

    /// Answers structured-output requests whose format is named `format` with the JSON
    /// `answer(request)` returns (`Err(reason)` fails the call with [`LlmError::StandIn`]).
    /// Use it when the stand-in does not have the Rust type, or to send JSON the type
    /// would never serialize to.
    #[must_use]
    pub fn on_structured_json(
        mut self,
        format: impl Into<String>,
        answer: impl Fn(&ChatRequest) -> std::result::Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        let format = format.into();
        self.structured.retain(|(name, _)| *name != format);
        self.structured.push((format, Arc::new(answer)));
        self
    }

    /// Decides the turn of a request that offers tools: `policy(request, tools)` returns
    /// the reply — tool calls (`ToolCall` and `Vec<ToolCall>` convert into one with
    /// `.into()`), text (so do `&str` and `String`), or an [`AssistantMessage`] with both.
    #[must_use]
    pub fn on_tools(
        mut self,
        policy: impl Fn(&ChatRequest, &[ToolSpec]) -> AssistantMessage + Send + Sync + 'static,
    ) -> Self {
        self.tools = Some(Arc::new(policy));
        self
    }

    /// Answers free-text requests (and tool requests when no [`on_tools`](Self::on_tools)
    /// policy is set) with `answer(request)`.
    #[must_use]
    pub fn on_text<S: Into<String>>(
        mut self,
        answer: impl Fn(&ChatRequest) -> S + Send + Sync + 'static,
    ) -> Self {
        self.text = Some(Arc::new(move |request| answer(request).into()));
        self
    }

    /// Waits this long before every reply, as a model would (for demos of progress and
    /// for tests that stop a run midway).
    #[must_use]
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The structured-output format names this stand-in answers.
    pub fn formats(&self) -> Vec<&str> {
        self.structured
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }

    fn fail(&self, problem: String) -> LlmError {
        LlmError::StandIn {
            model: self.name.clone(),
            problem,
        }
    }

    fn answer(&self, request: &ChatRequest) -> Result<AssistantMessage> {
        if let Some(format) = &request.response_format {
            let Some((_, answer)) = self
                .structured
                .iter()
                .find(|(name, _)| *name == format.name)
            else {
                return Err(self.fail(format!(
                    "no handler for the structured output `{}`; add `.on_structured::<{}>(..)` \
                     (it answers {:?})",
                    format.name,
                    format.name,
                    self.formats()
                )));
            };
            let value = answer(request).map_err(|reason| {
                self.fail(format!(
                    "the handler for `{}` failed: {reason}",
                    format.name
                ))
            })?;
            return Ok(AssistantMessage::text(value.to_string()));
        }
        let choice = request.options.tool_choice.as_ref();
        let tools_usable = !request.tools.is_empty() && choice != Some(&ToolChoice::None);
        if tools_usable && let Some(policy) = &self.tools {
            let reply = policy(request, &request.tools);
            self.check_tool_turn(request, &reply)?;
            return Ok(reply);
        }
        if tools_usable && matches!(choice, Some(ToolChoice::Required | ToolChoice::Tool(_))) {
            return Err(self.fail(
                "the request requires a tool call but no tool policy is set; add `.on_tools(..)`"
                    .into(),
            ));
        }
        match &self.text {
            Some(answer) => Ok(AssistantMessage::text(answer(request))),
            None => Err(self.fail(format!(
                "no handler for a free-text request{}; add `.on_text(..)`",
                if request.tools.is_empty() {
                    String::new()
                } else {
                    " (tools are offered but no `.on_tools(..)` policy is set)".into()
                }
            ))),
        }
    }

    /// A tool turn a real model could have produced: offered tools, valid arguments, the
    /// tool choice obeyed.
    fn check_tool_turn(&self, request: &ChatRequest, reply: &AssistantMessage) -> Result<()> {
        for call in &reply.tool_calls {
            let Some(tool) = request.tools.iter().find(|t| t.name == call.name) else {
                return Err(self.fail(format!(
                    "the tool policy called `{}`, which the request does not offer (it offers {:?})",
                    call.name,
                    request.tool_names().collect::<Vec<_>>()
                )));
            };
            if let Err(violations) = validate(&call.arguments, &tool.parameters) {
                let problems: Vec<String> = violations.iter().map(ToString::to_string).collect();
                return Err(self.fail(format!(
                    "the tool policy called `{}` with arguments that do not match its schema: {}",
                    call.name,
                    problems.join("; ")
                )));
            }
        }
        match request.options.tool_choice.as_ref() {
            Some(ToolChoice::Required) if reply.tool_calls.is_empty() => Err(self.fail(
                "the request requires a tool call (tool_choice Required) but the policy answered with text".into(),
            )),
            Some(ToolChoice::Tool(name))
                if reply.tool_calls.is_empty() || reply.tool_calls.iter().any(|c| c.name != *name) =>
            {
                Err(self.fail(format!(
                    "the request requires a call to `{name}` (tool_choice) but the policy answered otherwise"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl ChatModel for StandInModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let mut reply = self.answer(&request)?;
        reply.id = new_message_id();
        reply.model = Some(self.name.clone());
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Message, ToolCall};
    use crate::request::CallOptions;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct Plan {
        steps: Vec<String>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    struct Verdict {
        ok: bool,
    }

    fn search_tool() -> ToolSpec {
        ToolSpec::new(
            "search",
            "Search.",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        )
    }

    fn stand_in() -> StandInModel {
        StandInModel::new("test-stand-in")
            .on_structured(|_| Plan {
                steps: vec!["a".into()],
            })
            .on_structured(|_| Verdict { ok: true })
            .on_tools(|req, tools| {
                if req.latest_tool_results().next().is_some() {
                    AssistantMessage::text("done")
                } else {
                    ToolCall::new(&tools[0].name, json!({"query": req.last_user_text()})).into()
                }
            })
            .on_text(|req| format!("text for {}", req.last_user_text()))
    }

    #[tokio::test]
    async fn each_request_kind_goes_to_its_handler() {
        let model = stand_in();
        let plan = model
            .clone()
            .with_structured_output::<Plan>()
            .invoke(&[Message::user("p")])
            .await
            .unwrap();
        assert_eq!(
            plan,
            Plan {
                steps: vec!["a".into()]
            }
        );
        let verdict = model
            .clone()
            .with_structured_output::<Verdict>()
            .invoke(&[Message::user("v")])
            .await
            .unwrap();
        assert_eq!(verdict, Verdict { ok: true });

        let agent = model.clone().bind_tools([search_tool()]);
        let turn = agent.invoke(&[Message::user("rust")]).await.unwrap();
        assert_eq!(turn.tool_calls.len(), 1);
        assert_eq!(turn.tool_calls[0].arguments, json!({"query": "rust"}));
        let history = vec![
            Message::user("rust"),
            Message::from(turn.clone()),
            Message::tool_result(&turn.tool_calls[0].id, "results"),
        ];
        assert_eq!(agent.invoke(&history).await.unwrap().content, "done");

        let text = model.invoke(&[Message::user("hello")]).await.unwrap();
        assert_eq!(text.content, "text for hello");
        assert_eq!(text.model.as_deref(), Some("test-stand-in"));
        assert_eq!(model.requests().len(), 5);
    }

    #[tokio::test]
    async fn a_structured_value_goes_through_the_real_validation_and_retries() {
        let model = stand_in();
        let err = model
            .clone()
            .with_structured_output::<Plan>()
            .retries(2)
            .validate(|p| crate::checks::count_range("steps", &p.steps, 2..))
            .invoke(&[Message::user("plan")])
            .await
            .expect_err("one step is never enough");
        match err {
            LlmError::StructuredOutput {
                attempts,
                error,
                raw,
                ..
            } => {
                assert_eq!(attempts, 3);
                assert_eq!(error, "`steps` has 1 item; it must have at least 2 items");
                assert_eq!(raw, r#"{"steps":["a"]}"#);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(model.requests().len(), 3);

        let broken =
            StandInModel::new("broken").on_structured_json("Plan", |_| Ok(json!({"steps": "a"})));
        let err = broken
            .with_structured_output::<Plan>()
            .retries(0)
            .invoke(&[Message::user("p")])
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("`$.steps`: expected array, found string \"a\""),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_fallible_handler_answers_or_fails_with_its_reason() {
        let model = StandInModel::new("picky").try_on_structured(|req: &ChatRequest| {
            let text = req.last_user_text();
            if text.is_empty() {
                Err("the prompt has no steps")
            } else {
                Ok(Plan {
                    steps: text.split(' ').map(str::to_owned).collect(),
                })
            }
        });
        assert_eq!(model.formats(), ["Plan"]);
        let plan = model
            .clone()
            .with_structured_output::<Plan>()
            .invoke(&[Message::user("a b")])
            .await
            .unwrap();
        assert_eq!(plan.steps, ["a", "b"]);
        let err = model
            .clone()
            .with_structured_output::<Plan>()
            .retries(0)
            .invoke(&[Message::user("")])
            .await
            .unwrap_err();
        match err {
            LlmError::StandIn { model, problem } => {
                assert_eq!(model, "picky");
                assert_eq!(
                    problem,
                    "the handler for `Plan` failed: the prompt has no steps"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_request_without_a_handler_names_what_to_add() {
        #[derive(Debug, Deserialize, JsonSchema)]
        struct Unknown {}
        let err = stand_in()
            .with_structured_output::<Unknown>()
            .invoke(&[Message::user("?")])
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("no handler for the structured output `Unknown`; add `.on_structured::<Unknown>(..)`"),
            "{err}"
        );
        let err = StandInModel::new("mute")
            .invoke(&[Message::user("?")])
            .await
            .unwrap_err();
        assert!(err.to_string().contains("add `.on_text(..)`"), "{err}");
    }

    #[tokio::test]
    async fn tool_calls_must_be_offered_valid_and_obey_the_tool_choice() {
        let calls_missing =
            StandInModel::new("s").on_tools(|_, _| ToolCall::new("fetch", json!({})).into());
        let err = calls_missing
            .bind_tools([search_tool()])
            .invoke(&[Message::user("x")])
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains(
                "called `fetch`, which the request does not offer (it offers [\"search\"])"
            ),
            "{err}"
        );

        let bad_args =
            StandInModel::new("s").on_tools(|_, _| ToolCall::new("search", json!({"q": 1})).into());
        let err = bad_args
            .bind_tools([search_tool()])
            .invoke(&[Message::user("x")])
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("missing required property `query`"),
            "{err}"
        );

        let texter = StandInModel::new("s").on_tools(|_, _| "no tools for me".into());
        let forced = texter
            .clone()
            .bind_tools([search_tool()])
            .with_options(CallOptions::new().tool_choice(ToolChoice::Required));
        let err = forced.invoke(&[Message::user("x")]).await.unwrap_err();
        assert!(err.to_string().contains("requires a tool call"), "{err}");

        let refused = texter
            .bind_tools([search_tool()])
            .with_options(CallOptions::new().tool_choice(ToolChoice::None));
        let err = refused.invoke(&[Message::user("x")]).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("no handler for a free-text request (tools are offered"),
            "{err}"
        );
    }
}
