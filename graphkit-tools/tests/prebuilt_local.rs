//! Offline prebuilt tools: sandboxed files, the todo list, think, the local search corpus.

use std::sync::Arc;

use graphkit_tools::prebuilt::search::{LocalCorpus, SearchBackend, search_tools};
use graphkit_tools::prebuilt::todo::{TodoChange, plan_changes};
use graphkit_tools::{
    AgentState, Priority, SandboxedFs, ThinkTool, TodoItem, TodoList, TodoStatus, Tool, ToolError,
    ToolOutput, ToolRuntime, todo_tools,
};
use serde_json::json;

fn rt() -> ToolRuntime<AgentState> {
    ToolRuntime::detached(AgentState::default(), "call_1", "t")
}

fn text(out: ToolOutput<AgentState>) -> String {
    match out {
        ToolOutput::Content(t) => t,
        other => panic!("expected content, got {other:?}"),
    }
}

fn find<'a>(
    tools: &'a [graphkit_tools::DynTool<AgentState>],
    name: &str,
) -> &'a dyn Tool<AgentState> {
    tools
        .iter()
        .find(|t| t.name() == name)
        .map(|t| &**t)
        .expect("tool exists")
}

#[tokio::test]
async fn sandbox_refuses_parent_dirs_absolute_paths_and_symlink_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let fs = SandboxedFs::new(dir.path().join("ws")).unwrap();

    let err = fs.read("../secret.txt", 0).await.unwrap_err();
    assert!(err.to_string().contains("`..` is not allowed"), "{err}");
    let err = fs.write("a/../../x", "x", false).await.unwrap_err();
    assert!(err.to_string().contains("`..` is not allowed"), "{err}");
    let abs = outside.path().join("secret.txt").display().to_string();
    let err = fs.read(&abs, 0).await.unwrap_err();
    assert!(
        err.to_string().contains("absolute paths are not allowed"),
        "{err}"
    );

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(outside.path(), fs.root().join("link")).unwrap();
        let err = fs.read("link/secret.txt", 0).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("goes through a symbolic link, and links are never followed"),
            "{err}"
        );
        let err = fs.write("link/new.txt", "x", false).await.unwrap_err();
        assert!(matches!(err, ToolError::PathRefused { .. }), "{err}");
        assert!(!outside.path().join("new.txt").exists());
        // a dangling link that would create a file outside
        std::os::unix::fs::symlink(outside.path().join("made.txt"), fs.root().join("dangling"))
            .unwrap();
        let err = fs.write("dangling", "x", false).await.unwrap_err();
        assert!(matches!(err, ToolError::PathRefused { .. }), "{err}");
        assert!(!outside.path().join("made.txt").exists());
        // a link is never followed, even one that stays inside
        std::fs::create_dir(fs.root().join("real")).unwrap();
        std::os::unix::fs::symlink(fs.root().join("real"), fs.root().join("alias")).unwrap();
        let err = fs.write("alias/ok.txt", "ok", false).await.unwrap_err();
        assert!(matches!(err, ToolError::PathRefused { .. }), "{err}");
        assert!(!fs.root().join("real/ok.txt").exists());
    }
}

#[tokio::test]
async fn sandbox_tools_write_read_and_list() {
    let dir = tempfile::tempdir().unwrap();
    let tools = SandboxedFs::new(dir.path()).unwrap().tools::<AgentState>();
    let out = find(&tools, "write_file")
        .call(json!({"path": "notes/a.md", "content": "hello"}), rt())
        .await
        .unwrap();
    assert_eq!(text(out), "Wrote 5 bytes to notes/a.md");
    find(&tools, "write_file")
        .call(
            json!({"path": "notes/a.md", "content": " world", "append": true}),
            rt(),
        )
        .await
        .unwrap();
    let out = find(&tools, "read_file")
        .call(json!({"path": "notes/a.md"}), rt())
        .await
        .unwrap();
    assert_eq!(text(out), "hello world");
    let out = find(&tools, "list_files")
        .call(json!({"recursive": true}), rt())
        .await
        .unwrap();
    assert_eq!(text(out), "notes/\nnotes/a.md");
    let err = find(&tools, "read_file")
        .call(json!({"file": "notes/a.md"}), rt())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    let err = find(&tools, "read_file")
        .call(json!({"path": "missing.md"}), rt())
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with("cannot read `missing.md`"),
        "{err}"
    );
}

#[tokio::test]
async fn huge_files_are_read_in_chunks_and_huge_writes_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fs = SandboxedFs::new(dir.path())
        .unwrap()
        .max_read_bytes(1024)
        .max_write_bytes(4096);
    std::fs::write(fs.root().join("big.txt"), "x".repeat(3000)).unwrap();
    let first = fs.read("big.txt", 0).await.unwrap();
    assert!(first.starts_with(&"x".repeat(1024)));
    assert!(
        first.contains(
            "[truncated: showed bytes 0..1024 of 3000; call read_file with offset=1024 to continue]"
        ),
        "{first}"
    );
    let last = fs.read("big.txt", 2048).await.unwrap();
    assert_eq!(last, "x".repeat(952));
    let err = fs.read("big.txt", 5000).await.unwrap_err();
    assert!(err.to_string().contains("past the end"), "{err}");
    let err = fs
        .write("huge.txt", &"y".repeat(5000), false)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ToolError::TooLarge {
                size: 5000,
                limit: 4096,
                ..
            }
        ),
        "{err}"
    );
    assert!(!fs.root().join("huge.txt").exists());
}

fn item(id: &str, priority: Priority, status: TodoStatus) -> TodoItem {
    TodoItem {
        id: id.into(),
        description: id.into(),
        priority,
        status,
        notes: String::new(),
        created_at: 0,
        updated_at: 0,
    }
}

#[test]
fn todo_next_takes_the_highest_priority_open_item_in_progress_first() {
    let list = TodoList {
        items: vec![
            item("a", Priority::Low, TodoStatus::Pending),
            item("b", Priority::High, TodoStatus::Done),
            item("c", Priority::Medium, TodoStatus::Pending),
            item("d", Priority::Medium, TodoStatus::InProgress),
        ],
    };
    assert_eq!(list.next().map(|i| i.id.as_str()), Some("d"));
    let done = TodoList {
        items: vec![item("x", Priority::High, TodoStatus::Cancelled)],
    };
    assert!(done.next().is_none());
}

#[tokio::test]
async fn todo_tools_read_with_a_filter_update_and_refuse_unknown_ids() {
    let tools = todo_tools::<AgentState>();
    let state = AgentState {
        todos: TodoList {
            items: vec![
                item("t1", Priority::High, TodoStatus::Pending),
                item("t2", Priority::Low, TodoStatus::Done),
            ],
        },
        ..AgentState::default()
    };
    let rt = ToolRuntime::detached(state, "c", "todo");
    let out = find(&tools, "todo_read")
        .call(json!({"status": "done"}), rt.clone())
        .await
        .unwrap();
    assert_eq!(text(out), "[t2] (low, done) t2");
    let out = find(&tools, "todo_next")
        .call(json!({}), rt.clone())
        .await
        .unwrap();
    assert_eq!(text(out), "[t1] (high, pending) t1");
    let out = find(&tools, "todo_update")
        .call(
            json!({"items": [{"id": "t1", "status": "in_progress", "notes": "started"}]}),
            rt.clone(),
        )
        .await
        .unwrap();
    match out {
        ToolOutput::Update { update, reply } => {
            assert!(
                reply.contains("[t1] (high, in_progress) t1 — started"),
                "{reply}"
            );
            let mut state = rt.state().clone();
            graphkit::State::apply_update(&mut state, update).unwrap();
            assert_eq!(state.todos.items[0].status, TodoStatus::InProgress);
            assert_eq!(state.todos.items.len(), 2);
        }
        other => panic!("expected an update, got {other:?}"),
    }
    let err = find(&tools, "todo_update")
        .call(
            json!({"items": [{"id": "nope", "status": "done"}]}),
            rt.clone(),
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("no todo with id `nope` (known ids: t1, t2)"),
        "{err}"
    );
    let err = find(&tools, "todo_update")
        .call(json!({"items": [{"priority": "urgent"}]}), rt.clone())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    let err = plan_changes(
        &TodoList::default(),
        vec![TodoChange {
            id: None,
            description: None,
            priority: None,
            status: None,
            notes: None,
        }],
        0,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("needs a non-empty `description`"),
        "{err}"
    );
}

#[tokio::test]
async fn think_echoes_the_thought_and_rejects_missing_arguments() {
    let out = Tool::<AgentState>::call(&ThinkTool, json!({"thought": "check units"}), rt())
        .await
        .unwrap();
    assert_eq!(text(out), "check units");
    let err = Tool::<AgentState>::call(&ThinkTool, json!({}), rt())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing field `thought`"), "{err}");
}

#[tokio::test]
async fn local_corpus_ranks_with_bm25_and_extracts_by_url() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rust.md"),
        "# Rust\nRust is a systems language. Rust has ownership and borrowing.",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("python.md"),
        "# Python\nPython is a scripting language with a garbage collector.",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("web")).unwrap();
    std::fs::write(
        dir.path().join("web/borrow.html"),
        "<html><head><title>Borrowing</title></head><body><h1>Borrow checker</h1><p>The borrow checker enforces ownership rules in Rust.</p></body></html>",
    )
    .unwrap();
    std::fs::write(dir.path().join("ignored.bin"), [0u8, 1, 2]).unwrap();
    let corpus = LocalCorpus::open(dir.path()).unwrap();
    assert_eq!(corpus.len(), 3);

    let hits = corpus.search("rust ownership", 5).await.unwrap();
    let urls: Vec<&str> = hits.iter().map(|h| h.url.as_str()).collect();
    assert_eq!(urls, ["corpus://rust.md", "corpus://web/borrow.html"]);
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits[1].title, "Borrowing");
    assert!(corpus.search("haskell", 5).await.unwrap().is_empty());

    let pages = corpus
        .extract(&["corpus://web/borrow.html".into(), "missing.md".into()])
        .await
        .unwrap();
    assert_eq!(pages.len(), 1);
    assert!(
        pages[0]
            .content
            .contains("The borrow checker enforces ownership"),
        "{}",
        pages[0].content
    );
    assert!(!pages[0].content.contains("<p>"));

    let tools = search_tools::<AgentState>(Arc::new(corpus));
    let out = find(&tools, "web_search")
        .call(json!({"query": "garbage collector"}), rt())
        .await
        .unwrap();
    assert!(text(out).starts_with("1. Python\n   corpus://python.md"));
    let err = find(&tools, "web_search")
        .call(json!({"query": "  "}), rt())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`query` is empty"), "{err}");
    let err = find(&tools, "web_extract")
        .call(json!({"urls": ["corpus://nope.md"]}), rt())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("none of these URLs could be extracted"),
        "{err}"
    );
}
