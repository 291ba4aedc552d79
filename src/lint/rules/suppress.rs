//! Rules about inline suppressions (`# tritonctl: ignore=CODE`), which are
//! read and applied by `crate::suppress`. W1001–W1009 live here.

use crate::diagnostics::Rule;
use crate::diagnostics::{Category, Diagnostic, Severity};
use crate::lint::registry::rule;
use crate::text::Span;

pub const RULES: &[Rule] = &[
    Rule {
        code: "W1001",
        name: "unknown-suppression",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A suppression comment names a rule that does not exist",
        docs: "A comment `# tritonctl: ignore=CODE[,CODE...]` silences the listed rules on its line (at the end of a line) or for the field that follows (on a line of its own). Each entry must be a rule code (`E0101`) or a rule name (`unknown-field`); `tritonctl explain --all` lists them. An entry that names no rule silences nothing, most often because of a typo, so it is reported.\n\n```\nmax_batch_sise: 8   # tritonctl: ignore=E1010   # warning: no rule E1010 (did you mean E0101?)\n```",
        triton_source: None,
    },
    Rule {
        code: "W1002",
        name: "unused-suppression",
        category: Category::Semantic,
        severity: Severity::Warning,
        summary: "A suppression comment silences nothing",
        docs: "Reported for each rule listed in a `# tritonctl: ignore=...` comment that matched no finding, so stale suppressions can be cleaned up once the problem is fixed.\n\nThis rule is off unless `tritonctl.toml` turns it on:\n\n```toml\n[rules]\nunused-suppression = \"warning\"\n```",
        triton_source: None,
    },
];

/// W1001 for `entry` (spanning `span` in the comment).
pub fn unknown_suppression(entry: &str, span: Span, suggestion: Option<&str>) -> Diagnostic {
    let d = Diagnostic::new(
        rule!("W1001"),
        format!("suppression names an unknown rule '{entry}'"),
    )
    .at(span);
    match suggestion {
        Some(s) => d.help(format!(
            "did you mean '{s}'? `tritonctl explain --all` lists every rule"
        )),
        None => d.help("use a rule code (E0101) or name (unknown-field); `tritonctl explain --all` lists every rule"),
    }
}

/// W1002 for `entry` (spanning `span` in the comment).
pub fn unused_suppression(entry: &str, span: Span) -> Diagnostic {
    Diagnostic::new(
        rule!("W1002"),
        format!("suppression of '{entry}' matches no finding"),
    )
    .at(span)
    .help("remove it from the comment")
}
