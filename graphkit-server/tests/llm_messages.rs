//! graphkit-llm messages in LangChain's shape (values and the messages stream), and
//! subgraph events with their namespace.

use crate::common;

use std::sync::Arc;

use common::{SseReader, TestServer};
use graphkit::{CompiledGraph, END, Error, NodeContext, START, State, StateGraph};
use graphkit_llm::{ChatModel, FunctionModel, Message};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(State, Debug, Clone, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(merge_by_key)]
    #[serde(default)]
    messages: Vec<Message>,
}

fn chat_graph() -> CompiledGraph<Chat> {
    // A test double: a function model that echoes, named as what it is.
    let model = Arc::new(FunctionModel::from_text(|messages| {
        format!(
            "you said {}",
            messages.last().map(Message::text).unwrap_or_default()
        )
    }));
    let mut inner = StateGraph::<Chat>::new();
    inner
        .add_node("note", |_: Arc<Chat>, ctx: NodeContext| async move {
            ctx.writer().custom(json!({"progress": "inside"}));
            Ok::<_, Error>(ChatUpdate::new())
        })
        .add_edge(START, "note")
        .add_edge("note", END);
    let inner = inner.compile().expect("inner graph");
    let mut graph = StateGraph::<Chat>::new();
    graph
        .add_node("chat", move |state: Arc<Chat>| {
            let model = Arc::clone(&model);
            async move {
                let reply = model
                    .invoke(&state.messages)
                    .await
                    .map_err(|e| Error::InvalidRunInput(e.to_string()))?;
                Ok::<_, Error>(ChatUpdate::new().messages(vec![Message::Assistant(reply)]))
            }
        })
        .add_subgraph("inner", inner)
        .add_edge(START, "chat")
        .add_edge("chat", "inner")
        .add_edge("inner", END);
    graph.compile().expect("chat graph")
}

#[tokio::test]
async fn llm_messages_take_langchains_shape_in_and_out() {
    let s =
        TestServer::start_with(|server| server.graph_without_schema("chat", chat_graph())).await;
    let thread = s.thread().await;
    let response = s
        .post(
            &format!("/threads/{thread}/runs/stream"),
            json!({
                "assistant_id": "chat",
                "input": {"messages": [{"type": "human", "content": "hello"}]},
                "stream_mode": ["values", "messages-tuple", "custom", "updates"],
                "stream_subgraphs": true,
            }),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let events = SseReader::new(response).collect().await;

    let values = events
        .iter()
        .rev()
        .find(|e| e.event == "values")
        .expect("values");
    let messages = values.data["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["type"], "human");
    assert_eq!(messages[0]["content"], "hello");
    assert!(
        messages[0]["id"].is_string(),
        "an id was given to the input message"
    );
    assert_eq!(messages[1]["type"], "ai");
    assert_eq!(messages[1]["content"], "you said hello");
    assert_eq!(messages[1]["tool_calls"], json!([]));

    let streamed = events
        .iter()
        .find(|e| e.event == "messages")
        .expect("a messages event");
    assert_eq!(streamed.data[0]["type"], "ai");
    assert_eq!(streamed.data[0]["content"], "you said hello");
    assert_eq!(streamed.data[1]["langgraph_node"], "chat");
    assert_eq!(streamed.data[1]["thread_id"], thread.as_str());

    // The subgraph's events carry its namespace in the event name.
    let custom = events
        .iter()
        .find(|e| e.event.starts_with("custom|"))
        .expect("namespaced custom");
    assert!(custom.event.starts_with("custom|inner"), "{}", custom.event);
    assert_eq!(custom.data, json!({"progress": "inside"}));
    assert!(events.iter().any(|e| e.event.starts_with("updates|inner")));

    // The thread's state shows the same shape.
    let state = s
        .get_json(&format!("/threads/{thread}/state"), StatusCode::OK)
        .await;
    assert_eq!(state["values"]["messages"][1]["type"], "ai");
    s.stop().await;
}

/// The streaming protocol's `messages` channel: the model's reply as one message
/// (`message-start` with its node, its text, `message-finish`), read on
/// `POST /threads/{id}/stream/events` after `run.start`.
#[tokio::test]
async fn the_streaming_protocol_sends_a_models_reply_as_one_message() {
    let s =
        TestServer::start_with(|server| server.graph_without_schema("chat", chat_graph())).await;
    let thread = uuid::Uuid::new_v4();
    let started = s
        .post_json(
            &format!("/threads/{thread}/commands"),
            json!({"id": 1, "method": "run.start", "params": {
                "assistant_id": "chat",
                "input": {"messages": [{"type": "human", "content": "hello"}]},
            }}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(started["type"], "success", "{started}");
    let response = s
        .post(
            &format!("/threads/{thread}/stream/events"),
            json!({"channels": ["messages", "lifecycle"]}),
        )
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let mut messages = Vec::new();
    while let Some(event) = reader.next().await {
        let data = &event.data["params"]["data"];
        if event.event == "lifecycle" && data["event"] == "completed" {
            break;
        }
        if event.event == "messages" {
            assert_eq!(event.data["params"]["namespace"], json!([]));
            messages.push(data.clone());
        }
    }
    let kinds: Vec<&str> = messages
        .iter()
        .map(|m| m["event"].as_str().expect("event"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message-start",
            "content-block-start",
            "content-block-delta",
            "content-block-finish",
            "message-finish"
        ]
    );
    assert_eq!(messages[0]["role"], "ai");
    assert_eq!(messages[0]["metadata"]["langgraph_node"], "chat");
    assert_eq!(
        messages[2]["delta"],
        json!({"type": "text-delta", "text": "you said hello"})
    );
    let id = &messages[0]["id"];
    assert!(id.is_string() && messages.iter().all(|m| &m["id"] == id));
    s.stop().await;
}
