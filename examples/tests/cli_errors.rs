//! The CLI's errors say what was expected and exit with a code that tells bad usage from
//! a failure elsewhere (issue 18, items 6 and 7).

use std::path::Path;
use std::process::{Command, Output};

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .arg("entity-intel")
        .args(args)
        .arg("--out")
        .arg(dir.join("run"))
        .arg("--quiet")
        .output()
        .expect("run the CLI")
}

#[test]
fn input_that_is_not_an_object_with_bundles_says_what_was_expected() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, text, found) in [
        ("open.json", "{", "ends too early"),
        ("list.json", "[]", "found a list"),
        ("number.json", "42", "found a number"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        let out = run(dir.path(), &["--input", path.to_str().expect("utf-8")]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.contains("an object with `bundles`"),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(found), "{name}: {stderr}");
        assert!(!stderr.contains("invalid type"), "{name}: {stderr}");
    }
}

#[test]
fn an_endless_input_file_is_refused_at_the_size_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(dir.path(), &["--input", "/dev/zero"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("larger than 16 MiB"), "{stderr}");
}

#[cfg(feature = "postgres")]
#[test]
fn an_unreachable_checkpoint_database_is_a_failure_not_bad_usage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        &["--checkpoint", "postgres://postgres@127.0.0.1:1/test"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.to_lowercase().contains("refused"), "{stderr}");
}

#[cfg(not(feature = "postgres"))]
#[test]
fn a_postgres_checkpoint_without_the_feature_says_how_to_rebuild() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        dir.path(),
        &["--checkpoint", "postgres://postgres@127.0.0.1:1/test"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--features postgres"), "{stderr}");
}

/// A reader that has gone (`… --print-input-schema | head`, the pipe closed before the
/// CLI writes) ends the program quietly with exit 0, not with a panic.
#[test]
fn printing_into_a_closed_pipe_ends_quietly() {
    for args in [
        &["entity-intel", "--print-input-schema"][..],
        &["arxiv-research", "--print-graph"][..],
        &["runs"][..],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        // Closed before the CLI starts, so its first write meets a broken pipe.
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run the CLI");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}
