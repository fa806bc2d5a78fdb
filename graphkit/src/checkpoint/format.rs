//! The payload graphkit writes into a [`CheckpointRecord`]: a full state or a delta, the
//! next tasks, join progress, held tasks of deferred nodes; and the payload of a
//! [`PendingWrite`].
//!
//! Encoded as JSON. A delta holds the updates the step applied, in apply order; since
//! reducers are pure, replaying deltas on the nearest earlier snapshot rebuilds the state.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CheckpointRecord, Checkpointer, FORMAT_VERSION};
use crate::error::StorageError;
use crate::state::{State, in_storage_form};

/// A planned task as stored: its node, and its Send input as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct TaskRecord {
    pub(crate) node: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input: Option<Value>,
}

/// Where a stored `Command` routed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum GotoRecord {
    Node(String),
    Send { node: String, input: Value },
}

/// One task's writes.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) struct TaskWrite<S: State> {
    pub(crate) node: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) updates: Vec<S::Update>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) gotos: Vec<GotoRecord>,
}

/// The body of a checkpoint.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) struct Body<S: State> {
    /// The full state (snapshots only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) state: Option<S>,
    /// The writes applied since the parent checkpoint, in order (deltas only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) writes: Vec<TaskWrite<S>>,
    /// The tasks of the next super-step.
    #[serde(default)]
    pub(crate) next: Vec<TaskRecord>,
    /// Join progress.
    #[serde(default)]
    pub(crate) joins: Vec<Vec<bool>>,
    /// Tasks of deferred nodes held until nothing else is left to run (absent when none
    /// are, and in checkpoints written before deferred nodes existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) deferred: Vec<TaskRecord>,
}

/// What a pending write holds.
#[derive(Debug, Serialize, Deserialize)]
#[serde(bound = "")]
pub(crate) enum Pending<S: State> {
    /// A task finished with these writes.
    Output(TaskWrite<S>),
    /// A task paused on `interrupt(payload)`, its `index`-th interrupt call.
    Interrupt {
        id: String,
        index: usize,
        payload: Value,
    },
    /// Resume values given to a task so far, in interrupt order.
    Resume(Vec<Value>),
    /// A task failed with this error (it runs again when the thread continues).
    Error { message: String },
    /// What an entrypoint's task (functional API) recorded while it ran: a finished task
    /// call's result, or which call asked the question a pause of the task stopped on.
    Call(CallRecord),
}

/// A record of the functional API, saved as a pending write of the entrypoint's task so
/// that the entrypoint, run again, replays its finished task calls and hands each resume
/// value to the call that asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum CallRecord {
    /// The task call `call` (its name and call order) finished with `result`.
    Result { call: String, result: Value },
    /// The task's pause number `pause` (counting its resume values) stopped on the
    /// `index`-th `interrupt` call of call `call` (`""` for the entrypoint itself).
    Asked {
        pause: usize,
        call: String,
        index: usize,
    },
}

impl CallRecord {
    /// The pending write's task id: unique per record within the task `task`.
    pub(crate) fn task_id(&self, task: usize) -> String {
        match self {
            Self::Result { call, .. } => format!("call:{task}:result:{call}"),
            Self::Asked { pause, .. } => format!("call:{task}:asked:{pause}"),
        }
    }
}

/// Encodes what graphkit stores (a checkpoint body, a pending write, a cache entry), with
/// updates in their storage form.
pub(crate) fn encode<T: Serialize>(value: &T, what: &str) -> Result<Vec<u8>, StorageError> {
    in_storage_form(|| serde_json::to_vec(value)).map_err(|source| StorageError::Serde {
        what: what.to_owned(),
        source,
    })
}

/// Decodes what graphkit stored, with updates in their storage form.
pub(crate) fn from_storage<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> serde_json::Result<T> {
    in_storage_form(|| serde_json::from_slice(bytes))
}

fn corrupt(record: &CheckpointRecord, message: impl Into<String>) -> StorageError {
    StorageError::CorruptCheckpoint {
        thread_id: record.thread_id.clone(),
        checkpoint_id: record.checkpoint_id.clone(),
        message: message.into(),
    }
}

/// The largest step a stored checkpoint may claim. No run comes near it (a step a
/// nanosecond for three days); anything above is a garbled row, and would overflow the
/// step counter.
pub(crate) const MAX_STORED_STEP: i64 = 1 << 48;

/// Decodes a record's body, checking its format version and its step.
pub(crate) fn decode_body<S: State>(record: &CheckpointRecord) -> Result<Body<S>, StorageError> {
    if record.format_version > FORMAT_VERSION {
        return Err(StorageError::CheckpointVersion {
            thread_id: record.thread_id.clone(),
            checkpoint_id: record.checkpoint_id.clone(),
            found: record.format_version,
            supported: FORMAT_VERSION,
        });
    }
    if !(-1..=MAX_STORED_STEP).contains(&record.step) {
        return Err(corrupt(
            record,
            format!("its step {} is outside -1..={MAX_STORED_STEP}", record.step),
        ));
    }
    let body: Body<S> = from_storage(&record.payload).map_err(|e| {
        corrupt(
            record,
            format!(
                "the stored state does not decode as `{}` ({e})",
                std::any::type_name::<S>()
            ),
        )
    })?;
    if record.is_snapshot && body.state.is_none() {
        return Err(corrupt(record, "a snapshot without a state"));
    }
    Ok(body)
}

/// The writes a checkpoint recorded (its step's, one entry per task), without its state:
/// what `get_state_history` shows as the results of the step its parent planned.
pub(crate) fn decode_writes<S: State>(
    record: &CheckpointRecord,
) -> Result<Vec<TaskWrite<S>>, StorageError> {
    #[derive(Deserialize)]
    #[serde(bound = "")]
    struct WritesOnly<S: State> {
        #[serde(default)]
        writes: Vec<TaskWrite<S>>,
    }
    if record.format_version > FORMAT_VERSION {
        return Ok(Vec::new());
    }
    from_storage::<WritesOnly<S>>(&record.payload)
        .map(|body| body.writes)
        .map_err(|e| corrupt(record, format!("its writes do not decode ({e})")))
}

pub(crate) fn decode_pending<S: State>(
    record: &CheckpointRecord,
    payload: &[u8],
) -> Result<Pending<S>, StorageError> {
    from_storage(payload)
        .map_err(|e| corrupt(record, format!("a pending write does not decode ({e})")))
}

/// A checkpoint with its state rebuilt.
pub(crate) struct Loaded<S: State> {
    pub(crate) record: CheckpointRecord,
    pub(crate) state: S,
    pub(crate) body: Body<S>,
    /// Deltas since the nearest snapshot (including this one, if it is a delta).
    pub(crate) chain_len: usize,
    pub(crate) delta_bytes: usize,
    pub(crate) snapshot_bytes: usize,
}

/// Rebuilds the state of `record`: walks back to the nearest snapshot and replays deltas.
pub(crate) async fn load<S: State>(
    saver: &dyn Checkpointer,
    record: CheckpointRecord,
) -> Result<Loaded<S>, StorageError> {
    let mut chain = vec![record];
    let mut seen: HashSet<String> = HashSet::new();
    while let Some(last) = chain.last().filter(|r| !r.is_snapshot) {
        let Some(parent) = last.parent_id.clone() else {
            return Err(corrupt(last, "a delta checkpoint without a parent"));
        };
        if !seen.insert(parent.clone()) {
            return Err(corrupt(last, "its parent chain loops"));
        }
        let found = saver
            .get(&last.thread_id, &last.checkpoint_ns, Some(&parent))
            .await?;
        match found {
            Some(tuple) => chain.push(tuple.record),
            None => {
                return Err(corrupt(
                    last,
                    format!("its parent checkpoint `{parent}` is missing"),
                ));
            }
        }
    }
    let Some(base) = chain.pop() else {
        return Err(StorageError::backend("checkpoint loader", "empty chain"));
    };
    let snapshot_bytes = base.payload.len();
    let mut delta_bytes = 0;
    let chain_len = chain.len();
    let base_body = decode_body::<S>(&base)?;
    let mut state = base_body.state.unwrap_or_default();
    let mut top = (
        base,
        Body {
            state: None,
            writes: Vec::new(),
            next: base_body.next,
            joins: base_body.joins,
            deferred: base_body.deferred,
        },
    );
    while let Some(record) = chain.pop() {
        delta_bytes += record.payload.len();
        let mut body = decode_body::<S>(&record)?;
        for write in std::mem::take(&mut body.writes) {
            for update in write.updates {
                state
                    .apply_update(update)
                    .map_err(|e| corrupt(&record, format!("replaying its writes failed: {e}")))?;
            }
        }
        top = (record, body);
    }
    Ok(Loaded {
        record: top.0,
        state,
        body: top.1,
        chain_len,
        delta_bytes,
        snapshot_bytes,
    })
}
