//! A sandboxed filesystem: `write_file`, `read_file` and `list_files` inside one root.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Seek};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use graphkit::State;
use rustix::fs::{FileType, Mode, OFlags};
use schemars::JsonSchema;
use serde::Deserialize;

use super::atomic::write_atomic_at;
use super::beneath::{
    create_dirs_beneath, is_link_refusal, normal_components, open_beneath, open_child_dir,
};
use crate::error::ToolError;
use crate::function::tool_fn;
use crate::tool::DynTool;

/// A directory the agent may read and write, and nothing outside it.
///
/// Paths are relative to the root. Absolute paths, `..` components, and paths through a
/// symbolic link are refused with a message that says so. Every operation resolves its
/// path relative to the root's open directory handle and follows no link (Linux `openat2`
/// with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or a component-by-component walk with
/// `O_NOFOLLOW`), so a link swapped in by another process between a check and a use cannot
/// lead outside (see `docs/security.md`). Reads return
/// at most `max_read_bytes` per call (with an offset to continue); writes above
/// `max_write_bytes` are refused.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let fs = graphkit_tools::SandboxedFs::new(dir.path())?;
/// fs.write("notes/a.md", "# A", false).await?;
/// assert_eq!(fs.read("notes/a.md", 0).await?, "# A");
/// assert!(fs.read("../etc/passwd", 0).await.is_err());
/// # Ok::<(), graphkit_tools::ToolError>(()) }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct SandboxedFs {
    root: PathBuf,
    root_fd: Arc<OwnedFd>,
    max_read_bytes: u64,
    max_write_bytes: u64,
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// Path relative to the workspace root, e.g. `notes/summary.md`.
    pub path: String,
    /// The text to write.
    pub content: String,
    /// Append instead of replacing the file.
    #[serde(default)]
    pub append: bool,
}

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// Path relative to the workspace root.
    pub path: String,
    /// Byte offset to start reading at (to continue a long file).
    #[serde(default)]
    pub offset: u64,
}

/// Arguments of `list_files`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFilesArgs {
    /// Directory relative to the workspace root; the root when omitted.
    #[serde(default)]
    pub path: Option<String>,
    /// List subdirectories too.
    #[serde(default)]
    pub recursive: bool,
}

impl SandboxedFs {
    /// A sandbox rooted at `root` (created if missing), with a 256 KiB read chunk and a
    /// 4 MiB write limit.
    ///
    /// # Errors
    /// [`ToolError::Io`] when the root cannot be created or resolved.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ToolError> {
        let shown = root.as_ref().display().to_string();
        std::fs::create_dir_all(root.as_ref()).map_err(|source| ToolError::Io {
            action: "create",
            path: shown.clone(),
            source,
        })?;
        let root = root
            .as_ref()
            .canonicalize()
            .map_err(|source| ToolError::Io {
                action: "resolve",
                path: shown,
                source,
            })?;
        let root_fd = rustix::fs::openat(
            rustix::fs::CWD,
            &root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ToolError::Io {
            action: "open",
            path: root.display().to_string(),
            source: e.into(),
        })?;
        Ok(Self {
            root,
            root_fd: Arc::new(root_fd),
            max_read_bytes: 256 * 1024,
            max_write_bytes: 4 * 1024 * 1024,
        })
    }

    /// Sets the most bytes one read returns.
    #[must_use]
    pub fn max_read_bytes(mut self, n: u64) -> Self {
        self.max_read_bytes = n.max(1);
        self
    }

    /// Sets the largest file a write may produce.
    #[must_use]
    pub fn max_write_bytes(mut self, n: u64) -> Self {
        self.max_write_bytes = n;
        self
    }

    /// The root directory (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` inside the root, refusing anything that would leave it. This names
    /// the file (for messages and records); the operations themselves never open by this
    /// name, they resolve beneath the root's handle.
    ///
    /// # Errors
    /// [`ToolError::PathRefused`] for absolute paths, `..`, and symlink escapes.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let joined = self.resolve_lexically(path)?;
        let refuse = |reason: &str| ToolError::PathRefused {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        // The deepest part that exists decides where the path really goes: a symlink
        // anywhere on it (the file itself included) is followed before the check.
        let mut existing = joined.as_path();
        loop {
            if existing.symlink_metadata().is_ok() {
                break;
            }
            match existing.parent() {
                Some(parent) => existing = parent,
                None => break,
            }
        }
        let real = existing.canonicalize().map_err(|_| {
            refuse("it goes through a symbolic link that points nowhere; links may not lead outside the workspace")
        })?;
        if !real.starts_with(&self.root) {
            return Err(refuse(
                "it leads outside the workspace root through a symbolic link",
            ));
        }
        Ok(joined)
    }

    /// `path` joined to the root, refusing absolute paths and `..` (no file system access).
    fn resolve_lexically(&self, path: &str) -> Result<PathBuf, ToolError> {
        let refuse = |reason: &str| ToolError::PathRefused {
            path: path.to_owned(),
            reason: reason.to_owned(),
        };
        let relative = Path::new(path);
        if relative.is_absolute() || path.starts_with(['/', '\\']) {
            return Err(refuse(
                "absolute paths are not allowed; give a path relative to the workspace root, like `notes/summary.md`",
            ));
        }
        let mut joined = self.root.clone();
        for component in relative.components() {
            match component {
                Component::Normal(part) => joined.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(refuse(
                        "`..` is not allowed; paths must stay inside the workspace root",
                    ));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse(
                        "absolute paths are not allowed; give a path relative to the workspace root",
                    ));
                }
            }
        }
        Ok(joined)
    }

    /// The path as components inside the root, checked lexically: absolute paths and `..`
    /// are refused here; links are refused when the path is opened.
    fn components(&self, path: &str) -> Result<Vec<OsString>, ToolError> {
        self.resolve_lexically(path)?;
        Ok(normal_components(Path::new(path))
            .unwrap_or_default()
            .into_iter()
            .map(OsStr::to_owned)
            .collect())
    }

    /// Writes (or appends) `content`, creating parent directories. Returns a confirmation.
    ///
    /// The file is replaced atomically (see [`write_atomic`](crate::write_atomic)): when
    /// the write fails, the file keeps its previous content and no temporary file is left.
    /// Every directory on the way is opened beneath the root without following a link, so
    /// a link swapped in by another process is refused, not followed.
    ///
    /// # Errors
    /// A refused path, a size above the limit, or an I/O error.
    pub async fn write(
        &self,
        path: &str,
        content: &str,
        append: bool,
    ) -> Result<String, ToolError> {
        let mut dirs = self.components(path)?;
        let Some(name) = dirs.pop() else {
            return Err(ToolError::PathRefused {
                path: path.to_owned(),
                reason: "it is the workspace root; give a file name".into(),
            });
        };
        let job = WriteJob {
            root: Arc::clone(&self.root_fd),
            dirs,
            name,
            content: content.to_owned(),
            append,
            limit: self.max_write_bytes,
            shown: path.to_owned(),
        };
        blocking(move || job.run()).await?;
        Ok(format!(
            "{} {} bytes to {path}",
            if append { "Appended" } else { "Wrote" },
            content.len()
        ))
    }

    /// Reads text from byte `offset`, at most `max_read_bytes`. A file longer than that
    /// comes with a note saying which offset to read next.
    ///
    /// # Errors
    /// A refused path, a missing file, or an I/O error.
    pub async fn read(&self, path: &str, offset: u64) -> Result<String, ToolError> {
        let parts = self.components(path)?;
        let root = Arc::clone(&self.root_fd);
        let (limit, shown) = (self.max_read_bytes, path.to_owned());
        blocking(move || read_blocking(&root, &parts, offset, limit, &shown)).await
    }

    /// Lists a directory: one entry per line, directories with a trailing `/`, sorted.
    /// Symbolic links are listed as entries and never followed.
    ///
    /// # Errors
    /// A refused path, a missing directory, or an I/O error.
    pub async fn list(&self, path: Option<&str>, recursive: bool) -> Result<String, ToolError> {
        let shown = path.unwrap_or(".").to_owned();
        let parts = self.components(&shown)?;
        let root = Arc::clone(&self.root_fd);
        blocking(move || list_blocking(&root, &parts, recursive, &shown)).await
    }

    /// The three tools over this sandbox: `write_file`, `read_file`, `list_files`.
    pub fn tools<S: State>(&self) -> Vec<DynTool<S>> {
        let fs = Arc::new(self.clone());
        let (w, r, l) = (Arc::clone(&fs), Arc::clone(&fs), fs);
        vec![
            Arc::new(tool_fn(
                "write_file",
                "Write a text file in the workspace (paths relative to the workspace root; parent directories are created). Set append=true to add to the end.",
                move |a: WriteFileArgs| {
                    let fs = Arc::clone(&w);
                    async move { fs.write(&a.path, &a.content, a.append).await }
                },
            )),
            Arc::new(tool_fn(
                "read_file",
                "Read a text file in the workspace. Long files come in chunks; the note at the end says which offset to read next.",
                move |a: ReadFileArgs| {
                    let fs = Arc::clone(&r);
                    async move { fs.read(&a.path, a.offset).await }
                },
            )),
            Arc::new(tool_fn(
                "list_files",
                "List the files of a workspace directory (the root when no path is given).",
                move |a: ListFilesArgs| {
                    let fs = Arc::clone(&l);
                    async move { fs.list(a.path.as_deref(), a.recursive).await }
                },
            )),
        ]
    }
}

/// Runs blocking file work off the async worker threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("file operation did not finish: {e}")))?
}

/// The error of a failed operation on `shown`: a met symbolic link is a refusal.
fn fs_error(action: &'static str, shown: &str, err: std::io::Error) -> ToolError {
    if is_link_refusal(&err) {
        ToolError::PathRefused {
            path: shown.to_owned(),
            reason: "it goes through a symbolic link, and links are never followed in the workspace (one could lead outside the workspace root)".into(),
        }
    } else {
        ToolError::Io {
            action,
            path: shown.to_owned(),
            source: err,
        }
    }
}

/// One write, run on a blocking thread.
struct WriteJob {
    root: Arc<OwnedFd>,
    dirs: Vec<OsString>,
    name: OsString,
    content: String,
    append: bool,
    limit: u64,
    shown: String,
}

impl WriteJob {
    fn run(self) -> Result<(), ToolError> {
        let err = |e| fs_error("write", &self.shown, e);
        let dirs: Vec<&OsStr> = self.dirs.iter().map(OsString::as_os_str).collect();
        let dir = create_dirs_beneath(self.root.as_fd(), &dirs).map_err(err)?;
        let mut bytes = Vec::new();
        match rustix::fs::openat(
            &dir,
            &self.name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(existing) => {
                let kind = file_kind(&existing).map_err(err)?;
                if kind == FileType::Directory {
                    return Err(ToolError::PathRefused {
                        path: self.shown.clone(),
                        reason: "it is a directory".into(),
                    });
                }
                if kind != FileType::RegularFile {
                    return Err(not_regular(&self.shown));
                }
                if self.append {
                    std::fs::File::from(existing)
                        .take(self.limit.saturating_add(1))
                        .read_to_end(&mut bytes)
                        .map_err(err)?;
                }
            }
            Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(err(e.into())),
        }
        let size = bytes.len() as u64 + self.content.len() as u64;
        if size > self.limit {
            return Err(ToolError::TooLarge {
                what: format!("the file `{}` after this write", self.shown),
                size,
                limit: self.limit,
            });
        }
        bytes.extend_from_slice(self.content.as_bytes());
        write_atomic_at(dir.as_fd(), &self.name, &bytes).map_err(err)
    }
}

fn file_kind(fd: &OwnedFd) -> std::io::Result<FileType> {
    Ok(FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode))
}

fn not_regular(shown: &str) -> ToolError {
    ToolError::PathRefused {
        path: shown.to_owned(),
        reason: "it is not a regular file".into(),
    }
}

fn read_blocking(
    root: &OwnedFd,
    parts: &[OsString],
    offset: u64,
    limit: u64,
    shown: &str,
) -> Result<String, ToolError> {
    let err = |e| fs_error("read", shown, e);
    let relative: PathBuf = parts.iter().collect();
    let fd = open_beneath(
        root.as_fd(),
        &relative,
        OFlags::RDONLY | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(err)?;
    match file_kind(&fd).map_err(err)? {
        FileType::RegularFile => {}
        FileType::Directory => {
            return Err(ToolError::PathRefused {
                path: shown.to_owned(),
                reason: "it is a directory; use list_files".into(),
            });
        }
        _ => return Err(not_regular(shown)),
    }
    let mut file = std::fs::File::from(fd);
    let size = file.metadata().map_err(err)?.len();
    if offset > size {
        return Err(ToolError::InvalidArguments {
            tool: "read_file".into(),
            message: format!("offset {offset} is past the end of `{shown}` ({size} bytes)"),
        });
    }
    file.seek(std::io::SeekFrom::Start(offset)).map_err(err)?;
    let mut buf = Vec::new();
    file.take(limit).read_to_end(&mut buf).map_err(err)?;
    let end = offset + buf.len() as u64;
    let mut text = String::from_utf8_lossy(&buf).into_owned();
    if end < size {
        text.push_str(&format!("\n\n[truncated: showed bytes {offset}..{end} of {size}; call read_file with offset={end} to continue]"));
    }
    Ok(text)
}

/// Most entries one listing returns.
const MAX_LISTED: usize = 10_000;

fn list_blocking(
    root: &OwnedFd,
    parts: &[OsString],
    recursive: bool,
    shown: &str,
) -> Result<String, ToolError> {
    let err = |e| fs_error("list", shown, e);
    let relative: PathBuf = parts.iter().collect();
    let dir = open_beneath(
        root.as_fd(),
        &relative,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .map_err(err)?;
    let mut entries = Vec::new();
    let mut stack = vec![(dir, relative)];
    while let Some((dir, prefix)) = stack.pop() {
        let listing = rustix::fs::Dir::read_from(&dir).map_err(|e| err(e.into()))?;
        for entry in listing {
            let entry = entry.map_err(|e| err(e.into()))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    rustix::fs::statat(&dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                        .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode))
                }
                known => known,
            };
            let rel = prefix.join(name);
            if kind == FileType::Directory {
                entries.push(format!("{}/", rel.display()));
                if recursive && entries.len() < MAX_LISTED {
                    // A directory swapped for a link meanwhile is skipped, not followed.
                    if let Ok(child) = open_child_dir(dir.as_fd(), name) {
                        stack.push((child, rel));
                    }
                }
            } else {
                entries.push(rel.display().to_string());
            }
            if entries.len() >= MAX_LISTED {
                break;
            }
        }
    }
    entries.sort();
    Ok(if entries.is_empty() {
        format!("{shown} is empty")
    } else {
        entries.join("\n")
    })
}
