//! The [`Tool`] trait, what a tool returns ([`ToolOutput`]) and what it can see
//! ([`ToolRuntime`]).

use std::sync::Arc;

use async_trait::async_trait;
use graphkit::store::Store;
use graphkit::{Command, NodeContext, RunConfig, State, StreamWriter};
use graphkit_llm::{Message, ToolMessage, ToolSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;

/// A tool a model can call: a name, a description, the JSON Schema of its arguments and
/// an async call.
///
/// `S` is the graph's state type: a tool sees a snapshot of it through its
/// [`ToolRuntime`] and may return a [`Command`] that updates it. Tools that never touch
/// the state implement `Tool<S>` for every `S`.
///
/// Most tools are made from an async fn with [`tool_fn`](crate::tool_fn) or
/// [`tool_fn_with_runtime`](crate::tool_fn_with_runtime); implement the trait by hand
/// for tools whose schema is only known at run time (MCP tools are).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool for a `{S}` graph",
    label = "not a `Tool<{S}>`",
    note = "make a tool from an async fn with `tool_fn(name, description, |args: Args| async move {{ .. }})`, where `Args` derives `Deserialize` and `JsonSchema` and the closure returns `Result<impl Into<ToolOutput<S>>, ToolError>`; `tool_fn_with_runtime` also passes the `ToolRuntime<S>`",
    note = "a tool that reads or updates the state is a tool of that state only: `Tool<{S}>` for the graph's `{S}`"
)]
#[async_trait]
pub trait Tool<S: State>: Send + Sync {
    /// The name the model calls it by (`[A-Za-z0-9_-]`, unique within a tool node).
    fn name(&self) -> &str;

    /// What the tool does, written for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Runs the tool with the model's arguments.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] when `args` does not match the schema; any other
    /// [`ToolError`] when the tool fails. The [`ToolNode`](crate::ToolNode) shows both to
    /// the model by default.
    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError>;

    /// The tool as offered to a chat model.
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name(), self.description(), self.parameters())
    }
}

/// A shared, type-erased tool: what a [`ToolNode`](crate::ToolNode) holds.
pub type DynTool<S> = Arc<dyn Tool<S>>;

/// A shared tool is a tool (so a [`DynTool`] goes wherever a tool does).
#[async_trait]
impl<S: State, T: Tool<S> + ?Sized> Tool<S> for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn parameters(&self) -> Value {
        (**self).parameters()
    }

    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> {
        (**self).call(args, runtime).await
    }

    fn spec(&self) -> ToolSpec {
        (**self).spec()
    }
}

/// Tools as a [`ToolNode`](crate::ToolNode) or an agent takes them, without casts: a tuple
/// of tools of different types (up to 12; `(search,)` for one), or a list of shared tools
/// (`Vec<DynTool<S>>`, an array of them, what an MCP client returns).
///
/// ```
/// use graphkit_tools::{AgentState, ToolNode, tool_fn};
/// # use schemars::JsonSchema;
/// # use serde::Deserialize;
/// # #[derive(Deserialize, JsonSchema)]
/// # struct Query { q: String }
/// let search = tool_fn("search", "Searches.", |args: Query| async move { Ok(args.q) });
/// let shout = tool_fn("shout", "Shouts.", |args: Query| async move { Ok(args.q.to_uppercase()) });
/// let node = ToolNode::<AgentState>::new((search, shout));
/// assert_eq!(node.tools().len(), 2);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a set of tools for a `{S}` graph",
    label = "not tools",
    note = "pass a tuple of tools (`(search, fetch)`, or `(search,)` for one) or a `Vec<DynTool<{S}>>`; each tool implements `Tool<{S}>` (`tool_fn(..)` makes one from an async fn)"
)]
pub trait IntoTools<S: State> {
    /// The tools, shared.
    fn into_tools(self) -> Vec<DynTool<S>>;
}

impl<S: State> IntoTools<S> for Vec<DynTool<S>> {
    fn into_tools(self) -> Vec<DynTool<S>> {
        self
    }
}

impl<S: State, const N: usize> IntoTools<S> for [DynTool<S>; N] {
    fn into_tools(self) -> Vec<DynTool<S>> {
        self.into()
    }
}

impl<S: State> IntoTools<S> for () {
    fn into_tools(self) -> Vec<DynTool<S>> {
        Vec::new()
    }
}

macro_rules! tuple_into_tools {
    ($($t:ident),+) => {
        impl<S: State, $($t: Tool<S> + 'static),+> IntoTools<S> for ($($t,)+) {
            #[allow(non_snake_case)]
            fn into_tools(self) -> Vec<DynTool<S>> {
                let ($($t,)+) = self;
                vec![$(Arc::new($t) as DynTool<S>),+]
            }
        }
    };
}

tuple_into_tools!(A);
tuple_into_tools!(A, B);
tuple_into_tools!(A, B, C);
tuple_into_tools!(A, B, C, D);
tuple_into_tools!(A, B, C, D, E);
tuple_into_tools!(A, B, C, D, E, F);
tuple_into_tools!(A, B, C, D, E, F, G);
tuple_into_tools!(A, B, C, D, E, F, G, H);
tuple_into_tools!(A, B, C, D, E, F, G, H, I);
tuple_into_tools!(A, B, C, D, E, F, G, H, I, J);
tuple_into_tools!(A, B, C, D, E, F, G, H, I, J, K);
tuple_into_tools!(A, B, C, D, E, F, G, H, I, J, K, L);

/// What a tool returns.
///
/// Plain text is the common case (`String` and `&str` convert into it). A tool that changes
/// the graph state returns an [`Update`](Self::Update) (the tool node answers the call with
/// `reply` after applying the update) or, for full control, a [`Command`].
pub enum ToolOutput<S: State> {
    /// Text for the model; the tool node answers the call with it.
    Content(String),
    /// A state update, applied through the reducers, followed by a tool message with
    /// `reply` that answers the call.
    Update {
        /// The update of the graph state.
        update: S::Update,
        /// The answer the model reads.
        reply: String,
    },
    /// Full control, as in LangGraph: the command's update is applied and its `goto`
    /// routes. The tool node adds **no** tool message: the update must answer the call
    /// itself (put [`ToolRuntime::reply`] into the messages), or deliberately not, for
    /// instance when it replaces the whole conversation.
    Command(Command<S>),
}

impl<S: State> ToolOutput<S> {
    /// Text content.
    pub fn text(content: impl Into<String>) -> Self {
        Self::Content(content.into())
    }

    /// A JSON value as content (pretty-printed).
    pub fn json(value: &impl serde::Serialize) -> Self {
        Self::Content(
            serde_json::to_string_pretty(value)
                .unwrap_or_else(|e| format!("(unserializable output: {e})")),
        )
    }

    /// A state update answered with `reply`.
    pub fn update(update: S::Update, reply: impl Into<String>) -> Self {
        Self::Update {
            update,
            reply: reply.into(),
        }
    }
}

impl<S: State> std::fmt::Debug for ToolOutput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Content(c) => f.debug_tuple("Content").field(c).finish(),
            Self::Update { update, reply } => f
                .debug_struct("Update")
                .field("update", update)
                .field("reply", reply)
                .finish(),
            Self::Command(c) => f.debug_tuple("Command").field(c).finish(),
        }
    }
}

impl<S: State> From<String> for ToolOutput<S> {
    fn from(content: String) -> Self {
        Self::Content(content)
    }
}

impl<S: State> From<&str> for ToolOutput<S> {
    fn from(content: &str) -> Self {
        Self::Content(content.to_owned())
    }
}

impl<S: State> From<Command<S>> for ToolOutput<S> {
    fn from(command: Command<S>) -> Self {
        Self::Command(command)
    }
}

/// What a running tool can see: the state snapshot of the step, its own call id, and the
/// run's config, store and stream writer.
///
/// ```
/// use graphkit_tools::{AgentState, ToolRuntime};
///
/// let runtime = ToolRuntime::<AgentState>::detached(AgentState::default(), "call_1", "echo");
/// assert_eq!(runtime.tool_call_id(), "call_1");
/// assert_eq!(runtime.reply("done").text(), "done");
/// ```
pub struct ToolRuntime<S> {
    state: Arc<S>,
    tool_call_id: String,
    tool_name: String,
    config: Arc<RunConfig>,
    store: Option<Arc<dyn Store>>,
    writer: StreamWriter,
    /// The task the tool runs in, when it runs in a graph (graph tools run children in it).
    task: Option<NodeContext>,
}

impl<S> Clone for ToolRuntime<S> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            tool_call_id: self.tool_call_id.clone(),
            tool_name: self.tool_name.clone(),
            config: Arc::clone(&self.config),
            store: self.store.clone(),
            writer: self.writer.clone(),
            task: self.task.clone(),
        }
    }
}

impl<S> std::fmt::Debug for ToolRuntime<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRuntime")
            .field("tool_call_id", &self.tool_call_id)
            .field("tool_name", &self.tool_name)
            .field("store", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl<S> ToolRuntime<S> {
    /// A runtime for a call made inside a graph node.
    pub fn from_node(
        state: Arc<S>,
        ctx: &NodeContext,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
    ) -> Self {
        Self {
            state,
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            config: Arc::new(ctx.config().clone()),
            store: ctx.store().cloned(),
            writer: ctx.writer().clone(),
            task: Some(ctx.clone()),
        }
    }

    /// A runtime outside any graph (tests, scripts): default config, no store, a disabled
    /// stream writer.
    pub fn detached(
        state: S,
        tool_call_id: impl Into<String>,
        tool_name: impl Into<String>,
    ) -> Self {
        Self {
            state: Arc::new(state),
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            config: Arc::new(RunConfig::default()),
            store: None,
            writer: StreamWriter::disabled(),
            task: None,
        }
    }

    /// Uses this store.
    #[must_use]
    pub fn with_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    pub(crate) fn for_call(&self, tool_call_id: &str, tool_name: &str) -> Self {
        Self {
            tool_call_id: tool_call_id.to_owned(),
            tool_name: tool_name.to_owned(),
            ..self.clone()
        }
    }

    /// The state as it was at the start of the step (parallel calls all see the same one).
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The snapshot, shared.
    pub fn state_arc(&self) -> &Arc<S> {
        &self.state
    }

    /// The id of the tool call being answered.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The name of the tool being called.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// The run's config.
    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    /// The run's context value of type `C` (given with `RunConfig::with_context`), if any:
    /// the model, client or settings a tool needs, shared rather than cloned into it.
    pub fn context<C: std::marker::Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        self.config.context::<C>()
    }

    /// The graph's cross-thread store, if it was compiled with one.
    pub fn store(&self) -> Option<&Arc<dyn Store>> {
        self.store.as_ref()
    }

    /// The stream writer (`custom` stream mode) of the tool node.
    pub fn writer(&self) -> &StreamWriter {
        &self.writer
    }

    /// The context of the graph task (node) this call runs in; `None` for a
    /// [`detached`](Self::detached) runtime.
    pub fn task(&self) -> Option<&NodeContext> {
        self.task.as_ref()
    }

    /// A tool message answering this call with `content`: what a tool returning a
    /// [`Command`] puts into its messages update.
    pub fn reply(&self, content: impl Into<String>) -> Message {
        tool_message(&self.tool_call_id, &self.tool_name, content.into(), false)
    }
}

/// A tool message answering `call_id`, naming the tool.
pub(crate) fn tool_message(call_id: &str, name: &str, content: String, is_error: bool) -> Message {
    Message::Tool(ToolMessage {
        id: graphkit_llm::new_message_id(),
        tool_call_id: call_id.to_owned(),
        name: Some(name.to_owned()),
        content,
        is_error,
    })
}

/// Decodes a model's arguments into the typed args struct `A`.
///
/// Accepts what models send in practice: an object, an object encoded as a JSON string,
/// and `null` for tools without arguments.
///
/// # Errors
/// [`ToolError::InvalidArguments`] naming the tool and the serde error.
pub fn parse_args<A: DeserializeOwned>(tool: &str, args: Value) -> Result<A, ToolError> {
    let args = match args {
        Value::String(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other,
    };
    serde_json::from_value(args).map_err(|e| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message: e.to_string(),
    })
}
