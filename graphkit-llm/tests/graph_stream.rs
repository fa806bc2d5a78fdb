//! Models called inside graphkit nodes: tokens reach the run's `messages` stream tagged
//! with the node name, and replies merge into a `messages` field by id.

use std::sync::Arc;

use futures::StreamExt;
use graphkit::{START, State, StateGraph, StreamMode, StreamPayload};
use graphkit_llm::{AssistantMessage, ChatModel, Message, MessageStreamEvent, ScriptedModel};
use serde::{Deserialize, Serialize};

#[derive(State, Clone, Debug, Default, Serialize, Deserialize)]
struct Chat {
    #[reducer(merge_by_key)]
    messages: Vec<Message>,
}

#[tokio::test]
async fn streamed_tokens_arrive_tagged_with_the_node_name() {
    let model = ScriptedModel::new(["The answer is 42."]);
    let mut graph = StateGraph::<Chat>::new();
    graph
        .add_node("agent", move |state: Arc<Chat>| {
            let model = model.clone();
            async move {
                let stream = model.stream(&state.messages).await?;
                let reply = stream.final_message().await?;
                Ok::<_, graphkit_llm::LlmError>(
                    ChatUpdate::new().messages(vec![Message::from(reply)]),
                )
            }
        })
        .add_edge(START, "agent");
    let graph = graph.compile().expect("graph");

    let question = Message::user("What is the answer?");
    let mut run = graph.stream(
        ChatUpdate::new().messages(vec![question.clone()]),
        StreamMode::Messages,
    );
    let mut tokens = String::new();
    let mut ids = Vec::new();
    while let Some(event) = run.next().await {
        let event = event.expect("event");
        let StreamPayload::Messages { node, payload } = event.payload else {
            panic!("only messages were asked for");
        };
        assert_eq!(&*node, "agent");
        assert!(event.namespace.is_empty(), "root graph");
        match MessageStreamEvent::from_value(payload) {
            Some(MessageStreamEvent::Chunk { message_id, chunk }) => {
                tokens.push_str(&chunk.content);
                ids.push(message_id);
            }
            other => panic!("expected a chunk, got {other:?}"),
        }
    }
    assert_eq!(tokens, "The answer is 42.");
    assert!(ids.len() > 1, "several chunks, not one blob");
    let state = run.final_state().expect("final state");
    assert_eq!(state.messages.len(), 2);
    assert_eq!(state.messages[0], question);
    assert!(
        ids.iter().all(|id| id == state.messages[1].id()),
        "chunks carry the final message's id"
    );
}

#[tokio::test]
async fn invoke_inside_a_node_emits_the_whole_message_once() {
    let model = ScriptedModel::new([AssistantMessage::text("done")]);
    let mut graph = StateGraph::<Chat>::new();
    graph
        .add_node("summarize", move |state: Arc<Chat>| {
            let model = model.clone();
            async move {
                let reply = model.invoke(&state.messages).await?;
                Ok::<_, graphkit_llm::LlmError>(
                    ChatUpdate::new().messages(vec![Message::from(reply)]),
                )
            }
        })
        .add_edge(START, "summarize");
    let events: Vec<_> = graph
        .compile()
        .expect("graph")
        .stream(
            ChatUpdate::new().messages(vec![Message::user("hi")]),
            StreamMode::Messages,
        )
        .map(|e| e.expect("event"))
        .collect()
        .await;
    assert_eq!(events.len(), 1);
    let StreamPayload::Messages { node, payload } = &events[0].payload else {
        panic!("messages mode")
    };
    assert_eq!(&**node, "summarize");
    assert!(
        matches!(MessageStreamEvent::from_value(payload.clone()), Some(MessageStreamEvent::Message { message }) if message.content == "done")
    );
}

#[tokio::test]
async fn outside_a_graph_streaming_forwards_nothing_and_still_works() {
    let model = ScriptedModel::new(["plain"]);
    let reply = model
        .stream(&[Message::user("x")])
        .await
        .expect("stream")
        .final_message()
        .await
        .expect("message");
    assert_eq!(reply.content, "plain");
}

#[tokio::test]
async fn a_same_state_subgraph_s_model_call_is_streamed_once() {
    async fn summarize(
        state: Arc<Chat>,
        model: graphkit::RunContext<ScriptedModel>,
    ) -> Result<ChatUpdate, graphkit_llm::LlmError> {
        let reply = model.stream(&state.messages).await?.final_message().await?;
        Ok(ChatUpdate::new().messages(vec![Message::from(reply)]))
    }
    let mut child = StateGraph::<Chat, ScriptedModel>::new();
    child
        .add_node("summarize", summarize)
        .add_edge(START, "summarize");
    let mut parent = StateGraph::<Chat>::new();
    parent
        .add_subgraph("child", child.compile().expect("child"))
        .add_edge(START, "child");
    let graph = parent
        .compile()
        .expect("parent")
        .with_context(ScriptedModel::new([
            AssistantMessage::text("done"),
            AssistantMessage::text("done"),
        ]));
    for subgraphs in [false, true] {
        let config = graphkit::RunConfig::new().subgraphs(subgraphs);
        let input = ChatUpdate::new().messages(vec![Message::user("hi")]);
        let events: Vec<_> = graph
            .stream_with(input, config, StreamMode::Messages)
            .map(|e| e.expect("event"))
            .collect()
            .await;
        let text: String = events
            .iter()
            .filter_map(|e| match &e.payload {
                StreamPayload::Messages { payload, .. } => {
                    match MessageStreamEvent::from_value(payload.clone()) {
                        Some(MessageStreamEvent::Chunk { chunk, .. }) => Some(chunk.content),
                        _ => None,
                    }
                }
                _ => None,
            })
            .collect();
        assert_eq!(text, "done", "subgraphs {subgraphs}: {events:#?}");
    }
}
