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
