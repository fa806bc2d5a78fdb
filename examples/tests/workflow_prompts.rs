//! Each workflow's page in docs/workflows/ shows one full prompt per model role, as
//! `graphkit-research WORKFLOW --print-prompts` prints it from the code (the offline run's
//! requests, written as the OpenAI API would get them). This checks that the pages still
//! show what the code sends. `GRAPHKIT_BLESS_DOCS=1` rewrites the pages' blocks instead.

use std::path::PathBuf;
use std::process::Command;

const WORKFLOWS: [&str; 5] = [
    "entity-intel",
    "due-diligence",
    "arxiv-research",
    "biography-events",
    "mcp-research",
];
const BEGIN: &str = "<!-- prompts:begin -->\n";
const END: &str = "<!-- prompts:end -->";

/// Roles the default offline run does not reach, shown in a second block of the page
/// (`<!-- prompts:NAME:begin -->`) printed by a run with these options: biography-events'
/// gap check of given events (incremental runs) and its detail assessment (asked when most
/// events already have full details).
const OTHER_RUNS: [(&str, &str, &[&str]); 1] = [(
    "biography-events",
    "incremental",
    &[
        "--initial-events",
        "inputs/biography-initial-events.json",
        "--full-detail-ratio",
        "0.3",
    ],
)];

fn printed(workflow: &str) -> String {
    printed_with(workflow, &[])
}

/// `--print-prompts` with `args` (paths relative to the crate's folder).
fn printed_with(workflow: &str, args: &[&str]) -> String {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a.ends_with(".json") {
                crate_dir.join(a).display().to_string()
            } else {
                (*a).to_owned()
            }
        })
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .args([workflow, "--print-prompts"])
        .args(&args)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the CLI");
    assert!(
        out.status.success(),
        "{workflow} --print-prompts failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// `text` with every date (`2026-01-31`, `2026-01-31T10:00:00Z`, with fractions) as
/// `<date>` (the agent's prompt names today) and every tool call id (`call_9ad4...`) as
/// `call_<id>` (made afresh per run).
fn without_varying(text: &str) -> String {
    let b = text.as_bytes();
    let digits =
        |at: usize, n: usize| b.len() >= at + n && b[at..at + n].iter().all(u8::is_ascii_digit);
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if digits(i, 4)
            && b.get(i + 4) == Some(&b'-')
            && digits(i + 5, 2)
            && b.get(i + 7) == Some(&b'-')
            && digits(i + 8, 2)
        {
            let mut j = i + 10;
            if b.get(j) == Some(&b'T') && digits(j + 1, 2) && digits(j + 4, 2) && digits(j + 7, 2) {
                j += 9;
                if b.get(j) == Some(&b'.') {
                    j += 1;
                    while j < b.len() && b[j].is_ascii_digit() {
                        j += 1;
                    }
                }
                if b.get(j) == Some(&b'Z') {
                    j += 1;
                }
            }
            out.push_str("<date>");
            i = j;
        } else if b[i..].starts_with(b"\"call_") {
            let mut j = i + 6;
            while j < b.len() && b[j].is_ascii_alphanumeric() {
                j += 1;
            }
            out.push_str("\"call_<id>");
            i = j;
        } else {
            let ch = text[i..].chars().next().expect("a char");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// The role blocks, dates left out, sorted (parallel branches may meet the roles in
/// another order).
fn roles(text: &str) -> Vec<String> {
    let text = without_varying(text);
    let mut blocks: Vec<String> = text
        .split("\n#### Role: ")
        .skip(1)
        .map(|b| b.trim().to_owned())
        .collect();
    blocks.sort();
    blocks
}

#[test]
fn every_workflow_page_shows_the_prompts_its_code_sends() {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/workflows");
    let bless = std::env::var_os("GRAPHKIT_BLESS_DOCS").is_some();
    for workflow in WORKFLOWS {
        let printed = printed(workflow);
        let found = roles(&printed);
        assert!(
            found.len() >= 2,
            "{workflow}: fewer than two roles:\n{printed}"
        );
        for block in &found {
            assert!(
                block.contains("\"messages\"") && block.contains("\"role\": \"user\""),
                "{workflow}: a role without its messages:\n{block}"
            );
        }
        let path = docs.join(format!("{workflow}.md"));
        let page = std::fs::read_to_string(&path).expect("the workflow's page");
        let (Some(begin), Some(end)) = (page.find(BEGIN), page.find(END)) else {
            panic!("{} has no {BEGIN:?} ... {END:?} block", path.display());
        };
        let shown = &page[begin + BEGIN.len()..end];
        if bless {
            let page = format!("{}{BEGIN}{printed}{}", &page[..begin], &page[end..]);
            std::fs::write(&path, page).expect("write the page");
            continue;
        }
        assert_eq!(
            roles(shown),
            found,
            "{} does not show the prompts the code sends; rewrite its block with \
             GRAPHKIT_BLESS_DOCS=1 cargo test -p graphkit-examples --test integration workflow_prompts",
            path.display()
        );
    }
}

#[test]
fn roles_only_other_runs_reach_are_shown_in_their_own_block() {
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/workflows");
    let bless = std::env::var_os("GRAPHKIT_BLESS_DOCS").is_some();
    for (workflow, name, args) in OTHER_RUNS {
        let printed = printed_with(workflow, args);
        let found = roles(&printed);
        let default = roles(&printed_with(workflow, &[]));
        assert!(
            found.iter().any(|r| !default.contains(r)),
            "{workflow} {args:?} reaches no role the default run misses"
        );
        let (begin, end) = (
            format!("<!-- prompts:{name}:begin -->\n"),
            format!("<!-- prompts:{name}:end -->"),
        );
        let path = docs.join(format!("{workflow}.md"));
        let page = std::fs::read_to_string(&path).expect("the workflow's page");
        let (Some(at), Some(to)) = (page.find(&begin), page.find(&end)) else {
            panic!("{} has no {begin:?} ... {end:?} block", path.display());
        };
        if bless {
            let page = format!("{}{begin}{printed}{}", &page[..at], &page[to..]);
            std::fs::write(&path, page).expect("write the page");
            continue;
        }
        assert_eq!(
            roles(&page[at + begin.len()..to]),
            found,
            "{} does not show the prompts of `{workflow} --print-prompts {}`; rewrite it with \
             GRAPHKIT_BLESS_DOCS=1 cargo test -p graphkit-examples --test integration workflow_prompts",
            path.display(),
            args.join(" ")
        );
    }
}

#[test]
fn print_prompts_refuses_a_real_model() {
    let out = Command::new(env!("CARGO_BIN_EXE_graphkit-research"))
        .args([
            "mcp-research",
            "--print-prompts",
            "--model",
            "openai-compatible:http://127.0.0.1:9/v1#none",
        ])
        .current_dir(std::env::temp_dir())
        .output()
        .expect("run the CLI");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--print-prompts") && text.contains("--model"),
        "{text}"
    );
}
