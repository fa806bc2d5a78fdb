//! [`KeyedVec`]: a list with a key index, for merge-by-key fields that grow long.

use std::fmt;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::FieldWrites;
use super::key_index::KeyIndex;
use super::keyed::Keyed;
use super::merge::{KeyedOp, KeyedUpdate, MergeByKey};
use super::reducer::Reducer;
use crate::error::Error;

/// A list of [`Keyed`] items that also indexes them by key, so merging one item costs
/// O(1) however long the list is (a plain `Vec` must scan it).
///
/// Use it for chat histories and other merge-by-key fields that grow with the run. It
/// reads like a slice (`Deref<Target = [T]>`), keeps insertion order, and serializes as a
/// plain JSON list.
///
/// ```
/// use graphkit::{Keyed, KeyedUpdate};
/// use graphkit::reducers::{KeyedVec, MergeByKey, Reducer};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Msg { id: String, text: String }
/// impl Keyed for Msg {
///     type Key = String;
///     fn key(&self) -> &String { &self.id }
/// }
///
/// let mut history = KeyedVec::new();
/// MergeByKey::reduce(&mut history, KeyedUpdate::upsert([Msg { id: "1".into(), text: "hi".into() }]));
/// MergeByKey::reduce(&mut history, KeyedUpdate::upsert([Msg { id: "1".into(), text: "hello".into() }]));
/// assert_eq!(history.len(), 1);
/// assert_eq!(history.get(&"1".to_string()).map(|m| m.text.as_str()), Some("hello"));
/// ```
pub struct KeyedVec<T: Keyed> {
    /// The slots; `items[index.head()..]` is the list (the rest was evicted by
    /// [`keep_last`](Self::keep_last) and is drained later).
    items: Vec<T>,
    index: KeyIndex<T::Key>,
}

impl<T: Keyed> KeyedVec<T> {
    /// An empty list.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            index: KeyIndex::default(),
        }
    }

    /// Replaces the item with the same key in place, or appends it; returns the old item.
    /// O(1).
    pub fn upsert(&mut self, item: T) -> Option<T> {
        match self.index.get(item.key()) {
            Some(i) => Some(std::mem::replace(&mut self.items[i], item)),
            None => {
                self.index.insert(item.key().clone(), self.items.len());
                self.items.push(item);
                None
            }
        }
    }

    /// Removes the item with this key. The keys on the shorter side of it are re-indexed
    /// and the later items move up: O(1) at either end, O(n) in the middle.
    pub fn remove(&mut self, key: &T::Key) -> Option<T> {
        let slot = self.index.get(key)?;
        let items = &self.items;
        self.index
            .remove(slot, items.len(), |i| Some(items[i].key()));
        Some(self.items.remove(slot))
    }

    /// Removes the item with this key without returning it: as [`remove`](Self::remove),
    /// but the first item is evicted in O(1) amortised.
    fn discard(&mut self, key: &T::Key) {
        match self.index.get(key) {
            Some(slot) if slot == self.index.head() => {
                let drained = self.index.evict_head(key, self.items.len());
                self.items.drain(..drained);
            }
            Some(_) => {
                self.remove(key);
            }
            None => {}
        }
    }

    /// Drops the first (oldest) items until at most `max` remain: O(1) amortised per
    /// dropped item. The dropped items are freed in batches, once as many have left as
    /// remain (so a capped list holds at most about twice `max` items in memory).
    pub fn keep_last(&mut self, max: usize) {
        let items = &self.items;
        let drained = self
            .index
            .keep_last(items.len(), max, |i| Some(items[i].key()));
        self.items.drain(..drained);
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.items.clear();
        self.index.clear();
    }

    /// The item with this key.
    pub fn get(&self, key: &T::Key) -> Option<&T> {
        self.index.get(key).map(|i| &self.items[i])
    }

    /// `true` if an item has this key.
    pub fn contains_key(&self, key: &T::Key) -> bool {
        self.index.get(key).is_some()
    }

    /// The items, in order.
    pub fn as_slice(&self) -> &[T] {
        &self.items[self.index.head()..]
    }

    /// The items, in order.
    pub fn into_vec(mut self) -> Vec<T> {
        self.items.drain(..self.index.head());
        self.items
    }
}

impl<T: Keyed> Default for KeyedVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Keyed + Clone> Clone for KeyedVec<T> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
            index: self.index.clone(),
        }
    }
}

impl<T: Keyed + fmt::Debug> fmt::Debug for KeyedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// Equal when the items are, in order (the index is not compared).
impl<T: Keyed + PartialEq> PartialEq for KeyedVec<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Keyed> Deref for KeyedVec<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<'a, T: Keyed> IntoIterator for &'a KeyedVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// Items with repeated keys keep the first position and the last value.
impl<T: Keyed> FromIterator<T> for KeyedVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let mut list = Self::new();
        for item in items {
            list.upsert(item);
        }
        list
    }
}

impl<T: Keyed> IntoIterator for KeyedVec<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.into_vec().into_iter()
    }
}

impl<T: Keyed> From<Vec<T>> for KeyedVec<T> {
    fn from(items: Vec<T>) -> Self {
        items.into_iter().collect()
    }
}

impl<T: Keyed + Serialize> Serialize for KeyedVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de, T: Keyed + Deserialize<'de>> Deserialize<'de> for KeyedVec<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Self::from)
    }
}

impl<T: Keyed> Reducer<KeyedVec<T>> for MergeByKey {
    type Update = KeyedUpdate<T>;

    fn reduce(list: &mut KeyedVec<T>, update: KeyedUpdate<T>) {
        for op in update.ops {
            match op {
                KeyedOp::Upsert(item) => {
                    list.upsert(item);
                }
                KeyedOp::Remove(key) => list.discard(&key),
                KeyedOp::RemoveAll => list.clear(),
            }
        }
    }

    fn reduce_in_step(
        list: &mut KeyedVec<T>,
        update: KeyedUpdate<T>,
        mut field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        if super::merge::check_in_step(&update.ops, |k| list.contains_key(k), &mut field)? {
            <Self as Reducer<KeyedVec<T>>>::reduce(list, update);
        }
        Ok(())
    }
}

/// A whole list converts into an update that upserts every item (for `From<State>`).
impl<T: Keyed> From<KeyedVec<T>> for KeyedUpdate<T> {
    fn from(list: KeyedVec<T>) -> Self {
        Self::upsert(list.into_vec())
    }
}
