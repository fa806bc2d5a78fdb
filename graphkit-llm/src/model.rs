//! The [`ChatModel`] trait, the wrapper that binds tools and options to a model, and the
//! model calls of a [`StructuredModel`].

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use crate::error::Result;
use crate::graph::GraphForwarder;
use crate::message::{AssistantMessage, Message};
use crate::request::{CallOptions, ChatRequest, ToolSpec};
use crate::stream::ChatStream;
use crate::structured::StructuredModel;
use crate::trace::{call_span, record_call};

/// A chat model: a conversation in, an assistant message out.
///
/// Implementors provide [`chat`](Self::chat) (and [`chat_stream`](Self::chat_stream) when
/// the backend can stream); callers use [`invoke`](Self::invoke) and
/// [`stream`](Self::stream), which add tracing (tokens and latency per call) and forward
/// output to a graph run's `messages` stream when called inside a node.
///
/// `Arc<dyn ChatModel>` is a `ChatModel` too, so models can be shared and chosen at run
/// time ([`init_chat_model`](crate::init_chat_model) returns one).
///
/// ```
/// use graphkit_llm::{ChatModel, Message, ScriptedModel};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let model = ScriptedModel::new(["4"]);
/// let reply = model.invoke(&[Message::user("What is 2 + 2?")]).await?;
/// assert_eq!(reply.content, "4");
/// # Ok::<(), graphkit_llm::LlmError>(()) }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a chat model",
    label = "not a `ChatModel`",
    note = "a chat model is a provider (`OpenAiModel`, `AnthropicModel`, `OllamaModel`, or `init_chat_model(\"provider:model\")`), a test double (`ScriptedModel`, `FunctionModel`), an `Arc` of one, or a type of yours that implements `ChatModel`",
    note = "a `&M` is not a model: pass the model itself or an `Arc` (`Arc<dyn ChatModel>` is a model)"
)]
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// The model's name, as sent to the provider (used in traces and price lookups).
    fn model_name(&self) -> &str;

    /// Sends one request and returns the whole reply. Prefer [`invoke`](Self::invoke) as a caller.
    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage>;

    /// Sends one request and streams the reply. The default calls [`chat`](Self::chat) and
    /// replays its reply as chunks. Prefer [`stream`](Self::stream) as a caller.
    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        Ok(ChatStream::from_message(self.chat(request).await?))
    }

    /// Calls the model on a conversation.
    async fn invoke(&self, messages: &[Message]) -> Result<AssistantMessage> {
        self.invoke_request(ChatRequest::new(messages)).await
    }

    /// Calls the model with a full request (tools, options, response format).
    async fn invoke_request(&self, request: ChatRequest) -> Result<AssistantMessage> {
        let span = call_span(self.model_name(), false);
        let started = Instant::now();
        let result = self.chat(request).instrument(span.clone()).await;
        record_call(
            &span,
            self.model_name(),
            result.as_ref().map(|m| m.usage),
            started,
        );
        if let (Ok(message), Some(forwarder)) = (&result, GraphForwarder::current()) {
            forwarder.message(message);
        }
        result
    }

    /// Streams the model's reply to a conversation.
    async fn stream(&self, messages: &[Message]) -> Result<ChatStream> {
        self.stream_request(ChatRequest::new(messages)).await
    }

    /// Streams the reply to a full request.
    async fn stream_request(&self, request: ChatRequest) -> Result<ChatStream> {
        let span = call_span(self.model_name(), true);
        let started = Instant::now();
        let model = self.model_name().to_owned();
        match self.chat_stream(request).instrument(span.clone()).await {
            Ok(stream) => Ok(stream
                .forward_to(GraphForwarder::current())
                .on_finish(move |outcome, started| record_call(&span, &model, outcome, started))),
            Err(err) => {
                record_call(&span, &model, Err(&err), started);
                Err(err)
            }
        }
    }

    /// This model with tools bound: every call offers them.
    ///
    /// ```
    /// use graphkit_llm::{ChatModel, ScriptedModel, ToolSpec};
    /// use serde_json::json;
    ///
    /// let model = ScriptedModel::new(["ok"])
    ///     .bind_tools([ToolSpec::new("now", "The current time.", json!({"type": "object"}))]);
    /// assert_eq!(model.tools().len(), 1);
    /// ```
    fn bind_tools(self, tools: impl IntoIterator<Item = ToolSpec>) -> BoundModel<Self>
    where
        Self: Sized,
    {
        BoundModel::new(self).bind_tools(tools)
    }

    /// This model with default call options (temperature, max tokens, stop, tool choice).
    fn with_options(self, options: CallOptions) -> BoundModel<Self>
    where
        Self: Sized,
    {
        BoundModel::new(self).with_options(options)
    }

    /// This model answering with a `T`: the schema of `T` goes to the provider's native
    /// structured-output mechanism, and the reply is checked against that schema, parsed,
    /// and run through any validators, retrying with the problems shown to the model
    /// ([`DEFAULT_RETRIES`](crate::DEFAULT_RETRIES) times unless
    /// [`retries`](StructuredModel::retries) says otherwise).
    fn with_structured_output<T: JsonSchema + DeserializeOwned>(self) -> StructuredModel<Self, T>
    where
        Self: Sized,
    {
        StructuredModel::new(self)
    }
}

#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    fn model_name(&self) -> &str {
        (**self).model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        (**self).chat(request).await
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        (**self).chat_stream(request).await
    }
}

/// The model a node takes as an argument, in a graph whose context type is
/// `dyn ChatModel` (`StateGraph<S, dyn ChatModel>`, or a context that
/// `Provides<dyn ChatModel>`): the graph's (or the run's) model, given with
/// `graph.compile()?.with_shared_context(model)` where `model: Arc<dyn ChatModel>`. It is a
/// [`ChatModel`] itself.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{END, START, State, StateGraph};
/// use graphkit_llm::{ChatModel, LlmError, Message, Model, ScriptedModel};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// # struct Chat { answer: String }
///
/// async fn ask(_: Arc<Chat>, model: Model) -> Result<ChatUpdate, LlmError> {
///     let reply = model.invoke(&[Message::user("2 + 2?")]).await?;
///     Ok(ChatUpdate::new().answer(reply.content))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut graph = StateGraph::<Chat, dyn ChatModel>::new();
/// graph.add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END);
/// let model: Arc<dyn ChatModel> = Arc::new(ScriptedModel::new(["4"]));
/// let graph = graph.compile()?.with_shared_context(model);
/// assert_eq!(graph.invoke(ChatUpdate::new()).await?.into_state().answer, "4");
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub type Model = graphkit::RunContext<dyn ChatModel>;

/// A model read from the graph's or the run's context is a model: a node taking
/// `RunContext<M>` (or `RunContext<dyn ChatModel>`) calls it, or wraps it
/// (`model.with_structured_output::<T>()`, `model.bind_tools(..)`), without cloning or
/// naming the `Arc` inside.
#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for graphkit::RunContext<M> {
    fn model_name(&self) -> &str {
        self.0.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        self.0.chat(request).await
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        self.0.chat_stream(request).await
    }
}

/// A model with tools and default options bound to it (see [`ChatModel::bind_tools`]).
///
/// Tools given in a request are offered after the bound ones; options given in a
/// request win over the bound ones.
#[derive(Debug, Clone)]
pub struct BoundModel<M> {
    model: M,
    tools: Vec<ToolSpec>,
    options: CallOptions,
}

impl<M> BoundModel<M> {
    fn new(model: M) -> Self {
        Self {
            model,
            tools: Vec::new(),
            options: CallOptions::default(),
        }
    }

    /// Binds more tools.
    #[must_use]
    pub fn bind_tools(mut self, tools: impl IntoIterator<Item = ToolSpec>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the default options.
    #[must_use]
    pub fn with_options(mut self, options: CallOptions) -> Self {
        self.options = options;
        self
    }

    /// The bound tools.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The wrapped model.
    pub fn inner(&self) -> &M {
        &self.model
    }

    fn complete(&self, mut request: ChatRequest) -> ChatRequest {
        let mut tools = self.tools.clone();
        tools.append(&mut request.tools);
        request.tools = tools;
        request.options = request.options.or(&self.options);
        request
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for BoundModel<M> {
    fn model_name(&self) -> &str {
        self.model.model_name()
    }

    async fn chat(&self, request: ChatRequest) -> Result<AssistantMessage> {
        self.model.chat(self.complete(request)).await
    }

    async fn chat_stream(&self, request: ChatRequest) -> Result<ChatStream> {
        self.model.chat_stream(self.complete(request)).await
    }
}

/// The model calls of a structured model; the checks and retries are in `structured.rs`,
/// which does not know [`ChatModel`] (it is below this module).
impl<M: ChatModel, T: JsonSchema + DeserializeOwned> StructuredModel<M, T> {
    /// Asks the model and returns its reply as a `T`, retrying as described on the type.
    pub async fn invoke(&self, messages: &[Message]) -> Result<T> {
        self.invoke_with_raw(messages).await.map(|(value, _)| value)
    }

    /// Like [`invoke`](Self::invoke), also returning the accepted raw reply (for usage and
    /// tracing).
    pub async fn invoke_with_raw(&self, messages: &[Message]) -> Result<(T, AssistantMessage)> {
        let model = self.model();
        self.ask_until_accepted(messages, model.model_name(), |request| {
            model.invoke_request(request)
        })
        .await
    }
}

impl std::fmt::Debug for dyn ChatModel + '_ {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatModel")
            .field("model", &self.model_name())
            .finish()
    }
}
