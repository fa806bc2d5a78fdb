// A node reads a part the graph's context type does not provide.
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

pub struct Deps {
    pub settings: Arc<Settings>,
}

async fn reply(_state: Arc<Chat>, settings: RunContext<Settings>) -> ChatUpdate {
    ChatUpdate::new().messages(vec![settings.greeting.clone()])
}

pub fn build() {
    // Deps holds the settings, but no `impl Provides<Settings> for Deps` says nodes may read them.
    let mut graph = graphkit::StateGraph::<Chat, Deps>::new();
    graph.add_node("reply", reply);
}
