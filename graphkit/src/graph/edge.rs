//! Routers (conditional edges) and what they may return.

use std::sync::Arc;

use crate::command::{Goto, SendTo};
use crate::error::BoxError;

/// The graph's entry: `add_edge(START, "first")`.
pub const START: &str = "__start__";
/// The graph's exit: `add_edge("last", END)`, or a router returning `END`.
pub const END: &str = "__end__";
/// The writer of a run's input, in checkpoint metadata (`update_state(.., UpdateAs::Input)`
/// writes an update as the input).
pub const INPUT: &str = "__input__";

/// What a router returns: one target, several, `END`, or `Send`s.
///
/// Implemented for `&'static str`, `String`, [`SendTo`], [`Goto`], vectors of those,
/// `Option` (None = stop this branch) and `Result` of any of them.
#[diagnostic::on_unimplemented(
    message = "a router cannot return `{Self}`",
    label = "not a route",
    note = "a router returns a node name (`&'static str`, `String`, `Arc<str>`, or `END`), a `SendTo`, a `Goto`, a `Vec` of those, or an `Option` (`None`: this branch stops) or `Result` of those",
    note = "to route on a value of your own, map it to a node name in the router, or use `add_conditional_edges_mapped` with a map from your values to node names"
)]
pub trait IntoRoute {
    /// The targets, in order.
    fn into_route(self) -> Result<Vec<Goto>, BoxError>;
}

impl IntoRoute for &'static str {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(vec![Goto::Node(self.into())])
    }
}

impl IntoRoute for String {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(vec![Goto::Node(self.into())])
    }
}

impl IntoRoute for Arc<str> {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(vec![Goto::Node(self)])
    }
}

impl IntoRoute for SendTo {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(vec![Goto::Send(self)])
    }
}

impl IntoRoute for Goto {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(vec![self])
    }
}

impl<T: Into<Goto>> IntoRoute for Vec<T> {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        Ok(self.into_iter().map(Into::into).collect())
    }
}

impl<T: IntoRoute> IntoRoute for Option<T> {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        self.map_or_else(|| Ok(Vec::new()), IntoRoute::into_route)
    }
}

impl<T: IntoRoute, E: Into<BoxError>> IntoRoute for Result<T, E> {
    fn into_route(self) -> Result<Vec<Goto>, BoxError> {
        self.map_err(Into::into)?.into_route()
    }
}

/// A router, erased.
pub(crate) type RouterFn<S> =
    Arc<dyn Fn(&S) -> Result<Vec<Goto>, BoxError> + std::marker::Send + Sync>;

/// Where edges may start: one node (a plain edge) or several (a join edge).
#[diagnostic::on_unimplemented(
    message = "an edge cannot start from `{Self}`",
    label = "not a node name or a list of node names",
    note = "an edge starts from one node (`\"name\"`, a `String`, or `START`) or, for a join that waits for all of them, several: `[\"a\", \"b\"]`, a `Vec<&str>` or a `&[&str]`"
)]
pub trait EdgeSources {
    /// The source names.
    fn into_sources(self) -> Vec<Arc<str>>;
}

impl EdgeSources for &str {
    fn into_sources(self) -> Vec<Arc<str>> {
        vec![self.into()]
    }
}

impl EdgeSources for String {
    fn into_sources(self) -> Vec<Arc<str>> {
        vec![self.into()]
    }
}

impl<const N: usize> EdgeSources for [&str; N] {
    fn into_sources(self) -> Vec<Arc<str>> {
        self.iter().map(|s| Arc::from(*s)).collect()
    }
}

impl EdgeSources for Vec<&str> {
    fn into_sources(self) -> Vec<Arc<str>> {
        self.into_iter().map(Arc::from).collect()
    }
}

impl EdgeSources for &[&str] {
    fn into_sources(self) -> Vec<Arc<str>> {
        self.iter().map(|s| Arc::from(*s)).collect()
    }
}
