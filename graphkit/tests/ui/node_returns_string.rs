// A node that returns text instead of an update of the state.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

async fn reply(state: Arc<Chat>) -> String {
    format!("{} so far", state.messages.len())
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
