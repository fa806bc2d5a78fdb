//! The typed run context: values of the user's own types given per run (models, clients,
//! settings) and read by nodes and tools by type — LangGraph's `context_schema`.

use std::any::{Any, TypeId};
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The context values of one run, one per type.
#[derive(Clone, Default)]
pub(crate) struct ContextValues(Vec<(TypeId, &'static str, Arc<dyn Any + Send + Sync>)>);

impl ContextValues {
    /// Sets the value of type `C`, replacing an earlier one of that type.
    pub(crate) fn insert<C: Send + Sync + 'static>(&mut self, value: Arc<C>) {
        let id = TypeId::of::<C>();
        self.0.retain(|(t, _, _)| *t != id);
        self.0.push((id, std::any::type_name::<C>(), value));
    }

    /// The value of type `C`, if the run was given one.
    pub(crate) fn get<C: Send + Sync + 'static>(&self) -> Option<Arc<C>> {
        let id = TypeId::of::<C>();
        self.0
            .iter()
            .find(|(t, _, _)| *t == id)
            .and_then(|(_, _, value)| Arc::clone(value).downcast::<C>().ok())
    }
}

impl fmt::Debug for ContextValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(_, name, _)| name))
            .finish()
    }
}

/// A node argument that reads the run's context value of type `C`, given with
/// [`RunConfig::with_context`](crate::RunConfig::with_context).
///
/// The value is shared (an `Arc`), so a model or an HTTP client is built once per run, not
/// cloned into every node closure. A node that asks for a type the run was not given fails
/// with [`Error::MissingContext`](crate::Error::MissingContext).
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
/// # Ok::<(), graphkit::Error>(()) }).unwrap();
/// ```
pub struct RunContext<C>(pub Arc<C>);

impl<C> Clone for RunContext<C> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<C: fmt::Debug> fmt::Debug for RunContext<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RunContext").field(&self.0).finish()
    }
}

impl<C> Deref for RunContext<C> {
    type Target = C;

    fn deref(&self) -> &C {
        &self.0
    }
}
