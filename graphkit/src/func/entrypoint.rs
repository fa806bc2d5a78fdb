//! Making an entrypoint: a compiled graph of one node that runs the user's function.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::context::{EntrypointContext, TaskContext};
use super::state::{Data, EntrypointState, EntrypointUpdate, Final};
use crate::context::node_context::NodeContext;
use crate::error::{BoxError, BuildError, Error};
use crate::graph::builder::{NodeOptions, StateGraph};
use crate::graph::compiled::CompiledGraph;
use crate::graph::node::{ErasedAsyncNode, NodeOutput, NodeRunner};
use crate::graph::{END, START};

/// A workflow written as an async function: a compiled graph whose one node, named after
/// the entrypoint, runs the function on the input and keeps what it returns and saves.
///
/// Being a [`CompiledGraph`], it has the same surface as any graph: `invoke(input)`,
/// `stream`, `get_state`, resuming with [`Command::resume`](crate::Command::resume),
/// `with_checkpointer`, and adding it to a parent graph with
/// [`StateGraph::add_subgraph_mapped`].
pub type Entrypoint<I, O, P = O> = CompiledGraph<EntrypointState<I, O, P>>;

type Body<I, O, P> = Arc<
    dyn Fn(I, EntrypointContext<P>) -> BoxFuture<'static, Result<Final<O, P>, BoxError>>
        + Send
        + Sync,
>;

/// Makes an entrypoint (LangGraph's `@entrypoint`) from an async function of the input
/// and an [`EntrypointContext`]. What it returns is the invocation's value, and also what
/// the next invocation on the thread reads as [`previous`](EntrypointContext::previous);
/// to save something else, use [`entrypoint_final`].
///
/// Give it a checkpointer with [`CompiledGraph::with_checkpointer`] to make its task calls
/// durable and its interrupts possible.
///
/// ```
/// use graphkit::func::{self, EntrypointContext};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let double = func::entrypoint("double", |n: u32, ctx: EntrypointContext<u32>| async move {
///     let doubled = ctx.task("times_two", move |_| async move { Ok::<_, graphkit::Error>(n * 2) });
///     doubled.await
/// })?;
/// let out = double.invoke(21).await?.into_state().into_output();
/// assert_eq!(out, Some(42));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
///
/// # Errors
/// [`BuildError::InvalidName`] or [`BuildError::ReservedName`] for a name a node cannot have.
pub fn entrypoint<I, O, F, Fut, E>(name: &str, f: F) -> Result<Entrypoint<I, O>, BuildError>
where
    I: Data,
    O: Data,
    F: Fn(I, EntrypointContext<O>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, E>> + Send + 'static,
    E: Into<BoxError>,
{
    let body: Body<I, O, O> = Arc::new(move |input, ctx| {
        let run = f(input, ctx);
        Box::pin(async move {
            let value = run.await.map_err(Into::into)?;
            Ok(Final::new(value.clone(), value))
        })
    });
    compile(name, body)
}

/// Makes an entrypoint whose function returns a [`Final`]: a value for the caller and,
/// apart from it, a value saved for the next invocation on the thread (LangGraph's
/// `entrypoint.final(value=..., save=...)`).
///
/// ```
/// use std::sync::Arc;
/// use graphkit::checkpoint::InMemorySaver;
/// use graphkit::func::{self, EntrypointContext, Final};
/// use graphkit::RunConfig;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // Returns the previous total, saves the new one.
/// let running_total = func::entrypoint_final("total", |n: u64, ctx: EntrypointContext<u64>| async move {
///     let before = ctx.previous().copied().unwrap_or(0);
///     Ok::<_, graphkit::Error>(Final::new(before, before + n))
/// })?
/// .with_checkpointer(Arc::new(InMemorySaver::new()));
/// let thread = RunConfig::new().thread_id("t");
/// let first = running_total.invoke_with(5, thread.clone()).await?.into_state();
/// let second = running_total.invoke_with(2, thread).await?.into_state();
/// assert_eq!((first.output, second.output, second.saved), (Some(0), Some(5), Some(7)));
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
///
/// # Errors
/// [`BuildError::InvalidName`] or [`BuildError::ReservedName`] for a name a node cannot have.
pub fn entrypoint_final<I, O, P, F, Fut, E>(
    name: &str,
    f: F,
) -> Result<Entrypoint<I, O, P>, BuildError>
where
    I: Data,
    O: Data,
    P: Data,
    F: Fn(I, EntrypointContext<P>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Final<O, P>, E>> + Send + 'static,
    E: Into<BoxError>,
{
    let body: Body<I, O, P> = Arc::new(move |input, ctx| {
        let run = f(input, ctx);
        Box::pin(async move { run.await.map_err(Into::into) })
    });
    compile(name, body)
}

/// The graph `START -> name -> END` whose node runs `body`.
fn compile<I: Data, O: Data, P: Data>(
    name: &str,
    body: Body<I, O, P>,
) -> Result<Entrypoint<I, O, P>, BuildError> {
    let mut graph = StateGraph::<EntrypointState<I, O, P>>::new();
    let node = NodeRunner::Async(Arc::new(EntrypointNode { body }));
    graph
        .push_node(name, node, NodeOptions::default(), false, None)
        .add_edge(START, name)
        .add_edge(name, END);
    graph.compile()
}

/// The entrypoint's node: runs the body on the state's input and previous saved value.
struct EntrypointNode<I, O, P> {
    body: Body<I, O, P>,
}

impl<I: Data, O: Data, P: Data> ErasedAsyncNode<EntrypointState<I, O, P>>
    for EntrypointNode<I, O, P>
{
    fn call(
        &self,
        state: &Arc<EntrypointState<I, O, P>>,
        ctx: &NodeContext,
    ) -> BoxFuture<'static, Result<NodeOutput<EntrypointState<I, O, P>>, BoxError>> {
        let input = state.input.clone();
        let previous = state.saved.clone();
        let ctx = ctx.clone();
        let body = Arc::clone(&self.body);
        Box::pin(async move {
            let Some(input) = input else {
                return Err(Box::new(Error::InvalidRunInput(format!(
                    "entrypoint `{}` has no input: invoke it with one",
                    ctx.node()
                ))) as BoxError);
            };
            let (root, replay) = TaskContext::root(&ctx);
            match body(input, EntrypointContext::new(root, previous)).await {
                Ok(Final { value, save }) => Ok(NodeOutput::Update(EntrypointUpdate {
                    input: None,
                    output: Some(value),
                    saved: Some(save),
                })),
                Err(error) => Err(replay.task_error(error).await),
            }
        })
    }

    fn records_calls(&self) -> bool {
        true
    }
}
