//! The rule reference under docs/rules/ must match what the registry
//! generates, and `tritonctl explain` must print the same text.
//!
//! To refresh it: `UPDATE_GENERATED=1 cargo test --test cli rule_docs`.

use crate::common::{crate_root, tritonctl};
use std::collections::BTreeMap;
use std::path::Path;
use tritonctl::lint::docs::{write_rule_docs, GENERATED_MARKER};

const HOW: &str =
    "regenerate with `UPDATE_GENERATED=1 cargo test --test cli rule_docs` and commit the result";

/// The Markdown files of `dir`.
fn pages(dir: &Path) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return m;
    };
    for e in rd {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            m.insert(name, std::fs::read_to_string(e.path()).unwrap());
        }
    }
    m
}

/// A generated page without its first line (the "generated" marker).
fn body(page: &str) -> &str {
    let rest = page
        .strip_prefix(GENERATED_MARKER)
        .expect("a generated page starts with the marker");
    rest.strip_prefix("\n\n").unwrap_or(rest)
}

#[test]
fn rule_docs_are_up_to_date() {
    let committed_dir = crate_root().join("docs/rules");
    if std::env::var("UPDATE_GENERATED").is_ok_and(|v| v == "1") {
        write_rule_docs(&committed_dir).unwrap();
    }
    let tmp = tempfile::tempdir().unwrap();
    write_rule_docs(tmp.path()).unwrap();
    let fresh = pages(tmp.path());
    let committed = pages(&committed_dir);
    let fresh_names: Vec<&String> = fresh.keys().collect();
    let committed_names: Vec<&String> = committed.keys().collect();
    assert_eq!(
        committed_names, fresh_names,
        "docs/rules/ has missing or extra pages; {HOW}"
    );
    for (name, text) in &fresh {
        assert!(
            committed[name] == *text,
            "docs/rules/{name} is out of date; {HOW}"
        );
    }
}

#[test]
fn one_page_per_rule_and_an_index_linking_them() {
    let tmp = tempfile::tempdir().unwrap();
    write_rule_docs(tmp.path()).unwrap();
    let pages = pages(tmp.path());
    let index = &pages["README.md"];
    let listed = tritonctl().args(["explain", "--all"]).run();
    assert!(listed.success());
    let listed = listed.stdout;
    let codes: Vec<&str> = listed
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(codes.len() > 50, "{listed}");
    for code in &codes {
        let page = pages
            .get(&format!("{code}.md"))
            .unwrap_or_else(|| panic!("no page for {code}"));
        assert!(body(page).starts_with(&format!("{code} (")), "{page}");
        assert!(
            index.contains(&format!("| [{code}]({code}.md) |")),
            "the index links {code}"
        );
    }
    assert_eq!(
        pages.len(),
        codes.len() + 1,
        "one page per rule plus README.md"
    );
    // The index row carries name, severity and summary.
    assert!(
        index.contains("| [E0101](E0101.md) | unknown-field | error | A field that the message type does not have |"),
        "{index}"
    );
}

#[test]
fn explain_prints_the_page_body() {
    let page = std::fs::read_to_string(crate_root().join("docs/rules/E0101.md"))
        .expect("docs/rules/E0101.md is committed");
    let out = tritonctl().args(["explain", "E0101"]).run();
    assert!(out.success());
    assert_eq!(out.stdout, body(&page));
    // The page is Markdown: a heading and the docs' example as a code block.
    let body = body(&page);
    assert!(
        body.starts_with("E0101 (unknown-field)\n=====================\n"),
        "{body}"
    );
    assert!(body.contains("```\nmax_batch_sise: 8"), "{body}");
    assert!(body.contains("- Default severity: error"), "{body}");
}
