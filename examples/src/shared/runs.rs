//! `graphkit-research runs`: the runs under the default root (and those started with
//! `--out` elsewhere), with their status and the command that resumes them.

use std::path::{Path, PathBuf};

use super::run_dir::{RunManifest, RunStatus};
use super::session::resume_command;

/// One run, as `graphkit-research runs` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunListing {
    /// The workflow.
    pub workflow: String,
    /// The thread id.
    pub thread: String,
    /// The run directory.
    pub dir: PathBuf,
    /// `running (pid N)`, `stopped (killed)`, `finished`, `failed`, `interrupted`, or what
    /// is wrong with it (`run.json unreadable: ...`).
    pub status: String,
    /// When it started (RFC 3339).
    pub created_at: String,
    /// The command that continues it (`None` when it finished or is running).
    pub resume: Option<String>,
}

/// The runs under `root` (`root/<workflow>/<thread>/run.json`, and
/// `root/<workflow>/<thread>.location` pointing at runs started with `--out`), oldest first.
pub fn list_runs(root: &Path) -> Vec<RunListing> {
    let mut runs = Vec::new();
    for workflow in read_dir_sorted(root).into_iter().filter(|p| p.is_dir()) {
        for entry in read_dir_sorted(&workflow) {
            let dir = if entry.is_dir() {
                entry
            } else if entry.extension().is_some_and(|e| e == "location") {
                match std::fs::read_to_string(&entry) {
                    Ok(text) => PathBuf::from(text.trim()),
                    Err(_) => continue,
                }
            } else {
                continue;
            };
            if let Some(listing) = listing(root, &dir) {
                runs.push(listing);
            }
        }
    }
    runs.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then(a.thread.cmp(&b.thread))
    });
    runs
}

fn listing(root: &Path, dir: &Path) -> Option<RunListing> {
    let manifest = match RunManifest::read(dir) {
        Ok(Some(m)) => m,
        Ok(None) => return None,
        Err(err) => {
            return Some(RunListing {
                workflow: String::new(),
                thread: dir.file_name()?.to_string_lossy().into_owned(),
                dir: dir.to_path_buf(),
                status: format!("run.json unreadable: {err}"),
                created_at: String::new(),
                resume: None,
            });
        }
    };
    let alive = manifest.process_alive();
    let status = match manifest.status {
        RunStatus::Running if alive => format!("running (pid {})", manifest.pid.unwrap_or(0)),
        RunStatus::Running => "stopped (killed)".to_owned(),
        other => other.as_str().to_owned(),
    };
    let resumable = !(manifest.status == RunStatus::Finished || alive);
    Some(RunListing {
        resume: resumable.then(|| resume_command(&manifest.workflow, root, &manifest.thread, dir)),
        workflow: manifest.workflow,
        thread: manifest.thread,
        dir: dir.to_path_buf(),
        status,
        created_at: manifest.created_at,
    })
}

fn read_dir_sorted(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| it.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

/// The listing as a table for the terminal.
pub fn render_runs(runs: &[RunListing], root: &Path) -> String {
    if runs.is_empty() {
        return format!("no runs under {}\n", root.display());
    }
    let mut out = String::new();
    for run in runs {
        out.push_str(&format!(
            "{:<14} {:<34} {:<20} {:<22} {}\n",
            run.workflow,
            run.thread,
            run.status,
            run.created_at,
            run.dir.display()
        ));
        if let Some(resume) = &run.resume {
            out.push_str(&format!("    resume: {resume}\n"));
        }
    }
    out
}
