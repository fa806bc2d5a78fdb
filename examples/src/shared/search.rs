//! The search backend behind the workflows' search and extract tools: graphkit-tools'
//! offline [`LocalCorpus`] over the corpus shipped with this crate, or [`TavilySearch`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use graphkit_tools::prebuilt::search::{LocalCorpus, SearchBackend, TavilySearch};

use super::ExampleError;

/// The corpus shipped with the examples crate (`examples/corpus/`): documents written for
/// the project about fictional people, companies, products, compounds and platforms.
pub fn default_corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// The offline corpus in `dir`.
///
/// # Errors
/// [`ExampleError::Usage`] when the directory cannot be read or holds no documents.
pub fn corpus(dir: &Path) -> Result<Arc<dyn SearchBackend>, ExampleError> {
    let corpus = LocalCorpus::open(dir).map_err(|e| {
        ExampleError::Usage(format!("cannot open the corpus {}: {e}", dir.display()))
    })?;
    if corpus.is_empty() {
        return Err(ExampleError::Usage(format!(
            "the corpus {} holds no .md, .html or .txt documents",
            dir.display()
        )));
    }
    Ok(Arc::new(corpus))
}

/// The backend for a run: the corpus `dir` when given or when the model is offline;
/// otherwise Tavily when `TAVILY_API_KEY` is set, else the default corpus.
///
/// Returns the backend and a short name for it (`corpus:DIR` or `tavily`).
///
/// # Errors
/// As [`corpus`].
pub(crate) fn choose(
    dir: Option<&Path>,
    offline_model: bool,
) -> Result<(Arc<dyn SearchBackend>, String), ExampleError> {
    let tavily = std::env::var("TAVILY_API_KEY").is_ok_and(|k| !k.is_empty());
    match dir {
        None if !offline_model && tavily => Ok((Arc::new(TavilySearch::new()), "tavily".into())),
        _ => {
            let dir = dir.map_or_else(default_corpus_dir, Path::to_path_buf);
            Ok((corpus(&dir)?, format!("corpus:{}", dir.display())))
        }
    }
}
