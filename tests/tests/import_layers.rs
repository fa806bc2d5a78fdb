//! Import layers: no circles between the modules of a crate.
//!
//! Every folder of a crate's `src/` should read as layers: a module may use its lower
//! siblings, never the other way round. This test parses a crate's source with `syn`, finds
//! every reference to the crate's own modules, and reports every circle between sibling
//! modules, with one example `file:line` per edge.
//!
//! How it works:
//! 1. **Module tree.** From `lib.rs`, follow `mod name;` to `name.rs` or `name/mod.rs`
//!    (inline `mod name { ... }` blocks are modules too). `#[cfg]` is ignored: every module
//!    that has a file is read. `#[path]` attributes are not supported.
//! 2. **References.** Paths starting with `crate::`, `super::` or `self::`, in `use` items
//!    (including `{...}` groups, `self` in groups and globs), in inline paths (types,
//!    expressions, patterns, trait bounds) and in macro bodies (by scanning tokens).
//! 3. **Resolution.** A path resolves to the longest existing module it names. A name that
//!    a module brings in with `use` (typically a `pub use` re-export at the crate root or
//!    in a `mod.rs`) is followed to the module that defines it.
//! 4. **Layers.** A reference from module `P` to module `Q` is an edge between the two
//!    siblings where their paths part: `crate::run::runner` → `crate::graph::node` is an
//!    edge `run → graph` at the crate root. A reference to an ancestor or a descendant
//!    (a `mod.rs` to its children, a child to its `mod.rs`) is no edge.
//! 5. **Circles.** Each folder's sibling graph is searched for strongly connected
//!    components; every component of more than one module is a circle.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// A module path below the crate root (`["run", "runner"]`; the root is `[]`).
type ModPath = Vec<String>;

/// One module: its children, and the names its `use` items bring in.
#[derive(Default)]
struct Module {
    children: Vec<String>,
    /// `name → absolute path` of every name brought in by a `use` item (renames included).
    uses: HashMap<String, Vec<String>>,
    /// Absolute paths of the modules glob-imported (`use path::*`).
    globs: Vec<Vec<String>>,
    /// The names of the items it defines (to follow glob re-exports).
    defines: Vec<String>,
}

/// A path found in the source, made absolute (starting at the crate root).
struct Reference {
    from: ModPath,
    path: Vec<String>,
    at: String,
}

/// A crate's module tree and every reference to its own modules.
#[derive(Default)]
struct Crate {
    /// The folder `file:line`s are given relative to (the crate's folder).
    base: PathBuf,
    modules: HashMap<ModPath, Module>,
    references: Vec<Reference>,
}

impl Crate {
    /// Reads the crate whose root file is `src/lib.rs`.
    fn load(src: &Path) -> Crate {
        let mut krate = Crate {
            base: src.parent().unwrap_or(src).to_owned(),
            ..Crate::default()
        };
        krate.load_file(&src.join("lib.rs"), src, Vec::new());
        krate
    }

    /// Reads one file (`dir` holds the files of its `mod name;` children).
    fn load_file(&mut self, file: &Path, dir: &Path, module: ModPath) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let ast = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", file.display()));
        self.modules.entry(module.clone()).or_default();
        self.load_items(&ast.items, file, dir, module);
    }

    /// Reads the items of one module: its children (in files or inline) first, so that
    /// `use child::...` resolves wherever it stands; then its `use` items, the names it
    /// defines, and every path in its code.
    fn load_items(&mut self, items: &[syn::Item], file: &Path, dir: &Path, module: ModPath) {
        let (mods, others): (Vec<_>, Vec<_>) = items
            .iter()
            .partition(|item| matches!(item, syn::Item::Mod(_)));
        for item in mods.into_iter().chain(others) {
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let mut child = module.clone();
                    child.push(name.clone());
                    self.module(&module).children.push(name.clone());
                    self.modules.entry(child.clone()).or_default();
                    match &m.content {
                        Some((_, inner)) => self.load_items(inner, file, &dir.join(&name), child),
                        None => {
                            let flat = dir.join(format!("{name}.rs"));
                            let folder = dir.join(&name).join("mod.rs");
                            if flat.exists() {
                                self.load_file(&flat, &dir.join(&name), child);
                            } else if folder.exists() {
                                self.load_file(&folder, &dir.join(&name), child);
                            }
                        }
                    }
                }
                syn::Item::Use(u) => {
                    let mut leaves = Vec::new();
                    use_leaves(&u.tree, Vec::new(), &mut leaves);
                    for (name, path) in leaves {
                        let Some(path) = self.absolute(&module, &path, true) else {
                            continue;
                        };
                        self.record(&module, file, u.span(), path.clone());
                        let this = self.module(&module);
                        match name {
                            Some(name) => _ = this.uses.insert(name, path),
                            None => this.globs.push(path),
                        }
                    }
                }
                other => {
                    if let Some(name) = defined_name(other) {
                        self.module(&module).defines.push(name);
                    }
                    let mut paths = PathCollector::default();
                    paths.visit_item(other);
                    for (path, span) in paths.found {
                        if let Some(path) = self.absolute(&module, &path, false) {
                            self.record(&module, file, span, path);
                        }
                    }
                }
            }
        }
    }

    fn module(&mut self, path: &ModPath) -> &mut Module {
        self.modules
            .get_mut(path)
            .expect("modules are added before their items")
    }

    fn record(&mut self, from: &ModPath, file: &Path, span: proc_macro2::Span, path: Vec<String>) {
        let file = file.strip_prefix(&self.base).unwrap_or(file);
        let at = format!("{}:{}", file.display(), span.start().line);
        self.references.push(Reference {
            from: from.clone(),
            path,
            at,
        });
    }

    /// `path` as seen from `module`, made absolute; `None` for paths outside the crate.
    /// In `use` items, a path may also start with a child module's name.
    fn absolute(&self, module: &ModPath, path: &[String], in_use: bool) -> Option<Vec<String>> {
        let mut base = module.clone();
        let mut rest = path;
        match path.first()?.as_str() {
            "crate" => {
                base.clear();
                rest = &path[1..];
            }
            "self" => rest = &path[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
            }
            first if in_use && self.modules[module].children.iter().any(|c| c == first) => {}
            _ => return None,
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The longest module an absolute path names, following names brought in by `use`.
    fn resolve(&self, path: &[String], depth: usize) -> ModPath {
        let mut module: ModPath = Vec::new();
        for (i, segment) in path.iter().enumerate() {
            let here = &self.modules[&module];
            if here.children.contains(segment) {
                module.push(segment.clone());
                continue;
            }
            // A name brought in by `use`: continue from where it comes from.
            let imported = here.uses.get(segment).cloned().or_else(|| {
                here.globs.iter().find_map(|glob| {
                    let target = self.resolve(glob, depth + 1);
                    let m = &self.modules[&target];
                    let found = m.children.contains(segment)
                        || m.uses.contains_key(segment)
                        || m.defines.contains(segment);
                    found.then(|| [glob.as_slice(), std::slice::from_ref(segment)].concat())
                })
            });
            if let Some(target) = imported.filter(|_| depth < 16) {
                let mut full = target;
                full.extend(path[i + 1..].iter().cloned());
                return self.resolve(&full, depth + 1);
            }
            break;
        }
        module
    }

    /// Every circle between sibling modules, one line each with its edges.
    fn circles(&self) -> Vec<String> {
        // (parent, from, to) → the first place the edge is seen
        let mut edges: BTreeMap<(ModPath, String, String), &str> = BTreeMap::new();
        for reference in &self.references {
            let to = self.resolve(&reference.path, 0);
            let from = &reference.from;
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                let key = (
                    from[..common].to_vec(),
                    from[common].clone(),
                    to[common].clone(),
                );
                edges.entry(key).or_insert(&reference.at);
            }
        }
        let mut levels: BTreeMap<&ModPath, Vec<(&str, &str, &str)>> = BTreeMap::new();
        for ((parent, from, to), at) in &edges {
            levels.entry(parent).or_default().push((from, to, at));
        }
        let mut circles = Vec::new();
        for (parent, level) in levels {
            let mut graph = petgraph::graph::DiGraph::<&str, ()>::new();
            let mut index = HashMap::new();
            for &(from, to, _) in &level {
                let a = *index.entry(from).or_insert_with(|| graph.add_node(from));
                let b = *index.entry(to).or_insert_with(|| graph.add_node(to));
                graph.add_edge(a, b, ());
            }
            for component in petgraph::algo::tarjan_scc(&graph) {
                if component.len() < 2 {
                    continue;
                }
                let mut names: Vec<&str> = component.iter().map(|&n| graph[n]).collect();
                names.sort_unstable();
                let level_name = [&["crate".to_owned()], parent.as_slice()]
                    .concat()
                    .join("::");
                let mut line = format!("{level_name} {{{}}}:", names.join(", "));
                for &(from, to, at) in &level {
                    if names.contains(&from) && names.contains(&to) {
                        _ = write!(line, " {from} → {to} ({at});");
                    }
                }
                circles.push(line);
            }
        }
        circles
    }
}

/// The name an item defines, if it is one a path can name.
fn defined_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The leaves of a `use` tree: `(name it brings in, path)`; the name is `None` for a glob.
fn use_leaves(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    out: &mut Vec<(Option<String>, Vec<String>)>,
) {
    let with = |ident: &syn::Ident| [prefix.clone(), vec![ident.to_string()]].concat();
    match tree {
        syn::UseTree::Path(p) => use_leaves(&p.tree, with(&p.ident), out),
        // `use a::{self}` names `a` itself.
        syn::UseTree::Name(n) if n.ident == "self" => {
            out.push((prefix.last().cloned(), prefix.clone()))
        }
        syn::UseTree::Name(n) => out.push((Some(n.ident.to_string()), with(&n.ident))),
        syn::UseTree::Rename(r) if r.ident == "self" => {
            out.push((Some(r.rename.to_string()), prefix.clone()))
        }
        syn::UseTree::Rename(r) => out.push((Some(r.rename.to_string()), with(&r.ident))),
        syn::UseTree::Glob(_) => out.push((None, prefix)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                use_leaves(tree, prefix.clone(), out);
            }
        }
    }
}

/// Collects the paths of one item that start with `crate`, `super` or `self`.
#[derive(Default)]
struct PathCollector {
    found: Vec<(Vec<String>, proc_macro2::Span)>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        // `self` alone is the method receiver, not a module.
        if segments.len() > 1 && is_root(&segments[0]) {
            self.found.push((segments, path.span()));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        scan_tokens(mac.tokens.clone(), &mut self.found);
    }

    // `use` items inside functions, for the same reasons as at module level.
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        use_leaves(&item.tree, Vec::new(), &mut leaves);
        for (_, path) in leaves.into_iter().filter(|(_, p)| is_root(&p[0])) {
            self.found.push((path, item.span()));
        }
    }
}

fn is_root(segment: &str) -> bool {
    matches!(segment, "crate" | "super" | "self")
}

/// Finds `crate::a::b`-like paths in a macro's tokens (which `syn` does not parse).
fn scan_tokens(tokens: TokenStream, found: &mut Vec<(Vec<String>, proc_macro2::Span)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => scan_tokens(g.stream(), found),
            TokenTree::Ident(first) if is_root(&first.to_string()) => {
                let mut path = vec![first.to_string()];
                let mut j = i + 1;
                // `::` is two `:` puncts, then an identifier.
                while let [
                    TokenTree::Punct(a),
                    TokenTree::Punct(b),
                    TokenTree::Ident(next),
                    ..,
                ] = &tokens[j.min(tokens.len())..]
                {
                    if a.as_char() != ':' || b.as_char() != ':' {
                        break;
                    }
                    path.push(next.to_string());
                    j += 3;
                }
                if path.len() > 1 {
                    found.push((path, first.span()));
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Fails with every circle found in the crate at `src` (relative to the workspace), except
/// those listed in `elsewhere`: circles that another branch is breaking, named by their
/// folder and members as reported (`"crate::checkpoint {sqlite, sqlite_writer}"`). Remove
/// an entry once that branch is merged.
fn assert_no_circles(src: &str, elsewhere: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(src);
    let (tolerated, circles): (Vec<String>, Vec<String>) = Crate::load(&root)
        .circles()
        .into_iter()
        .partition(|circle| {
            elsewhere
                .iter()
                .any(|e| circle.starts_with(&format!("{e}:")))
        });
    for circle in &tolerated {
        println!("being broken on another branch: {circle}");
    }
    assert!(
        circles.is_empty(),
        "import circles between sibling modules of {src} (break each by moving what both \
         sides need below both):\n{}",
        circles.join("\n")
    );
}

/// Layers of graphkit core, bottom up (docs/architecture.md draws them): `interrupt`,
/// `error`, `state`, `command`, `checkpoint`/`store`, `context`, `snapshot`, `graph`, `run`.
#[test]
fn graphkit_has_no_import_circles() {
    assert_no_circles("graphkit/src", &[]);
}

#[test]
fn graphkit_llm_has_no_import_circles() {
    assert_no_circles("graphkit-llm/src", &[]);
}

#[test]
fn graphkit_tools_has_no_import_circles() {
    assert_no_circles("graphkit-tools/src", &[]);
}

#[test]
fn graphkit_server_has_no_import_circles() {
    assert_no_circles("graphkit-server/src", &[]);
}

#[test]
fn graphkit_examples_has_no_import_circles() {
    assert_no_circles("examples/src", &[]);
}

/// The checker itself, on a crate written to a temporary folder.
#[test]
fn checker_finds_a_known_circle_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let file: PathBuf = dir.path().join("src").join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    // `low` is used by everyone; `a` and `b` form a circle, `b` reaching `a` through the
    // crate root's re-export and an inline path; `folder/` has a circle inside it (a
    // `super::` use one way, a macro body the other), and its `mod.rs` uses its children
    // (no circle). `top` uses everything and nobody uses it.
    write(
        "lib.rs",
        "mod low; mod a; mod b; mod folder; mod top;\npub use a::Alpha;\n",
    );
    write(
        "low.rs",
        "pub struct Low;\n#[cfg(test)] mod tests { use super::Low; }\n",
    );
    write(
        "a.rs",
        "use crate::b::Beta;\nuse crate::low::Low;\npub struct Alpha;\n",
    );
    write(
        "b.rs",
        "pub struct Beta;\nfn make() -> crate::Alpha {\n    todo!()\n}\n",
    );
    write(
        "folder/mod.rs",
        "mod inner; mod other;\npub use inner::Inner;\nfn f(_: self::other::Other) {}\n",
    );
    write(
        "folder/inner.rs",
        "use super::other::Other;\npub struct Inner;\n",
    );
    write(
        "folder/other.rs",
        "pub struct Other;\nfn g() { let _ = format!(\"{}\", crate::folder::inner::NAME); }\n",
    );
    write(
        "top.rs",
        "use crate::{a, b::Beta, folder::Inner, low::*};\n",
    );

    let circles = Crate::load(&dir.path().join("src")).circles();
    assert_eq!(
        circles,
        [
            "crate {a, b}: a → b (src/a.rs:1); b → a (src/b.rs:2);",
            "crate::folder {inner, other}: inner → other (src/folder/inner.rs:1); \
             other → inner (src/folder/other.rs:2);",
        ]
    );
}
