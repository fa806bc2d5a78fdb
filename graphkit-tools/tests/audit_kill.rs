//! `AuditLog` under real SIGKILLs: a child process (this test binary, run again as
//! [`child_appends_until_killed`]) appends large events to a trail, and the test kills it
//! at varied points — before a write, in the middle of one, between two — synchronising
//! only on lines the child prints. After every kill the trail reads: each event is whole,
//! in order, and a torn last line is skipped; the next child reopens the trail and goes on
//! after it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use graphkit_tools::AuditLog;
use serde_json::{Value, json};

/// The environment variable that turns [`child_appends_until_killed`] on: the trail's path.
const CHILD_TRAIL: &str = "GRAPHKIT_AUDIT_KILL_CHILD_TRAIL";
/// The padding of each event: large enough that writing one line takes a while, so a kill
/// sent when the file starts growing lands in the middle of the write.
const PADDING: usize = 4 << 20;

/// Where the test kills the child, relative to its `n`-th append of the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillAt {
    /// Once it says it is about to append (the event is being serialized).
    Before(u32),
    /// Once it says the file is growing: in the middle of the line's write.
    MidWrite(u32),
    /// Once it says the append returned (synced).
    After(u32),
}

/// Not a test on its own: the child process of
/// [`sigkill_at_varied_points_never_leaves_a_trail_that_cannot_be_read`] (does nothing
/// unless [`CHILD_TRAIL`] is set). Appends events `{"seq": N, "padding": ...}` with `N`
/// following the trail's whole events, forever, printing `appending N`, `writing N` (from
/// a watcher thread, once the file has grown during that append) and `appended N`.
#[test]
fn child_appends_until_killed() {
    let Ok(path) = std::env::var(CHILD_TRAIL) else {
        return;
    };
    let path = Path::new(&path);
    let log = AuditLog::open(path).expect("open the trail");
    let mut seq = AuditLog::read(path).expect("read the trail").len();
    let padding = "x".repeat(PADDING);
    let mut out = std::io::stdout();
    loop {
        let event = json!({"seq": seq, "padding": padding});
        let before = std::fs::metadata(path).map_or(0, |m| m.len());
        writeln!(out, "appending {seq}").expect("stdout");
        out.flush().expect("stdout");
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // The child's own watcher (not the test's synchronisation): it reports the
                // moment the file grows, which is while the line is being written.
                while std::fs::metadata(path).map_or(0, |m| m.len()) <= before {
                    std::hint::spin_loop();
                }
                let mut out = std::io::stdout();
                writeln!(out, "writing {seq}").expect("stdout");
                out.flush().expect("stdout");
            });
            log.append(&event).expect("append");
        });
        writeln!(out, "appended {seq}").expect("stdout");
        out.flush().expect("stdout");
        seq += 1;
    }
}

fn spawn_child(trail: &Path) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "audit_kill::child_appends_until_killed",
            "--exact",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_TRAIL, trail)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the child")
}

/// Runs one child until the line that `at` names, then SIGKILLs it.
fn kill_child_at(trail: &Path, at: KillAt) {
    let mut child = spawn_child(trail);
    let stdout = child.stdout.take().expect("stdout");
    let (word, nth) = match at {
        KillAt::Before(n) => ("appending", n),
        KillAt::MidWrite(n) => ("writing", n),
        KillAt::After(n) => ("appended", n),
    };
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("the child's output");
        if line.starts_with(&format!("{word} ")) {
            seen += 1;
            if seen == nth {
                child.kill().expect("SIGKILL");
                let _ = child.wait();
                return;
            }
        }
    }
    let status = child.wait().expect("wait");
    panic!("the child ended ({status}) before `{word}` number {nth}");
}

/// The trail's whole events are `{"seq": 0}`, `{"seq": 1}`, ... each with its full
/// padding; returns how many there are and whether the last line is torn.
fn check_trail(trail: &Path) -> (usize, bool) {
    let read = AuditLog::read_checked(trail).expect("the trail reads after a kill");
    for (i, event) in read.events.iter().enumerate() {
        assert_eq!(event["seq"], i, "events in order, none lost or repeated");
        assert_eq!(
            event["padding"].as_str().map(str::len),
            Some(PADDING),
            "event {i} is whole"
        );
    }
    let torn_at_end = read.torn.last().is_some_and(|t| t.at_end);
    (read.events.len(), torn_at_end)
}

#[test]
fn sigkill_at_varied_points_never_leaves_a_trail_that_cannot_be_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trail = dir.path().join("audit/session.jsonl");
    let schedule = [
        KillAt::After(1),
        KillAt::MidWrite(1),
        KillAt::Before(2),
        KillAt::MidWrite(2),
        KillAt::After(2),
        KillAt::MidWrite(1),
    ];
    let mut torn_seen = 0;
    let mut events = 0;
    let mut rounds = 0;
    // The schedule, then more kills in the middle of a write until one tore a line (a kill
    // can land just after the write: the line is whole then).
    for at in schedule
        .into_iter()
        .chain(std::iter::repeat(KillAt::MidWrite(1)))
    {
        if rounds >= schedule.len() && torn_seen > 0 {
            break;
        }
        assert!(
            rounds < 40,
            "no kill in the middle of a write tore a line in {rounds} rounds"
        );
        rounds += 1;
        kill_child_at(&trail, at);
        let (now, torn) = check_trail(&trail);
        assert!(now >= events, "an event was lost: {now} < {events}");
        events = now;
        if torn {
            torn_seen += 1;
        }
    }
    // A last child reopens the trail (ending any torn line) and appends once more.
    kill_child_at(&trail, KillAt::After(1));
    let (after, torn) = check_trail(&trail);
    assert_eq!(after, events + 1);
    assert!(!torn, "appended after the last kill: no torn tail");
    let read = AuditLog::read_checked(&trail).expect("read");
    assert_eq!(
        read.torn.len(),
        torn_seen,
        "every torn line is still in the file, marked and skipped"
    );
    assert!(read.torn.iter().all(|t| !t.at_end));
    let markers = std::fs::read(&trail)
        .expect("trail")
        .split(|b| *b == b'\n')
        .filter(|l| serde_json::from_slice::<Value>(l).is_ok_and(|v| v["audit_log"] == "torn_line"))
        .count();
    assert_eq!(markers, torn_seen);
    eprintln!("{rounds} kills, {torn_seen} torn line(s), {after} whole events");
}
