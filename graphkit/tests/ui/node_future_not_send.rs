// A node whose future holds an Rc across an await: the run moves it between threads.
use std::sync::Arc;

use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
}

use std::rc::Rc;

async fn reply(state: Arc<Chat>) -> ChatUpdate {
    let count = Rc::new(state.messages.len());
    std::future::ready(()).await;
    ChatUpdate::new().messages(vec![format!("{count} so far")])
}

pub fn build(graph: &mut graphkit::StateGraph<Chat>) {
    graph.add_node("reply", reply);
}
