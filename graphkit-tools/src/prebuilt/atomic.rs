//! Replacing a file so that it holds either its old content or the new one, never a part
//! of it and never nothing.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

/// Writes `bytes` to `path` through a temporary file in the same directory, synced and
/// then renamed over `path`.
///
/// If anything fails (disk full, a name too long for the file system, a read-only
/// directory), `path` keeps its previous content (or stays absent) and the temporary file
/// is removed, so no half-written or 0-byte file is left behind. The temporary file is
/// `.<name>.tmp-<pid>-<n>` next to `path`. The parent directory must exist.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("report.json");
/// graphkit_tools::write_atomic(&path, b"{}")?;
/// assert_eq!(std::fs::read_to_string(&path)?, "{}");
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// # Errors
/// The I/O error of whichever step failed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let dir = rustix::fs::openat(
        rustix::fs::CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    write_atomic_at(dir.as_fd(), name, bytes)
}

/// [`write_atomic`] for the entry `name` of the open directory `dir`. The final name is
/// replaced by the rename, never followed, so a symbolic link planted there is replaced
/// rather than written through.
pub(crate) fn write_atomic_at(dir: BorrowedFd<'_>, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_name(name);
    let fd = rustix::fs::openat(
        dir,
        &tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_bits_truncate(0o666),
    )?;
    let written = (|| {
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        rustix::fs::renameat(dir, &tmp, dir, name)?;
        Ok(())
    })();
    if written.is_err() {
        // Best effort: the error that matters is the one being returned.
        let _ = rustix::fs::unlinkat(dir, &tmp, AtFlags::empty());
    } else {
        // Make the rename itself durable; a failure here loses nothing already written.
        let _ = rustix::fs::fsync(dir);
    }
    written
}

/// Removes temporary files that [`write_atomic`] (or an older `<name>.tmp-<pid>` scheme)
/// left in `dir` when its process was killed mid-write: files named `….tmp-<pid>` or
/// `….tmp-<pid>-<n>` whose process no longer runs. Files of running processes (this one
/// included) are kept. Returns how many were removed.
///
/// Knowing whether a process runs needs `/proc` (Linux); elsewhere nothing is removed.
///
/// # Errors
/// When `dir` cannot be listed.
pub fn remove_stale_temp_files(dir: &Path) -> io::Result<usize> {
    let proc_fs = Path::new("/proc/self").exists();
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        let running = !proc_fs || Path::new(&format!("/proc/{pid}")).exists();
        if !running && entry.file_type().is_ok_and(|t| t.is_file()) {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The process id in a temporary file's name (`….tmp-<pid>` or `….tmp-<pid>-<n>`).
fn temp_owner(name: &str) -> Option<u32> {
    let (_, tail) = name.rsplit_once(".tmp-")?;
    let pid = tail.split_once('-').map_or(tail, |(pid, n)| {
        if n.bytes().all(|b| b.is_ascii_digit()) {
            pid
        } else {
            ""
        }
    });
    pid.parse().ok()
}

/// A short, unique temporary name: `.` + at most 40 bytes of `name` + `.tmp-<pid>-<n>`,
/// so even a name at the file system's limit gets a temporary name that fits.
fn temp_name(name: &OsStr) -> OsString {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let lossy = name.to_string_lossy();
    let mut cut = lossy.len().min(40);
    while !lossy.is_char_boundary(cut) {
        cut -= 1;
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!(".{}.tmp-{}-{n}", &lossy[..cut], std::process::id()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_too_long_keeps_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let long = "x".repeat(300);
        let err = write_atomic(&dir.path().join(&long), b"data").unwrap_err();
        assert_eq!(
            err.raw_os_error(),
            Some(rustix::io::Errno::NAMETOOLONG.raw_os_error())
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn temporary_files_of_dead_processes_are_removed_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        // u32::MAX is above any pid limit, so no such process runs.
        let dead = [".a.json.tmp-4294967295-3", "run.tmp-4294967295"];
        let kept = [
            format!(".b.json.tmp-{}-0", std::process::id()),
            "notes.tmp-abc".to_owned(),
            "report.json".to_owned(),
        ];
        for name in dead.iter().copied().chain(kept.iter().map(String::as_str)) {
            std::fs::write(dir.path().join(name), "x").unwrap();
        }
        assert_eq!(remove_stale_temp_files(dir.path()).unwrap(), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut expected = kept.to_vec();
        expected.sort();
        assert_eq!(left, expected);
    }

    #[test]
    fn a_replaced_file_has_the_new_content_and_no_temporary_file_remains() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_atomic(&path, b"old").unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
