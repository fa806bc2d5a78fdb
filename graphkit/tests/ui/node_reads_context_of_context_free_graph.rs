// A node reads a context value, but its graph declares no context type.
use std::sync::Arc;

use graphkit::{RunContext, State};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

pub struct Settings {
    pub greeting: String,
}

async fn reply(_state: Arc<Chat>, settings: RunContext<Settings>) -> ChatUpdate {
    ChatUpdate::new().messages(vec![settings.greeting.clone()])
}

pub fn build() {
    let mut graph = graphkit::StateGraph::<Chat>::new();
    graph.add_node("reply", reply);
}
