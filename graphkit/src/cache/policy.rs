//! [`CachePolicy`]: which of a node's tasks are the same (its key), and for how long.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use super::key::input_key;

/// A key function, erased: `None` when the task's input is not the type it takes.
type KeyFn = Arc<dyn Fn(&dyn Any) -> Option<Result<String, serde_json::Error>> + Send + Sync>;

/// How a node's results are cached (LangGraph's `CachePolicy`): tasks of the node with the
/// same key share one entry, which lives for the time to live, if any.
///
/// The key is, by default, a stable hash of what the task reads: the state snapshot, or,
/// for a task made by a `SendTo`, its input. [`key`](Self::key) computes it from the part
/// that matters instead (cheaper for a large state, and it ignores fields the node does not
/// read). Either way the key is namespaced by the node's name (and the subgraph nodes it
/// runs in), so two nodes never share entries.
///
/// ```
/// use std::time::Duration;
/// use graphkit::cache::CachePolicy;
/// use graphkit::nodes::NodeOptions;
/// # #[derive(graphkit::State, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
/// # struct Research { query: String, notes: Vec<String> }
///
/// // Same query, same answer, for ten minutes; the notes do not matter.
/// let options = NodeOptions::new().cache(
///     CachePolicy::new()
///         .key(|state: &Research| state.query.clone())
///         .ttl(Duration::from_secs(600)),
/// );
/// ```
#[derive(Clone, Default)]
pub struct CachePolicy {
    pub(crate) key: Option<CustomKey>,
    pub(crate) ttl: Option<Duration>,
}

/// A user's key function and the type it takes.
#[derive(Clone)]
pub(crate) struct CustomKey {
    f: KeyFn,
    pub(crate) takes: &'static str,
}

/// What a task reads, for its key: the state snapshot, or its `Send` input.
type KeyInput<'a> = &'a dyn Any;

impl CustomKey {
    /// The hashed key of `input`; `None` when `input` is not of the type the function takes.
    pub(crate) fn key(&self, input: KeyInput<'_>) -> Option<Result<String, serde_json::Error>> {
        (self.f)(input)
    }
}

impl std::fmt::Debug for CachePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachePolicy")
            .field("key", &self.key.as_ref().map(|k| k.takes))
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl CachePolicy {
    /// Keyed by a hash of the whole input, kept until cleared.
    pub fn new() -> Self {
        Self::default()
    }

    /// Entries expire `ttl` after they were stored (measured on the cache's clock); an
    /// expired entry is a miss, and the node's next run stores a fresh one.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Computes the key from the task's input with `f` (LangGraph's `key_func`): `I` is the
    /// state type for tasks of edges, routers and `Command`s, or the input type of a node
    /// fed by `SendTo`. What `f` returns is hashed the same stable way as a whole input.
    /// A task whose input is not an `I` fails with [`Error::InputType`](crate::Error::InputType).
    #[must_use]
    pub fn key<I, K, F>(mut self, f: F) -> Self
    where
        I: 'static,
        K: Serialize,
        F: Fn(&I) -> K + Send + Sync + 'static,
    {
        let f: KeyFn = Arc::new(move |input: &dyn Any| {
            input.downcast_ref::<I>().map(|input| input_key(&f(input)))
        });
        self.key = Some(CustomKey {
            f,
            takes: std::any::type_name::<I>(),
        });
        self
    }
}
