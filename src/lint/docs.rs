//! The rule reference: one Markdown page per rule (what `tritonctl explain`
//! prints) and the pages under `docs/rules/`, generated from the registry.

use super::registry;
use crate::diagnostics::Rule;
use std::io::Write;
use std::path::Path;

/// The title of a rule's page: `E0101 (unknown-field)`.
fn title(r: &Rule) -> String {
    format!("{} ({})", r.code, r.name)
}

/// The Markdown documentation of one rule: the title (a setext heading,
/// which reads well as plain text too), the summary, the rule's
/// properties and its documentation. `tritonctl explain` prints it and
/// `docs/rules/CODE.md` holds it after [`GENERATED_MARKER`].
pub fn markdown(r: &Rule) -> String {
    let title = title(r);
    let mut s = String::new();
    s.push_str(&title);
    s.push('\n');
    s.push_str(&"=".repeat(title.chars().count()));
    s.push_str("\n\n");
    s.push_str(r.summary.trim());
    s.push_str("\n\n");
    s.push_str(&format!("- Category: {}\n", r.category.as_str()));
    s.push_str(&format!("- Default severity: {}\n", r.severity.as_str()));
    s.push_str(&format!(
        "- Triton source: {}\n",
        r.triton_source.unwrap_or("(none: a tritonctl check)")
    ));
    s.push('\n');
    s.push_str(r.docs.trim());
    s.push('\n');
    s
}

/// The first line of every generated page under `docs/rules/`.
pub const GENERATED_MARKER: &str = "<!-- Generated from the rule registry (src/lint/registry.rs and src/lint/rules/); do not edit. Regenerate with `UPDATE_GENERATED=1 cargo test --test cli rule_docs`. -->";

/// The pages of `docs/rules/`: `(file name, contents)` for each rule
/// (`CODE.md`: [`GENERATED_MARKER`], a blank line, then [`markdown`]) and
/// the index `README.md`.
pub fn rule_pages() -> Vec<(String, String)> {
    let rules = registry::all();
    let mut pages: Vec<(String, String)> = rules
        .iter()
        .map(|r| {
            (
                format!("{}.md", r.code),
                format!("{GENERATED_MARKER}\n\n{}", markdown(r)),
            )
        })
        .collect();
    let mut index = format!("{GENERATED_MARKER}\n\nRules\n=====\n\n");
    index.push_str(
        "Every finding of `tritonctl validate` carries one of these codes. `tritonctl explain CODE` prints a rule's page; `E` codes are errors (Triton refuses the model), `W` codes warnings and `N` codes notes.\n\n",
    );
    index.push_str("| Code | Name | Severity | Summary |\n|---|---|---|---|\n");
    for r in rules {
        index.push_str(&format!(
            "| [{code}]({code}.md) | {name} | {sev} | {summary} |\n",
            code = r.code,
            name = r.name,
            sev = r.severity.as_str(),
            summary = r.summary.replace('|', "\\|"),
        ));
    }
    pages.push(("README.md".into(), index));
    pages
}

/// Writes [`rule_pages`] into `dir` (created if needed), removing the
/// `.md` files there that no rule owns any more.
pub fn write_rule_docs(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let pages = rule_pages();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && !pages.iter().any(|(n, _)| *n == name) {
            std::fs::remove_file(e.path())?;
        }
    }
    for (name, text) in pages {
        crate::files::write_atomic(
            &dir.join(name),
            text.as_bytes(),
            crate::files::Replace::Allow,
        )?;
    }
    Ok(())
}

/// One line per rule: code, severity, category, name, summary.
pub fn list(out: &mut dyn Write) -> std::io::Result<()> {
    let rules = registry::all();
    let name_w = rules.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    writeln!(
        out,
        "{:<5}  {:<8}  {:<10}  {:<name_w$}  SUMMARY",
        "CODE", "SEVERITY", "CATEGORY", "NAME"
    )?;
    for r in rules {
        writeln!(
            out,
            "{:<5}  {:<8}  {:<10}  {:<name_w$}  {}",
            r.code,
            r.severity.as_str(),
            r.category.as_str(),
            r.name,
            r.summary
        )?;
    }
    Ok(())
}
