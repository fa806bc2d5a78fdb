//! Registered graphs without their state type: [`ServedGraph`] turns JSON input into
//! state updates, stream events into JSON, and snapshots into the API's `ThreadState`.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use graphkit::checkpoint::ListOptions;
use graphkit::streaming::{StreamEvent, StreamModes};
use graphkit::{
    Command, CompiledGraph, END, Interrupt, InterruptKind, Resume, RunConfig, RunInput, START,
    Scoped, SendTo, State, StateSnapshot, StreamMode, StreamPayload,
};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::backend::{ThreadOutcome, ThreadStatus};
use crate::convert::{from_langchain, input_to_update, to_langchain, update_to_langgraph};
use crate::error::{Result, ServerError};
use crate::time::Timestamp;

/// What a run starts from, as the client sent it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct RunRequest {
    /// The input (a state update), or null to continue the thread.
    #[serde(default)]
    pub input: Option<Value>,
    /// A command: resume, update, goto.
    #[serde(default)]
    pub command: Option<CommandSpec>,
}

/// `{resume?, update?, goto?}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, serde::Serialize)]
pub(crate) struct CommandSpec {
    #[serde(default)]
    pub resume: Option<Value>,
    #[serde(default)]
    pub update: Option<Value>,
    #[serde(default)]
    pub goto: Option<Value>,
}

/// One stream event in JSON, with its namespace (empty for the root graph).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GraphEvent {
    pub namespace: Vec<String>,
    pub kind: EventKind,
}

/// What a [`GraphEvent`] carries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum EventKind {
    Values(Value),
    /// `cached`: the update came from the node cache (sent with LangGraph's
    /// `"__metadata__": {"cached": true}`).
    Updates {
        node: String,
        update: Value,
        cached: bool,
    },
    Messages {
        node: String,
        payload: Value,
    },
    Custom(Value),
    Task(graphkit::streaming::TaskEvent),
    Checkpoint(graphkit::streaming::CheckpointEvent),
}

pub(crate) type GraphEvents = BoxStream<'static, Result<GraphEvent, graphkit::Error>>;

/// A registered graph, whatever its state type.
#[async_trait]
pub(crate) trait ServedGraph: Send + Sync + 'static {
    /// The same graph on other storage.
    fn rebind(
        &self,
        saver: Arc<dyn graphkit::checkpoint::Checkpointer>,
        store: Arc<dyn graphkit::store::Store>,
    ) -> SharedGraph;
    /// The node names.
    fn node_names(&self) -> Vec<String>;
    /// `{"nodes": [...], "edges": [...]}` as the SDK draws it.
    fn graph_json(&self) -> Value;
    /// The subgraphs, by namespace (with `recurse`, theirs too), with their state schemas
    /// where known.
    fn subgraphs(&self, recurse: bool) -> Vec<graphkit::SubgraphInfo>;
    /// The JSON Schemas of the state (null when the state has none).
    fn state_schema(&self) -> Value;
    /// Checks a run request against the state type (422 if it does not fit).
    fn check_request(&self, request: &RunRequest) -> Result<()>;
    /// Starts a run.
    async fn start(
        &self,
        request: &RunRequest,
        config: RunConfig,
        modes: StreamModes,
    ) -> Result<GraphEvents>;
    /// The thread's state at its newest checkpoint or at `checkpoint_id`, as `ThreadState`
    /// JSON; `None` if the thread has no checkpoint.
    async fn state(&self, thread_id: &str, checkpoint_id: Option<&str>) -> Result<Option<Value>>;
    /// The thread's checkpoints as `ThreadState`s, newest first.
    async fn history(&self, thread_id: &str, options: &ListOptions) -> Result<Vec<Value>>;
    /// Writes `values` as node `as_node`; returns the new checkpoint id.
    async fn update_state(
        &self,
        thread_id: &str,
        values: Value,
        as_node: Option<&str>,
        checkpoint_id: Option<&str>,
    ) -> Result<String>;
    /// What the thread shows after a run: values, interrupts, idle or interrupted.
    async fn outcome(&self, thread_id: &str) -> Result<ThreadOutcome>;
}

/// A typed graph behind [`ServedGraph`].
pub(crate) struct TypedGraph<S: State> {
    pub graph: CompiledGraph<S>,
    pub schema: Value,
}

impl<S: State> TypedGraph<S> {
    /// `values` as a state update of `S` (`what` names it in a refusal). The values are
    /// copied once, into the update: a big input is not copied again on the way.
    fn parse_update(&self, values: &Value, what: &str) -> Result<S::Update> {
        let Some(update) = Self::update_json(values, what)? else {
            return Ok(S::Update::default());
        };
        // Through serde_path_to_error, so the refusal names the field (`input.messages`).
        match serde_path_to_error::deserialize::<_, S::Update>(update) {
            Ok(update) => Ok(update),
            Err(first) => {
                // Only a refused update is built a second time, for the LangChain shape.
                let update = Self::update_json(values, what)?.unwrap_or_default();
                serde_json::from_value::<S::Update>(from_langchain(&update)).map_err(|_| {
                    let at = first.path().to_string();
                    let place = if at == "." {
                        what.to_owned()
                    } else {
                        format!("{what}.{at}")
                    };
                    ServerError::Validation(format!(
                        "{place} does not fit the graph's state: {}",
                        first.inner()
                    ))
                })
            }
        }
    }

    /// `values` (an object of state fields, or `[[key, value], ...]`) as graphkit update
    /// JSON; `None` for null.
    fn update_json(values: &Value, what: &str) -> Result<Option<Value>> {
        let object = match values {
            Value::Null => return Ok(None),
            Value::Object(object) => object.clone(),
            // `[[key, value], ...]`, the Python SDK's other form of a command update.
            Value::Array(pairs) => pairs
                .iter()
                .map(|pair| match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(key), value]) => Ok((key.clone(), value.clone())),
                    _ => Err(()),
                })
                .collect::<std::result::Result<Map<String, Value>, ()>>()
                .map_err(|()| {
                    ServerError::Validation(format!(
                        "{what} must be an object of state fields or a list of [key, value] pairs"
                    ))
                })?,
            other => {
                return Err(ServerError::Validation(format!(
                    "{what} must be an object of state fields, not {}",
                    json_kind(other)
                )));
            }
        };
        input_to_update(S::FIELDS, object).map(Some).map_err(|e| {
            ServerError::Validation(format!("{what} does not fit the graph's state: {e}"))
        })
    }

    fn gotos(goto: &Value) -> Result<Vec<graphkit::nodes::Goto>> {
        let one = |v: &Value| -> Result<graphkit::nodes::Goto> {
            match v {
                Value::String(node) => Ok(graphkit::nodes::Goto::Node(node.as_str().into())),
                Value::Object(send) => {
                    let node = send.get("node").and_then(Value::as_str).ok_or_else(|| {
                        ServerError::Validation("a Send in command.goto needs a `node`".into())
                    })?;
                    let arg = send.get("arg").cloned().unwrap_or(Value::Null);
                    Ok(graphkit::nodes::Goto::Send(SendTo::new(
                        node.to_owned(),
                        arg,
                    )))
                }
                other => Err(ServerError::Validation(format!(
                    "command.goto must name a node, a Send or a list of them, not {}",
                    json_kind(other)
                ))),
            }
        };
        match goto {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items.iter().map(one).collect(),
            other => Ok(vec![one(other)?]),
        }
    }

    async fn run_input(
        &self,
        request: &RunRequest,
        thread_id: Option<&str>,
    ) -> Result<RunInput<S>> {
        let Some(command) = &request.command else {
            return match &request.input {
                None | Some(Value::Null) => Ok(RunInput::Continue),
                Some(input) => Ok(RunInput::Update(self.parse_update(input, "input")?)),
            };
        };
        let mut built: Command<S> = match &command.resume {
            None => Command::new(),
            Some(resume) => Command::from(self.resume_of(resume, thread_id).await?),
        };
        if let Some(update) = &command.update {
            built = built.update(self.parse_update(update, "command.update")?);
        }
        if let Some(goto) = &command.goto {
            built = built.goto_all(Self::gotos(goto)?);
        }
        Ok(RunInput::from(built))
    }

    /// A resume value, or `{interrupt_id: value}` when every key is a pending interrupt.
    async fn resume_of(&self, resume: &Value, thread_id: Option<&str>) -> Result<Resume> {
        if let (Value::Object(by_id), Some(thread)) = (resume, thread_id)
            && !by_id.is_empty()
        {
            let config = RunConfig::new().thread_id(thread);
            if let Ok(snapshot) = self.graph.get_state(&config).await
                && by_id
                    .keys()
                    .all(|k| snapshot.interrupts.iter().any(|i| &i.id == k))
            {
                return Ok(Resume::by_id(by_id.clone()));
            }
        }
        Ok(Resume::Value(resume.clone()))
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `{id, value}` for a dynamic interrupt.
pub(crate) fn interrupt_json(interrupt: &Interrupt) -> Value {
    json!({ "id": interrupt.id, "value": interrupt.payload })
}

/// The dynamic interrupts (static ones pause without a payload, as in LangGraph).
pub(crate) fn dynamic(interrupts: &[Interrupt]) -> impl Iterator<Item = &Interrupt> {
    interrupts
        .iter()
        .filter(|i| i.kind == InterruptKind::Dynamic)
}

fn checkpoint_json(thread_id: &str, checkpoint_id: &str) -> Value {
    json!({ "thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id, "checkpoint_map": null })
}

fn snapshot_json<S: State>(snapshot: StateSnapshot<S>) -> Value {
    let values = to_langchain(serde_json::to_value(&snapshot.values).unwrap_or(Value::Null));
    let tasks: Vec<Value> = snapshot
        .tasks
        .iter()
        .map(|t| {
            json!({
                "id": t.id,
                "name": t.name,
                "path": ["__pregel_pull", t.name],
                "error": t.error,
                "interrupts": dynamic(&t.interrupts).map(interrupt_json).collect::<Vec<_>>(),
                "checkpoint": null,
                "state": null,
                "result": t.result.clone().map(update_list_to_langgraph),
            })
        })
        .collect();
    let parent = snapshot
        .parent_checkpoint_id
        .as_deref()
        .map(|p| checkpoint_json(&snapshot.thread_id, p));
    json!({
        "values": values,
        "next": snapshot.next,
        "tasks": tasks,
        "metadata": snapshot.metadata,
        "created_at": Timestamp::from_millis(snapshot.created_at_ms),
        "checkpoint": checkpoint_json(&snapshot.thread_id, &snapshot.checkpoint_id),
        "parent_checkpoint": parent,
        "interrupts": dynamic(&snapshot.interrupts).map(interrupt_json).collect::<Vec<_>>(),
        "checkpoint_id": snapshot.checkpoint_id,
        "parent_checkpoint_id": snapshot.parent_checkpoint_id,
    })
}

/// A task's result (the list of its updates) as one LangGraph-shaped update.
fn update_list_to_langgraph(result: Value) -> Value {
    match result {
        Value::Array(mut updates) if updates.len() == 1 => {
            update_to_langgraph(updates.pop().unwrap_or_default())
        }
        Value::Array(updates) => {
            Value::Array(updates.into_iter().map(update_to_langgraph).collect())
        }
        other => update_to_langgraph(other),
    }
}

fn event_json<S: State>(event: StreamEvent<S>) -> Option<GraphEvent> {
    let kind = match event.payload {
        StreamPayload::Values(Scoped::Root(state)) => {
            EventKind::Values(to_langchain(serde_json::to_value(&state).ok()?))
        }
        StreamPayload::Updates {
            node,
            update: Scoped::Root(update),
            cached,
        } => EventKind::Updates {
            node: node.to_string(),
            update: update_to_langgraph(serde_json::to_value(&update).ok()?),
            cached,
        },
        StreamPayload::Values(Scoped::Subgraph(value)) => EventKind::Values(to_langchain(value)),
        StreamPayload::Updates {
            node,
            update: Scoped::Subgraph(update),
            cached,
        } => EventKind::Updates {
            node: node.to_string(),
            update: update_to_langgraph(update),
            cached,
        },
        StreamPayload::Messages { node, payload } => EventKind::Messages {
            node: node.to_string(),
            payload,
        },
        StreamPayload::Custom { payload, .. } => EventKind::Custom(payload),
        StreamPayload::Task(task) => EventKind::Task(task),
        StreamPayload::Checkpoint(checkpoint) => EventKind::Checkpoint(checkpoint),
        // Payload kinds added to graphkit later are not part of the API yet.
        _ => return None,
    };
    Some(GraphEvent {
        namespace: event.namespace.iter().map(|n| n.to_string()).collect(),
        kind,
    })
}

#[async_trait]
impl<S: State> ServedGraph for TypedGraph<S> {
    fn rebind(
        &self,
        saver: Arc<dyn graphkit::checkpoint::Checkpointer>,
        store: Arc<dyn graphkit::store::Store>,
    ) -> SharedGraph {
        Arc::new(TypedGraph {
            graph: self.graph.with_checkpointer(saver).with_store(store),
            schema: self.schema.clone(),
        })
    }

    fn node_names(&self) -> Vec<String> {
        self.graph.node_names().map(str::to_owned).collect()
    }

    fn subgraphs(&self, recurse: bool) -> Vec<graphkit::SubgraphInfo> {
        self.graph.subgraphs(recurse)
    }

    fn graph_json(&self) -> Value {
        let mut nodes = vec![json!({"id": START, "type": "schema", "data": START})];
        nodes.extend(self.graph.node_names().map(|name| {
            json!({"id": name, "type": "runnable", "data": {"id": ["graphkit", "node", name], "name": name}})
        }));
        nodes.push(json!({"id": END, "type": "schema", "data": END}));
        let edges: Vec<Value> = self
            .graph
            .edges()
            .into_iter()
            .map(|(source, target, conditional)| {
                let mut edge = json!({"source": source, "target": target});
                if conditional {
                    edge["conditional"] = Value::Bool(true);
                }
                edge
            })
            .collect();
        json!({ "nodes": nodes, "edges": edges })
    }

    fn state_schema(&self) -> Value {
        self.schema.clone()
    }

    fn check_request(&self, request: &RunRequest) -> Result<()> {
        if let Some(input) = &request.input
            && !input.is_null()
        {
            self.parse_update(input, "input")?;
        }
        if let Some(command) = &request.command {
            if let Some(update) = &command.update {
                self.parse_update(update, "command.update")?;
            }
            if let Some(goto) = &command.goto {
                let nodes: Vec<String> = self.node_names();
                for target in Self::gotos(goto)? {
                    let name = match &target {
                        graphkit::nodes::Goto::Node(n) => n.to_string(),
                        graphkit::nodes::Goto::Send(s) => s.node().to_owned(),
                    };
                    if name != END && !nodes.contains(&name) {
                        return Err(ServerError::Validation(format!(
                            "command.goto names `{name}`, which is not a node of the graph (nodes: {})",
                            nodes.join(", ")
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    async fn start(
        &self,
        request: &RunRequest,
        config: RunConfig,
        modes: StreamModes,
    ) -> Result<GraphEvents> {
        let input = self.run_input(request, config.thread_id.as_deref()).await?;
        let stream = self.graph.stream_with(input, config, modes);
        // The worker learns of a pause from the stream's last item: the run's outcome turned
        // into `Error::NotFinished` (with its interrupts) once the events are over.
        let stream = futures::stream::unfold(Some(stream), |stream| async move {
            let mut stream = stream?;
            match stream.next().await {
                Some(item) => Some((item, Some(stream))),
                None => {
                    let paused = stream.into_outcome()?.finished().err()?;
                    Some((Err(paused), None))
                }
            }
        });
        Ok(stream
            .filter_map(|item| async move {
                match item {
                    Ok(event) => event_json(event).map(Ok),
                    Err(error) => Some(Err(error)),
                }
            })
            .boxed())
    }

    async fn state(&self, thread_id: &str, checkpoint_id: Option<&str>) -> Result<Option<Value>> {
        let mut config = RunConfig::new().thread_id(thread_id);
        if let Some(id) = checkpoint_id {
            config = config.checkpoint_id(id);
        }
        match self.graph.get_state(&config).await {
            Ok(snapshot) => Ok(Some(snapshot_json(snapshot))),
            Err(graphkit::Error::CheckpointNotFound { .. }) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    async fn history(&self, thread_id: &str, options: &ListOptions) -> Result<Vec<Value>> {
        let config = RunConfig::new().thread_id(thread_id);
        let history = self.graph.get_state_history(&config, options).await?;
        Ok(history.into_iter().map(snapshot_json).collect())
    }

    async fn update_state(
        &self,
        thread_id: &str,
        values: Value,
        as_node: Option<&str>,
        checkpoint_id: Option<&str>,
    ) -> Result<String> {
        let update = self.parse_update(&values, "values")?;
        let mut config = RunConfig::new().thread_id(thread_id);
        if let Some(id) = checkpoint_id {
            config = config.checkpoint_id(id);
        }
        let as_node = as_node.map_or(graphkit::UpdateAs::LastWriter, graphkit::UpdateAs::Node);
        let written = self.graph.update_state(&config, update, as_node).await?;
        Ok(written.checkpoint_id.unwrap_or_default())
    }

    async fn outcome(&self, thread_id: &str) -> Result<ThreadOutcome> {
        let config = RunConfig::new().thread_id(thread_id);
        match self.graph.get_state(&config).await {
            Ok(snapshot) => {
                let mut interrupts = Map::new();
                for task in &snapshot.tasks {
                    let list: Vec<Value> = dynamic(&task.interrupts).map(interrupt_json).collect();
                    if !list.is_empty() {
                        interrupts.insert(task.id.clone(), Value::Array(list));
                    }
                }
                Ok(ThreadOutcome {
                    status: if snapshot.next.is_empty() {
                        ThreadStatus::Idle
                    } else {
                        ThreadStatus::Interrupted
                    },
                    values: to_langchain(
                        serde_json::to_value(&snapshot.values).unwrap_or_default(),
                    ),
                    interrupts: Value::Object(interrupts),
                    error: Value::Null,
                })
            }
            Err(graphkit::Error::CheckpointNotFound { .. }) => Ok(ThreadOutcome {
                status: ThreadStatus::Idle,
                values: Value::Null,
                interrupts: json!({}),
                error: Value::Null,
            }),
            Err(error) => Err(error.into()),
        }
    }
}

/// The stream modes a run asks graphkit for: what the client wants, plus values (the
/// wait/join body and the thread's values come from them).
pub(crate) fn graph_modes(requested: &[String]) -> StreamModes {
    let mut modes = StreamModes::from(StreamMode::Values);
    for mode in requested {
        modes = modes.with(match mode.as_str() {
            "updates" => StreamMode::Updates,
            "messages" | "messages-tuple" => StreamMode::Messages,
            "custom" => StreamMode::Custom,
            "debug" => StreamMode::Debug,
            "tasks" => StreamMode::Tasks,
            "checkpoints" => StreamMode::Checkpoints,
            _ => StreamMode::Values,
        });
    }
    modes
}

/// A shared handle on a registered graph.
pub(crate) type SharedGraph = Arc<dyn ServedGraph>;
