// A node that routes with a Command of another state.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use graphkit::Command;

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    text: String,
}

async fn route(_state: Arc<Chat>) -> Command<Report> {
    Command::goto_only("write")
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("route", route);
}
