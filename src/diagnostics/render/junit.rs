//! `--format junit`: JUnit XML with one test case per file. A file with
//! error findings fails (one `<failure>` listing them all); warnings and
//! notes go to the test case's `<system-out>`.

use super::{plural, sorted, Location, RenderOptions, Summary};
use crate::diagnostics::{Diagnostic, Severity};
use crate::diagnostics::{FileReport, Report};
use crate::text::display::{self, Untrusted};
use crate::text::LineIndex;
use std::io::{self, Write};

pub fn render(out: &mut dyn Write, report: &Report, _opts: &RenderOptions) -> io::Result<()> {
    let failures = report
        .files
        .iter()
        .filter(|f| f.diagnostics.iter().any(|d| d.severity == Severity::Error))
        .count();
    let tests = Summary::of(report).files;
    writeln!(out, r#"<?xml version="1.0" encoding="UTF-8"?>"#)?;
    writeln!(
        out,
        r#"<testsuites name="tritonctl validate" tests="{tests}" failures="{failures}" errors="0">"#
    )?;
    writeln!(
        out,
        r#"  <testsuite name="tritonctl validate" tests="{tests}" failures="{failures}" errors="0" skipped="0">"#
    )?;
    for f in &report.files {
        testcase(out, f)?;
    }
    writeln!(out, "  </testsuite>")?;
    writeln!(out, "</testsuites>")
}

fn testcase(out: &mut dyn Write, f: &FileReport) -> io::Result<()> {
    let index = LineIndex::new(&f.src);
    let classname = f.model.as_deref().unwrap_or("tritonctl");
    let path = escape(&display::escape(&f.path));
    let open = format!(
        r#"    <testcase name="{path}" classname="{}" file="{path}""#,
        escape(&display::escape(classname)),
    );
    if f.diagnostics.is_empty() {
        return writeln!(out, "{open}/>");
    }
    writeln!(out, "{open}>")?;
    let diags = sorted(&f.diagnostics);
    let (errors, others): (Vec<&Diagnostic>, Vec<&Diagnostic>) = diags
        .into_iter()
        .partition(|d| d.severity == Severity::Error);
    if let Some(first) = errors.first() {
        let mut message = format!("{}: {}", first.code(), Untrusted(&first.message));
        if errors.len() > 1 {
            message.push_str(&format!(
                " (and {} more)",
                plural(errors.len() - 1, "error")
            ));
        }
        let body: Vec<String> = errors.iter().map(|d| describe(&index, f, d)).collect();
        writeln!(
            out,
            r#"      <failure type="{}" message="{}">{}</failure>"#,
            escape(first.code()),
            escape(&message),
            escape_text(&body.join("\n"))
        )?;
    }
    if !others.is_empty() {
        let body: Vec<String> = others.iter().map(|d| describe(&index, f, d)).collect();
        writeln!(
            out,
            "      <system-out>{}</system-out>",
            escape_text(&body.join("\n"))
        )?;
    }
    writeln!(out, "    </testcase>")
}

/// `path:line:col: severity[CODE] message` plus its help.
fn describe(index: &LineIndex, f: &FileReport, d: &Diagnostic) -> String {
    let at = match d.span {
        Some(s) => {
            let l = Location::of(index, &f.src, s);
            format!("{}:{}:{}", Untrusted(&f.path), l.line, l.column)
        }
        None => display::escape(&f.path).into_owned(),
    };
    // One line per finding (and one for its help): line breaks in the
    // texts are shown escaped.
    let mut s = format!(
        "{at}: {}[{}] {}",
        d.severity.as_str(),
        d.code(),
        Untrusted(&d.message)
    );
    if let Some(h) = &d.help {
        s.push_str("\n  help: ");
        display::push_escaped(&mut s, h);
    }
    s
}

/// Escapes element content (quotes, line breaks and tabs kept as they are).
pub fn escape_text(s: &str) -> String {
    escape_with(s, false)
}

/// Escapes an attribute value.
pub fn escape(s: &str) -> String {
    escape_with(s, true)
}

/// Escapes text for XML 1.0. Control characters (which XML 1.0 cannot
/// carry, or should not) and bidirectional overrides are shown as display
/// text (`\u{1b}`, [`crate::text::display`]), as in every other output.
fn escape_with(s: &str, attr: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attr => out.push_str("&quot;"),
            '\'' if attr => out.push_str("&apos;"),
            '\n' if attr => out.push_str("&#10;"),
            '\r' if attr => out.push_str("&#13;"),
            '\t' if attr => out.push_str("&#9;"),
            '\n' | '\r' | '\t' => out.push(c),
            c if display::needs_escape(c) => {
                display::push_escaped(&mut out, c.encode_utf8(&mut [0; 4]))
            }
            '\u{FFFE}' | '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(
            escape("a<b & \"c\"\u{1a}\n"),
            "a&lt;b &amp; &quot;c&quot;\\u{1a}&#10;"
        );
        assert_eq!(escape_text("'a'\n<b>"), "'a'\n&lt;b&gt;");
        assert_eq!(
            escape_text("\u{1b}]0;x\u{7}\u{85}\u{202e}\u{ffff}"),
            "\\u{1b}]0;x\\u{7}\\u{85}\\u{202e}\u{FFFD}"
        );
    }
}
