// A node with more than four arguments.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use graphkit::{NodeContext, RunConfig, StreamWriter};

async fn reply(
    _state: Arc<Chat>,
    _ctx: NodeContext,
    _writer: StreamWriter,
    _config: RunConfig,
    _again: Arc<Chat>,
) -> ChatUpdate {
    ChatUpdate::new()
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
