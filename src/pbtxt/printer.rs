//! The canonical layout of a text-format document, used by `tritonctl fmt`,
//! `convert --to pbtxt` and `autoconfig`.
//!
//! One style, whatever the input looked like:
//!
//! - two spaces of indentation per level, `\n` line endings, exactly one
//!   newline at the end of a non-empty file (an empty document prints as the
//!   empty string);
//! - scalars as `name: value`; messages as `name {` … `}` without a colon
//!   (`<>` becomes `{}`), an empty message as `name { }`;
//! - a list of scalars on one line, `dims: [ 16, 16 ]` (`[ ]` when empty);
//!   a list holding a message, or any list with a comment inside it, one
//!   element per line, elements separated by `,` — the layout of Triton's
//!   documentation:
//!
//!   ```text
//!   input [
//!     {
//!       name: "INPUT0"
//!       dims: [ 16 ]
//!     },
//!     {
//!       name: "INPUT1"
//!       dims: [ 16 ]
//!     }
//!   ]
//!   ```
//! - fields stay where and how often they were written: nothing is
//!   reordered, merged or split, so the message never changes;
//! - numbers, enum names, booleans and `inf`/`nan` keep their exact literal
//!   text (`0x10`, `True`, `1e3`); only the blanks between a `-` and its
//!   number go;
//! - strings in double quotes, adjacent literals joined into one, with the
//!   same bytes and normalised escapes: `\"`, `\\`, `\n`, `\r`, `\t`; every
//!   other control character, and every byte that is not part of valid
//!   UTF-8, as a three-digit octal escape `\ooo` (octal, because `\x` would
//!   swallow a following hex digit); all other characters, non-ASCII
//!   included, as themselves;
//! - `,` and `;` between fields are dropped;
//! - comments are kept in place: a comment on a line of its own stays on its
//!   own line before the field (or element, or closing bracket) it preceded,
//!   at that field's indentation; a comment after a field, or after an
//!   opening bracket, stays at the end of that line after one space;
//!   trailing blanks are removed from comments. A comment written inside a
//!   field (between its name and value, between adjacent strings) moves to
//!   its own line before the field;
//! - one blank line where the input had one or more between two fields or
//!   comments of the same block; none after an opening or before a closing
//!   bracket, nor at the start or end of the file.
//!
//! The layout is a fixed point: printing the printed text again gives the
//! same text.

use super::ast::{Document, Field, List, Scalar, ScalarKind, Value};
use super::{comments, literal};
use crate::diagnostics::Diagnostic;
use crate::text::Span;
use prost_reflect::{DynamicMessage, Kind, MapKey, ReflectMessage, Value as PValue};
use std::fmt::Write as _;

/// Parses `src` and prints it in the canonical layout. The error is the
/// syntax diagnostic of [`super::parse`].
pub fn format_source(src: &str) -> Result<String, Box<Diagnostic>> {
    let doc = super::parse(src)?;
    Ok(print_document(src, &doc))
}

/// Prints a parsed document (`doc` parsed from `src`) in the canonical
/// layout, comments included.
pub fn print_document(src: &str, doc: &Document) -> String {
    let mut b = Builder {
        src,
        comments: comments::scan(src),
        used: Vec::new(),
    };
    b.used = vec![false; b.comments.len()];
    let children: Vec<Child> = doc.fields.iter().map(Child::Field).collect();
    let block = b.block(0, src.len(), &children, false);
    let mut out = String::with_capacity(src.len() + src.len() / 4);
    render_entries(&block.entries, 0, false, &mut out);
    out
}

/// Prints a bound message in the same layout: fields in declaration order
/// (as protobuf's own printer does), fields at their default value left
/// out, repeated fields as one list (`dims: [ 1, 2 ]`, `input [ { … } ]`),
/// maps as one `name { key: … value: … }` entry per key, in key order;
/// enum values by name (by number when the schema does not name them).
pub fn print_message(msg: &DynamicMessage) -> String {
    let mut text = String::new();
    write_message(msg, &mut text);
    match format_source(&text) {
        Ok(s) => s,
        // The text above is built to parse; never reached.
        Err(d) => panic!("printer produced text that does not parse: {}", d.message),
    }
}

/// Appends `bytes` as the body of a double-quoted string literal (without
/// the quotes), escaped as the module documentation describes.
pub fn escape_bytes(bytes: &[u8], out: &mut String) {
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        octal(b, out);
                    }
                }
                c => out.push(c),
            }
        }
        for &b in chunk.invalid() {
            octal(b, out);
        }
    }
}

fn octal(b: u8, out: &mut String) {
    let _ = write!(out, "\\{b:03o}");
}

/// `bytes` as a double-quoted literal.
pub fn quote_bytes(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    escape_bytes(bytes, &mut s);
    s.push('"');
    s
}

/// Whether two parsed documents hold the same fields with the same values
/// in the same structure, independently of the schema: same names in the
/// same order, messages where messages were, lists with the same items,
/// strings with the same bytes, numbers and identifiers with the same
/// literal text. Layout, comments, separators, the colon and the quote
/// style do not count. `fmt` checks this before it writes.
pub fn same_tree(src_a: &str, a: &Document, src_b: &str, b: &Document) -> bool {
    same_fields(src_a, &a.fields, src_b, &b.fields)
}

fn same_fields(sa: &str, a: &[Field], sb: &str, b: &[Field]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            field_name(sa, x) == field_name(sb, y)
                && x.name.extension == y.name.extension
                && same_value(sa, &x.value, sb, &y.value)
        })
}

fn same_value(sa: &str, a: &Value, sb: &str, b: &Value) -> bool {
    match (a, b) {
        (Value::Scalar(x), Value::Scalar(y)) => scalar_key(sa, x) == scalar_key(sb, y),
        (Value::Message(x), Value::Message(y)) => same_fields(sa, &x.fields, sb, &y.fields),
        (Value::List(x), Value::List(y)) => {
            x.items.len() == y.items.len()
                && x.items
                    .iter()
                    .zip(&y.items)
                    .all(|(p, q)| same_value(sa, p, sb, q))
        }
        _ => false,
    }
}

/// What identifies a scalar's value: its kind and its bytes or literal text.
fn scalar_key(src: &str, s: &Scalar) -> (u8, bool, Vec<u8>) {
    match &s.kind {
        ScalarKind::Strings(parts) => {
            let mut bytes = Vec::new();
            for p in parts {
                literal::unescape_into(&src[p.range()], &mut bytes);
            }
            (0, false, bytes)
        }
        ScalarKind::Int { negative, lit, .. } => (1, *negative, src[lit.range()].into()),
        ScalarKind::Float { negative, lit } => (2, *negative, src[lit.range()].into()),
        ScalarKind::Ident { negative, ident } => (3, *negative, src[ident.range()].into()),
    }
}

// ---------------------------------------------------------------------------
// Layout tree

/// A block: the document, a message body or a list body laid out one entry
/// per line.
#[derive(Debug, Default)]
struct Block {
    /// A comment on the line of the opening bracket.
    open_comment: Option<String>,
    entries: Vec<Entry>,
}

#[derive(Debug)]
enum Entry {
    /// A comment on a line of its own.
    Comment {
        text: String,
        blank_before: bool,
    },
    Node(Node),
}

impl Entry {
    fn blank_before(&self) -> bool {
        match self {
            Entry::Comment { blank_before, .. } => *blank_before,
            Entry::Node(n) => n.blank_before,
        }
    }
}

/// A field (with a name) or a list element (without).
#[derive(Debug)]
struct Node {
    name: Option<String>,
    colon: bool,
    value: Val,
    /// A comment at the end of the node's last line.
    trailing: Option<String>,
    blank_before: bool,
}

#[derive(Debug)]
enum Val {
    Scalar(String),
    InlineList(Vec<String>),
    Message(Block),
    List(Block),
}

#[derive(Clone, Copy)]
enum Child<'a> {
    Field(&'a Field),
    Item(&'a Value),
}

impl Child<'_> {
    fn span(&self) -> Span {
        match self {
            Child::Field(f) => f.span,
            Child::Item(v) => v.span(),
        }
    }
}

struct Builder<'s> {
    src: &'s str,
    /// Every comment, in source order.
    comments: Vec<Span>,
    /// Which comments are placed already.
    used: Vec<bool>,
}

fn newlines(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

/// A comment's text without trailing blanks (and without the `\r` of CRLF).
fn clean_comment(text: &str) -> String {
    text.trim_end_matches([' ', '\t', '\r', '\u{0b}', '\u{0c}'])
        .to_string()
}

impl<'s> Builder<'s> {
    /// Indexes of the comments not placed yet that start in `start..end`.
    fn unused_in(&self, start: usize, end: usize) -> Vec<usize> {
        let first = self
            .comments
            .partition_point(|c| (c.start as usize) < start);
        (first..self.comments.len())
            .take_while(|&i| (self.comments[i].start as usize) < end)
            .filter(|&i| !self.used[i])
            .collect()
    }

    fn comment_text(&self, i: usize) -> String {
        clean_comment(&self.src[self.comments[i].range()])
    }

    /// Lays out `children` found between `open_end` (just past the opening
    /// bracket, or the start of the document) and `close_start` (the closing
    /// bracket, or the end of the document).
    fn block(
        &mut self,
        open_end: usize,
        close_start: usize,
        children: &[Child],
        opener: bool,
    ) -> Block {
        let mut block = Block::default();
        // End of the previous child (or of the opening bracket): a comment
        // with no line break after it belongs to that line.
        let mut prev_tok_end = open_end;
        // End of the previous entry (child or comment), for blank lines.
        let mut prev_item_end = open_end;
        let mut have_child = false;
        for child in children {
            let span = child.span();
            self.gap(
                &mut block,
                prev_tok_end,
                span.start as usize,
                have_child,
                opener,
                &mut prev_item_end,
            );
            let blank = newlines(&self.src[prev_item_end..span.start as usize]) >= 2;
            let mut node = self.node(*child);
            // Comments inside the child that no nested block placed (between
            // a name and its value, between adjacent strings): own lines
            // before the child.
            let interior = self.unused_in(span.start as usize, span.end as usize);
            let mut blank_first = blank;
            for i in interior {
                self.used[i] = true;
                block.entries.push(Entry::Comment {
                    text: self.comment_text(i),
                    blank_before: blank_first,
                });
                blank_first = false;
            }
            node.blank_before = blank_first;
            block.entries.push(Entry::Node(node));
            prev_tok_end = span.end as usize;
            prev_item_end = span.end as usize;
            have_child = true;
        }
        self.gap(
            &mut block,
            prev_tok_end,
            close_start,
            have_child,
            opener,
            &mut prev_item_end,
        );
        block
    }

    /// Places the comments between two tokens of a block.
    fn gap(
        &mut self,
        block: &mut Block,
        start: usize,
        end: usize,
        after_child: bool,
        opener: bool,
        prev_item_end: &mut usize,
    ) {
        for (k, i) in self.unused_in(start, end).into_iter().enumerate() {
            self.used[i] = true;
            let c = self.comments[i];
            let text = self.comment_text(i);
            let same_line = !self.src[start..c.start as usize].contains('\n');
            if k == 0 && same_line && (after_child || opener) {
                if after_child {
                    if let Some(Entry::Node(n)) = block
                        .entries
                        .iter_mut()
                        .rev()
                        .find(|e| matches!(e, Entry::Node(_)))
                    {
                        n.trailing = Some(text);
                    }
                } else {
                    block.open_comment = Some(text);
                }
            } else {
                let blank = newlines(&self.src[*prev_item_end..c.start as usize]) >= 2;
                block.entries.push(Entry::Comment {
                    text,
                    blank_before: blank,
                });
            }
            *prev_item_end = c.end as usize;
        }
    }

    fn node(&mut self, child: Child) -> Node {
        match child {
            Child::Field(f) => {
                let colon = match &f.value {
                    Value::Scalar(_) => true,
                    Value::Message(_) => false,
                    Value::List(l) if l.items.is_empty() => f.colon.is_some(),
                    // A list of scalars written without its colon (E0107)
                    // keeps it missing: adding it would change what the
                    // text binds to, and `fmt` only changes the layout.
                    Value::List(l) => {
                        f.colon.is_some() && l.items.iter().any(|v| matches!(v, Value::Scalar(_)))
                    }
                };
                Node {
                    name: Some(field_name(self.src, f)),
                    colon,
                    value: self.value(&f.value),
                    trailing: None,
                    blank_before: false,
                }
            }
            Child::Item(v) => Node {
                name: None,
                colon: false,
                value: self.value(v),
                trailing: None,
                blank_before: false,
            },
        }
    }

    fn value(&mut self, v: &Value) -> Val {
        match v {
            Value::Scalar(s) => Val::Scalar(scalar_text(self.src, s)),
            Value::Message(m) => {
                let children: Vec<Child> = m.fields.iter().map(Child::Field).collect();
                Val::Message(self.block(
                    m.span.start as usize + 1,
                    m.span.end as usize - 1,
                    &children,
                    true,
                ))
            }
            Value::List(l) => self.list(l),
        }
    }

    fn list(&mut self, l: &List) -> Val {
        let (start, end) = (l.span.start as usize, l.span.end as usize);
        let scalars_only = l.items.iter().all(|v| matches!(v, Value::Scalar(_)));
        if scalars_only && self.unused_in(start, end).is_empty() {
            return Val::InlineList(
                l.items
                    .iter()
                    .map(|v| match v {
                        Value::Scalar(s) => scalar_text(self.src, s),
                        _ => unreachable!("checked above"),
                    })
                    .collect(),
            );
        }
        let children: Vec<Child> = l.items.iter().map(Child::Item).collect();
        Val::List(self.block(start + 1, end - 1, &children, true))
    }
}

/// A field's name as printed: the identifier, or `[a.b]` with no blanks or
/// comments inside the brackets.
fn field_name(src: &str, f: &Field) -> String {
    let text = &src[f.name.span.range()];
    if !f.name.extension {
        return text.to_string();
    }
    let inner = text.trim_start_matches('[').trim_end_matches(']');
    let path: String = inner
        .split('\n')
        .map(|line| line.split('#').next().unwrap_or(""))
        .collect::<String>()
        .split(|c: char| c.is_whitespace())
        .collect();
    format!("[{path}]")
}

fn scalar_text(src: &str, s: &Scalar) -> String {
    let sign = |negative: bool| if negative { "-" } else { "" };
    match &s.kind {
        ScalarKind::Strings(parts) => {
            if parts
                .iter()
                .any(|p| has_unrepresentable_escape(&src[p.range()]))
            {
                // A `\u` escape naming no character (a surrogate half): the
                // decoding would not be byte-exact, so keep the literals.
                return parts
                    .iter()
                    .map(|p| &src[p.range()])
                    .collect::<Vec<_>>()
                    .join(" ");
            }
            let mut bytes = Vec::new();
            for p in parts {
                literal::unescape_into(&src[p.range()], &mut bytes);
            }
            quote_bytes(&bytes)
        }
        ScalarKind::Int { negative, lit, .. } | ScalarKind::Float { negative, lit } => {
            format!("{}{}", sign(*negative), &src[lit.range()])
        }
        ScalarKind::Ident { negative, ident } => {
            format!("{}{}", sign(*negative), &src[ident.range()])
        }
    }
}

/// Whether a string literal holds a `\u`/`\U` escape that is not a Unicode
/// scalar value.
fn has_unrepresentable_escape(lit: &str) -> bool {
    let b = lit.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let n = match b[i + 1] {
                b'u' => 4,
                b'U' => 8,
                _ => {
                    i += 2;
                    continue;
                }
            };
            let hex = lit.get(i + 2..i + 2 + n).unwrap_or("");
            let ok = u32::from_str_radix(hex, 16)
                .ok()
                .and_then(char::from_u32)
                .is_some();
            if !ok {
                return true;
            }
            i += 2 + n;
        } else {
            i += 1;
        }
    }
    false
}

// ---------------------------------------------------------------------------
// Rendering

fn indent(depth: usize, out: &mut String) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn render_entries(entries: &[Entry], depth: usize, in_list: bool, out: &mut String) {
    let last_node = entries.iter().rposition(|e| matches!(e, Entry::Node(_)));
    for (i, e) in entries.iter().enumerate() {
        if i > 0 && e.blank_before() {
            out.push('\n');
        }
        match e {
            Entry::Comment { text, .. } => {
                indent(depth, out);
                out.push_str(text);
                out.push('\n');
            }
            Entry::Node(n) => render_node(n, depth, in_list && Some(i) != last_node, out),
        }
    }
}

fn render_node(n: &Node, depth: usize, comma: bool, out: &mut String) {
    indent(depth, out);
    if let Some(name) = &n.name {
        out.push_str(name);
        out.push_str(if n.colon { ": " } else { " " });
    }
    match &n.value {
        Val::Scalar(s) => out.push_str(s),
        Val::InlineList(items) if items.is_empty() => out.push_str("[ ]"),
        Val::InlineList(items) => {
            out.push_str("[ ");
            out.push_str(&items.join(", "));
            out.push_str(" ]");
        }
        Val::Message(b) => render_block(b, "{", "}", depth, false, out),
        Val::List(b) => render_block(b, "[", "]", depth, true, out),
    }
    if comma {
        out.push(',');
    }
    if let Some(t) = &n.trailing {
        out.push(' ');
        out.push_str(t);
    }
    out.push('\n');
}

fn render_block(b: &Block, open: &str, close: &str, depth: usize, list: bool, out: &mut String) {
    out.push_str(open);
    if b.entries.is_empty() && b.open_comment.is_none() {
        out.push(' ');
        out.push_str(close);
        return;
    }
    if let Some(c) = &b.open_comment {
        out.push(' ');
        out.push_str(c);
    }
    out.push('\n');
    render_entries(&b.entries, depth + 1, list, out);
    indent(depth, out);
    out.push_str(close);
}

// ---------------------------------------------------------------------------
// Messages to text

fn write_message(msg: &DynamicMessage, out: &mut String) {
    let desc = msg.descriptor();
    // Declaration order of the .proto (name, platform, backend, ...,
    // max_batch_size, input, output, ...), as Triton's JSON and its docs
    // lay configs out; protobuf's own printer would use field numbers,
    // which puts `backend` (17) after the schedulers.
    let declared = desc
        .descriptor_proto()
        .field
        .iter()
        .filter_map(|f| desc.get_field_by_name(f.name()));
    for fd in declared.filter(|f| msg.has_field(f)) {
        let value = msg.get_field(&fd);
        let kind = fd.kind();
        match value.as_ref() {
            PValue::List(items) => {
                let is_msg = matches!(kind, Kind::Message(_));
                out.push_str(fd.name());
                out.push_str(if is_msg { " [" } else { ": [" });
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push(' ');
                    write_value(v, &kind, out);
                }
                out.push_str(" ]\n");
            }
            PValue::Map(map) => {
                let Kind::Message(entry) = &kind else {
                    continue;
                };
                let key_kind = entry.map_entry_key_field().kind();
                let value_kind = entry.map_entry_value_field().kind();
                let mut keys: Vec<&MapKey> = map.keys().collect();
                keys.sort();
                for k in keys {
                    out.push_str(fd.name());
                    out.push_str(" { key: ");
                    write_value(&map_key_value(k), &key_kind, out);
                    let v = &map[k];
                    if matches!(value_kind, Kind::Message(_)) {
                        out.push_str(" value ");
                    } else {
                        out.push_str(" value: ");
                    }
                    write_value(v, &value_kind, out);
                    out.push_str(" }\n");
                }
            }
            v => {
                out.push_str(fd.name());
                out.push_str(if matches!(kind, Kind::Message(_)) {
                    " "
                } else {
                    ": "
                });
                write_value(v, &kind, out);
                out.push('\n');
            }
        }
    }
}

fn map_key_value(k: &MapKey) -> PValue {
    match k {
        MapKey::Bool(x) => PValue::Bool(*x),
        MapKey::I32(x) => PValue::I32(*x),
        MapKey::I64(x) => PValue::I64(*x),
        MapKey::U32(x) => PValue::U32(*x),
        MapKey::U64(x) => PValue::U64(*x),
        MapKey::String(s) => PValue::String(s.clone()),
    }
}

fn write_value(v: &PValue, kind: &Kind, out: &mut String) {
    match v {
        PValue::Bool(x) => out.push_str(if *x { "true" } else { "false" }),
        PValue::I32(x) => {
            let _ = write!(out, "{x}");
        }
        PValue::I64(x) => {
            let _ = write!(out, "{x}");
        }
        PValue::U32(x) => {
            let _ = write!(out, "{x}");
        }
        PValue::U64(x) => {
            let _ = write!(out, "{x}");
        }
        PValue::F32(x) => float_text(*x as f64, format!("{x:?}"), out),
        PValue::F64(x) => float_text(*x, format!("{x:?}"), out),
        PValue::String(s) => out.push_str(&quote_bytes(s.as_bytes())),
        PValue::Bytes(b) => out.push_str(&quote_bytes(b)),
        PValue::EnumNumber(n) => match kind {
            Kind::Enum(e) => match e.get_value(*n) {
                Some(ev) => out.push_str(ev.name()),
                None => {
                    let _ = write!(out, "{n}");
                }
            },
            _ => {
                let _ = write!(out, "{n}");
            }
        },
        PValue::Message(m) => {
            out.push_str("{\n");
            write_message(m, out);
            out.push('}');
        }
        // Nested lists and maps do not occur in protobuf.
        PValue::List(_) | PValue::Map(_) => {}
    }
}

/// A float as a text-format literal: shortest round-trip digits (`0.5`,
/// `1e-7`), `inf`, `-inf`, `nan`.
fn float_text(x: f64, debug: String, out: &mut String) {
    if x.is_nan() {
        out.push_str("nan");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "inf" } else { "-inf" });
    } else {
        out.push_str(&debug);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(src: &str) -> String {
        let out = format_source(src).unwrap_or_else(|e| panic!("{src:?}: {}", e.message));
        let again = format_source(&out).unwrap_or_else(|e| panic!("{out:?}: {}", e.message));
        assert_eq!(again, out, "not idempotent for {src:?}");
        out
    }

    #[test]
    fn scalars_messages_and_lists() {
        assert_eq!(
            fmt("name:'m' max_batch_size :8;dims:[1,2] a<b:1>"),
            "name: \"m\"\nmax_batch_size: 8\ndims: [ 1, 2 ]\na {\n  b: 1\n}\n"
        );
        assert_eq!(fmt("a {} b: [] c []"), "a { }\nb: [ ]\nc [ ]\n");
        assert_eq!(
            fmt("input: [{name:\"x\"},{}]"),
            "input [\n  {\n    name: \"x\"\n  },\n  { }\n]\n"
        );
    }

    #[test]
    fn literals_keep_their_text() {
        assert_eq!(
            fmt("a: 0x10 b: True c: 1e3 d: - 5 e: -inf f: 010 g: 2f"),
            "a: 0x10\nb: True\nc: 1e3\nd: -5\ne: -inf\nf: 010\ng: 2f\n"
        );
    }

    #[test]
    fn strings_are_joined_and_escaped() {
        assert_eq!(
            fmt(r#"s: 'a"b' "c\x41\101" 'd\'' "\001\t\u00e9\\""#),
            "s: \"a\\\"bcAAd'\\001\\t\u{e9}\\\\\"\n"
        );
        let mut s = String::new();
        escape_bytes(b"\xff\x7f\n1", &mut s);
        assert_eq!(s, "\\377\\177\\n1");
    }

    #[test]
    fn comments_stay_in_place() {
        let src = "# license\n\n# about a\na: 1 # one\nm { # open\n  # inside\n  b: 2\n  # before close\n}\n# end\n";
        assert_eq!(fmt(src), src);
        assert_eq!(fmt("l: [ 1, # one\n 2 ]"), "l: [\n  1, # one\n  2\n]\n");
        assert_eq!(fmt("a # c\n { }"), "# c\na { }\n");
        assert_eq!(fmt("e { # only\n}"), "e { # only\n}\n");
    }

    #[test]
    fn blank_lines_and_line_endings() {
        assert_eq!(
            fmt("\r\n\r\na: 1\r\n\r\n\r\n\r\nb: 2 # x  \r\nm {\r\n\r\n c: 3\r\n\r\n}\r\n\r\n"),
            "a: 1\n\nb: 2 # x\nm {\n  c: 3\n}\n"
        );
        assert_eq!(fmt(""), "");
        assert_eq!(fmt("# only"), "# only\n");
    }

    #[test]
    fn same_tree_sees_changes() {
        let a = "a: 'x' b { c: 1 }";
        let b = "a: \"x\"\nb < c: 1 >";
        let c = "a: \"y\"\nb { c: 1 }";
        let pa = crate::pbtxt::parse(a).unwrap();
        let pb = crate::pbtxt::parse(b).unwrap();
        let pc = crate::pbtxt::parse(c).unwrap();
        assert!(same_tree(a, &pa, b, &pb));
        assert!(!same_tree(a, &pa, c, &pc));
    }
}
