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

/// Like [`local_model_spec`], for a test that takes minutes on the local model (many long
/// replies at about 25 tokens a second on one CPU thread): it also needs
/// `GRAPHKIT_TEST_LLM_SLOW=1`, so CI's run stays bounded and the test runs on demand.
pub fn slow_local_model_spec() -> Option<String> {
    let spec = local_model_spec()?;
    if std::env::var("GRAPHKIT_TEST_LLM_SLOW").as_deref() != Ok("1") {
        eprintln!(
            "skipped: this local-model test takes minutes; set GRAPHKIT_TEST_LLM_SLOW=1 as well as GRAPHKIT_TEST_LLM_URL to run it"
        );
        return None;
    }
    Some(spec)
}
