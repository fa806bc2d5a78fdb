//! Interrupts: pausing a run for a human (or any outside answer) and resuming it.
//!
//! A node calls [`NodeContext::interrupt`](crate::NodeContext::interrupt) with a payload.
//! The first time, the call returns an error that the node passes on with `?`: the run
//! stops, the thread keeps the payload, and `invoke` returns [`Outcome::Paused`](crate::Outcome::Paused). The
//! next run on the thread with [`Command::resume`](crate::Command::resume) re-runs the
//! node, and this time the same call returns the resume value. Several interrupts in one
//! node are matched by order.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A pending interrupt, as shown by `get_state` and returned with [`Outcome::Paused`](crate::Outcome::Paused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Resume this interrupt by id when several are pending ([`Resume::by_id`]).
    pub id: String,
    /// The node that asked.
    pub node: String,
    /// What it asked (the payload given to `interrupt`); `null` for a static interrupt.
    pub payload: Value,
    /// `"dynamic"` for `interrupt(...)`, `"before"` / `"after"` for static interrupts.
    pub kind: InterruptKind,
}

/// Where an interrupt comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InterruptKind {
    /// A node called `interrupt(payload)`.
    Dynamic,
    /// `interrupt_before` the node.
    Before,
    /// `interrupt_after` the node.
    After,
}

/// The answer to pending interrupts.
#[derive(Debug, Clone, PartialEq)]
pub enum Resume {
    /// One value for the single pending interrupt.
    Value(Value),
    /// Values by interrupt id, for several pending interrupts (from parallel tasks).
    ById(HashMap<String, Value>),
}

impl Resume {
    /// Answers the single pending interrupt.
    pub fn value(value: impl Into<Value>) -> Self {
        Self::Value(value.into())
    }

    /// Answers interrupts by id.
    pub fn by_id<K: Into<String>, V: Into<Value>>(
        values: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self::ById(
            values
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

/// The control-flow signal a node raises (through `?`) when it pauses.
#[derive(Debug, Clone)]
pub struct InterruptSignal {
    pub(crate) index: usize,
    pub(crate) payload: Value,
    /// The functional-API task call that asked (`""` for the entrypoint itself), when
    /// the interrupt was raised inside an entrypoint.
    pub(crate) call: Option<std::sync::Arc<str>>,
}

impl InterruptSignal {
    /// What the node asked with (the `interrupt` payload).
    pub fn payload(&self) -> &Value {
        &self.payload
    }
}
