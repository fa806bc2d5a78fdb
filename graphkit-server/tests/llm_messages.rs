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
