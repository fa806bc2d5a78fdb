//! Drawing a compiled graph: Mermaid, Graphviz DOT and a plain outline.

use std::fmt::Write;
use std::sync::Arc;

use crate::graph::{END, START};

/// The declared structure of a graph, as drawn.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub(crate) nodes: Vec<ShapeNode>,
    pub(crate) edges: Vec<ShapeEdge>,
    /// The JSON Schema of the graph's state, when one was given
    /// ([`CompiledGraph::with_state_schema`](crate::CompiledGraph::with_state_schema)).
    pub(crate) state_schema: Option<Arc<serde_json::Value>>,
    /// A subgraph added with `add_subgraph`: its state type is its parent's.
    pub(crate) parent_state: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct ShapeNode {
    pub(crate) name: Arc<str>,
    pub(crate) subgraph: Option<Arc<Shape>>,
}

#[derive(Debug, Clone)]
pub(crate) struct ShapeEdge {
    pub(crate) from: Arc<str>,
    pub(crate) to: Arc<str>,
    pub(crate) kind: EdgeKind,
    /// The path-map label of a conditional edge.
    pub(crate) label: Option<Arc<str>>,
}

/// How an edge is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EdgeKind {
    /// Always taken after its source: a solid arrow.
    Plain,
    /// One source of a join (the target waits for all of them): a thick arrow.
    Join,
    /// A possible route of a router or `Command`: a dashed arrow.
    Conditional,
}

/// Text inside a quoted Mermaid label (Mermaid has no backslash escapes).
fn quoted(text: &str) -> String {
    text.replace('"', "#quot;")
}

/// Mermaid and DOT identifiers: letters, digits and `_`; anything else becomes `_xx`.
fn ident(prefix: &str, name: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + name.len());
    for c in prefix.chars().chain(name.chars()) {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else {
            let _ = write!(out, "_{:x}", c as u32);
        }
    }
    out
}

fn label(name: &str) -> &str {
    match name {
        START => "start",
        END => "end",
        other => other,
    }
}

impl Shape {
    fn subgraph_of(&self, name: &str) -> Option<&Shape> {
        self.nodes
            .iter()
            .find(|n| &*n.name == name)
            .and_then(|n| n.subgraph.as_deref())
    }

    /// The id an edge attaches to: subgraph nodes are entered at their START and left at
    /// their END.
    fn endpoint(&self, prefix: &str, name: &str, leaving: bool) -> String {
        if self.subgraph_of(name).is_some() {
            let inner = format!("{prefix}{name}__");
            ident(&inner, if leaving { END } else { START })
        } else {
            ident(prefix, name)
        }
    }

    pub(crate) fn mermaid(&self) -> String {
        let mut out = String::from("flowchart TD\n");
        self.mermaid_body(&mut out, "", 1);
        out.push_str("    classDef terminal fill:#eee,stroke:#999\n");
        out
    }

    fn mermaid_body(&self, out: &mut String, prefix: &str, depth: usize) {
        let pad = "    ".repeat(depth);
        let _ = writeln!(
            out,
            "{pad}{}([{}]):::terminal",
            ident(prefix, START),
            label(START)
        );
        for node in &self.nodes {
            match &node.subgraph {
                Some(child) => {
                    let inner = format!("{prefix}{}__", node.name);
                    let _ = writeln!(
                        out,
                        "{pad}subgraph {}[\"{}\"]",
                        ident(prefix, &node.name),
                        node.name
                    );
                    child.mermaid_body(out, &inner, depth + 1);
                    let _ = writeln!(out, "{pad}end");
                }
                None => {
                    let _ = writeln!(out, "{pad}{}[\"{}\"]", ident(prefix, &node.name), node.name);
                }
            }
        }
        let _ = writeln!(
            out,
            "{pad}{}([{}]):::terminal",
            ident(prefix, END),
            label(END)
        );
        for edge in &self.edges {
            let arrow = match (edge.kind, &edge.label) {
                (EdgeKind::Plain, _) => "-->".to_owned(),
                (EdgeKind::Join, _) => "==>".to_owned(),
                (EdgeKind::Conditional, None) => "-.->".to_owned(),
                (EdgeKind::Conditional, Some(label)) => format!("-.->|\"{}\"|", quoted(label)),
            };
            let _ = writeln!(
                out,
                "{pad}{} {arrow} {}",
                self.endpoint(prefix, &edge.from, true),
                self.endpoint(prefix, &edge.to, false)
            );
        }
    }

    pub(crate) fn dot(&self) -> String {
        let mut out = String::from(
            "digraph graphkit {\n    rankdir=TB;\n    node [shape=box, style=rounded];\n",
        );
        self.dot_body(&mut out, "", 1);
        out.push_str("}\n");
        out
    }

    fn dot_body(&self, out: &mut String, prefix: &str, depth: usize) {
        let pad = "    ".repeat(depth);
        for terminal in [START, END] {
            let _ = writeln!(
                out,
                "{pad}{} [label=\"{}\", shape=oval];",
                ident(prefix, terminal),
                label(terminal)
            );
        }
        for node in &self.nodes {
            match &node.subgraph {
                Some(child) => {
                    let inner = format!("{prefix}{}__", node.name);
                    let _ = writeln!(
                        out,
                        "{pad}subgraph cluster_{} {{",
                        ident(prefix, &node.name)
                    );
                    let _ = writeln!(
                        out,
                        "{pad}    label=\"{}\";",
                        node.name.replace('"', "\\\"")
                    );
                    child.dot_body(out, &inner, depth + 1);
                    let _ = writeln!(out, "{pad}}}");
                }
                None => {
                    let _ = writeln!(
                        out,
                        "{pad}{} [label=\"{}\"];",
                        ident(prefix, &node.name),
                        node.name.replace('"', "\\\"")
                    );
                }
            }
        }
        for edge in &self.edges {
            let style = match (edge.kind, &edge.label) {
                (EdgeKind::Plain, _) => String::new(),
                (EdgeKind::Join, _) => " [style=bold, arrowhead=diamond]".to_owned(),
                (EdgeKind::Conditional, None) => " [style=dashed]".to_owned(),
                (EdgeKind::Conditional, Some(label)) => {
                    format!(" [style=dashed, label=\"{}\"]", label.replace('"', "\\\""))
                }
            };
            let _ = writeln!(
                out,
                "{pad}{} -> {}{style};",
                self.endpoint(prefix, &edge.from, true),
                self.endpoint(prefix, &edge.to, false)
            );
        }
    }

    pub(crate) fn ascii(&self) -> String {
        let mut out = String::new();
        self.ascii_body(&mut out, 0);
        out
    }

    fn ascii_body(&self, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        let sources = std::iter::once(START).chain(self.nodes.iter().map(|n| &*n.name));
        for source in sources {
            let targets: Vec<String> = self
                .edges
                .iter()
                .filter(|e| &*e.from == source)
                .map(|e| match (e.kind, &e.label) {
                    (EdgeKind::Plain, _) => label(&e.to).to_owned(),
                    (EdgeKind::Join, _) => format!("&{}", label(&e.to)),
                    (EdgeKind::Conditional, None) => format!("?{}", label(&e.to)),
                    (EdgeKind::Conditional, Some(l)) => format!("?{l}:{}", label(&e.to)),
                })
                .collect();
            let _ = writeln!(
                out,
                "{pad}{} -> {}",
                label(source),
                if targets.is_empty() {
                    "end".into()
                } else {
                    targets.join(", ")
                }
            );
            if let Some(child) = self.subgraph_of(source) {
                child.ascii_body(out, depth + 1);
            }
        }
    }
}
