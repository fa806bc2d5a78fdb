// An edge whose start is not a node name.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_edge(1, "reply");
}
