//! [`StopSignal`]: Ctrl-C stops a run cleanly. The first Ctrl-C asks the run to stop once
//! the step in progress is checkpointed; a second one stops at once (the last checkpoint
//! still holds, so `--resume` loses nothing that was saved).

use tokio_util::sync::CancellationToken;

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
    pub fn on_ctrl_c(quiet: bool) -> Self {
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
    pub fn is_requested(&self) -> bool {
        self.requested.is_cancelled()
    }

    /// Completes when a stop is asked for.
    pub async fn requested(&self) {
        self.requested.cancelled().await;
    }

    /// The token that cancels the run at once (a second Ctrl-C).
    pub fn immediate(&self) -> CancellationToken {
        self.immediate.clone()
    }
}
