//! Assistants, threads, state, history, copy and the store, over real HTTP.

use crate::common;

use common::{TestServer, expect_json, user_input};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn health_info_and_the_system_assistant() {
    let s = TestServer::start().await;
    assert_eq!(s.get_json("/ok", StatusCode::OK).await, json!({"ok": true}));
    let info = s.get_json("/info", StatusCode::OK).await;
    assert_eq!(info["graphs"], json!(["agent"]));

    let found = s
        .post_json("/assistants/search", json!({}), StatusCode::OK)
        .await;
    let list = found.as_array().expect("list");
    assert_eq!(list.len(), 1);
    assert_eq!(
        list[0]["assistant_id"],
        "fe096781-5601-53d2-b2f6-0d3403f7e9ca"
    );
    assert_eq!(list[0]["graph_id"], "agent");
    assert_eq!(list[0]["metadata"], json!({"created_by": "system"}));
    let by_graph = s
        .post_json(
            "/assistants/search",
            json!({"graph_id": "other"}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(by_graph, json!([]));
    assert_eq!(
        s.post_json("/assistants/count", json!({}), StatusCode::OK)
            .await,
        json!(1)
    );

    let one = s
        .get_json(
            "/assistants/fe096781-5601-53d2-b2f6-0d3403f7e9ca",
            StatusCode::OK,
        )
        .await;
    assert_eq!(one["name"], "agent");
    // The graph id works too.
    assert_eq!(s.get_json("/assistants/agent", StatusCode::OK).await, one);
    let missing = s.get_json("/assistants/nope", StatusCode::NOT_FOUND).await;
    assert!(missing["detail"].as_str().expect("detail").contains("nope"));

    let graph = s.get_json("/assistants/agent/graph", StatusCode::OK).await;
    let ids: Vec<&str> = graph["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["__start__", "respond", "human", "__end__"]);
    let edges = graph["edges"].as_array().expect("edges");
    assert!(edges.contains(&json!({"source": "__start__", "target": "respond"})));
    assert!(edges.contains(&json!({"source": "respond", "target": "human", "conditional": true})));

    let schemas = s
        .get_json("/assistants/agent/schemas", StatusCode::OK)
        .await;
    assert_eq!(schemas["graph_id"], "agent");
    assert!(schemas["state_schema"]["properties"]["messages"].is_object());
    s.stop().await;
}

#[tokio::test]
async fn thread_create_get_patch_search_count_delete() {
    let s = TestServer::start().await;
    let created = s
        .post_json(
            "/threads",
            json!({"metadata": {"owner": "ada", "tier": {"level": 2, "x": 1}}}),
            StatusCode::OK,
        )
        .await;
    let id = created["thread_id"].as_str().expect("id").to_owned();
    assert_eq!(id.len(), 36);
    assert_eq!(created["status"], "idle");
    assert_eq!(created["values"], Value::Null);
    assert!(
        created["created_at"]
            .as_str()
            .expect("time")
            .ends_with("+00:00")
    );

    let other = s
        .post_json(
            "/threads",
            json!({"metadata": {"owner": "bob"}}),
            StatusCode::OK,
        )
        .await;
    let got = s.get_json(&format!("/threads/{id}"), StatusCode::OK).await;
    assert_eq!(got["metadata"]["owner"], "ada");

    // Patch merges the metadata.
    let patched = expect_json(
        s.client
            .patch(s.url(&format!("/threads/{id}")))
            .json(&json!({"metadata": {"color": "red"}}))
            .send()
            .await
            .expect("patch"),
        StatusCode::OK,
    )
    .await;
    assert_eq!(patched["metadata"]["owner"], "ada");
    assert_eq!(patched["metadata"]["color"], "red");
    let minimal = s
        .client
        .patch(s.url(&format!("/threads/{id}")))
        .header("prefer", "return=minimal")
        .json(&json!({"metadata": {"color": "blue"}}))
        .send()
        .await
        .expect("patch");
    assert_eq!(minimal.status(), StatusCode::NO_CONTENT);

    // Search by metadata containment (nested too); count.
    let found = s
        .post_json(
            "/threads/search",
            json!({"metadata": {"tier": {"level": 2}}}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(found.as_array().expect("list").len(), 1);
    assert_eq!(found[0]["thread_id"], id.as_str());
    let all = s
        .post_json("/threads/search", json!({"limit": 1}), StatusCode::OK)
        .await;
    assert_eq!(all.as_array().expect("list").len(), 1);
    // Newest first by default.
    assert_eq!(all[0]["thread_id"], other["thread_id"]);
    assert_eq!(
        s.post_json("/threads/count", json!({}), StatusCode::OK)
            .await,
        json!(2)
    );
    assert_eq!(
        s.post_json(
            "/threads/count",
            json!({"metadata": {"owner": "bob"}}),
            StatusCode::OK
        )
        .await,
        json!(1)
    );
    assert_eq!(
        s.post_json("/threads/count", json!({"status": "busy"}), StatusCode::OK)
            .await,
        json!(0)
    );

    // An existing id: 409, or the existing thread with if_exists=do_nothing.
    let conflict = s
        .post_json("/threads", json!({"thread_id": id}), StatusCode::CONFLICT)
        .await;
    assert!(conflict["detail"].is_string());
    let same = s
        .post_json(
            "/threads",
            json!({"thread_id": id, "if_exists": "do_nothing"}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(same["metadata"]["owner"], "ada");

    let deleted = s
        .client
        .delete(s.url(&format!("/threads/{id}")))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert_eq!(deleted.text().await.expect("body"), "");
    s.get_json(&format!("/threads/{id}"), StatusCode::NOT_FOUND)
        .await;
    let bad = s
        .get_json("/threads/not-a-uuid", StatusCode::UNPROCESSABLE_ENTITY)
        .await;
    assert_eq!(bad["detail"], "Invalid thread ID: must be a UUID");
    s.stop().await;
}

#[tokio::test]
async fn state_history_update_state_and_copy() {
    let s = TestServer::start().await;
    let id = s.thread().await;
    let empty = s
        .get_json(&format!("/threads/{id}/state"), StatusCode::OK)
        .await;
    assert_eq!(empty["values"], json!({}));
    assert_eq!(empty["next"], json!([]));

    for text in ["one", "two"] {
        s.post_json(
            &format!("/threads/{id}/runs/wait"),
            json!({"assistant_id": "agent", "input": user_input(text, json!({}))}),
            StatusCode::OK,
        )
        .await;
    }
    let state = s
        .get_json(&format!("/threads/{id}/state"), StatusCode::OK)
        .await;
    assert_eq!(
        state["values"]["messages"]
            .as_array()
            .expect("messages")
            .len(),
        4
    );
    assert_eq!(
        state["values"]["messages"][3],
        json!({"role": "assistant", "content": "echo: two"})
    );
    assert_eq!(state["next"], json!([]));
    assert_eq!(state["checkpoint"]["thread_id"], id.as_str());
    let checkpoint_id = state["checkpoint"]["checkpoint_id"]
        .as_str()
        .expect("id")
        .to_owned();
    assert_eq!(state["checkpoint_id"], checkpoint_id.as_str());
    assert!(state["created_at"].is_string());
    assert!(state["parent_checkpoint"]["checkpoint_id"].is_string());
    assert!(state["metadata"]["run_id"].is_string());
    assert_eq!(state["metadata"]["graph_id"], "agent");

    // History: newest first, chained by parent, limit honoured.
    let history = s
        .post_json(
            &format!("/threads/{id}/history"),
            json!({"limit": 10}),
            StatusCode::OK,
        )
        .await;
    let history = history.as_array().expect("list");
    assert!(
        history.len() >= 4,
        "two one-node runs write at least 4 checkpoints"
    );
    assert_eq!(
        history[0]["checkpoint"]["checkpoint_id"],
        checkpoint_id.as_str()
    );
    for pair in history.windows(2) {
        assert_eq!(
            pair[0]["parent_checkpoint"]["checkpoint_id"],
            pair[1]["checkpoint"]["checkpoint_id"]
        );
    }
    let two = s
        .post_json(
            &format!("/threads/{id}/history"),
            json!({"limit": 2}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(two.as_array().expect("list").len(), 2);
    let via_get = s
        .get_json(&format!("/threads/{id}/history?limit=3"), StatusCode::OK)
        .await;
    assert_eq!(via_get.as_array().expect("list").len(), 3);

    // The state at an older checkpoint, by path and by body.
    let older = history[2]["checkpoint"]["checkpoint_id"]
        .as_str()
        .expect("id");
    let at = s
        .get_json(&format!("/threads/{id}/state/{older}"), StatusCode::OK)
        .await;
    assert_eq!(at["checkpoint"]["checkpoint_id"], older);
    let at_body = s
        .post_json(
            &format!("/threads/{id}/state/checkpoint"),
            json!({"checkpoint": {"checkpoint_id": older}}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(at_body["values"], at["values"]);
    s.get_json(
        &format!("/threads/{id}/state/ffffffffffffffffffffffffffffffff"),
        StatusCode::NOT_FOUND,
    )
    .await;

    // update_state: the append reducer applies; the thread's values follow.
    let written = s
        .post_json(
            &format!("/threads/{id}/state"),
            json!({"values": {"messages": [{"role": "user", "content": "added"}]}, "as_node": "respond"}),
            StatusCode::OK,
        )
        .await;
    let new_checkpoint = written["checkpoint"]["checkpoint_id"].as_str().expect("id");
    let state = s
        .get_json(&format!("/threads/{id}/state"), StatusCode::OK)
        .await;
    assert_eq!(state["checkpoint"]["checkpoint_id"], new_checkpoint);
    assert_eq!(
        state["values"]["messages"]
            .as_array()
            .expect("messages")
            .len(),
        5
    );
    let thread = s.get_json(&format!("/threads/{id}"), StatusCode::OK).await;
    assert_eq!(thread["values"]["messages"][4]["content"], "added");
    s.post_json(
        &format!("/threads/{id}/state"),
        json!({"values": {"nope": 1}}),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;

    // Copy: a new thread with the same state and history.
    let copy = s
        .post_json(&format!("/threads/{id}/copy"), json!({}), StatusCode::OK)
        .await;
    let copy_id = copy["thread_id"].as_str().expect("id");
    assert_ne!(copy_id, id);
    let copied = s
        .get_json(&format!("/threads/{copy_id}/state"), StatusCode::OK)
        .await;
    assert_eq!(copied["values"], state["values"]);
    let copied_history = s
        .post_json(
            &format!("/threads/{copy_id}/history"),
            json!({"limit": 100}),
            StatusCode::OK,
        )
        .await;
    let original_history = s
        .post_json(
            &format!("/threads/{id}/history"),
            json!({"limit": 100}),
            StatusCode::OK,
        )
        .await;
    assert_eq!(
        copied_history.as_array().map(Vec::len),
        original_history.as_array().map(Vec::len)
    );
    s.stop().await;
}

#[tokio::test]
async fn store_items_search_namespaces_and_delete() {
    let s = TestServer::start().await;
    let put = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["users", "ada"], "key": "prefs", "value": {"theme": "dark", "n": 1}}))
        .send()
        .await
        .expect("put");
    assert_eq!(put.status(), StatusCode::NO_CONTENT);
    let put2 = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["users", "bob"], "key": "prefs", "value": {"theme": "light"}}))
        .send()
        .await
        .expect("put");
    assert_eq!(put2.status(), StatusCode::NO_CONTENT);

    let item = s
        .get_json("/store/items?namespace=users.ada&key=prefs", StatusCode::OK)
        .await;
    assert_eq!(item["value"], json!({"theme": "dark", "n": 1}));
    assert_eq!(item["namespace"], json!(["users", "ada"]));
    assert!(
        item["created_at"]
            .as_str()
            .expect("time")
            .ends_with("+00:00")
    );
    let missing = s
        .get_json("/store/items?namespace=users.ada&key=nope", StatusCode::OK)
        .await;
    assert_eq!(missing, Value::Null);

    let found = s
        .post_json(
            "/store/items/search",
            json!({"namespace_prefix": ["users"], "filter": {"theme": "light"}}),
            StatusCode::OK,
        )
        .await;
    let items = found["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["namespace"], json!(["users", "bob"]));
    let namespaces = s
        .post_json(
            "/store/namespaces",
            json!({"prefix": ["users"]}),
            StatusCode::OK,
        )
        .await;
    let mut list: Vec<Value> = namespaces["namespaces"].as_array().expect("list").clone();
    list.sort_by_key(|v| v.to_string());
    assert_eq!(list, [json!(["users", "ada"]), json!(["users", "bob"])]);

    let deleted = s
        .client
        .delete(s.url("/store/items"))
        .json(&json!({"namespace": ["users", "ada"], "key": "prefs"}))
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = s
        .get_json("/store/items?namespace=users.ada&key=prefs", StatusCode::OK)
        .await;
    assert_eq!(gone, Value::Null);
    // A value that is not an object is refused.
    let bad = s
        .client
        .put(s.url("/store/items"))
        .json(&json!({"namespace": ["x"], "key": "k", "value": 3}))
        .send()
        .await
        .expect("put");
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    s.stop().await;
}
