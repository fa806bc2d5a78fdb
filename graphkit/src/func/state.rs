//! The state of an entrypoint's graph: its input, what it returned, what it saved.

use std::fmt::Debug;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::command::RunInput;
use crate::error::Error;
use crate::state::{Field, ReducerKind, State, StateUpdate, StepWrites};

/// A value the functional API keeps in checkpoints: an entrypoint's input, return value
/// and saved value, and a task's result. Implemented for every type that qualifies.
pub trait Data: Clone + Debug + Send + Sync + Serialize + DeserializeOwned + 'static {}

impl<T: Clone + Debug + Send + Sync + Serialize + DeserializeOwned + 'static> Data for T {}

/// The state of an entrypoint (an [`Entrypoint`](super::Entrypoint) is a compiled graph
/// over it): the input of the latest invocation, the value it returned, and the value it
/// saved for the next invocation on the thread (what
/// [`EntrypointContext::previous`](super::EntrypointContext::previous) reads).
///
/// `get_state` on a thread shows it; [`Self::into_output`] gives the returned value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "I: Data, O: Data, P: Data")]
pub struct EntrypointState<I, O, P = O> {
    /// The input of the latest invocation.
    pub input: Option<I>,
    /// What the latest finished invocation returned.
    pub output: Option<O>,
    /// What the latest finished invocation saved for the next one.
    pub saved: Option<P>,
}

impl<I, O, P> Default for EntrypointState<I, O, P> {
    fn default() -> Self {
        Self {
            input: None,
            output: None,
            saved: None,
        }
    }
}

impl<I, O, P> EntrypointState<I, O, P> {
    /// What the entrypoint returned (`None` before it finished once).
    pub fn into_output(self) -> Option<O> {
        self.output
    }
}

/// An update of an [`EntrypointState`]; every field is a last value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound = "I: Data, O: Data, P: Data")]
pub struct EntrypointUpdate<I, O, P = O> {
    /// A new input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<I>,
    /// A returned value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<O>,
    /// A saved value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<P>,
}

impl<I, O, P> Default for EntrypointUpdate<I, O, P> {
    fn default() -> Self {
        Self {
            input: None,
            output: None,
            saved: None,
        }
    }
}

impl<I, O, P> EntrypointUpdate<I, O, P> {
    /// An update that starts an invocation with `input` (what `invoke(input)` applies).
    pub fn input(input: I) -> Self {
        Self {
            input: Some(input),
            output: None,
            saved: None,
        }
    }
}

impl<I: Data, O: Data, P: Data> StateUpdate for EntrypointUpdate<I, O, P> {
    fn is_empty(&self) -> bool {
        self.input.is_none() && self.output.is_none() && self.saved.is_none()
    }

    fn written_fields(&self) -> Vec<&'static str> {
        let written = [
            self.input.is_some(),
            self.output.is_some(),
            self.saved.is_some(),
        ];
        FIELDS
            .iter()
            .zip(written)
            .filter(|(_, w)| *w)
            .map(|(f, _)| f.name)
            .collect()
    }
}

const FIELDS: &[Field] = &[
    Field {
        name: "input",
        reducer: ReducerKind::LastValue,
    },
    Field {
        name: "output",
        reducer: ReducerKind::LastValue,
    },
    Field {
        name: "saved",
        reducer: ReducerKind::LastValue,
    },
];

// Not suggested when a user's type is not a `State` (deriving is the fix there).
#[diagnostic::do_not_recommend]
impl<I: Data, O: Data, P: Data> State for EntrypointState<I, O, P> {
    type Update = EntrypointUpdate<I, O, P>;

    const FIELDS: &'static [Field] = FIELDS;

    fn apply(&mut self, update: Self::Update, writes: &mut StepWrites) -> Result<(), Error> {
        if let Some(input) = update.input {
            writes.claim(0, "input")?;
            self.input = Some(input);
        }
        if let Some(output) = update.output {
            writes.claim(1, "output")?;
            self.output = Some(output);
        }
        if let Some(saved) = update.saved {
            writes.claim(2, "saved")?;
            self.saved = Some(saved);
        }
        Ok(())
    }
}

/// `invoke(input)` on an entrypoint starts it with `input`.
impl<I: Data, O: Data, P: Data> From<I> for RunInput<EntrypointState<I, O, P>> {
    fn from(input: I) -> Self {
        Self::Update(EntrypointUpdate::input(input))
    }
}

impl<I: Data, O: Data, P: Data> From<EntrypointUpdate<I, O, P>>
    for RunInput<EntrypointState<I, O, P>>
{
    fn from(update: EntrypointUpdate<I, O, P>) -> Self {
        Self::Update(update)
    }
}

/// What an entrypoint made with [`entrypoint_final`](super::entrypoint_final) returns:
/// the value for the caller and, apart from it, the value saved for the next invocation
/// on the thread (LangGraph's `entrypoint.final(value=..., save=...)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Final<O, P = O> {
    /// What the invocation returns.
    pub value: O,
    /// What the next invocation on the thread reads as its previous value.
    pub save: P,
}

impl<O, P> Final<O, P> {
    /// Returns `value` and saves `save`.
    pub fn new(value: O, save: P) -> Self {
        Self { value, save }
    }
}
