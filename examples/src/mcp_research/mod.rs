//! The MCP research agent (seed 004): its web page.

pub mod web;
