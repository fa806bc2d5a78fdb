// A node that asks for an argument the run cannot give.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

async fn reply(limit: u32) -> ChatUpdate {
    ChatUpdate::new().messages(vec![format!("limit {limit}")])
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
