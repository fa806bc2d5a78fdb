//! The thread lock: one run at a time per thread. A run takes it when it opens the
//! thread and gives it back when it ends; a run dropped half-way (cancelled) leaves the
//! unlock to its caller, or else to the runtime.

use std::sync::Arc;

use super::Persist;
use crate::checkpoint::Checkpointer;
use crate::context::config::Durability;
use crate::context::task_link::TaskLink;
use crate::error::Error;

impl Persist {
    /// Takes the thread for this run.
    pub(crate) async fn open(
        saver: Arc<dyn Checkpointer>,
        thread_id: &str,
        durability: Durability,
    ) -> Result<Self, Error> {
        Self::open_in(saver, thread_id, "", durability).await
    }

    /// [`open`](Self::open) for the checkpoints of namespace `ns` (a subgraph's, written
    /// from outside a run: the thread is locked as for a run).
    pub(crate) async fn open_in(
        saver: Arc<dyn Checkpointer>,
        thread_id: &str,
        ns: &str,
        durability: Durability,
    ) -> Result<Self, Error> {
        let mut persist = Self::unlocked(saver, durability, thread_id.to_owned(), ns.to_owned());
        if !persist
            .saver
            .try_lock_thread(thread_id, &persist.run_id)
            .await?
        {
            return Err(Error::ThreadBusy(thread_id.to_owned()));
        }
        persist.locked = true;
        Ok(persist)
    }

    /// The persistence of a subgraph run inside the task `link` describes: checkpoints in
    /// the task's own namespace on the parent's thread, which the parent run holds.
    pub(crate) fn nested(link: &TaskLink, durability: Durability) -> Self {
        Self::unlocked(
            Arc::clone(&link.saver),
            durability,
            link.thread_id.clone(),
            link.child_namespace(),
        )
    }

    /// If this persistence is dropped while it holds the thread, its unlock goes to
    /// `release` instead of a background task.
    pub(crate) fn release_into(&mut self, release: &ThreadRelease) {
        self.release = Some(release.clone());
    }

    /// Waits for pending checkpoint writes, then releases the thread.
    pub(crate) async fn release(mut self) -> Result<(), Error> {
        let flushed = self.flush().await;
        if !self.locked {
            return flushed;
        }
        self.take_unlock().run().await;
        flushed
    }

    /// The unlock of the thread this run holds; the run no longer counts as holding it.
    fn take_unlock(&mut self) -> Unlock {
        self.locked = false;
        Unlock {
            saver: Arc::clone(&self.saver),
            thread_id: std::mem::take(&mut self.thread_id),
            run_id: std::mem::take(&mut self.run_id),
        }
    }
}

impl Drop for Persist {
    fn drop(&mut self) {
        if !self.locked {
            return;
        }
        // The run was dropped (cancelled) before it released the thread: leave the unlock
        // to the run's caller, or else release it on the runtime, if there still is one.
        let unlock = self.take_unlock();
        if let Some(release) = &self.release {
            release.leave(unlock);
        } else if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(unlock.run());
        }
    }
}

/// Releasing a thread lock that a dropped run still held.
struct Unlock {
    saver: Arc<dyn Checkpointer>,
    thread_id: String,
    run_id: String,
}

impl Unlock {
    async fn run(self) {
        if let Err(err) = self
            .saver
            .unlock_thread(&self.thread_id, &self.run_id)
            .await
        {
            tracing::warn!(thread = %self.thread_id, %err, "could not release the thread lock");
        }
    }
}

/// Where a cancelled run's persistence leaves the unlock of its thread, so that the run
/// returns only once the thread is free: the next run on the thread (the server's next
/// queued run, say) never finds it busy. If the whole run is dropped instead (nobody
/// [finishes](Self::finish) it), the unlock runs on the runtime when the last handle goes.
#[derive(Clone, Default)]
pub(crate) struct ThreadRelease(Arc<UnlockSlot>);

#[derive(Default)]
struct UnlockSlot(std::sync::Mutex<Option<Unlock>>);

impl UnlockSlot {
    fn take(&self) -> Option<Unlock> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

impl Drop for UnlockSlot {
    fn drop(&mut self) {
        if let Some(unlock) = self.take()
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            handle.spawn(unlock.run());
        }
    }
}

impl ThreadRelease {
    fn leave(&self, unlock: Unlock) {
        *self
            .0
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(unlock);
    }

    /// Releases the thread if a dropped run left it locked.
    pub(crate) async fn finish(&self) {
        // (Boxed: a run that needs no unlock keeps no room for one in its future.)
        if let Some(unlock) = self.0.take() {
            Box::pin(unlock.run()).await;
        }
    }
}
