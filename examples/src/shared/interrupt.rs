//! [`StopSignal`]: Ctrl-C stops a run cleanly. The first Ctrl-C asks the run to stop once
//! the step in progress is checkpointed; a second one stops at once (the last checkpoint
//! still holds, so `--resume` loses nothing that was saved).

use futures::StreamExt;
use graphkit::streaming::{RunStream, StreamEvent};
use graphkit::{Error as GraphError, State, StreamPayload};
use tokio_util::sync::CancellationToken;

use super::ExampleError;

/// A request to stop a run, from Ctrl-C or from code.
///
/// Clones share the request. A workflow's runner checks
/// [`is_requested`](Self::is_requested) between steps and passes
/// [`immediate`](Self::immediate) to `RunConfig::cancellation`.
#[derive(Debug, Clone, Default)]
pub struct StopSignal {
    requested: CancellationToken,
    immediate: CancellationToken,
}

impl StopSignal {
    /// A signal nothing has requested yet (and that no Ctrl-C triggers).
    pub fn new() -> Self {
        Self::default()
    }

    /// A signal triggered by Ctrl-C (SIGINT): the first asks for a clean stop, the second
    /// for an immediate one. Must be called inside a tokio runtime.
    pub(crate) fn on_ctrl_c(quiet: bool) -> Self {
        let signal = Self::new();
        let listener = signal.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            if !quiet {
                eprintln!(
                    "\nCtrl-C: stopping after the current step is checkpointed (Ctrl-C again to stop at once)"
                );
            }
            listener.request();
            if tokio::signal::ctrl_c().await.is_ok() {
                listener.immediate.cancel();
            }
        });
        signal
    }

    /// Asks the run to stop after the step in progress is checkpointed.
    pub fn request(&self) {
        self.requested.cancel();
    }

    /// `true` once a stop was asked for.
    pub(crate) fn is_requested(&self) -> bool {
        self.requested.is_cancelled()
    }

    /// Completes when a stop is asked for.
    pub(crate) async fn requested(&self) {
        self.requested.cancelled().await;
    }

    /// The token that cancels the run at once (a second Ctrl-C).
    pub(crate) fn immediate(&self) -> CancellationToken {
        self.immediate.clone()
    }

    /// The next event of a workflow's run `stream`, `None` once the run ended: how every
    /// runner reads its stream. A stop request is honoured at the next checkpoint (the step
    /// in progress is saved first) and a run cancelled at once (a second Ctrl-C) ends the
    /// same way: [`ExampleError::Interrupted`]. Cancel-safe, so it can sit in a `select!`.
    ///
    /// # Errors
    /// [`ExampleError::Interrupted`] as above; the run's own error otherwise.
    pub(crate) async fn next_event<S: State>(
        &self,
        stream: &mut RunStream<S>,
    ) -> Result<Option<StreamEvent<S>>, ExampleError> {
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                () = self.requested(), if !self.is_requested() => continue,
            };
            return match event {
                None => Ok(None),
                Some(Err(GraphError::Cancelled)) => Err(ExampleError::Interrupted),
                Some(Err(err)) => Err(err.into()),
                Some(Ok(event))
                    if matches!(event.payload, StreamPayload::Checkpoint(_))
                        && self.is_requested() =>
                {
                    Err(ExampleError::Interrupted)
                }
                Some(Ok(event)) => Ok(Some(event)),
            };
        }
    }
}
