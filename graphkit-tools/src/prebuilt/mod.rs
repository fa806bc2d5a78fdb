//! Ready-made tools: sandboxed files, a todo list in the state, think and reflect, web search and
//! extraction, URL fetch, Wikipedia and arXiv.

pub mod arxiv;
mod atomic;
mod beneath;
pub mod fetch;
pub mod fs;
pub(crate) mod http;
pub mod reflect;
pub mod search;
pub mod think;
pub mod todo;
pub mod wikipedia;

pub use atomic::{remove_stale_temp_files, write_atomic};
pub use http::html_to_markdown;
