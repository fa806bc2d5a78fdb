//! The [`Keyed`] trait: items that merge by key.

use std::fmt::Debug;
use std::hash::Hash;

/// An item with a stable key, so a list of such items can merge by key.
///
/// The merge-by-key reducer replaces an item whose key is already present (keeping its
/// position), appends items with new keys, and removes items by key. Chat messages
/// implement this with their id, which gives LangGraph's `add_messages` behaviour.
///
/// ```
/// use graphkit::Keyed;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Finding { url: String, summary: String }
///
/// impl Keyed for Finding {
///     type Key = String;
///     fn key(&self) -> &String { &self.url }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "the items of this list have no key: `{Self}` does not implement `Keyed`",
    label = "no key to merge by",
    note = "`#[reducer(merge_by_key)]` merges items with equal keys: implement `graphkit::Keyed` for `{Self}` (return a reference to its key field), use `(key, value)` pairs, or give a key function with `#[reducer(merge_by = key_fn)]`"
)]
pub trait Keyed {
    /// The key type; two items with equal keys are the same item.
    type Key: Eq + Hash + Clone + Debug + Send + Sync + 'static;

    /// The item's key.
    fn key(&self) -> &Self::Key;
}

/// A `(key, value)` pair is keyed by its first element; map fields merge through it.
impl<K, V> Keyed for (K, V)
where
    K: Eq + Hash + Clone + Debug + Send + Sync + 'static,
{
    type Key = K;

    fn key(&self) -> &K {
        &self.0
    }
}
