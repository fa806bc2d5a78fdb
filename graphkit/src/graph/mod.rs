//! Building graphs: nodes, edges, routers, validation and drawing.

pub(crate) mod builder;
pub(crate) mod compile;
pub(crate) mod compiled;
pub(crate) mod draw;
pub(crate) mod edge;
pub(crate) mod node;

pub use edge::{END, INPUT, START};
