//! Typed state, its update type, and the reducers that merge updates into it.
//!
//! A graph's state is a struct with `#[derive(State)]`. Each field has a reducer (last
//! value by default) and the derive generates a companion update type whose fields are
//! all optional, with one builder method per field. Nodes return such partial updates.

mod append;
mod capped;
mod key_index;
mod keyed;
mod keyed_vec;
mod merge;
mod merge_by;
mod merge_by_vec;
mod reducer;

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use append::{Append, AppendUpdate, ListOp};
pub use capped::append_capped;
pub use keyed::Keyed;
pub use keyed_vec::KeyedVec;
pub(crate) use merge::in_storage_form;
pub use merge::{KeyedOp, KeyedUpdate, MergeByKey};
pub use merge_by::merge_by;
pub use merge_by_vec::MergeByVec;
pub use reducer::{Add, LastValue, Reducer, Summable};

use crate::error::Error;

/// A graph's state: a struct whose fields merge updates through reducers.
///
/// Implement it with `#[derive(State)]`; the derive writes [`State::Update`] (named
/// `<Struct>Update`), the merge code and the field table.
///
/// ```
/// use graphkit::State;
/// use serde::{Deserialize, Serialize};
///
/// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
/// struct Research {
///     topic: String,                // last value
///     #[reducer(append)]
///     notes: Vec<String>,           // appended
///     #[reducer(add)]
///     searches: u32,                // summed
/// }
///
/// let update = ResearchUpdate::default().topic("rust").notes(vec!["a".into()]).searches(2);
/// let mut state = Research::default();
/// state.apply_update(update).unwrap();
/// assert_eq!((state.topic.as_str(), state.notes.len(), state.searches), ("rust", 1, 2));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a graph state",
    label = "not a `State`",
    note = "derive it: `#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]` on a struct with named fields (the `State` derive also writes its update type, `{Self}Update`)"
)]
pub trait State:
    Clone + Default + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
    /// The partial update nodes return: one optional entry per field.
    type Update: StateUpdate;

    /// The fields, in declaration order.
    const FIELDS: &'static [Field];

    /// Merges `update` into the state through each field's reducer, recording last-value
    /// writes in `writes` so two tasks of one super-step cannot both write one.
    fn apply(&mut self, update: Self::Update, writes: &mut StepWrites) -> Result<(), Error>;

    /// Applies one update on its own (outside a super-step).
    fn apply_update(&mut self, update: Self::Update) -> Result<(), Error> {
        self.apply(update, &mut StepWrites::default())
    }
}

/// The item type of a list field (used by generated code to name its update type).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`#[reducer(merge_by = ...)]` and `#[reducer(capped(...))]` need a `Vec<T>` field (or a `MergeByVec<T, K>` for `merge_by`), not `{Self}`"
)]
pub trait ListField {
    /// The item type.
    type Item;
}

impl<T> ListField for Vec<T> {
    type Item = T;
}

impl<T, K> ListField for MergeByVec<T, K> {
    type Item = T;
}

/// A field `#[reducer(merge_by = key_fn)]` merges (used by generated code): a `Vec<T>`
/// (every key computed on each update) or a [`MergeByVec<T, K>`] (keys kept and indexed).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`#[reducer(merge_by = ...)]` needs a `Vec<T>` or `MergeByVec<T, K>` field whose key function returns `Option<K>`, not `{Self}`"
)]
pub trait MergeByField<K>: ListField {
    /// Merges `update` into the field by the keys `key` computes.
    fn merge_by_key_fn(
        &mut self,
        update: AppendUpdate<Self::Item>,
        key: impl Fn(&Self::Item) -> Option<K>,
    );
}

impl<T, K: Eq + Hash> MergeByField<K> for Vec<T> {
    fn merge_by_key_fn(&mut self, update: AppendUpdate<T>, key: impl Fn(&T) -> Option<K>) {
        merge_by(self, update, key);
    }
}

impl<T, K: Eq + Hash + Clone> MergeByField<K> for MergeByVec<T, K> {
    fn merge_by_key_fn(&mut self, update: AppendUpdate<T>, key: impl Fn(&T) -> Option<K>) {
        self.merge(update, key);
    }
}

/// A list `max = N` caps (used by generated code): keeps the last `max` items.
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`max = N` caps a list: a `Vec<T>`, `KeyedVec<T>` or `MergeByVec<T, K>` field, not `{Self}`"
)]
pub trait KeepLast {
    /// Drops the first (oldest) items until at most `max` remain.
    fn keep_last(&mut self, max: usize);
}

impl<T> KeepLast for Vec<T> {
    fn keep_last(&mut self, max: usize) {
        let excess = self.len().saturating_sub(max);
        self.drain(..excess);
    }
}

impl<T: Keyed> KeepLast for KeyedVec<T> {
    fn keep_last(&mut self, max: usize) {
        KeyedVec::keep_last(self, max);
    }
}

impl<T, K: Eq + Hash + Clone> KeepLast for MergeByVec<T, K> {
    fn keep_last(&mut self, max: usize) {
        MergeByVec::keep_last(self, max);
    }
}

/// The update type generated for a [`State`].
pub trait StateUpdate:
    Default + Clone + Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
    /// `true` when the update names no field.
    fn is_empty(&self) -> bool;

    /// Names of the fields this update writes, in declaration order.
    fn written_fields(&self) -> Vec<&'static str>;
}

/// A state field as declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: &'static str,
    /// Which reducer merges its updates.
    pub reducer: ReducerKind,
}

/// The reducer of a field, as declared with `#[reducer(...)]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReducerKind {
    /// Overwrite; at most one writer per super-step.
    LastValue,
    /// Append to a list.
    Append,
    /// Upsert and remove by key.
    MergeByKey,
    /// Upsert by a key computed by a function; items without a key are appended.
    MergeBy,
    /// Append, keeping the last entries and folding older ones into a summary entry.
    Capped,
    /// Sum deltas.
    Add,
    /// A user function.
    Custom,
}

/// Who wrote which last-value field during one super-step.
///
/// The scheduler calls [`StepWrites::begin_task`] before applying each task's update;
/// derived [`State::apply`] code calls [`StepWrites::claim`] for every last-value field
/// it writes, which fails when a different task of the same step wrote it first.
#[derive(Debug, Default)]
pub struct StepWrites {
    task: usize,
    /// Names of the tasks seen so far (for error messages): (first task, name) of each run
    /// of tasks of one node, so a fan-out of one node keeps one entry.
    names: Vec<(usize, Arc<str>)>,
    /// (field, task) of each last-value field written in this step.
    claims: Vec<(usize, usize)>,
    /// (field, task) of each field overwritten (cleared, replaced) in this step.
    overwrites: Vec<(usize, usize)>,
}

impl StepWrites {
    /// Forgets every write, keeping the buffers (for the next super-step).
    pub(crate) fn clear(&mut self) {
        self.task = 0;
        self.names.clear();
        self.claims.clear();
        self.overwrites.clear();
    }

    /// Starts recording the writes of task number `task` (named `name`); tasks are begun
    /// in increasing order.
    pub fn begin_task(&mut self, task: usize, name: &Arc<str>) {
        self.task = task;
        if self
            .names
            .last()
            .is_none_or(|(_, last)| !Arc::ptr_eq(last, name))
        {
            self.names.push((task, Arc::clone(name)));
        }
    }

    fn name_of(&self, task: usize) -> String {
        self.names
            .iter()
            .rev()
            .find(|(first, _)| *first <= task)
            .map_or_else(|| "input".to_owned(), |(_, name)| name.to_string())
    }

    /// The bookkeeping of one field (its index in [`State::FIELDS`]) for a reducer's
    /// [`reduce_in_step`](Reducer::reduce_in_step).
    pub fn field(&mut self, field: usize, field_name: &'static str) -> FieldWrites<'_> {
        FieldWrites {
            writes: self,
            field,
            field_name,
        }
    }

    /// Records a write to last-value field `field` (its index in [`State::FIELDS`]).
    pub fn claim(&mut self, field: usize, field_name: &'static str) -> Result<(), Error> {
        match self.claims.iter().find(|(f, _)| *f == field) {
            Some(&(_, first)) if first != self.task => Err(Error::InvalidConcurrentUpdate {
                field: field_name,
                first: self.name_of(first),
                second: self.name_of(self.task),
            }),
            Some(_) => Ok(()),
            None => {
                self.claims.push((field, self.task));
                Ok(())
            }
        }
    }
}

/// One field's view of [`StepWrites`], handed to [`Reducer::reduce_in_step`].
#[derive(Debug)]
pub struct FieldWrites<'a> {
    writes: &'a mut StepWrites,
    field: usize,
    field_name: &'static str,
}

impl FieldWrites<'_> {
    /// The field's name.
    pub fn name(&self) -> &'static str {
        self.field_name
    }

    /// Records that the current update overwrites the field (clears or replaces it); a
    /// second overwrite in the same step, by any task, is an error, as in LangGraph
    /// ("can receive only one Overwrite value per super-step").
    ///
    /// # Errors
    /// [`Error::SecondOverwrite`] naming both writers.
    pub fn overwrite(&mut self) -> Result<(), Error> {
        let writes = &mut *self.writes;
        if let Some(&(_, first)) = writes.overwrites.iter().find(|(f, _)| *f == self.field) {
            return Err(Error::SecondOverwrite {
                field: self.field_name,
                first: writes.name_of(first),
                second: writes.name_of(writes.task),
            });
        }
        writes.overwrites.push((self.field, writes.task));
        Ok(())
    }

    /// Whether a write to the field applies in this step, `overwrites` saying whether the
    /// write clears or replaces it. An overwrite is recorded (a second one in the step is an
    /// error) and applies. Any other write applies unless another task of the step
    /// overwrote the field before it: the step's one overwrite wins over every other write
    /// of the field in the step, whichever order the tasks come in (writes before it are
    /// overwritten, writes after it are dropped), as in LangGraph. A task's own writes after
    /// its overwrite apply, in order.
    ///
    /// # Errors
    /// [`Error::SecondOverwrite`] for a second overwrite in the step.
    pub fn admit(&mut self, overwrites: bool) -> Result<bool, Error> {
        if overwrites {
            self.overwrite()?;
            return Ok(true);
        }
        let writes = &*self.writes;
        Ok(!writes
            .overwrites
            .iter()
            .any(|&(field, task)| field == self.field && task != writes.task))
    }

    /// The error for removing `key`, which the field does not hold.
    pub fn missing_key(&self, key: &dyn Debug) -> Error {
        Error::RemovedKeyNotFound {
            field: self.field_name,
            key: format!("{key:?}"),
        }
    }
}
