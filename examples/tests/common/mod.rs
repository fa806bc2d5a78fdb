//! Helpers shared by the integration tests (a test file includes them with `mod common;`).

/// The provider spec of the local test model (`openai-compatible:URL#smol`, URL from
/// `GRAPHKIT_TEST_LLM_URL`), or `None` after saying the test is skipped when that is not
/// set.
pub fn local_model_spec() -> Option<String> {
    let Ok(url) = std::env::var("GRAPHKIT_TEST_LLM_URL") else {
        eprintln!(
            "skipped: set GRAPHKIT_TEST_LLM_URL (../shared/tools/local-llm/start.sh prints it) to run this test"
        );
        return None;
    };
    Some(format!(
        "openai-compatible:{}#smol",
        url.trim_end_matches('/')
    ))
}
