// merge_by (a key function) on a field that is not a list.
use graphkit::State;
use serde::{Deserialize, Serialize};

fn by_len(text: &String) -> Option<usize> {
    Some(text.len())
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Research {
    #[reducer(merge_by = by_len)]
    summary: String,
}
