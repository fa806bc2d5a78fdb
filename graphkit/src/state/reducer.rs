//! The [`Reducer`] trait and the built-in reducers for plain values.

use std::ops::AddAssign;

use super::FieldWrites;
use crate::error::Error;

/// How updates to one state field merge into its current value.
///
/// A reducer is a type-level tag: `#[reducer(append)]` on a field selects [`Append`](super::Append),
/// and the derived update type carries `Option<<Append as Reducer<Vec<T>>>::Update>` for
/// that field. Reducers are pure: the same updates in the same order give the same value.
pub trait Reducer<T> {
    /// What an update to the field carries.
    type Update;

    /// Merges `update` into `current`.
    fn reduce(current: &mut T, update: Self::Update);

    /// Merges `update` into `current` as part of a super-step, refusing what would be lost
    /// silently: a second overwrite (clear, replace) of the field in one step, or the
    /// removal of a key that is not there. `field` records the step's overwrites.
    ///
    /// The default merges with [`reduce`](Self::reduce) and refuses nothing.
    ///
    /// # Errors
    /// [`Error::SecondOverwrite`] or [`Error::RemovedKeyNotFound`]; the value is unchanged then.
    fn reduce_in_step(
        current: &mut T,
        update: Self::Update,
        field: FieldWrites<'_>,
    ) -> Result<(), Error> {
        let _ = field;
        Self::reduce(current, update);
        Ok(())
    }
}

/// Overwrite with the new value (the default reducer).
///
/// Two tasks of one super-step writing the same last-value field is an error
/// ([`Error::InvalidConcurrentUpdate`](crate::Error::InvalidConcurrentUpdate)).
#[derive(Debug, Clone, Copy, Default)]
pub struct LastValue;

impl<T> Reducer<T> for LastValue {
    type Update = T;

    fn reduce(current: &mut T, update: T) {
        *current = update;
    }
}

/// Sum deltas into a number (`#[reducer(add)]`).
///
/// Derived states add through [`Summable`], so a sum that would overflow the field's type
/// is an [`Error::AddOverflow`](crate::Error::AddOverflow) naming the field, in debug and
/// release builds alike (the field keeps its value and the step fails).
#[derive(Debug, Clone, Copy, Default)]
pub struct Add;

/// A number an `#[reducer(add)]` field can hold: integers (checked), floats, [`Duration`](std::time::Duration)s.
///
/// Implement it for your own number types to use them with `#[reducer(add)]`.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(add)]` cannot sum a field of type `{Self}`",
    label = "not a number `add` can sum",
    note = "`add` sums integers (with overflow checks), floats and `Duration`s; implement `graphkit::reducers::Summable` for your own number type, or append to a `Vec` with `#[reducer(append)]`"
)]
pub trait Summable: Sized {
    /// Adds `delta` in place; `false` (and `self` unchanged) when the sum does not fit.
    fn add_checked(&mut self, delta: Self) -> bool;

    /// `self + delta`, saturating at the type's bounds (combines deltas in an update).
    #[must_use]
    fn add_saturating(self, delta: Self) -> Self;
}

macro_rules! summable_int {
    ($($t:ty),*) => {$(
        impl Summable for $t {
            fn add_checked(&mut self, delta: Self) -> bool {
                match self.checked_add(delta) {
                    Some(sum) => {
                        *self = sum;
                        true
                    }
                    None => false,
                }
            }

            fn add_saturating(self, delta: Self) -> Self {
                self.saturating_add(delta)
            }
        }
    )*};
}
summable_int!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
);

macro_rules! summable_float {
    ($($t:ty),*) => {$(
        impl Summable for $t {
            fn add_checked(&mut self, delta: Self) -> bool {
                *self += delta;
                true
            }

            fn add_saturating(self, delta: Self) -> Self {
                self + delta
            }
        }
    )*};
}
summable_float!(f32, f64);

impl Summable for std::time::Duration {
    fn add_checked(&mut self, delta: Self) -> bool {
        match self.checked_add(delta) {
            Some(sum) => {
                *self = sum;
                true
            }
            None => false,
        }
    }

    fn add_saturating(self, delta: Self) -> Self {
        self.saturating_add(delta)
    }
}

impl<T: AddAssign> Reducer<T> for Add {
    type Update = T;

    fn reduce(current: &mut T, delta: T) {
        *current += delta;
    }
}
