//! rustc/ruff-style output:
//!
//! ```text
//! error[E0101]: Message type "inference.ModelConfig" has no field named "max_batch_sise".
//!  --> m/config.pbtxt:3:1
//!   |
//! 3 | max_batch_sise: 8
//!   | ^^^^^^^^^^^^^^
//!   |
//!   = help: did you mean 'max_batch_size'?
//! ```
//!
//! Secondary labels are underlined with `-` and carry their message; a span
//! over several lines is shown on its first line. A summary line ends the
//! output unless `quiet`.

use super::{plural, sorted, Location, RenderOptions, Summary};
use crate::diagnostics::{Diagnostic, Severity};
use crate::diagnostics::{FileReport, Report};
use crate::text::LineIndex;
use anstyle::{AnsiColor, Style};
use std::io::{self, Write};

const TAB_WIDTH: usize = 4;

struct Styles {
    error: Style,
    warning: Style,
    note: Style,
    gutter: Style,
    bold: Style,
    help: Style,
    secondary: Style,
}

impl Styles {
    fn new(color: bool) -> Styles {
        if !color {
            let p = Style::new();
            return Styles {
                error: p,
                warning: p,
                note: p,
                gutter: p,
                bold: p,
                help: p,
                secondary: p,
            };
        }
        let b = Style::new().bold();
        Styles {
            error: b.fg_color(Some(AnsiColor::BrightRed.into())),
            warning: b.fg_color(Some(AnsiColor::BrightYellow.into())),
            note: b.fg_color(Some(AnsiColor::BrightCyan.into())),
            gutter: b.fg_color(Some(AnsiColor::BrightBlue.into())),
            bold: b,
            help: b.fg_color(Some(AnsiColor::BrightCyan.into())),
            secondary: b.fg_color(Some(AnsiColor::BrightBlue.into())),
        }
    }

    fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Error => self.error,
            Severity::Warning => self.warning,
            Severity::Note => self.note,
        }
    }
}

/// `text` wrapped in `style` (no escape codes for the plain style).
fn paint(style: Style, text: &str) -> String {
    if style == Style::new() {
        text.to_string()
    } else {
        format!("{style}{text}{style:#}")
    }
}

pub fn render(out: &mut dyn Write, report: &Report, opts: &RenderOptions) -> io::Result<()> {
    let st = Styles::new(opts.color);
    for file in &report.files {
        render_file(out, file, &st)?;
    }
    if !opts.quiet {
        let line = summary_line(&Summary::of(report));
        writeln!(out, "{}", paint(st.bold, &line))?;
    }
    Ok(())
}

/// The last line of human output.
pub fn summary_line(s: &Summary) -> String {
    if s.files == 0 {
        return "No model configurations found.".into();
    }
    let mut parts = Vec::new();
    if s.errors > 0 {
        parts.push(plural(s.errors, "error"));
    }
    if s.warnings > 0 {
        parts.push(plural(s.warnings, "warning"));
    }
    if s.notes > 0 {
        parts.push(plural(s.notes, "note"));
    }
    if parts.is_empty() {
        return format!("All checks passed ({}).", plural(s.files, "file"));
    }
    let found = match parts.len() {
        1 => parts[0].clone(),
        n => format!("{} and {}", parts[..n - 1].join(", "), parts[n - 1]),
    };
    let files = if s.files_with_findings == s.files {
        plural(s.files, "file")
    } else {
        format!("{} of {} files", s.files_with_findings, s.files)
    };
    format!("Found {found} in {files}.")
}

fn render_file(out: &mut dyn Write, file: &FileReport, st: &Styles) -> io::Result<()> {
    if file.diagnostics.is_empty() {
        return Ok(());
    }
    let index = LineIndex::new(&file.src);
    for d in sorted(&file.diagnostics) {
        render_diagnostic(out, file, &index, d, st)?;
    }
    Ok(())
}

/// One underline in the snippet.
struct Mark<'a> {
    line: usize,
    /// Display columns, 0-based, `end > start`.
    start: usize,
    end: usize,
    primary: bool,
    message: &'a str,
}

fn render_diagnostic(
    out: &mut dyn Write,
    file: &FileReport,
    index: &LineIndex,
    d: &Diagnostic,
    st: &Styles,
) -> io::Result<()> {
    let src = file.src.as_str();
    let sev = st.severity(d.severity);
    writeln!(
        out,
        "{}{}",
        paint(sev, &format!("{}[{}]", d.severity.as_str(), d.code())),
        paint(st.bold, &format!(": {}", d.message))
    )?;

    let mut marks = Vec::new();
    if let Some(span) = d.span {
        marks.push(mark(index, src, span, true, ""));
    }
    for l in &d.labels {
        marks.push(mark(index, src, l.span, false, &l.message));
    }
    let max_line = marks.iter().map(|m| m.line + 1).max().unwrap_or(0);
    let width = max_line.max(1).to_string().len();
    let pad = " ".repeat(width);
    let bar = paint(st.gutter, "|");

    let location = match d.span {
        Some(span) => {
            let l = Location::of(index, src, span);
            format!("{}:{}:{}", file.path, l.line, l.column)
        }
        None => file.path.clone(),
    };
    writeln!(out, "{pad}{} {location}", paint(st.gutter, "-->"))?;

    if !marks.is_empty() && !src.is_empty() {
        writeln!(out, "{pad} {bar}")?;
        let mut lines: Vec<usize> = marks.iter().map(|m| m.line).collect();
        lines.sort_unstable();
        lines.dedup();
        let mut prev: Option<usize> = None;
        for line in lines {
            match prev {
                // One line between two shown ones: show it rather than `...`.
                Some(p) if line == p + 2 => {
                    source_line(out, index, src, p + 1, width, st)?;
                }
                Some(p) if line > p + 2 => writeln!(out, "{}", paint(st.gutter, "..."))?,
                _ => {}
            }
            prev = Some(line);
            source_line(out, index, src, line, width, st)?;
            let mut here: Vec<&Mark> = marks.iter().filter(|m| m.line == line).collect();
            here.sort_by_key(|m| (!m.primary, m.start));
            for m in here {
                let (ch, style) = if m.primary {
                    ('^', sev)
                } else {
                    ('-', st.secondary)
                };
                let mut under: String = std::iter::repeat_n(ch, m.end - m.start).collect();
                if !m.message.is_empty() {
                    under.push(' ');
                    under.push_str(m.message);
                }
                writeln!(
                    out,
                    "{pad} {bar} {}{}",
                    " ".repeat(m.start),
                    paint(style, &under)
                )?;
            }
        }
    }

    let mut notes = Vec::new();
    if let Some(h) = &d.help {
        notes.push(("help", h.as_str()));
    }
    if let Some(t) = &d.triton_message {
        if t.trim() != d.message.trim() {
            notes.push(("triton", t.as_str()));
        }
    }
    if !notes.is_empty() {
        writeln!(out, "{pad} {bar}")?;
        for (kind, text) in notes {
            let mut lines = text.lines();
            let first = lines.next().unwrap_or("");
            writeln!(
                out,
                "{pad} {} {}: {first}",
                paint(st.gutter, "="),
                paint(if kind == "help" { st.help } else { st.bold }, kind)
            )?;
            let indent = " ".repeat(kind.len() + 2);
            for more in lines {
                writeln!(out, "{pad}   {indent}{more}")?;
            }
        }
    }
    writeln!(out)?;
    Ok(())
}

/// `NN | text` for 0-based `line`.
fn source_line(
    out: &mut dyn Write,
    index: &LineIndex,
    src: &str,
    line: usize,
    width: usize,
    st: &Styles,
) -> io::Result<()> {
    let text = expand(index.line_text(src, line).trim_end());
    let number = paint(st.gutter, &format!("{:>width$}", line + 1));
    let bar = paint(st.gutter, "|");
    if text.is_empty() {
        writeln!(out, "{number} {bar}")
    } else {
        writeln!(out, "{number} {bar} {text}")
    }
}

/// Where a span is underlined: its first line, from its start to its end or
/// to the end of that line, at least one column wide.
fn mark<'a>(
    index: &LineIndex,
    src: &str,
    span: crate::text::Span,
    primary: bool,
    message: &'a str,
) -> Mark<'a> {
    let start = crate::text::floor_char_boundary(src, (span.start as usize).min(src.len()));
    let end = crate::text::floor_char_boundary(src, (span.end as usize).clamp(start, src.len()));
    let line = index.line_of(start);
    let line_start = index.line_start(line);
    let text = index.line_text(src, line);
    let line_end = line_start + text.len();
    let col_start = display_width(&src[line_start..start.min(line_end).max(line_start)]);
    let stop = end.min(line_end).max(start.min(line_end));
    let mut col_end = col_start + display_width(&src[start.min(line_end)..stop]);
    if col_end <= col_start {
        col_end = col_start + 1;
    }
    Mark {
        line,
        start: col_start,
        end: col_end,
        primary,
        message,
    }
}

fn display_width(s: &str) -> usize {
    s.chars()
        .map(|c| if c == '\t' { TAB_WIDTH } else { 1 })
        .sum()
}

/// A source line as printed: tabs expanded, control characters (and bytes
/// that were not UTF-8) shown as U+FFFD, so columns line up with the marks.
fn expand(line: &str) -> String {
    let mut s = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\t' => s.push_str(&" ".repeat(TAB_WIDTH)),
            c if c.is_control() => s.push('\u{FFFD}'),
            c => s.push(c),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostics::{Category, Rule};

    const TEST_RULE: Rule = Rule {
        code: "E0101",
        name: "unknown-field",
        category: Category::Schema,
        severity: Severity::Error,
        summary: "",
        docs: "",
        triton_source: None,
    };

    fn s(files: usize, with: usize, e: usize, w: usize, n: usize) -> Summary {
        Summary {
            files,
            files_with_findings: with,
            errors: e,
            warnings: w,
            notes: n,
        }
    }

    #[test]
    fn summary_wording() {
        assert_eq!(
            summary_line(&s(3, 0, 0, 0, 0)),
            "All checks passed (3 files)."
        );
        assert_eq!(
            summary_line(&s(1, 0, 0, 0, 0)),
            "All checks passed (1 file)."
        );
        assert_eq!(
            summary_line(&s(3, 3, 2, 1, 0)),
            "Found 2 errors and 1 warning in 3 files."
        );
        assert_eq!(
            summary_line(&s(3, 1, 1, 0, 0)),
            "Found 1 error in 1 of 3 files."
        );
        assert_eq!(
            summary_line(&s(2, 2, 1, 2, 3)),
            "Found 1 error, 2 warnings and 3 notes in 2 files."
        );
    }

    #[test]
    fn tabs_expand_consistently_with_marks() {
        let src = "\tname: 1\n";
        let idx = LineIndex::new(src);
        let m = mark(&idx, src, crate::text::Span::new(1, 5), true, "");
        assert_eq!((m.start, m.end), (4, 8));
        assert_eq!(&expand(idx.line_text(src, 0))[m.start..m.end], "name");
    }

    #[test]
    fn multi_line_and_empty_spans() {
        let src = "a {\n b: 1\n}\n";
        let idx = LineIndex::new(src);
        let m = mark(&idx, src, crate::text::Span::new(2, 11), true, "");
        assert_eq!((m.line, m.start, m.end), (0, 2, 3));
        let m = mark(&idx, src, crate::text::Span::empty(12), true, "");
        assert_eq!((m.line, m.start, m.end), (3, 0, 1));
    }

    fn report_with_labels() -> Report {
        let src = "name: \"m\"\nmax_batch_size: 4\ndynamic_batching {\n  preferred_batch_size: [ 8 ]\n}\n";
        let at = |needle: &str| {
            let i = src.find(needle).unwrap();
            crate::text::Span::new(i, i + needle.len())
        };
        let d = Diagnostic::new(&TEST_RULE, "preferred size too large")
            .at(at("8"))
            .label(at("4"), "max_batch_size set here")
            .help("lower it")
            .triton("Triton's own words");
        Report {
            files: vec![FileReport {
                path: "m/config.pbtxt".into(),
                model: Some("m".into()),
                src: src.into(),
                diagnostics: vec![d],
            }],
        }
    }

    #[test]
    fn secondary_labels_and_notes() {
        let mut out = Vec::new();
        render(&mut out, &report_with_labels(), &RenderOptions::default()).unwrap();
        let out = String::from_utf8(out).unwrap();
        let expected = [
            "error[E0101]: preferred size too large",
            " --> m/config.pbtxt:4:27",
            "  |",
            "2 | max_batch_size: 4",
            "  |                 - max_batch_size set here",
            "3 | dynamic_batching {",
            "4 |   preferred_batch_size: [ 8 ]",
            "  |                           ^",
            "  |",
            "  = help: lower it",
            "  = triton: Triton's own words",
            "",
            "Found 1 error in 1 file.",
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    }
}
