//! Loading: the checkpoint a run starts from, and what a resumed subgraph already wrote.

use super::Persist;
use super::restore::tasks_of;
use crate::checkpoint::format::{self, Loaded};
use crate::checkpoint::{ListOptions, PendingWrite};
use crate::error::Error;
use crate::state::State;

impl Persist {
    /// Loads the checkpoint to start from: `checkpoint_id`, or the thread's newest.
    pub(crate) async fn load<S: State>(
        &mut self,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<(Loaded<S>, Vec<PendingWrite>)>, Error> {
        let Some(tuple) = self
            .saver
            .get(&self.thread_id, &self.ns, checkpoint_id)
            .await?
        else {
            return match checkpoint_id {
                Some(id) => Err(Error::CheckpointNotFound {
                    thread_id: self.thread_id.clone(),
                    checkpoint_id: Some(id.to_owned()),
                }),
                None => Ok(None),
            };
        };
        let loaded = format::load::<S>(&*self.saver, tuple.record).await?;
        self.current = Some(loaded.record.checkpoint_id.clone());
        self.tasks_of = tasks_of(&loaded.record).map(str::to_owned);
        self.step = loaded.record.step;
        self.chain_len = loaded.chain_len;
        self.delta_bytes = loaded.delta_bytes;
        self.snapshot_bytes = loaded.snapshot_bytes;
        Ok(Some((loaded, tuple.pending_writes)))
    }

    /// `true` when checkpoint `checkpoint_id` is the thread's newest.
    pub(crate) async fn is_newest(&self, checkpoint_id: &str) -> Result<bool, Error> {
        let newest = self.saver.get(&self.thread_id, &self.ns, None).await?;
        Ok(newest.is_some_and(|t| t.record.checkpoint_id == checkpoint_id))
    }

    /// Every update the checkpoints of this (subgraph) run's namespace recorded, up to and
    /// including `upto`, in apply order: what a same-state subgraph resumed mid-way has
    /// already written (the input's empty update left out).
    pub(crate) async fn recorded_updates<S: State>(
        &self,
        upto: &str,
    ) -> Result<Vec<S::Update>, Error> {
        use crate::state::StateUpdate;
        let records = self
            .saver
            .list(&self.thread_id, &self.ns, &ListOptions::default())
            .await?;
        let mut updates = Vec::new();
        for record in records.iter().rev() {
            if record.checkpoint_id.as_str() > upto {
                break;
            }
            let body = format::decode_body::<S>(record)?;
            for write in body.writes {
                updates.extend(write.updates.into_iter().filter(|u| !u.is_empty()));
            }
        }
        Ok(updates)
    }
}
