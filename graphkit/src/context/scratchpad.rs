//! The per-task scratchpad that answers a node's `interrupt` calls.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::error::Error;
use crate::interrupt::InterruptSignal;

/// Per-task interrupt bookkeeping: resume values so far and the call counter.
#[derive(Debug, Default)]
pub(crate) struct Scratchpad {
    pub(crate) resume: Vec<Value>,
    calls: AtomicUsize,
}

impl Scratchpad {
    pub(crate) fn new(resume: Vec<Value>) -> Arc<Self> {
        Arc::new(Self {
            resume,
            calls: AtomicUsize::new(0),
        })
    }

    /// The `interrupt` call: the resume value for this call, or the pause signal.
    pub(crate) fn interrupt(&self, payload: Value) -> Result<Value, Error> {
        let index = self.calls.fetch_add(1, Ordering::SeqCst);
        match self.resume.get(index) {
            Some(value) => Ok(value.clone()),
            None => Err(Error::Interrupt(InterruptSignal { index, payload })),
        }
    }
}
