// A context part marked #[provide] that is not shared behind an `Arc`.
use std::sync::Arc;

use graphkit::Provides;

pub struct Settings {
    pub greeting: String,
}

#[derive(Provides)]
pub struct Deps {
    #[provide]
    pub settings: Settings,
    pub other: Arc<String>,
}
