//! How a run ended: [`Outcome`], finished or paused.

use crate::error::Error;
use crate::interrupt::Interrupt;

/// How a run ended: it finished, or it paused for a human. Errors are `Err`; a pause is
/// not an error.
///
/// ```
/// use std::sync::Arc;
/// use graphkit::checkpoint::InMemorySaver;
/// use graphkit::{Command, CompileOptions, NodeContext, Outcome, RunConfig, START, State, StateGraph};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Draft { text: String }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut graph = StateGraph::<Draft>::new();
/// graph
///     .add_node("review", |ctx: NodeContext| async move {
///         let verdict = ctx.interrupt("approve the draft?")?;
///         Ok::<_, graphkit::Error>(DraftUpdate::new().text(verdict.to_string()))
///     })
///     .add_edge(START, "review");
/// let graph = graph.compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))?;
/// let thread = RunConfig::new().thread_id("draft-1");
///
/// match graph.invoke_with(DraftUpdate::new(), thread.clone()).await? {
///     Outcome::Paused(paused) => assert_eq!(paused.interrupts[0].payload, "approve the draft?"),
///     Outcome::Finished(_) => unreachable!("the review pauses"),
/// }
/// let done = graph.invoke_with(Command::resume("yes"), thread).await?;
/// assert_eq!(done.into_state().text, "\"yes\"");
/// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
/// ```
#[must_use = "a run may have paused: take the state with `into_state()`, or check `is_paused()`"]
#[derive(Debug, Clone)]
pub enum Outcome<S> {
    /// The run reached its end: the final state.
    Finished(S),
    /// The run paused on interrupts; resume it on the same thread.
    Paused(Paused<S>),
}

/// A run paused on interrupts: the state so far, the thread, and what to answer.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Paused<S> {
    /// The state as of the run's last completed step (writes of tasks of the paused step
    /// that finished are saved with the thread; `get_state` shows them).
    pub state: S,
    /// The thread to resume on.
    pub thread_id: String,
    /// The pending interrupts: answer dynamic ones with `Command::resume` (by id when there
    /// are several), continue past static ones with `RunInput::Continue`.
    pub interrupts: Vec<Interrupt>,
}

impl<S> Outcome<S> {
    /// `true` when the run reached its end.
    pub fn is_finished(&self) -> bool {
        matches!(self, Self::Finished(_))
    }

    /// `true` when the run paused on interrupts.
    pub fn is_paused(&self) -> bool {
        matches!(self, Self::Paused(_))
    }

    /// The state: the final one, or the one at the pause.
    pub fn state(&self) -> &S {
        match self {
            Self::Finished(state) => state,
            Self::Paused(paused) => &paused.state,
        }
    }

    /// Takes the state: the final one, or the one at the pause.
    pub fn into_state(self) -> S {
        match self {
            Self::Finished(state) => state,
            Self::Paused(paused) => paused.state,
        }
    }

    /// The pending interrupts; empty when the run finished.
    pub fn interrupts(&self) -> &[Interrupt] {
        match self {
            Self::Finished(_) => &[],
            Self::Paused(paused) => &paused.interrupts,
        }
    }

    /// The pause, if the run paused.
    pub fn paused(&self) -> Option<&Paused<S>> {
        match self {
            Self::Finished(_) => None,
            Self::Paused(paused) => Some(paused),
        }
    }

    /// The final state of a run that was expected to finish.
    ///
    /// # Errors
    /// [`Error::NotFinished`] when the run paused, with its thread and interrupts.
    pub fn finished(self) -> Result<S, Error> {
        match self {
            Self::Finished(state) => Ok(state),
            Self::Paused(paused) => Err(Error::NotFinished {
                thread_id: paused.thread_id,
                interrupts: paused.interrupts,
            }),
        }
    }
}
