//! Merge by a computed key: upsert the items a key function selects, append the rest.

use std::collections::HashMap;
use std::hash::Hash;

use super::append::AppendUpdate;

/// Merges `update` into `list`, keying items by value with `key`
/// (`#[reducer(merge_by = key)]`).
///
/// `key` computes an item's key, or `None` for an item that is not merged:
///
/// - an item whose key is already in the list **replaces** it in place (the position is
///   kept; the latest write wins);
/// - an item with a new key is **appended**, and later items with that key replace it, so
///   duplicates inside one update collapse the same way;
/// - an item for which `key` returns `None` is **appended** as it is and never replaced.
///   That covers both the items the merge does not apply to (another kind of fact, say)
///   and items of the merged kind that carry no key at all: a reference without any
///   identifier is kept rather than dropped, and it cannot be matched by a later one.
///   Reject such items in the node or tool that makes them if they are an error there;
///   a reducer runs when the step's writes are applied, too late to say which task erred.
///
/// The update's clear sentinel empties the list first, as for `#[reducer(append)]`.
/// Unlike [`Keyed`](crate::Keyed), the key is computed, so it can fall back through
/// several fields (`arxiv id → DOI → URL → title|year`). The cost is O(list + update):
/// the keys of the list are computed once per update that holds a keyed item, and an
/// update with no keyed item is a plain append. A field that grows long can be a
/// [`MergeByVec`](super::MergeByVec) instead, which keeps the keys and merges in O(update).
///
/// ```
/// use graphkit::AppendUpdate;
/// use graphkit::reducers::merge_by;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Fact { kind: &'static str, doi: Option<&'static str>, text: &'static str }
///
/// fn reference_key(fact: &Fact) -> Option<String> {
///     (fact.kind == "reference").then(|| fact.doi.map(str::to_lowercase)).flatten()
/// }
///
/// let fact = |kind, doi, text| Fact { kind, doi, text };
/// let mut facts = vec![fact("reference", Some("10.1/A"), "v1"), fact("note", None, "n")];
/// let update = AppendUpdate::items([
///     fact("reference", Some("10.1/a"), "v2"), // same key: replaces v1 in place
///     fact("note", None, "n"),                 // not keyed: appended
///     fact("reference", None, "no id"),        // keyed kind without a key: appended
/// ]);
/// merge_by(&mut facts, update, reference_key);
/// let texts: Vec<_> = facts.iter().map(|f| f.text).collect();
/// assert_eq!(texts, ["v2", "n", "n", "no id"]);
/// ```
pub fn merge_by<T, K, F>(list: &mut Vec<T>, update: AppendUpdate<T>, key: F)
where
    K: Eq + Hash,
    F: Fn(&T) -> Option<K>,
{
    if update.clear {
        list.clear();
    }
    let keyed: Vec<(Option<K>, T)> = update
        .items
        .into_iter()
        .map(|item| (key(&item), item))
        .collect();
    if keyed.iter().all(|(k, _)| k.is_none()) {
        list.extend(keyed.into_iter().map(|(_, item)| item));
        return;
    }
    let mut index: HashMap<K, usize> = HashMap::with_capacity(list.len() + keyed.len());
    for (position, item) in list.iter().enumerate() {
        if let Some(k) = key(item) {
            // A list built by hand may repeat a key; updates then hit its first item,
            // as with `#[reducer(merge_by_key)]`.
            index.entry(k).or_insert(position);
        }
    }
    list.reserve(keyed.len());
    for (k, item) in keyed {
        let Some(k) = k else {
            list.push(item);
            continue;
        };
        match index.get(&k) {
            Some(&position) => list[position] = item,
            None => {
                index.insert(k, list.len());
                list.push(item);
            }
        }
    }
}
