// A node asking for a run context that cannot cross threads.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use std::rc::Rc;

use graphkit::RunContext;

async fn reply(_state: Arc<Chat>, _settings: RunContext<Rc<String>>) -> ChatUpdate {
    ChatUpdate::new()
}

pub fn build(graph: &mut graphkit::StateGraph<Chat, Rc<String>>) {
    graph.add_node("reply", reply);
}
