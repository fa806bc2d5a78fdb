//! Nodes: what a node returns, what it can ask for, and how functions become nodes.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::command::{Command, Packet};
use crate::context::config::RunConfig;
use crate::context::node_context::NodeContext;
use crate::context::run_context::{Provides, RunContext};
use crate::context::stream::StreamWriter;
use crate::error::BoxError;
use crate::state::State;

/// What a node produced: an update, several (from a subgraph), or a [`Command`].
#[derive(Debug)]
pub enum NodeOutput<S: State> {
    /// One partial update.
    Update(S::Update),
    /// Several updates applied in order, as one task's writes.
    Updates(Vec<S::Update>),
    /// An update with routing. Boxed: a `Command` is several times larger than an update,
    /// and every task's result slot is as large as the largest variant.
    Command(Box<Command<S>>),
    /// Several updates and routes: what a node that merges several results returns (a
    /// tool node answering parallel tool calls, say), and what a task restored from a
    /// checkpoint replays. Static edges still fire, as with a `Command`.
    Writes {
        /// Applied in order, as one task's writes.
        updates: Vec<S::Update>,
        /// Route targets, including `Send`s.
        gotos: Vec<crate::command::Goto>,
    },
}

/// Types a node may return: the state's update type, `Command<S>`, `()` (no update),
/// `Option` of those, and `Result` of those with any error convertible to [`BoxError`].
#[diagnostic::on_unimplemented(
    message = "a node of a `{S}` graph cannot return `{Self}`",
    label = "a node's output must become an update of `{S}`",
    note = "a node returns one of: `<{S} as State>::Update` (the update type `#[derive(State)]` generated), `Command<{S}>`, `()` (no update), or an `Option` or a `Result` of those (the error: anything that converts into `Box<dyn Error + Send + Sync>`)",
    note = "an update of another state is not one of `{S}`: a node belongs to the graph whose state it updates"
)]
pub trait IntoNodeOutput<S: State> {
    /// Converts into a node output, or the node's error.
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError>;

    /// `true` if values of this type can route dynamically (a `Command`), which
    /// `compile()` takes into account when it checks reachability.
    const MAY_ROUTE: bool = false;
}

impl<S: State> IntoNodeOutput<S> for NodeOutput<S> {
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError> {
        Ok(self)
    }
    const MAY_ROUTE: bool = true;
}

impl<S: State> IntoNodeOutput<S> for Command<S> {
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError> {
        Ok(NodeOutput::Command(Box::new(self)))
    }
    const MAY_ROUTE: bool = true;
}

impl<S: State> IntoNodeOutput<S> for () {
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError> {
        Ok(NodeOutput::Update(S::Update::default()))
    }
}

impl<S: State, T: IntoNodeOutput<S>> IntoNodeOutput<S> for Option<T> {
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError> {
        match self {
            Some(inner) => inner.into_node_output(),
            None => Ok(NodeOutput::Update(S::Update::default())),
        }
    }
    const MAY_ROUTE: bool = T::MAY_ROUTE;
}

impl<S, T, E> IntoNodeOutput<S> for Result<T, E>
where
    S: State,
    T: IntoNodeOutput<S>,
    E: Into<BoxError>,
{
    fn into_node_output(self) -> Result<NodeOutput<S>, BoxError> {
        self.map_err(Into::into)?.into_node_output()
    }
    const MAY_ROUTE: bool = T::MAY_ROUTE;
}

/// A value a node can take as an argument, taken from the task (like an axum extractor).
///
/// Implemented for `Arc<S>` (the state snapshot), [`NodeContext`], [`StreamWriter`],
/// [`RunConfig`], [`RunContext<T>`](RunContext) (when the graph's context type `C`
/// [`Provides`] `T`) and [`Input<T>`]. `C` is the graph's context type, the second
/// parameter of [`StateGraph<S, C>`](crate::StateGraph); an extractor of your own that does
/// not read it implements `FromContext<S, C>` for every `C: ?Sized`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be an argument of a node of a `{S}` graph whose context is `{C}`",
    label = "not something a node can ask for",
    note = "a node's arguments are each one of: `Arc<{S}>` (the state), `NodeContext`, `StreamWriter`, `RunConfig`, `RunContext<T>` (the graph's context `{C}` or a type it provides with `impl Provides<T> for {C}`), `Input<T>` (a `Send`'s input, `T: Clone + Serialize + DeserializeOwned`)",
    note = "to read the state by reference, take `Arc<{S}>`, or wrap a plain function `fn(&{S}) -> ...` in `SyncNode::new`"
)]
pub trait FromContext<S: State, C: ?Sized = ()>: Sized + Send + 'static {
    /// Takes the value from the snapshot and the context.
    fn from_context(state: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError>;

    /// For [`Input<T>`]: how to rebuild a stored Send input (a checkpoint holds it as JSON).
    #[doc(hidden)]
    fn input_decoder() -> Option<InputDecoder> {
        None
    }
}

/// Rebuilds a typed Send input from its stored JSON.
#[doc(hidden)]
pub type InputDecoder = fn(serde_json::Value) -> Result<Packet, String>;

fn decode_input<T>(value: serde_json::Value) -> Result<Packet, String>
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::marker::Send + Sync + 'static,
{
    serde_json::from_value::<T>(value)
        .map(Packet::new)
        .map_err(|e| e.to_string())
}

impl<S: State, C: ?Sized> FromContext<S, C> for Arc<S> {
    fn from_context(state: &Arc<S>, _: &NodeContext) -> Result<Self, BoxError> {
        Ok(Arc::clone(state))
    }
}

impl<S: State, C: ?Sized> FromContext<S, C> for NodeContext {
    fn from_context(_: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError> {
        Ok(ctx.clone())
    }
}

impl<S: State, C: ?Sized> FromContext<S, C> for StreamWriter {
    fn from_context(_: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError> {
        Ok(ctx.writer.clone())
    }
}

impl<S: State, C: ?Sized> FromContext<S, C> for RunConfig {
    fn from_context(_: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError> {
        Ok((*ctx.config).clone())
    }
}

impl<S, C, T> FromContext<S, C> for RunContext<T>
where
    S: State,
    C: ?Sized + Provides<T> + std::marker::Send + Sync + 'static,
    T: ?Sized + std::marker::Send + Sync + 'static,
{
    fn from_context(_: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError> {
        Ok(RunContext(ctx.provided_context::<T, C>()?))
    }
}

/// The input of a `Send` task, as sent with [`Send::new`](crate::SendTo::new).
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{Input, State};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Jokes { #[reducer(append)] jokes: Vec<String> }
///
/// async fn write_joke(Input(subject): Input<String>) -> JokesUpdate {
///     JokesUpdate::new().jokes(vec![format!("a joke about {subject}")])
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input<T>(pub T);

impl<S, C, T> FromContext<S, C> for Input<T>
where
    S: State,
    C: ?Sized,
    T: Clone + serde::Serialize + serde::de::DeserializeOwned + std::marker::Send + Sync + 'static,
{
    fn from_context(_: &Arc<S>, ctx: &NodeContext) -> Result<Self, BoxError> {
        Ok(Input(ctx.require_input::<T>()?))
    }

    fn input_decoder() -> Option<InputDecoder> {
        Some(decode_input::<T>)
    }
}

/// A plain node function, erased.
pub(crate) type SyncFn<S> =
    Arc<dyn Fn(&S, &NodeContext) -> Result<NodeOutput<S>, BoxError> + std::marker::Send + Sync>;

/// A node as the scheduler sees it.
pub(crate) enum NodeRunner<S: State> {
    /// Runs as a future.
    Async(Arc<dyn ErasedAsyncNode<S>>),
    /// Runs inline on the scheduler's task.
    Sync(SyncFn<S>),
}

impl<S: State> Clone for NodeRunner<S> {
    fn clone(&self) -> Self {
        match self {
            Self::Async(f) => Self::Async(Arc::clone(f)),
            Self::Sync(f) => Self::Sync(Arc::clone(f)),
        }
    }
}

pub(crate) trait ErasedAsyncNode<S: State>: std::marker::Send + Sync + 'static {
    /// The node's future for one attempt. Borrows the snapshot and the context: a node
    /// takes from them what it keeps (most take a clone of a field or two, not the whole).
    fn call(
        &self,
        state: &Arc<S>,
        ctx: &NodeContext,
    ) -> BoxFuture<'static, Result<NodeOutput<S>, BoxError>>;

    /// The child graph, when this node runs one as a subgraph (its checkpoints are kept
    /// in the task's namespace).
    fn subgraph(&self) -> Option<&dyn crate::snapshot::SubgraphView> {
        None
    }

    /// `true` when the node records its own pending writes while it runs (an
    /// entrypoint of the functional API saves each finished task call).
    fn records_calls(&self) -> bool {
        false
    }
}

impl<S: State> NodeRunner<S> {
    /// The child graph of a subgraph node.
    pub(crate) fn subgraph(&self) -> Option<&dyn crate::snapshot::SubgraphView> {
        match self {
            Self::Async(f) => f.subgraph(),
            Self::Sync(_) => None,
        }
    }

    /// `true` when the node needs its task's place in the thread's checkpoints: a
    /// subgraph keeps its checkpoints there, an entrypoint its task calls.
    pub(crate) fn needs_task_link(&self) -> bool {
        match self {
            Self::Async(f) => f.subgraph().is_some() || f.records_calls(),
            Self::Sync(_) => false,
        }
    }
}

/// Something that can be added as a node of a `StateGraph<S, C>`: an async function (or
/// closure) whose arguments are [`FromContext<S, C>`](FromContext) values and whose output
/// is [`IntoNodeOutput`], or a [`SyncNode`].
///
/// `Args` is a marker that keeps the implementations apart; you never name it. `C` is the
/// graph's context type (`()` for a graph that names none).
///
/// A node is one of:
/// - an `async fn` or a closure returning a `Send` future, taking up to four arguments,
///   each a [`FromContext`] value (`Arc<S>`, [`NodeContext`], [`StreamWriter`], [`RunConfig`],
///   [`RunContext<T>`](RunContext) for a `T` the graph's context [`Provides`],
///   [`Input<T>`]), and returning an [`IntoNodeOutput`] value;
/// - a plain function of `&S` wrapped in [`SyncNode::new`], or of `(&S, &NodeContext)` in
///   [`SyncNodeWithContext::new`];
/// - a [`BoxedNode`], or a compiled graph added as a subgraph.
///
/// `docs/node-errors.md` shows what the compiler says for the common mistakes.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a `{S}` graph",
    label = "not a node of a `StateGraph<{S}, {C}>`",
    note = "a node is an `async fn` (or a closure returning a `Send` future) with up to 4 arguments, each one of `Arc<{S}>`, `NodeContext`, `StreamWriter`, `RunConfig`, `RunContext<T>`, `Input<T>` (`T: Clone + Serialize + DeserializeOwned`), that returns `<{S} as State>::Update`, `Command<{S}>`, `()`, or an `Option` or `Result` of those",
    note = "`RunContext<T>` reads the graph's context, the `C` of `StateGraph<S, C>` (here `{C}`; a graph that names none has `()`): `T` is `C` itself, or a type `C` provides (`impl Provides<T> for C`); declare it with `StateGraph::<{S}, YourContext>::new()`",
    note = "a plain function taking `&{S}` is a node when wrapped: `SyncNode::new(f)` (or `SyncNodeWithContext::new(f)` for `fn(&{S}, &NodeContext)`); an `async fn` cannot borrow the state: take `Arc<{S}>`",
    note = "the future must be `Send`: do not hold an `Rc`, a `RefCell` borrow or a `MutexGuard` of `std` across an `.await`"
)]
pub trait IntoNode<S: State, Args, C: ?Sized = ()>: std::marker::Send + Sync + 'static {
    /// Whether the node can route with a `Command`.
    const MAY_ROUTE: bool;

    #[doc(hidden)]
    fn into_runner(self) -> BoxedNode<S, C>;
}

/// A node of any kind, boxed, for a graph whose context type is `C`; made with
/// [`BoxedNode::new`].
pub struct BoxedNode<S: State, C: ?Sized = ()> {
    pub(crate) runner: NodeRunner<S>,
    pub(crate) decoder: Option<InputDecoder>,
    _context: std::marker::PhantomData<fn() -> Box<C>>,
}

impl<S: State, C: ?Sized> BoxedNode<S, C> {
    /// A node of the scheduler's own kind: its runner does not read the graph's context
    /// type, so it fits a graph of any.
    pub(crate) fn from_runner(runner: NodeRunner<S>, decoder: Option<InputDecoder>) -> Self {
        Self {
            runner,
            decoder,
            _context: std::marker::PhantomData,
        }
    }
}

/// Marks which arguments and context type an [`AsyncFnNode`] was built for.
type ArgsAndContext<Args, C> = std::marker::PhantomData<fn() -> (Args, Box<C>)>;

struct AsyncFnNode<F, Args, C: ?Sized> {
    f: F,
    _args: ArgsAndContext<Args, C>,
}

macro_rules! impl_into_node {
    ($($arg:ident),*) => {
        impl<S, C, F, Fut, R, $($arg,)*> ErasedAsyncNode<S> for AsyncFnNode<F, ($($arg,)*), C>
        where
            S: State,
            C: ?Sized + 'static,
            F: Fn($($arg),*) -> Fut + std::marker::Send + Sync + 'static,
            Fut: Future<Output = R> + std::marker::Send + 'static,
            R: IntoNodeOutput<S>,
            $($arg: FromContext<S, C>,)*
        {
            #[allow(non_snake_case, unused_variables)]
            fn call(&self, state: &Arc<S>, ctx: &NodeContext) -> BoxFuture<'static, Result<NodeOutput<S>, BoxError>> {
                $(
                    let $arg = match <$arg as FromContext<S, C>>::from_context(state, ctx) {
                        Ok(value) => value,
                        Err(err) => return Box::pin(std::future::ready(Err(err))),
                    };
                )*
                let future = (self.f)($($arg),*);
                Box::pin(async move { future.await.into_node_output() })
            }
        }

        impl<S, C, F, Fut, R, $($arg,)*> IntoNode<S, (R, $($arg,)*), C> for F
        where
            S: State,
            C: ?Sized + 'static,
            F: Fn($($arg),*) -> Fut + std::marker::Send + Sync + 'static,
            Fut: Future<Output = R> + std::marker::Send + 'static,
            R: IntoNodeOutput<S> + 'static,
            $($arg: FromContext<S, C>,)*
        {
            const MAY_ROUTE: bool = R::MAY_ROUTE;

            fn into_runner(self) -> BoxedNode<S, C> {
                let decoder: Option<InputDecoder> = None $(.or(<$arg as FromContext<S, C>>::input_decoder()))*;
                BoxedNode::from_runner(
                    NodeRunner::Async(Arc::new(AsyncFnNode::<F, ($($arg,)*), C> {
                        f: self,
                        _args: std::marker::PhantomData,
                    })),
                    decoder,
                )
            }
        }
    };
}

impl_into_node!();
impl_into_node!(A1);
impl_into_node!(A1, A2);
impl_into_node!(A1, A2, A3);
impl_into_node!(A1, A2, A3, A4);

/// A plain (non-async) node function of the state, run inline by the scheduler.
///
/// Cheapest for quick, CPU-light nodes: no future, no task. Make long or blocking work an
/// async node instead (it can use `tokio::task::spawn_blocking`); per-node timeouts do not
/// apply to sync nodes, which cannot be interrupted.
///
/// ```
/// use graphkit::{END, START, State, StateGraph, SyncNode};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Counter { #[reducer(add)] n: u64 }
///
/// let mut graph = StateGraph::<Counter>::new();
/// graph.add_node("inc", SyncNode::new(|_: &Counter| CounterUpdate::new().n(1)));
/// graph.add_edge(START, "inc").add_edge("inc", END);
/// let graph = graph.compile().unwrap();
/// ```
pub struct SyncNode<F>(F);

impl<F> SyncNode<F> {
    /// Wraps a function `Fn(&S) -> impl IntoNodeOutput<S>`.
    pub fn new<S, R>(f: F) -> Self
    where
        S: State,
        F: Fn(&S) -> R + std::marker::Send + Sync + 'static,
        R: IntoNodeOutput<S> + 'static,
    {
        Self(f)
    }
}

/// A plain node function that also takes the [`NodeContext`].
pub struct SyncNodeWithContext<F>(F);

impl<F> SyncNodeWithContext<F> {
    /// Wraps a function `Fn(&S, &NodeContext) -> impl IntoNodeOutput<S>`.
    pub fn new<S, R>(f: F) -> Self
    where
        S: State,
        F: Fn(&S, &NodeContext) -> R + std::marker::Send + Sync + 'static,
        R: IntoNodeOutput<S> + 'static,
    {
        Self(f)
    }
}

#[doc(hidden)]
pub struct SyncMarker<R>(std::marker::PhantomData<R>);

impl<S, C, F, R> IntoNode<S, SyncMarker<R>, C> for SyncNode<F>
where
    S: State,
    C: ?Sized + 'static,
    F: Fn(&S) -> R + std::marker::Send + Sync + 'static,
    R: IntoNodeOutput<S> + 'static,
{
    const MAY_ROUTE: bool = R::MAY_ROUTE;

    fn into_runner(self) -> BoxedNode<S, C> {
        let f = self.0;
        BoxedNode::from_runner(
            NodeRunner::Sync(Arc::new(move |state: &S, _: &NodeContext| {
                f(state).into_node_output()
            })),
            None,
        )
    }
}

#[doc(hidden)]
pub struct SyncCtxMarker<R>(std::marker::PhantomData<R>);

impl<S, C, F, R> IntoNode<S, SyncCtxMarker<R>, C> for SyncNodeWithContext<F>
where
    S: State,
    C: ?Sized + 'static,
    F: Fn(&S, &NodeContext) -> R + std::marker::Send + Sync + 'static,
    R: IntoNodeOutput<S> + 'static,
{
    const MAY_ROUTE: bool = R::MAY_ROUTE;

    fn into_runner(self) -> BoxedNode<S, C> {
        let f = self.0;
        BoxedNode::from_runner(
            NodeRunner::Sync(Arc::new(move |state: &S, ctx: &NodeContext| {
                f(state, ctx).into_node_output()
            })),
            None,
        )
    }
}

impl<S: State, C: ?Sized> BoxedNode<S, C> {
    /// Boxes any node function, so nodes of different types fit in one list
    /// (see [`StateGraph::add_sequence`](crate::StateGraph::add_sequence)).
    pub fn new<Args>(node: impl IntoNode<S, Args, C>) -> Self {
        node.into_runner()
    }
}

#[doc(hidden)]
pub struct BoxedMarker;

impl<S: State, C: ?Sized + 'static> IntoNode<S, BoxedMarker, C> for BoxedNode<S, C> {
    const MAY_ROUTE: bool = true;

    fn into_runner(self) -> BoxedNode<S, C> {
        self
    }
}
