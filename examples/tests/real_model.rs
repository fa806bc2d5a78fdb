//! One bounded run against a real model server: `GRAPHKIT_TEST_LLM_URL` (an
//! OpenAI-compatible base URL; the CI points it at the small local model). Skipped, saying
//! so, when it is unset.

use std::process::Command;

#[test]
fn arxiv_research_against_a_real_model_ends_within_its_budget_and_its_report_says_what_it_could_not_do()
 {
    let Ok(url) = std::env::var("GRAPHKIT_TEST_LLM_URL") else {
        eprintln!(
            "skipped: GRAPHKIT_TEST_LLM_URL is not set (an OpenAI-compatible base URL such as the one \
             /work/shared/tools/local-llm/start.sh prints)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let ran = Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .current_dir(dir.path())
        .args([
            "arxiv-research",
            "--quiet",
            "--arxiv",
            "offline",
            "--max-steps",
            "1",
            "--time-budget",
            "60",
            "--model",
            &format!("openai-compatible:{}#local", url.trim_end_matches('/')),
        ])
        .arg("--out")
        .arg(&out)
        .env("GRAPHKIT_MODEL_RETRIES", "0")
        .output()
        .expect("run the CLI");
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let stderr = String::from_utf8_lossy(&ran.stderr);
    // Ends cleanly, by itself: finished, or (when the budget ran out before any call
    // came back) failed saying that every model call failed.
    match ran.status.code() {
        Some(0) => {}
        Some(1) => assert!(
            stderr.contains("every model call failed"),
            "{stdout}\n{stderr}"
        ),
        other => panic!("exit {other:?}:\n{stdout}\n{stderr}"),
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    // A small model cannot do the whole review: the report says which part it could not do.
    let said = [
        "**Plan not the model's:**",
        "## What the run could not do",
        "**Not synthesized.**",
        "**Insufficient evidence.**",
    ];
    assert!(
        said.iter().any(|s| report.contains(s)),
        "the report does not say what the run could not do:\n{report}\n{stdout}\n{stderr}"
    );
}
