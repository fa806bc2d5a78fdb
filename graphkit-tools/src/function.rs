//! Tools made from async functions: [`tool_fn`] and [`tool_fn_with_runtime`].

use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use graphkit::State;
use graphkit_llm::schema_for;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ToolError;
use crate::tool::{Tool, ToolOutput, ToolRuntime, parse_args};

/// A tool made from an async function of a typed arguments struct.
///
/// Made with [`tool_fn`] or [`tool_fn_with_runtime`]; the argument schema comes from the
/// struct's `JsonSchema` derive (doc comments become field descriptions).
pub struct FnTool<A, F, M> {
    name: String,
    description: String,
    parameters: Value,
    f: F,
    _marker: PhantomData<fn(A) -> M>,
}

impl<A, F, M> std::fmt::Debug for FnTool<A, F, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<A: JsonSchema, F, M> FnTool<A, F, M> {
    fn make(name: impl Into<String>, description: impl Into<String>, f: F) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: schema_for::<A>(),
            f,
            _marker: PhantomData,
        }
    }
}

#[doc(hidden)]
pub struct ArgsOnly;
#[doc(hidden)]
pub struct WithRuntime;

/// Makes a tool from an async fn of its typed arguments.
///
/// ```
/// use graphkit_tools::{AgentState, Tool, ToolError, ToolRuntime, tool_fn};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     /// First number.
///     a: i64,
///     /// Second number.
///     b: i64,
/// }
///
/// let add = tool_fn("add", "Adds two integers.", |args: AddArgs| async move {
///     Ok((args.a + args.b).to_string())
/// });
/// assert_eq!(Tool::<AgentState>::parameters(&add)["required"], serde_json::json!(["a", "b"]));
/// ```
pub fn tool_fn<A, F, Fut, O>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<A, F, ArgsOnly>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    FnTool::make(name, description, f)
}

/// Makes a tool from an async fn of its typed arguments and the [`ToolRuntime`] (state
/// snapshot, call id, config, store, stream writer). Such a tool may return a state update.
///
/// ```
/// use graphkit_tools::{AgentState, ToolError, ToolOutput, ToolRuntime, tool_fn_with_runtime};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Deserialize, JsonSchema)]
/// struct NoArgs {}
///
/// let count = tool_fn_with_runtime("count_messages", "Counts the messages so far.",
///     |_: NoArgs, rt: ToolRuntime<AgentState>| async move {
///         Ok(ToolOutput::text(rt.state().messages.len().to_string()))
///     });
/// ```
pub fn tool_fn_with_runtime<S, A, F, Fut, O>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FnTool<A, F, WithRuntime>
where
    S: State,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolRuntime<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput<S>>,
{
    FnTool::make(name, description, f)
}

#[async_trait]
impl<S, A, F, Fut, O> Tool<S> for FnTool<A, F, ArgsOnly>
where
    S: State,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput<S>>,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(
        &self,
        args: Value,
        _runtime: ToolRuntime<S>,
    ) -> Result<ToolOutput<S>, ToolError> {
        let args = parse_args::<A>(&self.name, args)?;
        (self.f)(args).await.map(Into::into)
    }
}

#[async_trait]
impl<S, A, F, Fut, O> Tool<S> for FnTool<A, F, WithRuntime>
where
    S: State,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A, ToolRuntime<S>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
    O: Into<ToolOutput<S>>,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(&self, args: Value, runtime: ToolRuntime<S>) -> Result<ToolOutput<S>, ToolError> {
        let args = parse_args::<A>(&self.name, args)?;
        (self.f)(args, runtime).await.map(Into::into)
    }
}
