//! Node caching in a step: before it runs, the tasks of nodes with a cache policy are
//! looked up, and a hit becomes the task's output as if it had run (the same way a
//! finished task restored from a checkpoint does); after it, the outputs of those that
//! missed are stored.
//!
//! A cached value is a task's writes in the pending-write format of checkpoints: its
//! updates and its `Command` targets (`Send` inputs included), so a hit routes as the
//! node did.

use std::sync::Arc;
use std::time::Duration;

use crate::cache::{Cache, CacheEntry, CacheKey, NAMESPACE_SEPARATOR, input_key};
use crate::checkpoint::format::{self, TaskWrite};
use crate::command::CommandGraph;
use crate::error::Error;
use crate::graph::compiled::GraphCore;
use crate::graph::node::NodeOutput;
use crate::run::execute::tracing_on;
use crate::run::persist::{PendingStep, decode_gotos, output_ref};
use crate::run::plan::Task;
use crate::state::State;

/// What the cache said about one step's tasks.
#[derive(Default)]
pub(crate) struct StepCache {
    /// The tasks whose output came from the cache, in task order.
    pub(crate) hits: Vec<usize>,
    /// The tasks that missed, with their key and time to live: their outputs are stored
    /// after the step.
    misses: Vec<(usize, CacheKey, Option<Duration>)>,
}

/// `true` when some task of `tasks` belongs to a node with a cache policy (only then is
/// the step looked up).
pub(crate) fn any_cached<S: State>(core: &GraphCore<S>, tasks: &[Task]) -> bool {
    tasks.iter().any(|t| core.nodes[t.node].cache.is_some())
}

/// Looks up the tasks of `tasks` whose node has a cache policy; a hit's writes go into
/// `pending` as the task's output. Tasks that `pending` already answers (restored from a
/// checkpoint) are left alone; tasks that resume from an interrupt are not looked up (they
/// must run), but their results are stored.
pub(crate) async fn look_up<S: State>(
    core: &GraphCore<S>,
    cache: &dyn Cache,
    tasks: &[Task],
    state: &S,
    graph_path: Option<&Arc<str>>,
    pending: &mut Option<Box<PendingStep<S>>>,
    step: usize,
) -> Result<StepCache, Error> {
    let mut step_cache = StepCache::default();
    let mut looked_up = Vec::new();
    for (index, task) in tasks.iter().enumerate() {
        let spec = &core.nodes[task.node];
        let Some(policy) = &spec.cache else { continue };
        if pending
            .as_ref()
            .is_some_and(|p| p.outputs.contains_key(&index))
        {
            continue;
        }
        let key = task_key(spec.name.as_ref(), policy, task, state)?;
        let namespace = match graph_path {
            Some(path) => format!("{path}{NAMESPACE_SEPARATOR}{}", spec.name),
            None => spec.name.to_string(),
        };
        let key = CacheKey { namespace, key };
        // A task resuming from an interrupt runs, to take its resume value; what it
        // returns then is stored like any other result.
        let resumes = pending
            .as_ref()
            .is_some_and(|p| p.resume.contains_key(&index) || p.interrupts.contains_key(&index));
        if resumes {
            step_cache.misses.push((index, key, policy.ttl));
        } else {
            looked_up.push((index, key, policy.ttl));
        }
    }
    if looked_up.is_empty() {
        return Ok(step_cache);
    }
    let keys: Vec<CacheKey> = looked_up.iter().map(|(_, key, _)| key.clone()).collect();
    let values = cache.get(&keys).await?;
    for ((index, key, ttl), value) in looked_up.into_iter().zip(values) {
        let node = &core.nodes[tasks[index].node].name;
        let Some(writes) = value.and_then(|value| decode(core, node, &key, &value)) else {
            step_cache.misses.push((index, key, ttl));
            continue;
        };
        if tracing_on() {
            tracing::info_span!("node", node = %node, step, attempt = 0u32, cached = true)
                .in_scope(
                    || tracing::debug!(namespace = %key.namespace, key = %key.key, "cache hit"),
                );
        }
        pending
            .get_or_insert_with(Box::default)
            .outputs
            .insert(index, writes);
        step_cache.hits.push(index);
    }
    Ok(step_cache)
}

/// The key of `task`: its policy's key function over what it reads, or the hash of it.
fn task_key<S: State>(
    node: &str,
    policy: &crate::cache::CachePolicy,
    task: &Task,
    state: &S,
) -> Result<String, Error> {
    let serde = |source| Error::Serde {
        what: format!("the cache key of node `{node}`"),
        source,
    };
    match (&policy.key, &task.input) {
        (None, None) => input_key(state).map_err(serde),
        (None, Some(packet)) => input_key(&packet.to_json()).map_err(serde),
        (Some(custom), input) => {
            let (read, found): (&dyn std::any::Any, &str) = match input {
                Some(packet) => (packet.value(), packet.type_name()),
                None => (state, std::any::type_name::<S>()),
            };
            match custom.key(read) {
                Some(key) => key.map_err(serde),
                None => Err(Error::InputType {
                    node: node.to_owned(),
                    expected: custom.takes,
                    found: format!(
                        "`{found}` (the cache policy's key function takes `{}`)",
                        custom.takes
                    ),
                }),
            }
        }
    }
}

/// A cached value as a task's output, or `None` (a miss) when it does not decode: an
/// entry written for an older shape of the state is replaced, not an error.
fn decode<S: State>(
    core: &GraphCore<S>,
    node: &str,
    key: &CacheKey,
    value: &[u8],
) -> Option<(Vec<S::Update>, Vec<crate::command::Goto>)> {
    let decoded = format::from_storage::<TaskWrite<S>>(value)
        .map_err(|e| e.to_string())
        .and_then(|writes| Ok((writes.updates, decode_gotos(core, writes.gotos)?)));
    match decoded {
        Ok(writes) => Some(writes),
        Err(error) => {
            tracing::warn!(node, namespace = %key.namespace, key = %key.key, %error, "a cached entry does not decode; running the node");
            None
        }
    }
}

/// Stores the outputs of the tasks that missed; `output(index)` is the task's output if it
/// succeeded. A `Command` to the parent graph is not stored: it is not this graph's write.
pub(crate) async fn store<'a, S: State>(
    core: &GraphCore<S>,
    cache: &dyn Cache,
    step_cache: &StepCache,
    tasks: &[Task],
    output: impl Fn(usize) -> Option<&'a NodeOutput<S>>,
) -> Result<(), Error> {
    let mut entries = Vec::with_capacity(step_cache.misses.len());
    for (index, key, ttl) in &step_cache.misses {
        let Some(output) = output(*index) else {
            continue;
        };
        if matches!(output, NodeOutput::Command(c) if c.graph == CommandGraph::Parent) {
            continue;
        }
        let node = &core.nodes[tasks[*index].node].name;
        entries.push(CacheEntry {
            key: key.clone(),
            value: format::encode(&output_ref(node, output), "a cached node result")?,
            ttl: *ttl,
        });
    }
    if entries.is_empty() {
        return Ok(());
    }
    Ok(cache.set(entries).await?)
}
