//! The workspace's modules layer downward. In every crate, no module reaches (through
//! `crate::`, `super::` or `self::` paths in its code, comments aside) a module that reaches
//! back to it: no circle. In `userspace/`, each command is a room of its own
//! (`commands/<name>`): no command imports another, and the shared machinery (every other
//! module) imports no command. In `server/`, nothing but the two engines imports an engine.
//!
//! A unit is a crate's top-level module (`epoll/conn.rs` is `epoll`), or one command
//! (`commands/compare/args.rs` is `commands::compare`). `lib.rs` and `main.rs` are the tops
//! and may use anything. A newcomer who adds an import that breaks a rule gets the rule and
//! the path named here.
use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

/// The folder whose subfolders and files are one unit each.
const COMMANDS: &str = "commands";

type Graph = BTreeMap<String, BTreeSet<String>>;

/// A file's module path (`commands/compare/mod.rs` -> [commands, compare]; lib.rs -> []).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// The unit a module path belongs to.
fn unit_of(path: &[String]) -> Option<String> {
    match path {
        [] => None,
        [c, name, ..] if c == COMMANDS => Some(format!("{COMMANDS}::{name}")),
        [first, ..] => Some(first.clone()),
    }
}

fn ident(s: &str) -> String {
    s.trim()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The paths a piece of code names from `at` (a module path), resolved to module paths:
/// `crate::a::b`, `super::x` (from the enclosing module's parent: an inline `mod tests {`
/// counts), `self::y`, and every item of a group `use crate::{a::x, b, c::{y, z}}` (two
/// segments of each are enough to find its unit).
fn paths_named(code: &str, at: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // Inline modules open around the current position: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth: usize = 0;
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let c = rest.chars().next().unwrap();
        // A path or `mod` only at the start of a word, not inside a name (`my_crate::`).
        let at_start = !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                inline.retain(|(_, d)| *d <= depth);
            }
            _ => {}
        }
        if at_start && rest.starts_with("mod ") {
            let name = ident(&rest[4..]);
            if rest[4..].trim_start()[name.len()..]
                .trim_start()
                .starts_with('{')
            {
                inline.push((name, depth + 1));
            }
        }
        let here: Vec<String> = at
            .iter()
            .cloned()
            .chain(inline.iter().map(|(n, _)| n.clone()))
            .collect();
        let base = if !at_start {
            None
        } else if rest.starts_with("crate::") {
            Some((Vec::new(), "crate::".len()))
        } else if rest.starts_with("self::") {
            Some((here, "self::".len()))
        } else if rest.starts_with("super::") {
            Some((
                here[..here.len().saturating_sub(1)].to_vec(),
                "super::".len(),
            ))
        } else {
            None
        };
        let Some((mut base, skip)) = base else {
            i += c.len_utf8();
            continue;
        };
        let mut tail = &rest[skip..];
        while let Some(t) = tail.strip_prefix("super::") {
            base.pop();
            tail = t;
        }
        for item in group_items(tail) {
            let mut p = base.clone();
            p.extend(
                item.split("::")
                    .map(ident)
                    .take_while(|s| !s.is_empty())
                    .take(2),
            );
            out.push(p);
        }
        i += rest.len() - tail.len();
    }
    out
}

/// `{a::x, b, c::{y, z}} ...` -> ["a::x", "b", "c::y", "c::z"]; `a::b::c ...` -> ["a::b::c"].
fn group_items(tail: &str) -> Vec<String> {
    let Some(group) = tail.strip_prefix('{') else {
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        if tail[..end].ends_with("::") && tail[end..].starts_with('{') {
            let prefix = &tail[..end];
            return group_items(&tail[end..])
                .into_iter()
                .map(|i| format!("{prefix}{i}"))
                .collect();
        }
        return vec![tail[..end].to_string()];
    };
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (j, c) in group.char_indices() {
        let end = match c {
            '{' => {
                depth += 1;
                false
            }
            '}' if depth == 0 => true,
            '}' => {
                depth -= 1;
                false
            }
            ',' => depth == 0,
            _ => false,
        };
        if end {
            let item = group[start..j].trim();
            if !item.is_empty() {
                items.extend(group_items(item));
            }
            start = j + 1;
            if c == '}' {
                break;
            }
        }
    }
    items
}

/// Code without its comments (line comments and doc comments).
fn code_of(text: &str) -> String {
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Units and what each imports, from a crate's sources (path under src/ -> text).
fn graph_of(sources: &BTreeMap<PathBuf, String>) -> Graph {
    let units: BTreeSet<String> = sources
        .keys()
        .filter_map(|f| unit_of(&module_path(f)))
        .collect();
    let mut graph = Graph::new();
    for (file, text) in sources {
        let at = module_path(file);
        let Some(from) = unit_of(&at) else { continue };
        let deps = graph.entry(from.clone()).or_default();
        for p in paths_named(&code_of(text), &at) {
            // Names that are no unit (`super::*` from a top-level file) stay in their own.
            if let Some(to) = unit_of(&p).filter(|to| *to != from && units.contains(to)) {
                deps.insert(to);
            }
        }
    }
    graph
}

/// A circle through `from`, if the graph has one: the units in order.
fn circle(graph: &Graph, from: &str) -> Option<Vec<String>> {
    fn walk(
        graph: &Graph,
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

/// Every broken rule in one crate's graph, one line each.
fn broken(crate_name: &str, graph: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for m in graph.keys() {
        if let Some(c) = circle(graph, m) {
            out.push(format!(
                "{crate_name}: a circle of imports: {} -> {m}",
                c.join(" -> ")
            ));
        }
    }
    let is_command = |u: &str| u == COMMANDS || u.starts_with("commands::");
    for (m, deps) in graph {
        for d in deps.iter().filter(|d| is_command(d)) {
            if is_command(m) {
                out.push(format!(
                    "{crate_name}: the command {m} imports the command {d}: move what they \
                     share out of {d} into the machinery"
                ));
            } else {
                out.push(format!(
                    "{crate_name}: the machinery module {m} imports the command {d}"
                ));
            }
        }
    }
    if crate_name == "server" {
        for (m, deps) in graph {
            if m != "epoll" && m != "uring" && (deps.contains("epoll") || deps.contains("uring")) {
                out.push(format!("server: {m} imports from an engine: {deps:?}"));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, src: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, src, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            out.insert(p.strip_prefix(src).unwrap().to_path_buf(), text);
        }
    }
}

/// Each crate of the repository (the workspace's members and the kernel programs) with its
/// sources under src/.
fn crates() -> BTreeMap<String, BTreeMap<PathBuf, String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(root).unwrap().flatten() {
        let src = e.path().join("src");
        if src.is_dir() && e.path().join("Cargo.toml").is_file() {
            let mut files = BTreeMap::new();
            rust_files(&src, &src, &mut files);
            out.insert(e.file_name().to_string_lossy().into_owned(), files);
        }
    }
    out
}

#[test]
fn every_crate_layers_downward_and_no_command_imports_another() {
    let crates = crates();
    assert!(
        crates.len() >= 10,
        "read too few crates: {:?}",
        crates.keys()
    );
    let graphs: BTreeMap<&String, Graph> = crates.iter().map(|(n, s)| (n, graph_of(s))).collect();
    // Spot checks that the reading finds imports at all.
    let user = &graphs[&"userspace".to_string()];
    assert!(
        user["commands::compare"].contains("embedded_lab"),
        "{user:?}"
    );
    assert!(user["commands::top"].contains("observe"), "{user:?}");
    let server = &graphs[&"server".to_string()];
    assert!(server["epoll"].contains("batch") && server["uring"].contains("batch"));
    let all: Vec<String> = graphs.iter().flat_map(|(n, g)| broken(n, g)).collect();
    assert!(
        all.is_empty(),
        "the layering is broken:\n{}",
        all.join("\n")
    );
}

/// Below the units too: no file's module reaches a sibling, cousin or child that reaches back
/// (a child naming its parent's items through `super::` is how Rust nests, not a circle).
#[test]
fn no_circle_between_files_either() {
    let mut circles = Vec::new();
    for (name, sources) in crates() {
        let files: BTreeSet<Vec<String>> = sources.keys().map(|f| module_path(f)).collect();
        let mut graph = Graph::new();
        for (file, text) in &sources {
            let at = module_path(file);
            let deps = graph.entry(at.join("::")).or_default();
            for p in paths_named(&code_of(text), &at) {
                // The longest file module the path names, unless it encloses this one.
                let to = (1..=p.len())
                    .rev()
                    .map(|n| &p[..n])
                    .find(|m| files.contains(*m));
                if let Some(to) = to.filter(|to| !at.starts_with(to)) {
                    deps.insert(to.join("::"));
                }
            }
        }
        for m in graph.keys() {
            if let Some(c) = circle(&graph, m) {
                circles.push(format!(
                    "{name}: a circle of files: {} -> {m}",
                    c.join(" -> ")
                ));
            }
        }
    }
    assert!(circles.is_empty(), "{}", circles.join("\n"));
}

/// The rule fails where it should: a command that imports another, by either path.
#[test]
fn a_command_importing_another_is_named() {
    let files = |pairs: &[(&str, &str)]| -> BTreeMap<PathBuf, String> {
        pairs
            .iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    };
    let ok = files(&[
        ("lib.rs", "pub mod commands; pub mod observe;"),
        ("commands/mod.rs", "pub mod top; pub mod attach;"),
        ("commands/top.rs", "use crate::observe::observe;"),
        (
            "commands/attach.rs",
            "use crate::observe::{self, ObserveArgs};",
        ),
        ("observe.rs", "pub fn observe() {} // crate::commands::top"),
    ]);
    assert_eq!(broken("userspace", &graph_of(&ok)), Vec::<String>::new());

    for import in [
        "use crate::commands::attach::run;",
        "use super::attach;",
        "use crate::{observe, commands::{attach::AttachArgs}};",
    ] {
        let mut bad = ok.clone();
        bad.insert("commands/top.rs".into(), import.into());
        let said = broken("userspace", &graph_of(&bad));
        assert_eq!(
            said,
            [
                "userspace: the command commands::top imports the command commands::attach: move \
              what they share out of commands::attach into the machinery"
            ],
            "{import}"
        );
    }
    let mut down = ok.clone();
    down.insert("observe.rs".into(), "use crate::commands::top;".into());
    let said = broken("userspace", &graph_of(&down)).join("\n");
    assert!(said.contains("the machinery module observe imports the command commands::top"));
    assert!(said.contains("a circle of imports"), "{said}");
}

#[test]
fn paths_are_read_from_where_they_are_written() {
    let at = ["commands".to_string(), "compare".into(), "args".into()];
    let got = paths_named(
        "use super::{load::LoadSpec, sites};\nlet v = crate::lab::f(); self::x::y",
        &at,
    );
    let want: Vec<Vec<&str>> = vec![
        vec!["commands", "compare", "load", "LoadSpec"],
        vec!["commands", "compare", "sites"],
        vec!["lab", "f"],
        vec!["commands", "compare", "args", "x", "y"],
    ];
    assert_eq!(got, want);
    assert!(paths_named("my_crate::a", &at).is_empty());
    // Inside an inline module, `super` is the file's module.
    let got = paths_named(
        "mod tests { use super::*; use super::super::load::X; }",
        &at,
    );
    assert_eq!(
        got,
        [
            at.to_vec(),
            vec![
                "commands".into(),
                "compare".into(),
                "load".into(),
                "X".into()
            ]
        ]
    );
    assert!(!code_of("x // crate::e\n/// crate::f").contains("crate"));
}

/// A child's readiness is read from the descriptor it writes to (`ready.rs`), never from its
/// words (#51): no code of any crate waits for a phrase on a child's stderr, so rewording a
/// message cannot break a comparison. The phrases compare once waited for, and the helper
/// that did it, are refused by name.
#[test]
fn no_state_is_read_from_a_childs_words() {
    let mut found = Vec::new();
    for (krate, files) in crates() {
        for (path, text) in files {
            let code = code_of(&text);
            for needle in ["wait_for(", "contains(\"observing", "contains(\"ZAP on"] {
                if code.contains(needle) {
                    found.push(format!("{krate}/src/{}: {needle}", path.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "state read from a child's words: {found:?}"
    );
    let user = &crates()["userspace"];
    let ready = code_of(&user[Path::new("ready.rs")]);
    assert!(
        ready.contains("--ready-fd"),
        "the readiness descriptor's flag is gone"
    );
}
