//! `GET /threads/{thread_id}/stream` (`threads.join_stream`): the events of every run on a
//! thread, one run after another in the order they were created, as server-sent events
//! that never end on their own (the client closes the stream).
//!
//! Stream modes (`stream_mode`, as the SDKs send it, or `stream_modes`, as the reference
//! server reads it; repeated, a JSON list, or comma-separated):
//!
//! - `run_modes` (the default): each run's events as its own stream shows them (the modes
//!   the run was created with), then `metadata` `{"status": "run_done", "run_id"}` when it
//!   has ended;
//! - `lifecycle`: only each run's first `metadata` event (`{"run_id", "attempt"}`) and its
//!   `run_done`;
//! - `state_update` is refused (422): this server records no event when a thread's state is
//!   updated through `POST /threads/{thread_id}/state`, so it could never send one.
//!
//! The follower, [`ThreadFollow`], is shared with the streaming protocol's event stream
//! (`super::event_streaming`), which reads every run from its beginning.
//!
//! Every event carries an id, `{run_id}:{seq}` (`{run_id}:done` for `run_done`); a client
//! that reconnects with `Last-Event-ID` gets everything after it, replayed from the
//! database. Without it the stream starts now: the runs still going on, from their next
//! event, and every run created later.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use futures::stream;
use serde_json::{Value, json};
use uuid::Uuid;

use super::spec::{Endpoint, SSE, fields, opt};
use super::stream::{HEARTBEAT, HEARTBEAT_EVERY, StreamFilter, frame_with_id, sse_response};
use super::{Api, query_pairs, uuid_param};
use crate::backend::{Followed, RunEvent, RunFollower, RunQuery, RunRecord};
use crate::error::{Result, ServerError};
use crate::worker::RunKwargs;

pub(super) fn endpoints() -> Vec<Endpoint> {
    vec![
        Endpoint::get(
            "/threads/{tid}/stream",
            "Every run on the thread as server-sent events (Last-Event-ID replays)",
            join,
        )
        .query(fields![
            opt("stream_mode", "string"),
            opt("stream_modes", "string"),
        ])
        .answers(SSE),
    ]
}

/// What a thread stream shows.
#[derive(Debug, Clone, Copy)]
pub(super) struct Modes {
    /// `run_modes`: every event each run's own stream shows.
    pub runs: bool,
    /// `lifecycle`: each run's start and end.
    pub lifecycle: bool,
}

/// The modes asked for in the query (`run_modes` when none).
fn modes_of(pairs: &[(String, String)]) -> Result<Modes> {
    let mut names = Vec::new();
    for (_, value) in pairs
        .iter()
        .filter(|(k, v)| (k == "stream_mode" || k == "stream_modes") && !v.is_empty())
    {
        match serde_json::from_str::<Value>(value) {
            Ok(Value::Array(items)) => {
                for item in items {
                    let name = item.as_str().ok_or_else(|| {
                        ServerError::Validation(format!(
                            "stream_mode must be a mode name or a list of them, not a list holding {item}"
                        ))
                    })?;
                    names.push(name.to_owned());
                }
            }
            _ => names.extend(value.split(',').map(|m| m.trim().to_owned())),
        }
    }
    let mut modes = Modes {
        runs: names.is_empty(),
        lifecycle: false,
    };
    for name in names {
        match name.as_str() {
            "run_modes" => modes.runs = true,
            "lifecycle" => modes.lifecycle = true,
            "state_update" => {
                return Err(ServerError::Validation(
                    "stream_mode `state_update` is not served by this server: it records no event when a \
                     thread's state is updated (POST /threads/{thread_id}/state); read the state with \
                     GET /threads/{thread_id}/state, or ask for run_modes or lifecycle"
                        .into(),
                ));
            }
            other => {
                return Err(ServerError::Validation(format!(
                    "Invalid stream mode: {other:?}; the thread stream takes run_modes or lifecycle"
                )));
            }
        }
    }
    Ok(modes)
}

/// Where a reconnecting client left off: after event `seq` of `run` (`None`: after its
/// `run_done`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Position {
    run: Uuid,
    seq: Option<i64>,
}

impl Position {
    /// The id of event `seq` of `run` (`None`: its `run_done`).
    fn id(run: Uuid, seq: Option<i64>) -> String {
        match seq {
            Some(seq) => format!("{run}:{seq}"),
            None => format!("{run}:done"),
        }
    }

    fn parse(id: &str) -> Result<Self> {
        let wrong = || {
            ServerError::Validation(format!(
                "Last-Event-ID {id:?} is not an event id of a thread stream ({{run_id}}:{{seq}} or \
                 {{run_id}}:done); send the id of the last event received, or none to start from now"
            ))
        };
        let (run, seq) = id.trim().split_once(':').ok_or_else(wrong)?;
        let run = Uuid::try_parse(run).map_err(|_| wrong())?;
        let seq = match seq {
            "done" => None,
            seq => Some(seq.parse::<i64>().map_err(|_| wrong())?),
        };
        Ok(Self { run, seq })
    }
}

/// `GET /threads/{tid}/stream`.
async fn join(
    State(api): State<Api>,
    Path(tid): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response> {
    let thread_id = uuid_param("thread", &tid)?;
    let modes = modes_of(&query_pairs(query.as_deref()))?;
    let from = headers
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .map_err(|_| ServerError::Validation("Last-Event-ID is not text".into()))
                .and_then(Position::parse)
        })
        .transpose()?;
    super::threads::thread_or_404(&api, thread_id).await?;
    let start = from.map_or(Start::Now, Start::After);
    let follow = ThreadFollow::start(api, thread_id, modes, start).await?;
    Ok(sse_response(body(follow), None, None))
}

/// The runs of a thread, oldest first.
async fn runs_of(api: &Api, thread_id: Uuid) -> Result<Vec<RunRecord>> {
    let mut runs = api
        .backend()
        .list_runs(thread_id, &RunQuery::default())
        .await?;
    runs.reverse();
    Ok(runs)
}

/// Where a [`ThreadFollow`] starts.
#[derive(Debug, Clone, Copy)]
pub(super) enum Start {
    /// Now: the runs still going on from their next event, and every run created later.
    Now,
    /// After an event a client received (see [`Position`]).
    After(Position),
    /// At the thread's first stored event: every run from its beginning.
    Beginning,
}

/// What a [`ThreadFollow`] gives, in order.
#[derive(Debug)]
pub(super) enum Item {
    /// An event of `run` that the stream shows.
    Event { run: Uuid, event: Arc<RunEvent> },
    /// `run` has ended and every event of it was given.
    RunDone(Uuid),
    /// Nothing happened for a while (a keep-alive for the connection).
    Heartbeat,
}

/// One client's thread stream: the events of the thread's runs, one run after another.
pub(super) struct ThreadFollow {
    api: Api,
    thread_id: Uuid,
    modes: Modes,
    /// Runs whose events are all sent, or that ended before the stream began.
    done: HashSet<Uuid>,
    /// Where each run not yet followed starts (0, its first event, when absent).
    after: HashMap<Uuid, i64>,
    /// The run followed now, and what its own stream shows.
    current: Option<(RunFollower, StreamFilter)>,
    pending: VecDeque<Item>,
    closed: bool,
    /// Whether the thread was seen to exist (so that its absence means it was deleted).
    thread_seen: bool,
}

impl ThreadFollow {
    /// A stream of the thread's runs from `start`. The thread need not exist yet (a
    /// protocol client may open its event stream before its first `run.start` creates
    /// it): the stream waits for it, and ends if a thread it has seen is deleted.
    pub(super) async fn start(
        api: Api,
        thread_id: Uuid,
        modes: Modes,
        start: Start,
    ) -> Result<Self> {
        let mut follow = Self {
            api,
            thread_id,
            modes,
            done: HashSet::new(),
            after: HashMap::new(),
            current: None,
            pending: VecDeque::new(),
            closed: false,
            thread_seen: false,
        };
        let from = match start {
            Start::Now => None,
            Start::After(position) => Some(position),
            // Every run from its first event: nothing is behind the stream.
            Start::Beginning => return Ok(follow),
        };
        // `GET /threads/{thread_id}/stream`, the one to start elsewhere, found the thread.
        follow.thread_seen = true;
        let runs = runs_of(&follow.api, thread_id).await?;
        let resumed = from.and_then(|from| {
            let index = runs.iter().position(|r| r.run_id == from.run)?;
            Some((index, from.seq))
        });
        match resumed {
            Some((index, seq)) => {
                follow.done.extend(runs[..index].iter().map(|r| r.run_id));
                let run = runs[index].run_id;
                match seq {
                    Some(seq) => {
                        follow.after.insert(run, seq);
                    }
                    None => {
                        follow.done.insert(run);
                    }
                }
            }
            // From now: the runs that have ended are behind us, the others go on from their
            // next event. (An id of a run no longer stored resumes from now, too.)
            None => {
                for run in &runs {
                    if run.status.is_terminal() {
                        follow.done.insert(run.run_id);
                    } else {
                        let seq = follow.api.backend().last_event_seq(run.run_id).await?;
                        follow.after.insert(run.run_id, seq);
                    }
                }
            }
        }
        Ok(follow)
    }

    /// Whether this stream shows `event` of a run whose own stream shows what `filter` passes.
    fn shows(&self, event: &RunEvent, filter: &StreamFilter) -> bool {
        if self.modes.runs && filter.passes(event) {
            return true;
        }
        self.modes.lifecycle && event.event == "metadata" && {
            let data: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            data.get("run_id").is_some() && data.get("attempt").is_some()
        }
    }

    /// Queues what is new, or waits for it.
    async fn step(&mut self) -> Result<()> {
        let Some((follower, filter)) = &mut self.current else {
            return self.next_run().await;
        };
        let run = follower.run_id();
        match follower.next(self.api.backend().as_ref()).await? {
            Followed::Events(events) => {
                let filter = filter.clone();
                for event in events {
                    if self.shows(&event, &filter) {
                        self.pending.push_back(Item::Event { run, event });
                    }
                }
            }
            Followed::Ended => {
                self.current = None;
                self.done.insert(run);
                self.pending.push_back(Item::RunDone(run));
            }
            Followed::Waiting => {
                tokio::select! {
                    () = follower.changed() => {}
                    () = tokio::time::sleep(HEARTBEAT_EVERY) => {
                        self.pending.push_back(Item::Heartbeat);
                        follower.recheck();
                    }
                    () = self.api.stop.cancelled() => self.closed = true,
                }
            }
        }
        Ok(())
    }

    /// Follows the oldest run not yet done, or waits for a new run on the thread.
    async fn next_run(&mut self) -> Result<()> {
        // Watched before the runs are read, so a run created after the read wakes us.
        let mut queue = self.api.backend().watch_queue();
        let runs = runs_of(&self.api, self.thread_id).await?;
        self.thread_seen |= !runs.is_empty();
        if let Some(run) = runs.iter().find(|r| !self.done.contains(&r.run_id)) {
            let after = self.after.remove(&run.run_id).unwrap_or(0);
            let kwargs: RunKwargs = serde_json::from_value(run.kwargs.clone()).unwrap_or_default();
            let follower = self.api.backend().follow_run(run.run_id, after);
            self.current = Some((follower, StreamFilter::new(kwargs.stream_mode)));
            return Ok(());
        }
        tokio::select! {
            () = queue.changed() => {}
            () = tokio::time::sleep(HEARTBEAT_EVERY) => {
                self.pending.push_back(Item::Heartbeat);
                // A thread that was there is gone: nothing more will come. One not created
                // yet is waited for.
                let exists = self.api.backend().get_thread(self.thread_id).await?.is_some();
                self.closed = self.thread_seen && !exists;
                self.thread_seen |= exists;
            }
            () = self.api.stop.cancelled() => self.closed = true,
        }
        Ok(())
    }

    /// Ends the stream: [`ThreadFollow::next`] gives nothing more.
    pub(super) fn close(&mut self) {
        self.closed = true;
        self.pending.clear();
    }

    /// The next item; `None` once the stream has ended (the server stops, or the thread
    /// was deleted).
    pub(super) async fn next(&mut self) -> Option<Result<Item>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.closed {
                return None;
            }
            if let Err(error) = self.step().await {
                self.closed = true;
                return Some(Err(error));
            }
        }
    }
}

/// The SSE frame of a thread stream's item.
fn frame(item: Item) -> Bytes {
    match item {
        Item::Event { run, event } => frame_with_id(
            &event.event,
            &event.data,
            Some(&Position::id(run, Some(event.seq))),
        ),
        Item::RunDone(run) => {
            let data = json!({"status": "run_done", "run_id": run}).to_string();
            frame_with_id("metadata", &data, Some(&Position::id(run, None)))
        }
        Item::Heartbeat => Bytes::from_static(HEARTBEAT),
    }
}

/// The SSE body of a thread stream.
fn body(follow: ThreadFollow) -> Body {
    let frames = stream::unfold(Some(follow), |follow| async move {
        let mut follow = follow?;
        let bytes = match follow.next().await? {
            Ok(item) => frame(item),
            Err(error) => {
                let data = json!({"error": "ServerError", "message": error.to_string()});
                // The error is the stream's last frame.
                let frame = frame_with_id("error", &data.to_string(), None);
                return Some((Ok::<Bytes, std::convert::Infallible>(frame), None));
            }
        };
        Some((Ok(bytes), Some(follow)))
    });
    Body::from_stream(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(query: &str) -> Vec<(String, String)> {
        query_pairs(Some(query))
    }

    #[test]
    fn modes_come_from_either_key_in_any_form() {
        let m = modes_of(&pairs("")).expect("default");
        assert!(m.runs && !m.lifecycle);
        let m = modes_of(&pairs("stream_mode=")).expect("empty is none");
        assert!(m.runs && !m.lifecycle);
        let m = modes_of(&pairs("stream_mode=lifecycle")).expect("one");
        assert!(!m.runs && m.lifecycle);
        let m = modes_of(&pairs("stream_modes=lifecycle,run_modes")).expect("commas");
        assert!(m.runs && m.lifecycle);
        let m = modes_of(&pairs("stream_mode=%5B%22lifecycle%22%5D")).expect("JSON list");
        assert!(!m.runs && m.lifecycle);
        let refused = modes_of(&pairs("stream_mode=state_update")).expect_err("refused");
        assert!(refused.to_string().contains("state_update"), "{refused}");
        assert!(modes_of(&pairs("stream_mode=values")).is_err());
    }

    #[test]
    fn event_ids_read_back() {
        let run = Uuid::now_v7();
        let seq = Position::parse(&Position::id(run, Some(7))).expect("seq");
        assert_eq!(seq, Position { run, seq: Some(7) });
        let done = Position::parse(&Position::id(run, None)).expect("done");
        assert_eq!(done, Position { run, seq: None });
        assert!(Position::parse("12").is_err());
        assert!(Position::parse("x:1").is_err());
    }
}
