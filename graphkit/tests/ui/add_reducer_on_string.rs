// An add reducer on text: add sums numbers.
use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Notes {
    #[reducer(add)]
    text: String,
}
