//! A run's link to its checkpointer: the thread lock, loading the starting checkpoint,
//! saving one checkpoint per super-step and the pending writes of tasks.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use crate::checkpoint::format::{self, GotoRecord, Loaded, Pending, TaskRecord};
use crate::checkpoint::{
    CheckpointRecord, CheckpointSource, Checkpointer, FORMAT_VERSION, PendingWrite,
    new_checkpoint_id, now_ms,
};
use crate::command::{Goto, Packet};
use crate::context::config::Durability;
use crate::context::task_link::{TaskLink, interrupt_id};
use crate::error::Error;
use crate::graph::compiled::GraphCore;
use crate::interrupt::{Interrupt, InterruptKind};
use crate::run::plan::Task;
use crate::state::State;

/// Take a full snapshot once the deltas since the last one outweigh it (and at least this
/// many bytes), so total bytes written stay proportional to the data, and loading replays
/// at most about one state's worth of deltas.
const MIN_SNAPSHOT_INTERVAL_BYTES: usize = 16 * 1024;
/// Never chain more deltas than this before a snapshot.
const MAX_CHAIN: usize = 1000;

/// One task's writes, borrowed for encoding (same JSON shape as `format::TaskWrite`).
#[derive(Serialize)]
#[serde(bound = "")]
pub(crate) struct TaskWriteRef<'a, S: State> {
    pub(crate) node: &'a str,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) updates: &'a [S::Update],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) gotos: Vec<GotoRecord>,
}

#[derive(Serialize)]
#[serde(bound = "")]
struct BodyRef<'a, S: State> {
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a S>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    writes: &'a [TaskWriteRef<'a, S>],
    next: &'a [TaskRecord],
    joins: &'a [Vec<bool>],
}

/// A pending write's payload, borrowed for encoding (same JSON shape as `format::Pending`).
#[derive(Serialize)]
#[serde(bound = "")]
pub(crate) enum PendingRef<'a, S: State> {
    Output(TaskWriteRef<'a, S>),
    Interrupt {
        id: &'a str,
        index: usize,
        payload: &'a Value,
    },
    Resume(&'a [Value]),
    Error {
        message: &'a str,
    },
}

pub(crate) fn goto_records(gotos: &[Goto]) -> Vec<GotoRecord> {
    gotos
        .iter()
        .map(|g| match g {
            Goto::Node(n) => GotoRecord::Node(n.to_string()),
            Goto::Send(s) => GotoRecord::Send {
                node: s.node.to_string(),
                input: s.input.to_json().unwrap_or(Value::Null),
            },
        })
        .collect()
}

pub(crate) fn task_records<S: State>(core: &GraphCore<S>, tasks: &[Task]) -> Vec<TaskRecord> {
    tasks
        .iter()
        .map(|t| TaskRecord {
            node: core.nodes[t.node].name.to_string(),
            input: t.input.as_ref().map(|p| p.to_json().unwrap_or(Value::Null)),
        })
        .collect()
}

fn decode_packet<S: State>(
    core: &GraphCore<S>,
    node: usize,
    input: Value,
) -> Result<Packet, String> {
    match core.nodes[node].decoder {
        Some(decode) => decode(input),
        None => Ok(Packet::new(input)),
    }
}

/// The writes of a task output, borrowed for a pending write.
pub(crate) fn output_ref<'a, S: State>(
    node: &'a str,
    output: &'a crate::graph::node::NodeOutput<S>,
) -> TaskWriteRef<'a, S> {
    use crate::graph::node::NodeOutput;
    let (updates, gotos): (&[S::Update], Vec<GotoRecord>) = match output {
        NodeOutput::Update(update) => (std::slice::from_ref(update), Vec::new()),
        NodeOutput::Updates(updates) => (updates, Vec::new()),
        NodeOutput::Command(command) => (command.update.as_slice(), goto_records(&command.goto)),
        NodeOutput::Writes { updates, gotos } => (updates, goto_records(gotos)),
    };
    TaskWriteRef {
        node,
        updates,
        gotos,
    }
}

/// What a loaded checkpoint says about the step it was waiting to run.
#[derive(Default)]
pub(crate) struct PendingStep<S: State> {
    /// Outputs of tasks that already finished, by task index.
    pub(crate) outputs: HashMap<usize, (Vec<S::Update>, Vec<Goto>)>,
    /// Unanswered dynamic interrupts, by task index.
    pub(crate) interrupts: HashMap<usize, Interrupt>,
    /// For each task in `interrupts`: which of its `interrupt` calls it paused on (how
    /// many answers it had then).
    pub(crate) asked: HashMap<usize, usize>,
    /// Resume values given so far, by task index.
    pub(crate) resume: HashMap<usize, Vec<Value>>,
    /// Static interrupts recorded on the checkpoint.
    pub(crate) static_interrupts: Vec<Interrupt>,
    /// Errors of tasks that failed, by task index.
    pub(crate) errors: HashMap<usize, String>,
}

impl<S: State> PendingStep<S> {
    /// All unanswered interrupts, dynamic ones in task order.
    pub(crate) fn all_interrupts(&self) -> Vec<Interrupt> {
        let mut dynamic: Vec<(&usize, &Interrupt)> = self.interrupts.iter().collect();
        dynamic.sort_by_key(|(i, _)| **i);
        dynamic
            .into_iter()
            .map(|(_, i)| i.clone())
            .chain(self.static_interrupts.iter().cloned())
            .collect()
    }
}

/// Decodes the pending writes of a checkpoint.
pub(crate) fn pending_step<S: State>(
    core: &GraphCore<S>,
    record: &CheckpointRecord,
    writes: &[PendingWrite],
) -> Result<PendingStep<S>, Error> {
    let corrupt = |message: String| Error::CorruptCheckpoint {
        thread_id: record.thread_id.clone(),
        checkpoint_id: record.checkpoint_id.clone(),
        message,
    };
    let mut step = PendingStep::default();
    for write in writes {
        let pending = format::decode_pending::<S>(record, &write.payload)?;
        let (is_resume, index) = match write.task_id.strip_prefix("resume:") {
            Some(rest) => (true, rest.parse::<usize>().ok()),
            None => (false, write.task_id.parse::<usize>().ok()),
        };
        match (pending, index) {
            (Pending::Output(output), Some(index)) if !is_resume => {
                let mut gotos = Vec::with_capacity(output.gotos.len());
                for goto in output.gotos {
                    gotos.push(match goto {
                        GotoRecord::Node(n) => Goto::Node(n.into()),
                        GotoRecord::Send { node, input } => {
                            let id = *core.by_name.get(node.as_str()).ok_or_else(|| {
                                corrupt(format!("a pending Send targets node `{node}`, which this graph does not have"))
                            })?;
                            let packet = decode_packet(core, id, input).map_err(|e| corrupt(format!("a pending Send input for `{node}` does not decode: {e}")))?;
                            Goto::Send(crate::command::SendTo { node: node.into(), input: packet })
                        }
                    });
                }
                step.interrupts.remove(&index);
                step.asked.remove(&index);
                step.errors.remove(&index);
                step.outputs.insert(index, (output.updates, gotos));
            }
            (
                Pending::Interrupt {
                    id,
                    payload,
                    index: asked,
                },
                Some(index),
            ) if !is_resume => {
                if !step.outputs.contains_key(&index) {
                    step.asked.insert(index, asked);
                    step.interrupts.insert(
                        index,
                        Interrupt {
                            id,
                            node: write.node.clone(),
                            payload,
                            kind: InterruptKind::Dynamic,
                        },
                    );
                }
            }
            (Pending::Interrupt { id, payload, .. }, None) => {
                let kind = if write.task_id.starts_with("after:") {
                    InterruptKind::After
                } else {
                    InterruptKind::Before
                };
                // Only the newest static pause is pending: an earlier one on the same
                // checkpoint was continued past already.
                if step
                    .static_interrupts
                    .last()
                    .is_some_and(|last| last.kind != kind)
                {
                    step.static_interrupts.clear();
                }
                step.static_interrupts.push(Interrupt {
                    id,
                    node: write.node.clone(),
                    payload,
                    kind,
                });
            }
            (Pending::Resume(values), Some(index)) if is_resume => {
                step.resume.insert(index, values);
            }
            (Pending::Error { message }, Some(index)) if !is_resume => {
                if !step.outputs.contains_key(&index) {
                    step.errors.insert(index, message);
                }
            }
            (_, _) => {
                return Err(corrupt(format!(
                    "pending write `{}` does not fit its task id",
                    write.task_id
                )));
            }
        }
    }
    Ok(step)
}

/// The most checkpoints one group commit of the background writer holds.
const GROUP_COMMIT_MAX: usize = 256;

/// Saves checkpoints in order on a background task (`Durability::Async`).
struct BackgroundWriter {
    queue: tokio::sync::mpsc::UnboundedSender<CheckpointRecord>,
    done: tokio::task::JoinHandle<Result<(), Error>>,
}

impl BackgroundWriter {
    fn start(saver: Arc<dyn Checkpointer>) -> Self {
        let (queue, mut records) = tokio::sync::mpsc::unbounded_channel::<CheckpointRecord>();
        let done = tokio::spawn(async move {
            // Everything queued while the last write ran goes out in one batch: a slow
            // disk means fewer, larger commits rather than a growing queue.
            let mut batch = Vec::new();
            while records.recv_many(&mut batch, GROUP_COMMIT_MAX).await > 0 {
                let records = std::mem::take(&mut batch);
                if records.len() == 1 {
                    for record in records {
                        saver.put(record).await?;
                    }
                } else {
                    saver.put_many(records).await?;
                }
            }
            Ok(())
        });
        Self { queue, done }
    }

    async fn finish(self) -> Result<(), Error> {
        drop(self.queue);
        self.done.await.map_err(|e| Error::Backend {
            backend: "checkpoint writer",
            message: e.to_string(),
        })?
    }
}

/// The run's persistence state.
pub(crate) struct Persist {
    pub(crate) saver: Arc<dyn Checkpointer>,
    durability: Durability,
    writer: Option<BackgroundWriter>,
    pub(crate) thread_id: String,
    pub(crate) ns: String,
    run_id: String,
    locked: bool,
    /// Where a run dropped while it held the thread (cancelled) leaves its unlock, for
    /// the run's caller to finish before it returns (see [`ThreadRelease`]).
    release: Option<ThreadRelease>,
    /// A subgraph run's persistence: the parent run holds the thread, and every
    /// checkpoint keeps the step's writes (even a snapshot), so that a resumed same-state
    /// subgraph can hand all its writes to the parent.
    nested: bool,
    /// The newest checkpoint of this run's branch (pending writes attach to it).
    pub(crate) current: Option<String>,
    /// The checkpoint that planned the current checkpoint's pending step, when that step
    /// moved to it from an earlier one (a `Command` input with an update or `goto`):
    /// subgraph tasks keep the namespace they started in.
    tasks_of: Option<String>,
    /// The next checkpoint saved takes over the current one's pending step.
    carry_tasks: bool,
    pub(crate) step: i64,
    chain_len: usize,
    delta_bytes: usize,
    snapshot_bytes: usize,
    /// Keys added to every checkpoint's metadata (`RunConfig::with_checkpoint_metadata`).
    extra_metadata: serde_json::Map<String, serde_json::Value>,
}

impl Persist {
    /// Takes the thread for this run.
    pub(crate) async fn open(
        saver: Arc<dyn Checkpointer>,
        thread_id: &str,
        durability: Durability,
    ) -> Result<Self, Error> {
        let mut persist = Self::unlocked(saver, durability, thread_id.to_owned(), String::new());
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
        let mut persist = Self::unlocked(
            Arc::clone(&link.saver),
            durability,
            link.thread_id.clone(),
            link.child_namespace(),
        );
        persist.nested = true;
        persist
    }

    /// A fresh run's persistence in namespace `ns`, before any checkpoint, holding no lock.
    fn unlocked(
        saver: Arc<dyn Checkpointer>,
        durability: Durability,
        thread_id: String,
        ns: String,
    ) -> Self {
        Self {
            saver,
            durability,
            writer: None,
            thread_id,
            ns,
            run_id: format!("{:016x}{:016x}", rand::random::<u64>(), std::process::id()),
            locked: false,
            release: None,
            nested: false,
            current: None,
            tasks_of: None,
            carry_tasks: false,
            step: -1,
            chain_len: 0,
            delta_bytes: 0,
            snapshot_bytes: 0,
            extra_metadata: serde_json::Map::new(),
        }
    }

    /// If this persistence is dropped while it holds the thread, its unlock goes to
    /// `release` instead of a background task.
    pub(crate) fn release_into(&mut self, release: &ThreadRelease) {
        self.release = Some(release.clone());
    }

    /// Adds these keys to the metadata of every checkpoint saved from now on.
    pub(crate) fn extra_metadata(&mut self, metadata: &serde_json::Map<String, serde_json::Value>) {
        self.extra_metadata.clone_from(metadata);
    }

    /// `true` unless checkpoints are written only when the run stops.
    pub(crate) fn per_step(&self) -> bool {
        self.durability != Durability::Exit
    }

    /// Waits for checkpoints still being written in the background.
    pub(crate) async fn flush(&mut self) -> Result<(), Error> {
        match self.writer.take() {
            Some(writer) => writer.finish().await,
            None => Ok(()),
        }
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

    /// Saves a checkpoint after `writes` were applied to `state`; returns its id.
    pub(crate) async fn save<S: State>(
        &mut self,
        source: CheckpointSource,
        state: &S,
        writes: &[TaskWriteRef<'_, S>],
        next: &[TaskRecord],
        joins: &[Vec<bool>],
        ran: &[&str],
    ) -> Result<CheckpointRecord, Error> {
        // Without a checkpoint per step the parent holds an older state, so only a full
        // snapshot is correct; the first checkpoint and a long chain need one too. Only
        // otherwise is the delta encoded, and then it is kept unless it outweighs the last
        // snapshot.
        let must_snapshot =
            !self.per_step() || self.current.is_none() || self.chain_len >= MAX_CHAIN;
        let delta = if must_snapshot {
            None
        } else {
            let body = BodyRef::<S> {
                state: None,
                writes,
                next,
                joins,
            };
            Some(format::encode(&body, "checkpoint delta")?)
        };
        let threshold = self.snapshot_bytes.max(MIN_SNAPSHOT_INTERVAL_BYTES);
        let (payload, is_snapshot) = match delta {
            Some(delta) if self.delta_bytes + delta.len() <= threshold => {
                self.chain_len += 1;
                self.delta_bytes += delta.len();
                (delta, false)
            }
            _ => {
                let body = BodyRef::<S> {
                    state: Some(state),
                    writes: if self.nested { writes } else { &[] },
                    next,
                    joins,
                };
                let full = format::encode(&body, "checkpoint state")?;
                self.chain_len = 0;
                self.delta_bytes = 0;
                self.snapshot_bytes = full.len();
                (full, true)
            }
        };
        self.step += 1;
        let tasks_of = match std::mem::take(&mut self.carry_tasks) {
            true => self.tasks_of.take().or_else(|| self.current.clone()),
            false => None,
        };
        let mut metadata = json!({ "source": source.as_str(), "step": self.step, "run_id": self.run_id, "writes": ran });
        if let (Some(origin), Some(map)) = (&tasks_of, metadata.as_object_mut()) {
            map.insert("tasks_of".into(), Value::String(origin.clone()));
        }
        if let Some(map) = metadata.as_object_mut() {
            for (key, value) in &self.extra_metadata {
                map.insert(key.clone(), value.clone());
            }
        }
        let record = CheckpointRecord {
            thread_id: self.thread_id.clone(),
            checkpoint_ns: self.ns.clone(),
            checkpoint_id: new_checkpoint_id(self.current.as_deref()),
            parent_id: self.current.clone(),
            format_version: FORMAT_VERSION,
            step: self.step,
            source,
            created_at_ms: now_ms(),
            metadata,
            is_snapshot,
            payload,
        };
        let span = tracing::debug_span!(
            "checkpoint_save",
            thread_id = %self.thread_id,
            step = self.step,
            checkpoint_id = %record.checkpoint_id,
            bytes = record.payload.len(),
            snapshot = is_snapshot,
        );
        match self.durability {
            Durability::Async => {
                let saver = &self.saver;
                let writer = self
                    .writer
                    .get_or_insert_with(|| BackgroundWriter::start(Arc::clone(saver)));
                if writer.queue.send(record.clone()).is_err() {
                    // The writer stopped on an error: report it.
                    self.flush().await?;
                }
            }
            Durability::Sync | Durability::Exit => {
                tracing::Instrument::instrument(self.saver.put(record.clone()), span).await?;
            }
        }
        self.current = Some(record.checkpoint_id.clone());
        self.tasks_of = tasks_of;
        Ok(record)
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
            .list(
                &self.thread_id,
                &self.ns,
                &crate::checkpoint::ListOptions::default(),
            )
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

    /// The next checkpoint saved holds the current one's pending step (moved there with
    /// its pending writes): its subgraph tasks keep their namespaces.
    pub(crate) fn carry_pending_tasks(&mut self) {
        self.carry_tasks = true;
    }

    /// `true` when checkpoint `checkpoint_id` is the thread's newest.
    pub(crate) async fn is_newest(&self, checkpoint_id: &str) -> Result<bool, Error> {
        let newest = self.saver.get(&self.thread_id, &self.ns, None).await?;
        Ok(newest.is_some_and(|t| t.record.checkpoint_id == checkpoint_id))
    }

    /// Saves `writes` (pending writes loaded from an earlier checkpoint) against the
    /// current checkpoint, which now holds the same pending step.
    pub(crate) async fn copy_pending(&self, writes: Vec<PendingWrite>) -> Result<(), Error> {
        let Some(checkpoint_id) = &self.current else {
            return Ok(());
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, checkpoint_id, writes)
            .await
    }

    /// What a task needs to save its own pending write.
    pub(crate) fn task_saver(&self, index: usize, save_output: bool) -> Option<TaskSaver> {
        if !self.per_step() {
            return None;
        }
        let checkpoint_id = self.current.clone()?;
        Some(TaskSaver {
            saver: Arc::clone(&self.saver),
            thread_id: self.thread_id.clone(),
            ns: self.ns.clone(),
            checkpoint_id,
            tasks_of: self.tasks_of.clone(),
            index,
            save_output,
        })
    }

    /// Saves a pending write against the current checkpoint.
    pub(crate) async fn save_pending<S: State>(
        &self,
        task_id: String,
        node: &str,
        pending: &PendingRef<'_, S>,
    ) -> Result<(), Error> {
        let Some(checkpoint_id) = &self.current else {
            return Ok(());
        };
        let payload = format::encode(pending, "pending write")?;
        let write = PendingWrite {
            task_id,
            node: node.to_owned(),
            payload,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, checkpoint_id, vec![write])
            .await
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
        if let Some(unlock) = self.0.take() {
            unlock.run().await;
        }
    }
}

/// Lets a task save its output (or its interrupt) the moment it finishes.
pub(crate) struct TaskSaver {
    saver: Arc<dyn Checkpointer>,
    thread_id: String,
    ns: String,
    pub(crate) checkpoint_id: String,
    /// The checkpoint that planned the task, if not `checkpoint_id`.
    tasks_of: Option<String>,
    pub(crate) index: usize,
    save_output: bool,
}

impl TaskSaver {
    /// `true` when `result` is something this saver keeps: an output (if it saves
    /// outputs) or an interrupt.
    pub(crate) fn wants<S: State>(
        &self,
        result: &Result<crate::graph::node::NodeOutput<S>, Error>,
    ) -> bool {
        match result {
            Ok(_) => self.save_output,
            Err(Error::Interrupt(_)) => true,
            Err(_) => false,
        }
    }

    pub(crate) async fn output<S: State>(
        &self,
        node: &str,
        output: &crate::graph::node::NodeOutput<S>,
    ) -> Result<(), Error> {
        if !self.save_output {
            return Ok(());
        }
        let pending: PendingRef<'_, S> = PendingRef::Output(output_ref(node, output));
        self.put(
            node,
            self.index.to_string(),
            format::encode(&pending, "pending write")?,
        )
        .await
    }

    pub(crate) async fn interrupt<S: State>(
        &self,
        node: &str,
        index: usize,
        payload: &Value,
    ) -> Result<(), Error> {
        let id = interrupt_id(&self.checkpoint_id, self.index);
        let pending: PendingRef<'_, S> = PendingRef::Interrupt {
            id: &id,
            index,
            payload,
        };
        self.put(
            node,
            self.index.to_string(),
            format::encode(&pending, "pending write")?,
        )
        .await
    }

    /// Where the task (of node `node`) runs in the thread, for a subgraph run inside it.
    pub(crate) fn link(&self, node: &Arc<str>) -> Arc<TaskLink> {
        Arc::new(TaskLink {
            saver: Arc::clone(&self.saver),
            thread_id: self.thread_id.clone(),
            ns: self.ns.clone(),
            tasks_of: self.tasks_of.clone(),
            checkpoint_id: self.checkpoint_id.clone(),
            index: self.index,
            node: Arc::clone(node),
        })
    }

    async fn put(&self, node: &str, task_id: String, payload: Vec<u8>) -> Result<(), Error> {
        let write = PendingWrite {
            task_id,
            node: node.to_owned(),
            payload,
        };
        self.saver
            .put_writes(&self.thread_id, &self.ns, &self.checkpoint_id, vec![write])
            .await
    }
}

/// The checkpoint that planned `record`'s pending step, when the step moved to `record`
/// from it.
pub(crate) fn tasks_of(record: &CheckpointRecord) -> Option<&str> {
    record.metadata.get("tasks_of").and_then(Value::as_str)
}

/// Rebuilds the tasks a checkpoint planned.
pub(crate) fn restore_tasks<S: State>(
    core: &GraphCore<S>,
    record: &CheckpointRecord,
    next: Vec<TaskRecord>,
) -> Result<Vec<Task>, Error> {
    next.into_iter()
        .map(|t| {
            let corrupt = |message: String| Error::CorruptCheckpoint {
                thread_id: record.thread_id.clone(),
                checkpoint_id: record.checkpoint_id.clone(),
                message,
            };
            let node = *core.by_name.get(t.node.as_str()).ok_or_else(|| {
                corrupt(format!(
                    "it plans node `{}`, which this graph does not have",
                    t.node
                ))
            })?;
            let input = match t.input {
                Some(value) => Some(decode_packet(core, node, value).map_err(|e| {
                    corrupt(format!(
                        "a Send input for `{}` does not decode: {e}",
                        t.node
                    ))
                })?),
                None => None,
            };
            Ok(Task { node, input })
        })
        .collect()
}
