//! The sandboxed filesystem cannot be left through a symbolic link, not even one swapped
//! in after the sandbox was opened, and a failed write loses nothing (issue 18).

use graphkit_tools::{SandboxedFs, ToolError};

fn refused(err: &ToolError) -> bool {
    matches!(err, ToolError::PathRefused { .. })
}

#[tokio::test]
async fn a_directory_swapped_for_a_link_after_opening_is_refused_for_every_operation() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    fs.write("sub/a.txt", "inside", false).await.unwrap();

    // Another process swaps the checked directory for a link to the outside.
    std::fs::rename(fs.root().join("sub"), fs.root().join("moved")).unwrap();
    std::os::unix::fs::symlink(outside.path(), fs.root().join("sub")).unwrap();

    let err = fs.read("sub/secret.txt", 0).await.unwrap_err();
    assert!(refused(&err), "{err}");
    let err = fs.write("sub/planted.txt", "x", false).await.unwrap_err();
    assert!(refused(&err), "{err}");
    let err = fs.write("sub/secret.txt", "x", true).await.unwrap_err();
    assert!(refused(&err), "{err}");
    let err = fs.list(Some("sub"), false).await.unwrap_err();
    assert!(refused(&err), "{err}");
    assert!(!outside.path().join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
}

#[tokio::test]
async fn a_file_link_planted_in_the_tree_is_neither_read_nor_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    std::fs::create_dir(fs.root().join("notes")).unwrap();
    std::os::unix::fs::symlink(&secret, fs.root().join("notes/leak.txt")).unwrap();

    let err = fs.read("notes/leak.txt", 0).await.unwrap_err();
    assert!(refused(&err), "{err}");
    let err = fs
        .write("notes/leak.txt", "overwritten", false)
        .await
        .unwrap_err();
    assert!(refused(&err), "{err}");
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret");
    // Listing shows the link as an entry and does not descend through links.
    let listing = fs.list(None, true).await.unwrap();
    assert_eq!(listing, "notes/\nnotes/leak.txt");
}

#[tokio::test]
async fn a_link_as_the_sandbox_subdirectory_is_not_listed_recursively() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    std::os::unix::fs::symlink(outside.path(), fs.root().join("out")).unwrap();
    let listing = fs.list(None, true).await.unwrap();
    assert_eq!(listing, "out");
}

#[tokio::test]
async fn a_name_too_long_fails_with_the_cause_and_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    let name = format!("{}.json", "k".repeat(5000));
    let err = fs.write(&name, "{}", false).await.unwrap_err();
    assert!(err.to_string().contains("File name too long"), "{err}");
    assert_eq!(std::fs::read_dir(fs.root()).unwrap().count(), 0);
}

#[tokio::test]
async fn a_failed_replace_keeps_the_previous_content_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    fs.write("out/report.md", "first version", false)
        .await
        .unwrap();
    // The write is refused when the size limit is hit: nothing is truncated either.
    let small = SandboxedFs::new(dir.path()).unwrap().max_write_bytes(4);
    small
        .write("out/report.md", "second version", false)
        .await
        .unwrap_err();
    assert_eq!(fs.read("out/report.md", 0).await.unwrap(), "first version");
    // A replace whose rename fails (a directory is in the way) removes its temporary file.
    std::fs::create_dir_all(fs.root().join("out/taken/inner")).unwrap();
    let err = graphkit_tools::write_atomic(&fs.root().join("out/taken"), b"x").unwrap_err();
    assert!(err.raw_os_error().is_some(), "{err}");
    let mut names: Vec<String> = std::fs::read_dir(fs.root().join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["report.md", "taken"]);
}

#[tokio::test]
async fn fifos_and_other_special_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(fs.root().join("pipe"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("skipped: mkfifo is not available");
        return;
    }
    let err = fs.read("pipe", 0).await.unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
    let err = fs.write("pipe", "x", true).await.unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// Another thread keeps swapping `sub` between a real directory and a link to the outside
/// while writes and reads go on. Whatever the interleaving, nothing may ever land outside
/// or be read from there (the assertion holds for every schedule; no timing is assumed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_racing_a_link_swapper_never_land_outside() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let fs = SandboxedFs::new(dir.path()).unwrap();
    let (root, target) = (fs.root().to_owned(), outside.path().to_owned());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            for _ in 0..5_000 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let sub = root.join("sub");
                let _ = std::fs::remove_file(&sub);
                let _ = std::fs::create_dir(&sub);
                let _ = std::fs::remove_dir_all(&sub);
                let _ = std::os::unix::fs::symlink(&target, &sub);
            }
        })
    };
    for i in 0..300 {
        let _ = fs.write(&format!("sub/f{i}.txt"), "x", false).await;
        if let Ok(text) = fs.read("sub/secret.txt", 0).await {
            panic!("read through a swapped link: {text}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(leaked.is_empty(), "files written outside: {leaked:?}");
}

#[test]
fn a_corpus_folder_with_self_links_is_indexed_once_instead_of_hanging() {
    use graphkit_tools::prebuilt::search::LocalCorpus;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/a.md"), "# Alpha\nalpha text").unwrap();
    std::os::unix::fs::symlink(dir.path().join("docs"), dir.path().join("docs/self")).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("docs/up")).unwrap();
    let corpus = LocalCorpus::open(dir.path()).unwrap();
    assert_eq!(corpus.len(), 1);
}
