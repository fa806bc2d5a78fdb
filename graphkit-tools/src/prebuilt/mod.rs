//! Ready-made tools: sandboxed files, a todo list in the state, think and reflect, web search and
//! extraction, URL fetch, Wikipedia and arXiv.

pub mod arxiv;
pub mod fetch;
pub mod fs;
pub(crate) mod http;
pub mod reflect;
pub mod search;
pub mod think;
pub mod todo;
pub mod wikipedia;

pub use http::html_to_markdown;
