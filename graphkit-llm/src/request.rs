//! What a call to a model asks for: messages, tools, options, and a response format.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::{Message, ToolMessage};

/// One call to a chat model, as providers receive it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolSpec>,
    /// Sampling and tool-choice options.
    pub options: CallOptions,
    /// Ask for a reply that is JSON matching a schema (structured output).
    pub response_format: Option<ResponseFormat>,
}

impl ChatRequest {
    /// A request with these messages and nothing else.
    pub fn new(messages: impl Into<Vec<Message>>) -> Self {
        Self {
            messages: messages.into(),
            ..Self::default()
        }
    }

    /// Adds tools.
    #[must_use]
    pub fn with_tools(mut self, tools: impl IntoIterator<Item = ToolSpec>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Sets the options.
    #[must_use]
    pub fn with_options(mut self, options: CallOptions) -> Self {
        self.options = options;
        self
    }

    /// The text of the last user message, or `""` when there is none.
    pub fn last_user_text(&self) -> &str {
        self.messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::User(_)))
            .map_or("", Message::text)
    }

    /// Every tool result in the conversation, oldest first.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolMessage> {
        self.messages.iter().filter_map(as_tool_result)
    }

    /// The tool results that answer the latest assistant turn (empty when the conversation
    /// does not end with tool results).
    pub fn latest_tool_results(&self) -> impl Iterator<Item = &ToolMessage> {
        let start = self
            .messages
            .iter()
            .rposition(|m| !matches!(m, Message::Tool(_)))
            .map_or(0, |i| i + 1);
        self.messages[start..].iter().filter_map(as_tool_result)
    }

    /// The names of the tools this request offers, in order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// Whether this request offers a tool called `name`.
    pub fn offers_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }
}

fn as_tool_result(message: &Message) -> Option<&ToolMessage> {
    match message {
        Message::Tool(t) => Some(t),
        _ => None,
    }
}

/// Options for one call. Unset fields use the provider's defaults.
///
/// ```
/// use graphkit_llm::{CallOptions, ToolChoice};
///
/// let options = CallOptions::new().temperature(0.0).max_tokens(256).tool_choice(ToolChoice::Required);
/// assert_eq!(options.max_tokens, Some(256));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallOptions {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
    /// Sequences that end generation.
    pub stop: Vec<String>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
}

impl CallOptions {
    /// No options set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the token limit.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Adds a stop sequence.
    #[must_use]
    pub fn stop(mut self, stop: impl Into<String>) -> Self {
        self.stop.push(stop.into());
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// These options, with unset fields taken from `defaults`.
    #[must_use]
    pub fn or(self, defaults: &CallOptions) -> Self {
        Self {
            temperature: self.temperature.or(defaults.temperature),
            max_tokens: self.max_tokens.or(defaults.max_tokens),
            stop: if self.stop.is_empty() {
                defaults.stop.clone()
            } else {
                self.stop
            },
            tool_choice: self.tool_choice.or_else(|| defaults.tool_choice.clone()),
        }
    }
}

/// Whether the model must call a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ToolChoice {
    /// The model decides (the default when tools are bound).
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// A tool the model may call: name, description, and the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model uses to call it.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool from a hand-written schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }

    /// A tool whose arguments are the typed struct `A`; the schema comes from schemars.
    ///
    /// ```
    /// use graphkit_llm::ToolSpec;
    /// use schemars::JsonSchema;
    ///
    /// #[derive(JsonSchema)]
    /// struct Search {
    ///     /// What to look for.
    ///     query: String,
    /// }
    ///
    /// let tool = ToolSpec::from_args::<Search>("search", "Search the corpus.");
    /// assert_eq!(tool.parameters["type"], "object");
    /// assert_eq!(tool.parameters["required"][0], "query");
    /// ```
    pub fn from_args<A: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self::new(name, description, schema_for::<A>())
    }
}

/// Ask the model for JSON matching a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    /// A name for the schema (`[A-Za-z0-9_-]`), used as the schema or tool name.
    pub name: String,
    /// What the output is, when the schema says.
    pub description: Option<String>,
    /// The JSON Schema.
    pub schema: Value,
    /// Whether to ask for OpenAI's strict mode (`"strict": true`, with the schema rewritten
    /// by [`schema::openai_strict`](crate::schema::openai_strict)). `None` leaves it to the
    /// provider: the OpenAI API uses strict mode when the schema allows it, OpenAI-compatible
    /// servers do not. Other providers ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

impl ResponseFormat {
    /// The response format for the type `T`, named after its schema title.
    pub fn for_type<T: JsonSchema>() -> Self {
        let schema = schema_for::<T>();
        let name: String = T::schema_name()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Self {
            name: if name.is_empty() {
                "output".into()
            } else {
                name
            },
            description,
            schema,
            strict: None,
        }
    }

    /// The same format with strict mode forced on (`true`) or off (`false`).
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = Some(strict);
        self
    }
}

/// The JSON Schema of `T`, without the `$schema` and `title` keys (providers ignore or reject them).
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T))
        .unwrap_or_else(|_| Value::Object(Default::default()));
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, ToolCall};
    use serde_json::json;

    #[test]
    fn request_helpers_read_the_last_question_the_latest_results_and_the_tools() {
        let call = ToolCall::new("search", json!({})).with_id("c1");
        let mut request = ChatRequest::new(vec![
            Message::system("s"),
            Message::user("first"),
            Message::tool_result("old", "stale"),
            Message::user("second"),
            Message::from(AssistantMessage::with_tool_calls("", vec![call])),
            Message::tool_result("c1", "fresh"),
        ])
        .with_tools([ToolSpec::new(
            "search",
            "Search.",
            json!({"type": "object"}),
        )]);
        assert_eq!(request.last_user_text(), "second");
        assert_eq!(request.tool_results().count(), 2);
        let latest: Vec<&str> = request
            .latest_tool_results()
            .map(|t| t.content.as_str())
            .collect();
        assert_eq!(latest, ["fresh"]);
        assert_eq!(request.tool_names().collect::<Vec<_>>(), ["search"]);
        assert!(request.offers_tool("search") && !request.offers_tool("fetch"));

        request.messages.push(Message::user("third"));
        assert_eq!(request.latest_tool_results().count(), 0);
        assert_eq!(ChatRequest::default().last_user_text(), "");
    }
}
