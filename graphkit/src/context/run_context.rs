//! The typed context: a graph's context type (`StateGraph<S, C>`'s `C`), the values of it
//! given to a compiled graph or a run (models, clients, settings), and what nodes read of
//! it — LangGraph's `context_schema`, checked by the compiler.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The context values of one run (or one compiled graph), one per type. A type may be a
/// trait object (`dyn ChatModel`): each value is kept as the `Arc<C>` it was given as.
///
/// A run's values come first; the graph's defaults, added by
/// [`with_defaults`](Self::with_defaults), follow from `defaults_from` on.
#[derive(Clone, Default)]
pub(crate) struct ContextValues {
    values: Vec<(TypeId, &'static str, Arc<dyn Any + Send + Sync>)>,
    defaults_from: Option<usize>,
}

impl ContextValues {
    /// Sets the value of type `C`, replacing an earlier one of that type.
    pub(crate) fn insert<C: ?Sized + Send + Sync + 'static>(&mut self, value: Arc<C>) {
        let id = TypeId::of::<C>();
        let entry: (TypeId, &'static str, Arc<dyn Any + Send + Sync>) =
            (id, std::any::type_name::<C>(), Arc::new(value));
        // On a run's merged values the new value is the run's, ahead of the graph's.
        let mut run_len = self.defaults_from.unwrap_or(self.values.len());
        if let Some(at) = self.values.iter().position(|(t, _, _)| *t == id) {
            self.values.remove(at);
            if at < run_len {
                run_len -= 1;
            }
        }
        self.values.insert(run_len, entry);
        if let Some(defaults_from) = &mut self.defaults_from {
            *defaults_from = run_len + 1;
        }
    }

    /// The value of type `C`, if there is one.
    pub(crate) fn get<C: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        Self::find::<C>(&self.values)
    }

    fn find<C: ?Sized + Send + Sync + 'static>(
        values: &[(TypeId, &'static str, Arc<dyn Any + Send + Sync>)],
    ) -> Option<Arc<C>> {
        let id = TypeId::of::<C>();
        values
            .iter()
            .find(|(t, _, _)| *t == id)
            .and_then(|(_, _, value)| value.downcast_ref::<Arc<C>>().cloned())
    }

    /// The value of `T` a node of a graph whose context type is `C` reads: the run's own
    /// `T`, else what the run's `C` provides, else the graph's `T`, else what the graph's
    /// `C` provides.
    pub(crate) fn provided<T, C>(&self) -> Option<Arc<T>>
    where
        T: ?Sized + Send + Sync + 'static,
        C: ?Sized + Provides<T> + Send + Sync + 'static,
    {
        let (run, graph) = self
            .values
            .split_at(self.defaults_from.unwrap_or(self.values.len()));
        [run, graph].into_iter().find_map(|values| {
            Self::find::<T>(values).or_else(|| Self::find::<C>(values).map(|c| C::provide(&c)))
        })
    }

    /// Whether there is a value of the type `id`.
    pub(crate) fn has(&self, id: TypeId) -> bool {
        self.values.iter().any(|(t, _, _)| *t == id)
    }

    /// The names of the types that have a value, in the order they were set.
    pub(crate) fn type_names(&self) -> Vec<&'static str> {
        self.values.iter().map(|(_, name, _)| *name).collect()
    }

    /// These values, with `defaults`' values for the types they lack; `None` when
    /// `defaults` adds nothing.
    pub(crate) fn with_defaults(&self, defaults: &ContextValues) -> Option<ContextValues> {
        let missing: Vec<_> = defaults
            .values
            .iter()
            .filter(|(t, _, _)| !self.has(*t))
            .cloned()
            .collect();
        if missing.is_empty() {
            return None;
        }
        let mut merged = self.clone();
        merged.defaults_from.get_or_insert(merged.values.len());
        merged.values.extend(missing);
        Some(merged)
    }
}

impl fmt::Debug for ContextValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.values.iter().map(|(_, name, _)| name))
            .finish()
    }
}

/// A node argument that reads the graph's context: the `C` of
/// [`StateGraph<S, C>`](crate::StateGraph) itself, or a part `T` of it that `C`
/// [`Provides`]. The compiler checks that the graph's context provides it.
///
/// The value is the graph's, given once with
/// [`CompiledGraph::with_context`](crate::CompiledGraph::with_context) (a model, an HTTP
/// client, settings), or the run's, given with
/// [`RunConfig::with_context`](crate::RunConfig::with_context), which wins (for `C`, or
/// for one part `T`). It is shared (an `Arc`), so it is built once, not cloned into every
/// node closure. `C` may be a trait object: a `StateGraph<S, dyn ChatModel>` given
/// `with_shared_context::<dyn ChatModel>(model)` serves `RunContext<dyn ChatModel>`, and
/// `RunContext<M>` is itself a `ChatModel` when `M` is one (graphkit-llm). A run that has
/// no value of the graph's context type fails at its start with
/// [`Error::ContextNotGiven`](crate::Error::ContextNotGiven).
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{RunConfig, RunContext, START, END, State, StateGraph};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// # struct Reply { text: String }
///
/// struct Persona { name: String }
///
/// async fn greet(_: Arc<Reply>, persona: RunContext<Persona>) -> ReplyUpdate {
///     ReplyUpdate::new().text(format!("hello from {}", persona.name))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut graph = StateGraph::<Reply, Persona>::new();
/// graph.add_node("greet", greet).add_edge(START, "greet").add_edge("greet", END);
/// let config = RunConfig::new().with_context(Persona { name: "Ada".into() });
/// let out = graph.compile()?.invoke_with(ReplyUpdate::new(), config).await?.into_state();
/// assert_eq!(out.text, "hello from Ada");
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
pub struct RunContext<C: ?Sized>(pub Arc<C>);

impl<C: ?Sized> Clone for RunContext<C> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<C: ?Sized + fmt::Debug> fmt::Debug for RunContext<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RunContext").field(&self.0).finish()
    }
}

impl<C: ?Sized> Deref for RunContext<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}

/// What a graph's context type gives its nodes: `C: Provides<T>` lets a node of a
/// `StateGraph<S, C>` take [`RunContext<T>`]. Every type provides itself; implement it for
/// the parts of your context nodes read on their own, as axum's `FromRef` does for state,
/// or derive it: `#[derive(Provides)]` with `#[provide]` on `Arc<T>` fields.
///
/// The compiler checks it: a node asking for a type the graph's context does not provide
/// is not a node of that graph.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::{END, Provides, RunContext, START, State, StateGraph};
/// # use serde::{Deserialize, Serialize};
/// # #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// # struct Reply { text: String }
/// trait Greeter: Send + Sync { fn greet(&self) -> String; }
/// struct Polite;
/// impl Greeter for Polite { fn greet(&self) -> String { "good day".into() } }
///
/// // The graph's context: everything its nodes need, given once. The derive writes
/// // `impl Provides<dyn Greeter> for Deps`, which hands out the field's `Arc`.
/// #[derive(Provides)]
/// struct Deps { #[provide] greeter: Arc<dyn Greeter>, name: String }
///
/// async fn greet(_: Arc<Reply>, greeter: RunContext<dyn Greeter>, deps: RunContext<Deps>) -> ReplyUpdate {
///     ReplyUpdate::new().text(format!("{}, {}", greeter.greet(), deps.name))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut graph = StateGraph::<Reply, Deps>::new();
/// graph.add_node("greet", greet).add_edge(START, "greet").add_edge("greet", END);
/// let graph = graph.compile()?.with_context(Deps { greeter: Arc::new(Polite), name: "Ada".into() });
/// assert_eq!(graph.invoke(ReplyUpdate::new()).await?.into_state().text, "good day, Ada");
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[diagnostic::on_unimplemented(
    message = "the graph's context `{Self}` does not provide `{T}`",
    label = "a node of this graph asks for `RunContext<{T}>`",
    note = "a graph's context type is the second parameter of `StateGraph<S, C>` (`()` when it is not named): declare it, e.g. `StateGraph::<MyState, Deps>::new()`",
    note = "a node may take `RunContext<C>` for the context type itself, or `RunContext<T>` for a `T` it provides: `impl graphkit::Provides<T> for C {{ fn provide(c: &Arc<C>) -> Arc<T> {{ .. }} }}`"
)]
pub trait Provides<T: ?Sized> {
    /// The `T` in `context` (usually a field's `Arc`, cloned: no value is copied).
    fn provide(context: &Arc<Self>) -> Arc<T>;
}

impl<C: ?Sized> Provides<C> for C {
    fn provide(context: &Arc<Self>) -> Arc<C> {
        Arc::clone(context)
    }
}
