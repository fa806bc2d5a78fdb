//! What the compiler says about the mistakes a newcomer makes in a graph's code.
//!
//! Each `tests/ui/<case>.rs` is type-checked by `rustc` against the graphkit build this
//! test binary sits beside, and must fail with exactly the diagnostics written in
//! `tests/ui/<case>.stderr`: each error with its code, message and label, then its notes and
//! help, without file positions or code excerpts (they change with every unrelated edit).
//! A person reads those files: they are what a user sees. `GRAPHKIT_BLESS=1` rewrites them
//! from the compiler's output; review the diff before committing it.
//!
//! `docs/node-errors.md` shows the same cases as a guide.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The directory of this test binary, where cargo put every dependency's build too.
fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    exe.parent()
        .expect("the test binary sits in target/<profile>/deps")
        .to_path_buf()
}

/// The build of crate `name` this test binary was linked with: the newest rlib in `deps`
/// that is not newer than the binary itself (cargo keeps one file per feature set, and a
/// build running beside this test may write newer ones).
fn linked_build(deps: &Path, name: &str) -> PathBuf {
    let modified = |path: &Path| {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH)
    };
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let linked_at = modified(&exe);
    let prefix = format!("lib{name}-");
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(deps)
        .expect("the deps directory is readable")
        .flatten()
    {
        let file = entry.file_name().to_string_lossy().into_owned();
        if !file.starts_with(&prefix) || !file.ends_with(".rlib") {
            continue;
        }
        let path = entry.path();
        let at = modified(&path);
        if at <= linked_at && best.as_ref().is_none_or(|(b, _)| at > *b) {
            best = Some((at, path));
        }
    }
    match best {
        Some((_, path)) => path,
        None => panic!("no build of `{name}` in {}", deps.display()),
    }
}

/// The diagnostics of one `rustc --error-format=json` run, as the `.stderr` files hold them.
fn render(json_lines: &str) -> String {
    let mut out = String::new();
    for line in json_lines.lines() {
        let Ok(diagnostic) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let level = diagnostic["level"].as_str().unwrap_or("");
        let message = diagnostic["message"].as_str().unwrap_or("");
        if level != "error" || message.starts_with("aborting due to") {
            continue;
        }
        let code = diagnostic["code"]["code"]
            .as_str()
            .map(|c| format!("[{c}]"))
            .unwrap_or_default();
        let _ = writeln!(out, "error{code}: {message}");
        for span in diagnostic["spans"].as_array().into_iter().flatten() {
            if span["is_primary"].as_bool() == Some(true)
                && let Some(label) = span["label"].as_str()
            {
                let _ = writeln!(out, "  label: {label}");
            }
        }
        for child in diagnostic["children"].as_array().into_iter().flatten() {
            let level = child["level"].as_str().unwrap_or("note");
            let message = child["message"].as_str().unwrap_or("");
            // Where rustc wrote a long type name: a temporary path, different every run.
            if message.starts_with("the full name for the type has been written to")
                || message.starts_with("consider using `--verbose`")
            {
                continue;
            }
            let _ = writeln!(out, "  = {level}: {message}");
        }
        out.push('\n');
    }
    out
}

fn check(case: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui");
    let source = root.join(format!("{case}.rs"));
    let expected_path = root.join(format!("{case}.stderr"));
    let deps = deps_dir();
    let out_dir = tempfile::tempdir().expect("a temporary directory");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "lib",
            "--emit",
            "metadata",
        ])
        .args(["--error-format", "json", "-A", "warnings", "--crate-name"])
        .arg(format!("ui_{case}"))
        .arg("--out-dir")
        .arg(out_dir.path())
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!(
            "graphkit={}",
            linked_build(&deps, "graphkit").display()
        ))
        .arg("--extern")
        .arg(format!("serde={}", linked_build(&deps, "serde").display()))
        .arg(source.file_name().expect("a case file"))
        .current_dir(&root)
        .output()
        .expect("rustc runs (set RUSTC to its path if it is not on PATH)");
    assert!(
        !output.status.success(),
        "{case}.rs compiled, but it is a mistake the compiler must refuse"
    );
    let actual = render(&String::from_utf8_lossy(&output.stderr));
    assert!(
        !actual.is_empty(),
        "rustc failed without a diagnostic for {case}.rs:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    if std::env::var_os("GRAPHKIT_BLESS").is_some() {
        std::fs::write(&expected_path, &actual).expect("the expected file is writable");
        return;
    }
    let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
    assert!(
        expected == actual,
        "the compiler's diagnostics for tests/ui/{case}.rs changed.\n--- expected ({}):\n{expected}\n--- actual:\n{actual}\n\
         If the new text is right, run with GRAPHKIT_BLESS=1 and review the diff.",
        expected_path.display()
    );
}

macro_rules! cases {
    ($($case:ident),* $(,)?) => {$(
        #[test]
        fn $case() {
            check(stringify!($case));
        }
    )*};
}

cases!(
    node_borrows_state,
    node_returns_string,
    node_unknown_argument,
    node_five_arguments,
    node_plain_fn_not_wrapped,
    node_future_not_send,
    node_returns_other_states_update,
    node_returns_command_of_other_state,
    node_error_type_not_an_error,
    sync_node_returns_number,
    router_returns_number,
    edge_from_number,
    add_reducer_on_string,
    merge_by_key_without_key,
    merge_by_on_non_list,
    graph_of_non_state,
    run_context_not_send,
    input_not_deserializable,
    node_reads_context_of_context_free_graph,
    node_reads_context_not_provided,
    provides_field_not_arc,
);
