// A plain function of the state added without SyncNode::new.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

fn reply(state: &Chat) -> ChatUpdate {
    ChatUpdate::new().messages(vec![format!("{} so far", state.messages.len())])
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
