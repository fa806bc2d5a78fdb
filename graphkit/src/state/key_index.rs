//! [`KeyIndex`]: key → position for the indexed list types, with the front evicted lazily.
//!
//! [`KeyedVec`](super::KeyedVec) and [`MergeByVec`](super::MergeByVec) keep their items
//! in a `Vec` whose first `head` slots have left the list (evicted by a cap) and wait to be
//! drained. Positions are stored as *absolute* positions (`base` + slot), so evicting the
//! front changes no stored position, and draining the dead slots once they are as many as
//! the live ones moves `base` instead of touching the index: a cap costs O(1) amortised
//! per evicted item, and the index is never rebuilt.

use std::collections::HashMap;
use std::hash::Hash;

/// Key → slot of an indexed list, and which leading slots are dead.
#[derive(Clone, Debug)]
pub(crate) struct KeyIndex<K> {
    /// Key → absolute position (slot + `base`) of its item.
    positions: HashMap<K, usize>,
    /// Absolute position of slot 0.
    base: usize,
    /// Slots `..head` left the list and are drained later.
    head: usize,
}

impl<K> Default for KeyIndex<K> {
    fn default() -> Self {
        Self {
            positions: HashMap::new(),
            base: 0,
            head: 0,
        }
    }
}

impl<K> KeyIndex<K> {
    /// The first live slot.
    pub(crate) fn head(&self) -> usize {
        self.head
    }

    /// Forgets every key; the list is empty.
    pub(crate) fn clear(&mut self) {
        self.positions.clear();
        self.base = 0;
        self.head = 0;
    }
}

impl<K: Eq + Hash> KeyIndex<K> {
    /// The slot of `key`'s item.
    pub(crate) fn get(&self, key: &K) -> Option<usize> {
        self.positions.get(key).map(|&p| p - self.base)
    }

    /// Indexes `key` at `slot` unless it is indexed already (a list built by hand may
    /// repeat a key: its first item keeps it). `false` when it was.
    pub(crate) fn insert(&mut self, key: K, slot: usize) -> bool {
        let position = slot + self.base;
        match self.positions.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => false,
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(position);
                true
            }
        }
    }

    /// Number of keys indexed.
    pub(crate) fn len(&self) -> usize {
        self.positions.len()
    }

    /// Forgets `key` if it points at `slot` (and not at an earlier item with that key).
    fn forget(&mut self, key: &K, slot: usize) {
        if self.positions.get(key) == Some(&(slot + self.base)) {
            self.positions.remove(key);
        }
    }

    /// Evicts live items from the front of a list of `slots` slots until at most `max`
    /// are live; `key_at(slot)` is a slot's key. Returns how many leading slots the caller
    /// must drain now (0 until the dead slots are as many as the live ones).
    pub(crate) fn keep_last<'a>(
        &mut self,
        slots: usize,
        max: usize,
        key_at: impl Fn(usize) -> Option<&'a K>,
    ) -> usize
    where
        K: 'a,
    {
        let live = slots - self.head;
        if live <= max {
            return 0;
        }
        let first_kept = slots - max;
        for slot in self.head..first_kept {
            if let Some(key) = key_at(slot) {
                self.forget(key, slot);
            }
        }
        self.head = first_kept;
        self.drain_if_half_dead(slots)
    }

    /// Evicts the first live item (its key is `key`); returns the slots to drain, as
    /// [`keep_last`](Self::keep_last).
    pub(crate) fn evict_head(&mut self, key: &K, slots: usize) -> usize {
        self.forget(key, self.head);
        self.head += 1;
        self.drain_if_half_dead(slots)
    }

    fn drain_if_half_dead(&mut self, slots: usize) -> usize {
        if self.head == 0 || self.head < slots - self.head {
            return 0;
        }
        let drained = self.head;
        self.base += drained;
        self.head = 0;
        drained
    }

    /// Re-indexes for the removal of the live item at `slot` from a list of `slots`
    /// slots (the caller then removes the slot, `Vec::remove`): the keys on the shorter
    /// side of it move, so removing near either end is cheap.
    pub(crate) fn remove<'a>(
        &mut self,
        slot: usize,
        slots: usize,
        key_at: impl Fn(usize) -> Option<&'a K>,
    ) where
        K: 'a,
    {
        if let Some(key) = key_at(slot) {
            self.forget(key, slot);
        }
        let mut shift = |key: Option<&K>, from: usize, to: usize| {
            if let Some(position) = key.and_then(|k| self.positions.get_mut(k))
                && *position == from
            {
                *position = to;
            }
        };
        if slot - self.head < slots - 1 - slot {
            // The slots before `slot` keep their place while `base` moves up by one, so
            // their absolute positions grow by one; the slots after keep theirs.
            let base = self.base;
            for before in self.head..slot {
                shift(key_at(before), before + base, before + base + 1);
            }
            self.base += 1;
        } else {
            let base = self.base;
            for after in slot + 1..slots {
                shift(key_at(after), after + base, after + base - 1);
            }
        }
    }
}
