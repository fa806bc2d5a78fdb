// A node of one graph that returns the update of another state.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Report {
    text: String,
}

async fn write(_state: Arc<Chat>) -> ReportUpdate {
    ReportUpdate::new().text("done".to_string())
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("write", write);
}
