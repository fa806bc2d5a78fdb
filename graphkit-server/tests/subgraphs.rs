//! `GET /assistants/{id}/subgraphs[/{namespace}]?recurse=`: each subgraph's schemas by
//! namespace, as the reference answers them.

use std::sync::Arc;

use graphkit::{CompiledGraph, END, START, StateGraph};
use graphkit_server::demo::{AgentState, AgentStateUpdate};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::common::{TestServer, expect_json};

/// A state with no JSON Schema of its own.
#[derive(graphkit::State, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Tally {
    #[serde(default)]
    n: i64,
}

fn tally_graph() -> CompiledGraph<Tally> {
    let mut graph = StateGraph::<Tally>::new();
    graph
        .add_node("count", |_: Arc<Tally>| async { TallyUpdate::new().n(1) })
        .add_edge(START, "count")
        .add_edge("count", END);
    graph.compile().expect("tally")
}

/// `outer` (AgentState) runs `inner` (same state), which runs `deep` (Tally, schema
/// unknown); `outer` also runs `scored` (Tally, with a schema given).
fn nested_graph(scored_schema: &Value) -> CompiledGraph<AgentState> {
    let mut inner = StateGraph::<AgentState>::new();
    inner
        .add_subgraph_mapped(
            "deep",
            tally_graph(),
            |_| TallyUpdate::new(),
            |_| AgentStateUpdate::new(),
        )
        .add_edge(START, "deep")
        .add_edge("deep", END);
    let mut outer = StateGraph::<AgentState>::new();
    outer
        .add_subgraph("inner", inner.compile().expect("inner"))
        .add_subgraph_mapped(
            "scored",
            tally_graph().with_state_schema(scored_schema.clone()),
            |_| TallyUpdate::new(),
            |_| AgentStateUpdate::new(),
        )
        .add_edge(START, "inner")
        .add_edge("inner", "scored")
        .add_edge("scored", END);
    outer.compile().expect("outer")
}

fn schemas(state: &Value) -> Value {
    json!({
        "input_schema": state,
        "output_schema": state,
        "state_schema": state,
        "config_schema": null,
        "context_schema": null,
    })
}

#[tokio::test]
async fn subgraphs_are_answered_by_namespace_with_their_schemas() {
    let scored = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let graph = nested_graph(&scored);
    let s = TestServer::start_with(|server| server.graph("nested", graph)).await;
    let agent_schema = s
        .get_json("/assistants/nested/schemas", StatusCode::OK)
        .await["state_schema"]
        .clone();
    assert_eq!(agent_schema["title"], "AgentState");

    let direct = s
        .get_json("/assistants/nested/subgraphs", StatusCode::OK)
        .await;
    assert_eq!(
        direct,
        json!({"inner": schemas(&agent_schema), "scored": schemas(&scored)})
    );
    let all = s
        .get_json("/assistants/nested/subgraphs?recurse=true", StatusCode::OK)
        .await;
    assert_eq!(
        all,
        json!({
            "inner": schemas(&agent_schema),
            "inner|deep": schemas(&Value::Null),
            "scored": schemas(&scored),
        })
    );
    let one = s
        .get_json("/assistants/nested/subgraphs/scored", StatusCode::OK)
        .await;
    assert_eq!(one, json!({"scored": schemas(&scored)}));
    let deep = s
        .get_json("/assistants/nested/subgraphs/inner%7Cdeep", StatusCode::OK)
        .await;
    assert_eq!(deep, json!({"inner|deep": schemas(&Value::Null)}));
    // As the reference: a namespace that is no subgraph, and a graph without any, list none.
    for path in [
        "/assistants/nested/subgraphs/nope",
        "/assistants/agent/subgraphs",
        "/assistants/agent/subgraphs?recurse=true",
        "/assistants/agent/subgraphs/respond",
    ] {
        assert_eq!(s.get_json(path, StatusCode::OK).await, json!({}), "{path}");
    }
    let refused = expect_json(
        s.get("/assistants/nested/subgraphs?recurse=maybe").await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(
        refused["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("recurse"),
        "{refused}"
    );
    s.stop().await;
}
