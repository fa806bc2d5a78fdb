//! Running a compiled graph: the super-step loop and its phases.
//!
//! A run [starts](runner::start) from a new input or from the thread's pending step, then loops
//! over super-steps in the [`runner`]: each one [plans](plan) the tasks triggered by the
//! previous one, [executes](execute) them concurrently on one snapshot of the state, and
//! [applies](apply) their writes in a deterministic order; routers then look at the
//! post-step state to plan the next step. With a checkpointer each step is
//! [persisted](persist); a step that fails or pauses [stops](runner::stop) the run, saving what
//! the thread needs to resume. Runs are started by [`invoke`]; events go out through the
//! [`emitter`].

pub(crate) mod apply;
pub(crate) mod cache;
pub(crate) mod emitter;
pub(crate) mod execute;
pub(crate) mod invoke;
pub(crate) mod outcome;
pub(crate) mod persist;
pub(crate) mod plan;
pub(crate) mod runner;
pub(crate) mod subgraph;
pub(crate) mod thread;

use crate::error::Error;
use crate::state::State;

pub use crate::snapshot::UpdateAs;
pub use invoke::RunStream;
pub use outcome::{Outcome, Paused};

thread_local! {
    static BLOCKING_RUNTIME: std::cell::OnceCell<Result<tokio::runtime::Runtime, String>> =
        const { std::cell::OnceCell::new() };
}

/// Runs `future` to completion on this thread's current-thread runtime.
pub(crate) fn block_on<T>(future: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::BlockingInAsync);
    }
    BLOCKING_RUNTIME.with(|cell| {
        let runtime = cell.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        });
        match runtime {
            Ok(runtime) => runtime.block_on(future),
            Err(message) => Err(Error::Runtime(message.clone())),
        }
    })
}

/// A run that ended without an error: finished, or paused (a root run only; a subgraph's
/// pause reaches its parent task as the interrupt signal).
pub(crate) struct Done<S: State> {
    pub(crate) state: S,
    pub(crate) updates: Vec<S::Update>,
    /// The thread and the pending interrupts, when the run paused.
    pub(crate) paused: Option<(String, Vec<crate::interrupt::Interrupt>)>,
}

impl<S: State> Done<S> {
    /// The run's [`Outcome`].
    pub(crate) fn outcome(self) -> Outcome<S> {
        match self.paused {
            None => Outcome::Finished(self.state),
            Some((thread_id, interrupts)) => Outcome::Paused(Paused {
                state: self.state,
                thread_id,
                interrupts,
            }),
        }
    }
}
