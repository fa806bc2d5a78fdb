//! What a thread's checkpoints occupy (`GET /threads/{thread_id}/storage`), measured from
//! the bytes graphkit stored: each checkpoint's payload (a snapshot of the state, or the
//! updates applied since its parent) and metadata, and each pending write's payload.
//!
//! The stored bytes are split three ways, which add up to `total_bytes`:
//!
//! - `channel_values`: the state in the payloads, per channel (state field): a snapshot's
//!   value of each field, a delta's update of each field; `versions` counts them;
//! - `checkpoints`: the rest of the checkpoint rows (the payloads' framing, the next tasks,
//!   join progress, the metadata);
//! - `pending_writes`: the pending writes' payloads.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// One stored checkpoint, as [`ThreadStorage::measure`] reads it.
#[derive(Debug, Clone)]
pub struct StoredCheckpoint {
    /// The payload graphkit stored (JSON).
    pub payload: Vec<u8>,
    /// The metadata's size in bytes.
    pub metadata_bytes: u64,
    /// Whether the payload is a full snapshot (else a delta).
    pub is_snapshot: bool,
}

/// A count of stored items and their bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// How many.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The values stored of one channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ChannelTally {
    /// How many values (one per snapshot or delta that holds the channel).
    pub versions: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The channel values of a thread's checkpoints, in all and per channel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ChannelValues {
    /// How many values.
    pub count: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Per channel, by name.
    pub by_channel: BTreeMap<String, ChannelTally>,
}

/// The bytes a thread's checkpoints occupy (see the [module docs](self)).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ThreadStorage {
    /// Every stored byte of the thread's checkpoints and pending writes.
    pub total_bytes: u64,
    /// The checkpoints, less their channel values.
    pub checkpoints: Tally,
    /// The state held in the checkpoints.
    pub channel_values: ChannelValues,
    /// The pending writes.
    pub pending_writes: Tally,
}

impl ThreadStorage {
    /// Measures a thread's stored checkpoints and pending writes (their count and bytes).
    pub fn measure(checkpoints: &[StoredCheckpoint], pending_writes: Tally) -> Self {
        let mut channels = ChannelValues::default();
        let mut rest = Tally::default();
        for checkpoint in checkpoints {
            let stored = len(checkpoint.payload.len()) + checkpoint.metadata_bytes;
            let held = channel_bytes(checkpoint, &mut channels);
            rest.count += 1;
            rest.bytes += stored.saturating_sub(held);
        }
        Self {
            total_bytes: rest.bytes + channels.bytes + pending_writes.bytes,
            checkpoints: rest,
            channel_values: channels,
            pending_writes,
        }
    }
}

fn len(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// Adds the channel values of one checkpoint's payload to `channels`; returns their bytes.
/// A payload that does not read as JSON holds no channel values (its bytes count as the
/// checkpoint's).
fn channel_bytes(checkpoint: &StoredCheckpoint, channels: &mut ChannelValues) -> u64 {
    let Ok(payload) = serde_json::from_slice::<Value>(&checkpoint.payload) else {
        return 0;
    };
    let mut held = 0;
    let mut add = |name: &str, value: &Value| {
        let bytes = serde_json::to_vec(value).map_or(0, |b| len(b.len()));
        let entry = channels.by_channel.entry(name.to_owned()).or_default();
        entry.versions += 1;
        entry.bytes += bytes;
        channels.count += 1;
        channels.bytes += bytes;
        held += bytes;
    };
    if checkpoint.is_snapshot {
        if let Some(state) = payload.get("state").and_then(Value::as_object) {
            state.iter().for_each(|(name, value)| add(name, value));
        }
    } else {
        let updates = payload
            .get("writes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|write| write.get("updates").and_then(Value::as_array))
            .flatten()
            .filter_map(Value::as_object);
        for update in updates {
            update.iter().for_each(|(name, value)| add(name, value));
        }
    }
    held
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(payload: Value, metadata_bytes: u64, is_snapshot: bool) -> StoredCheckpoint {
        StoredCheckpoint {
            payload: payload.to_string().into_bytes(),
            metadata_bytes,
            is_snapshot,
        }
    }

    #[test]
    fn the_three_parts_add_up_to_every_stored_byte() {
        let snapshot = stored(
            json!({"state": {"messages": ["hi"], "sleep": 0.0}, "next": []}),
            10,
            true,
        );
        let delta = stored(
            json!({"writes": [{"node": "respond", "updates": [{"messages": ["echo: hi"]}]}], "next": []}),
            20,
            false,
        );
        let stored_bytes = snapshot.payload.len() + delta.payload.len() + 30;
        let writes = Tally { count: 2, bytes: 7 };
        let storage = ThreadStorage::measure(&[snapshot, delta], writes);
        assert_eq!(storage.total_bytes, len(stored_bytes) + 7);
        assert_eq!(storage.checkpoints.count, 2);
        assert_eq!(storage.channel_values.count, 3);
        let messages = storage.channel_values.by_channel["messages"];
        assert_eq!(messages.versions, 2);
        assert_eq!(
            messages.bytes,
            len("[\"hi\"]".len() + "[\"echo: hi\"]".len())
        );
        assert_eq!(storage.channel_values.by_channel["sleep"].bytes, 3);
        assert_eq!(storage.pending_writes, writes);
    }

    #[test]
    fn a_thread_without_checkpoints_occupies_nothing() {
        let storage = ThreadStorage::measure(&[], Tally::default());
        assert_eq!(storage, ThreadStorage::default());
    }
}
