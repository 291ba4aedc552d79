//! Field paths (`input[0].dims[1]`, `parameters{state_pairs}`) and their
//! resolution to byte spans by walking the syntax tree.
//!
//! Rules work on the typed config and name *where* a problem is by path; the
//! span is looked up only when a diagnostic is made, so binding keeps no
//! index at all.

use crate::pbtxt::ast::{Field, Scalar, ScalarKind, Value};
use crate::pbtxt::{ast::Document, literal};
use crate::text::Span;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Field(String),
    /// The i-th element of a repeated field, counted over every occurrence
    /// of the field in order (lists and repeated entries alike), as protobuf
    /// merges them.
    Index(usize),
    /// The entry of a map field with this key.
    Key(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    pub fn root() -> FieldPath {
        FieldPath(Vec::new())
    }

    /// Parses `a.b[2].c{key}.d`. Map keys run to the next `}`.
    pub fn parse(s: &str) -> FieldPath {
        let mut segs = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'.' => i += 1,
                b'[' => {
                    let end = s[i..].find(']').map_or(s.len(), |e| i + e);
                    segs.push(Seg::Index(s[i + 1..end].trim().parse().unwrap_or(0)));
                    i = end + 1;
                }
                b'{' => {
                    let end = s[i..].find('}').map_or(s.len(), |e| i + e);
                    segs.push(Seg::Key(s[i + 1..end].to_string()));
                    i = end + 1;
                }
                _ => {
                    let end = s[i..].find(['.', '[', '{']).map_or(s.len(), |e| i + e);
                    segs.push(Seg::Field(s[i..end].to_string()));
                    i = end;
                }
            }
        }
        FieldPath(segs)
    }

    pub fn field(mut self, name: &str) -> FieldPath {
        self.0.push(Seg::Field(name.to_string()));
        self
    }

    pub fn index(mut self, i: usize) -> FieldPath {
        self.0.push(Seg::Index(i));
        self
    }

    pub fn key(mut self, k: impl Into<String>) -> FieldPath {
        self.0.push(Seg::Key(k.into()));
        self
    }
}

impl From<&str> for FieldPath {
    fn from(s: &str) -> FieldPath {
        FieldPath::parse(s)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Field(n) if i == 0 => write!(f, "{n}")?,
                Seg::Field(n) => write!(f, ".{n}")?,
                Seg::Index(x) => write!(f, "[{x}]")?,
                Seg::Key(k) => write!(f, "{{{k}}}")?,
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Resolved {
    /// The value's span, or the closest ancestor's.
    pub span: Span,
    /// The name of the last field reached.
    pub name_span: Option<Span>,
    /// Whether the whole path was found.
    pub exact: bool,
}

pub fn resolve(src: &str, doc: &Document, path: &FieldPath) -> Resolved {
    let mut fields: &[Field] = &doc.fields;
    let mut best = Resolved {
        span: Span::empty(0),
        name_span: None,
        exact: path.0.is_empty(),
    };
    if path.0.is_empty() {
        best.span = doc.span;
        return best;
    }
    let segs = &path.0;
    let mut i = 0;
    while i < segs.len() {
        let Seg::Field(name) = &segs[i] else {
            return best;
        };
        let occurrences: Vec<&Field> = fields
            .iter()
            .filter(|f| &src[f.name.span.range()] == name.as_str())
            .collect();
        let Some(last) = occurrences.last() else {
            return best;
        };
        best.name_span = Some(last.name.span);
        let value: &Value = match segs.get(i + 1) {
            Some(Seg::Index(n)) => {
                i += 1;
                match elements(&occurrences).nth(*n) {
                    Some(v) => v,
                    None => {
                        best.span = last.name.span;
                        return best;
                    }
                }
            }
            Some(Seg::Key(k)) => {
                i += 1;
                match elements(&occurrences).rfind(|v| entry_key_is(src, v, k)) {
                    Some(v) => v,
                    None => {
                        best.span = last.name.span;
                        return best;
                    }
                }
            }
            _ => &last.value,
        };
        best.span = value.span();
        i += 1;
        if i == segs.len() {
            best.exact = true;
            return best;
        }
        match value {
            Value::Message(m) => fields = &m.fields,
            _ => return best,
        }
    }
    best
}

fn elements<'a>(occ: &[&'a Field]) -> std::vec::IntoIter<&'a Value> {
    let mut out = Vec::new();
    for f in occ {
        match &f.value {
            Value::List(l) => out.extend(l.items.iter()),
            v => out.push(v),
        }
    }
    out.into_iter()
}

fn entry_key_is(src: &str, v: &Value, key: &str) -> bool {
    let Value::Message(m) = v else { return false };
    m.fields
        .iter()
        .rfind(|f| &src[f.name.span.range()] == "key")
        .is_some_and(|f| match &f.value {
            Value::Scalar(s) => scalar_text(src, s) == key,
            _ => false,
        })
}

/// A scalar's value as text: strings decoded, numbers as written.
pub fn scalar_text(src: &str, s: &Scalar) -> String {
    match &s.kind {
        ScalarKind::Strings(parts) => {
            let mut b = Vec::new();
            for p in parts {
                literal::unescape_into(&src[p.range()], &mut b);
            }
            String::from_utf8_lossy(&b).into_owned()
        }
        ScalarKind::Int {
            negative,
            radix,
            lit,
        } => {
            let mag = literal::parse_uint(&src[lit.range()], *radix)
                .map_or_else(|| src[lit.range()].to_string(), |m| m.to_string());
            if *negative {
                format!("-{mag}")
            } else {
                mag
            }
        }
        _ => src[s.span.range()].to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span_text<'a>(src: &'a str, p: &str) -> (&'a str, bool) {
        let doc = crate::pbtxt::parse(src).unwrap();
        let r = resolve(src, &doc, &FieldPath::parse(p));
        (&src[r.span.range()], r.exact)
    }

    #[test]
    fn paths_round_trip() {
        for p in [
            "input[0].dims[1]",
            "parameters{state_pairs}.string_value",
            "name",
        ] {
            assert_eq!(FieldPath::parse(p).to_string(), p);
        }
    }

    #[test]
    fn resolves_lists_repeated_entries_and_maps() {
        let src = "input [ { name: \"a\" dims: [ 1, 0 ] } ]\ninput { name: \"b\" dims: 7 dims: 9 }\nparameters { key: \"k1\" value { string_value: \"v\" } }\nparameters [ { key: 'k2' value: { string_value: \"w\" } } ]\ndynamic_batching { }";
        assert_eq!(span_text(src, "input[0].dims[1]"), ("0", true));
        assert_eq!(span_text(src, "input[1].name"), ("\"b\"", true));
        assert_eq!(span_text(src, "input[1].dims[1]"), ("9", true));
        assert_eq!(
            span_text(src, "parameters{k2}.value.string_value"),
            ("\"w\"", true)
        );
        assert_eq!(
            span_text(src, "parameters{k1}.value.string_value"),
            ("\"v\"", true)
        );
        // Missing: falls back to the closest ancestor.
        assert_eq!(
            span_text(src, "dynamic_batching.max_queue_delay_microseconds"),
            ("{ }", false)
        );
        assert_eq!(span_text(src, "input[5]"), ("input", false));
    }
}
