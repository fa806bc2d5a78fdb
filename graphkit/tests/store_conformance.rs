//! The behaviour every `Store` must have, run against each backend: in memory always, SQLite
//! with the `sqlite` feature, PostgreSQL with the `postgres` feature when
//! `GRAPHKIT_TEST_POSTGRES_URL` names a server (otherwise those tests print why they skip).
//!
//! Every test works below a namespace root of its own, so tests sharing a database (in
//! parallel, or in earlier runs) never see each other's items.

use crate::backend_support;

use backend_support::unique;
use graphkit::error::StorageError;
use graphkit::store::{Item, SearchQuery, Store};
use serde_json::{Value, json};

/// `[root, parts...]` as the `&[&str]` the store takes.
fn ns<'a>(root: &'a str, parts: &[&'a str]) -> Vec<&'a str> {
    std::iter::once(root).chain(parts.iter().copied()).collect()
}

fn keys(items: &[Item]) -> Vec<(Vec<String>, String)> {
    items
        .iter()
        .map(|item| (item.namespace[1..].to_vec(), item.key.clone()))
        .collect()
}

fn entry(parts: &[&str], key: &str) -> (Vec<String>, String) {
    (
        parts.iter().map(|p| (*p).to_owned()).collect(),
        key.to_owned(),
    )
}

fn query(filter: Value, limit: Option<usize>, offset: usize) -> SearchQuery {
    SearchQuery {
        filter: filter.as_object().cloned().unwrap_or_default(),
        limit,
        offset,
    }
}

// ---------------------------------------------------------------------------------------
// Behaviours

async fn put_then_get_returns_the_item_and_a_missing_key_is_none(store: &dyn Store) {
    let root = unique("get");
    let value = json!({ "name": "Ada", "langs": ["en", "fr"], "nested": { "n": 1, "null": null } });
    store
        .put(&ns(&root, &["users", "ada"]), "profile", value.clone())
        .await
        .expect("put");

    let item = store
        .get(&ns(&root, &["users", "ada"]), "profile")
        .await
        .expect("get")
        .expect("present");
    assert_eq!(item.namespace, ns(&root, &["users", "ada"]));
    assert_eq!((item.key.as_str(), &item.value), ("profile", &value));
    assert!(item.created_at_ms > 0 && item.updated_at_ms >= item.created_at_ms);

    assert_eq!(
        store
            .get(&ns(&root, &["users", "ada"]), "other")
            .await
            .expect("get"),
        None
    );
    assert_eq!(
        store
            .get(&ns(&root, &["users"]), "profile")
            .await
            .expect("get"),
        None,
        "namespaces are exact"
    );
    assert_eq!(
        store
            .get(&ns(&root, &["users", "ada", "x"]), "profile")
            .await
            .expect("get"),
        None
    );

    for value in [
        json!(null),
        json!(42),
        json!("text with \u{0} and \u{1f}"),
        json!([1, 2]),
        json!(1.5),
    ] {
        store
            .put(&[&root], "scalar", value.clone())
            .await
            .expect("any JSON value is stored");
        assert_eq!(
            store
                .get(&[&root], "scalar")
                .await
                .expect("get")
                .map(|i| i.value),
            Some(value)
        );
    }
}

async fn putting_again_replaces_the_value_and_keeps_created_at(store: &dyn Store) {
    let root = unique("replace");
    store
        .put(&[&root], "k", json!({ "v": 1 }))
        .await
        .expect("put");
    let first = store
        .get(&[&root], "k")
        .await
        .expect("get")
        .expect("present");
    store
        .put(&[&root], "k", json!({ "v": 2 }))
        .await
        .expect("put again");
    let second = store
        .get(&[&root], "k")
        .await
        .expect("get")
        .expect("present");

    assert_eq!(second.value, json!({ "v": 2 }));
    assert_eq!(second.created_at_ms, first.created_at_ms);
    assert!(second.updated_at_ms >= first.updated_at_ms);
    let all = store
        .search(&[&root], &SearchQuery::default())
        .await
        .expect("search");
    assert_eq!(all.len(), 1, "replaced, not added");
}

async fn delete_removes_only_that_item(store: &dyn Store) {
    let root = unique("delete");
    store.put(&[&root, "a"], "k1", json!(1)).await.expect("put");
    store.put(&[&root, "a"], "k2", json!(2)).await.expect("put");
    store.put(&[&root, "b"], "k1", json!(3)).await.expect("put");

    store.delete(&[&root, "a"], "k1").await.expect("delete");
    assert_eq!(store.get(&[&root, "a"], "k1").await.expect("get"), None);
    assert!(store.get(&[&root, "a"], "k2").await.expect("get").is_some());
    assert!(store.get(&[&root, "b"], "k1").await.expect("get").is_some());
    store
        .delete(&[&root, "a"], "k1")
        .await
        .expect("deleting a missing item is fine");
    store
        .delete(&[&root, "nowhere"], "k")
        .await
        .expect("deleting in a missing namespace is fine");
}

async fn search_finds_a_prefix_ordered_by_namespace_then_key(store: &dyn Store) {
    let root = unique("prefix");
    let puts: &[(&[&str], &str)] = &[
        (&["u", "b"], "k"),
        (&["u", "a", "m"], "k"),
        (&["u", "a"], "z"),
        (&["u", "a"], "b"),
        (&["u"], "top"),
        (&["ua"], "k"),          // shares the characters of the prefix, not its parts
        (&["u%"], "k"),          // LIKE wildcards in parts are plain characters
        (&["u_", "x"], "k"),     //
        (&["v", "u"], "k"),      // the prefix elsewhere in the path does not count
        (&["u", "a b"], "k"),    // spaces sort below letters
        (&["u", "\u{e9}"], "k"), // non-ASCII sorts after ASCII
    ];
    for (parts, key) in puts {
        store
            .put(
                &ns(&root, parts),
                key,
                json!({ "at": format!("{parts:?}/{key}") }),
            )
            .await
            .expect("put");
    }

    let under_u = store
        .search(&ns(&root, &["u"]), &query(json!({}), Some(100), 0))
        .await
        .expect("search");
    assert_eq!(
        keys(&under_u),
        [
            entry(&["u"], "top"),
            entry(&["u", "a"], "b"),
            entry(&["u", "a"], "z"),
            entry(&["u", "a", "m"], "k"),
            entry(&["u", "a b"], "k"),
            entry(&["u", "b"], "k"),
            entry(&["u", "\u{e9}"], "k"),
        ]
    );
    let under_ua = store
        .search(&ns(&root, &["u", "a"]), &query(json!({}), Some(100), 0))
        .await
        .expect("search");
    assert_eq!(
        keys(&under_ua),
        [
            entry(&["u", "a"], "b"),
            entry(&["u", "a"], "z"),
            entry(&["u", "a", "m"], "k")
        ]
    );
    let percent = store
        .search(&ns(&root, &["u%"]), &query(json!({}), Some(100), 0))
        .await
        .expect("search");
    assert_eq!(keys(&percent), [entry(&["u%"], "k")]);
    let underscore = store
        .search(&ns(&root, &["u_"]), &query(json!({}), Some(100), 0))
        .await
        .expect("search");
    assert_eq!(keys(&underscore), [entry(&["u_", "x"], "k")]);
    let everything = store
        .search(&[&root], &query(json!({}), Some(100), 0))
        .await
        .expect("search");
    assert_eq!(everything.len(), puts.len());
    assert_eq!(
        store
            .search(&ns(&root, &["w"]), &SearchQuery::default())
            .await
            .expect("search"),
        []
    );

    // The empty prefix searches every namespace (other tests' items too, so only check ours).
    let all = store
        .search(&[], &query(json!({}), Some(usize::MAX), 0))
        .await
        .expect("search everything");
    assert_eq!(
        all.iter().filter(|item| item.namespace[0] == root).count(),
        puts.len()
    );
}

async fn search_filters_on_top_level_equality_with_limit_and_offset(store: &dyn Store) {
    let root = unique("filter");
    for i in 0..12 {
        let kind = if i % 3 == 0 { "note" } else { "task" };
        store
            .put(
                &[&root, "docs"],
                &format!("d{i:02}"),
                json!({ "kind": kind, "i": i }),
            )
            .await
            .expect("put");
    }
    store
        .put(
            &[&root, "docs"],
            "tagged",
            json!({ "kind": "note", "tags": ["a", "b"] }),
        )
        .await
        .expect("put");
    store
        .put(&[&root, "docs"], "scalar", json!("note"))
        .await
        .expect("put");
    store
        .put(
            &[&root, "docs"],
            "nested",
            json!({ "inner": { "kind": "note" } }),
        )
        .await
        .expect("put");
    let prefix = [root.as_str()];
    let search = async |filter: Value, limit: Option<usize>, offset: usize| -> Vec<String> {
        let items = store
            .search(&prefix, &query(filter, limit, offset))
            .await
            .expect("search");
        items.into_iter().map(|item| item.key).collect()
    };

    assert_eq!(
        search(json!({}), None, 0).await.len(),
        10,
        "the default limit is 10"
    );
    assert_eq!(search(json!({}), Some(100), 0).await.len(), 15);
    assert_eq!(search(json!({}), Some(3), 2).await, ["d02", "d03", "d04"]);
    assert_eq!(search(json!({}), Some(100), 14).await, ["tagged"]);
    assert_eq!(search(json!({}), Some(100), 15).await, Vec::<String>::new());

    let notes = ["d00", "d03", "d06", "d09", "tagged"];
    assert_eq!(search(json!({ "kind": "note" }), None, 0).await, notes);
    assert_eq!(
        search(json!({ "kind": "note" }), Some(2), 0).await,
        notes[..2]
    );
    assert_eq!(
        search(json!({ "kind": "note" }), Some(2), 3).await,
        notes[3..]
    );
    assert_eq!(
        search(json!({ "kind": "note" }), Some(10), 5).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(json!({ "kind": "note", "i": 6 }), None, 0).await,
        ["d06"]
    );
    assert_eq!(
        search(json!({ "i": "6" }), None, 0).await,
        Vec::<String>::new(),
        "types must match"
    );
    // Equality, not containment.
    assert_eq!(
        search(json!({ "tags": ["a"] }), None, 0).await,
        Vec::<String>::new()
    );
    assert_eq!(
        search(json!({ "tags": ["a", "b"] }), None, 0).await,
        ["tagged"]
    );
    assert_eq!(
        search(json!({ "missing": null }), None, 0).await,
        Vec::<String>::new()
    );
}

async fn list_namespaces_below_a_prefix_to_a_depth(store: &dyn Store) {
    let root = unique("namespaces");
    for parts in [
        &["a", "x", "1"][..],
        &["a", "x", "2"],
        &["a", "y"],
        &["b"],
        &["a", "x", "1"],
    ] {
        store
            .put(&ns(&root, parts), "k", json!(1))
            .await
            .expect("put");
    }
    store
        .put(&ns(&root, &["a", "x", "1"]), "k2", json!(2))
        .await
        .expect("put");
    let owned = |parts: &[&str]| -> Vec<String> {
        ns(&root, parts).into_iter().map(str::to_owned).collect()
    };

    let all = store.list_namespaces(&[&root], None).await.expect("list");
    assert_eq!(
        all,
        [
            owned(&["a", "x", "1"]),
            owned(&["a", "x", "2"]),
            owned(&["a", "y"]),
            owned(&["b"])
        ]
    );
    let depth_2 = store
        .list_namespaces(&[&root], Some(2))
        .await
        .expect("list");
    assert_eq!(depth_2, [owned(&["a"]), owned(&["b"])]);
    let depth_3 = store
        .list_namespaces(&[&root, "a"], Some(3))
        .await
        .expect("list");
    assert_eq!(depth_3, [owned(&["a", "x"]), owned(&["a", "y"])]);
    let below_x = store
        .list_namespaces(&[&root, "a", "x"], None)
        .await
        .expect("list");
    assert_eq!(below_x, [owned(&["a", "x", "1"]), owned(&["a", "x", "2"])]);
    assert_eq!(
        store
            .list_namespaces(&[&root, "c"], None)
            .await
            .expect("list"),
        Vec::<Vec<String>>::new()
    );

    store.delete(&ns(&root, &["b"]), "k").await.expect("delete");
    let after_delete = store
        .list_namespaces(&[&root], Some(2))
        .await
        .expect("list");
    assert_eq!(
        after_delete,
        [owned(&["a"])],
        "a namespace without items is gone"
    );
}

async fn invalid_namespaces_and_keys_are_refused(store: &dyn Store) {
    let root = unique("invalid");
    let refused = |result: Result<(), StorageError>, what: &str| {
        assert!(
            matches!(result, Err(StorageError::InvalidStoreKey(_))),
            "{what}: {result:?}"
        );
    };
    for key in ["", "tab\there", "new\nline", "unit\u{1f}sep", "nul\0"] {
        refused(
            store.put(&[&root], key, json!(1)).await,
            &format!("put key {key:?}"),
        );
        refused(
            store.get(&[&root], key).await.map(drop),
            &format!("get key {key:?}"),
        );
        refused(
            store.delete(&[&root], key).await,
            &format!("delete key {key:?}"),
        );
    }
    for part in ["", "a\u{1f}b", "line\nbreak"] {
        let bad = [root.as_str(), part];
        refused(
            store.put(&bad, "k", json!(1)).await,
            &format!("put part {part:?}"),
        );
        refused(
            store.get(&bad, "k").await.map(drop),
            &format!("get part {part:?}"),
        );
        refused(
            store.search(&bad, &SearchQuery::default()).await.map(drop),
            &format!("search part {part:?}"),
        );
        refused(
            store.list_namespaces(&bad, None).await.map(drop),
            &format!("list part {part:?}"),
        );
    }
    assert_eq!(
        store
            .search(&[&root], &SearchQuery::default())
            .await
            .expect("search"),
        [],
        "nothing was stored"
    );
}

// ---------------------------------------------------------------------------------------
// Runs

macro_rules! for_each_store {
    ($($behaviour:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    super::$behaviour(&graphkit::store::InMemoryStore::new()).await;
                }
            )*
        }

        #[cfg(feature = "sqlite")]
        mod sqlite {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    let store = graphkit::store::SqliteStore::open(dir.path().join("store.db")).await.expect("open");
                    super::$behaviour(&store).await;
                }
            )*
        }

        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test]
                async fn $behaviour() {
                    let Some(url) = super::backend_support::postgres_url() else { return };
                    let store = graphkit::store::PostgresStore::connect(&url).await.expect("connect");
                    super::$behaviour(&store).await;
                }
            )*
        }
    };
}

for_each_store!(
    put_then_get_returns_the_item_and_a_missing_key_is_none,
    putting_again_replaces_the_value_and_keeps_created_at,
    delete_removes_only_that_item,
    search_finds_a_prefix_ordered_by_namespace_then_key,
    search_filters_on_top_level_equality_with_limit_and_offset,
    list_namespaces_below_a_prefix_to_a_depth,
    invalid_namespaces_and_keys_are_refused,
);

#[cfg(feature = "sqlite")]
mod sqlite_backend {
    use graphkit::checkpoint::{Checkpointer, SqliteSaver};
    use graphkit::store::{SqliteStore, Store};
    use serde_json::json;

    use super::backend_support::unique;

    #[tokio::test]
    async fn reopening_the_file_keeps_items() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("store.db");
        let root = unique("reopen");
        let first = {
            let store = SqliteStore::open(&path).await.expect("open");
            store
                .put(&[&root, "a"], "k", json!({ "v": 1 }))
                .await
                .expect("put");
            let item = store.get(&[&root, "a"], "k").await.expect("get");
            store.pool().close().await;
            item
        };
        let store = SqliteStore::open(&path).await.expect("reopen");
        assert_eq!(store.get(&[&root, "a"], "k").await.expect("get"), first);
    }

    #[tokio::test]
    async fn a_store_and_a_saver_share_one_file() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let saver = SqliteSaver::open(dir.path().join("app.db"))
            .await
            .expect("open the saver");
        let store = SqliteStore::from_pool(saver.pool().clone())
            .await
            .expect("a store on the same pool");
        store.put(&["shared"], "k", json!(true)).await.expect("put");
        assert!(
            saver
                .try_lock_thread("t", "run")
                .await
                .expect("the saver still works")
        );
        let components: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT component FROM graphkit_migrations ORDER BY component",
        )
        .fetch_all(store.pool())
        .await
        .expect("read migrations");
        assert_eq!(components, ["checkpoint", "store"]);
    }

    #[tokio::test]
    async fn an_in_memory_store_works_until_dropped() {
        let store = SqliteStore::in_memory().await.expect("open");
        store.put(&["a"], "k", json!(1)).await.expect("put");
        assert_eq!(
            store.get(&["a"], "k").await.expect("get").map(|i| i.value),
            Some(json!(1))
        );
    }
}
