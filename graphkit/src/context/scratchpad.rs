//! The per-task scratchpad that answers a node's `interrupt` calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::checkpoint::format::CallRecord;
use crate::error::Error;
use crate::interrupt::InterruptSignal;

/// Per-task interrupt bookkeeping: resume values so far and the call counter.
#[derive(Debug, Default)]
pub(crate) struct Scratchpad {
    pub(crate) resume: Vec<Value>,
    calls: AtomicUsize,
    /// What an entrypoint task (functional API) recorded of its task calls in earlier runs.
    pub(crate) recorded: Vec<CallRecord>,
    /// The functional-API call this scratchpad belongs to, if any: its interrupts say so.
    call: Option<Arc<str>>,
}

impl Scratchpad {
    pub(crate) fn new(resume: Vec<Value>) -> Arc<Self> {
        Arc::new(Self {
            resume,
            ..Self::default()
        })
    }

    /// A task's scratchpad with what its functional-API calls recorded.
    pub(crate) fn with_recorded(resume: Vec<Value>, recorded: Vec<CallRecord>) -> Arc<Self> {
        Arc::new(Self {
            resume,
            recorded,
            ..Self::default()
        })
    }

    /// The scratchpad of one functional-API call: `resume` holds the answers to its own
    /// interrupts, in order.
    pub(crate) fn for_call(call: Arc<str>, resume: Vec<Value>) -> Arc<Self> {
        Arc::new(Self {
            resume,
            call: Some(call),
            ..Self::default()
        })
    }

    /// The `interrupt` call: the resume value for this call, or the pause signal.
    pub(crate) fn interrupt(&self, payload: Value) -> Result<Value, Error> {
        let index = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.resume.get(index) {
            Some(value) => Ok(value.clone()),
            None => Err(Error::Interrupt(InterruptSignal {
                index,
                payload,
                call: self.call.clone(),
            })),
        }
    }
}
