// A Send worker whose input cannot be stored in a checkpoint.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use graphkit::Input;

#[derive(Clone)]
pub struct Topic(String);

async fn research(Input(topic): Input<Topic>) -> ChatUpdate {
    ChatUpdate::new().messages(vec![topic.0])
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("research", research);
}
