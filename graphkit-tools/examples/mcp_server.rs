//! An MCP server with two typed tools, over stdio (default) or streamable HTTP.
//!
//! ```text
//! cargo run -p graphkit-tools --features mcp-server --example mcp_server
//! cargo run -p graphkit-tools --features mcp-server --example mcp_server -- --http 127.0.0.1:3001
//! ```
//!
//! Over stdio it speaks MCP on stdin/stdout (configure it as a command in any MCP client);
//! over HTTP the endpoint is `http://ADDR/mcp`.

use graphkit_tools::ToolError;
use graphkit_tools::mcp::McpServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `word_stats`.
#[derive(Deserialize, JsonSchema)]
struct WordStatsArgs {
    /// The text to measure.
    text: String,
}

/// What `word_stats` returns (advertised as its output schema).
#[derive(Serialize, JsonSchema)]
struct WordStats {
    /// Words separated by whitespace.
    words: usize,
    /// Characters (Unicode scalar values).
    characters: usize,
    /// The longest word.
    longest: Option<String>,
}

/// Arguments of `top_words`.
#[derive(Deserialize, JsonSchema)]
struct TopWordsArgs {
    /// The text to count words in.
    text: String,
    /// How many words to return (1 to 100).
    #[serde(default = "default_top_n")]
    top_n: usize,
}

fn default_top_n() -> usize {
    5
}

/// One counted word.
#[derive(Serialize, JsonSchema)]
struct WordCount {
    word: String,
    count: usize,
}

fn server() -> McpServer {
    McpServer::new("graphkit-text-tools", env!("CARGO_PKG_VERSION"))
        .tool(
            "word_stats",
            "Counts the words and characters of a text.",
            |args: WordStatsArgs| async move {
                let words: Vec<&str> = args.text.split_whitespace().collect();
                Ok(WordStats {
                    words: words.len(),
                    characters: args.text.chars().count(),
                    longest: words
                        .iter()
                        .max_by_key(|w| w.chars().count())
                        .map(|w| (*w).to_owned()),
                })
            },
        )
        .tool(
            "top_words",
            "The most frequent words of a text, most frequent first.",
            |args: TopWordsArgs| async move {
                if !(1..=100).contains(&args.top_n) {
                    return Err(ToolError::InvalidArguments {
                        tool: "top_words".into(),
                        message: format!("`top_n` must be between 1 and 100, got {}", args.top_n),
                    });
                }
                let mut counts = std::collections::BTreeMap::<String, usize>::new();
                for word in args.text.split_whitespace() {
                    let word = word
                        .trim_matches(|c: char| !c.is_alphanumeric())
                        .to_lowercase();
                    if !word.is_empty() {
                        *counts.entry(word).or_default() += 1;
                    }
                }
                let mut counts: Vec<WordCount> = counts
                    .into_iter()
                    .map(|(word, count)| WordCount { word, count })
                    .collect();
                counts.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.word.cmp(&b.word)));
                counts.truncate(args.top_n);
                Ok(counts) // not an object: sent as {"result": [...]}
            },
        )
}

#[tokio::main]
async fn main() -> Result<(), ToolError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => server().serve_stdio().await,
        [flag, addr] if flag == "--http" => {
            let bound = server().bind_http(addr.as_str()).await?;
            eprintln!("serving MCP at {}", bound.url());
            bound.run().await
        }
        _ => {
            eprintln!("usage: mcp_server [--http ADDR]");
            std::process::exit(2);
        }
    }
}
