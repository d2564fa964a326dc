//! The dependency rules, checked on the sources: `extract/` is pure (no network, no disk,
//! no database); no module of `api/` names the store (handlers go through the job service
//! and the other services); the top-level modules of `src/` form no cycle; and the map of
//! the house that README's "Architecture" and the crate's own doc draw matches it: every
//! top-level module in its layer, no import running upwards, every actor in the tree. The
//! checks read Rust paths (`crate::x`, `ferrocrawl::x`, `use crate::{x, y}`) with comments
//! and string literals removed, and are themselves tested on samples that break the rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).expect("read")));
        }
    }
    out
}

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// `text` without comments, string and character literals (their contents could look like
/// paths).
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let mut depth = 0;
                while i < bytes.len() {
                    if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            (b'r', Some(b'#' | b'"')) if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() => {
                // A raw string: r"..." or r#"..."#.
                let mut j = i + 1;
                let mut hashes = 0;
                while bytes.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if bytes.get(j) != Some(&b'"') {
                    out.push('r');
                    i += 1;
                    continue;
                }
                j += 1;
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                while j < bytes.len() && !bytes[j..].starts_with(&close) {
                    j += 1;
                }
                i = j + close.len();
                out.push_str("\"\"");
            }
            (b'"', _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("\"\"");
            }
            (b'\'', Some(_)) if bytes.get(i + 2) == Some(&b'\'') || bytes.get(i + 1) == Some(&b'\\') => {
                // A character literal ('a', '\n'); lifetimes ('a) are left alone.
                i += 1;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push_str("' '");
            }
            (c, _) => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn ident_at(text: &str) -> &str {
    let end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    &text[..end]
}

/// The top-level modules of this crate that `text` names in a path.
fn named_modules(text: &str) -> BTreeSet<String> {
    let code = code_only(text);
    let mut out = BTreeSet::new();
    for root in ["crate::", "ferrocrawl::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().next_back();
            rest = &rest[at + root.len()..];
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let after = rest.trim_start();
            if let Some(group) = after.strip_prefix('{') {
                // `crate::{a, b::c, d as e}`: every item's first segment.
                let mut depth = 1;
                let mut item_start = true;
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        ',' if depth == 1 => item_start = true,
                        c if depth == 1 && item_start && (c.is_ascii_alphabetic() || c == '_') => {
                            out.insert(ident_at(&group[i..]).to_owned());
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            } else {
                let name = ident_at(after);
                if !name.is_empty() {
                    out.insert(name.to_owned());
                }
            }
        }
    }
    out
}

/// Files under `src/api` that name the store module.
fn api_files_naming_the_store() -> Vec<String> {
    sources(&src().join("api"))
        .into_iter()
        .filter(|(_, text)| named_modules(text).contains("store") || code_only(text).contains("sled::"))
        .map(|(path, _)| path)
        .collect()
}

/// Dependencies between the top-level modules of `src/`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph = BTreeMap::new();
    for entry in std::fs::read_dir(src()).expect("src").flatten() {
        let path = entry.path();
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
        if name == "main" || name == "lib" {
            continue;
        }
        let files = if path.is_dir() {
            sources(&path)
        } else {
            vec![(path.display().to_string(), std::fs::read_to_string(&path).expect("read"))]
        };
        let mut deps: BTreeSet<String> = files.iter().flat_map(|(_, text)| named_modules(text)).collect();
        deps.remove(&name);
        // A module may be a file and a folder (`config.rs` and `config/`).
        graph.entry(name).or_insert_with(BTreeSet::new).extend(deps);
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

/// Every cycle of `graph`, each as the path that closes it.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_owned());
            found.push(cycle);
            return;
        }
        if !done.insert(node.to_owned()) {
            return;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            visit(graph, next, path, done, found);
        }
        path.pop();
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(graph, node, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

/// The layers a map draws, top to bottom: the modules of each numbered item (`N. ` at the
/// start of a line, after `//!` in a doc), named in backticks before the item's dash or
/// colon.
fn layers(map: &str) -> Vec<BTreeSet<String>> {
    let mut out = Vec::new();
    for line in map.lines() {
        let line = line.trim_start().trim_start_matches("//!").trim_start();
        let Some((number, item)) = line.split_once(". ") else { continue };
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let names = item.split(['—', ':']).next().unwrap_or_default();
        let modules: BTreeSet<String> = names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(|name| name.trim_matches(['[', ']']).to_owned())
            .filter(|name| !name.is_empty())
            .collect();
        out.push(modules);
    }
    out
}

/// README's "Architecture" section.
fn readme_architecture() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("README");
    let start = readme.find("## Architecture").expect("an Architecture section");
    let rest = &readme[start + 2..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_owned()
}

/// The crate's own doc (the `//!` lines of `lib.rs`).
fn crate_doc() -> String {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    lib.lines().filter(|l| l.trim_start().starts_with("//!")).collect::<Vec<_>>().join("\n")
}

/// What is wrong with `map` as a map of `graph`: modules missing or named twice or unknown,
/// and imports that run upwards or sideways (between modules of one layer).
fn map_errors(map: &str, graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let layers = layers(map);
    let mut errors = Vec::new();
    let mut layer_of = BTreeMap::new();
    for (n, layer) in layers.iter().enumerate() {
        for module in layer {
            if !graph.contains_key(module) {
                errors.push(format!("`{module}` is drawn but is no module of src/"));
            }
            if layer_of.insert(module.clone(), n).is_some() {
                errors.push(format!("`{module}` is drawn twice"));
            }
        }
    }
    for (module, deps) in graph {
        let Some(&at) = layer_of.get(module) else {
            errors.push(format!("`{module}` is not drawn"));
            continue;
        };
        for dep in deps {
            if layer_of.get(dep).is_some_and(|&below| below <= at) {
                errors.push(format!(
                    "`{module}` uses `{dep}`, drawn in layer {} (not below {})",
                    layer_of[dep] + 1,
                    at + 1
                ));
            }
        }
    }
    errors
}

/// The names of the actors the code defines (`impl Actor for X`).
fn actors() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (_, text) in sources(&src()) {
        let code = code_only(&text);
        let mut rest = code.as_str();
        while let Some(at) = rest.find("impl Actor for ") {
            rest = &rest[at + "impl Actor for ".len()..];
            out.insert(ident_at(rest).to_owned());
        }
    }
    out
}

#[test]
fn the_maps_match_the_house() {
    let graph = module_graph();
    for (name, map) in [("README's Architecture", readme_architecture()), ("lib.rs's doc", crate_doc())] {
        assert_eq!(
            map_errors(&map, &graph),
            Vec::<String>::new(),
            "{name} does not match the code: {graph:#?}"
        );
        for actor in actors() {
            assert!(map.contains(&actor), "{name} does not draw actor `{actor}`");
        }
    }
    assert!(actors().len() > 8, "the actors were read: {:?}", actors());
}

#[test]
fn extract_is_pure() {
    for (path, text) in sources(&src().join("extract")) {
        let code = code_only(&text);
        for word in ["reqwest", "tokio", "sled", "std::fs", "std::net"] {
            assert!(!code.contains(word), "{path} names `{word}`, which extract must not use");
        }
    }
}

#[test]
fn api_never_names_the_store() {
    assert_eq!(api_files_naming_the_store(), Vec::<String>::new(), "src/api must go through the services");
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 8, "the modules were read: {graph:?}");
    assert_eq!(cycles(&graph), Vec::<Vec<String>>::new(), "{graph:#?}");
}

/// The checks catch what they are meant to catch.
#[test]
fn the_checks_fail_on_samples_that_break_the_rules() {
    let breaking = [
        "use crate::store::JobStore;",
        "use crate::{model::JobId, store};",
        "use crate::{\n    config::Settings,\n    store::{self, Store},\n};",
        "fn f() { let s = crate::store::Store::open(p); }",
        "use ferrocrawl::store::Store;",
    ];
    for sample in breaking {
        assert!(named_modules(sample).contains("store"), "missed: {sample}");
    }
    let clean = [
        "// use crate::store::JobStore;",
        "/* crate::store */ use crate::service::JobService;",
        "let s = \"crate::store\";",
        "let s = r#\"crate::store\"#;",
        "use crate::restore::x; use crate::stores::y; mystore::z();",
        "use crate::{model::{JobId, store_like}, service};",
    ];
    for sample in clean {
        assert!(!named_modules(sample).contains("store"), "false alarm: {sample}");
    }
    let mut graph = BTreeMap::new();
    graph.insert("a".to_owned(), BTreeSet::from(["b".to_owned()]));
    graph.insert("b".to_owned(), BTreeSet::from(["c".to_owned()]));
    graph.insert("c".to_owned(), BTreeSet::from(["a".to_owned()]));
    graph.insert("d".to_owned(), BTreeSet::from(["a".to_owned()]));
    assert_eq!(cycles(&graph), vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned(), "a".to_owned()]]);
    graph.get_mut("c").expect("c").clear();
    assert!(cycles(&graph).is_empty());
    // A map with a module missing, one unknown, and one drawn above what uses it.
    let map = "1. `d` — top\n2. `a`, `b` — the middle\n3. `c`, `x`: the bottom\n4. [`a`]: again";
    let errors = map_errors(map, &graph);
    for wanted in ["`a` uses `b`", "`x` is drawn but", "`a` is drawn twice"] {
        assert!(errors.iter().any(|e| e.starts_with(wanted)), "missed {wanted}: {errors:?}");
    }
    let good = "1. `d`\n2. `a`: one\n3. `b`\n4. `c`";
    assert_eq!(map_errors(good, &graph), Vec::<String>::new());
    assert_eq!(map_errors("1. `d`\n2. `a`\n3. `b`", &graph), vec!["`c` is not drawn".to_owned()]);
}
