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
//!
//! Everything taken from the input is shown escaped
//! ([`crate::text::display`]): the message, labels, help and Triton's text
//! (one line each), the path and the source lines. A source line wider than
//! [`SNIPPET_WIDTH`] columns is cut to a window around its marks, with `…`
//! where it goes on, so that a long line is not echoed whole; line and
//! column numbers stay those of the file.

use super::{plural, sorted, Location, RenderOptions, Summary};
use crate::diagnostics::{Diagnostic, Severity};
use crate::diagnostics::{FileReport, Report};
use crate::text::display::{self, Untrusted};
use crate::text::LineIndex;
use anstyle::{AnsiColor, Style};
use std::io::{self, Write};

const TAB_WIDTH: usize = 4;

/// The most columns of one source line a snippet shows.
pub const SNIPPET_WIDTH: usize = 120;

/// Columns shown before the first mark when a line is cut.
const CONTEXT_BEFORE: usize = 40;

/// Where a line goes on beyond the part shown.
const CUT: &str = "…";

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
        paint(st.bold, &format!(": {}", Untrusted(&d.message)))
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

    let path = Untrusted(&file.path);
    let location = match d.span {
        Some(span) => {
            let l = Location::of(index, src, span);
            format!("{path}:{}:{}", l.line, l.column)
        }
        None => path.to_string(),
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
                    source_line(out, index, src, p + 1, &[], width, st)?;
                }
                Some(p) if line > p + 2 => writeln!(out, "{}", paint(st.gutter, "..."))?,
                _ => {}
            }
            prev = Some(line);
            let mut here: Vec<&Mark> = marks.iter().filter(|m| m.line == line).collect();
            here.sort_by_key(|m| (!m.primary, m.start));
            let shown = source_line(out, index, src, line, &here, width, st)?;
            for m in here {
                let (ch, style) = if m.primary {
                    ('^', sev)
                } else {
                    ('-', st.secondary)
                };
                let (at, len) = shown.place(m);
                let mut under: String = std::iter::repeat_n(ch, len).collect();
                if !m.message.is_empty() {
                    under.push(' ');
                    display::push_escaped(&mut under, m.message);
                }
                writeln!(
                    out,
                    "{pad} {bar} {}{}",
                    " ".repeat(at),
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
            // One line: a line break in the text is shown escaped, so that
            // no value can start a line of its own.
            writeln!(
                out,
                "{pad} {} {}: {}",
                paint(st.gutter, "="),
                paint(if kind == "help" { st.help } else { st.bold }, kind),
                Untrusted(text)
            )?;
        }
    }
    writeln!(out)?;
    Ok(())
}

/// The part of a source line that was shown.
struct Shown {
    /// Shown column of the line where the text starts.
    start: usize,
    /// Shown column just past the text.
    end: usize,
    cut_before: bool,
    cut_after: bool,
}

impl Shown {
    /// Where a mark goes under the shown text (column after the gutter)
    /// and how wide it is: clipped to the window, and on the `…` when it
    /// lies wholly outside it.
    fn place(&self, m: &Mark) -> (usize, usize) {
        let lead = usize::from(self.cut_before);
        if self.cut_before && m.end <= self.start {
            return (0, 1);
        }
        if self.cut_after && m.start >= self.end {
            return (lead + self.end - self.start, 1);
        }
        let start = m.start.max(self.start);
        let end = if self.cut_after {
            m.end.min(self.end)
        } else {
            m.end
        };
        // A mark on blanks after the shown text (which are not printed)
        // stays near it, however many blanks there are.
        let limit = lead + self.end - self.start + SNIPPET_WIDTH;
        (
            (lead + start - self.start).min(limit),
            end.saturating_sub(start).clamp(1, SNIPPET_WIDTH),
        )
    }
}

/// `NN | text` for 0-based `line`: tabs expanded, the rest escaped, and cut
/// to a window around `marks` (the first one, primary first, leads) when
/// the line is wider than [`SNIPPET_WIDTH`].
fn source_line(
    out: &mut dyn Write,
    index: &LineIndex,
    src: &str,
    line: usize,
    marks: &[&Mark],
    width: usize,
    st: &Styles,
) -> io::Result<Shown> {
    let text = index.line_text(src, line).trim_end();
    let total = display_width(text);
    let from = if total <= SNIPPET_WIDTH {
        0
    } else {
        let anchor = marks.first().map_or(0, |m| m.start);
        anchor
            .saturating_sub(CONTEXT_BEFORE)
            .min(total - SNIPPET_WIDTH)
    };
    let w = display::window(text, from, SNIPPET_WIDTH, TAB_WIDTH);
    let shown = Shown {
        start: w.start,
        end: w.start + display_width(&w.text),
        cut_before: w.cut_before,
        cut_after: w.cut_after,
    };
    let number = paint(st.gutter, &format!("{:>width$}", line + 1));
    let bar = paint(st.gutter, "|");
    if w.text.is_empty() && !w.cut_before && !w.cut_after {
        writeln!(out, "{number} {bar}")?;
    } else {
        writeln!(
            out,
            "{number} {bar} {}{}{}",
            if w.cut_before { CUT } else { "" },
            w.text,
            if w.cut_after { CUT } else { "" }
        )?;
    }
    Ok(shown)
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

/// Shown columns of `s`: tabs expanded, escapes as long as they are, wide
/// characters two columns each.
fn display_width(s: &str) -> usize {
    s.chars()
        .map(|c| {
            if c == '\t' {
                TAB_WIDTH
            } else {
                display::shown_width(c)
            }
        })
        .sum()
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
        let w = display::window(idx.line_text(src, 0), 0, SNIPPET_WIDTH, TAB_WIDTH);
        assert_eq!(&w.text[m.start..m.end], "name");
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

    fn one_file(src: String, d: Diagnostic) -> String {
        let report = Report {
            files: vec![FileReport {
                path: "m\n\u{1b}[2J/config.pbtxt".into(),
                model: Some("m".into()),
                src,
                diagnostics: vec![d],
            }],
        };
        let mut out = Vec::new();
        render(&mut out, &report, &RenderOptions::default()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn input_text_is_shown_escaped_on_one_line_each() {
        let src = "name: \"a\u{1b}[2J\tb\u{202e}\"\n".to_string();
        let d = Diagnostic::new(&TEST_RULE, "model 'a\u{1b}[2J\nerror[E0000]: forged'")
            .at(crate::text::Span::new(6, 18))
            .label(crate::text::Span::new(0, 4), "name\u{7} here")
            .help("rename\n= help: forged")
            .triton("Triton\r\u{9b}says");
        let out = one_file(src, d);
        let shown = "\"a\\u{1b}[2J    b\\u{202e}\"";
        let carets = format!("  |       {}", "^".repeat(shown.len()));
        let source = format!("1 | name: {shown}");
        let expected = [
            "error[E0101]: model 'a\\u{1b}[2J\\nerror[E0000]: forged'",
            " --> m\\n\\u{1b}[2J/config.pbtxt:1:7",
            "  |",
            &source,
            &carets,
            "  | ---- name\\u{7} here",
            "  |",
            "  = help: rename\\n= help: forged",
            "  = triton: Triton\\r\\u{9b}says",
            "",
            "Found 1 error in 1 file.",
        ];
        assert_eq!(out.lines().collect::<Vec<_>>(), expected, "{out}");
    }

    /// Wide characters (CJK, East Asian Width "W") take two terminal
    /// columns each: the carets after them and under them count two per
    /// character, so they stand under the text they mark.
    #[test]
    fn carets_after_wide_characters_stand_under_the_span() {
        let src = "name: \"模型名\" bad: 1\n".to_string();
        let at = src.find("bad").unwrap();
        let word = src.find('模').unwrap();
        let d = Diagnostic::new(&TEST_RULE, "unknown")
            .at(crate::text::Span::new(at, at + 3))
            .label(crate::text::Span::new(word, word + "模型名".len()), "name");
        let out = one_file(src, d);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[3], "1 | name: \"模型名\" bad: 1", "{out}");
        // `name: "` is 7 columns, the three characters 6, `" ` 2.
        assert_eq!(lines[4], format!("  | {}^^^", " ".repeat(15)), "{out}");
        assert_eq!(
            lines[5],
            format!("  | {}------ name", " ".repeat(7)),
            "{out}"
        );
        // In a line cut to a window, too: 100 wide characters before.
        let wide = "模".repeat(100);
        let src = format!("a: \"{wide}\" bad: 1\n");
        let at = src.find("bad").unwrap();
        let d = Diagnostic::new(&TEST_RULE, "unknown").at(crate::text::Span::new(at, at + 3));
        let out = one_file(src, d);
        let lines: Vec<&str> = out.lines().collect();
        let shown = lines[3].strip_prefix("1 | …").expect("cut before");
        let before = &shown[..shown.find("bad").unwrap()];
        let columns = before
            .chars()
            .map(|c| if c == '模' { 2 } else { 1 })
            .sum::<usize>();
        assert_eq!(
            lines[4],
            format!("  | {}^^^", " ".repeat(1 + columns)),
            "{out}"
        );
    }

    #[test]
    fn long_lines_are_cut_to_a_window_around_the_span() {
        let long = "x".repeat(100_000);
        let src = format!("a: \"{long}\" bad: 1 \"{long}\"\n");
        let at = src.find("bad").unwrap();
        let d = Diagnostic::new(&TEST_RULE, "unknown")
            .at(crate::text::Span::new(at, at + 3))
            .label(crate::text::Span::new(0, 1), "far away")
            .label(crate::text::Span::new(3, src.len() - 1), "long string");
        let out = one_file(src.clone(), d);
        assert!(out.len() < 2000, "{out}");
        assert!(out.contains(&format!(":1:{}", at + 1)), "{out}");
        let lines: Vec<&str> = out.lines().collect();
        let shown = lines[3];
        assert!(
            shown.starts_with("1 | …") && shown.ends_with('…'),
            "{shown}"
        );
        assert_eq!(shown.chars().count(), "1 | ".len() + 2 + SNIPPET_WIDTH);
        let caret = lines[4];
        let col = |l: &str, c: char| l.chars().position(|x| x == c);
        assert_eq!(
            col(caret, '^'),
            shown.find("bad").map(|b| shown[..b].chars().count())
        );
        assert_eq!(caret.matches('^').count(), 3);
        // The far label points at the cut; the long one is clipped.
        assert_eq!(lines[5], "  | - far away");
        assert!(lines[6].starts_with("  |  -"), "{}", lines[6]);
        assert!(lines[6].matches('-').count() <= SNIPPET_WIDTH + 1);
        // A span near the end shows the end of the line.
        let src = format!("{long} z\n");
        let d = Diagnostic::new(&TEST_RULE, "z")
            .at(crate::text::Span::new(src.len() - 2, src.len() - 1));
        let out = one_file(src, d);
        let shown = out.lines().nth(3).unwrap();
        assert!(
            shown.starts_with("1 | …") && shown.ends_with(" z"),
            "{shown}"
        );
        let caret = out.lines().nth(4).unwrap();
        assert_eq!(
            caret.chars().count(),
            shown.chars().count(),
            "{shown}\n{caret}"
        );
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
