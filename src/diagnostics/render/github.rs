//! `--format github`: one GitHub Actions workflow command per finding,
//! `::error file=F,line=L,col=C,endLine=..,endColumn=..,title=CODE::message`.
//! Columns only when the span lies on one line (GitHub ignores them
//! otherwise); file-level findings carry no line. Values are escaped as the
//! Actions runner expects: `%`, CR and LF everywhere, and `:` and `,` also
//! in properties; other control characters are shown as `\u{1b}` text.

use super::{portable_path, Location, RenderOptions};
use crate::diagnostics::Report;
use crate::diagnostics::Severity;
use crate::text::display;
use crate::text::LineIndex;
use std::io::{self, Write};

pub fn render(out: &mut dyn Write, report: &Report, opts: &RenderOptions) -> io::Result<()> {
    for f in &report.files {
        let index = LineIndex::new(&f.src);
        let (path, _) = portable_path(&f.path, opts.base_dir.as_deref());
        for d in &f.diagnostics {
            let level = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Note => "notice",
            };
            let mut props = vec![format!("file={}", escape_property(&path))];
            if let Some(span) = d.span {
                let l = Location::of(&index, &f.src, span);
                props.push(format!("line={}", l.line));
                if l.single_line() {
                    props.push(format!("col={}", l.column));
                }
                props.push(format!("endLine={}", l.end_line));
                if l.single_line() {
                    props.push(format!("endColumn={}", l.end_column));
                }
            }
            props.push(format!("title={}", escape_property(d.code())));
            writeln!(
                out,
                "::{level} {}::{}",
                props.join(","),
                escape_data(&d.message)
            )?;
        }
    }
    Ok(())
}

/// Escapes the message part of a workflow command: `%`, CR and LF as the
/// runner decodes them, and every other control character (ESC, ...) as
/// display text ([`crate::text::display`]), so that none reaches the log;
/// cut as [`display::Untrusted`] cuts a long value.
pub fn escape_data(s: &str) -> String {
    let (s, left_out) = display::clip(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            c if display::needs_escape(c) => {
                display::push_escaped(&mut out, c.encode_utf8(&mut [0; 4]))
            }
            c => out.push(c),
        }
    }
    if left_out > 0 {
        out.push_str(&format!("… ({left_out} more bytes not shown)"));
    }
    out
}

/// Escapes a property value of a workflow command.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape_data("50% a\r\nb: c, d"), "50%25 a%0D%0Ab: c, d");
        assert_eq!(escape_property("a:b,c%\n"), "a%3Ab%2Cc%25%0A");
        assert_eq!(
            escape_data("\u{1b}]0;pwned\u{7}\u{1b}[2J\t\u{202e}"),
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\t\\u{202e}"
        );
    }
}
