//! [`OutputFolder`]: where a bundle's files go — the folder its state names (the CLI's
//! runner sets it), or one per thread under a folder fixed when the graph is built (a
//! served graph, whose state a client may write).

use std::path::{Component, Path, PathBuf};

use graphkit::RunConfig;

use super::state::EntityIntelResearchState;

/// Where the file tools and `finalize_output` write a bundle's files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OutputFolder {
    /// The state's `output_directory`: the runner sets it from the run directory (the
    /// `graphkit-research` CLI, where the caller is the one who chose the folder).
    #[default]
    FromState,
    /// `ROOT/<thread id>`, whatever the state says: for a graph served to clients, which
    /// must not choose where the server writes (their input and `command.update` can set
    /// `output_directory`).
    PerThread(PathBuf),
}

impl OutputFolder {
    /// The folder of the run with `state` and `config`.
    ///
    /// # Errors
    /// A message when the folder is `PerThread` and the run has no thread id, or one that
    /// is not a single plain path component (`..`, `/`, an absolute path).
    pub(crate) fn resolve(
        &self,
        state: &EntityIntelResearchState,
        config: &RunConfig,
    ) -> Result<PathBuf, String> {
        match self {
            Self::FromState => Ok(PathBuf::from(&state.output_directory)),
            Self::PerThread(root) => {
                let thread = config
                    .thread_id
                    .as_deref()
                    .ok_or("the research outputs go to a folder per thread: run on a thread")?;
                let mut parts = Path::new(thread).components();
                match (parts.next(), parts.next()) {
                    (Some(Component::Normal(name)), None) => Ok(root.join(name)),
                    _ => Err(format!(
                        "the thread id {thread:?} cannot name an output folder"
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_thread_folders_ignore_the_state_and_refuse_path_like_thread_ids() {
        let state = EntityIntelResearchState {
            output_directory: "/etc".into(),
            ..Default::default()
        };
        let folder = OutputFolder::PerThread("/srv/files".into());
        let on = |thread: &str| folder.resolve(&state, &RunConfig::new().thread_id(thread));
        assert_eq!(on("t-1"), Ok(PathBuf::from("/srv/files/t-1")));
        for bad in ["..", "/etc", "a/b", "", "."] {
            assert!(on(bad).is_err(), "{bad:?}");
        }
        assert!(folder.resolve(&state, &RunConfig::new()).is_err());
        assert_eq!(
            OutputFolder::FromState.resolve(&state, &RunConfig::new()),
            Ok(PathBuf::from("/etc"))
        );
    }
}
