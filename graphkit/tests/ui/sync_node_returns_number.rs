// A plain node, wrapped in SyncNode, that returns a number.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use graphkit::SyncNode;

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("count", SyncNode::new(|state: &Chat| state.messages.len()));
}
