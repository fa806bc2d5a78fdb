//! The thread API: reading a thread's state and history, writing to it, deleting it.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::checkpoint::format::{self, Loaded, TaskWrite};
use crate::checkpoint::{
    CheckpointRecord, CheckpointSource, CheckpointTuple, Checkpointer, ListOptions,
};
use crate::context::config::RunConfig;
use crate::context::task_link::{interrupt_id, task_namespace};
use crate::error::Error;
use crate::graph::INPUT;
use crate::graph::compiled::CompiledGraph;
use crate::run::apply::{apply_finished, apply_finished_or_keep};
use crate::run::persist::{
    Persist, Planned, TaskWriteRef, goto_records, pending_step, restore_joins, restore_tasks,
    tasks_of,
};
use crate::run::plan::{self, JoinProgress, Task};
use crate::snapshot::{SnapshotTask, StateSnapshot, SubgraphSnapshot, SubgraphView, UpdateAs};
use crate::state::State;

impl<C: State> SubgraphView for CompiledGraph<C> {
    fn newest<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
    ) -> BoxFuture<'a, Result<Option<SubgraphSnapshot>, Error>> {
        Box::pin(async move {
            let Some(mut snapshot) = self.snapshot_in(saver, thread, ns, None).await? else {
                return Ok(None);
            };
            self.fill_subgraphs(saver, thread, &mut snapshot.tasks)
                .await?;
            snapshot.into_json().map(Some)
        })
    }

    fn history<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Vec<SubgraphSnapshot>, Error>> {
        Box::pin(async move {
            self.history_in(saver, thread, ns, options)
                .await?
                .into_iter()
                .map(StateSnapshot::into_json)
                .collect()
        })
    }

    fn update<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        thread: &'a str,
        ns: &'a str,
        update: Value,
        as_node: UpdateAs<'a>,
    ) -> BoxFuture<'a, Result<String, Error>> {
        Box::pin(async move {
            let update: C::Update =
                serde_json::from_value(update).map_err(|source| Error::Serde {
                    what: format!("the update for checkpoint namespace `{ns}`"),
                    source,
                })?;
            self.update_state_in(saver, thread, ns, None, update, as_node)
                .await
        })
    }

    fn node_subgraph(&self, node: &str) -> Option<&dyn SubgraphView> {
        let id = self.core.by_name.get(node)?;
        self.core.nodes[*id].runner.subgraph()
    }
}

impl<S: State> CompiledGraph<S> {
    fn saver(&self, what: &'static str) -> Result<&Arc<dyn Checkpointer>, Error> {
        self.core
            .checkpointer
            .as_ref()
            .ok_or(Error::NoCheckpointer(what))
    }

    /// The snapshot of one checkpoint. `view` says whether the writes of its step's
    /// finished tasks are applied (the thread's newest state) or shown only as results
    /// (a checkpoint of the past), and, for a past one, what its step wrote.
    fn snapshot_of(
        &self,
        loaded: Loaded<S>,
        tuple: &CheckpointTuple,
        view: View<S>,
    ) -> Result<StateSnapshot<S>, Error> {
        let pending = pending_step(&self.core, &loaded.record, &tuple.pending_writes)?;
        let record: CheckpointRecord = loaded.record;
        let planned = restore_tasks(&self.core, &record, loaded.body.next.clone())?;
        // The state shows what the tasks that finished before the step stopped wrote, with
        // the same conflict checks as the step. Writes that cannot be applied together
        // (the step failed on them) are shown as the tasks' results, not in the state, and
        // the conflict as the error of the task whose write failed: the thread can be read,
        // and repaired with `update_state`.
        let mut values = loaded.state;
        let mut finished: Vec<(usize, &[S::Update])> = pending
            .outputs
            .iter()
            .map(|(index, (updates, _))| (*index, updates.as_slice()))
            .collect();
        finished.sort_by_key(|(index, _)| *index);
        let apply_pending = matches!(view, View::Newest);
        let conflict = if apply_pending {
            apply_finished_or_keep(&self.core, &mut values, &planned, &finished)
        } else if finished.is_empty() {
            None
        } else {
            // A past checkpoint shows its own state; its step's conflict is still named.
            let mut scratch = values.clone();
            apply_finished(&self.core, &mut scratch, &planned, finished.iter().copied()).err()
        }
        .map(|(index, error)| (index, error.to_string()));
        // What each task of the step wrote, as the next checkpoint recorded it (for a past
        // checkpoint whose step finished): task `i` wrote `step_writes[i]`.
        let step_writes = match view {
            View::Past(Some(writes))
                if writes.len() == loaded.body.next.len()
                    && writes
                        .iter()
                        .zip(&loaded.body.next)
                        .all(|(write, task)| write.node == task.node) =>
            {
                writes
            }
            _ => Vec::new(),
        };
        let tasks: Vec<SnapshotTask> = loaded
            .body
            .next
            .iter()
            .enumerate()
            .map(|(index, task)| SnapshotTask {
                checkpoint_ns: planned
                    .get(index)
                    .filter(|t| self.core.nodes[t.node].runner.subgraph().is_some())
                    .map(|_| {
                        task_namespace(
                            &record.checkpoint_ns,
                            &task.node,
                            tasks_of(&record).unwrap_or(&record.checkpoint_id),
                            index,
                        )
                    }),
                state: None,
                id: interrupt_id(&record.checkpoint_id, index),
                name: task.node.clone(),
                error: pending.errors.get(&index).cloned().or_else(|| {
                    conflict
                        .as_ref()
                        .filter(|(failed, _)| *failed == index)
                        .map(|(_, error)| error.clone())
                }),
                interrupts: pending
                    .interrupts
                    .get(&index)
                    .cloned()
                    .into_iter()
                    .collect(),
                result: match pending.outputs.get(&index) {
                    Some((updates, _)) => Some(updates.as_slice()),
                    None => step_writes.get(index).map(|w| w.updates.as_slice()),
                }
                .map(|updates| serde_json::to_value(updates).unwrap_or(Value::Null)),
            })
            .collect();
        Ok(StateSnapshot {
            values,
            // A past checkpoint's step is all still to run from there (as LangGraph shows
            // history); on the newest, the tasks that finished are done, unless the step's
            // writes conflict: then it did not happen and all of its tasks are still next.
            next: tasks
                .iter()
                .enumerate()
                .filter(|(index, _)| {
                    !apply_pending || conflict.is_some() || !pending.outputs.contains_key(index)
                })
                .map(|(_, t)| t.name.clone())
                .collect(),
            deferred: loaded.body.deferred.into_iter().map(|t| t.node).collect(),
            tasks,
            thread_id: record.thread_id,
            checkpoint_ns: record.checkpoint_ns,
            checkpoint_id: record.checkpoint_id,
            parent_checkpoint_id: record.parent_id,
            step: record.step,
            source: record.source,
            created_at_ms: record.created_at_ms,
            metadata: record.metadata,
            interrupts: pending.all_interrupts(),
        })
    }

    /// The checkpoint `checkpoint_id` (or the newest) of namespace `ns` on `thread`. The
    /// newest shows the writes of its step's finished tasks applied; a checkpoint named by
    /// id is shown as of its own time, with what its step wrote as the tasks' results (as
    /// LangGraph's `get_state` does with a `checkpoint_id`).
    async fn snapshot_in(
        &self,
        saver: &Arc<dyn Checkpointer>,
        thread: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<Option<StateSnapshot<S>>, Error> {
        let Some(tuple) = saver.get(thread, ns, checkpoint_id).await? else {
            return Ok(None);
        };
        let view = match checkpoint_id {
            None => View::Newest,
            Some(_) => {
                // Its step's writes are in the checkpoint saved after it: the oldest child
                // (a fork from it saves another, later child).
                let all = saver.list(thread, ns, &ListOptions::default()).await?;
                View::Past(step_writes(&tuple.record, all.iter().rev())?)
            }
        };
        let loaded = format::load::<S>(&**saver, tuple.record.clone()).await?;
        self.snapshot_of(loaded, &tuple, view).map(Some)
    }

    /// The checkpoints of namespace `ns` on `thread`, newest first, each with what its
    /// step wrote as its tasks' results.
    async fn history_in(
        &self,
        saver: &Arc<dyn Checkpointer>,
        thread: &str,
        ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, Error> {
        let records = saver.list(thread, ns, options).await?;
        // The children of the listed checkpoints are listed too (newer ones come first),
        // except when the list starts `before` a checkpoint: that one may be a child.
        let before = match &options.before {
            Some(id) => saver.get(thread, ns, Some(id)).await?.map(|t| t.record),
            None => None,
        };
        let mut history = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            let not_found = || Error::CheckpointNotFound {
                thread_id: thread.to_owned(),
                checkpoint_id: Some(record.checkpoint_id.clone()),
            };
            let tuple = saver
                .get(thread, ns, Some(&record.checkpoint_id))
                .await?
                .ok_or_else(not_found)?;
            let newer = records[..index].iter().rev().chain(before.iter());
            let view = View::Past(step_writes(record, newer)?);
            let loaded = format::load::<S>(&**saver, tuple.record.clone()).await?;
            history.push(self.snapshot_of(loaded, &tuple, view)?);
        }
        Ok(history)
    }

    /// Fills [`SnapshotTask::state`] of the subgraph tasks whose child run saved
    /// checkpoints, at every depth.
    async fn fill_subgraphs(
        &self,
        saver: &Arc<dyn Checkpointer>,
        thread: &str,
        tasks: &mut [SnapshotTask],
    ) -> Result<(), Error> {
        for task in tasks {
            let (Some(ns), Some(view)) = (
                task.checkpoint_ns.as_deref(),
                self.core
                    .by_name
                    .get(task.name.as_str())
                    .and_then(|id| self.core.nodes[*id].runner.subgraph()),
            ) else {
                continue;
            };
            task.state = view.newest(saver, thread, ns).await?.map(Box::new);
        }
        Ok(())
    }

    /// The thread's state at its newest checkpoint, or at `config`'s checkpoint id.
    ///
    /// # Errors
    /// [`Error::NoCheckpointer`], [`Error::MissingThreadId`], [`Error::CheckpointNotFound`],
    /// or a clear error for a checkpoint that cannot be read.
    pub async fn get_state(&self, config: &RunConfig) -> Result<StateSnapshot<S>, Error> {
        let saver = self.saver("get_state")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        self.snapshot_in(saver, thread, "", config.checkpoint_id.as_deref())
            .await?
            .ok_or_else(|| Error::CheckpointNotFound {
                thread_id: thread.to_owned(),
                checkpoint_id: config.checkpoint_id.clone(),
            })
    }

    /// [`get_state`](Self::get_state) with the state of each subgraph task that saved
    /// checkpoints in [`SnapshotTask::state`] (LangGraph's `get_state(config,
    /// subgraphs=True)`): a parent paused inside a subgraph shows where the child stands.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use graphkit::{CompileOptions, Error, NodeContext, RunConfig, START, State, StateGraph};
    /// # use graphkit::checkpoint::InMemorySaver;
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Doc { #[reducer(append)] log: Vec<String> }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut child = StateGraph::<Doc>::new();
    /// child
    ///     .add_node("draft", |_: Arc<Doc>| async { DocUpdate::new().log(vec!["draft".into()]) })
    ///     .add_node("ask", |ctx: NodeContext| async move {
    ///         let answer: String = ctx.interrupt_as("ok?")?;
    ///         Ok::<_, Error>(DocUpdate::new().log(vec![answer]))
    ///     })
    ///     .add_edge(START, "draft")
    ///     .add_edge("draft", "ask");
    /// let mut parent = StateGraph::<Doc>::new();
    /// parent.add_subgraph("review", child.compile()?).add_edge(START, "review");
    /// let graph = parent.compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))?;
    ///
    /// let config = RunConfig::new().thread_id("t");
    /// assert!(graph.invoke_with(DocUpdate::new(), config.clone()).await?.is_paused());
    /// let snapshot = graph.get_state_with_subgraphs(&config).await?;
    /// let child = snapshot.tasks[0].state.as_ref().expect("the child saved checkpoints");
    /// assert_eq!(child.next, ["ask"]);
    /// assert_eq!(child.values["log"], serde_json::json!(["draft"]));
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// As [`get_state`](Self::get_state).
    pub async fn get_state_with_subgraphs(
        &self,
        config: &RunConfig,
    ) -> Result<StateSnapshot<S>, Error> {
        let mut snapshot = self.get_state(config).await?;
        let saver = self.saver("get_state")?;
        let thread = snapshot.thread_id.clone();
        self.fill_subgraphs(saver, &thread, &mut snapshot.tasks)
            .await?;
        Ok(snapshot)
    }

    /// The thread's checkpoints, newest first (filtered by `options`).
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        options: &ListOptions,
    ) -> Result<Vec<StateSnapshot<S>>, Error> {
        let saver = self.saver("get_state_history")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        self.history_in(saver, thread, "", options).await
    }

    /// The checkpoints a subgraph's child run kept in the thread, newest first: those of
    /// `checkpoint_ns`, as [`SnapshotTask::checkpoint_ns`] names it (nested namespaces
    /// lead through nested subgraphs).
    ///
    /// # Errors
    /// [`Error::NotASubgraph`] when the namespace does not lead to a subgraph node of this
    /// graph; otherwise as [`get_state_history`](Self::get_state_history).
    pub async fn get_subgraph_state_history(
        &self,
        config: &RunConfig,
        checkpoint_ns: &str,
        options: &ListOptions,
    ) -> Result<Vec<SubgraphSnapshot>, Error> {
        let saver = self.saver("get_subgraph_state_history")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let view = self.subgraph_at(checkpoint_ns)?;
        view.history(saver, thread, checkpoint_ns, options).await
    }

    /// The child graph the namespace `ns` leads to.
    fn subgraph_at(&self, ns: &str) -> Result<&dyn SubgraphView, Error> {
        let not_a_subgraph = |node: &str| Error::NotASubgraph {
            namespace: ns.to_owned(),
            node: node.to_owned(),
        };
        let mut view: Option<&dyn SubgraphView> = None;
        for part in ns.split('|') {
            let node = part.split_once(':').map_or(part, |(node, _)| node);
            let found = match view {
                None => self
                    .core
                    .by_name
                    .get(node)
                    .and_then(|id| self.core.nodes[*id].runner.subgraph()),
                Some(parent) => parent.node_subgraph(node),
            };
            view = Some(found.ok_or_else(|| not_a_subgraph(node))?);
        }
        view.ok_or_else(|| not_a_subgraph(ns))
    }

    /// Writes `update` to the thread as a write of `as_node` ([`UpdateAs`]: a node's name,
    /// [`UpdateAs::Input`] or [`UpdateAs::LastWriter`]), and plans the next step from it.
    /// The next `invoke_with(RunInput::Continue, ..)` continues from there. With a
    /// `checkpoint_id` in `config`, the write forks from that checkpoint.
    ///
    /// - A node's name (`"human"`): as if that node had returned the update; its edges plan
    ///   the next step.
    /// - [`UpdateAs::Input`]: as the run's input; the next step is planned from `START` (the
    ///   checkpoint's source is `Input`).
    /// - [`UpdateAs::LastWriter`]: as the node that wrote the checkpoint's last step, as
    ///   LangGraph does without `as_node`; when several nodes wrote it, that is ambiguous
    ///   ([`Error::AmbiguousUpdate`] names them). A checkpoint nobody wrote (an input, an
    ///   earlier update as the input) keeps its planned next step, and a thread with no
    ///   checkpoint yet is started: the update is its input.
    ///
    /// When the checkpoint's step stopped part-way (a task failed or paused after siblings
    /// finished), the update sees the state `get_state` shows: with a node or the input as
    /// the writer, the finished tasks' writes are applied before the update and their edges
    /// are planned with the writer's, and the unfinished tasks are dropped; when the planned
    /// step is kept (`LastWriter` on a checkpoint nobody wrote), the finished tasks' saved
    /// outputs carry over, so a later resume runs only the tasks still to run.
    ///
    /// Returns a config pointing at the new checkpoint.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: impl Into<UpdateAs<'_>>,
    ) -> Result<RunConfig, Error> {
        let saver = self.saver("update_state")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let checkpoint_id = self
            .update_state_in(
                saver,
                thread,
                "",
                config.checkpoint_id.as_deref(),
                update,
                as_node.into(),
            )
            .await?;
        Ok(RunConfig::new()
            .thread_id(thread)
            .checkpoint_id(checkpoint_id))
    }

    /// Edits the state of a subgraph's child run where the thread keeps it: the
    /// checkpoints of `checkpoint_ns` (as [`SnapshotTask::checkpoint_ns`] names it; nested
    /// namespaces lead through nested subgraphs), as [`update_state`](Self::update_state)
    /// does for the graph's own. LangGraph does this with `update_state` on the child's
    /// config. The update is JSON (the child's state type may differ from the parent's)
    /// and must decode as the child's update type; `as_node` names a node of the child.
    ///
    /// Used while the run is paused inside the subgraph: continuing the thread
    /// (`RunInput::Continue`) runs the subgraph task again, and the child continues from
    /// its edited state. Returns the id of the child's new checkpoint.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use graphkit::{CompileOptions, Error, NodeContext, RunConfig, RunInput, START, State, StateGraph};
    /// # use graphkit::checkpoint::InMemorySaver;
    /// # use serde::{Deserialize, Serialize};
    /// # use serde_json::json;
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Doc { #[reducer(append)] log: Vec<String> }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut child = StateGraph::<Doc>::new();
    /// child
    ///     .add_node("ask", |ctx: NodeContext| async move {
    ///         let answer: String = ctx.interrupt_as("ok?")?;
    ///         Ok::<_, Error>(DocUpdate::new().log(vec![answer]))
    ///     })
    ///     .add_node("publish", |_: Arc<Doc>| async { DocUpdate::new().log(vec!["published".into()]) })
    ///     .add_edge(START, "ask")
    ///     .add_edge("ask", "publish");
    /// let mut parent = StateGraph::<Doc>::new();
    /// parent.add_subgraph("review", child.compile()?).add_edge(START, "review");
    /// let graph = parent.compile_with(CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())))?;
    ///
    /// let config = RunConfig::new().thread_id("t");
    /// assert!(graph.invoke_with(DocUpdate::new(), config.clone()).await?.is_paused());
    /// // Answer for the child's `ask` node by editing the child's state instead.
    /// let ns = graph.get_state(&config).await?.tasks[0].checkpoint_ns.clone().expect("a subgraph task");
    /// graph.update_subgraph_state(&config, &ns, json!({"log": ["edited"]}), "ask").await?;
    /// let done = graph.invoke_with(RunInput::Continue, config).await?.finished()?;
    /// assert_eq!(done.log, ["edited", "published"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::NotASubgraph`] when the namespace does not lead to a subgraph node;
    /// [`Error::Serde`] when `update` is not the child's update; otherwise as
    /// [`update_state`](Self::update_state).
    pub async fn update_subgraph_state(
        &self,
        config: &RunConfig,
        checkpoint_ns: &str,
        update: Value,
        as_node: impl Into<UpdateAs<'_>>,
    ) -> Result<String, Error> {
        let saver = self.saver("update_subgraph_state")?;
        let thread = config.thread_id.as_deref().ok_or(Error::MissingThreadId)?;
        let view = self.subgraph_at(checkpoint_ns)?;
        view.update(saver, thread, checkpoint_ns, update, as_node.into())
            .await
    }

    /// [`update_state`](Self::update_state) on the checkpoints of namespace `ns`; returns
    /// the new checkpoint's id.
    async fn update_state_in(
        &self,
        saver: &Arc<dyn Checkpointer>,
        thread: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
        update: S::Update,
        as_node: UpdateAs<'_>,
    ) -> Result<String, Error> {
        let mut persist =
            Persist::open_in(Arc::clone(saver), thread, ns, crate::Durability::Sync).await?;
        let outcome = async {
            let loaded = persist.load::<S>(checkpoint_id).await?;
            let writer = match as_node {
                UpdateAs::Node(name) => self.writer_named(name)?,
                UpdateAs::Input => Writer::Input,
                UpdateAs::LastWriter => match &loaded {
                    None => Writer::Input,
                    Some((loaded, _)) => self.last_writer(&loaded.record)?,
                },
            };
            // The step the checkpoint planned, and what its finished tasks already wrote.
            let (mut state, mut joins, planned, pending, saved_writes) = match loaded {
                Some((loaded, saved_writes)) => {
                    let pending = pending_step(&self.core, &loaded.record, &saved_writes)?;
                    let planned = restore_tasks(&self.core, &loaded.record, loaded.body.next)?;
                    let joins = restore_joins(
                        &self.core,
                        &loaded.record,
                        loaded.body.joins,
                        loaded.body.deferred,
                    )?;
                    (loaded.state, joins, planned, Some(pending), saved_writes)
                }
                None => (
                    S::default(),
                    JoinProgress::new(&self.core),
                    Vec::new(),
                    None,
                    Vec::new(),
                ),
            };
            // Tasks of the stopped step that finished, in task order, with their outputs.
            let mut finished: Vec<(usize, Vec<S::Update>, Vec<crate::command::Goto>)> = pending
                .map(|pending| {
                    pending
                        .outputs
                        .into_iter()
                        .map(|(index, (updates, gotos))| (index, updates, gotos))
                        .collect()
                })
                .unwrap_or_default();
            finished.sort_by_key(|(index, _, _)| *index);
            let keeps_step = matches!(writer, Writer::KeepNext);
            let planned_names: Vec<&str> = planned
                .iter()
                .map(|task| &*self.core.nodes[task.node].name)
                .collect();
            let mut writes_conflict = false;
            if !keeps_step {
                // The update ends the stopped step: what its finished tasks wrote is applied
                // first (as `get_state` shows it, with the same conflict checks), and the
                // tasks that did not finish are dropped. When their writes conflict (the step
                // failed on them), none is applied: the update repairs the step in their
                // place, and the finished tasks' edges still fire.
                let writes: Vec<(usize, &[S::Update])> = finished
                    .iter()
                    .map(|(index, updates, _)| (*index, updates.as_slice()))
                    .collect();
                writes_conflict =
                    apply_finished_or_keep(&self.core, &mut state, &planned, &writes).is_some();
            }
            state.apply_update(update.clone())?;
            let mut scratch = plan::PlanScratch::new(&self.core);
            let (next, source, writer_name) = match writer {
                Writer::Node(id) => {
                    // The writer's edges, and those of the stopped step's finished tasks.
                    let mut ran = Vec::with_capacity(finished.len() + 1);
                    let mut gotos = Vec::new();
                    for (index, _, task_gotos) in &finished {
                        if let Some(task) = planned.get(*index) {
                            if !task_gotos.is_empty() {
                                gotos.push((ran.len(), task_gotos.clone()));
                            }
                            ran.push(Task {
                                node: task.node,
                                input: None,
                            });
                        }
                    }
                    ran.push(Task {
                        node: id,
                        input: None,
                    });
                    let next = plan::next_tasks(
                        &self.core,
                        &ran,
                        gotos,
                        &state,
                        &mut joins,
                        &mut scratch,
                    )?;
                    (next, CheckpointSource::Update, &*self.core.nodes[id].name)
                }
                Writer::Input => {
                    joins = JoinProgress::new(&self.core);
                    let next = plan::start_tasks(&self.core, &state, &mut joins, &mut scratch)?;
                    (next, CheckpointSource::Input, INPUT)
                }
                Writer::KeepNext => (planned, CheckpointSource::Update, INPUT),
            };
            // The checkpoint records the finished tasks' writes (when applied) before the
            // update's, as the state was built.
            let mut writes: Vec<TaskWriteRef<'_, S>> = Vec::with_capacity(finished.len() + 1);
            if !keeps_step && !writes_conflict {
                for (index, updates, task_gotos) in &finished {
                    if let Some(task) = planned_names.get(*index) {
                        writes.push(TaskWriteRef {
                            node: task,
                            updates,
                            gotos: goto_records(task_gotos),
                        });
                    }
                }
            }
            writes.push(TaskWriteRef {
                node: writer_name,
                updates: std::slice::from_ref(&update),
                gotos: Vec::new(),
            });
            let record = persist
                .save(
                    source,
                    &state,
                    &writes,
                    &Planned::of(&self.core, &next, &joins),
                    &[writer_name],
                )
                .await?;
            if keeps_step && !saved_writes.is_empty() {
                // The same step stays planned: its finished tasks' outputs (and answered or
                // open interrupts) carry over, so a resume runs only the tasks still to run.
                persist.copy_pending(saved_writes).await?;
            }
            Ok(record.checkpoint_id)
        }
        .await;
        let released = persist.release().await;
        outcome.and_then(|config| released.map(|()| config))
    }

    /// The writer `update_state(.., Some(name))` names.
    fn writer_named(&self, name: &str) -> Result<Writer, Error> {
        if name == INPUT {
            return Ok(Writer::Input);
        }
        self.core
            .by_name
            .get(name)
            .map(|id| Writer::Node(*id))
            .ok_or_else(|| Error::UnknownNode {
                context: "update_state(as_node)".into(),
                node: name.to_owned(),
            })
    }

    /// The writer `update_state(.., UpdateAs::LastWriter)` uses: the node that wrote the
    /// checkpoint.
    fn last_writer(&self, record: &CheckpointRecord) -> Result<Writer, Error> {
        let writers: Vec<&str> = record
            .metadata
            .get("writes")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let nodes: Vec<&str> = writers
            .into_iter()
            .filter(|w| self.core.by_name.contains_key(*w))
            .collect();
        match nodes.as_slice() {
            [] => Ok(Writer::KeepNext),
            [node] => self.writer_named(node),
            _ => Err(Error::AmbiguousUpdate {
                checkpoint_id: record.checkpoint_id.clone(),
                writers: nodes.iter().map(|n| (*n).to_owned()).collect(),
            }),
        }
    }

    /// Deletes every checkpoint of a thread.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), Error> {
        Ok(self
            .saver("delete_thread")?
            .delete_thread(thread_id)
            .await?)
    }
}

/// Whom `update_state` writes as.
enum Writer {
    /// A node: its edges plan the next step.
    Node(crate::graph::compiled::NodeId),
    /// The run's input: the next step is planned from START.
    Input,
    /// Nobody in particular: the checkpoint's planned next step stays.
    KeepNext,
}

/// How a snapshot shows the step its checkpoint plans.
enum View<S: State> {
    /// The thread's newest checkpoint: the writes of the step's finished tasks are
    /// applied, and those tasks are no longer next.
    Newest,
    /// A checkpoint of the past: its own state, its whole step next, and what the step
    /// wrote (one entry per task, when a later checkpoint recorded it) as the results.
    Past(Option<Vec<TaskWrite<S>>>),
}

/// What the step `record` planned wrote, per task: the writes of its first child saved by
/// the run itself (an update or a fork writes something else), among `newer` (oldest
/// first).
fn step_writes<'a, S: State>(
    record: &CheckpointRecord,
    mut newer: impl Iterator<Item = &'a CheckpointRecord>,
) -> Result<Option<Vec<TaskWrite<S>>>, Error> {
    let child = newer.find(|c| {
        c.source == CheckpointSource::Loop
            && c.parent_id.as_deref() == Some(record.checkpoint_id.as_str())
    });
    Ok(match child {
        Some(child) => Some(format::decode_writes::<S>(child)?),
        None => None,
    })
}
