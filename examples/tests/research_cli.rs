//! The `graphkit-research` CLI as people use it: `--resume` (options, finding the run,
//! what it refuses), run directories and `runs`, Ctrl-C, `--stream`, progress lines, and
//! the per-todo timeout across a kill and a resume.

use std::path::{Path, PathBuf};
use std::process::{Command as Process, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use graphkit::checkpoint::InMemorySaver;
use graphkit::{CompileOptions, RunConfig, RunInput};
use graphkit_examples::entity_intel::{
    AgentDeps, EntitiesResearchDirections, EntityIntelResearchStateUpdate, Limits, RUN_SESSION_KEY,
    TodoBudget, TodoStatus, ToolDeps, build_graph, offline_model, sample_input_path,
};
use graphkit_examples::shared::search;
use graphkit_llm::ChatModel;
use serde_json::Value;

const BUNDLES: [&str; 3] = [
    "guest_mara_lindqvist_001",
    "guest_tobias_achebe_002",
    "guest_ines_okafor_003",
];

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid JSON: {e}", path.display()))
}

/// The CLI, run in `cwd` (so its default root `graphkit-runs/` is inside the test's dir).
fn cli(cwd: &Path, args: &[&str]) -> Process {
    let mut cmd = Process::new(env!("CARGO_BIN_EXE_graphkit-research"));
    cmd.current_dir(cwd).args(args);
    cmd
}

fn run(cmd: &mut Process) -> Output {
    cmd.output().expect("run the CLI")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits (bounded) until `ready` holds: synchronisation with the child, not timing.
fn wait_until(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(300);
    while !ready() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The todo output files written so far under a run directory.
fn todo_files(run: &Path) -> Vec<PathBuf> {
    BUNDLES
        .iter()
        .flat_map(|b| {
            std::fs::read_dir(run.join(b))
                .into_iter()
                .flatten()
                .flatten()
                .map(|f| f.path())
        })
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json") && !p.ends_with("research_complete.json")
        })
        .collect()
}

/// Starts a slow run in `out` and SIGKILLs it once a few todo files exist.
fn killed_run(cwd: &Path, out: &Path, thread: &str, extra: &[&str]) {
    let mut child = cli(
        cwd,
        &["entity-intel", "--quiet", "--offline-delay-ms", "50"],
    )
    .args(["--max-concurrency", "1", "--thread", thread])
    .arg("--out")
    .arg(out)
    .args(extra)
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    wait_until("some todo files", || {
        todo_files(out).len() >= 3 || child.try_wait().ok().flatten().is_some()
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

fn every_todo_done(run: &Path) {
    for bundle in BUNDLES {
        let master = read_json(&run.join(bundle).join("research_complete.json"));
        for todo in master["todoList"]["todos"].as_array().expect("todos") {
            // A todo about which nothing was found (the sample's Tidewell Tracker app) is
            // blocked with that note; every other one is completed.
            let nothing_found = todo["notes"]
                .as_str()
                .is_some_and(|n| n.contains("No source about"));
            let expected = if nothing_found {
                "blocked"
            } else {
                "completed"
            };
            assert_eq!(todo["status"], expected, "{todo}");
        }
    }
}

#[test]
fn an_option_given_on_resume_wins_over_run_json_and_options_left_out_come_from_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let first = run(
        cli(dir.path(), &["entity-intel", "--quiet", "--thread", "opt"])
            .args(["--max-tool-calls-per-todo", "7", "--todo-timeout", "123"])
            .arg("--out")
            .arg(&out),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    // As a run started with a real model records it.
    let mut manifest = read_json(&out.join("run.json"));
    manifest["model"] = "openai:gpt-4o".into();
    manifest["options"]["model"] = "openai:gpt-4o".into();
    std::fs::write(out.join("run.json"), manifest.to_string()).expect("write run.json");

    let resumed = run(cli(dir.path(), &["entity-intel", "--quiet", "--resume"])
        .args([
            "--thread",
            "opt",
            "--model",
            "offline",
            "--max-concurrency",
            "2",
        ])
        .arg("--out")
        .arg(&out)
        .env_remove("OPENAI_API_KEY"));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let manifest = read_json(&out.join("run.json"));
    assert_eq!(manifest["model"], "offline");
    assert_eq!(manifest["options"]["max_concurrency"], 2);
    assert_eq!(manifest["options"]["max_tool_calls_per_todo"], 7);
    assert_eq!(manifest["options"]["todo_timeout"], 123);
    assert_eq!(manifest["status"], "finished");
}

#[test]
fn resume_with_only_the_thread_finds_a_run_started_with_out_and_a_failed_resume_creates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("elsewhere").join("run");
    killed_run(dir.path(), &out, "far", &[]);

    let listed = run(&mut cli(dir.path(), &["runs"]));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains(&format!(
            "resume: graphkit-research entity-intel --resume --thread far --out {}",
            out.display()
        )),
        "{listed}"
    );

    let resumed = run(&mut cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--thread", "far"],
    ));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
    assert!(!dir.path().join("graphkit-runs/entity-intel/far").exists());

    let unknown = run(&mut cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--thread", "nope"],
    ));
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(
        stderr(&unknown).contains("--out DIR") && stderr(&unknown).contains("nope"),
        "{}",
        stderr(&unknown)
    );
    assert!(!dir.path().join("graphkit-runs/entity-intel/nope").exists());
    let wrong_out = dir.path().join("not-a-run");
    let refused = run(cli(dir.path(), &["entity-intel", "--quiet", "--resume"])
        .args(["--thread", "far", "--out"])
        .arg(&wrong_out));
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        !wrong_out.exists(),
        "a failed resume created {}",
        wrong_out.display()
    );
}

#[test]
fn runs_lists_past_runs_with_their_status_and_the_resume_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let done = run(&mut cli(
        dir.path(),
        &["entity-intel", "--quiet", "--thread", "done"],
    ));
    assert!(done.status.success(), "{}", stderr(&done));
    killed_run(
        dir.path(),
        &dir.path().join("graphkit-runs/entity-intel/killed"),
        "killed",
        &[],
    );

    let listed = run(&mut cli(dir.path(), &["runs"]));
    assert!(listed.status.success());
    let text = String::from_utf8_lossy(&listed.stdout);
    let line = |thread: &str| {
        text.lines()
            .find(|l| l.contains(thread) && !l.trim_start().starts_with("resume:"))
            .unwrap_or_else(|| panic!("{thread} not listed:\n{text}"))
            .to_owned()
    };
    assert!(line("done").contains("finished"), "{text}");
    assert!(line("killed").contains("stopped (killed)"), "{text}");
    assert!(
        text.contains("resume: graphkit-research entity-intel --resume --thread killed\n"),
        "{text}"
    );
    assert!(!text.contains("--thread done"), "{text}");
}

#[test]
fn resume_refuses_a_database_sqlite_cannot_use_naming_it_and_does_not_start_afresh() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let first = run(
        cli(dir.path(), &["entity-intel", "--quiet", "--thread", "db"])
            .arg("--out")
            .arg(&out),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    let db = out.join("checkpoints.sqlite");
    let full = std::fs::read(&db).expect("database");
    let resume = || {
        run(cli(
            dir.path(),
            &["entity-intel", "--quiet", "--resume", "--out"],
        )
        .arg(&out))
    };
    let sqlite_files = || {
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .expect("run dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("checkpoints.sqlite"))
            .collect();
        names.sort();
        names
    };

    // Cut in half with no write-ahead log to hold the rest: SQLite finds it malformed.
    std::fs::write(&db, &full[..full.len() / 2]).expect("truncate");
    let truncated = resume();
    assert_eq!(truncated.status.code(), Some(2), "{}", stderr(&truncated));
    assert!(
        stderr(&truncated).contains("SQLite cannot use the checkpoint database")
            && stderr(&truncated).contains("checkpoints.sqlite")
            && stderr(&truncated).contains("malformed")
            && stderr(&truncated).contains(&format!("the file is {} bytes", full.len() / 2)),
        "{}",
        stderr(&truncated)
    );
    assert_eq!(
        sqlite_files(),
        ["checkpoints.sqlite"],
        "the check created or left files"
    );
    assert_eq!(
        std::fs::metadata(&db).map(|m| m.len()).ok(),
        Some(full.len() as u64 / 2)
    );

    std::fs::write(&db, b"").expect("empty");
    let empty = resume();
    assert_eq!(empty.status.code(), Some(2), "{}", stderr(&empty));
    assert!(
        stderr(&empty).contains("checkpoints.sqlite") && stderr(&empty).contains("empty"),
        "{}",
        stderr(&empty)
    );
    assert_eq!(std::fs::metadata(&db).map(|m| m.len()).ok(), Some(0));

    std::fs::remove_file(&db).expect("remove");
    let missing = resume();
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("missing"), "{}", stderr(&missing));
    assert!(!db.exists(), "a failed resume created a fresh database");
}

#[test]
fn resume_refuses_a_database_without_the_thread_or_without_any_checkpoint_and_names_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let other = dir.path().join("other");
    let first = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--thread", "other"],
    )
    .arg("--out")
    .arg(&other));
    assert!(first.status.success(), "{}", stderr(&first));

    let out = dir.path().join("killed");
    killed_after_lines(dir.path(), &out, "wal", 5);
    let foreign = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out)
    .arg("--checkpoint")
    .arg(format!(
        "sqlite:{}",
        other.join("checkpoints.sqlite").display()
    )));
    assert_eq!(foreign.status.code(), Some(2), "{}", stderr(&foreign));
    assert!(
        stderr(&foreign).contains("no checkpoints of thread wal"),
        "{}",
        stderr(&foreign)
    );

    // A killed run whose log SQLite never copied into the file, the log deleted: the file
    // holds no tables, and the refusal names the log that held them.
    let wal = out.join("checkpoints.sqlite-wal");
    assert!(wal.exists(), "a killed run leaves its write-ahead log");
    std::fs::remove_file(&wal).expect("remove the WAL");
    let _ = std::fs::remove_file(out.join("checkpoints.sqlite-shm"));
    let no_wal = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert_eq!(no_wal.status.code(), Some(2), "{}", stderr(&no_wal));
    assert!(
        stderr(&no_wal).contains("no graphkit checkpoint tables")
            && stderr(&no_wal).contains("checkpoints.sqlite-wal"),
        "{}",
        stderr(&no_wal)
    );
}

/// Starts a slow run in `out` and SIGKILLs it once it has printed `lines` JSON lines
/// (`--stream`): synchronised on the child's output.
fn killed_after_lines(cwd: &Path, out: &Path, thread: &str, lines: usize) {
    use std::io::BufRead;
    let mut child = cli(
        cwd,
        &[
            "entity-intel",
            "--quiet",
            "--stream",
            "--offline-delay-ms",
            "20",
        ],
    )
    .args(["--max-concurrency", "1", "--thread", thread])
    .arg("--out")
    .arg(out)
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let printed = std::io::BufReader::new(stdout)
        .lines()
        .take(lines)
        .map_while(Result::ok)
        .count();
    assert_eq!(printed, lines, "the run ended before {lines} lines");
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    assert!(
        out.join("checkpoints.sqlite-wal").exists(),
        "a killed run leaves its write-ahead log"
    );
}

/// What `database` holds beside its header (its pages, per its header, and its length).
fn header_pages(database: &Path) -> (u64, u64) {
    let bytes = std::fs::read(database).expect("database");
    let page_size = match u16::from_be_bytes([bytes[16], bytes[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(u32::from_be_bytes([
        bytes[28], bytes[29], bytes[30], bytes[31],
    ]));
    (page_size * pages, bytes.len() as u64)
}

/// Leaves `database` as a checkpoint cut short by a full disk leaves it: SQLite copies the
/// write-ahead log's pages into the file in page order, page 1 (with the header counting
/// every page) first, and the file cannot grow for the rest; the log keeps them all.
/// Page 1 as the log last committed it is written over the file's page 1; the file keeps
/// its length, and the log is left as it is.
fn cut_short_checkpoint(database: &Path) {
    let wal_path = PathBuf::from(format!("{}-wal", database.display()));
    let wal = std::fs::read(&wal_path).expect("the write-ahead log");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let page_size = be(&wal[8..12]) as usize;
    let salts = &wal[16..24];
    let (mut page_one, mut committed) = (None, None);
    let mut frame = 32;
    while frame + 24 + page_size <= wal.len() && &wal[frame + 8..frame + 16] == salts {
        if be(&wal[frame..frame + 4]) == 1 {
            page_one = Some(frame + 24);
        }
        if be(&wal[frame + 4..frame + 8]) != 0 {
            committed = page_one;
        }
        frame += 24 + page_size;
    }
    let page = committed.expect("a committed page 1 in the log");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(database)
        .expect("database");
    use std::io::Write;
    file.write_all(&wal[page..page + page_size])
        .expect("page 1");
}

#[test]
fn resume_after_a_full_disk_continues_from_the_write_ahead_log_as_it_shows_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("full");
    killed_after_lines(dir.path(), &out, "full", 12);
    let db = out.join("checkpoints.sqlite");
    cut_short_checkpoint(&db);
    let (counted, len) = header_pages(&db);
    assert!(
        len < counted,
        "the file is shorter than its header says ({len} < {counted}), as after a full disk"
    );
    assert_eq!(read_json(&out.join("run.json"))["status"], "running");

    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
    assert_eq!(read_json(&out.join("run.json"))["status"], "finished");
}

/// `unshare` can give this test a mount namespace (as root, or through a user namespace)
/// in which to mount a small tmpfs; `Err(why)` when it cannot (a container without the
/// permission, no `unshare`).
fn can_mount_a_small_tmpfs(scratch: &Path) -> Result<(), String> {
    let probe = Process::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg("mount -t tmpfs -o size=64k tmpfs \"$1\"")
        .arg("sh")
        .arg(scratch)
        .output()
        .map_err(|e| format!("unshare: {e}"))?;
    if probe.status.success() {
        Ok(())
    } else {
        Err(format!(
            "unshare --user --map-root-user --mount cannot mount a tmpfs here: {}",
            String::from_utf8_lossy(&probe.stderr).trim()
        ))
    }
}

#[test]
fn resume_after_a_real_full_disk_continues_from_the_write_ahead_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).expect("mount point");
    if let Err(why) = can_mount_a_small_tmpfs(&mount) {
        eprintln!(
            "skipped: {why} (the simulated full disk of resume_after_a_full_disk_continues_from_the_write_ahead_log_as_it_shows_on_disk still runs)"
        );
        return;
    }
    // In a mount namespace of its own: a 600 kB tmpfs that the run fills (its checkpoints
    // need more), then the run folder copied out as a user would after freeing space.
    let copy = dir.path().join("copied");
    std::fs::create_dir(&copy).expect("copy dir");
    let script = r#"mount -t tmpfs -o size=600k tmpfs "$1" || exit 90
"$3" entity-intel --quiet --max-concurrency 1 --thread full --out "$1/run" 2>"$2/stderr.txt"
echo $? > "$2/status.txt"
cp -a "$1/run" "$2/run""#;
    let ran = Process::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&mount)
        .arg(&copy)
        .arg(env!("CARGO_BIN_EXE_graphkit-research"))
        .output()
        .expect("unshare");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let failed = std::fs::read_to_string(copy.join("stderr.txt")).unwrap_or_default();
    let status = std::fs::read_to_string(copy.join("status.txt")).unwrap_or_default();
    assert_eq!(
        status.trim(),
        "1",
        "the run fails on the full disk: {failed}"
    );
    assert!(failed.contains("No space left on device"), "{failed}");
    let out = copy.join("run");
    let db = out.join("checkpoints.sqlite");
    let (counted, len) = header_pages(&db);
    assert!(
        len < counted && out.join("checkpoints.sqlite-wal").exists(),
        "the full disk cut SQLite's checkpoint short ({len} of {counted} bytes, the rest in the log)"
    );
    assert_eq!(
        read_json(&out.join("run.json"))["status"],
        "running",
        "run.json could not be rewritten on the full disk"
    );

    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
}

#[test]
fn resume_after_another_program_read_the_database_of_a_killed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("read");
    killed_after_lines(dir.path(), &out, "read", 12);
    // What `sqlite3 checkpoints.sqlite "select count(*) ..."` does: open, read, close; the
    // last connection to close copies the log into the file and removes it.
    let db = out.join("checkpoints.sqlite");
    {
        let conn = rusqlite::Connection::open(&db).expect("open");
        let count: i64 = conn
            .query_row("SELECT count(*) FROM graphkit_checkpoints", [], |r| {
                r.get(0)
            })
            .expect("count");
        assert!(count > 0);
    }
    assert!(
        !out.join("checkpoints.sqlite-wal").exists(),
        "the log was folded in"
    );
    assert_eq!(read_json(&out.join("run.json"))["status"], "running");

    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
}

#[test]
fn resume_after_run_json_could_not_be_rewritten_at_the_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("stale");
    let first = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--thread", "stale"],
    )
    .arg("--out")
    .arg(&out));
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        !out.join("checkpoints.sqlite-wal").exists(),
        "closed cleanly"
    );
    // What a failed final rewrite leaves: run.json as the start wrote it (atomic writes
    // keep the old content).
    let mut manifest = read_json(&out.join("run.json"));
    manifest["status"] = "running".into();
    std::fs::write(out.join("run.json"), manifest.to_string()).expect("run.json");

    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
    assert_eq!(read_json(&out.join("run.json"))["status"], "finished");
}

#[test]
fn a_moved_run_folder_resumes_from_its_own_database_and_writes_into_its_new_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = dir.path().join("before");
    killed_run(dir.path(), &before, "moved", &[]);
    assert_eq!(
        read_json(&before.join("run.json"))["checkpoint"],
        "sqlite:checkpoints.sqlite",
        "run.json stores the database relative to the run folder"
    );
    let after = dir.path().join("after");
    std::fs::rename(&before, &after).expect("move the run folder");

    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&after));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(!before.exists(), "the resume wrote into the old place");
    every_todo_done(&after);
    let summary = read_json(&after.join("run_summary.json"));
    assert!(
        summary["bundles"]
            .as_array()
            .expect("bundles")
            .iter()
            .any(|b| b["resumed"] == true),
        "{summary}"
    );
}

#[cfg(feature = "postgres")]
#[test]
fn a_postgres_run_resumes_from_postgres() {
    let Ok(url) = std::env::var("GRAPHKIT_TEST_POSTGRES_URL") else {
        eprintln!(
            "skipped: set GRAPHKIT_TEST_POSTGRES_URL (postgres://postgres@127.0.0.1:5432/test) to run this test"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("pg");
    let thread = format!(
        "pg-{}-{}",
        std::process::id(),
        graphkit_examples::shared::time::now_ms()
    );
    let checkpoint = format!("postgres:{url}");
    killed_run(dir.path(), &out, &thread, &["--checkpoint", &checkpoint]);
    assert!(
        read_json(&out.join("run.json"))["checkpoint"]
            .as_str()
            .is_some_and(|c| c.starts_with("postgres:")),
    );
    let resumed = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--resume", "--out"],
    )
    .arg(&out));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
    assert!(
        !out.join("checkpoints.sqlite").exists(),
        "the resume used SQLite instead of the run's PostgreSQL"
    );
}

#[test]
fn ctrl_c_checkpoints_exits_non_zero_and_prints_the_exact_resume_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sigint");
    let child = cli(
        dir.path(),
        &["entity-intel", "--quiet", "--offline-delay-ms", "100"],
    )
    .args(["--max-concurrency", "1", "--thread", "sigint", "--out"])
    .arg(&out)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn");
    wait_until("some todo files", || todo_files(&out).len() >= 3);
    let sent = Process::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(sent.success());
    let stopped = child.wait_with_output().expect("wait");
    let text = stderr(&stopped);
    assert_eq!(stopped.status.code(), Some(130), "{text}");
    let command = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("graphkit-research entity-intel --resume"))
        .unwrap_or_else(|| panic!("no resume command in:\n{text}"));
    assert_eq!(
        command,
        format!(
            "graphkit-research entity-intel --resume --thread sigint --out {}",
            out.display()
        )
    );
    assert_eq!(read_json(&out.join("run.json"))["status"], "interrupted");

    // The printed command, plus an option given now (it wins over run.json's delay).
    let args: Vec<&str> = command.split(' ').skip(1).collect();
    let resumed = run(cli(dir.path(), &args).args(["--offline-delay-ms", "0"]));
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    every_todo_done(&out);
}

#[test]
fn stream_prints_only_json_lines_with_plain_values_on_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(cli(
        dir.path(),
        &["entity-intel", "--quiet", "--stream", "--out"],
    )
    .arg(dir.path().join("run")));
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let updates: Vec<&Value> = lines.iter().filter(|l| l["type"] == "update").collect();
    assert!(!updates.is_empty());
    for update in &updates {
        if let Some(messages) = update["update"].get("messages") {
            assert!(messages.is_array(), "messages as a list: {update}");
        }
        if let Some(outputs) = update["update"].get("research_outputs") {
            assert!(outputs.is_array(), "{update}");
        }
    }
    assert!(
        updates
            .iter()
            .any(|u| u["update"]["todo_list"]["todos"].is_array()),
        "the todo list as a list of todos"
    );
    assert!(
        stderr(&out).contains("todos completed"),
        "the summary goes to stderr"
    );
    let last = lines.last().expect("lines");
    assert_eq!(last["type"], "summary", "{last}");
    assert_eq!(last["summary"]["bundles"].as_array().map(Vec::len), Some(3));
}

#[test]
fn without_a_terminal_progress_is_plain_lines_naming_the_current_todo() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(cli(dir.path(), &["entity-intel", "--out"]).arg(dir.path().join("run")));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(!text.contains('\u{1b}'), "no terminal escapes: {text}");
    assert!(
        text.contains("[guest_mara_lindqvist_001] working on guest_mara_lindqvist_001_"),
        "{text}"
    );
    assert!(text.contains("todos done"), "{text}");
}

fn sample() -> EntitiesResearchDirections {
    EntitiesResearchDirections::from_file(&sample_input_path()).expect("the sample input parses")
}

#[test]
fn todo_budget_counts_time_within_a_session_only() {
    let mut budget = TodoBudget::default();
    budget.tick("a", 1_000);
    budget.tick("a", 1_400);
    assert_eq!(budget.worked_ms, 400);
    // Down for an hour, then resumed by another session: the gap does not count.
    budget.tick("b", 3_601_400);
    budget.tick("b", 3_601_500);
    assert_eq!(budget.worked_ms, 500);
}

/// The todo in progress when the run stops is finished after a pause longer than the
/// per-todo timeout: the pause is time down, not time worked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_todo_interrupted_and_resumed_after_longer_than_its_timeout_still_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = sample();
    let bundle = &input.bundles[1];
    let model: Arc<dyn ChatModel> = Arc::new(offline_model());
    let limits = Limits {
        todo_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let graph = build_graph(
        AgentDeps {
            model: Arc::clone(&model),
            tool_specs: vec![],
            limits: limits.clone(),
        },
        &ToolDeps {
            search: search::corpus(&search::default_corpus_dir()).expect("corpus"),
            summary_model: model,
            summarize_after_messages: limits.summarize_after_messages,
            web: None,
            outputs: graphkit_examples::entity_intel::OutputFolder::FromState,
        },
        CompileOptions::new().checkpointer(Arc::new(InMemorySaver::new())),
    )
    .expect("graph");
    let config = |session: &str| {
        RunConfig::new()
            .thread_id("pause")
            .recursion_limit(1000)
            .with_value(RUN_SESSION_KEY, session)
    };
    // First session: stops before the tools of the first turn, with a todo in progress.
    let _ = graph
        .invoke_with(
            EntityIntelResearchStateUpdate::new()
                .research_directions(input.single_bundle(bundle))
                .output_directory(dir.path().display().to_string()),
            config("first").interrupt_before(["tools"]),
        )
        .await;
    let paused = graph.get_state(&config("first")).await.expect("state");
    let in_progress = paused
        .values
        .current_todo_id
        .clone()
        .expect("a todo in progress");

    // Down for longer than the timeout (the pause is what is under test).
    tokio::time::sleep(limits.todo_timeout + Duration::from_millis(500)).await;

    let done = graph
        .invoke_with(RunInput::Continue, config("second"))
        .await
        .expect("resumed run")
        .into_state();
    let todo = done.todo_list.get(&in_progress).expect("the todo");
    assert_eq!(todo.status, TodoStatus::Completed, "{todo:?}");
    assert_eq!(done.todo_list.count(TodoStatus::Blocked), 0);
}

/// A model server on 127.0.0.1 that answers every request with HTTP 429 (as a provider
/// over its rate limit does). Returns its base URL; it serves until the test process ends.
fn rate_limited_model_server() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0usize;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let reply = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    url
}

#[test]
fn a_run_whose_model_calls_all_fail_exits_non_zero_and_says_why_in_the_todos_and_on_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("limited");
    let model = format!(
        "openai-compatible:{}#rate-limited",
        rate_limited_model_server()
    );
    let ran = run(cli(
        dir.path(),
        &[
            "entity-intel",
            "--quiet",
            "--thread",
            "limited",
            "--model",
            &model,
        ],
    )
    .arg("--out")
    .arg(&out)
    // One attempt per call: the test is about what a run does once retries are spent.
    .env("GRAPHKIT_MODEL_RETRIES", "0"));
    let text = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{text}");
    assert!(
        text.contains("error: every model call failed")
            && text.contains("HTTP 429")
            && text.contains("Rate limit reached"),
        "{text}"
    );
    assert_eq!(read_json(&out.join("run.json"))["status"], "failed");
    for bundle in BUNDLES {
        let master = read_json(&out.join(bundle).join("research_complete.json"));
        for todo in master["todoList"]["todos"].as_array().expect("todos") {
            let notes = todo["notes"].as_str().unwrap_or("");
            assert!(
                notes.contains("every model call failed") && notes.contains("HTTP 429"),
                "{todo}"
            );
            assert!(!notes.contains("without calling a tool"), "{todo}");
        }
    }
}

#[test]
fn a_required_todo_left_blocked_exits_non_zero_naming_it_and_still_writes_every_artifact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("strict");
    // One tool call per todo: the offline agent's research needs more, so its todos block.
    let ran = run(cli(
        dir.path(),
        &[
            "entity-intel",
            "--quiet",
            "--thread",
            "strict",
            "--max-tool-calls-per-todo",
            "1",
        ],
    )
    .arg("--out")
    .arg(&out));
    let text = stderr(&ran);
    assert_eq!(ran.status.code(), Some(1), "{text}");
    assert!(
        text.contains("required todo(s) were not completed") && text.contains("(blocked"),
        "{text}"
    );
    assert_eq!(read_json(&out.join("run.json"))["status"], "failed");
    let summary = read_json(&out.join("run_summary.json"));
    let mut named = 0;
    for bundle in BUNDLES {
        let master = read_json(&out.join(bundle).join("research_complete.json"));
        let todos = master["todoList"]["todos"].as_array().expect("todos");
        let entry = summary["bundles"]
            .as_array()
            .expect("bundles")
            .iter()
            .find(|b| b["bundleId"] == bundle)
            .expect("bundle in summary");
        let unmet = entry["requiredNotCompleted"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for todo in todos {
            let required_and_open = todo["optional"] != true && todo["status"] != "completed";
            let id = todo["id"].as_str().expect("id");
            assert_eq!(
                unmet
                    .iter()
                    .any(|u| u.as_str().is_some_and(|u| u.starts_with(id))),
                required_and_open,
                "{todo}"
            );
            if required_and_open {
                assert!(text.contains(id), "{id} not named: {text}");
                named += 1;
            }
        }
    }
    assert!(named > 0, "no required todo blocked: {text}");
}
