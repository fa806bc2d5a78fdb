//! # graphkit-llm
//!
//! The LLM layer of graphkit: chat [`Message`]s that merge by id in a graph state, the
//! [`ChatModel`] trait with tool calling, streaming and structured output, providers
//! speaking the real wire protocols (OpenAI chat completions and every OpenAI-compatible
//! server, Anthropic messages, Ollama), retries and rate limits, usage accounting, and
//! test doubles ([`ScriptedModel`], [`FunctionModel`], and the offline stand-in harness
//! [`StandInModel`]).
//!
//! Structured output ([`ChatModel::with_structured_output`]) checks every reply against
//! the JSON Schema of the requested type ([`schema`]), runs your validators ([`checks`]
//! has ready-made ones), retries with the problems shown to the model, and uses OpenAI's
//! strict mode where it can: see `docs/structured-output.md`.
//!
//! ```no_run
//! use graphkit_llm::{ChatModel, Message, init_chat_model};
//!
//! # async fn run() -> Result<(), graphkit_llm::LlmError> {
//! let model = init_chat_model("openai:gpt-4o")?; // key from OPENAI_API_KEY
//! let reply = model.invoke(&[Message::user("Name a prime number.")]).await?;
//! println!("{} ({:?})", reply.content, reply.usage);
//! # Ok(()) }
//! ```
//!
//! Inside a graphkit node, [`ChatModel::stream`] also forwards every chunk to the run's
//! `messages` stream mode, tagged with the node name (see [`MessageStreamEvent`]).
//! The guide page `docs/llm.md` has the how-tos.

mod accounting;
pub mod checks;
mod chunk;
pub mod error;
mod fake;
mod graph;
pub mod http;
mod message;
mod model;
pub mod providers;
mod request;
pub mod schema;
mod spec;
mod standin;
mod stream;
mod structured;
mod trace;
mod transport;

pub use accounting::{CallTotals, Metered, PriceTable, UsageMeter};
pub use chunk::{ChatChunk, MessageAssembler, ToolCallChunk};
pub use error::LlmError;
pub use fake::{FunctionModel, ScriptedModel};
pub use graph::MessageStreamEvent;
pub use message::{
    AssistantMessage, Message, SystemMessage, ToolCall, ToolMessage, TrimStrategy, Usage,
    UserMessage, approximate_tokens, count_tokens, new_message_id, trim_messages,
};
pub use model::{BoundModel, ChatModel, Model};
pub use providers::anthropic::AnthropicModel;
pub use providers::ollama::OllamaModel;
pub use providers::openai::OpenAiModel;
pub use request::{CallOptions, ChatRequest, ResponseFormat, ToolChoice, ToolSpec, schema_for};
pub use spec::{ModelSpec, init_chat_model, init_chat_model_with};
pub use standin::StandInModel;
pub use stream::ChatStream;
pub use structured::{DEFAULT_RETRIES, StructuredModel};
pub use transport::ClientOptions;

/// docs/llm.md, compiled as doctests (the blocks that need a provider's key are compiled,
/// not run).
#[cfg(doctest)]
#[doc = include_str!("../../docs/llm.md")]
pub struct LlmDoctests;

/// docs/structured-output.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/structured-output.md")]
pub struct StructuredOutputDoctests;
