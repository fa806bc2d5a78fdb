//! [`MergeByVec`]: a list merged by a computed key, with the keys and their index kept.

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::append::AppendUpdate;
use super::key_index::KeyIndex;

/// A list for `#[reducer(merge_by = key_fn)]` that keeps each item's key and an index of
/// them, so merging one item costs O(1) however long the list is (on a plain `Vec` the
/// merge computes the key of every item on every update).
///
/// `key_fn` runs once per item: when the item is merged, or, for the items of a list that
/// was deserialized (a checkpoint, JSON input) or built with `From<Vec<T>>`, once at the
/// first merge, which builds the index. A list is merged by one key function, always the
/// same; `K` is the type it returns in its `Option`. It reads like a slice
/// (`Deref<Target = [T]>`), and serializes as a plain JSON list, so a `Vec<T>` field can
/// become a `MergeByVec<T, K>` without changing its checkpoints or its JSON.
///
/// ```
/// use graphkit::AppendUpdate;
/// use graphkit::reducers::MergeByVec;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Fact { doi: Option<&'static str>, text: &'static str }
///
/// fn doi(fact: &Fact) -> Option<String> {
///     fact.doi.map(str::to_lowercase)
/// }
///
/// let mut facts: MergeByVec<Fact, String> = MergeByVec::new();
/// facts.merge(AppendUpdate::item(Fact { doi: Some("10.1/A"), text: "v1" }), doi);
/// facts.merge(AppendUpdate::items([
///     Fact { doi: Some("10.1/a"), text: "v2" }, // same key: replaces v1 in place
///     Fact { doi: None, text: "note" },         // no key: appended
/// ]), doi);
/// let texts: Vec<_> = facts.iter().map(|f| f.text).collect();
/// assert_eq!(texts, ["v2", "note"]);
/// ```
pub struct MergeByVec<T, K> {
    /// The slots; `items[index.head()..]` is the list (the rest was evicted by
    /// [`keep_last`](Self::keep_last) and is drained later).
    items: Vec<T>,
    /// `keys[i]` is the key of `items[i]`; empty until the index is built.
    keys: Vec<Option<K>>,
    index: KeyIndex<K>,
    /// `false` for a list deserialized or built from a `Vec`, until its first merge.
    indexed: bool,
    /// The list repeated a key when it was indexed (possible only when built by hand):
    /// an eviction may uncover a later item with that key, so it rebuilds the index.
    repeats: bool,
}

impl<T, K> MergeByVec<T, K> {
    /// An empty list.
    pub fn new() -> Self {
        Self {
            items: Vec::new(),
            keys: Vec::new(),
            index: KeyIndex::default(),
            indexed: true,
            repeats: false,
        }
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

    /// Removes every item.
    pub fn clear(&mut self) {
        self.items.clear();
        self.keys.clear();
        self.index.clear();
        self.indexed = true;
        self.repeats = false;
    }
}

impl<T, K: Eq + Hash + Clone> MergeByVec<T, K> {
    /// Merges `update` by the keys `key` computes, as [`merge_by`](super::merge_by) does
    /// on a `Vec`: an item whose key is present replaces it in place, an item with a new
    /// key or no key (`None`) is appended, and the clear sentinel empties the list first.
    /// O(items in the update), plus O(list) once for a list that is not indexed yet.
    pub fn merge<F>(&mut self, update: AppendUpdate<T>, key: F)
    where
        F: Fn(&T) -> Option<K>,
    {
        if update.clear {
            self.clear();
        }
        self.build_index(&key);
        self.items.reserve(update.items.len());
        self.keys.reserve(update.items.len());
        for item in update.items {
            let k = key(&item);
            if let Some(slot) = k.as_ref().and_then(|k| self.index.get(k)) {
                self.items[slot] = item;
                continue;
            }
            if let Some(k) = &k {
                self.index.insert(k.clone(), self.items.len());
            }
            self.keys.push(k);
            self.items.push(item);
        }
    }

    /// Drops the first (oldest) items until at most `max` remain: O(1) amortised per
    /// dropped item. The dropped items are freed in batches, once as many have left as
    /// remain (so a capped list holds at most about twice `max` items in memory).
    pub fn keep_last(&mut self, max: usize) {
        if !self.indexed || self.repeats {
            // Not indexed yet, or a key repeats (an eviction may uncover a later item with
            // it): drop the items outright and index again if there is an index.
            let excess = self.len().saturating_sub(max);
            if excess > 0 {
                let head = self.index.head();
                self.items.drain(head..head + excess);
                if self.indexed {
                    self.keys.drain(head..head + excess);
                    self.rebuild_index();
                }
            }
            return;
        }
        let keys = &self.keys;
        let drained = self.index.keep_last(keys.len(), max, |i| keys[i].as_ref());
        self.items.drain(..drained);
        self.keys.drain(..drained);
    }

    /// Computes the keys of a list that has none yet (deserialized, or built from a
    /// `Vec`), once.
    fn build_index(&mut self, key: impl Fn(&T) -> Option<K>) {
        if self.indexed {
            return;
        }
        self.keys = self.items.iter().map(key).collect();
        self.rebuild_index();
        self.indexed = true;
    }

    /// Indexes `keys` again from scratch, dropping any dead slots first.
    fn rebuild_index(&mut self) {
        let head = self.index.head();
        self.items.drain(..head);
        self.keys.drain(..head);
        self.index.clear();
        let mut indexed = 0;
        for (slot, k) in self.keys.iter().enumerate() {
            if let Some(k) = k {
                self.index.insert(k.clone(), slot);
                indexed += 1;
            }
        }
        self.repeats = indexed != self.index.len();
    }
}

impl<T, K> Default for MergeByVec<T, K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone, K: Clone> Clone for MergeByVec<T, K> {
    fn clone(&self) -> Self {
        Self {
            items: self.items.clone(),
            keys: self.keys.clone(),
            index: self.index.clone(),
            indexed: self.indexed,
            repeats: self.repeats,
        }
    }
}

impl<T: fmt::Debug, K> fmt::Debug for MergeByVec<T, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

/// Equal when the items are, in order (keys and index are not compared).
impl<T: PartialEq, K> PartialEq for MergeByVec<T, K> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Eq, K> Eq for MergeByVec<T, K> {}

impl<T, K> Deref for MergeByVec<T, K> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<'a, T, K> IntoIterator for &'a MergeByVec<T, K> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

/// The items as they are (not merged); the index is built at the first merge.
impl<T, K> From<Vec<T>> for MergeByVec<T, K> {
    fn from(items: Vec<T>) -> Self {
        Self {
            items,
            keys: Vec::new(),
            index: KeyIndex::default(),
            indexed: false,
            repeats: false,
        }
    }
}

/// The items as they are (not merged), as `From<Vec<T>>`.
impl<T, K> FromIterator<T> for MergeByVec<T, K> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        Self::from(items.into_iter().collect::<Vec<_>>())
    }
}

impl<T: Serialize, K> Serialize for MergeByVec<T, K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>, K> Deserialize<'de> for MergeByVec<T, K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(deserializer).map(Self::from)
    }
}

/// A whole list converts into an update that merges every item (for `From<State>`).
impl<T, K> From<MergeByVec<T, K>> for AppendUpdate<T> {
    fn from(list: MergeByVec<T, K>) -> Self {
        Self::items(list.into_vec())
    }
}
