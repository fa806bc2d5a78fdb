//! Choosing a model by a spec string such as `openai:gpt-4o`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::{LlmError, Result};
use crate::model::ChatModel;
use crate::providers::anthropic::AnthropicModel;
use crate::providers::ollama::OllamaModel;
use crate::providers::openai::OpenAiModel;
use crate::transport::ClientOptions;

/// A parsed model spec: which provider, which model, and where.
///
/// ```
/// use graphkit_llm::ModelSpec;
///
/// let spec: ModelSpec = "openai-compatible:http://127.0.0.1:8080/v1#qwen2.5".parse()?;
/// assert_eq!(spec, ModelSpec::OpenAiCompatible {
///     base_url: "http://127.0.0.1:8080/v1".into(),
///     model: "qwen2.5".into(),
/// });
/// assert_eq!(spec.to_string(), "openai-compatible:http://127.0.0.1:8080/v1#qwen2.5");
/// assert!("gpt-4o".parse::<ModelSpec>().is_err());
/// # Ok::<(), graphkit_llm::LlmError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// `openai:MODEL`: key from `OPENAI_API_KEY`, base URL from `OPENAI_BASE_URL`.
    OpenAi {
        /// The model name.
        model: String,
    },
    /// `anthropic:MODEL`: key from `ANTHROPIC_API_KEY`, host from `ANTHROPIC_BASE_URL`.
    Anthropic {
        /// The model name.
        model: String,
    },
    /// `ollama:MODEL`: host from `OLLAMA_HOST`.
    Ollama {
        /// The model name.
        model: String,
    },
    /// `openai-compatible:BASE_URL#MODEL`: any server speaking OpenAI chat completions.
    OpenAiCompatible {
        /// The base URL (usually ending in `/v1`).
        base_url: String,
        /// The model name.
        model: String,
    },
}

impl ModelSpec {
    /// Parses a spec string.
    pub fn parse(spec: &str) -> Result<Self> {
        let invalid = |reason: &str| LlmError::InvalidSpec {
            spec: spec.to_owned(),
            reason: reason.to_owned(),
        };
        let (provider, rest) = spec
            .trim()
            .split_once(':')
            .ok_or_else(|| invalid("no provider prefix"))?;
        let model = rest.trim().to_owned();
        let parsed = match provider.trim() {
            "openai" => Self::OpenAi { model },
            "anthropic" => Self::Anthropic { model },
            "ollama" => Self::Ollama { model },
            "openai-compatible" => {
                let (base_url, model) = rest
                    .rsplit_once('#')
                    .ok_or_else(|| invalid("add the model name after the URL, as `#MODEL`"))?;
                if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                    return Err(invalid("the base URL must start with http:// or https://"));
                }
                Self::OpenAiCompatible {
                    base_url: base_url.trim().to_owned(),
                    model: model.trim().to_owned(),
                }
            }
            other => return Err(invalid(&format!("unknown provider {other:?}"))),
        };
        if parsed.model().is_empty() {
            return Err(invalid("the model name is empty"));
        }
        Ok(parsed)
    }

    /// The model name.
    pub fn model(&self) -> &str {
        match self {
            Self::OpenAi { model } | Self::Anthropic { model } | Self::Ollama { model } => model,
            Self::OpenAiCompatible { model, .. } => model,
        }
    }

    /// Builds the model, reading keys and base URLs from the environment.
    pub fn build(&self, options: ClientOptions) -> Result<Arc<dyn ChatModel>> {
        Ok(match self {
            Self::OpenAi { model } => {
                Arc::new(OpenAiModel::from_env(model)?.with_client_options(options))
            }
            Self::Anthropic { model } => {
                Arc::new(AnthropicModel::from_env(model)?.with_client_options(options))
            }
            Self::Ollama { model } => {
                Arc::new(OllamaModel::from_env(model).with_client_options(options))
            }
            Self::OpenAiCompatible { base_url, model } => {
                Arc::new(OpenAiModel::compatible(base_url, model).with_client_options(options))
            }
        })
    }
}

impl FromStr for ModelSpec {
    type Err = LlmError;

    fn from_str(s: &str) -> Result<Self> {
        Self::parse(s)
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OpenAi { model } => write!(f, "openai:{model}"),
            Self::Anthropic { model } => write!(f, "anthropic:{model}"),
            Self::Ollama { model } => write!(f, "ollama:{model}"),
            Self::OpenAiCompatible { base_url, model } => {
                write!(f, "openai-compatible:{base_url}#{model}")
            }
        }
    }
}

/// A model from a spec string (`openai:gpt-4o`, `anthropic:claude-sonnet-4-20250514`,
/// `ollama:qwen2.5`, `openai-compatible:http://127.0.0.1:8080/v1#model`), with keys and
/// base URLs from the environment and default [`ClientOptions`].
///
/// A missing key is an error naming the variable to set.
pub fn init_chat_model(spec: &str) -> Result<Arc<dyn ChatModel>> {
    init_chat_model_with(spec, ClientOptions::default())
}

/// Like [`init_chat_model`], with timeouts, retries and limits.
pub fn init_chat_model_with(spec: &str, options: ClientOptions) -> Result<Arc<dyn ChatModel>> {
    ModelSpec::parse(spec)?.build(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_documented_spec_parses_and_prints_back() {
        for spec in [
            "openai:gpt-4o",
            "anthropic:claude-sonnet-4-20250514",
            "ollama:qwen2.5",
            "openai-compatible:http://127.0.0.1:8080/v1#model-name",
        ] {
            assert_eq!(ModelSpec::parse(spec).expect(spec).to_string(), spec);
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let cases = [
            ("gpt-4o", "no provider prefix"),
            ("mistral:large", "unknown provider"),
            ("openai:", "model name is empty"),
            ("openai-compatible:http://x/v1", "#MODEL"),
            ("openai-compatible:ftp://x#m", "http://"),
        ];
        for (spec, expected) in cases {
            let message = ModelSpec::parse(spec).expect_err(spec).to_string();
            assert!(message.contains(expected), "{spec}: {message}");
        }
    }

    #[test]
    fn compatible_servers_need_no_key() {
        let model =
            init_chat_model("openai-compatible:http://127.0.0.1:9/v1#m").expect("no key needed");
        assert_eq!(model.model_name(), "m");
    }
}
