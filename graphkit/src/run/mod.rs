//! Running a compiled graph: the super-step loop and its three phases.
//!
//! Each super-step [plans](plan) the tasks triggered by the previous one, [executes](execute)
//! them concurrently on one snapshot of the state, and [applies](apply) their writes in a
//! deterministic order. Routers then look at the post-step state to plan the next step.

pub(crate) mod apply;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod execute;
pub(crate) mod plan;
pub(crate) mod stream;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::graph::compiled::CompiledGraph;
use crate::run::config::RunConfig;
use crate::run::execute::StepScope;
use crate::run::plan::JoinProgress;
use crate::run::stream::{Namespace, RawPayload, StreamEvent, StreamMode, StreamModes, StreamPayload, StreamTarget};
use crate::state::{State, StepWrites};

/// Sends a run's events: typed to the root stream, or as raw events up to a parent run.
pub(crate) struct Emitter<S: State> {
    target: Option<StreamTarget>,
    typed: Option<mpsc::UnboundedSender<StreamEvent<S>>>,
}

impl<S: State> Emitter<S> {
    pub(crate) fn none() -> Self {
        Self { target: None, typed: None }
    }

    fn root(tx: mpsc::UnboundedSender<StreamEvent<S>>, modes: StreamModes) -> Self {
        let raw_tx = tx.clone();
        let sink = Arc::new(move |event: stream::RawEvent| {
            let _ = raw_tx.send(event.into());
        });
        let namespace: Namespace = Arc::from(Vec::new());
        Self { target: Some(StreamTarget { sink, modes, namespace }), typed: Some(tx) }
    }

    /// The emitter of a subgraph run inside the node of `ctx`.
    pub(crate) fn child_of(ctx: &context::NodeContext) -> Self {
        let Some(parent) = ctx.writer.target() else { return Self::none() };
        let modes = if ctx.config.subgraphs {
            parent.modes
        } else {
            parent.modes.intersect(StreamModes::from([StreamMode::Messages, StreamMode::Custom]))
        };
        if modes.is_empty() {
            return Self::none();
        }
        let mut namespace: Vec<Arc<str>> = parent.namespace.to_vec();
        namespace.push(format!("{}:{}", ctx.node, ctx.step).into());
        let target = StreamTarget { sink: Arc::clone(&parent.sink), modes, namespace: namespace.into() };
        Self { target: Some(target), typed: None }
    }

    fn wants(&self, mode: StreamMode) -> bool {
        self.target.as_ref().is_some_and(|t| t.modes.contains(mode))
    }

    fn typed(&self, payload: StreamPayload<S>) {
        if let Some(tx) = &self.typed {
            let namespace: Namespace = Arc::from(Vec::new());
            let _ = tx.send(StreamEvent { namespace, payload });
        }
    }

    fn raw(&self, payload: RawPayload) {
        if let Some(target) = &self.target {
            target.emit(payload);
        }
    }

    pub(crate) fn values(&self, state: &S) {
        if !self.wants(StreamMode::Values) {
            return;
        }
        if self.typed.is_some() {
            self.typed(StreamPayload::Values(state.clone()));
        } else if let Ok(value) = serde_json::to_value(state) {
            self.raw(RawPayload::Values(value));
        }
    }

    pub(crate) fn update(&self, node: &Arc<str>, update: &S::Update) {
        if !self.wants(StreamMode::Updates) {
            return;
        }
        let node = Arc::clone(node);
        if self.typed.is_some() {
            self.typed(StreamPayload::Updates { node, update: update.clone() });
        } else if let Ok(update) = serde_json::to_value(update) {
            self.raw(RawPayload::Updates { node, update });
        }
    }
}

thread_local! {
    static BLOCKING_RUNTIME: std::cell::OnceCell<Result<tokio::runtime::Runtime, String>> =
        const { std::cell::OnceCell::new() };
}

/// Runs `future` to completion on this thread's current-thread runtime.
pub(crate) fn block_on<T>(future: impl Future<Output = Result<T, Error>>) -> Result<T, Error> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(Error::BlockingInAsync);
    }
    BLOCKING_RUNTIME.with(|cell| {
        let runtime = cell.get_or_init(|| {
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())
        });
        match runtime {
            Ok(runtime) => runtime.block_on(future),
            Err(message) => Err(Error::Runtime(message.clone())),
        }
    })
}

/// A finished run.
pub(crate) struct Done<S: State> {
    pub(crate) state: S,
    pub(crate) updates: Vec<S::Update>,
}

/// One run of a compiled graph: its state and the loop over super-steps.
pub(crate) struct Runner<S: State> {
    graph: CompiledGraph<S>,
    config: Arc<RunConfig>,
    emitter: Emitter<S>,
    state: S,
    step: usize,
    namespace: Namespace,
    collected: Option<Vec<S::Update>>,
}

impl<S: State> Runner<S> {
    pub(crate) fn new(graph: &CompiledGraph<S>, state: S, config: Arc<RunConfig>, emitter: Emitter<S>) -> Self {
        let namespace = emitter.target.as_ref().map_or_else(|| Arc::from(Vec::new()), |t| Arc::clone(&t.namespace));
        Self { graph: graph.clone(), config, emitter, state, step: 0, namespace, collected: None }
    }

    /// Keeps a copy of every applied update (for a same-state subgraph's parent).
    pub(crate) fn collecting(mut self) -> Self {
        self.collected = Some(Vec::new());
        self
    }

    pub(crate) async fn run(self, input: Option<S::Update>) -> Result<Done<S>, Error> {
        let cancel = self.config.cancel.clone();
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Error::Cancelled),
            done = self.run_steps(input) => done,
        }
    }

    async fn run_steps(mut self, input: Option<S::Update>) -> Result<Done<S>, Error> {
        let core = Arc::clone(&self.graph.core);
        if let Some(input) = input {
            if let Some(collected) = self.collected.as_mut() {
                collected.push(input.clone());
            }
            self.state.apply(input, &mut StepWrites::default())?;
        }
        self.emitter.values(&self.state);
        let mut tasks = plan::start_tasks(&core, &self.state)?;
        let mut joins = JoinProgress::new(&core);
        while !tasks.is_empty() {
            if self.step >= self.config.recursion_limit {
                return Err(Error::RecursionLimit { limit: self.config.recursion_limit });
            }
            self.step += 1;
            let scope = StepScope {
                step: self.step,
                config: Arc::clone(&self.config),
                target: self.emitter.target.clone(),
                namespace: Arc::clone(&self.namespace),
            };
            // The snapshot takes the state by move; it is cloned back only if a task kept
            // a reference past the step.
            let snapshot = Arc::new(std::mem::take(&mut self.state));
            let results = execute::run_step(&core, &tasks, &snapshot, &scope).await;
            self.state = Arc::try_unwrap(snapshot).unwrap_or_else(|shared| (*shared).clone());
            let outputs = results.into_iter().collect::<Result<Vec<_>, Error>>()?;
            let gotos =
                apply::apply_writes(&core, &mut self.state, &tasks, outputs, &self.emitter, &mut self.collected)?;
            self.emitter.values(&self.state);
            tasks = plan::next_tasks(&core, &tasks, gotos, &self.state, &mut joins)?;
        }
        Ok(Done { state: self.state, updates: self.collected.unwrap_or_default() })
    }
}

/// The stream of a run's events; see [`CompiledGraph::stream`].
///
/// The run advances as the stream is polled. After the last event, a failed run yields its
/// error; a successful run's final state is then available from [`RunStream::final_state`].
pub struct RunStream<S: State> {
    events: mpsc::UnboundedReceiver<StreamEvent<S>>,
    run: Option<BoxFuture<'static, Result<Done<S>, Error>>>,
    error: Option<Error>,
    final_state: Option<S>,
}

impl<S: State> RunStream<S> {
    pub(crate) fn start(graph: CompiledGraph<S>, input: S::Update, config: RunConfig, modes: StreamModes) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let emitter = Emitter::root(tx, modes);
        let runner = Runner::new(&graph, S::default(), Arc::new(config), emitter);
        Self { events: rx, run: Some(Box::pin(runner.run(Some(input)))), error: None, final_state: None }
    }

    /// The final state, once the stream has ended without error.
    pub fn final_state(&self) -> Option<&S> {
        self.final_state.as_ref()
    }

    /// Takes the final state, once the stream has ended without error.
    pub fn into_final_state(self) -> Option<S> {
        self.final_state
    }
}

// Nothing is ever pinned through a `RunStream`: the run future is boxed.
impl<S: State> Unpin for RunStream<S> {}

impl<S: State> Stream for RunStream<S> {
    type Item = Result<StreamEvent<S>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_recv(cx) {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(run) = this.run.as_mut() else { break };
            match run.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(outcome) => {
                    this.run = None;
                    match outcome {
                        Ok(done) => this.final_state = Some(done.state),
                        Err(error) => this.error = Some(error),
                    }
                }
            }
        }
        if let Ok(event) = this.events.try_recv() {
            return Poll::Ready(Some(Ok(event)));
        }
        Poll::Ready(this.error.take().map(Err))
    }
}
