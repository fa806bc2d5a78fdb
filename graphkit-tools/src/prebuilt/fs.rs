//! A sandboxed filesystem: `write_file`, `read_file` and `list_files` inside one root.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use graphkit::State;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use crate::error::ToolError;
use crate::function::tool_fn;
use crate::tool::DynTool;

/// A directory the agent may read and write, and nothing outside it.
///
/// Paths are relative to the root. Absolute paths, `..` components, and paths that leave
/// the root through a symbolic link are refused with a message that says so. Reads return
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
        Ok(Self {
            root,
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

    /// Resolves `path` inside the root, refusing anything that would leave it.
    ///
    /// # Errors
    /// [`ToolError::PathRefused`] for absolute paths, `..`, and symlink escapes.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
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

    /// Writes (or appends) `content`, creating parent directories. Returns a confirmation.
    ///
    /// # Errors
    /// A refused path, a size above the limit, or an I/O error.
    pub async fn write(
        &self,
        path: &str,
        content: &str,
        append: bool,
    ) -> Result<String, ToolError> {
        let target = self.resolve(path)?;
        let existing = if append {
            tokio::fs::metadata(&target).await.map_or(0, |m| m.len())
        } else {
            0
        };
        let size = existing + content.len() as u64;
        if size > self.max_write_bytes {
            return Err(ToolError::TooLarge {
                what: format!("the file `{path}` after this write"),
                size,
                limit: self.max_write_bytes,
            });
        }
        if target.is_dir() {
            return Err(ToolError::PathRefused {
                path: path.to_owned(),
                reason: "it is a directory".into(),
            });
        }
        let io = |source| ToolError::Io {
            action: "write",
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await.map_err(io)?;
            // Created directories are plain ones, but check again in case of a race.
            self.resolve(path)?;
        }
        if append {
            use tokio::io::AsyncWriteExt;
            let mut file = tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&target)
                .await
                .map_err(io)?;
            file.write_all(content.as_bytes()).await.map_err(io)?;
        } else {
            tokio::fs::write(&target, content).await.map_err(io)?;
        }
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
        let target = self.resolve(path)?;
        let io = |source| ToolError::Io {
            action: "read",
            path: path.to_owned(),
            source,
        };
        let meta = tokio::fs::metadata(&target).await.map_err(io)?;
        if meta.is_dir() {
            return Err(ToolError::PathRefused {
                path: path.to_owned(),
                reason: "it is a directory; use list_files".into(),
            });
        }
        let size = meta.len();
        if offset > size {
            return Err(ToolError::InvalidArguments {
                tool: "read_file".into(),
                message: format!("offset {offset} is past the end of `{path}` ({size} bytes)"),
            });
        }
        let mut file = tokio::fs::File::open(&target).await.map_err(io)?;
        file.seek(std::io::SeekFrom::Start(offset))
            .await
            .map_err(io)?;
        let mut buf = Vec::new();
        file.take(self.max_read_bytes)
            .read_to_end(&mut buf)
            .await
            .map_err(io)?;
        let end = offset + buf.len() as u64;
        let mut text = String::from_utf8_lossy(&buf).into_owned();
        if end < size {
            text.push_str(&format!("\n\n[truncated: showed bytes {offset}..{end} of {size}; call read_file with offset={end} to continue]"));
        }
        Ok(text)
    }

    /// Lists a directory: one entry per line, directories with a trailing `/`, sorted.
    ///
    /// # Errors
    /// A refused path, a missing directory, or an I/O error.
    pub async fn list(&self, path: Option<&str>, recursive: bool) -> Result<String, ToolError> {
        let shown = path.unwrap_or(".");
        let dir = self.resolve(shown)?;
        let mut entries = Vec::new();
        let mut stack = vec![dir.clone()];
        while let Some(current) = stack.pop() {
            let mut read = tokio::fs::read_dir(&current)
                .await
                .map_err(|source| ToolError::Io {
                    action: "list",
                    path: shown.to_owned(),
                    source,
                })?;
            while let Some(entry) = read.next_entry().await.map_err(|source| ToolError::Io {
                action: "list",
                path: shown.to_owned(),
                source,
            })? {
                let full = entry.path();
                let rel = full
                    .strip_prefix(&self.root)
                    .unwrap_or(&full)
                    .display()
                    .to_string();
                let kind = entry.file_type().await.ok();
                if kind.is_some_and(|k| k.is_dir()) {
                    entries.push(format!("{rel}/"));
                    if recursive && entries.len() < 10_000 {
                        stack.push(full);
                    }
                } else {
                    entries.push(rel);
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
