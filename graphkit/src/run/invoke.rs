//! Starting runs of a compiled graph: `invoke` (to the final state) and `stream` (events as
//! they happen, through [`RunStream`]).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use futures::future::BoxFuture;
use tokio::sync::mpsc;

use crate::command::RunInput;
use crate::context::config::RunConfig;
use crate::context::node_context::NodeContext;
use crate::context::stream::{StreamEvent, StreamModes};
use crate::error::Error;
use crate::graph::compiled::CompiledGraph;
use crate::run::emitter::Emitter;
use crate::run::runner::Runner;
use crate::run::{Done, Outcome};
use crate::state::State;

impl<S: State> CompiledGraph<S> {
    /// Runs the graph to the end and returns the final state.
    ///
    /// The input is applied to the state as an update (through the reducers): to the
    /// default state, or with a checkpointer to the thread's state. Accepts the update
    /// type, a whole `S`, a [`Command::resume`](crate::Command::resume), or a
    /// [`RunInput`](crate::RunInput).
    ///
    /// Returns how the run ended: [`Outcome::Finished`] with the final state, or
    /// [`Outcome::Paused`] with the interrupts to answer. `into_state()` takes the state
    /// either way; `finished()` turns a pause into an error for callers that expect none.
    ///
    /// # Errors
    /// Any failure of the run (a pause is not one).
    pub async fn invoke(&self, input: impl Into<RunInput<S>>) -> Result<Outcome<S>, Error> {
        self.invoke_with(input, RunConfig::default()).await
    }

    /// [`invoke`](Self::invoke) with a [`RunConfig`] (thread id, limits, cancellation).
    pub async fn invoke_with(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
    ) -> Result<Outcome<S>, Error> {
        let runner = Runner::new(self, S::default(), Arc::new(config), Emitter::none());
        runner.run(input.into()).await.map(Done::outcome)
    }

    /// Runs the graph inside a running task (a node, or a tool called by one) the way a
    /// subgraph node runs: from `state` with `input` applied, under the task's config and
    /// cancellation, without checkpoints of its own, sharing the task's interrupt
    /// bookkeeping (an `interrupt` inside pauses the task: [`Error::Interrupt`] reaches
    /// the caller, who passes it on with `?`), and forwarding its stream events to the
    /// task's stream. Their namespace is the task's, then `"node:step"` of the task, then
    /// `label` if given (say a tool call, so that several child runs of one task stay
    /// apart). This is what prebuilt agents that call graphs by hand use; to put a graph
    /// in a graph, [`StateGraph::add_subgraph`](crate::StateGraph::add_subgraph) is simpler.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use graphkit::{NodeContext, START, State, StateGraph};
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
    /// struct Count { #[reducer(add)] n: u32 }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let mut child = StateGraph::<Count>::new();
    /// child.add_node("inc", |_: Arc<Count>| async { CountUpdate::new().n(1) }).add_edge(START, "inc");
    /// let child = child.compile()?;
    ///
    /// let mut parent = StateGraph::<Count>::new();
    /// parent
    ///     .add_node("twice", move |ctx: NodeContext| {
    ///         let child = child.clone();
    ///         async move {
    ///             let first = child.invoke_in_task(Count::default(), CountUpdate::new(), &ctx, Some("first")).await?;
    ///             let second = child.invoke_in_task(first, CountUpdate::new(), &ctx, Some("second")).await?;
    ///             Ok::<_, graphkit::Error>(CountUpdate::new().n(second.n))
    ///         }
    ///     })
    ///     .add_edge(START, "twice");
    /// assert_eq!(parent.compile()?.invoke(CountUpdate::new()).await?.into_state().n, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(()) }).unwrap();
    /// ```
    ///
    /// # Errors
    /// The child run's errors; [`Error::Interrupt`] when it paused on an interrupt.
    pub async fn invoke_in_task(
        &self,
        state: S,
        input: impl Into<RunInput<S>>,
        ctx: &NodeContext,
        label: Option<&str>,
    ) -> Result<S, Error> {
        let mut runner = Runner::child_of(self, state, ctx);
        if let Some(label) = label {
            runner = runner.labeled(label);
        }
        runner.run(input.into()).await.map(|done| done.state)
    }

    /// [`invoke_with`](Self::invoke_with) from synchronous code: runs the graph on a
    /// current-thread tokio runtime kept per calling thread.
    ///
    /// # Errors
    /// Besides the run's own errors, [`Error::BlockingInAsync`] when called from inside an
    /// async runtime (use `invoke` there).
    pub fn invoke_blocking(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
    ) -> Result<Outcome<S>, Error> {
        crate::run::block_on(self.invoke_with(input, config))
    }

    /// Runs the graph and streams events of the given modes as they happen.
    ///
    /// The run makes progress only while the stream is polled; dropping the stream cancels
    /// the run. A failed run yields its error as the last item.
    pub fn stream(
        &self,
        input: impl Into<RunInput<S>>,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        self.stream_with(input, RunConfig::default(), modes)
    }

    /// [`stream`](Self::stream) with a [`RunConfig`].
    pub fn stream_with(
        &self,
        input: impl Into<RunInput<S>>,
        config: RunConfig,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        RunStream::start(self.clone(), input.into(), config, modes.into())
    }
}

/// The stream of a run's events; see [`CompiledGraph::stream`].
///
/// The run advances as the stream is polled. After the last event, a failed run yields its
/// error; a run that finished or paused ends the stream, and [`RunStream::outcome`] then
/// says which (with the state, and the interrupts of a pause).
pub struct RunStream<S: State> {
    events: mpsc::UnboundedReceiver<StreamEvent<S>>,
    run: Option<BoxFuture<'static, Result<Done<S>, Error>>>,
    error: Option<Error>,
    outcome: Option<Outcome<S>>,
}

impl<S: State> RunStream<S> {
    pub(crate) fn start(
        graph: CompiledGraph<S>,
        input: RunInput<S>,
        config: RunConfig,
        modes: StreamModes,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let emitter = Emitter::root(tx, modes);
        let runner = Runner::new(&graph, S::default(), Arc::new(config), emitter);
        Self {
            events: rx,
            run: Some(Box::pin(runner.run(input))),
            error: None,
            outcome: None,
        }
    }

    /// How the run ended, once the stream has ended without an error.
    pub fn outcome(&self) -> Option<&Outcome<S>> {
        self.outcome.as_ref()
    }

    /// Takes how the run ended, once the stream has ended without an error.
    pub fn into_outcome(self) -> Option<Outcome<S>> {
        self.outcome
    }

    /// The final state, once the stream has ended with the run finished (not paused).
    pub fn final_state(&self) -> Option<&S> {
        match &self.outcome {
            Some(Outcome::Finished(state)) => Some(state),
            _ => None,
        }
    }

    /// Takes the final state, once the stream has ended with the run finished (not paused).
    pub fn into_final_state(self) -> Option<S> {
        match self.outcome {
            Some(Outcome::Finished(state)) => Some(state),
            _ => None,
        }
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
                        Ok(done) => this.outcome = Some(done.outcome()),
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
