//! The append reducer and its update type with a typed clear sentinel.

use serde::{Deserialize, Serialize};

use super::FieldWrites;
use super::reducer::Reducer;
use crate::error::Error;

/// Append to a list (`#[reducer(append)]`), LangGraph's `Annotated[list, operator.add]`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Append;

/// One operation on an appended list: push an item, or the clear sentinel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListOp<T> {
    /// Append this item.
    Push(T),
    /// Drop everything the list holds so far; later pushes still apply.
    Clear,
}

/// An update to an appended list: optionally clear it, then append items.
///
/// The clear sentinel is a typed flag, not a magic value. A `Vec<T>` converts into a
/// plain append, so most nodes write `.notes(vec![note])`.
///
/// ```
/// use graphkit::AppendUpdate;
///
/// let mut list = vec![1, 2];
/// AppendUpdate::items([3]).apply_to(&mut list);
/// assert_eq!(list, [1, 2, 3]);
/// AppendUpdate::replace([9]).apply_to(&mut list);
/// assert_eq!(list, [9]);
/// AppendUpdate::clear().apply_to(&mut list);
/// assert!(list.is_empty());
/// ```
///
/// As JSON (in streamed updates, checkpoints and the server's API), an append is the
/// plain list of its items, `["a", "b"]`; an update that clears the list first is
/// `{"clear": true, "items": [..]}`. Both forms are read, and so is `{"items": [..]}`
/// (what graphkit wrote before 0.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendUpdate<T> {
    /// Clear the list before appending.
    pub clear: bool,
    /// Items to append, in order.
    pub items: Vec<T>,
}

impl<T: Serialize> Serialize for AppendUpdate<T> {
    fn serialize<Z: serde::Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        use serde::ser::SerializeStruct;
        if !self.clear {
            return self.items.serialize(serializer);
        }
        let mut object = serializer.serialize_struct("AppendUpdate", 2)?;
        object.serialize_field("clear", &true)?;
        object.serialize_field("items", &self.items)?;
        object.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AppendUpdate<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        /// The object form: `{"clear": bool, "items": [..]}`, both optional.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Object<T> {
            #[serde(default)]
            clear: bool,
            #[serde(default = "Vec::new")]
            items: Vec<T>,
        }

        struct Visitor<T>(std::marker::PhantomData<T>);

        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visitor<T> {
            type Value = AppendUpdate<T>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a list of items to append, or {\"clear\": true, \"items\": [..]}")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                let items =
                    Vec::<T>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(AppendUpdate::items(items))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let object =
                    Object::<T>::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(AppendUpdate {
                    clear: object.clear,
                    items: object.items,
                })
            }
        }

        deserializer.deserialize_any(Visitor(std::marker::PhantomData))
    }
}

impl<T> Default for AppendUpdate<T> {
    fn default() -> Self {
        Self {
            clear: false,
            items: Vec::new(),
        }
    }
}

impl<T> AppendUpdate<T> {
    /// Append these items.
    pub fn items(items: impl IntoIterator<Item = T>) -> Self {
        Self {
            clear: false,
            items: items.into_iter().collect(),
        }
    }

    /// Append one item.
    pub fn item(item: T) -> Self {
        Self {
            clear: false,
            items: vec![item],
        }
    }

    /// The clear sentinel: empty the list.
    pub fn clear() -> Self {
        Self {
            clear: true,
            items: Vec::new(),
        }
    }

    /// Replace the whole list with these items.
    pub fn replace(items: impl IntoIterator<Item = T>) -> Self {
        Self {
            clear: true,
            items: items.into_iter().collect(),
        }
    }

    /// Builds an update from a sequence of operations; only pushes after the last
    /// [`ListOp::Clear`] survive, and the list is cleared if there was one.
    pub fn from_ops(ops: impl IntoIterator<Item = ListOp<T>>) -> Self {
        let mut update = Self::default();
        for op in ops {
            match op {
                ListOp::Push(item) => update.items.push(item),
                ListOp::Clear => update = Self::clear(),
            }
        }
        update
    }

    /// This update followed by `next`, as one update.
    #[must_use]
    pub fn then(mut self, next: Self) -> Self {
        if next.clear {
            return next;
        }
        self.items.extend(next.items);
        self
    }

    /// Applies the update to a list.
    pub fn apply_to(self, list: &mut Vec<T>) {
        if self.clear {
            list.clear();
        }
        if list.is_empty() {
            *list = self.items;
        } else {
            list.extend(self.items);
        }
    }

    /// `true` when applying it changes nothing.
    pub fn is_noop(&self) -> bool {
        !self.clear && self.items.is_empty()
    }
}

impl<T> From<Vec<T>> for AppendUpdate<T> {
    fn from(items: Vec<T>) -> Self {
        Self::items(items)
    }
}

impl<T, const N: usize> From<[T; N]> for AppendUpdate<T> {
    fn from(items: [T; N]) -> Self {
        Self::items(items)
    }
}

impl<T> Reducer<Vec<T>> for Append {
    type Update = AppendUpdate<T>;

    fn reduce(current: &mut Vec<T>, update: AppendUpdate<T>) {
        update.apply_to(current);
    }

    fn reduce_in_step(
        current: &mut Vec<T>,
        update: AppendUpdate<T>,
        mut field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        if field.admit(update.clear)? {
            update.apply_to(current);
        }
        Ok(())
    }
}
