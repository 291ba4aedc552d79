//! The layering of ARCHITECTURE.md, checked from the sources: the graph of
//! `crate::x` references between the top-level modules of `src/` has no
//! cycle, and no library module reaches into the command layer (`commands`,
//! `cli`, `term`). Test code counts: a test inside a module is part of it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The modules that make up the command layer, highest first; each may use
/// the ones after it, and the library may use none of them.
const COMMAND_LAYER: &[&str] = &["commands", "cli", "term"];

/// Where one top-level module refers to another.
#[derive(Debug, Clone)]
struct Evidence {
    file: String,
    line: usize,
}

type Graph = BTreeMap<String, BTreeMap<String, Evidence>>;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The text with comments, string and character literals blanked out
/// (newlines kept, so line numbers stay right).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |out: &mut Vec<u8>, bytes: &[u8]| {
        out.extend(bytes.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(len) = raw_string_len(rest) {
            blank(&mut out, &rest[..len]);
            i += len;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{1b}'), else a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..rest.len().min(6)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(5)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(4)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(3)]).ok())
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(len) => {
                    blank(&mut out, &rest[..len]);
                    i += len;
                }
                None => {
                    out.push(b'\'');
                    i += 1;
                }
            }
        } else {
            out.push(rest[0]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the
/// start of `s`, if there is one.
fn raw_string_len(s: &[u8]) -> Option<usize> {
    let start = if s.starts_with(b"br") {
        2
    } else if s.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = s[start..].iter().take_while(|&&c| c == b'#').count();
    if s.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let mut close = vec![b'"'];
    close.extend(std::iter::repeat_n(b'#', hashes));
    let body = start + hashes + 1;
    s[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())
        .map(|p| body + p + close.len())
}

/// The module path of a source file: `src/lint/rules/io.rs` is
/// `lint::rules::io`, `src/lint/mod.rs` is `lint`.
fn module_path(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_dir()).unwrap();
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The top-level modules a file's code names, with the line of the first
/// mention: `crate::x`, `$crate::x`, `use crate::{x, y::z}` and `super::`
/// chains that climb to the crate root.
fn references(file: &Path, code: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let here = module_path(file);
    let b = code.as_bytes();
    let line_of = |pos: usize| code[..pos].bytes().filter(|&c| c == b'\n').count() + 1;
    let mut i = 0;
    while i < b.len() {
        let at_word = i == 0 || !is_ident(b[i - 1]);
        if at_word && b[i..].starts_with(b"crate::") {
            let line = line_of(i);
            let after = i + "crate::".len();
            for name in path_heads(&code[after..]) {
                out.entry(name).or_insert(line);
            }
            i = after;
        } else if at_word && b[i..].starts_with(b"super::") {
            let mut depth = 0;
            let mut j = i;
            while b[j..].starts_with(b"super::") {
                depth += 1;
                j += "super::".len();
            }
            // `super` from a module's own file: its parent module.
            if depth >= here.len() {
                let line = line_of(i);
                for name in path_heads(&code[j..]) {
                    out.entry(name).or_insert(line);
                }
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The first segment of the path at the start of `s`, or of each path in
/// a `{ … }` group.
fn path_heads(s: &str) -> Vec<String> {
    let b = s.as_bytes();
    if b.first() == Some(&b'{') {
        let mut heads = Vec::new();
        let mut depth = 0;
        let mut expect = true;
        for (k, &c) in b.iter().enumerate() {
            match c {
                b'{' => {
                    depth += 1;
                    expect = depth == 1;
                }
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b',' if depth == 1 => expect = true,
                c if expect && depth == 1 && is_ident(c) => {
                    let end = b[k..]
                        .iter()
                        .position(|&c| !is_ident(c))
                        .map_or(b.len(), |p| k + p);
                    heads.push(s[k..end].to_string());
                    expect = false;
                }
                _ => {}
            }
        }
        heads
    } else {
        let end = b.iter().position(|&c| !is_ident(c)).unwrap_or(b.len());
        vec![s[..end].to_string()]
    }
}

fn top_modules() -> BTreeSet<String> {
    std::fs::read_dir(src_dir())
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let name = p.file_stem()?.to_string_lossy().into_owned();
            let module = p.is_dir() || p.extension().is_some_and(|e| e == "rs");
            (module && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

fn module_graph() -> Graph {
    let modules = top_modules();
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut graph = Graph::new();
    for file in files {
        let here = module_path(&file);
        let Some(top) = here.first().cloned() else {
            continue;
        };
        if top == "lib" || top == "main" {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        let node = graph.entry(top.clone()).or_default();
        for (name, line) in references(&file, &code) {
            if name != top && modules.contains(&name) {
                node.entry(name).or_insert_with(|| Evidence {
                    file: file
                        .strip_prefix(src_dir().parent().unwrap())
                        .unwrap()
                        .display()
                        .to_string(),
                    line,
                });
            }
        }
    }
    graph
}

/// A cycle through the graph, if there is one (module names, the first
/// repeated at the end).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut marks: BTreeMap<&str, Mark> = BTreeMap::new();
    for start in graph.keys() {
        if marks.contains_key(start.as_str()) {
            continue;
        }
        // Iterative depth-first search: (node, its edges not yet followed).
        let mut stack: Vec<(&str, Vec<&str>)> = Vec::new();
        let edges = |n: &str| -> Vec<&str> {
            graph
                .get(n)
                .map(|e| e.keys().map(String::as_str).collect())
                .unwrap_or_default()
        };
        marks.insert(start, Mark::Open);
        stack.push((start, edges(start)));
        while let Some((node, rest)) = stack.last_mut() {
            let node = *node;
            match rest.pop() {
                Some(next) => match marks.get(next) {
                    Some(Mark::Open) => {
                        let from = stack.iter().position(|(n, _)| *n == next).unwrap();
                        let mut cycle: Vec<String> =
                            stack[from..].iter().map(|(n, _)| n.to_string()).collect();
                        cycle.push(next.to_string());
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(next, Mark::Open);
                        let e = edges(next);
                        stack.push((next, e));
                    }
                },
                None => {
                    marks.insert(node, Mark::Done);
                    stack.pop();
                }
            }
        }
    }
    None
}

fn describe(graph: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|w| {
            let e = &graph[&w[0]][&w[1]];
            format!("  {} -> {} ({}:{})", w[0], w[1], e.file, e.line)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn top_level_modules_form_no_cycle() {
    let graph = module_graph();
    assert!(graph.len() > 10, "too few modules found: {graph:?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the top-level modules of src/ form a cycle (see ARCHITECTURE.md):\n{}",
            describe(&graph, &cycle)
        );
    }
}

#[test]
fn the_library_never_uses_the_command_layer() {
    let graph = module_graph();
    let mut offences = Vec::new();
    for (module, edges) in &graph {
        let allowed: &[&str] = match COMMAND_LAYER.iter().position(|m| m == module) {
            Some(i) => &COMMAND_LAYER[i + 1..],
            None => &[],
        };
        for (target, e) in edges {
            if COMMAND_LAYER.contains(&target.as_str()) && !allowed.contains(&target.as_str()) {
                offences.push(format!("  {module} -> {target} ({}:{})", e.file, e.line));
            }
        }
    }
    assert!(
        offences.is_empty(),
        "library code reaches into the command layer (see ARCHITECTURE.md):\n{}",
        offences.join("\n")
    );
}

// The checker itself: a reference it misses would let a cycle through.

fn refs_of(file: &str, src: &str) -> Vec<String> {
    references(&src_dir().join(file), &code_only(src))
        .into_keys()
        .collect()
}

#[test]
fn the_checker_sees_every_form_of_reference() {
    let src = r#"
use crate::{config::ParsedConfig, diagnostics};
use crate::text::{Span, LineIndex};
fn f() { crate::lint::registry::find("x"); $crate::schema::x; }
// crate::commands is only a comment
const S: &str = "crate::cli in a string";
const R: &str = r"crate::term in a raw string";
fn g<'a>(c: char) -> bool { c == '"' || crate::files::x() }
"#;
    assert_eq!(
        refs_of("pbtxt/mod.rs", src),
        ["config", "diagnostics", "files", "lint", "schema", "text"]
    );
    // `super` from a top-level module's file names a sibling module.
    assert_eq!(refs_of("validate/mod.rs", "use super::repo;"), ["repo"]);
    assert_eq!(
        refs_of("lint/rules/io.rs", "use super::super::super::perf;"),
        ["perf"]
    );
    assert!(refs_of("lint/rules/io.rs", "use super::model;").is_empty());
}

#[test]
fn the_checker_finds_cycles() {
    let edge = || Evidence {
        file: "f".into(),
        line: 1,
    };
    let mut g = Graph::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        g.entry(a.into()).or_default().insert(b.into(), edge());
    }
    let cycle = find_cycle(&g).unwrap();
    assert_eq!(cycle.first(), cycle.last());
    assert_eq!(cycle.len(), 4);
    g.get_mut("c").unwrap().remove("a");
    assert_eq!(find_cycle(&g), None);
}

#[test]
fn the_global_allocator_is_the_programs_choice() {
    let mut files = Vec::new();
    rust_files(&src_dir(), &mut files);
    let mut in_main = false;
    for file in files {
        let code = code_only(&std::fs::read_to_string(&file).unwrap());
        if code.contains("#[global_allocator]") {
            assert!(
                file.ends_with("main.rs") && file.parent() == Some(src_dir().as_path()),
                "{}: the global allocator belongs to the binary (src/main.rs), not the library",
                file.display()
            );
            in_main = true;
        }
    }
    // With feature `run` the binary allocates with mimalloc (ARCHITECTURE.md).
    assert!(in_main, "src/main.rs declares no global allocator");
}
