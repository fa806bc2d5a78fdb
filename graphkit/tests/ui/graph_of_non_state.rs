// A graph over a struct that does not derive State.
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Chat {
    messages: Vec<String>,
}

pub fn build() {
    let _graph = graphkit::StateGraph::<Chat>::new();
}
