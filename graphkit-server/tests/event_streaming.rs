//! The thread-centric streaming protocol (`POST /threads/{thread_id}/commands` and
//! `POST /threads/{thread_id}/stream/events`) on each backend: the command errors answer
//! with the reference's codes and messages, a run started and resumed through commands
//! reaches the event stream as the SDK's decoders read it; a run that calls a tool in a
//! subgraph (`demo::researcher_graph`) shows on the tools, checkpoints, lifecycle and
//! messages channels, and the namespace filter scopes them; an event stream opened before
//! its thread exists waits for it; and the refusals of what the server does not serve name
//! it. (`GET /threads/{id}/storage` is in the contract suite, `http_contract`.)

use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::backend_contract::Fixture;
use crate::common::{Event, SseReader, TestServer, expect_json, user_input};

/// Serves the demo graphs `agent` and `researcher` on `fixture`'s backend.
async fn serve<F: AsyncFnOnce(&TestServer)>(fixture: Fixture, behaviour: F) {
    let researcher = graphkit_server::demo::researcher_graph().expect("the researcher graph");
    crate::http_contract::serve_with(
        fixture,
        |server| server.graph_without_schema("researcher", researcher),
        behaviour,
    )
    .await;
}

/// Reads `reader` until the root lifecycle ends the run (`completed` or `failed`).
async fn until_run_ends(reader: &mut SseReader) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(event) = reader.next().await {
        let data = &event.data["params"]["data"];
        let ends = event.event == "lifecycle"
            && event.data["params"]["namespace"] == json!([])
            && (data["event"] == "completed" || data["event"] == "failed");
        events.push(event);
        if ends {
            return events;
        }
    }
    panic!("the stream ended before the run: {events:?}");
}

/// Sends one command to the thread and returns the answer (status 200).
async fn command(s: &TestServer, thread: &str, id: i64, method: &str, params: Value) -> Value {
    s.post_json(
        &format!("/threads/{thread}/commands"),
        json!({"id": id, "method": method, "params": params}),
        StatusCode::OK,
    )
    .await
}

fn protocol_error(id: i64, code: &str, message: &str) -> Value {
    json!({"type": "error", "id": id, "error": code, "message": message})
}

/// Waits for the thread's newest run to end (`join`) and returns the thread.
async fn settled(s: &TestServer, thread: &str) -> Value {
    let runs = s
        .get_json(&format!("/threads/{thread}/runs"), StatusCode::OK)
        .await;
    let run = runs[0]["run_id"].as_str().expect("a run").to_owned();
    s.get_json(
        &format!("/threads/{thread}/runs/{run}/join"),
        StatusCode::OK,
    )
    .await;
    s.get_json(&format!("/threads/{thread}"), StatusCode::OK)
        .await
}

async fn commands_answer_errors_as_the_reference(s: &TestServer) {
    let thread = Uuid::new_v4().to_string();
    assert_eq!(
        command(s, &thread, 1, "state.get", json!({})).await,
        protocol_error(1, "unknown_command", "Unknown protocol command: state.get")
    );
    assert_eq!(
        command(s, &thread, 2, "run.start", json!({"input": {}})).await,
        protocol_error(2, "invalid_argument", "run.start requires an assistant_id.")
    );
    assert_eq!(
        command(s, &thread, 3, "input.respond", json!({"response": "yes"})).await,
        protocol_error(
            3,
            "invalid_argument",
            "input.respond requires an interrupt_id."
        )
    );
    assert_eq!(
        command(
            s,
            &thread,
            4,
            "input.respond",
            json!({"interrupt_id": "x", "response": 1})
        )
        .await,
        protocol_error(
            4,
            "no_such_run",
            "No interrupted run is bound to this thread."
        )
    );
    assert_eq!(
        command(s, &thread, 5, "agent.getTree", json!({})).await,
        protocol_error(5, "no_such_run", "No active run is bound to this thread.")
    );
    assert_eq!(
        command(
            s,
            &thread,
            6,
            "subscription.unsubscribe",
            json!({"subscription_id": "s"})
        )
        .await,
        protocol_error(6, "no_such_subscription", "Unknown subscription: s")
    );
    assert_eq!(
        command(
            s,
            &thread,
            7,
            "subscription.subscribe",
            json!({"channels": ["debug"]})
        )
        .await,
        protocol_error(
            7,
            "invalid_argument",
            "subscription.subscribe received an unsupported channel."
        )
    );
    let subscribed = command(
        s,
        &thread,
        8,
        "subscription.subscribe",
        json!({"channels": ["values"]}),
    )
    .await;
    assert_eq!(subscribed["type"], "success", "{subscribed}");
    assert_eq!(subscribed["result"]["replayed_events"], 0);
    assert!(subscribed["result"]["subscription_id"].is_string());
    let unknown = command(s, &thread, 9, "run.start", json!({"assistant_id": "nope"})).await;
    assert_eq!(unknown["error"], "unknown_error", "{unknown}");
    assert!(
        unknown["message"]
            .as_str()
            .is_some_and(|m| m.contains("nope")),
        "{unknown}"
    );
    // None of it made a thread.
    s.get_json(&format!("/threads/{thread}"), StatusCode::NOT_FOUND)
        .await;

    // Not a command: 400, with the error envelope when it is JSON.
    let path = format!("/threads/{thread}/commands");
    let answer = s
        .post_json(
            &path,
            json!({"method": "run.start"}),
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert_eq!(
        answer,
        json!({"type": "error", "id": null, "error": "invalid_argument",
               "message": "Protocol commands must include an integer id and string method."})
    );
    let answer = s
        .client
        .post(s.url(&path))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .expect("send");
    let answer = expect_json(answer, StatusCode::BAD_REQUEST).await;
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Invalid JSON body")),
        "{answer}"
    );
    s.post_json(
        "/threads/not-a-uuid/commands",
        json!({"id": 1, "method": "run.start"}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
}

async fn a_run_is_started_interrupted_and_resumed_through_commands(s: &TestServer) {
    let thread = Uuid::new_v4().to_string();
    let input = user_input("hi", json!({"ask_human": true}));
    let started = command(
        s,
        &thread,
        1,
        "run.start",
        json!({"assistant_id": "agent", "input": input}),
    )
    .await;
    assert_eq!(started["type"], "success", "{started}");
    assert_eq!(started["meta"], json!({"applied_through_seq": 0}));
    let first_run = started["result"]["run_id"]
        .as_str()
        .expect("run_id")
        .to_owned();
    let paused = settled(s, &thread).await;
    assert_eq!(paused["status"], "interrupted", "{paused}");
    let interrupt = paused["interrupts"]
        .as_object()
        .and_then(|by_task| by_task.values().next())
        .and_then(|list| list[0]["id"].as_str())
        .expect("an interrupt id")
        .to_owned();

    assert_eq!(
        command(
            s,
            &thread,
            2,
            "input.respond",
            json!({"interrupt_id": "nope", "namespace": [], "response": "yes"})
        )
        .await,
        protocol_error(
            2,
            "no_such_interrupt",
            "Unknown or already-consumed interrupt: nope"
        )
    );
    let responded = command(
        s,
        &thread,
        3,
        "input.respond",
        json!({"interrupt_id": interrupt, "namespace": [], "response": "yes"}),
    )
    .await;
    assert_eq!(
        responded,
        json!({"type": "success", "id": 3, "result": {}, "meta": {"applied_through_seq": 0}})
    );
    let done = settled(s, &thread).await;
    assert_eq!(done["status"], "idle", "{done}");
    assert_eq!(
        done["values"]["messages"],
        json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "echo: hi"},
            {"role": "human", "content": "yes"},
        ])
    );

    // The event stream replays both runs from their start, as the SDK reads them.
    let path = format!("/threads/{thread}/stream/events");
    let response = s
        .post(
            &path,
            json!({"channels": ["values", "updates", "lifecycle", "input"]}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut events: Vec<Event> = Vec::new();
    while let Some(event) = reader.next().await {
        let ends = event.data["method"] == "lifecycle"
            && event.data["params"]["data"]["event"] == "completed";
        events.push(event);
        if ends {
            break;
        }
    }
    drop(reader);
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e.data["seq"].as_u64())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seq rises: {seqs:?}");
    for event in &events {
        assert_eq!(event.data["type"], "event");
        assert_eq!(event.event, event.data["method"].as_str().expect("method"));
        assert_eq!(
            event.id.as_deref(),
            Some(event.data["seq"].to_string().as_str())
        );
        assert!(event.data["event_id"].is_string());
        assert_eq!(event.data["params"]["namespace"], json!([]));
    }
    let lifecycle: Vec<&str> = events
        .iter()
        .filter(|e| e.event == "lifecycle")
        .map(|e| e.data["params"]["data"]["event"].as_str().expect("event"))
        .collect();
    assert_eq!(
        lifecycle,
        ["running", "interrupted", "running", "completed"]
    );
    let requested: Vec<&Event> = events
        .iter()
        .filter(|e| e.event == "input.requested")
        .collect();
    assert_eq!(requested.len(), 1, "{events:?}");
    assert_eq!(
        requested[0].data["params"]["data"],
        json!({"interrupt_id": interrupt, "payload": {"question": "approve?"}})
    );
    let updates: Vec<&str> = events
        .iter()
        .filter(|e| e.event == "updates")
        .map(|e| e.data["params"]["node"].as_str().expect("node"))
        .collect();
    assert_eq!(updates, ["respond", "human"]);
    let last_values = events
        .iter()
        .rev()
        .find(|e| e.event == "values")
        .expect("values");
    assert_eq!(last_values.data["params"]["data"], done["values"]);
    assert!(
        events[0].data["event_id"]
            .as_str()
            .is_some_and(|id| id.starts_with(&first_run)),
        "{:?}",
        events[0]
    );

    // `since` skips what a client has; a narrower filter passes only its channels.
    let since = seqs[2];
    let response = s
        .post(&path, json!({"channels": ["lifecycle"], "since": since}))
        .await;
    let mut reader = SseReader::new(response);
    let mut later = Vec::new();
    while let Some(event) = reader.next().await {
        let ends = event.data["params"]["data"]["event"] == "completed";
        later.push(event);
        if ends {
            break;
        }
    }
    assert!(
        later
            .iter()
            .all(|e| e.event == "lifecycle" && e.data["seq"].as_u64() > Some(since))
    );
    let expected: Vec<u64> = events
        .iter()
        .filter(|e| e.event == "lifecycle" && e.data["seq"].as_u64() > Some(since))
        .filter_map(|e| e.data["seq"].as_u64())
        .collect();
    let got: Vec<u64> = later
        .iter()
        .filter_map(|e| e.data["seq"].as_u64())
        .collect();
    assert_eq!(got, expected, "the same numbering on every connection");
}

async fn the_event_stream_checks_its_subscription(s: &TestServer) {
    let thread = s.thread().await;
    let path = format!("/threads/{thread}/stream/events");
    let answer = s.post_json(&path, json!({}), StatusCode::BAD_REQUEST).await;
    assert_eq!(
        answer["detail"],
        "channels is required and must be a non-empty array"
    );
    let answer = s
        .post_json(
            &path,
            json!({"channels": ["values", "debug"]}),
            StatusCode::BAD_REQUEST,
        )
        .await;
    assert!(
        answer["detail"]
            .as_str()
            .is_some_and(|d| d.contains("debug")),
        "{answer}"
    );
    s.post_json(
        "/threads/x/stream/events",
        json!({"channels": ["values"]}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    // A GET of the path is the WebSocket transport's upgrade; without one it is a 400.
    let answer = s.get_json(&path, StatusCode::BAD_REQUEST).await;
    assert!(answer["detail"].is_string(), "{answer}");
}

async fn a_stream_opened_before_its_thread_waits_for_the_run_that_creates_it(s: &TestServer) {
    // As the reference: no 404 for a thread not created yet (a client opens its stream
    // first, then `run.start` creates the thread); the stream outlives the server's check
    // for a deleted thread, which comes with its heartbeat.
    let thread = Uuid::new_v4().to_string();
    let path = format!("/threads/{thread}/stream/events");
    let response = s
        .post(&path, json!({"channels": ["lifecycle", "values"]}))
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    reader.heartbeat().await;
    let started = command(
        s,
        &thread,
        1,
        "run.start",
        json!({"assistant_id": "agent", "input": user_input("late", json!({}))}),
    )
    .await;
    assert_eq!(started["type"], "success", "{started}");
    let events = until_run_ends(&mut reader).await;
    let values = events
        .iter()
        .rev()
        .find(|e| e.event == "values")
        .expect("values");
    assert_eq!(
        values.data["params"]["data"]["messages"][1]["content"],
        "echo: late"
    );
    // Once the thread that was there is deleted, the stream ends.
    let deleted = s
        .client
        .delete(s.url(&format!("/threads/{thread}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(
        reader.next().await.is_none(),
        "the stream ends with its thread"
    );
}

async fn a_tool_call_in_a_subgraph_shows_on_every_channel(s: &TestServer) {
    let thread = Uuid::new_v4().to_string();
    let input = json!({"messages": [{"type": "human", "content": "rust"}]});
    let started = command(
        s,
        &thread,
        1,
        "run.start",
        json!({"assistant_id": "researcher", "input": input}),
    )
    .await;
    assert_eq!(started["type"], "success", "{started}");
    let path = format!("/threads/{thread}/stream/events");
    let channels = json!([
        "lifecycle",
        "tools",
        "messages",
        "values",
        "checkpoints",
        "tasks"
    ]);
    let mut reader = SseReader::new(s.post(&path, json!({"channels": channels})).await);
    let events = until_run_ends(&mut reader).await;
    drop(reader);
    let ns = |e: &Event| e.data["params"]["namespace"].clone();
    let data = |e: &Event| e.data["params"]["data"].clone();

    // The subgraph's lifecycle: started at its namespace, completed before the root.
    let lifecycle: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e.event == "lifecycle")
        .map(|e| (ns(e), data(e)["event"].clone()))
        .collect();
    let sub = lifecycle[1].0.clone();
    assert!(
        sub.as_array().is_some_and(
            |s| s.len() == 1 && s[0].as_str().is_some_and(|s| s.starts_with("research:"))
        ),
        "{lifecycle:?}"
    );
    assert_eq!(
        lifecycle,
        [
            (json!([]), json!("running")),
            (sub.clone(), json!("started")),
            (sub.clone(), json!("completed")),
            (json!([]), json!("completed")),
        ]
    );
    let opened = events
        .iter()
        .find(|e| e.event == "lifecycle" && ns(e) == sub)
        .expect("started");
    assert_eq!(data(opened)["graph_name"], "research");

    // The tools channel: the call started with its input, finished with the tool message.
    let tools: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "tools")
        .map(data)
        .collect();
    assert_eq!(tools.len(), 2, "{tools:?}");
    let call_id = tools[0]["tool_call_id"].clone();
    assert_eq!(
        tools[0],
        json!({"event": "tool-started", "tool_call_id": call_id, "tool_name": "lookup", "input": {"topic": "rust"}})
    );
    assert_eq!(tools[1]["event"], "tool-finished");
    assert_eq!(tools[1]["output"]["content"], "notes on rust");
    assert!(
        events
            .iter()
            .filter(|e| e.event == "tools")
            .all(|e| ns(e) == sub)
    );
    // It started when the tool node's task did.
    let tool_task = events
        .iter()
        .position(|e| {
            e.event == "tasks" && data(e)["name"] == "tools" && data(e).get("result").is_none()
        })
        .expect("the tool node's task");
    let tool_started = events
        .iter()
        .position(|e| e.event == "tools")
        .expect("tool-started");
    assert_eq!(tool_started, tool_task + 1);

    // The model's tool call as a content block; the tool's answer mirrored as a tool message.
    let finished: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "messages" && data(e)["event"] == "content-block-finish")
        .map(|e| data(e)["content"].clone())
        .collect();
    assert!(
        finished.contains(&json!({"type": "tool_call", "id": call_id, "name": "lookup", "args": {"topic": "rust"}})),
        "{finished:?}"
    );
    assert!(
        finished.contains(&json!({"type": "text", "text": "notes on rust"})),
        "{finished:?}"
    );
    let mirrored = events
        .iter()
        .find(|e| e.event == "messages" && data(e)["role"] == "tool")
        .expect("the tool message");
    let mut under = sub.as_array().cloned().unwrap_or_default();
    under.push(json!(format!(
        "tools:{}",
        call_id.as_str().unwrap_or_default()
    )));
    assert_eq!(ns(mirrored), Value::Array(under));

    // Checkpoints: each with an id, a step and a source; the root's chained by parent.
    let root: Vec<Value> = events
        .iter()
        .filter(|e| e.event == "checkpoints" && ns(e) == json!([]))
        .map(data)
        .collect();
    assert!(root.len() >= 2, "{root:?}");
    assert_eq!(root[0]["source"], "input");
    assert!(root[1..].iter().all(|c| c["source"] == "loop"), "{root:?}");
    for pair in root.windows(2) {
        assert_eq!(pair[1]["parent_id"], pair[0]["id"], "{root:?}");
    }
    assert!(
        events
            .iter()
            .any(|e| e.event == "checkpoints" && ns(e) == sub)
    );

    // Values in the protocol's message shape: no usage or empty kwargs, the call kept.
    let values = events
        .iter()
        .rev()
        .find(|e| e.event == "values" && ns(e) == json!([]))
        .map(data)
        .expect("values");
    let messages = values["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "lookup");
    assert!(
        messages
            .iter()
            .all(|m| m.get("additional_kwargs").is_none() && m.get("usage_metadata").is_none())
    );
    assert_eq!(messages[2]["type"], "tool");
    assert_eq!(messages[2]["status"], "success");

    // A subscription scoped to the subgraph at depth 0 sees only its own lifecycle.
    let scoped =
        json!({"channels": ["lifecycle", "tools"], "namespaces": [["research"]], "depth": 0});
    let mut reader = SseReader::new(s.post(&path, scoped).await);
    let mut inside = Vec::new();
    while inside.len() < 4 {
        inside.push(reader.next().await.expect("an event"));
    }
    assert!(inside.iter().all(|e| ns(e) == sub), "{inside:?}");
    let names: Vec<String> = inside
        .iter()
        .map(|e| {
            format!(
                "{}:{}",
                e.event,
                data(e)["event"].as_str().unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "lifecycle:started",
            "tools:tool-started",
            "tools:tool-finished",
            "lifecycle:completed"
        ]
    );
}

over_each_backend!(
    commands_answer_errors_as_the_reference,
    a_stream_opened_before_its_thread_waits_for_the_run_that_creates_it,
    a_tool_call_in_a_subgraph_shows_on_every_channel,
    a_run_is_started_interrupted_and_resumed_through_commands,
    the_event_stream_checks_its_subscription,
);

#[tokio::test]
async fn features_not_served_are_refused_by_name() {
    let s = TestServer::start().await;
    let cases = [
        ("GET", "/a2a/agent", "A2A"),
        ("POST", "/a2a/agent", "A2A"),
        (
            "GET",
            "/a2a/agent/.well-known/agent-card.json",
            "agent card",
        ),
        ("GET", "/.well-known/agent-card.json", "agent card"),
        ("GET", "/profile", "profiling"),
        ("POST", "/ui/agent", "generative UI"),
    ];
    for (method, path, names) in cases {
        let request = match method {
            "GET" => s.client.get(s.url(path)),
            _ => s.client.post(s.url(path)).json(&json!({})),
        };
        let answer = expect_json(request.send().await.expect("send"), StatusCode::NOT_FOUND).await;
        let detail = answer["detail"].as_str().expect("detail");
        assert!(
            detail.contains(names) && detail.contains("not served by graphkit-server"),
            "{method} {path}: {detail}"
        );
    }
    s.stop().await;
}
