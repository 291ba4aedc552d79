//! `tritonctl fmt [PATH...]`: rewrites config files in the canonical layout
//! of `crate::pbtxt::printer`.
//!
//! Paths are files, model directories or model repositories (found as
//! `validate` finds them: the `config.pbtxt` of each model); `-` reads
//! standard input and writes the formatted text to standard output.
//!
//! - Default: files that change are rewritten in place, atomically: the
//!   text goes to a temporary file in the same directory, which is flushed
//!   to disk, given the original's permissions and renamed over it (a
//!   symbolic link is followed, so the link stays a link). A read-only file
//!   is left alone and reported.
//! - `--check`: nothing is written; the files that would change are listed
//!   (`Would reformat: PATH`) and the exit status is 1 if there is one.
//! - `--diff`: nothing is written; a unified diff of every change goes to
//!   standard output (the summary to standard error) and the exit status is
//!   1 if there is one.
//!
//! A file that does not parse is not touched: its syntax error is shown on
//! standard error as `validate` shows it, and the exit status is 1 — like a
//! `validate` finding, since the file was read but is not valid text
//! format. Exit status 2 is for what `fmt` could not do: an unreadable
//! path, a file that is not UTF-8, a failed write, or an internal error.
//!
//! Before anything is written the printed text is parsed again and checked
//! to hold exactly the same fields and values as the input (schema-free,
//! so unknown fields are covered too) and to bind to an equal ModelConfig
//! message; if not, the file is left unchanged and the failure reported as
//! an internal error (exit 2).

use super::convert::show_diagnostics;
use super::{CommandError, Context, ExitStatus};
use crate::cli::FmtArgs;
use crate::diagnostics::render::plural;
use crate::diagnostics::Diagnostic;
use crate::pbtxt::{self, printer};
use crate::schema;
use crate::validate::{FileReport, Report};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Why a text could not be formatted.
#[derive(Debug)]
pub enum FormatError {
    /// The text does not parse.
    Syntax(Box<Diagnostic>),
    /// The printed text would not hold the same document (a bug).
    Internal(String),
}

/// Formats `src` and checks that the result holds the same document (see
/// the module documentation).
pub fn format_text(src: &str) -> Result<String, FormatError> {
    let doc = pbtxt::parse(src).map_err(FormatError::Syntax)?;
    let out = printer::print_document(src, &doc);
    let again = pbtxt::parse(&out).map_err(|d| {
        FormatError::Internal(format!("the formatted text does not parse: {}", d.message))
    })?;
    if !printer::same_tree(src, &doc, &out, &again) {
        return Err(FormatError::Internal(
            "the formatted text holds different fields or values".into(),
        ));
    }
    let desc = schema::model_config();
    let (before, _) = schema::bind::bind(src, &doc, &desc);
    let (after, _) = schema::bind::bind(&out, &again, &desc);
    if !crate::convert::messages_equal(&before, &after) {
        return Err(FormatError::Internal(
            "the formatted text binds to a different ModelConfig".into(),
        ));
    }
    Ok(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Check,
    Diff,
}

enum Target {
    Stdin,
    File(PathBuf),
}

#[derive(Default)]
struct Tally {
    changed: usize,
    unchanged: usize,
    /// Files that do not parse.
    invalid: usize,
    /// Unreadable inputs, failed writes, internal errors.
    errors: usize,
}

pub fn run(args: &FmtArgs, ctx: &Context, out: &mut dyn Write) -> Result<ExitStatus, CommandError> {
    let mode = if args.diff {
        Mode::Diff
    } else if args.check {
        Mode::Check
    } else {
        Mode::Write
    };
    let mut tally = Tally::default();
    let error = |message: &str| crate::term::error(ctx.global.color, message);

    let mut targets = Vec::new();
    let mut stdin_seen = false;
    for p in &args.paths {
        if p.as_os_str() == "-" {
            if stdin_seen {
                return Err(CommandError::Usage(
                    "standard input ('-') is given more than once".into(),
                ));
            }
            stdin_seen = true;
            targets.push(Target::Stdin);
            continue;
        }
        match fs::metadata(p) {
            Err(e) => {
                error(&format!(
                    "{}: {}",
                    p.display(),
                    crate::files::io_message(&e)
                ));
                tally.errors += 1;
            }
            Ok(m) if m.is_dir() => match crate::repo::discover(p) {
                Ok(models) => targets.extend(
                    models
                        .into_iter()
                        .filter(|m| m.config_path.is_file())
                        .map(|m| Target::File(m.config_path)),
                ),
                Err(e) => {
                    error(&format!(
                        "{}: {}",
                        p.display(),
                        crate::files::io_message(&e)
                    ));
                    tally.errors += 1;
                }
            },
            Ok(_) => targets.push(Target::File(p.clone())),
        }
    }

    let only_stdin = targets.len() == 1 && matches!(targets[0], Target::Stdin);
    for t in &targets {
        let (name, bytes) = match t {
            Target::Stdin => match crate::term::read_stdin() {
                Ok(b) => ("<stdin>".to_string(), b),
                Err(e) => {
                    error(&format!("<stdin>: cannot read standard input: {e}"));
                    tally.errors += 1;
                    continue;
                }
            },
            Target::File(p) => {
                let name = tidy_path(p);
                match fs::read(p) {
                    Ok(b) => (name, b),
                    Err(e) => {
                        error(&format!(
                            "{name}: cannot read: {}",
                            crate::files::io_message(&e)
                        ));
                        tally.errors += 1;
                        continue;
                    }
                }
            }
        };
        let Ok(src) = String::from_utf8(bytes) else {
            error(&format!(
                "{name}: not UTF-8 text; fmt leaves it unchanged (save it as UTF-8 first)"
            ));
            tally.errors += 1;
            continue;
        };
        let formatted = match format_text(&src) {
            Ok(f) => f,
            Err(FormatError::Syntax(d)) => {
                let report = Report {
                    files: vec![FileReport {
                        path: name.clone(),
                        model: None,
                        src,
                        diagnostics: vec![*d],
                    }],
                };
                show_diagnostics(&report, ctx);
                tally.invalid += 1;
                continue;
            }
            Err(FormatError::Internal(why)) => {
                error(&format!(
                    "{name}: internal error, left unchanged: {why} (a bug in tritonctl {}; please report it)",
                    env!("CARGO_PKG_VERSION")
                ));
                tally.errors += 1;
                continue;
            }
        };
        let changed = formatted != src;
        match (mode, t) {
            (Mode::Write, Target::Stdin) => out.write_all(formatted.as_bytes())?,
            (Mode::Write, Target::File(p)) if changed => {
                if let Err(e) = crate::files::write_atomic(
                    p,
                    formatted.as_bytes(),
                    crate::files::Replace::Allow,
                ) {
                    error(&format!("{name}: cannot write, left unchanged: {e}"));
                    tally.errors += 1;
                    continue;
                }
            }
            (Mode::Check, _) if changed => writeln!(out, "Would reformat: {name}")?,
            (Mode::Diff, _) if changed => {
                let d = unified_diff(&src, &formatted, &name, &name);
                out.write_all(paint_diff(&d, ctx.color).as_bytes())?;
            }
            _ => {}
        }
        if ctx.global.verbose {
            crate::term::eprint(&format!(
                "{name}: {}\n",
                match (changed, mode) {
                    (false, _) => "already formatted",
                    (true, Mode::Write) => "reformatted",
                    (true, _) => "would be reformatted",
                }
            ));
        }
        if changed {
            tally.changed += 1;
        } else {
            tally.unchanged += 1;
        }
    }
    out.flush()?;

    let stdin_to_stdout = mode == Mode::Write && only_stdin;
    if !ctx.global.quiet && !stdin_to_stdout {
        let line = summary(mode, &tally);
        if mode == Mode::Diff {
            crate::term::eprint(&format!("{line}\n"));
        } else {
            writeln!(out, "{line}")?;
            out.flush()?;
        }
    }

    Ok(if tally.errors > 0 {
        ExitStatus::Error
    } else if tally.invalid > 0 || (mode != Mode::Write && tally.changed > 0) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn summary(mode: Mode, t: &Tally) -> String {
    if t.changed + t.unchanged + t.invalid + t.errors == 0 {
        return "No model configurations found.".into();
    }
    let mut parts = Vec::new();
    let (changed, unchanged) = match mode {
        Mode::Write => ("reformatted", "left unchanged"),
        _ => ("would be reformatted", "already formatted"),
    };
    if t.changed > 0 {
        parts.push(format!("{} {changed}", plural(t.changed, "file")));
    }
    if t.unchanged > 0 {
        parts.push(format!("{} {unchanged}", plural(t.unchanged, "file")));
    }
    if t.invalid > 0 {
        parts.push(format!("{} not parsed", plural(t.invalid, "file")));
    }
    if t.errors > 0 {
        parts.push(plural(t.errors, "error"));
    }
    parts.join(", ")
}

/// Drops leading `./` (`tritonctl fmt` reports `m/config.pbtxt`).
fn tidy_path(p: &Path) -> String {
    let s = p.display().to_string();
    let mut t = s.as_str();
    while let Some(rest) = t.strip_prefix("./") {
        t = rest.trim_start_matches('/');
    }
    if t.is_empty() {
        s
    } else {
        t.to_string()
    }
}

// ---------------------------------------------------------------------------
// Unified diff

const CONTEXT: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Equal,
    Delete,
    Insert,
}

/// Line operations turning `a` into `b`: a longest common subsequence after
/// the common head and tail are set aside; when the rest is too large for
/// that (more than 16 million line pairs) it is all deleted and inserted.
fn line_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let head = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut ops = vec![Op::Equal; head];
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > 16_000_000 {
        ops.extend(std::iter::repeat_n(Op::Delete, n));
        ops.extend(std::iter::repeat_n(Op::Insert, m));
    } else {
        // lcs[i * (m + 1) + j]: length of the LCS of ma[i..] and mb[j..]
        // (at most min(n, m) <= 4000, so u16 is enough).
        let w = m + 1;
        let mut lcs = vec![0u16; (n + 1) * w];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * w + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push(Op::Equal);
                i += 1;
                j += 1;
            } else if j == m || (i < n && lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) {
                ops.push(Op::Delete);
                i += 1;
            } else {
                ops.push(Op::Insert);
                j += 1;
            }
        }
    }
    ops.extend(std::iter::repeat_n(Op::Equal, tail));
    ops
}

/// A unified diff (three lines of context) from `old` to `new`; empty when
/// they are equal.
pub fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = line_ops(&a, &b);
    // Line positions before each op.
    let mut pos = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0usize, 0usize);
    for op in &ops {
        pos.push((i, j));
        match op {
            Op::Equal => {
                i += 1;
                j += 1;
            }
            Op::Delete => i += 1,
            Op::Insert => j += 1,
        }
    }
    pos.push((i, j));
    let changes: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Equal).collect();
    if changes.is_empty() {
        return String::new();
    }
    let mut hunks: Vec<(usize, usize)> = Vec::new();
    for &c in &changes {
        let (s, e) = (c.saturating_sub(CONTEXT), (c + 1 + CONTEXT).min(ops.len()));
        match hunks.last_mut() {
            Some(h) if s <= h.1 => h.1 = e,
            _ => hunks.push((s, e)),
        }
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    for (s, e) in hunks {
        let count = |want: Op| {
            ops[s..e]
                .iter()
                .filter(|&&o| o == Op::Equal || o == want)
                .count()
        };
        let (na, nb) = (count(Op::Delete), count(Op::Insert));
        let start = |p: usize, n: usize| if n == 0 { p } else { p + 1 };
        out.push_str(&format!(
            "@@ -{},{na} +{},{nb} @@\n",
            start(pos[s].0, na),
            start(pos[s].1, nb)
        ));
        for k in s..e {
            let (mark, line) = match ops[k] {
                Op::Equal => (' ', a[pos[k].0]),
                Op::Delete => ('-', a[pos[k].0]),
                Op::Insert => ('+', b[pos[k].1]),
            };
            out.push(mark);
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

/// Colours a diff's lines (headers bold, hunk headers cyan, removals red,
/// additions green).
fn paint_diff(diff: &str, color: bool) -> String {
    use anstyle::{AnsiColor, Style};
    if !color {
        return diff.to_string();
    }
    let mut out = String::with_capacity(diff.len() * 2);
    for line in diff.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let style = if body.starts_with("--- ") || body.starts_with("+++ ") {
            Style::new().bold()
        } else if body.starts_with("@@") {
            Style::new().fg_color(Some(AnsiColor::Cyan.into()))
        } else if body.starts_with('-') {
            Style::new().fg_color(Some(AnsiColor::Red.into()))
        } else if body.starts_with('+') {
            Style::new().fg_color(Some(AnsiColor::Green.into()))
        } else {
            Style::new()
        };
        if style == Style::new() {
            out.push_str(line);
        } else {
            out.push_str(&format!("{style}{body}{style:#}"));
            if line.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies a unified diff to `old` (a minimal patch(1)).
    fn apply(old: &str, diff: &str) -> String {
        let a: Vec<&str> = old.split_inclusive('\n').collect();
        let mut out = String::new();
        let mut next = 0usize; // next line of `a` not copied yet
        let mut lines = diff.split_inclusive('\n').skip(2).peekable();
        while let Some(h) = lines.next() {
            assert!(h.starts_with("@@ -"), "{h}");
            let old_start: usize = h[4..].split(',').next().unwrap().parse().unwrap();
            let copy_to = old_start.saturating_sub(1);
            let old_len: usize = h
                .split(' ')
                .nth(1)
                .unwrap()
                .split(',')
                .nth(1)
                .unwrap()
                .parse()
                .unwrap();
            let copy_to = if old_len == 0 { old_start } else { copy_to };
            while next < copy_to {
                out.push_str(a[next]);
                next += 1;
            }
            while let Some(l) = lines.peek() {
                if l.starts_with("@@") {
                    break;
                }
                let l = lines.next().unwrap();
                let no_nl = lines.peek().is_some_and(|n| n.starts_with('\\'));
                let text = if no_nl {
                    lines.next();
                    &l[1..l.len() - 1]
                } else {
                    &l[1..]
                };
                match &l[..1] {
                    " " => {
                        out.push_str(text);
                        next += 1;
                    }
                    "-" => next += 1,
                    "+" => out.push_str(text),
                    other => panic!("bad diff line {other:?}"),
                }
            }
        }
        while next < a.len() {
            out.push_str(a[next]);
            next += 1;
        }
        out
    }

    #[test]
    fn diffs_apply_back() {
        let cases = [
            ("", "a\n"),
            ("a\n", ""),
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb", "a\nb\n"),
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
                "1\nx\n3\n4\n5\n6\n7\n8\n9\n10\ny\n12\n",
            ),
            ("a\r\nb\r\n", "a\nb\n"),
            ("x\ny\n", "y\nx\n"),
        ];
        for (old, new) in cases {
            let d = unified_diff(old, new, "f", "f");
            assert_eq!(apply(old, &d), new, "diff:\n{d}");
        }
        assert_eq!(unified_diff("same\n", "same\n", "f", "f"), "");
    }

    #[test]
    fn hunks_keep_three_lines_of_context() {
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n";
        let new = "1\nx\n3\n4\n5\n6\n7\n8\n9\n10\ny\n12\n";
        let d = unified_diff(old, new, "f", "f");
        assert_eq!(
            d,
            "--- f\n+++ f\n@@ -1,5 +1,5 @@\n 1\n-2\n+x\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+y\n 12\n"
        );
        assert_eq!(
            unified_diff("a", "b\n", "f", "f"),
            "--- f\n+++ f\n@@ -1,1 +1,1 @@\n-a\n\\ No newline at end of file\n+b\n"
        );
    }

    #[test]
    fn format_text_checks_and_reports() {
        assert_eq!(format_text("name:'m'").unwrap(), "name: \"m\"\n");
        assert!(matches!(
            format_text("name 'm'"),
            Err(FormatError::Syntax(_))
        ));
        // Unknown fields are formatted like the others.
        assert_eq!(format_text("foo <bar: 1>").unwrap(), "foo {\n  bar: 1\n}\n");
    }

    #[test]
    fn tidy_paths() {
        assert_eq!(tidy_path(Path::new("./m/config.pbtxt")), "m/config.pbtxt");
        assert_eq!(tidy_path(Path::new("m/config.pbtxt")), "m/config.pbtxt");
    }
}
