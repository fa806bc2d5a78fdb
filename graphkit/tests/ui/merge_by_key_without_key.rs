// merge_by_key on items that have no key.
use graphkit::State;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Finding {
    url: String,
    summary: String,
}

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
pub struct Research {
    #[reducer(merge_by_key)]
    findings: Vec<Finding>,
}
