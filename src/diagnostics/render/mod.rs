//! Renderers, one per output format. Each writes a whole [`Report`] to a
//! writer; none of them touches the terminal (colour is decided by the
//! caller and passed in [`RenderOptions`]). Line and column are computed
//! here, from the byte spans, with [`LineIndex`].

pub mod github;
pub mod human;
pub mod json;
pub mod junit;
pub mod sarif;

use crate::diagnostics::Report;
use crate::diagnostics::{Diagnostic, Severity};
use crate::text::{LineIndex, Span};
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

/// Output formats of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Github,
    Sarif,
    Junit,
}

/// What the renderers need besides the report.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// ANSI colour in human output.
    pub color: bool,
    /// Human output: findings only, no summary line.
    pub quiet: bool,
    /// Directory that relative paths in `github` and `sarif` output are
    /// relative to (the current directory); absolute report paths under it
    /// are made relative.
    pub base_dir: Option<PathBuf>,
    /// The rule catalogue `sarif` lists in its driver, so that `ruleIndex`
    /// is stable between runs (the command passes the registry's rules;
    /// renderers never consult the registry). Empty: the rules of the
    /// findings.
    pub rules: &'static [crate::diagnostics::Rule],
}

/// Writes `report` in `format`.
pub fn render(
    format: Format,
    out: &mut dyn Write,
    report: &Report,
    opts: &RenderOptions,
) -> io::Result<()> {
    match format {
        Format::Human => human::render(out, report, opts),
        Format::Json => json::render(out, report, opts),
        Format::Github => github::render(out, report, opts),
        Format::Sarif => sarif::render(out, report, opts),
        Format::Junit => junit::render(out, report, opts),
    }
}

/// 1-based start and end of a span; `end_column` is the column just past
/// the last character (equal to `column` for an empty span).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
}

impl Location {
    pub fn of(index: &LineIndex, src: &str, span: Span) -> Location {
        let start = (span.start as usize).min(src.len());
        let end = (span.end as usize).clamp(start, src.len());
        let s = index.line_col(src, start);
        let e = index.line_col(src, end);
        Location {
            line: s.line,
            column: s.column,
            end_line: e.line,
            end_column: e.column,
        }
    }

    pub fn single_line(&self) -> bool {
        self.line == self.end_line
    }
}

/// Counts of one report, as every format summarises it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    /// Files with at least one finding.
    pub files_with_findings: usize,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

impl Summary {
    pub fn of(report: &Report) -> Summary {
        let mut s = Summary {
            files: report.files.len(),
            ..Summary::default()
        };
        for f in &report.files {
            if !f.diagnostics.is_empty() {
                s.files_with_findings += 1;
            }
            for d in &f.diagnostics {
                match d.severity {
                    Severity::Error => s.errors += 1,
                    Severity::Warning => s.warnings += 1,
                    Severity::Note => s.notes += 1,
                }
            }
        }
        s
    }
}

/// Diagnostics of a file ordered by position (file-level ones first),
/// keeping the report's order among equal positions.
pub fn sorted(diags: &[Diagnostic]) -> Vec<&Diagnostic> {
    let mut v: Vec<&Diagnostic> = diags.iter().collect();
    v.sort_by_key(|d| d.span.map(|s| (1, s.start, s.end)).unwrap_or((0, 0, 0)));
    v
}

/// A report path as a relative, forward-slash path when possible: `./`
/// prefixes dropped, absolute paths under `base` made relative to it.
/// Returns the path and whether it is relative.
pub fn portable_path(path: &str, base: Option<&Path>) -> (String, bool) {
    let p = Path::new(path);
    let rel: Option<PathBuf> = if p.is_absolute() {
        base.and_then(|b| p.strip_prefix(b).ok())
            .map(Path::to_path_buf)
    } else {
        Some(p.to_path_buf())
    };
    match rel {
        Some(r) => {
            let parts: Vec<String> = r
                .components()
                .filter(|c| !matches!(c, Component::CurDir))
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (parts.join("/"), true)
        }
        None => (path.replace('\\', "/"), false),
    }
}

/// Percent-encodes a path for use in a URI (RFC 3986 unreserved characters
/// and `/` stay as they are).
pub fn uri_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// English plural: `1 error`, `2 errors`.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn portable_paths() {
        assert_eq!(
            portable_path("./m/config.pbtxt", None),
            ("m/config.pbtxt".into(), true)
        );
        assert_eq!(portable_path("a/./b", None), ("a/b".into(), true));
        assert_eq!(
            portable_path("/w/r/m/config.pbtxt", Some(Path::new("/w"))),
            ("r/m/config.pbtxt".into(), true)
        );
        assert_eq!(
            portable_path("/x/c.pbtxt", Some(Path::new("/w"))),
            ("/x/c.pbtxt".into(), false)
        );
    }

    #[test]
    fn uri_encoding() {
        assert_eq!(
            uri_encode("my model/config.pbtxt"),
            "my%20model/config.pbtxt"
        );
        assert_eq!(uri_encode("<stdin>"), "%3Cstdin%3E");
    }

    #[test]
    fn locations_are_one_based_and_end_exclusive() {
        let src = "name: \"m\"\nmax_batch_sise: 8\n";
        let idx = LineIndex::new(src);
        let l = Location::of(&idx, src, Span::new(10, 24));
        assert_eq!(
            l,
            Location {
                line: 2,
                column: 1,
                end_line: 2,
                end_column: 15
            }
        );
        // Out-of-range spans are clamped rather than panicking.
        let l = Location::of(&idx, src, Span::new(1000, 2000));
        assert_eq!(l.line, 3);
    }
}
