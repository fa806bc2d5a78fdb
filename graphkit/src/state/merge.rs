//! The merge-by-key reducer: upsert in place, append new keys, remove by key.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use super::FieldWrites;
use super::keyed::Keyed;
use super::reducer::Reducer;
use crate::error::Error;

/// Merge items by key (`#[reducer(merge_by_key)]`).
///
/// On a `Vec<T>` with `T: Keyed`: an item whose key is present replaces the old one in
/// place, a new key appends, and removals drop items by key. On a `HashMap` or `BTreeMap`
/// it is a right-biased union with removals. This is LangGraph's `add_messages` when the
/// items are chat messages keyed by id.
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeByKey;

/// One operation of a [`KeyedUpdate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound(
    serialize = "T: Serialize, T::Key: Serialize",
    deserialize = "T: Deserialize<'de>, T::Key: Deserialize<'de>"
))]
pub enum KeyedOp<T: Keyed> {
    /// Replace the item with this key in place, or append it if the key is new.
    Upsert(T),
    /// Remove the item with this key. In a super-step, removing a key that is not there
    /// is an error ([`Error::RemovedKeyNotFound`]); [`Reducer::reduce`] ignores it.
    Remove(T::Key),
    /// The clear sentinel: remove every item.
    RemoveAll,
}

/// An update to a merge-by-key field: operations applied in order.
///
/// ```
/// use graphkit::{Keyed, KeyedUpdate};
/// use graphkit::reducers::{MergeByKey, Reducer};
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Doc { id: u32, text: &'static str }
/// impl Keyed for Doc {
///     type Key = u32;
///     fn key(&self) -> &u32 { &self.id }
/// }
///
/// let mut docs = vec![Doc { id: 1, text: "a" }, Doc { id: 2, text: "b" }];
/// let update = KeyedUpdate::upsert([Doc { id: 1, text: "A" }, Doc { id: 3, text: "c" }]);
/// MergeByKey::reduce(&mut docs, update);
/// let texts: Vec<_> = docs.iter().map(|d| d.text).collect();
/// assert_eq!(texts, ["A", "b", "c"]);
/// ```
///
/// As JSON (in streamed updates, task results and the server's API), an update of upserts
/// only is the plain list of its items, `[{"id": 1, ..}]`; one with removals is
/// `{"ops": [{"Upsert": item}, {"Remove": key}, "RemoveAll"]}`. Checkpoints store every
/// update in the `ops` list form without the `{"ops": ..}` wrapper, as graphkit always
/// has, so stored threads load unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedUpdate<T: Keyed> {
    /// The operations, applied in order.
    pub ops: Vec<KeyedOp<T>>,
}

thread_local! {
    /// Set while graphkit encodes or decodes its own storage (checkpoints, pending
    /// writes, cache entries): keyed updates there are the bare list of operations.
    static STORAGE_FORM: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (an encode or decode of graphkit's storage) with keyed updates in their
/// storage form: a bare list of operations, which is what checkpoints have always held.
/// Nested and panicking calls restore the previous form.
pub(crate) fn in_storage_form<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            STORAGE_FORM.with(|form| form.set(self.0));
        }
    }
    let _restore = Restore(STORAGE_FORM.with(|form| form.replace(true)));
    f()
}

fn storage_form() -> bool {
    STORAGE_FORM.with(std::cell::Cell::get)
}

impl<T> Serialize for KeyedUpdate<T>
where
    T: Keyed + Serialize,
    T::Key: Serialize,
{
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::{SerializeSeq, SerializeStruct};
        if storage_form() {
            return self.ops.serialize(serializer);
        }
        if self.ops.iter().all(|op| matches!(op, KeyedOp::Upsert(_))) {
            let mut items = serializer.serialize_seq(Some(self.ops.len()))?;
            for op in &self.ops {
                if let KeyedOp::Upsert(item) = op {
                    items.serialize_element(item)?;
                }
            }
            return items.end();
        }
        let mut object = serializer.serialize_struct("KeyedUpdate", 1)?;
        object.serialize_field("ops", &self.ops)?;
        object.end()
    }
}

impl<'de, T> Deserialize<'de> for KeyedUpdate<T>
where
    T: Keyed + Deserialize<'de>,
    T::Key: Deserialize<'de>,
{
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};

        /// The form with removals: `{"ops": [..]}`.
        #[derive(Deserialize)]
        #[serde(
            deny_unknown_fields,
            bound = "T: Deserialize<'de>, T::Key: Deserialize<'de>"
        )]
        struct Ops<T: Keyed> {
            ops: Vec<KeyedOp<T>>,
        }

        struct Visitor<T>(std::marker::PhantomData<T>);

        impl<'de, T> serde::de::Visitor<'de> for Visitor<T>
        where
            T: Keyed + Deserialize<'de>,
            T::Key: Deserialize<'de>,
        {
            type Value = KeyedUpdate<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a list of items to upsert, or {\"ops\": [{\"Upsert\": item}, {\"Remove\": key}, \"RemoveAll\"]}",
                )
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                let seq = SeqAccessDeserializer::new(seq);
                Ok(match storage_form() {
                    true => KeyedUpdate {
                        ops: Vec::<KeyedOp<T>>::deserialize(seq)?,
                    },
                    false => KeyedUpdate::upsert(Vec::<T>::deserialize(seq)?),
                })
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let ops = Ops::<T>::deserialize(MapAccessDeserializer::new(map))?;
                Ok(KeyedUpdate { ops: ops.ops })
            }
        }

        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<T: Keyed> Default for KeyedUpdate<T> {
    fn default() -> Self {
        Self { ops: Vec::new() }
    }
}

impl<T: Keyed> KeyedUpdate<T> {
    /// Upsert these items.
    pub fn upsert(items: impl IntoIterator<Item = T>) -> Self {
        Self {
            ops: items.into_iter().map(KeyedOp::Upsert).collect(),
        }
    }

    /// Remove the items with these keys.
    pub fn remove(keys: impl IntoIterator<Item = T::Key>) -> Self {
        Self {
            ops: keys.into_iter().map(KeyedOp::Remove).collect(),
        }
    }

    /// Remove every item.
    pub fn remove_all() -> Self {
        Self {
            ops: vec![KeyedOp::RemoveAll],
        }
    }

    /// Replace the whole collection with these items.
    pub fn replace(items: impl IntoIterator<Item = T>) -> Self {
        Self::remove_all().then(Self::upsert(items))
    }

    /// This update followed by `next`, as one update.
    #[must_use]
    pub fn then(mut self, next: Self) -> Self {
        self.ops.extend(next.ops);
        self
    }

    /// Adds an upsert.
    #[must_use]
    pub fn and_upsert(mut self, item: T) -> Self {
        self.ops.push(KeyedOp::Upsert(item));
        self
    }

    /// Adds a removal.
    #[must_use]
    pub fn and_remove(mut self, key: T::Key) -> Self {
        self.ops.push(KeyedOp::Remove(key));
        self
    }

    /// `true` when there are no operations.
    pub fn is_noop(&self) -> bool {
        self.ops.is_empty()
    }
}

impl<T: Keyed> From<Vec<T>> for KeyedUpdate<T> {
    fn from(items: Vec<T>) -> Self {
        Self::upsert(items)
    }
}

impl<T: Keyed, const N: usize> From<[T; N]> for KeyedUpdate<T> {
    fn from(items: [T; N]) -> Self {
        Self::upsert(items)
    }
}

/// Checks an update before a super-step applies it: at most one overwrite (remove-all)
/// per field and step, and every removed key present when its removal comes (`holds`
/// says whether the value held a key before the update). `false` when the update does not
/// apply: another task overwrote the field earlier in the step ([`FieldWrites::admit`]).
pub(crate) fn check_in_step<T: Keyed>(
    ops: &[KeyedOp<T>],
    holds: impl Fn(&T::Key) -> bool,
    field: &mut FieldWrites<'_>,
) -> Result<bool, Error> {
    let overwrites = ops.iter().any(|op| matches!(op, KeyedOp::RemoveAll));
    if !field.admit(overwrites)? {
        return Ok(false);
    }
    if !ops.iter().any(|op| matches!(op, KeyedOp::Remove(_))) {
        return Ok(true);
    }
    // Keys whose presence the update's earlier ops changed, newest last.
    let mut changed: Vec<(&T::Key, bool)> = Vec::new();
    let mut cleared = false;
    for op in ops {
        match op {
            KeyedOp::Upsert(item) => changed.push((item.key(), true)),
            KeyedOp::RemoveAll => {
                cleared = true;
                changed.clear();
            }
            KeyedOp::Remove(key) => {
                let present = changed
                    .iter()
                    .rev()
                    .find(|(k, _)| *k == key)
                    .map_or_else(|| !cleared && holds(key), |(_, present)| *present);
                if !present {
                    return Err(field.missing_key(key));
                }
                changed.push((key, false));
            }
        }
    }
    Ok(true)
}

/// Below this many `len × ops`, a linear scan beats building a hash index.
const LINEAR_SCAN_LIMIT: usize = 256;
/// Up to this many ops, scanning is cheaper than indexing at any length.
const FEW_OPS: usize = 8;

impl<T: Keyed> Reducer<Vec<T>> for MergeByKey {
    type Update = KeyedUpdate<T>;

    fn reduce(list: &mut Vec<T>, update: KeyedUpdate<T>) {
        // A few ops (one new chat message, say) scan the list comparing keys in place,
        // with no allocation; many ops on a long list pay for a hash index once.
        if update.ops.len() <= FEW_OPS
            || list.len().saturating_mul(update.ops.len()) <= LINEAR_SCAN_LIMIT
        {
            merge_linear(list, update.ops);
        } else {
            merge_indexed(list, update.ops);
        }
    }

    fn reduce_in_step(
        list: &mut Vec<T>,
        update: KeyedUpdate<T>,
        mut field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        if check_in_step(
            &update.ops,
            |k| list.iter().any(|x| x.key() == k),
            &mut field,
        )? {
            <Self as Reducer<Vec<T>>>::reduce(list, update);
        }
        Ok(())
    }
}

fn merge_linear<T: Keyed>(list: &mut Vec<T>, ops: Vec<KeyedOp<T>>) {
    for op in ops {
        match op {
            KeyedOp::Upsert(item) => match list.iter().position(|x| x.key() == item.key()) {
                Some(i) => list[i] = item,
                None => list.push(item),
            },
            KeyedOp::Remove(key) => list.retain(|x| x.key() != &key),
            KeyedOp::RemoveAll => list.clear(),
        }
    }
}

/// Same result as [`merge_linear`], in O(len + ops): removals are marked and compacted
/// once at the end, so positions stay valid while ops are applied.
fn merge_indexed<T: Keyed>(list: &mut Vec<T>, ops: Vec<KeyedOp<T>>) {
    let mut index: HashMap<T::Key, usize> = HashMap::with_capacity(list.len() + ops.len());
    for (i, item) in list.iter().enumerate() {
        if index.insert(item.key().clone(), i).is_some() {
            // A list built outside the reducer may repeat a key; the linear merge defines
            // what happens then (upserts hit the first, removals drop all).
            return merge_linear(list, ops);
        }
    }
    let mut slots: Vec<Option<T>> = std::mem::take(list).into_iter().map(Some).collect();
    for op in ops {
        match op {
            KeyedOp::Upsert(item) => match index.get(item.key()) {
                Some(&i) => slots[i] = Some(item),
                None => {
                    index.insert(item.key().clone(), slots.len());
                    slots.push(Some(item));
                }
            },
            KeyedOp::Remove(key) => {
                if let Some(i) = index.remove(&key) {
                    slots[i] = None;
                }
            }
            KeyedOp::RemoveAll => {
                slots.clear();
                index.clear();
            }
        }
    }
    *list = slots.into_iter().flatten().collect();
}

/// Any hasher: a map keyed by strings can use a faster one than SipHash.
impl<K, V, H> Reducer<HashMap<K, V, H>> for MergeByKey
where
    K: Eq + Hash + Clone + std::fmt::Debug + Send + Sync + 'static,
    H: std::hash::BuildHasher,
{
    type Update = KeyedUpdate<(K, V)>;

    fn reduce(map: &mut HashMap<K, V, H>, update: KeyedUpdate<(K, V)>) {
        // Room for the new keys up front, as `HashMap::extend` makes it (all of the
        // update's into an empty map, half otherwise: some replace keys already there), so
        // a map that grows by whole updates rehashes once per update at most.
        let upserts = update.ops.len();
        map.reserve(if map.is_empty() {
            upserts
        } else {
            upserts.div_ceil(2)
        });
        for op in update.ops {
            match op {
                KeyedOp::Upsert((k, v)) => {
                    map.insert(k, v);
                }
                KeyedOp::Remove(k) => {
                    map.remove(&k);
                }
                KeyedOp::RemoveAll => map.clear(),
            }
        }
    }

    fn reduce_in_step(
        map: &mut HashMap<K, V, H>,
        update: KeyedUpdate<(K, V)>,
        mut field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        if check_in_step(&update.ops, |k| map.contains_key(k), &mut field)? {
            <Self as Reducer<HashMap<K, V, H>>>::reduce(map, update);
        }
        Ok(())
    }
}

impl<K, V> Reducer<BTreeMap<K, V>> for MergeByKey
where
    K: Ord + Eq + Hash + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    type Update = KeyedUpdate<(K, V)>;

    fn reduce(map: &mut BTreeMap<K, V>, update: KeyedUpdate<(K, V)>) {
        for op in update.ops {
            match op {
                KeyedOp::Upsert((k, v)) => {
                    map.insert(k, v);
                }
                KeyedOp::Remove(k) => {
                    map.remove(&k);
                }
                KeyedOp::RemoveAll => map.clear(),
            }
        }
    }

    fn reduce_in_step(
        map: &mut BTreeMap<K, V>,
        update: KeyedUpdate<(K, V)>,
        mut field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        if check_in_step(&update.ops, |k| map.contains_key(k), &mut field)? {
            <Self as Reducer<BTreeMap<K, V>>>::reduce(map, update);
        }
        Ok(())
    }
}

/// Upserts every entry of a map, whatever its hasher.
impl<K, V, H> From<HashMap<K, V, H>> for KeyedUpdate<(K, V)>
where
    K: Eq + Hash + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    fn from(map: HashMap<K, V, H>) -> Self {
        Self::upsert(map)
    }
}

impl<K, V> From<BTreeMap<K, V>> for KeyedUpdate<(K, V)>
where
    K: Eq + Hash + Clone + std::fmt::Debug + Send + Sync + 'static,
{
    fn from(map: BTreeMap<K, V>) -> Self {
        Self::upsert(map)
    }
}
