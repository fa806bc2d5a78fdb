//! Opening paths beneath a directory handle without following symbolic links.
//!
//! Every path the sandbox touches is resolved by the kernel relative to the sandbox's
//! open directory handle, one step at a time, never through a symbolic link. Checking a
//! path and then opening it by name would leave a window in which another process could
//! swap a directory for a link; resolving against the handle leaves none. On Linux
//! `openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` does it in one call; where
//! `openat2` is missing (kernels before 5.6, some seccomp filters) the path is walked one
//! component at a time with `O_NOFOLLOW | O_DIRECTORY`, which promises the same.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

/// The normal components of `relative`, or `None` when it has anything else (`..`, a
/// root, a prefix). `.` components are skipped.
pub(crate) fn normal_components(relative: &Path) -> Option<Vec<&OsStr>> {
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect()
}

/// Opens `relative` (normal components only) beneath `root` with `flags`, following no
/// symbolic link on the way or at the end.
///
/// # Errors
/// `ELOOP` (or `EXDEV`) when a symbolic link is met, `EINVAL` for a path that is not made
/// of normal components, and any error of the open itself.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    relative: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let parts = normal_components(relative).ok_or_else(|| io::Error::from(Errno::INVAL))?;
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let joined: std::path::PathBuf = if parts.is_empty() {
            ".".into()
        } else {
            parts.iter().collect()
        };
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        // EAGAIN: a concurrent rename raced the lookup; the kernel asks to try again.
        for _ in 0..8 {
            match rustix::fs::openat2(
                root,
                &joined,
                flags | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                mode,
                resolve,
            ) {
                Err(Errno::AGAIN) => continue,
                // No openat2 here (old kernel or a seccomp filter): walk instead.
                Err(Errno::NOSYS | Errno::PERM) => break,
                // O_DIRECTORY on a link says ENOTDIR; the walk tells a link apart.
                Err(Errno::NOTDIR) => break,
                other => return other.map_err(io::Error::from),
            }
        }
    }
    walk_beneath(root, &parts, flags, mode)
}

/// The portable way: one `openat` per component, directories with
/// `O_DIRECTORY | O_NOFOLLOW`, the last component with `O_NOFOLLOW`.
pub(crate) fn walk_beneath(
    root: BorrowedFd<'_>,
    parts: &[&OsStr],
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let Some((last, dirs)) = parts.split_last() else {
        return Ok(rustix::fs::openat(
            root,
            ".",
            flags | OFlags::CLOEXEC,
            mode,
        )?);
    };
    let mut current: Option<OwnedFd> = None;
    for part in dirs {
        let at = current.as_ref().map_or(root, AsFd::as_fd);
        current = Some(open_child_dir(at, part)?);
    }
    let at = current.as_ref().map_or(root, AsFd::as_fd);
    rustix::fs::openat(at, *last, flags | OFlags::CLOEXEC | OFlags::NOFOLLOW, mode).map_err(|e| {
        match e {
            Errno::NOTDIR if is_symlink(at, last) => io::Error::from(Errno::LOOP),
            other => io::Error::from(other),
        }
    })
}

/// Opens the directory `name` directly inside `dir`, refusing a symbolic link.
pub(crate) fn open_child_dir(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        // O_NOFOLLOW | O_DIRECTORY on a link reports ENOTDIR on some kernels: say ELOOP
        // when it really is a link, so callers give one message for every link.
        Errno::NOTDIR if is_symlink(dir, name) => io::Error::from(Errno::LOOP),
        other => io::Error::from(other),
    })
}

/// Opens (creating as needed) the directories `parts` beneath `root`, following no link.
pub(crate) fn create_dirs_beneath(root: BorrowedFd<'_>, parts: &[&OsStr]) -> io::Result<OwnedFd> {
    let mut current = rustix::fs::openat(
        root,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in parts {
        match rustix::fs::mkdirat(&current, *part, Mode::from_bits_truncate(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        current = open_child_dir(current.as_fd(), part)?;
    }
    Ok(current)
}

/// Whether `name` inside `dir` is a symbolic link (not following it).
pub(crate) fn is_symlink(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink())
}

/// Whether an error says the path met a symbolic link (or tried to leave the root).
pub(crate) fn is_link_refusal(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error().map(Errno::from_raw_os_error),
        Some(Errno::LOOP | Errno::XDEV)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &Path) -> OwnedFd {
        rustix::fs::openat(
            rustix::fs::CWD,
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap()
    }

    #[test]
    fn the_component_walk_refuses_a_link_in_the_middle_and_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/file"), "ok").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("real/leaf"))
            .unwrap();
        let fd = root(dir.path());
        let open = |p: &str| {
            let parts = normal_components(Path::new(p)).unwrap();
            walk_beneath(fd.as_fd(), &parts, OFlags::RDONLY, Mode::empty())
        };
        assert!(open("real/file").is_ok());
        assert!(is_link_refusal(&open("link/secret").unwrap_err()));
        assert!(is_link_refusal(&open("real/leaf").unwrap_err()));
    }

    #[test]
    fn paths_with_parent_or_root_components_have_no_normal_form() {
        assert!(normal_components(Path::new("a/../b")).is_none());
        assert!(normal_components(Path::new("/etc")).is_none());
        assert_eq!(normal_components(Path::new("./a/b")).unwrap().len(), 2);
    }
}
