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
        assert_eq!(err.raw_os_error(), Some(rustix::io::Errno::NAMETOOLONG.raw_os_error()));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
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
