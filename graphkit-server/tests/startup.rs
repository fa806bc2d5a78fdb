//! Startup failures are one clear line on stderr and a failing exit status: what could not be
//! done and why, with no debug dump and no C source position of the database.

use std::process::Command;

/// Starts the binary on `database` and answers its stderr (it must fail).
fn failed_start(database: &std::path::Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_graphkit-server"))
        .arg("--database")
        .arg(database)
        .args(["--listen", "127.0.0.1:0", "--workers", "0"])
        .env("RUST_LOG", "error")
        .output()
        .expect("the server binary runs");
    assert!(!out.status.success(), "it must not start on {database:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_database_that_cannot_be_opened_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let missing = dir.path().join("no-such-dir").join("server.db");
    let stderr = failed_start(&missing);
    assert!(
        stderr.contains("graphkit-server: could not start the server:")
            && stderr.contains("unable to open database file")
            && stderr.contains(&missing.display().to_string()),
        "{stderr}"
    );
    assert!(!stderr.contains("at line"), "{stderr}");
    assert!(!stderr.contains("Backend {"), "no Debug dump: {stderr}");

    let not_a_database = dir.path().join("notes.db");
    std::fs::write(&not_a_database, "just some text, not SQLite\n".repeat(200))
        .expect("write a text file");
    let stderr = failed_start(&not_a_database);
    assert!(stderr.contains("file is not a database"), "{stderr}");
    assert!(!stderr.contains("at line"), "{stderr}");
}

/// The `GLIBC_TUNABLES` the running server process has, read from `/proc` once it listens
/// (`tunables`: what it is started with; `None`: not set).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tunables_of_a_started_server(tunables: Option<&str>) -> Option<String> {
    use std::io::BufRead;

    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut command = Command::new(env!("CARGO_BIN_EXE_graphkit-server"));
    command
        .arg("--database")
        .arg(dir.path().join("server.db"))
        .args(["--listen", "127.0.0.1:0", "--workers", "0"])
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::piped());
    match tunables {
        Some(value) => command.env("GLIBC_TUNABLES", value),
        None => command.env_remove("GLIBC_TUNABLES"),
    };
    let mut child = command.spawn().expect("the server binary runs");
    let stdout = child.stdout.take().expect("piped stdout");
    let listening = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains("listening on"));
    // Read before killing: the process id is the same after the re-execution.
    let environ = std::fs::read(format!("/proc/{}/environ", child.id()));
    let _ = child.kill();
    let _ = child.wait();
    assert!(listening, "the server did not start");
    environ
        .expect("the server's environment")
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(b"GLIBC_TUNABLES="))
        .map(|value| String::from_utf8_lossy(value).into_owned())
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_server_runs_with_malloc_tunables_that_return_freed_memory() {
    // glibc's loader rewrites the variable in place while it parses it (glibc 2.36 leaves
    // the first tunable in /proc/PID/environ), so what is seen is the start of the value.
    let seen = tunables_of_a_started_server(None).expect("GLIBC_TUNABLES is set");
    let wanted = graphkit_server::malloc::malloc_tunables();
    assert!(
        seen.starts_with("glibc.malloc.mmap_threshold=131072") && wanted.starts_with(&seen),
        "{seen:?} is not {wanted:?}"
    );
    // Tunables the caller chose are kept, an empty value (glibc's defaults) too.
    assert_eq!(
        tunables_of_a_started_server(Some("glibc.malloc.arena_max=2")).as_deref(),
        Some("glibc.malloc.arena_max=2")
    );
    assert_eq!(tunables_of_a_started_server(Some("")).as_deref(), Some(""));
}
