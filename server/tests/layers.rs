//! The server's modules layer downward: no module reaches, through `crate::` paths in its code
//! (comments and doc links aside), a module that reaches back to it. `lib.rs` is the top and
//! may use any of them. A newcomer who adds an import that closes a circle gets the circle
//! named here.
use std::{
    collections::{BTreeMap, BTreeSet},
    path::Path,
};

/// The top-level module a file belongs to (`epoll/conn.rs` -> `epoll`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_string()
}

/// The modules a piece of code names after `crate::`, including every item of a grouped
/// `use crate::{a::x, b, c::{y, z}}`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The group's items at depth 0, split on its top-level commas.
            let mut depth = 0;
            let mut start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(group[start..j].trim()));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(group[start..j].trim()));
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

/// Each file's code without its comments (line comments and doc comments).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A circle through `from`, if the graph has one: the modules in order.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        at: &str,
        goal: &str,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
    ) -> bool {
        for next in graph.get(at).into_iter().flatten() {
            if next == goal {
                return true;
            }
            if seen.insert(next.clone()) {
                path.push(next.clone());
                if walk(graph, next, goal, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    let mut path = vec![from.to_string()];
    walk(graph, from, from, &mut path, &mut BTreeSet::new()).then_some(path)
}

#[test]
fn modules_import_downward_with_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &all {
        let from = module_of(&src, f);
        if from == "lib" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(f).unwrap());
        let deps = graph.entry(from.clone()).or_default();
        for to in crate_paths(&code) {
            if to != from {
                deps.insert(to);
            }
        }
    }
    assert!(graph.len() >= 8, "read too few modules: {graph:?}");
    // Spot checks that the reading finds imports at all: both engines answer through batch.
    assert!(graph["epoll"].contains("batch") && graph["uring"].contains("batch"));
    for m in graph.keys() {
        if let Some(c) = circle(&graph, m) {
            panic!(
                "the server's modules go in a circle: {} -> {m}",
                c.join(" -> ")
            );
        }
    }
    // Nothing below an engine imports from one.
    for (m, deps) in &graph {
        if m != "epoll" && m != "uring" {
            assert!(
                !deps.contains("epoll") && !deps.contains("uring"),
                "{m} imports from an engine: {deps:?}"
            );
        }
    }
}

#[test]
fn grouped_and_plain_crate_paths_are_read() {
    let got = crate_paths("use crate::{a::x, b, c::{y, z}};\nlet v = crate::d::f();");
    assert_eq!(got, ["a", "b", "c", "d"].map(String::from).into());
    assert!(code_of("x // crate::e\n/// crate::f")
        .find("crate")
        .is_none());
}
