//! The typed run context: values of the user's own types given per run (models, clients,
//! settings) and read by nodes and tools by type — LangGraph's `context_schema`.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The context values of one run (or one compiled graph), one per type. A type may be a
/// trait object (`dyn ChatModel`): each value is kept as the `Arc<C>` it was given as.
#[derive(Clone, Default)]
pub(crate) struct ContextValues(Vec<(TypeId, &'static str, Arc<dyn Any + Send + Sync>)>);

impl ContextValues {
    /// Sets the value of type `C`, replacing an earlier one of that type.
    pub(crate) fn insert<C: ?Sized + Send + Sync + 'static>(&mut self, value: Arc<C>) {
        let id = TypeId::of::<C>();
        self.0.retain(|(t, _, _)| *t != id);
        self.0
            .push((id, std::any::type_name::<C>(), Arc::new(value)));
    }

    /// The value of type `C`, if there is one.
    pub(crate) fn get<C: ?Sized + Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        let id = TypeId::of::<C>();
        self.0
            .iter()
            .find(|(t, _, _)| *t == id)
            .and_then(|(_, _, value)| value.downcast_ref::<Arc<C>>().cloned())
    }

    /// The names of the types that have a value, in the order they were set.
    pub(crate) fn type_names(&self) -> Vec<&'static str> {
        self.0.iter().map(|(_, name, _)| *name).collect()
    }

    /// These values, with `defaults`' values for the types they lack; `None` when
    /// `defaults` adds nothing.
    pub(crate) fn with_defaults(&self, defaults: &ContextValues) -> Option<ContextValues> {
        let missing: Vec<_> = defaults
            .0
            .iter()
            .filter(|(t, _, _)| !self.0.iter().any(|(own, _, _)| own == t))
            .cloned()
            .collect();
        if missing.is_empty() {
            return None;
        }
        let mut merged = self.clone();
        merged.0.extend(missing);
        Some(merged)
    }
}

impl fmt::Debug for ContextValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(_, name, _)| name))
            .finish()
    }
}

/// A node argument that reads the context value of type `C`: the graph's, given once with
/// [`CompiledGraph::with_context`](crate::CompiledGraph::with_context) (a model, an HTTP
/// client, settings), or the run's, given with
/// [`RunConfig::with_context`](crate::RunConfig::with_context), which wins for its type.
///
/// The value is shared (an `Arc`), so it is built once, not cloned into every node
/// closure. `C` may be a trait object: a graph given
/// `with_shared_context::<dyn ChatModel>(model)` serves `RunContext<dyn ChatModel>`, and
/// `RunContext<M>` is itself a `ChatModel` when `M` is one (graphkit-llm). Types match
/// exactly: a node that asks for a type nobody gave fails with
/// [`Error::MissingContext`](crate::Error::MissingContext), which lists the types there are.
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
/// let mut graph = StateGraph::<Reply>::new();
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
