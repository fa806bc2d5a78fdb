//! Ready-made tools: sandboxed files, a todo list in the state, think, web search and
//! extraction, URL fetch, Wikipedia and arXiv.

pub mod fs;
pub mod think;
pub mod todo;
