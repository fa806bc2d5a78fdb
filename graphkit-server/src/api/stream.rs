//! Following a run: SSE bodies (live, or replayed after `Last-Event-ID`), the `wait` and
//! `join` bodies, and what happens when the client goes away.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::stream;
use serde_json::{Value, json};
use uuid::Uuid;

use super::Api;
use crate::backend::{CancelAction, Followed, RunEnding, RunEvent, RunFollower, RunStatus};
use crate::error::Result;

/// The comment both SDKs skip, sent after 5 s without an event.
pub(crate) const HEARTBEAT: &[u8] = b": heartbeat\r\n\r\n";
pub(crate) const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);
/// How often a `wait`/`join` re-reads the run without a wake-up (a lost notification only
/// delays).
const RECHECK: Duration = Duration::from_secs(1);

/// Which stored events a stream shows.
#[derive(Debug, Clone)]
pub(crate) struct StreamFilter {
    modes: Vec<String>,
}

impl StreamFilter {
    pub(crate) fn new(modes: Vec<String>) -> Self {
        Self { modes }
    }

    fn wants(&self, mode: &str) -> bool {
        self.modes.iter().any(|m| m == mode)
    }

    pub(crate) fn passes(&self, event: &RunEvent) -> bool {
        let base = event.event.split('|').next().unwrap_or_default();
        match base {
            "metadata" | "error" | "end" => true,
            // A pause reaches streams that asked for values, or for neither values nor updates.
            "values" => {
                self.wants("values")
                    || (!self.wants("updates") && event.data.contains("\"__interrupt__\""))
            }
            "messages" => self.wants("messages-tuple"),
            other => self.wants(other),
        }
    }
}

/// What to do when a follower's client leaves or the run ends.
pub(crate) struct Departure {
    api: Api,
    run_id: Uuid,
    /// `on_disconnect: "cancel"` / `cancel_on_disconnect`.
    pub cancel_on_disconnect: bool,
    /// A stateless run's temporary thread, deleted once the run has ended.
    pub delete_thread: Option<Uuid>,
    finished: bool,
}

impl Departure {
    pub(crate) fn new(api: &Api, run_id: Uuid) -> Self {
        Self {
            api: api.clone(),
            run_id,
            cancel_on_disconnect: false,
            delete_thread: None,
            finished: false,
        }
    }

    fn finish(&mut self) {
        self.finished = true;
    }
}

impl Drop for Departure {
    fn drop(&mut self) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (api, run_id, thread) = (self.api.clone(), self.run_id, self.delete_thread);
        let cancel = self.cancel_on_disconnect && !self.finished;
        if !cancel && thread.is_none() {
            return;
        }
        handle.spawn(async move {
            if cancel {
                let cancelled = api
                    .backend()
                    .request_cancel(None, run_id, CancelAction::Interrupt)
                    .await;
                if let Err(error) = cancelled {
                    tracing::warn!(%run_id, %error, "cancelling the run of a departed client failed");
                }
            }
            if let Some(thread) = thread {
                if let Err(error) = wait_terminal(&api, run_id).await {
                    tracing::warn!(%run_id, %error, "waiting for a stateless run failed");
                }
                let backend = api.backend();
                let deleted = async {
                    backend.checkpointer().delete_thread(&thread.to_string()).await?;
                    backend.delete_thread(thread).await
                }
                .await;
                if let Err(error) = deleted {
                    tracing::warn!(%thread, %error, "deleting a stateless run's thread failed");
                }
            }
        });
    }
}

/// Waits until the run has ended (or is gone); returns how it ended. Only the status is
/// read on each look, not the run's request (a big input would be read and parsed again
/// at every wake-up).
pub(crate) async fn wait_terminal(api: &Api, run_id: Uuid) -> Result<Option<RunEnding>> {
    loop {
        let mut wake = api.backend().watch_run(run_id);
        match api.backend().run_status(run_id).await? {
            None => return Ok(None),
            Some(run) if run.status.is_terminal() => return Ok(Some(run)),
            Some(_) => {}
        }
        tokio::select! {
            () = wake.changed() => {}
            () = tokio::time::sleep(RECHECK) => {}
        }
    }
}

/// The wait/join body of an ended run, as JSON text: its last values (with
/// `__interrupt__` when it paused), or `{"__error__": {...}}` when it failed. The last
/// `values` event is sent as it was stored, not parsed and written again (for a big state
/// that was two more copies of it).
pub(crate) async fn run_result(
    api: &Api,
    run_id: Uuid,
    run: Option<&RunEnding>,
    thread_id: Uuid,
) -> Result<Bytes> {
    if let Some(run) = run {
        match api.backend().last_result_event(run_id).await? {
            Some(e) if e.event == "error" => {
                let error: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
                return Ok(json_text(&json!({ "__error__": error })));
            }
            Some(e) if run.status != RunStatus::Error => return Ok(Bytes::from(e.data)),
            _ => {}
        }
        if run.status == RunStatus::Error {
            return Ok(json_text(
                &json!({"__error__": {"error": "RunError", "message": run.cancel_reason}}),
            ));
        }
    }
    // The events are gone (pruned, or the run was rolled back): the thread's values.
    let Some(thread) = api.backend().get_thread(thread_id).await? else {
        return Ok(json_text(&Value::Null));
    };
    let mut values = thread.values;
    if let (Value::Object(map), Value::Object(interrupts)) = (&mut values, &thread.interrupts)
        && !interrupts.is_empty()
    {
        let all: Vec<Value> = interrupts
            .values()
            .filter_map(Value::as_array)
            .flatten()
            .cloned()
            .collect();
        map.insert("__interrupt__".into(), Value::Array(all));
    }
    Ok(json_text(&values))
}

/// `value` as a JSON body.
fn json_text(value: &Value) -> Bytes {
    Bytes::from(value.to_string())
}

fn frame(event: &RunEvent, with_id: bool) -> Bytes {
    let seq = with_id.then(|| event.seq.to_string());
    frame_with_id(&event.event, &event.data, seq.as_deref())
}

/// One SSE frame: `event`, its `data` (one line of JSON) and, when given, its `id`.
pub(crate) fn frame_with_id(event: &str, data: &str, id: Option<&str>) -> Bytes {
    let mut out = String::with_capacity(event.len() + data.len() + 48);
    out.push_str("event: ");
    out.extend(event.chars().filter(|c| *c != '\r' && *c != '\n'));
    out.push_str("\r\ndata: ");
    out.push_str(data);
    out.push_str("\r\n");
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(id);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    Bytes::from(out)
}

struct Follow {
    api: Api,
    follower: RunFollower,
    filter: StreamFilter,
    with_ids: bool,
    pending: VecDeque<Bytes>,
    done: bool,
    departure: Departure,
}

impl Follow {
    fn queue(&mut self, events: &[Arc<RunEvent>]) {
        for event in events {
            if self.filter.passes(event) {
                self.pending.push_back(frame(event, self.with_ids));
            }
        }
    }

    /// Queues what is new (replayed from the database, then live from memory), or waits
    /// for it; sets `done` once the run has ended and everything was queued.
    async fn step(&mut self) -> Result<()> {
        match self.follower.next(self.api.backend().as_ref()).await? {
            Followed::Events(events) => self.queue(&events),
            Followed::Ended => self.done = true,
            Followed::Waiting => {
                tokio::select! {
                    () = self.follower.changed() => {}
                    () = tokio::time::sleep(HEARTBEAT_EVERY) => {
                        self.pending.push_back(Bytes::from_static(HEARTBEAT));
                        // Quiet for a while: a notification may have been lost.
                        self.follower.recheck();
                    }
                    // The server stops: end the stream; the client reconnects elsewhere with
                    // Last-Event-ID.
                    () = self.api.stop.cancelled() => self.done = true,
                }
            }
        }
        Ok(())
    }
}

/// An SSE body that follows the run from `after` (0: from its first event).
pub(crate) fn sse_body(
    api: &Api,
    run_id: Uuid,
    after: i64,
    filter: StreamFilter,
    with_ids: bool,
    departure: Departure,
) -> Body {
    let follow = Follow {
        api: api.clone(),
        follower: api.backend().follow_run(run_id, after),
        filter,
        with_ids,
        pending: VecDeque::new(),
        done: false,
        departure,
    };
    let frames = stream::unfold(follow, |mut follow| async move {
        loop {
            if let Some(frame) = follow.pending.pop_front() {
                return Some((Ok::<Bytes, std::convert::Infallible>(frame), follow));
            }
            if follow.done {
                follow.departure.finish();
                return None;
            }
            if let Err(error) = follow.step().await {
                let data = json!({"error": "ServerError", "message": error.to_string()});
                let event = RunEvent {
                    seq: follow.follower.last_seq(),
                    event: "error".into(),
                    data: data.to_string(),
                };
                follow.pending.push_back(frame(&event, false));
                follow.done = true;
            }
        }
    });
    Body::from_stream(frames)
}

/// The SSE response with the reference server's headers.
pub(crate) fn sse_response(
    body: Body,
    location: Option<String>,
    content_location: Option<String>,
) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    set_locations(&mut response, location, content_location);
    response
}

pub(crate) fn set_locations(
    response: &mut Response,
    location: Option<String>,
    content_location: Option<String>,
) {
    let headers = response.headers_mut();
    if let Some(v) = location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::LOCATION, v);
    }
    if let Some(v) = content_location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert(header::CONTENT_LOCATION, v);
    }
}

/// A JSON body that waits for the run to end, sending `\n` every 5 s meanwhile (leading
/// whitespace keeps the body valid JSON).
pub(crate) fn wait_body(api: &Api, run_id: Uuid, thread_id: Uuid, departure: Departure) -> Body {
    struct Waiting {
        api: Api,
        run_id: Uuid,
        thread_id: Uuid,
        done: bool,
        departure: Departure,
    }
    let waiting = Waiting {
        api: api.clone(),
        run_id,
        thread_id,
        done: false,
        departure,
    };
    let chunks = stream::unfold(waiting, |mut w| async move {
        if w.done || w.api.stop.is_cancelled() {
            return None;
        }
        let ended = tokio::time::timeout(HEARTBEAT_EVERY, wait_terminal(&w.api, w.run_id)).await;
        let chunk = match ended {
            Err(_) => Bytes::from_static(b"\n"),
            Ok(outcome) => {
                w.done = true;
                w.departure.finish();
                let failed = |e: crate::error::ServerError| {
                    json_text(
                        &json!({"__error__": {"error": "ServerError", "message": e.to_string()}}),
                    )
                };
                match outcome {
                    Ok(run) => run_result(&w.api, w.run_id, run.as_ref(), w.thread_id)
                        .await
                        .unwrap_or_else(failed),
                    Err(e) => failed(e),
                }
            }
        };
        Some((Ok::<Bytes, std::convert::Infallible>(chunk), w))
    });
    Body::from_stream(chunks)
}

/// A JSON response whose body comes from [`wait_body`].
pub(crate) fn wait_response(
    body: Body,
    location: Option<String>,
    content_location: Option<String>,
) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    set_locations(&mut response, location, content_location);
    response
}
