//! Workers: claim runs from the backend's queue, run their graph, append the stream events,
//! heartbeat the lease, obey cancels, and end the run with its thread's outcome. A sweeper
//! returns runs of dead workers to the queue.
//!
//! Every write of a worker for a run names its claim's lease token, and the database
//! refuses it once the token is no longer the run's (see [`crate::backend`]): a worker
//! that was paused past its lease and wakes up after another attempt took the run stops
//! at its first write, which is refused, and logs it once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use graphkit::checkpoint::ListOptions;
use graphkit::{Durability, RunConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::backend::{
    Backend, CancelAction, Lease, RunEnd, RunRecord, ThreadOutcome, ThreadStatus,
};
use crate::convert::stream_message_to_langchain;
use crate::error::{Result, ServerError, lost_lease};
use crate::graph::{
    CommandSpec, EventKind, GraphEvent, GraphEvents, RunRequest, SharedGraph, dynamic, graph_modes,
    interrupt_json,
};
use crate::time::Timestamp;
use crate::webhook::{self, WebhookSettings};

/// How workers hold runs and how often they look around.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// How long a claim holds without a heartbeat.
    pub lease: Duration,
    /// Heartbeat period (a third of the lease by default).
    pub heartbeat: Duration,
    /// How often a worker sweeps expired leases.
    pub sweep_every: Duration,
    /// How often an idle worker looks at the queue without a wake-up.
    pub poll: Duration,
    /// Claims per run before a swept run fails for good.
    pub max_attempts: u32,
    /// How long the events of ended runs are kept (for replays).
    pub event_ttl: Duration,
    /// How long a cancelled graph may take to stop before it is dropped.
    pub stop_grace: Duration,
    /// How often a worker process looks for due crons.
    pub cron_every: Duration,
    /// How often a worker process deletes expired threads and store items, and old run
    /// events.
    pub maintenance_every: Duration,
    /// The most expired threads, and the most expired store items, deleted per
    /// maintenance tick.
    pub expiry_batch: usize,
    /// How webhooks are called.
    pub webhooks: WebhookSettings,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            sweep_every: Duration::from_secs(15),
            poll: Duration::from_secs(1),
            max_attempts: 3,
            event_ttl: Duration::from_secs(600),
            stop_grace: Duration::from_secs(10),
            cron_every: Duration::from_secs(5),
            maintenance_every: Duration::from_secs(60),
            expiry_batch: 100,
            webhooks: WebhookSettings::default(),
        }
    }
}

/// The creation request as stored in a run's `kwargs`: what the worker needs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct RunKwargs {
    pub graph_id: String,
    pub input: Option<Value>,
    pub command: Option<CommandSpec>,
    pub stream_mode: Vec<String>,
    pub stream_subgraphs: bool,
    pub stream_resumable: bool,
    pub interrupt_before: Option<Value>,
    pub interrupt_after: Option<Value>,
    pub config: Value,
    pub context: Value,
    pub checkpoint_id: Option<String>,
    pub durability: Option<String>,
    /// A stateless run's temporary thread, deleted by the worker when the run ends.
    pub delete_thread_when_done: bool,
    /// Where to POST the run when it ends (checked by the guard at creation).
    pub webhook: Option<String>,
}

impl RunKwargs {
    /// The run's input and command, moved out (a big input is not copied).
    pub(crate) fn take_request(&mut self) -> RunRequest {
        RunRequest {
            input: self.input.take(),
            command: self.command.take(),
        }
    }
}

/// What the workers and the API share.
pub(crate) struct Shared {
    pub backend: Arc<dyn Backend>,
    pub graphs: HashMap<String, SharedGraph>,
    pub settings: WorkerSettings,
    /// How long this process's workers took on the runs they ended (`GET /metrics`).
    pub run_durations: crate::metrics::RunDurations,
}

impl Shared {
    pub(crate) fn graph(&self, graph_id: &str) -> Result<&SharedGraph> {
        self.graphs.get(graph_id).ok_or_else(|| {
            ServerError::NotFound(format!(
                "graph `{graph_id}` is not served here (served: {})",
                self.graph_ids().join(", ")
            ))
        })
    }

    /// Ends a run a worker of this process holds with the claim's `token`
    /// ([`Backend::finish_run`]), having first recorded how long the attempt took since
    /// `claimed` (`GET /metrics`): whoever sees the run ended finds it counted. `false`:
    /// the lease was lost, nothing was written. Once the end is stored, the run's webhook
    /// (if it has one) is called on a task of its own.
    pub(crate) async fn finish_run(
        &self,
        run: &RunRecord,
        token: Uuid,
        end: RunEnd,
        outcome: Option<&ThreadOutcome>,
        claimed: Instant,
    ) -> Result<bool> {
        self.run_durations.record(claimed.elapsed());
        let webhook = run.kwargs.get("webhook").and_then(Value::as_str);
        let payload = webhook.map(|_| webhook_payload(run, &end, outcome, claimed.elapsed()));
        let finished = self
            .backend
            .finish_run(run.run_id, token, end, outcome)
            .await?;
        if finished && let (Some(url), Some(payload)) = (webhook, payload) {
            webhook::deliver(url.to_owned(), payload, self.settings.webhooks.clone());
        }
        Ok(finished)
    }

    pub(crate) fn graph_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.graphs.keys().cloned().collect();
        ids.sort();
        ids
    }
}

/// What a run's webhook receives: the run as `GET` shows it, with its final status, when its
/// attempt started (`run_started_at`, `took` before now) and ended, the thread's state values
/// after it, and its error (if it failed) as `{"error": kind, "message": ...}`, as the
/// reference server sends it.
fn webhook_payload(
    run: &RunRecord,
    end: &RunEnd,
    outcome: Option<&ThreadOutcome>,
    took: std::time::Duration,
) -> Value {
    let mut payload = crate::backend::run_json(run);
    let now = Timestamp::now();
    let took = i64::try_from(took.as_micros()).unwrap_or(i64::MAX);
    let started = Timestamp(now.micros().saturating_sub(took));
    if let Value::Object(fields) = &mut payload {
        let status = end
            .recorded()
            .map_or("interrupted", |(status, _)| status.as_str());
        fields.insert("status".into(), json!(status));
        fields.insert("updated_at".into(), json!(now));
        fields.insert("run_started_at".into(), json!(started));
        fields.insert("run_ended_at".into(), json!(now));
        fields.insert("webhook_sent_at".into(), json!(now));
        fields.insert(
            "values".into(),
            outcome.map_or(Value::Null, |o| o.values.clone()),
        );
        if let RunEnd::Error(message) = end {
            // The failure as the run's `error` event carried it, when the worker recorded one.
            let error = outcome
                .map(|o| &o.error)
                .filter(|e| e.get("error").is_some() && e.get("message").is_some())
                .cloned()
                .unwrap_or_else(|| json!({"error": "Error", "message": message}));
            fields.insert("error".into(), error);
        }
    }
    payload
}

/// A new worker id: the process id and a random part (`{pid}-{uuid}`), stored in the runs
/// a worker holds.
pub(crate) fn new_worker_id() -> String {
    format!("{}-{}", std::process::id(), Uuid::now_v7().simple())
}

/// Runs `count` concurrent runs at a time until `shutdown`, plus the sweeper.
pub(crate) async fn run_workers(
    shared: Arc<Shared>,
    worker_id: String,
    count: usize,
    shutdown: CancellationToken,
) {
    tracing::info!(%worker_id, count, "workers started");
    let sweeper = tokio::spawn(sweep(Arc::clone(&shared), shutdown.clone()));
    let slots = Arc::new(Semaphore::new(count.max(1)));
    let mut running = tokio::task::JoinSet::new();
    loop {
        let permit = tokio::select! {
            () = shutdown.cancelled() => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let mut wakeup = shared.backend.watch_queue();
        match shared
            .backend
            .claim_run(&worker_id, shared.settings.lease)
            .await
        {
            Ok(Some(run)) => {
                let (shared, worker_id, stop) =
                    (Arc::clone(&shared), worker_id.clone(), shutdown.clone());
                running.spawn(async move {
                    execute(&shared, run, &worker_id, &stop).await;
                    drop(permit);
                });
            }
            Ok(None) => {
                drop(permit);
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = wakeup.changed() => {}
                    () = sleep(shared.settings.poll) => {}
                }
            }
            Err(error) => {
                drop(permit);
                tracing::warn!(%error, "claiming a run failed; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = sleep(shared.settings.poll) => {}
                }
            }
        }
        while running.try_join_next().is_some() {}
    }
    // Graceful stop: the runs in progress put themselves back in the queue.
    while running.join_next().await.is_some() {}
    sweeper.abort();
}

/// The periodic maintenance of a worker process: returns expired leases to the queue,
/// fires due crons, and deletes expired threads and store items and old run events.
async fn sweep(shared: Arc<Shared>, shutdown: CancellationToken) {
    let settings = &shared.settings;
    // `interval` refuses a zero period; a zero setting means "as often as it can".
    let every = |period: Duration| tokio::time::interval(period.max(Duration::from_millis(1)));
    let mut sweeps = every(settings.sweep_every);
    let mut crons = every(settings.cron_every);
    let mut maintenance = every(settings.maintenance_every);
    for ticks in [&mut sweeps, &mut crons, &mut maintenance] {
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    // The first ticks are immediate: sweep and expire only after one period.
    sweeps.tick().await;
    maintenance.tick().await;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = sweeps.tick() => sweep_leases(&shared).await,
            _ = crons.tick() => {
                if let Err(error) = fire_due_crons(&shared.backend, Timestamp::now()).await {
                    tracing::warn!(%error, "firing due crons failed");
                }
            }
            _ = maintenance.tick() => {
                if let Err(error) = shared.backend.prune_events(settings.event_ttl).await {
                    tracing::warn!(%error, "pruning old run events failed");
                }
                if let Err(error) =
                    delete_expired(&shared.backend, Timestamp::now(), settings.expiry_batch).await
                {
                    tracing::warn!(%error, "deleting expired threads and store items failed");
                }
            }
        }
    }
}

async fn sweep_leases(shared: &Shared) {
    match shared
        .backend
        .sweep_expired(shared.settings.max_attempts)
        .await
    {
        Ok(swept) if !swept.is_empty() => {
            tracing::warn!(runs = ?swept, "returned runs of a dead worker to the queue");
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "sweeping expired leases failed"),
    }
}

/// The most crons one look fires: a backlog is worked off over the next looks.
const CRONS_PER_LOOK: usize = 100;

/// Fires the crons due at `now` (each in its own transaction, see
/// [`Backend::fire_due_cron`]); returns what each firing did.
pub async fn fire_due_crons(
    backend: &Arc<dyn Backend>,
    now: Timestamp,
) -> Result<Vec<crate::backend::FiredCron>> {
    let mut fired = Vec::new();
    while fired.len() < CRONS_PER_LOOK {
        let Some(firing) = backend.fire_due_cron(now).await? else {
            break;
        };
        match (&firing.run_id, &firing.skipped) {
            (Some(run_id), _) => {
                tracing::info!(cron_id = %firing.cron_id, %run_id, "a cron created its run");
            }
            (None, why) => {
                tracing::warn!(cron_id = %firing.cron_id, why = why.as_deref().unwrap_or(""), "a cron skipped its run");
            }
        }
        fired.push(firing);
    }
    Ok(fired)
}

/// Deletes up to `batch` threads (with their runs and checkpoints) and up to `batch` store
/// items whose time to live ran out by `now`; returns how many of each.
pub async fn delete_expired(
    backend: &Arc<dyn Backend>,
    now: Timestamp,
    batch: usize,
) -> Result<(usize, usize)> {
    let threads = backend.expired_threads(now, batch).await?;
    for thread in &threads {
        // As `DELETE /threads/{id}`: the row (and any run created meanwhile) first.
        backend.delete_thread(*thread).await?;
        backend
            .checkpointer()
            .delete_thread(&thread.to_string())
            .await?;
    }
    let items = backend.expired_items(now, batch).await?;
    let store = backend.store();
    for (namespace, key) in &items {
        let labels: Vec<&str> = namespace.iter().map(String::as_str).collect();
        store.delete(&labels, key).await?;
        backend.set_item_ttl(&labels, key, None).await?;
    }
    Ok((threads.len(), items.len()))
}

/// How a run's graph stopped.
enum Stop {
    Finished,
    Paused(Vec<graphkit::Interrupt>),
    Failed(graphkit::Error),
    Cancelled(CancelAction),
    Lost,
    Shutdown,
}

/// The name of an error's variant, for the `error` event's `error` field.
fn error_name(error: &graphkit::Error) -> String {
    let debug = format!("{error:?}");
    debug
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .next()
        .unwrap_or("Error")
        .to_owned()
}

/// The node list of `interrupt_before`/`after`: `"*"` is every node.
fn node_list(value: &Option<Value>, nodes: &[String]) -> Result<Vec<String>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(all)) if all == "*" => Ok(nodes.to_vec()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    ServerError::Validation("interrupt_before/after lists node names".into())
                })
            })
            .collect(),
        Some(_) => Err(ServerError::Validation(
            "interrupt_before/after is \"*\" or a list of node names".into(),
        )),
    }
}

fn run_config(run: &RunRecord, kwargs: &RunKwargs, nodes: &[String]) -> Result<RunConfig> {
    let thread = run.thread_id.to_string();
    let mut config = RunConfig::new()
        .thread_id(thread.clone())
        .subgraphs(kwargs.stream_subgraphs)
        .with_checkpoint_metadata("run_id", run.run_id.to_string())
        .with_checkpoint_metadata("thread_id", thread)
        .with_checkpoint_metadata("graph_id", kwargs.graph_id.clone())
        .with_checkpoint_metadata("assistant_id", run.assistant_id.to_string())
        .with_checkpoint_metadata("run_attempt", run.attempt);
    for (key, value) in &run.metadata {
        if !matches!(
            key.as_str(),
            "run_id" | "thread_id" | "source" | "step" | "writes"
        ) {
            config = config.with_checkpoint_metadata(key.clone(), value.clone());
        }
    }
    if let Some(limit) = kwargs.config.get("recursion_limit").and_then(Value::as_u64) {
        config = config.recursion_limit(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    if let Some(Value::Object(configurable)) = kwargs.config.get("configurable") {
        for (key, value) in configurable {
            config = config.with_value(key.clone(), value.clone());
        }
    }
    if let Value::Object(context) = &kwargs.context {
        for (key, value) in context {
            config = config.with_value(key.clone(), value.clone());
        }
    }
    config = config
        .interrupt_before(node_list(&kwargs.interrupt_before, nodes)?)
        .interrupt_after(node_list(&kwargs.interrupt_after, nodes)?);
    // A retried attempt continues from the thread's checkpoints, not from the fork point.
    if let Some(checkpoint) = &kwargs.checkpoint_id
        && run.attempt <= 1
    {
        config = config.checkpoint_id(checkpoint.clone());
    }
    config = config.durability(match kwargs.durability.as_deref() {
        Some("async") => Durability::Async,
        Some("exit") => Durability::Exit,
        _ => Durability::Sync,
    });
    Ok(config)
}

/// Turns graph events into stored SSE events (name, one-line JSON).
pub(crate) struct Translator {
    run_id: String,
    thread_id: String,
    modes: Vec<String>,
    last_values: Value,
}

impl Translator {
    pub(crate) fn new(run: &RunRecord, modes: &[String]) -> Self {
        Self {
            run_id: run.run_id.to_string(),
            thread_id: run.thread_id.to_string(),
            modes: modes.to_vec(),
            last_values: Value::Null,
        }
    }

    fn wants(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }

    fn push(out: &mut Vec<(String, String)>, name: &str, namespace: &[String], data: &Value) {
        let mut event = String::from(name);
        for ns in namespace {
            event.push('|');
            event.push_str(ns);
        }
        out.push((event, data.to_string()));
    }

    pub(crate) fn translate(&mut self, event: GraphEvent, out: &mut Vec<(String, String)>) {
        let ns = &event.namespace;
        match event.kind {
            EventKind::Values(values) => {
                Self::push(out, "values", ns, &values);
                if ns.is_empty() {
                    self.last_values = values;
                }
            }
            EventKind::Updates {
                node,
                update,
                cached,
            } => {
                if self.wants("updates") {
                    let data = if cached {
                        json!({ node: update, "__metadata__": { "cached": true } })
                    } else {
                        json!({ node: update })
                    };
                    Self::push(out, "updates", ns, &data);
                }
            }
            EventKind::Messages { node, payload } => {
                if self.wants("messages-tuple") {
                    let metadata = json!({
                        "langgraph_node": node,
                        "langgraph_checkpoint_ns": ns.join("|"),
                        "thread_id": self.thread_id,
                        "run_id": self.run_id,
                    });
                    let data = json!([stream_message_to_langchain(payload), metadata]);
                    Self::push(out, "messages", ns, &data);
                }
            }
            EventKind::Custom(payload) => {
                if self.wants("custom") {
                    Self::push(out, "custom", ns, &payload);
                }
            }
            EventKind::Task(task) => {
                use graphkit::streaming::TaskEventKind as K;
                let id = Uuid::new_v5(
                    &Uuid::NAMESPACE_OID,
                    format!("{}:{}:{}:{}", self.run_id, task.step, task.index, task.node)
                        .as_bytes(),
                )
                .to_string();
                let (kind, payload) = match &task.kind {
                    K::Start => (
                        "task",
                        json!({"id": id, "name": task.node, "input": null, "triggers": [format!("branch:to:{}", task.node)], "interrupts": []}),
                    ),
                    K::End { .. } => (
                        "task_result",
                        json!({"id": id, "name": task.node, "error": null, "result": [], "interrupts": []}),
                    ),
                    K::Error { error, .. } => (
                        "task_result",
                        json!({"id": id, "name": task.node, "error": error, "result": [], "interrupts": []}),
                    ),
                    _ => return,
                };
                if self.wants("tasks") {
                    Self::push(out, "tasks", ns, &payload);
                }
                if self.wants("debug") {
                    let wrapped = json!({"type": kind, "step": task.step, "timestamp": Timestamp::now(), "payload": payload});
                    Self::push(out, "debug", ns, &wrapped);
                }
            }
            EventKind::Checkpoint(checkpoint) => {
                let config = |id: &str| json!({"configurable": {"thread_id": checkpoint.thread_id, "checkpoint_ns": ns.join("|"), "checkpoint_id": id}});
                let payload = json!({
                    "config": config(&checkpoint.checkpoint_id),
                    "parent_config": null,
                    "values": self.last_values,
                    "metadata": {"step": checkpoint.step, "run_id": self.run_id},
                    "next": checkpoint.next,
                    "tasks": checkpoint.next.iter().map(|n| json!({"name": n, "interrupts": [], "state": null})).collect::<Vec<_>>(),
                });
                if self.wants("checkpoints") {
                    Self::push(out, "checkpoints", ns, &payload);
                }
                if self.wants("debug") {
                    let wrapped = json!({"type": "checkpoint", "step": checkpoint.step, "timestamp": Timestamp::now(), "payload": payload});
                    Self::push(out, "debug", ns, &wrapped);
                }
            }
        }
    }

    /// The events of a pause: `updates` with `__interrupt__` (if asked for), and the last
    /// values with `__interrupt__` merged in (the wait body; sent to streams that asked for
    /// values or for neither mode).
    pub(crate) fn paused(
        &self,
        interrupts: &[graphkit::Interrupt],
        out: &mut Vec<(String, String)>,
    ) {
        let list: Vec<Value> = dynamic(interrupts).map(interrupt_json).collect();
        if self.wants("updates") {
            Self::push(out, "updates", &[], &json!({"__interrupt__": list}));
        }
        let mut values = match &self.last_values {
            Value::Object(v) => v.clone(),
            _ => Map::new(),
        };
        values.insert("__interrupt__".into(), Value::Array(list));
        Self::push(out, "values", &[], &Value::Object(values));
    }
}

/// A graph's events as the pump task forwards them.
type EventFeed = tokio::sync::mpsc::UnboundedReceiver<Result<GraphEvent, graphkit::Error>>;

/// Runs the graph on its own task, so it keeps making progress (and finishes its storage
/// transactions) while the worker writes events: the worker never holds the graph's
/// future suspended in the middle of a checkpoint write.
fn pump(mut events: GraphEvents) -> (EventFeed, tokio::task::JoinHandle<()>) {
    let (sender, feed) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        while let Some(item) = events.next().await {
            if sender.send(item).is_err() {
                break;
            }
        }
    });
    (feed, task)
}

/// Collects the events that are ready now (at least one, waiting for the first).
/// The second value is `Some(None)` when the graph finished, `Some(Some(e))` when it
/// stopped with `e`.
async fn next_batch(feed: &mut EventFeed) -> (Vec<GraphEvent>, Option<Option<graphkit::Error>>) {
    let mut batch = Vec::new();
    match feed.recv().await {
        Some(Ok(event)) => batch.push(event),
        Some(Err(error)) => return (batch, Some(Some(error))),
        None => return (batch, Some(None)),
    }
    while batch.len() < 256 {
        match feed.try_recv() {
            Ok(Ok(event)) => batch.push(event),
            Ok(Err(error)) => return (batch, Some(Some(error))),
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                return (batch, Some(None));
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
        }
    }
    (batch, None)
}

/// Runs one claimed run to its end.
async fn execute(shared: &Shared, run: RunRecord, worker_id: &str, shutdown: &CancellationToken) {
    let run_id = run.run_id;
    let Some(token) = run.lease_token else {
        tracing::error!(%run_id, "claimed a run without a lease token; left it to the sweeper");
        return;
    };
    let claimed = Instant::now();
    match try_execute(shared, &run, token, shutdown, claimed).await {
        Ok(()) => {}
        Err(error) if error.is_lease_lost() => {
            tracing::warn!(%run_id, %worker_id, %error, "lost the run's lease; stopped it");
        }
        Err(error) => {
            // Ending the run as failed is fenced too: refused, the run was not ours any more
            // (after a pause, the first thing to fail may be a connection, not a fenced write).
            let data = json!({"error": "ServerError", "message": error.to_string()}).to_string();
            let appended = shared
                .backend
                .append_events(run_id, token, &[("error".to_owned(), data)])
                .await;
            let outcome = ThreadOutcome::failed(
                json!({"error": "ServerError", "message": error.to_string()}),
            );
            let finished = match appended {
                Err(lost) if lost.is_lease_lost() => Ok(false),
                _ => {
                    shared
                        .finish_run(
                            &run,
                            token,
                            RunEnd::Error(error.to_string()),
                            Some(&outcome),
                            claimed,
                        )
                        .await
                }
            };
            let lost = match finished {
                Ok(finished) => !finished,
                Err(refused) => refused.is_lease_lost(),
            };
            if lost {
                tracing::warn!(%run_id, %worker_id, %error, "lost the run's lease; stopped it");
            } else {
                tracing::error!(%run_id, %error, "run failed outside its graph");
            }
        }
    }
}

async fn try_execute(
    shared: &Shared,
    run: &RunRecord,
    token: Uuid,
    shutdown: &CancellationToken,
    claimed: Instant,
) -> Result<()> {
    let backend = &shared.backend;
    let run_id = run.run_id;
    let thread = run.thread_id.to_string();
    let mut kwargs = RunKwargs::deserialize(&run.kwargs)
        .map_err(|e| ServerError::backend("read the run's request", e))?;
    // The graph writes its checkpoints through the claim's fence.
    let fenced = backend.fenced_checkpointer(run_id, token);
    let graph = shared
        .graph(&kwargs.graph_id)?
        .rebind(Arc::clone(&fenced), backend.store());
    let metadata = json!({"run_id": run_id, "attempt": run.attempt}).to_string();
    backend
        .append_events(run_id, token, &[("metadata".to_owned(), metadata)])
        .await?;

    let stop_graph = CancellationToken::new();
    let config = run_config(run, &kwargs, &graph.node_names())?.cancellation(stop_graph.clone());
    // A retried attempt whose run already saved checkpoints continues from them.
    let request = if run.attempt > 1 && has_checkpoints(shared, &thread, run_id).await? {
        RunRequest::default()
    } else {
        kwargs.take_request()
    };
    let mut translator = Translator::new(run, &kwargs.stream_mode);
    let mut watch = backend.watch_run(run_id);
    let started = graph
        .start(&request, config, graph_modes(&kwargs.stream_mode))
        .await;
    // The graph has its own copy of the input now.
    drop(request);
    let (mut feed, graph_task) = match started {
        Ok(events) => pump(events),
        Err(error) if error.is_lease_lost() => return Err(error),
        Err(error) => {
            return fail(
                shared,
                run,
                token,
                &graph,
                "InvalidInput",
                &error.to_string(),
                claimed,
            )
            .await;
        }
    };

    let mut next_beat = Instant::now() + shared.settings.heartbeat;
    let mut check_at: Option<Instant> = None;
    let mut last_check = Instant::now();
    let min_gap = Duration::from_millis(100);
    let stop = loop {
        let check_deadline = check_at.unwrap_or(next_beat).min(next_beat);
        tokio::select! {
            (batch, end) = next_batch(&mut feed) => {
                let mut out = Vec::with_capacity(batch.len());
                for event in batch {
                    translator.translate(event, &mut out);
                }
                if !out.is_empty() {
                    match backend.append_events(run_id, token, &out).await {
                        Err(error) if error.is_lease_lost() => break Stop::Lost,
                        appended => appended?,
                    };
                }
                match end {
                    None => {}
                    Some(None) => break Stop::Finished,
                    Some(Some(graphkit::Error::NotFinished { interrupts, .. })) => break Stop::Paused(interrupts),
                    Some(Some(error)) if lost_lease(&error) => break Stop::Lost,
                    Some(Some(error)) => break Stop::Failed(error),
                }
            }
            () = watch.changed() => {
                // Our own events wake us too: look at the run at most every `min_gap`.
                check_at.get_or_insert(last_check + min_gap);
            }
            () = sleep_until(check_deadline) => {
                check_at = None;
                last_check = Instant::now();
                next_beat = last_check + shared.settings.heartbeat;
                match backend.heartbeat(run_id, token, shared.settings.lease).await? {
                    Lease::Lost => break Stop::Lost,
                    Lease::Held { cancel: Some(action) } => break Stop::Cancelled(action),
                    Lease::Held { cancel: None } => {}
                }
            }
            () = shutdown.cancelled() => break Stop::Shutdown,
        }
    };

    if matches!(stop, Stop::Cancelled(_) | Stop::Lost | Stop::Shutdown) {
        // Stop the graph through its token and let it release the thread cleanly.
        stop_graph.cancel();
        let drain = async { while feed.recv().await.is_some() {} };
        if tokio::time::timeout(shared.settings.stop_grace, drain)
            .await
            .is_err()
        {
            tracing::warn!(%run_id, "the graph did not stop within the grace period; dropped");
        }
    }
    graph_task.abort();

    let end = match stop {
        Stop::Finished => RunEnd::Success,
        Stop::Paused(interrupts) => {
            let mut out = Vec::new();
            translator.paused(&interrupts, &mut out);
            backend.append_events(run_id, token, &out).await?;
            RunEnd::Success
        }
        Stop::Failed(error) => {
            let name = error_name(&error);
            let message = error.to_string();
            return fail(shared, run, token, &graph, &name, &message, claimed).await;
        }
        Stop::Cancelled(CancelAction::Interrupt) => {
            RunEnd::Interrupted("cancelled on request".into())
        }
        Stop::Cancelled(CancelAction::Rollback) => {
            // Every namespace: a subgraph's checkpoints carry the run's id too.
            fenced.delete_run(&thread, &run_id.to_string()).await?;
            RunEnd::RolledBack
        }
        Stop::Lost => return Err(ServerError::LeaseLost { run_id }),
        Stop::Shutdown => {
            backend.release_run(run_id, token).await?;
            return Ok(());
        }
    };
    let outcome = graph.outcome(&thread).await?;
    if !shared
        .finish_run(run, token, end, Some(&outcome), claimed)
        .await?
    {
        return Err(ServerError::LeaseLost { run_id });
    }
    if kwargs.delete_thread_when_done {
        backend.checkpointer().delete_thread(&thread).await?;
        backend.delete_thread(run.thread_id).await?;
    }
    Ok(())
}

async fn has_checkpoints(shared: &Shared, thread: &str, run_id: Uuid) -> Result<bool> {
    let mut filter = Map::new();
    filter.insert("run_id".into(), Value::String(run_id.to_string()));
    let options = ListOptions {
        limit: Some(1),
        metadata: Some(filter),
        ..ListOptions::default()
    };
    Ok(!shared
        .backend
        .checkpointer()
        .list(thread, "", &options)
        .await?
        .is_empty())
}

/// Ends a run that failed with `message` (named `name` in the `error` event): the event,
/// then the thread's state with the error.
async fn fail(
    shared: &Shared,
    run: &RunRecord,
    token: Uuid,
    graph: &SharedGraph,
    name: &str,
    message: &str,
    claimed: Instant,
) -> Result<()> {
    let thread = run.thread_id.to_string();
    let error = json!({"error": name, "message": message});
    shared
        .backend
        .append_events(
            run.run_id,
            token,
            &[("error".to_owned(), error.to_string())],
        )
        .await?;
    let mut outcome = graph
        .outcome(&thread)
        .await
        .unwrap_or_else(|_| ThreadOutcome::failed(Value::Null));
    outcome.status = ThreadStatus::Error;
    outcome.error = error;
    let finished = shared
        .finish_run(
            run,
            token,
            RunEnd::Error(message.to_owned()),
            Some(&outcome),
            claimed,
        )
        .await?;
    if !finished {
        return Err(ServerError::LeaseLost { run_id: run.run_id });
    }
    Ok(())
}
