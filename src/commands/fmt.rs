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
//!   symbolic link is followed, so the link stays a link; in a directory
//!   given, a link that leads out of it is refused unless
//!   `--follow-symlinks`, as `files` says). A read-only file, a FIFO or a
//!   device is left alone and reported.
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
use crate::diagnostics::{FileReport, Report};
use crate::format::{format_text, unified_diff, FormatError};
use crate::text::display::Untrusted;
use std::fs;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Write,
    Check,
    Diff,
}

enum Target {
    Stdin,
    /// A file, and the directory named on the command line it was found in
    /// (read and written only inside it, see `files`); `None` for a file
    /// named on the command line.
    File(PathBuf, Option<PathBuf>),
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
                        // A config.pbtxt that is there but not a regular
                        // file (a FIFO) is reported when it is read.
                        .filter(|m| m.config_path.symlink_metadata().is_ok())
                        .map(|m| Target::File(m.config_path, Some(p.clone()))),
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
            Ok(_) => targets.push(Target::File(p.clone(), None)),
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
            Target::File(p, root) => {
                // Shown escaped, bytes that are not UTF-8 as `\xff`.
                let name = crate::files::tidy_path(&crate::text::display::path(p));
                let read = match root {
                    Some(root) => crate::files::read_in(p, root),
                    None => crate::files::read_file(p),
                };
                match read {
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
            (Mode::Write, Target::File(p, root)) if changed => {
                let written = match root {
                    Some(root) => crate::files::write_atomic_in(
                        p,
                        root,
                        formatted.as_bytes(),
                        crate::files::Replace::Allow,
                    ),
                    None => crate::files::write_atomic(
                        p,
                        formatted.as_bytes(),
                        crate::files::Replace::Allow,
                    ),
                };
                if let Err(e) = written {
                    error(&format!("{name}: cannot write, left unchanged: {e}"));
                    tally.errors += 1;
                    continue;
                }
            }
            (Mode::Check, _) if changed => writeln!(out, "Would reformat: {}", Untrusted(&name))?,
            (Mode::Diff, _) if changed => {
                let d = unified_diff(&src, &formatted, &name, &name);
                out.write_all(paint_diff(&d, ctx.color).as_bytes())?;
            }
            _ => {}
        }
        if ctx.global.verbose {
            crate::term::eprint(&format!(
                "{}: {}\n",
                Untrusted(&name),
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

/// Colours a diff's lines (headers bold, hunk headers cyan, removals red,
/// additions green). The lines are the input's: control characters in them
/// (a carriage return, ESC in a comment) are shown escaped
/// ([`crate::text::display`]); tabs too, which shows a tab the formatter
/// replaced.
fn paint_diff(diff: &str, color: bool) -> String {
    use anstyle::{AnsiColor, Style};
    let mut out = String::with_capacity(if color { diff.len() * 2 } else { diff.len() });
    for line in diff.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let shown = crate::text::display::escape(body);
        let newline = if line.ends_with('\n') { "\n" } else { "" };
        if !color {
            out.push_str(&shown);
            out.push_str(newline);
            continue;
        }
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
            out.push_str(&shown);
        } else {
            out.push_str(&format!("{style}{shown}{style:#}"));
        }
        out.push_str(newline);
    }
    out
}
