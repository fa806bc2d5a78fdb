//! [`TaskHandle`]: the future of one task call.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use crate::error::Error;
use crate::run::plan::panic_message;

/// A task call started by [`TaskContext::task`](super::TaskContext::task): await it for
/// the task's result.
///
/// The task runs from the moment it is called, on its own tokio task, so several tasks
/// called before any is awaited run concurrently (LangGraph's task futures). A task
/// whose result an earlier run saved does not run: its handle is ready with that result.
/// Dropping a handle before the task finished cancels the task.
#[must_use = "a task is cancelled when its handle is dropped; await it"]
pub struct TaskHandle<T> {
    state: HandleState<T>,
}

enum HandleState<T> {
    Ready(Option<Result<T, Error>>),
    Running {
        join: JoinHandle<Result<T, Error>>,
        call: String,
    },
}

impl<T> TaskHandle<T> {
    pub(crate) fn ready(result: Result<T, Error>) -> Self {
        Self {
            state: HandleState::Ready(Some(result)),
        }
    }

    pub(crate) fn running(join: JoinHandle<Result<T, Error>>, call: String) -> Self {
        Self {
            state: HandleState::Running { join, call },
        }
    }
}

impl<T> std::fmt::Debug for TaskHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            HandleState::Ready(_) => f.write_str("TaskHandle(ready)"),
            HandleState::Running { call, .. } => write!(f, "TaskHandle({call})"),
        }
    }
}

// The result is never pinned in place: it is moved out when ready.
impl<T> Unpin for TaskHandle<T> {}

impl<T> Future for TaskHandle<T> {
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            HandleState::Ready(result) => match result.take() {
                Some(result) => Poll::Ready(result),
                None => Poll::Ready(Err(Error::Runtime(
                    "a task handle was polled after it completed".into(),
                ))),
            },
            HandleState::Running { join, call } => match Pin::new(join).poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(result)) => Poll::Ready(result),
                Poll::Ready(Err(error)) if error.is_panic() => {
                    let message = panic_message(&*error.into_panic());
                    Poll::Ready(Err(Error::TaskFailed {
                        task: call.clone(),
                        source: format!("panicked: {message}").into(),
                    }))
                }
                Poll::Ready(Err(_)) => Poll::Ready(Err(Error::Cancelled)),
            },
        }
    }
}

impl<T> Drop for TaskHandle<T> {
    fn drop(&mut self) {
        if let HandleState::Running { join, .. } = &self.state {
            join.abort();
        }
    }
}
