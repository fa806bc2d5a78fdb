//! The WebSocket transport of the thread streaming protocol
//! (`GET /threads/{thread_id}/stream/events`, upgraded): commands and events on one
//! connection, as `client.threads.stream(..., transport="websocket")` uses it.
//!
//! Every text frame from the client is a command (`{id, method, params}`) and is answered
//! with one frame, as over HTTP (see [`super::event_streaming`]), except for what lives in
//! the connection: `subscription.subscribe` installs a filter (and sends the events already
//! made that it passes), `subscription.unsubscribe` removes one, `subscription.reconnect`
//! installs one that starts after `since`, and `agent.getTree` answers the last run's tree
//! (its root and subgraph runs). The thread's runs are read from their beginning as the
//! connection opens (a thread not created yet is waited for), and each event is sent once
//! if any subscription passes it. When the thread's stream ends (the server stops, a thread
//! that was there is deleted) the socket is closed with 1011.

use std::collections::{HashMap, VecDeque};

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::event_normalizer::ProtocolEvent;
use super::event_streaming::{
    Filter, Refusal, Tape, WrongChannels, answer, envelope, handle, method_and_params,
    stream_failure,
};
use super::thread_stream::{Item, Modes, Start, ThreadFollow};
use super::{Api, uuid_param};
use crate::error::Result;

/// How many events a connection keeps to replay to a subscription installed later (the
/// reference keeps as many).
const REPLAY: usize = 10_000;

/// `GET /threads/{tid}/stream/events` with a WebSocket upgrade.
pub(super) async fn socket(
    State(api): State<Api>,
    Path(tid): Path<String>,
    upgrade: WebSocketUpgrade,
) -> Result<Response> {
    let thread_id = uuid_param("thread", &tid)?;
    Ok(upgrade.on_upgrade(move |socket| serve(api, thread_id, socket)))
}

/// One connection: the commands it sends and the events of the thread's runs.
struct Session {
    api: Api,
    thread_id: Uuid,
    tape: Tape,
    subscriptions: HashMap<String, Filter>,
    /// The events made so far, for subscriptions installed later.
    made: VecDeque<ProtocolEvent>,
    /// The last event sent (`applied_through_seq`).
    sent_through: u64,
}

async fn serve(api: Api, thread_id: Uuid, mut socket: WebSocket) {
    // The thread's runs are read on their own task, so that waiting for a command never
    // cuts a read of the runs short.
    let (items, mut incoming) = tokio::sync::mpsc::channel::<Result<Item>>(64);
    let reader = {
        let api = api.clone();
        tokio::spawn(async move {
            let modes = Modes {
                runs: true,
                lifecycle: false,
            };
            let mut follow =
                match ThreadFollow::start(api, thread_id, modes, Start::Beginning).await {
                    Ok(follow) => follow,
                    Err(error) => {
                        let _ = items.send(Err(error)).await;
                        return;
                    }
                };
            while let Some(item) = follow.next().await {
                if items.send(item).await.is_err() {
                    return;
                }
            }
        })
    };
    let mut session = Session {
        tape: Tape::new(api.clone(), thread_id),
        api,
        thread_id,
        subscriptions: HashMap::new(),
        made: VecDeque::new(),
        sent_through: 0,
    };
    let mut fresh = Vec::new();
    let end = loop {
        tokio::select! {
            frame = socket.recv() => match frame {
                Some(Ok(Message::Text(text))) => {
                    let replies = session.command(text.as_str()).await;
                    if send_all(&mut socket, replies).await.is_err() {
                        break None;
                    }
                }
                // Pings are answered by axum; binary frames are not commands.
                Some(Ok(Message::Binary(_) | Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_)) | Err(_)) | None => break None,
            },
            item = incoming.recv() => {
                let taken = match item {
                    Some(Ok(item)) => session.tape.take(item, &mut fresh).await,
                    Some(Err(error)) => Err(error),
                    None => break Some("thread stream ended"),
                };
                if let Err(error) = taken {
                    let _ = socket
                        .send(Message::Text(stream_failure(&error).to_string().into()))
                        .await;
                    break Some("thread stream failed");
                }
                let replies = session.made(&mut fresh);
                if send_all(&mut socket, replies).await.is_err() {
                    break None;
                }
            }
        }
    };
    reader.abort();
    if let Some(reason) = end {
        let close = CloseFrame {
            code: 1011,
            reason: reason.into(),
        };
        let _ = socket.send(Message::Close(Some(close))).await;
    }
}

async fn send_all(
    socket: &mut WebSocket,
    frames: Vec<Value>,
) -> std::result::Result<(), axum::Error> {
    for frame in frames {
        socket.send(Message::Text(frame.to_string().into())).await?;
    }
    Ok(())
}

impl Session {
    /// Keeps the events just made and returns those a subscription passes.
    fn made(&mut self, fresh: &mut Vec<ProtocolEvent>) -> Vec<Value> {
        let mut out = Vec::new();
        for event in fresh.drain(..) {
            if self.subscriptions.values().any(|f| f.passes(&event)) {
                self.sent_through = self.sent_through.max(event.seq);
                out.push(event.clone().into_json());
            }
            if self.made.len() == REPLAY {
                self.made.pop_front();
            }
            self.made.push_back(event);
        }
        out
    }

    /// The frames answering one text frame: the command's answer, then, for a new
    /// subscription, the events already made that it passes.
    async fn command(&mut self, text: &str) -> Vec<Value> {
        let Ok(command) = serde_json::from_str::<Value>(text) else {
            let refusal = Refusal::invalid("Protocol commands must be valid JSON.");
            return vec![answer(&Value::Null, Err(refusal), 0)];
        };
        let envelope = match envelope(&command) {
            Ok(envelope) => envelope,
            Err(refused) => return vec![refused],
        };
        let id = envelope.get("id").cloned().unwrap_or(Value::Null);
        let (method, params) = method_and_params(envelope);
        let (result, replay) = match method {
            "subscription.subscribe" | "subscription.reconnect" => {
                match self.subscribe(method, params) {
                    Ok((subscription, filter)) => {
                        let replay = self.replay(&filter);
                        self.subscriptions.insert(subscription.clone(), filter);
                        let result = json!({"subscription_id": subscription, "replayed_events": replay.len()});
                        (Ok(result), replay)
                    }
                    Err(refusal) => (Err(refusal), Vec::new()),
                }
            }
            "subscription.unsubscribe" => (self.unsubscribe(params), Vec::new()),
            "agent.getTree" => (self.tree(), Vec::new()),
            _ => (
                handle(&self.api, self.thread_id, envelope).await,
                Vec::new(),
            ),
        };
        let mut frames = vec![answer(&id, result, self.sent_through)];
        frames.extend(replay);
        frames
    }

    /// A subscription from a `subscription.subscribe` (or `.reconnect`, which needs
    /// `since`) command: its id (the client's, or a new one) and filter.
    fn subscribe(
        &self,
        method: &str,
        params: &Map<String, Value>,
    ) -> std::result::Result<(String, Filter), Refusal> {
        let body = Value::Object(params.clone());
        let mut filter = Filter::of(&body).map_err(|wrong| {
            Refusal::invalid(match wrong {
                WrongChannels::None => format!("{method} requires a non-empty channels array."),
                WrongChannels::Unsupported(_) => {
                    format!("{method} received an unsupported channel.")
                }
            })
        })?;
        if method == "subscription.reconnect" {
            let since = params
                .get("since")
                .filter(|v| !v.is_boolean())
                .and_then(Value::as_u64)
                .ok_or_else(|| {
                    Refusal::invalid(
                        "subscription.reconnect requires a non-negative integer since.",
                    )
                })?;
            filter.since = Some(since);
        } else {
            // `since` belongs to an event stream's body; a subscribe starts at the beginning.
            filter.since = None;
        }
        let id = params
            .get("subscription_id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && method == "subscription.reconnect")
            .map_or_else(|| Uuid::new_v4().to_string(), str::to_owned);
        Ok((id, filter))
    }

    /// The events already made that `filter` passes, as frames.
    fn replay(&mut self, filter: &Filter) -> Vec<Value> {
        let frames: Vec<Value> = self
            .made
            .iter()
            .filter(|e| filter.passes(e))
            .map(|e| e.clone().into_json())
            .collect();
        if let Some(last) = self.made.iter().rev().find(|e| filter.passes(e)) {
            self.sent_through = self.sent_through.max(last.seq);
        }
        frames
    }

    fn unsubscribe(&mut self, params: &Map<String, Value>) -> std::result::Result<Value, Refusal> {
        let id = params
            .get("subscription_id")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Refusal::invalid("subscription.unsubscribe requires a subscription_id.")
            })?;
        match self.subscriptions.remove(id) {
            Some(_) => Ok(json!({})),
            None => Err(Refusal::new(
                "no_such_subscription",
                format!("Unknown subscription: {id}"),
            )),
        }
    }

    /// `agent.getTree`: the last run's tree, or `no_such_run` before any run was seen.
    fn tree(&self) -> std::result::Result<Value, Refusal> {
        self.tape
            .normalizer
            .tree()
            .map(|tree| json!({"tree": tree}))
            .ok_or_else(|| Refusal::new("no_such_run", "No active run is bound to this thread."))
    }
}
