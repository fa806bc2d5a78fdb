//! [`Investigation`]: what to investigate and within which limits (`--input` or the CLI).

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::shared::ExampleError;

/// The largest `max_depth` accepted (each iteration costs several model calls).
pub(crate) const MAX_DEPTH_LIMIT: u32 = 20;
/// The largest `max_queries_per_depth` accepted.
pub(crate) const MAX_QUERIES_LIMIT: u32 = 50;

/// One investigation: the subject and the research limits (the seed's settings).
///
/// ```
/// use graphkit_examples::due_diligence::Investigation;
///
/// let ok = Investigation::from_json("test", r#"{"subject": "Orrin Castellane", "max_depth": 2}"#)?;
/// assert_eq!(ok.max_depth, 2);
/// let err = Investigation::from_json("test", r#"{"subject": "  "}"#).unwrap_err();
/// assert!(err.to_string().contains("subject"));
/// # Ok::<(), graphkit_examples::shared::ExampleError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Investigation {
    /// The person or organization to investigate.
    pub subject: String,
    /// What is known about the subject (role, country, why it is investigated).
    #[serde(default)]
    pub context: String,
    /// Iterations of search and reflection (1 to 20; default 3).
    #[serde(default = "default_max_depth")]
    pub max_depth: u32,
    /// Queries per iteration (1 to 50; default 5).
    #[serde(default = "default_max_queries")]
    pub max_queries_per_depth: u32,
    /// Iterations without a new entity that stop the research (0 = never; default 2).
    #[serde(default = "default_stagnation")]
    pub stagnation_threshold: u32,
}

fn default_max_depth() -> u32 {
    3
}
fn default_max_queries() -> u32 {
    5
}
fn default_stagnation() -> u32 {
    2
}

impl Investigation {
    /// An investigation of `subject` with the default limits.
    pub fn new(subject: impl Into<String>, context: impl Into<String>) -> Self {
        Self {
            subject: subject.into(),
            context: context.into(),
            max_depth: default_max_depth(),
            max_queries_per_depth: default_max_queries(),
            stagnation_threshold: default_stagnation(),
        }
    }

    /// Parses and validates `text` (from `origin`, for messages).
    ///
    /// # Errors
    /// [`ExampleError::Input`] naming the field that is missing, mistyped or out of range.
    pub fn from_json(origin: &str, text: &str) -> Result<Self, ExampleError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let input: Self =
            serde_path_to_error::deserialize(&mut de).map_err(|e| ExampleError::Input {
                origin: origin.to_owned(),
                message: format!("field `{}`: {}", e.path(), e.inner()),
            })?;
        input.validate().map_err(|message| ExampleError::Input {
            origin: origin.to_owned(),
            message,
        })?;
        Ok(input)
    }

    /// Reads and validates a JSON file.
    ///
    /// # Errors
    /// [`ExampleError::Io`] when it cannot be read; [`ExampleError::Input`] as
    /// [`from_json`](Self::from_json).
    pub fn from_file(path: &Path) -> Result<Self, ExampleError> {
        let text = std::fs::read_to_string(path).map_err(|e| ExampleError::io("read", path, e))?;
        Self::from_json(&path.display().to_string(), &text)
    }

    /// Checks the rules the types cannot express.
    ///
    /// # Errors
    /// A message naming the field and its allowed range.
    pub fn validate(&self) -> Result<(), String> {
        if self.subject.trim().is_empty() {
            return Err(
                "field `subject` is empty: name the person or organization to investigate".into(),
            );
        }
        if !(1..=MAX_DEPTH_LIMIT).contains(&self.max_depth) {
            return Err(format!(
                "field `max_depth` is {}: it must be between 1 and {MAX_DEPTH_LIMIT} (iterations of search and reflection)",
                self.max_depth
            ));
        }
        if !(1..=MAX_QUERIES_LIMIT).contains(&self.max_queries_per_depth) {
            return Err(format!(
                "field `max_queries_per_depth` is {}: it must be between 1 and {MAX_QUERIES_LIMIT}",
                self.max_queries_per_depth
            ));
        }
        if self.stagnation_threshold > MAX_DEPTH_LIMIT {
            return Err(format!(
                "field `stagnation_threshold` is {}: it must be between 0 (off) and {MAX_DEPTH_LIMIT}",
                self.stagnation_threshold
            ));
        }
        Ok(())
    }

    /// The JSON Schema of the input file.
    pub(crate) fn schema_json() -> String {
        serde_json::to_string_pretty(&schemars::schema_for!(Investigation)).unwrap_or_default()
    }
}

/// A fictional evaluation persona: a subject of the offline corpus with what a good
/// investigation should find.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Persona {
    /// A short id (`castellane`).
    pub id: String,
    /// The subject.
    pub subject: String,
    /// Its context.
    pub context: String,
    /// Entities the report should contain (names or aliases).
    pub(crate) expected_entities: Vec<String>,
    /// Key phrases, one per expected red flag, each to be found in some red flag.
    pub(crate) expected_red_flags: Vec<String>,
}

/// The personas file shipped with the crate (`examples/inputs/due-diligence-personas.json`).
pub fn personas_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("inputs")
        .join("due-diligence-personas.json")
}

/// The corpus of the workflow (`examples/corpora/due-diligence/`).
pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join("due-diligence")
}

/// Reads the personas.
///
/// # Errors
/// [`ExampleError::Io`] or [`ExampleError::Input`].
pub fn read_personas(path: &Path) -> Result<Vec<Persona>, ExampleError> {
    let text = std::fs::read_to_string(path).map_err(|e| ExampleError::io("read", path, e))?;
    serde_json::from_str(&text).map_err(|e| ExampleError::Input {
        origin: path.display().to_string(),
        message: e.to_string(),
    })
}
