//! `graphkit-research biography-events` as a process: the default run, SIGKILL in the
//! middle and `--resume`, and bad input on the command line.

#![allow(clippy::unwrap_used)] // tests: a failed unwrap is a failed test

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn cli(run_dir: &Path, thread: &str, extra: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_graphkit-research"));
    cmd.args([
        "biography-events",
        "--offline-delay-ms",
        "30",
        "--thread",
        thread,
    ])
    .arg("--out")
    .arg(run_dir)
    .args(extra);
    cmd
}

fn events(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(run_dir.join("events.json")).expect("events.json"),
    )
    .expect("JSON")
}

#[test]
fn killed_mid_run_resumes_and_ends_with_the_events_of_an_uninterrupted_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = dir.path().join("reference");
    let out = cli(&reference, "ref", &["--quiet"])
        .output()
        .expect("reference run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for file in [
        "events.json",
        "history.json",
        "run_summary.json",
        "timeline.md",
    ] {
        assert!(reference.join(file).exists(), "{file} missing");
    }

    // Start a run and SIGKILL it once its second tool call is reported on stderr.
    let run = dir.path().join("killed");
    let mut child = cli(&run, "kill", &[])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("stderr line");
        let second_call = line.starts_with("[tool call 2]");
        seen.push(line);
        if second_call {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l.starts_with("[tool call 2]")),
        "{seen:#?}"
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(
        !run.join("events.json").exists(),
        "the run finished before the kill"
    );

    let out = cli(&run, "kill", &["--resume"]).output().expect("resume");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("resuming from the last checkpoint"),
        "{stderr}"
    );
    // The first two tool calls were not made again.
    assert!(!stderr.contains("[tool call 1]"), "{stderr}");
    assert_eq!(events(&run), events(&reference));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run_summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["toolCalls"], 4);
}

#[test]
fn bad_input_on_the_command_line_gets_a_clear_error_and_exit_code_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = cli(&dir.path().join("a"), "a", &["  "])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the person to research is empty"));

    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"id": "1", "name": "Birth", "description": "", "date": {"year": 1902, "month": 13}}]"#,
    )
    .unwrap();
    let out = cli(
        &dir.path().join("b"),
        "b",
        &["--initial-events", bad.to_str().unwrap()],
    )
    .output()
    .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("month 13 is not a month"), "{stderr}");

    std::fs::write(&bad, "not json").unwrap();
    let out = cli(
        &dir.path().join("c"),
        "c",
        &["--initial-events", bad.to_str().unwrap()],
    )
    .output()
    .expect("run");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
}

#[test]
fn resume_takes_the_options_left_out_from_run_json_and_records_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let out = cli(&run, "opts", &["--quiet", "--max-tool-calls", "2"])
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["workflow"], "biography-events");
    assert_eq!(manifest["status"], "finished");
    assert_eq!(manifest["options"]["max_tool_calls"], 2);
    assert_eq!(manifest["options"]["search"], "corpus");
    assert_eq!(manifest["input"]["person"], "Odile Marchetti");

    // --resume without the options: the person and the knobs come from run.json.
    let out = cli(&run, "opts", &["--quiet", "--resume"])
        .output()
        .expect("resume");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("for Odile Marchetti"), "{stdout}");
    assert!(stdout.contains("2 tool calls"), "{stdout}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
    assert_eq!(manifest["options"]["max_tool_calls"], 2);
    assert_eq!(manifest["status"], "finished");
}
