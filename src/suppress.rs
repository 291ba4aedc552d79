//! Inline suppressions: `# tritonctl: ignore=CODE[,CODE...]`.
//!
//! * At the end of a line, the comment silences the listed rules for
//!   findings whose primary location starts on that line.
//! * On a line of its own, it silences them for the field that follows
//!   (the next line that is neither blank nor a comment): its whole span,
//!   from the field name to the end of its value, nested fields included.
//!
//! Entries are rule codes (`E0101`) or names (`unknown-field`), separated
//! by commas; text after the list (a reason) is ignored. Entries naming no
//! rule are reported (W1001); entries that silence nothing are reported
//! (W1002) only when asked for.

use crate::diagnostics::Diagnostic;
use crate::diagnostics::FileReport;
use crate::lint::rules::suppress::{unknown_suppression, unused_suppression};
use crate::pbtxt::ast::{Document, Field, Value};
use crate::text::{LineIndex, Span};

/// The marker that starts a suppression inside a comment.
const MARKER: &str = "tritonctl:";

/// One entry of a suppression comment.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// As written.
    pub text: String,
    /// Where it is written.
    pub span: Span,
    /// The rule's code, when the entry names one.
    pub code: Option<&'static str>,
}

/// One suppression comment and the byte range it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppression {
    pub entries: Vec<Entry>,
    /// Findings whose primary span starts inside `start..=end` are covered.
    pub covers: Span,
}

impl Suppression {
    fn covers(&self, d: &Diagnostic) -> bool {
        d.span
            .is_some_and(|s| s.start >= self.covers.start && s.start <= self.covers.end)
    }
}

/// The suppression comments of `src`. `doc` (the parsed tree, if the text
/// parsed) lets an own-line comment cover its whole field; without it the
/// comment covers the next line.
pub fn scan(src: &str, doc: Option<&Document>) -> Vec<Suppression> {
    if !src.contains(MARKER) {
        return Vec::new();
    }
    let index = LineIndex::new(src);
    let mut out = Vec::new();
    for comment in crate::pbtxt::comments::scan(src) {
        let Some(entries) = parse_comment(src, comment) else {
            continue;
        };
        let line = index.line_of(comment.start as usize);
        let line_start = index.line_start(line);
        let own_line = src[line_start..comment.start as usize].trim().is_empty();
        let covers = if own_line {
            next_code_line(src, &index, line)
                .map(|l| field_or_line(src, &index, doc, l))
                // Nothing follows: the comment covers nothing.
                .unwrap_or(Span::empty(src.len() + 1))
        } else {
            line_span(src, &index, line)
        };
        out.push(Suppression { entries, covers });
    }
    out
}

/// The entries of a comment `# tritonctl: ignore=A,B reason`, or `None`
/// when the comment is not a suppression.
fn parse_comment(src: &str, comment: Span) -> Option<Vec<Entry>> {
    let text = &src[comment.range()];
    let body = text.trim_start_matches('#').trim_start();
    let rest = body.strip_prefix(MARKER)?.trim_start();
    let rest = rest.strip_prefix("ignore")?.trim_start();
    let rest = rest.strip_prefix('=')?;
    let mut offset = comment.start as usize + (text.len() - rest.len());
    let mut entries = Vec::new();
    let mut rest = rest;
    loop {
        let trimmed = rest.trim_start();
        offset += rest.len() - trimmed.len();
        rest = trimmed;
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        if len == 0 {
            break;
        }
        let word = &rest[..len];
        entries.push(Entry {
            text: word.to_string(),
            span: Span::new(offset, offset + len),
            code: crate::lint::registry::find_loose(word).map(|r| r.code),
        });
        offset += len;
        rest = &rest[len..];
        let trimmed = rest.trim_start();
        match trimmed.strip_prefix(',') {
            Some(after) => {
                offset += rest.len() - after.len();
                rest = after;
            }
            None => break,
        }
    }
    Some(entries)
}

/// The 0-based line after `line` that holds something other than blanks
/// and comments.
fn next_code_line(src: &str, index: &LineIndex, line: usize) -> Option<usize> {
    (line + 1..index.line_count()).find(|&l| {
        let t = index.line_text(src, l).trim();
        !t.is_empty() && !t.starts_with('#')
    })
}

fn line_span(src: &str, index: &LineIndex, line: usize) -> Span {
    let start = index.line_start(line);
    Span::new(start, start + index.line_text(src, line).len())
}

/// The outermost field whose name starts on `line`, or the line itself.
fn field_or_line(src: &str, index: &LineIndex, doc: Option<&Document>, line: usize) -> Span {
    let here = line_span(src, index, line);
    let Some(doc) = doc else {
        return here;
    };
    fn find(fields: &[Field], here: Span) -> Option<Span> {
        for f in fields {
            if f.span.start > here.end {
                return None;
            }
            if f.name.span.start >= here.start && f.name.span.start <= here.end {
                return Some(f.span);
            }
            if f.span.start <= here.start && f.span.end >= here.start {
                let inner = match &f.value {
                    Value::Message(m) => find(&m.fields, here),
                    Value::List(l) => l.items.iter().find_map(|v| match v {
                        // A list element that opens on the line: all of it.
                        Value::Message(m)
                            if m.span.start >= here.start && m.span.start <= here.end =>
                        {
                            Some(m.span)
                        }
                        Value::Message(m) => find(&m.fields, here),
                        _ => None,
                    }),
                    Value::Scalar(_) => None,
                };
                if inner.is_some() {
                    return inner;
                }
            }
        }
        None
    }
    // Several fields may start on the line: cover from the first to the end
    // of the line or of the first field, whichever is later.
    find(&doc.fields, here)
        .map(|s| s.cover(here))
        .unwrap_or(here)
}

/// Drops the findings of `file` that its suppression comments cover, and
/// adds W1001 for entries naming no rule (and W1002 for entries that
/// silenced nothing, when `report_unused`).
pub fn apply(file: &mut FileReport, report_unused: bool) {
    if !file.src.contains(MARKER) {
        return;
    }
    let doc = crate::pbtxt::parse(&file.src).ok();
    let sups = scan(&file.src, doc.as_ref());
    if sups.is_empty() {
        return;
    }
    let mut used = vec![Vec::new(); sups.len()];
    file.diagnostics.retain(|d| {
        let mut keep = true;
        for (i, s) in sups.iter().enumerate() {
            if !s.covers(d) {
                continue;
            }
            for (j, e) in s.entries.iter().enumerate() {
                if e.code == Some(d.code()) {
                    used[i].push(j);
                    keep = false;
                }
            }
        }
        keep
    });
    for (i, s) in sups.iter().enumerate() {
        for (j, e) in s.entries.iter().enumerate() {
            if e.code.is_none() {
                let names = crate::lint::registry::all()
                    .iter()
                    .flat_map(|r| [r.code, r.name]);
                let near = crate::text::suggestions(&e.text, names);
                file.diagnostics
                    .push(unknown_suppression(&e.text, e.span, near.first().copied()));
            } else if report_unused && !used[i].contains(&j) {
                file.diagnostics.push(unused_suppression(&e.text, e.span));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covered<'a>(src: &'a str, s: &Suppression) -> &'a str {
        &src[s.covers.start as usize..(s.covers.end as usize).min(src.len())]
    }

    #[test]
    fn end_of_line_comment_covers_its_line() {
        let src =
            "name: \"m\"\nmax_batch_size: 8 # tritonctl: ignore=E0101, unknown-field because\n";
        let doc = crate::pbtxt::parse(src).unwrap();
        let sups = scan(src, Some(&doc));
        assert_eq!(sups.len(), 1);
        assert!(covered(src, &sups[0]).starts_with("max_batch_size: 8"));
        let e = &sups[0].entries;
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].code, Some("E0101"));
        assert_eq!(e[1].code, Some("E0101"));
        assert_eq!(&src[e[1].span.range()], "unknown-field");
    }

    #[test]
    fn own_line_comment_covers_the_next_field() {
        let src = "name: \"m\"\n  # tritonctl: ignore=E9999\n\n  # other\ninput {\n  name: \"x\"\n}\noutput { }\n";
        let doc = crate::pbtxt::parse(src).unwrap();
        let sups = scan(src, Some(&doc));
        assert_eq!(covered(src, &sups[0]), "input {\n  name: \"x\"\n}");
        assert_eq!(sups[0].entries[0].code, None);
    }

    #[test]
    fn own_line_comment_before_a_list_element_covers_the_element() {
        let src = "input [\n  # tritonctl: ignore=E0101\n  {\n    name: \"x\"\n  },\n  { name: \"y\" }\n]\n";
        let doc = crate::pbtxt::parse(src).unwrap();
        let sups = scan(src, Some(&doc));
        assert_eq!(covered(src, &sups[0]), "  {\n    name: \"x\"\n  }");
    }

    #[test]
    fn other_comments_are_not_suppressions() {
        let src = "# tritonctl is great\nname: \"tritonctl: ignore=E0101\"\n";
        assert!(scan(src, None).is_empty());
    }
}
