// An async node that borrows the state: it cannot, the run outlives the borrow.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

async fn reply(state: &Chat) -> ChatUpdate {
    ChatUpdate::new().messages(vec![format!("{} so far", state.messages.len())])
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
