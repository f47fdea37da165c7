//! The shape of the code, checked so that it stays: the workspace's crates
//! and the modules of `ncmesh-proto` and `ncmesh-sim` depend on each other
//! without a cycle, the event loop names no protocol, and the network
//! builder names no coding protocol.
//!
//! The module graph comes from a small token scan of the sources, which
//! sees what a reader sees rather than what the compiler resolves:
//!
//! * A node is a top-level module of a crate (`src/x.rs` or `src/x/` is
//!   `x`, as `lib.rs` declares it, following `#[path]`), or, inside a
//!   directory module, a submodule (`src/x/y.rs` or `src/x/y/` is `y`;
//!   `#[path]` is not followed there). The crate root (`lib.rs`) and a
//!   directory's root (`mod.rs`) are no node: their re-exports point at
//!   every child, and children read the items they share.
//! * An edge is a path that starts with `crate`, `super` or `self`, in a
//!   `use` tree or in code, or that makes up a whole string literal (as in
//!   `#[serde(with = "crate::time::serde_secs")]`), resolved against the
//!   module it appears in (inline modules included). A `crate::` path to a
//!   `#[macro_export]` macro points at the module that defines it. Paths
//!   through a name a `use` brought in are covered by that `use`.
//! * A path that reaches an item through its parent's re-export (a
//!   sibling's `crate::tcp::Segment`) points at the parent, which is no
//!   node, so such a sibling dependency is not seen.
//! * Comments, doc comments and their intra-doc links are skipped, and so
//!   are items under exactly `#[cfg(test)]`; other `cfg` forms are scanned.
//! * Macro bodies are scanned as tokens; what they expand to is not.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

/// Words that name a transport protocol or one of TCP's algorithms.
const TRANSPORT_PROTOCOLS: &[&str] = &["tcp", "udp", "reno", "newreno", "cubic", "vegas", "sack", "bbr"];

/// Words that name a coding protocol, besides the modules `builtin.rs`
/// registers (see [`coding_protocols`]).
const CODING_PROTOCOLS: &[&str] = &["nc", "tcpnc", "honc", "cope"];

#[test]
fn workspace_crates_form_no_cycle() {
    let graph = crate_graph();
    assert!(
        graph.edges.contains_key(&("ncmesh-sim".into(), "ncmesh-proto".into())),
        "the manifests were read: {graph:?}"
    );
    if let Some(report) = graph.cycles() {
        panic!("the workspace's crates depend on each other in a cycle:\n{report}");
    }
}

#[test]
fn proto_modules_form_no_cycle() {
    assert_no_module_cycle(&SourceTree::read("proto"));
}

#[test]
fn sim_modules_form_no_cycle() {
    assert_no_module_cycle(&SourceTree::read("sim"));
}

/// The event loop wakes nodes, media and endpoints through their traits:
/// which protocols run is the network builder's and the registry's business.
#[test]
fn event_loop_names_no_protocol() {
    let proto = SourceTree::read("proto");
    let mut forbidden = coding_protocols(&proto);
    forbidden.extend(TRANSPORT_PROTOCOLS.iter().map(|w| w.to_string()));
    let found = words_named(SourceTree::read("sim").file("world.rs"), &forbidden);
    assert!(found.is_empty(), "world.rs names protocols:\n{}", found.join("\n"));
}

/// The network builder sets up TCP and UDP applications, but coding layers
/// only through the scenario's registry, so a new scheme needs no change here.
#[test]
fn network_builder_names_no_coding_protocol() {
    let forbidden = coding_protocols(&SourceTree::read("proto"));
    let found = words_named(SourceTree::read("sim").file("network.rs"), &forbidden);
    assert!(found.is_empty(), "network.rs names coding protocols:\n{}", found.join("\n"));
}

/// The scan itself, on a file written to trip it.
#[test]
fn the_scan_resolves_paths_and_skips_comments_strings_and_tests() {
    let source = r##"
        //! Doc links are no edges: [`X`](crate::doc_only::X).
        use super::{sibling_a, sibling_b::{self, Item as Renamed}};
        use crate::{top_a, top_b::deep::*};
        /* crate::in_block_comment::X /* nested */ crate::still_comment */
        const S: &str = "crate::not_a_whole_path here";
        const C: char = '"';
        #[serde(with = "crate::from_attribute::serde")]
        fn f<'a>(x: &'a str) -> usize { let _ = r#"crate::in_raw_string "quoted""#; crate::in_code::call(x) }
        pub(crate) mod inline {
            fn g() { super::super::from_inline::h(); self::own(); }
        }
        #[cfg(test)]
        mod tests { use crate::test_only::X; }
        #[cfg(test)]
        use crate::test_only_use::Y;
        fn after_tests() { $crate::from_macro::Z; }
    "##;
    let module = vec!["outer".to_string(), "file".to_string()];
    let found: BTreeSet<Vec<String>> = references(&tokenize(source), &module).into_iter().map(|r| r.path).collect();
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    let expected: BTreeSet<Vec<String>> = [
        "outer::sibling_a",
        "outer::sibling_b",
        "outer::sibling_b::Item",
        "top_a",
        "top_b::deep",
        "from_attribute::serde",
        "in_code::call",
        "outer::from_inline::h",
        "outer::file::inline::own",
        "from_macro::Z",
    ]
    .into_iter()
    .map(path)
    .collect();
    assert_eq!(found, expected);
    assert_eq!(
        words("TcpNcSource tcp_nc HONC Ipv4Addr ncmesh_proto"),
        ["tcp", "nc", "source", "tcp", "nc", "honc", "ipv4", "addr", "ncmesh", "proto"]
    );
}

// Crates.

/// The path dependencies among the workspace's crates, from their
/// manifests, development and build dependencies included (Cargo refuses a
/// cycle of normal dependencies itself, but not one closed by a test).
fn crate_graph() -> Graph {
    let crates_dir = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/sim sits in crates/");
    let mut manifests = BTreeMap::new();
    for entry in fs::read_dir(crates_dir).expect("the crates directory lists") {
        let manifest = entry.expect("a directory entry").path().join("Cargo.toml");
        if let Ok(text) = fs::read_to_string(&manifest) {
            manifests.insert(manifest, text);
        }
    }
    let names: BTreeMap<&PathBuf, String> =
        manifests.iter().filter_map(|(path, text)| Some((path, package_name(text)?))).collect();
    let members: BTreeSet<&String> = names.values().collect();
    let mut graph = Graph::default();
    for (path, text) in &manifests {
        let Some(name) = names.get(path) else { continue };
        for (line, dependency) in dependencies(text) {
            if members.contains(&dependency) {
                graph.add(
                    name,
                    &dependency,
                    Site { file: format!("crates/{}/Cargo.toml", crate_dir_name(path)), line },
                );
            }
        }
    }
    graph
}

fn crate_dir_name(manifest: &Path) -> String {
    manifest.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `name` of the `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if let (true, Some(value)) =
            (in_package, line.strip_prefix("name").map(str::trim_start).and_then(|l| l.strip_prefix('=')))
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// Every dependency a manifest names, with its line: keys of the
/// `[*dependencies]` tables and `[*dependencies.name]` headers. A renamed
/// dependency (`package = ...`) is seen under its new name.
fn dependencies(manifest: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut in_table = false;
    for (n, line) in manifest.lines().map(str::trim).enumerate() {
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_table = header.ends_with("dependencies");
            if let Some((_, name)) = header.rsplit_once("dependencies.") {
                found.push((n + 1, name.trim_matches('"').to_string()));
            }
        } else if in_table && !line.is_empty() && !line.starts_with('#') {
            let key = line.split(['=', '.', ' ']).next().unwrap_or_default();
            found.push((n + 1, key.trim_matches('"').to_string()));
        }
    }
    found
}

// Modules.

fn assert_no_module_cycle(tree: &SourceTree) {
    let (top, within) = tree.module_graphs();
    assert!(!top.edges.is_empty(), "the scan found no dependency between the modules of {}", tree.name);
    let mut reports: Vec<String> =
        top.cycles().map(|r| format!("top-level modules of {}:\n{r}", tree.name)).into_iter().collect();
    for (dir, graph) in &within {
        if let Some(r) = graph.cycles() {
            reports.push(format!("submodules of {}::{dir}:\n{r}", tree.name));
        }
    }
    assert!(reports.is_empty(), "import cycles:\n{}", reports.join("\n"));
}

/// The protocols whose names the simulator's core keeps out of its code:
/// the fixed list, and every module `builtin.rs` registers a scheme from.
fn coding_protocols(proto: &SourceTree) -> BTreeSet<String> {
    let (top, _) = proto.module_graphs();
    let registered =
        top.edges.keys().filter(|(from, to)| from == "builtin" && to != "scheme").map(|(_, to)| to.clone());
    CODING_PROTOCOLS.iter().map(|w| w.to_string()).chain(registered).collect()
}

/// Where in the code of `file` (comments and `#[cfg(test)]` items skipped,
/// strings included) a word of an identifier or string is in `forbidden`.
fn words_named(file: &SourceFile, forbidden: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for_each_scanned(&file.tokens, |token| {
        let text = match &token.kind {
            Kind::Ident(t) | Kind::Str(t) => t,
            _ => return,
        };
        for word in words(text) {
            if forbidden.contains(&word) {
                found.push(format!("  {}:{}: {word} in {text:?}", file.path, token.line));
            }
        }
    });
    found
}

/// The words of identifiers and text, lower case: snake_case and CamelCase
/// both split, so `TcpNcSource` and `tcp_nc_source` give the same words.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for run in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|r| !r.is_empty()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in run.chars() {
            if c.is_ascii_uppercase() && previous_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word).to_ascii_lowercase());
            }
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            word.push(c);
        }
        out.push(word.to_ascii_lowercase());
    }
    out
}

/// A crate's `src/`, every file with its module path and tokens.
#[derive(Debug)]
struct SourceTree {
    name: &'static str,
    files: Vec<SourceFile>,
    /// Top-level modules, and the submodules of each directory module.
    modules: BTreeMap<String, BTreeSet<String>>,
}

#[derive(Debug)]
struct SourceFile {
    /// Relative to the crate, for reports.
    path: String,
    /// Empty for the crate root.
    module: Vec<String>,
    tokens: Vec<Token>,
}

impl SourceTree {
    /// Reads `crates/<name>/src` next to this crate.
    fn read(name: &'static str) -> SourceTree {
        let src =
            Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("crates/sim sits in crates/").join(name).join("src");
        let load = |path: &Path, module: Vec<String>| {
            let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let relative = path.strip_prefix(src.parent().unwrap()).unwrap_or(path).display().to_string();
            SourceFile { path: relative, module, tokens: tokenize(&text) }
        };
        let root = load(&src.join("lib.rs"), Vec::new());
        let mut files = Vec::new();
        let mut modules = BTreeMap::new();
        for (module, declared_path) in declared_modules(&root.tokens) {
            let file = src.join(declared_path.unwrap_or_else(|| {
                if src.join(&module).is_dir() {
                    format!("{module}/mod.rs")
                } else {
                    format!("{module}.rs")
                }
            }));
            // A module's children live in its file's directory (`x/mod.rs`) or beside it (`x.rs`, `x/`).
            let children_dir = if file.file_name().is_some_and(|n| n == "mod.rs") {
                file.parent().unwrap().to_path_buf()
            } else {
                file.with_extension("")
            };
            let mut submodules = BTreeSet::new();
            files.push(load(&file, vec![module.clone()]));
            for child in rust_files(&children_dir).into_iter().filter(|c| *c != file) {
                let mut path = vec![module.clone()];
                path.extend(
                    child
                        .strip_prefix(&children_dir)
                        .unwrap()
                        .with_extension("")
                        .iter()
                        .map(|c| c.to_string_lossy().into_owned()),
                );
                if path.last().is_some_and(|l| l == "mod") {
                    path.pop();
                }
                submodules.insert(path[1].clone());
                files.push(load(&child, path));
            }
            modules.insert(module, submodules);
        }
        files.push(root);
        SourceTree { name, files, modules }
    }

    fn file(&self, path_in_src: &str) -> &SourceFile {
        let path = format!("src/{path_in_src}");
        self.files
            .iter()
            .find(|f| f.path.replace('\\', "/") == path)
            .unwrap_or_else(|| panic!("no {path} in {}", self.name))
    }

    /// The graph of top-level modules, and of each directory's submodules.
    fn module_graphs(&self) -> (Graph, BTreeMap<String, Graph>) {
        let macros = self.exported_macros();
        let mut top = Graph::default();
        let mut within: BTreeMap<String, Graph> = self
            .modules
            .iter()
            .filter(|(_, subs)| !subs.is_empty())
            .map(|(m, _)| (m.clone(), Graph::default()))
            .collect();
        for file in self.files.iter().filter(|f| !f.module.is_empty()) {
            for reference in references(&file.tokens, &file.module) {
                let target = match reference.path.first().and_then(|first| macros.get(first)) {
                    Some(defined_in) => defined_in.clone(),
                    None => reference.path,
                };
                let site = || Site { file: file.path.clone(), line: reference.line };
                let Some(to) = target.first().filter(|t| self.modules.contains_key(*t)) else { continue };
                if *to != file.module[0] {
                    top.add(&file.module[0], to, site());
                    continue;
                }
                // Within one directory module: a file below its root, naming a sibling.
                if let (Some(from), Some(to)) = (file.module.get(1), target.get(1)) {
                    if from != to && self.modules[&file.module[0]].contains(to) {
                        within.get_mut(&file.module[0]).expect("a module with submodules has a graph").add(
                            from,
                            to,
                            site(),
                        );
                    }
                }
            }
        }
        (top, within)
    }

    /// `#[macro_export]` macros, which live at the crate root, by the
    /// module that defines them.
    fn exported_macros(&self) -> BTreeMap<String, Vec<String>> {
        let mut macros = BTreeMap::new();
        for file in &self.files {
            let t = &file.tokens;
            for i in 0..t.len() {
                let is = |k: usize, text: &str| t.get(i + k).is_some_and(|tok| tok.is(text));
                if is(0, "#") && is(1, "[") && is(2, "macro_export") && is(3, "]") {
                    if let Some(Kind::Ident(name)) = (i + 4..t.len())
                        .find(|&k| t[k].is("macro_rules"))
                        .and_then(|k| t.get(k + 2))
                        .map(|tok| &tok.kind)
                    {
                        macros.insert(name.clone(), file.module.clone());
                    }
                }
            }
        }
        macros
    }
}

/// `.rs` files below `dir`, sorted; none if it does not exist.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else { return out };
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The out-of-line `mod name;` declarations of a crate root, with their
/// `#[path]`, leaving out `#[cfg(test)]` ones.
fn declared_modules(tokens: &[Token]) -> Vec<(String, Option<String>)> {
    let mut declared = Vec::new();
    let mut path_attribute = None;
    let mut i = 0;
    while i < tokens.len() {
        let is = |k: usize, text: &str| tokens.get(i + k).is_some_and(|t| t.is(text));
        if is_cfg_test(tokens, i) {
            i = skip_item(tokens, i);
            continue;
        }
        if is(0, "#") && is(1, "[") && is(2, "path") && is(3, "=") {
            if let Some(Kind::Str(p)) = tokens.get(i + 4).map(|t| &t.kind) {
                path_attribute = Some(p.clone());
            }
        }
        if let (true, Some(Kind::Ident(name)), true) = (is(0, "mod"), tokens.get(i + 1).map(|t| &t.kind), is(2, ";")) {
            declared.push((name.clone(), path_attribute.take()));
        } else if is(0, ";") || is(0, "}") {
            path_attribute = None;
        }
        i += 1;
    }
    declared
}

// Paths.

/// A module path a file names: absolute, from the crate root.
#[derive(Debug)]
struct Reference {
    path: Vec<String>,
    line: usize,
}

/// Every path from `crate`, `super` or `self` in the tokens of a file whose
/// module path is `module`, resolved from the crate root.
fn references(tokens: &[Token], module: &[String]) -> Vec<Reference> {
    let mut found = Vec::new();
    // Inline modules open here, with the brace depth just outside each.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut i = 0;
    while i < tokens.len() {
        if is_cfg_test(tokens, i) {
            i = skip_item(tokens, i);
            continue;
        }
        let here = || module.iter().cloned().chain(inline.iter().map(|(m, _)| m.clone())).collect::<Vec<_>>();
        let token = &tokens[i];
        match &token.kind {
            Kind::Ident(w) if w == "mod" => {
                if let (Some(Kind::Ident(name)), true) =
                    (tokens.get(i + 1).map(|t| &t.kind), tokens.get(i + 2).is_some_and(|t| t.is("{")))
                {
                    inline.push((name.clone(), depth));
                    i += 2;
                    continue;
                }
            }
            Kind::Ident(w)
                if matches!(w.as_str(), "crate" | "super" | "self")
                    && tokens.get(i + 1).is_some_and(|t| t.is("::")) =>
            {
                let (paths, next) = use_tree(tokens, i, Vec::new());
                found.extend(paths.iter().map(|p| Reference { path: resolve(&here(), p), line: token.line }));
                i = next;
                continue;
            }
            Kind::Str(s) if is_whole_path(s) => {
                let segments: Vec<String> = s.split("::").map(str::to_string).collect();
                found.push(Reference { path: resolve(&here(), &segments), line: token.line });
            }
            Kind::Punct('{') => depth += 1,
            Kind::Punct('}') => {
                depth -= 1;
                if inline.last().is_some_and(|&(_, outside)| outside == depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// The paths of a `use` tree (or a plain path) from `tokens[i]`, each
/// ending at its last name; and the index after it.
fn use_tree(tokens: &[Token], mut i: usize, mut prefix: Vec<String>) -> (Vec<Vec<String>>, usize) {
    loop {
        match tokens.get(i).map(|t| &t.kind) {
            Some(Kind::Ident(name)) => {
                prefix.push(name.clone());
                i += 1;
                if !tokens.get(i).is_some_and(|t| t.is("::")) {
                    return (vec![prefix], i);
                }
                i += 1;
            }
            Some(Kind::Punct('{')) => {
                let mut paths = Vec::new();
                i += 1;
                loop {
                    match tokens.get(i) {
                        None => return (paths, i),
                        Some(t) if t.is("}") => return (paths, i + 1),
                        Some(t) if t.is(",") => i += 1,
                        // `name as alias`: the alias names nothing new.
                        Some(t) if t.is("as") => i += 2,
                        Some(_) => {
                            let (inner, next) = use_tree(tokens, i, prefix.clone());
                            paths.extend(inner);
                            i = next.max(i + 1);
                        }
                    }
                }
            }
            Some(Kind::Punct('*')) => return (vec![prefix], i + 1),
            // `<`, `(`, or anything else: the path ends here.
            _ => return (vec![prefix], i),
        }
    }
}

/// A path from the crate root: `crate` restarts there, `super` goes up, a
/// `self` (leading or in a group) stays.
fn resolve(module: &[String], segments: &[String]) -> Vec<String> {
    let mut path = module.to_vec();
    for (k, segment) in segments.iter().enumerate() {
        match segment.as_str() {
            "crate" if k == 0 => path.clear(),
            "super" => {
                path.pop();
            }
            "self" => {}
            _ => path.push(segment.clone()),
        }
    }
    path
}

/// A string that is one path from `crate`, `super` or `self`, nothing else.
fn is_whole_path(s: &str) -> bool {
    let mut segments = s.split("::");
    matches!(segments.next(), Some("crate" | "super" | "self"))
        && s.contains("::")
        && segments.all(|seg| !seg.is_empty() && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// Exactly `#[cfg(test)]` at `tokens[i]`.
fn is_cfg_test(tokens: &[Token], i: usize) -> bool {
    ["#", "[", "cfg", "(", "test", ")", "]"]
        .iter()
        .enumerate()
        .all(|(k, text)| tokens.get(i + k).is_some_and(|t| t.is(text)))
}

/// The index after the item whose attributes start at `tokens[i]`: after
/// its `;`, or after its closing brace.
fn skip_item(tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < tokens.len() {
        match &tokens[i].kind {
            Kind::Punct('(' | '[' | '{') => depth += 1,
            Kind::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Kind::Punct('}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            Kind::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// Calls `visit` on every token outside `#[cfg(test)]` items.
fn for_each_scanned(tokens: &[Token], mut visit: impl FnMut(&Token)) {
    let mut i = 0;
    while i < tokens.len() {
        if is_cfg_test(tokens, i) {
            i = skip_item(tokens, i);
            continue;
        }
        visit(&tokens[i]);
        i += 1;
    }
}

// Tokens.

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Ident(String),
    /// A string literal's content, escapes left as written.
    Str(String),
    /// `::`.
    PathSeparator,
    Punct(char),
    /// Numbers, character literals, lifetimes: nothing a path is made of.
    Other,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    line: usize,
}

impl Token {
    /// Whether this is the identifier or punctuation `text`.
    fn is(&self, text: &str) -> bool {
        match &self.kind {
            Kind::Ident(t) => t == text,
            Kind::PathSeparator => text == "::",
            Kind::Punct(c) => text.len() == c.len_utf8() && text.starts_with(*c),
            _ => false,
        }
    }
}

/// Rust source as identifiers, strings and punctuation, comments dropped.
fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let at = |k: usize| chars.get(k).copied().unwrap_or('\0');
    let is_ident_start = |c: char| c.is_ascii_alphabetic() || c == '_';
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Reads a quoted string whose content starts at `i`; returns it and the index after the quote.
    let quoted = |mut i: usize, line: &mut usize| {
        let start = i;
        while i < chars.len() && chars[i] != '"' {
            if chars[i] == '\\' {
                i += 1;
            }
            if at(i) == '\n' {
                *line += 1;
            }
            i += 1;
        }
        (chars[start..i.min(chars.len())].iter().collect::<String>(), i + 1)
    };
    while i < chars.len() {
        let c = chars[i];
        let token_line = line;
        let mut push = |kind| tokens.push(Token { kind, line: token_line });
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let (text, next) = quoted(i + 1, &mut line);
            push(Kind::Str(text));
            i = next;
        } else if is_ident_start(c) {
            let start = i;
            while is_ident(at(i)) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let hashes = (i..).take_while(|&k| at(k) == '#').count();
            if matches!(word.as_str(), "r" | "br" | "cr") && at(i + hashes) == '"' {
                // A raw string: ends at a quote followed by as many hashes.
                let start = i + hashes + 1;
                let mut end = start;
                while end < chars.len() && !(chars[end] == '"' && (1..=hashes).all(|h| at(end + h) == '#')) {
                    line += usize::from(chars[end] == '\n');
                    end += 1;
                }
                push(Kind::Str(chars[start..end.min(chars.len())].iter().collect()));
                i = end + 1 + hashes;
            } else if word == "r" && hashes == 1 && is_ident_start(at(i + 1)) {
                let start = i + 1;
                i = start;
                while is_ident(at(i)) {
                    i += 1;
                }
                push(Kind::Ident(chars[start..i].iter().collect()));
            } else if matches!(word.as_str(), "b" | "c") && at(i) == '"' {
                let (text, next) = quoted(i + 1, &mut line);
                push(Kind::Str(text));
                i = next;
            } else if word == "b" && at(i) == '\'' {
                i = skip_char_literal(&chars, i);
                push(Kind::Other);
            } else {
                push(Kind::Ident(word));
            }
        } else if c.is_ascii_digit() {
            while is_ident(at(i)) {
                i += 1;
            }
            push(Kind::Other);
        } else if c == '\'' {
            if at(i + 1) == '\\' || at(i + 2) == '\'' {
                i = skip_char_literal(&chars, i);
            } else {
                // A lifetime or a loop label.
                i += 1;
                while is_ident(at(i)) {
                    i += 1;
                }
            }
            push(Kind::Other);
        } else if c == ':' && at(i + 1) == ':' {
            push(Kind::PathSeparator);
            i += 2;
        } else {
            push(Kind::Punct(c));
            i += 1;
        }
    }
    tokens
}

/// The index after a character literal whose opening quote is at `i`.
fn skip_char_literal(chars: &[char], i: usize) -> usize {
    // Past the quote and the first character, escaped or not, then to the closing quote.
    let mut k = i + if chars.get(i + 1) == Some(&'\\') { 3 } else { 2 };
    while k < chars.len() && chars[k] != '\'' {
        k += 1;
    }
    k + 1
}

// Graphs.

/// Where a dependency is written.
#[derive(Clone, Debug)]
struct Site {
    file: String,
    line: usize,
}

/// Directed dependencies, each with where it is first written.
#[derive(Debug, Default)]
struct Graph {
    edges: BTreeMap<(String, String), Site>,
}

impl Graph {
    fn add(&mut self, from: &str, to: &str, site: Site) {
        self.edges.entry((from.to_string(), to.to_string())).or_insert(site);
    }

    fn successors<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.edges.keys().filter(move |(from, _)| from == node).map(|(_, to)| to.as_str())
    }

    fn reaches(&self, from: &str, to: &str) -> bool {
        self.shortest_path(from, to).is_some()
    }

    /// The nodes from `from` to `to` (both included), by breadth-first search.
    fn shortest_path(&self, from: &str, to: &str) -> Option<Vec<String>> {
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(node) = queue.pop_front() {
            for next in self.successors(node) {
                if previous.contains_key(next) {
                    continue;
                }
                previous.insert(next, node);
                if next == to {
                    let mut path = vec![to.to_string()];
                    let mut at = to;
                    while at != from || path.len() == 1 {
                        at = previous[at];
                        path.push(at.to_string());
                        if at == from {
                            break;
                        }
                    }
                    path.reverse();
                    return Some(path);
                }
                queue.push_back(next);
            }
        }
        None
    }

    /// One shortest cycle through each group of mutually dependent nodes,
    /// each step with where it is written; `None` if the graph is acyclic.
    fn cycles(&self) -> Option<String> {
        let nodes: BTreeSet<&str> = self.edges.keys().flat_map(|(a, b)| [a.as_str(), b.as_str()]).collect();
        let mut reported: BTreeSet<&str> = BTreeSet::new();
        let mut report = String::new();
        for &node in &nodes {
            if reported.contains(node) || !self.reaches(node, node) {
                continue;
            }
            let group: Vec<&str> =
                nodes.iter().copied().filter(|&other| self.reaches(node, other) && self.reaches(other, node)).collect();
            reported.extend(&group);
            let cycle = self.shortest_path(node, node).expect("the node reaches itself");
            report.push_str(&format!("  {} (of the group {})\n", cycle.join(" -> "), group.join(", ")));
            for step in cycle.windows(2) {
                let site = &self.edges[&(step[0].clone(), step[1].clone())];
                report.push_str(&format!("    {} -> {}: {}:{}\n", step[0], step[1], site.file, site.line));
            }
        }
        (!report.is_empty()).then_some(report)
    }
}
