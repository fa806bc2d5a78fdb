//! docs/from-langgraph.md shows the `port_*` examples and their LangGraph twins as they are
//! in their files, and its table counts what the files count.

use std::path::{Path, PathBuf};

/// The four ports: the example `port_<name>.rs` and its twin `docs/from-langgraph/<name>.py`.
const PORTS: [&str; 4] = ["chatbot", "map_reduce", "supervisor", "approval"];

const BEGIN: &str = "// port: begin\n";
const END: &str = "// port: end\n";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    let path = workspace().join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn page() -> String {
    read("docs/from-langgraph.md")
}

/// The example split at its markers: what is counted, and the test double after it.
fn port_and_test_double(name: &str) -> (String, String) {
    let example = read(&format!("graphkit-tools/examples/port_{name}.rs"));
    assert_eq!(
        example.matches(BEGIN).count(),
        1,
        "port_{name}.rs: one `{BEGIN}`"
    );
    assert_eq!(
        example.matches(END).count(),
        1,
        "port_{name}.rs: one `{END}`"
    );
    let (_, rest) = example.split_once(BEGIN).expect("begin marker");
    let (port, double) = rest.split_once(END).expect("end marker");
    (port.to_owned(), double.trim_start_matches('\n').to_owned())
}

fn twin(name: &str) -> String {
    read(&format!("docs/from-langgraph/{name}.py"))
}

/// The bodies of the page's code blocks fenced with ```lang, each ending with a newline.
fn blocks(page: &str, lang: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut current: Option<String> = None;
    for line in page.lines() {
        match current.as_mut() {
            None if line == format!("```{lang}") => current = Some(String::new()),
            Some(_) if line == "```" => found.extend(current.take()),
            Some(body) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    found
}

fn non_blank_lines(text: &str) -> usize {
    text.lines().filter(|line| !line.trim().is_empty()).count()
}

fn shows(blocks: &[String], code: &str) -> bool {
    let code = code.trim_end_matches('\n');
    blocks.iter().any(|b| b.trim_end_matches('\n') == code)
}

#[test]
fn page_shows_each_port_and_its_test_double_as_the_example_has_them() {
    let rust = blocks(&page(), "rust");
    for name in PORTS {
        let (port, double) = port_and_test_double(name);
        assert!(
            shows(&rust, &port),
            "docs/from-langgraph.md does not show port_{name}.rs between its markers; copy it over"
        );
        assert!(
            shows(&rust, &double),
            "docs/from-langgraph.md does not show the test double of port_{name}.rs; copy it over"
        );
    }
}

#[test]
fn page_shows_each_langgraph_twin_as_its_file_has_it() {
    let python = blocks(&page(), "python");
    for name in PORTS {
        assert!(
            shows(&python, &twin(name)),
            "docs/from-langgraph.md does not show docs/from-langgraph/{name}.py; copy it over"
        );
    }
}

#[test]
fn table_counts_the_non_blank_lines_of_both_versions_and_their_ratio() {
    let page = page();
    for name in PORTS {
        let marker = format!("(`port_{name}`)");
        let row = page
            .lines()
            .find(|line| line.starts_with('|') && line.contains(&marker))
            .unwrap_or_else(|| panic!("no table row for port_{name}"));
        let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
        let python = non_blank_lines(&twin(name));
        let rust = non_blank_lines(&port_and_test_double(name).0);
        let ratio = format!("{:.2}", rust as f64 / python as f64);
        assert_eq!(
            cells[1..],
            [python.to_string(), rust.to_string(), ratio],
            "the table row of port_{name} (LangGraph lines, graphkit lines, ratio)"
        );
    }
}
