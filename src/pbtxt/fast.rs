//! The fast path: a byte-level recursive-descent parser for exactly the
//! language of `grammar/pbtxt.pest`, building the same tree (same spans,
//! same kinds) as the pest path in `super`.
//!
//! The grammar stays the normative definition. This parser only answers
//! "here is the tree" or "no"; on "no" the caller runs the pest parser,
//! which finds the error and words the diagnostic. The differential tests
//! (below, and `tests/cli/differential.rs`) hold the two to the same
//! verdict and the same tree.
//!
//! Why a PEG grammar can be parsed here without backtracking: at every
//! choice point of the grammar the alternatives start with different bytes,
//! and wherever a repetition stops early the rule that comes next cannot
//! start with the byte that stopped it. So one byte of look-ahead picks the
//! only alternative that can match, and any failure is a failure of the
//! whole document. The places where this needs care are commented.
//!
//! Nesting: brackets are counted the way `super::too_deep` counts them
//! (messages, lists and the `[` of an extension name), so a document this
//! parser accepts never trips that check; past [`MAX_DEPTH`] it refuses,
//! which bounds its recursion.

use super::ast::*;
use super::MAX_DEPTH;
use crate::text::Span;

/// The document is not in the language, or nests too deeply. The pest path
/// says where and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refused;

type Res<T> = Result<T, Refused>;

/// Parses a whole document, or refuses it.
#[cfg(test)]
pub(crate) fn parse(src: &str) -> Res<Document> {
    parse_or_resume(src).map_err(|_| Refused)
}

/// Parses a whole document, or refuses it and says where the complete
/// top-level field before the one it refused in (or before the place it
/// refused) starts, 0 when there is none: everything before that offset is
/// a valid document, and the text from there on fails as the whole
/// document does, at a place past the offset (pest words an error at the
/// very start of its text differently).
pub(crate) fn parse_or_resume(src: &str) -> Result<Document, usize> {
    let mut p = Parser {
        b: src.as_bytes(),
        pos: 0,
        depth: 0,
        top_field: 0,
        before_top_field: 0,
    };
    // document = { SOI ~ fields ~ EOI }: `fields` skips blanks at both ends.
    let Ok(fields) = p.fields() else {
        return Err(p.before_top_field);
    };
    if p.pos != p.b.len() {
        return Err(p.before_top_field);
    }
    Ok(Document {
        fields,
        span: Span::new(0, src.len()),
    })
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    /// Brackets open around `pos` (messages and lists).
    depth: usize,
    /// Where the last top-level field begun starts.
    top_field: usize,
    /// Where the top-level field before that one starts (0 for none).
    before_top_field: usize,
}

#[inline]
fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

#[inline]
fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

#[inline]
fn is_digit(c: u8) -> bool {
    c.is_ascii_digit()
}

#[inline]
fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

#[inline]
fn is_oct(c: u8) -> bool {
    matches!(c, b'0'..=b'7')
}

impl Parser<'_> {
    /// The byte at `i`, or 0 past the end. Only used where a NUL byte and
    /// the end of the text must be treated alike (neither belongs to any
    /// token class tested).
    #[inline]
    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    #[inline]
    fn peek(&self) -> u8 {
        self.at(self.pos)
    }

    /// Blanks and `#` comments: pest's implicit `(WHITESPACE | COMMENT)*`.
    #[inline]
    fn skip(&mut self) {
        loop {
            match self.peek() {
                b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => self.pos += 1,
                b'#' => {
                    // To the end of the line (the '\n' is whitespace) or of
                    // the text; NUL and any other byte belong to the comment.
                    let rest = &self.b[self.pos + 1..];
                    self.pos += 1 + rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
                }
                _ => return,
            }
        }
    }

    /// One more bracket at `self.pos`; refuses past [`MAX_DEPTH`].
    #[inline]
    fn enter(&mut self) -> Res<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Refused);
        }
        self.depth += 1;
        Ok(())
    }

    #[inline]
    fn ident_end(&self, mut i: usize) -> usize {
        while is_ident_char(self.at(i)) {
            i += 1;
        }
        i
    }

    /// `(field ~ separator?)*`, with the blanks around it. Stops in front
    /// of anything that cannot start a field name; a field that starts and
    /// then fails fails the document (what follows `fields` in the grammar,
    /// a closing bracket or the end, cannot start with an identifier
    /// character or '[').
    fn fields(&mut self) -> Res<Vec<Field>> {
        let mut out = Vec::new();
        loop {
            self.skip();
            let c = self.peek();
            if !(is_ident_start(c) || c == b'[') {
                return Ok(out);
            }
            if self.depth == 0 {
                self.before_top_field = self.top_field;
                self.top_field = self.pos;
            }
            out.push(self.field()?);
            self.skip();
            if matches!(self.peek(), b',' | b';') {
                self.pos += 1;
            }
        }
    }

    /// `field_name ~ (colon ~ (message | list | scalar) | message | list)`.
    fn field(&mut self) -> Res<Field> {
        let start = self.pos;
        let name = if self.peek() == b'[' {
            self.extension_name()?
        } else {
            let end = self.ident_end(start);
            self.pos = end;
            Name {
                span: Span::new(start, end),
                extension: false,
            }
        };
        self.skip();
        let (colon, value) = match self.peek() {
            b':' => {
                let colon = Span::new(self.pos, self.pos + 1);
                self.pos += 1;
                self.skip();
                let value = match self.peek() {
                    b'{' | b'<' => Value::Message(self.message()?),
                    b'[' => Value::List(self.list()?),
                    _ => Value::Scalar(self.scalar()?),
                };
                (Some(colon), value)
            }
            b'{' | b'<' => (None, Value::Message(self.message()?)),
            b'[' => (None, Value::List(self.list()?)),
            _ => return Err(Refused),
        };
        let span = Span {
            start: start as u32,
            end: value.span().end,
        };
        Ok(Field {
            name,
            colon,
            value,
            span,
        })
    }

    /// `"[" ~ type_path ~ "]"` (blanks allowed inside the brackets, none
    /// inside the path).
    fn extension_name(&mut self) -> Res<Name> {
        let open = self.pos;
        // Counted like any bracket, but closed again right away.
        self.enter()?;
        self.depth -= 1;
        self.pos += 1;
        self.skip();
        if !is_ident_start(self.peek()) {
            return Err(Refused);
        }
        // type_path = ident ("." ident)* ("/" ident ("." ident)*)?. A '.' or
        // '/' not followed by an identifier ends the path, and then the ']'
        // the rule needs is missing.
        let mut i = self.ident_end(self.pos);
        while self.at(i) == b'.' && is_ident_start(self.at(i + 1)) {
            i = self.ident_end(i + 1);
        }
        if self.at(i) == b'/' && is_ident_start(self.at(i + 1)) {
            i = self.ident_end(i + 1);
            while self.at(i) == b'.' && is_ident_start(self.at(i + 1)) {
                i = self.ident_end(i + 1);
            }
        }
        self.pos = i;
        self.skip();
        if self.peek() != b']' {
            return Err(Refused);
        }
        self.pos += 1;
        Ok(Name {
            span: Span::new(open, self.pos),
            extension: true,
        })
    }

    /// `"{" ~ fields ~ "}" | "<" ~ fields ~ ">"`, at the opening bracket.
    fn message(&mut self) -> Res<Message> {
        let open = self.pos;
        let close = if self.b[open] == b'{' { b'}' } else { b'>' };
        self.enter()?;
        self.pos += 1;
        let fields = self.fields()?;
        if self.peek() != close {
            return Err(Refused);
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(Message {
            fields,
            span: Span::new(open, self.pos),
        })
    }

    /// `"[" ~ (list_item ~ ("," ~ list_item)*)? ~ "]"`, at the '['.
    fn list(&mut self) -> Res<List> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1;
        self.skip();
        let mut items = Vec::new();
        if self.peek() != b']' {
            // An item that fails cannot be a ']' either, nor can one after
            // a ',': every failure here fails the document.
            loop {
                items.push(match self.peek() {
                    b'{' | b'<' => Value::Message(self.message()?),
                    _ => Value::Scalar(self.scalar()?),
                });
                self.skip();
                match self.peek() {
                    b',' => {
                        self.pos += 1;
                        self.skip();
                    }
                    b']' => break,
                    _ => return Err(Refused),
                }
            }
        }
        self.pos += 1;
        self.depth -= 1;
        Ok(List {
            items,
            span: Span::new(open, self.pos),
        })
    }

    /// `strings | number | signed_ident | ident`: the first byte decides
    /// (after a '-' and blanks, a digit or '.' means a number, a letter an
    /// identifier).
    fn scalar(&mut self) -> Res<Scalar> {
        let start = self.pos;
        match self.peek() {
            b'"' | b'\'' => self.strings(),
            b'-' => {
                self.pos += 1;
                self.skip();
                let c = self.peek();
                if is_digit(c) || c == b'.' {
                    self.number(start, true)
                } else if is_ident_start(c) {
                    let at = self.pos;
                    let end = self.ident_end(at);
                    self.pos = end;
                    Ok(Scalar {
                        kind: ScalarKind::Ident {
                            negative: true,
                            ident: Span::new(at, end),
                        },
                        span: Span::new(start, end),
                    })
                } else {
                    Err(Refused)
                }
            }
            b'0'..=b'9' | b'.' => self.number(start, false),
            c if is_ident_start(c) => {
                let end = self.ident_end(start);
                self.pos = end;
                let span = Span::new(start, end);
                Ok(Scalar {
                    kind: ScalarKind::Ident {
                        negative: false,
                        ident: span,
                    },
                    span,
                })
            }
            _ => Err(Refused),
        }
    }

    /// `string ~ string*`: adjacent literals, blanks and comments between.
    /// A second literal that starts but fails fails the document (nothing
    /// after a scalar may start with a quote).
    fn strings(&mut self) -> Res<Scalar> {
        let mut parts = Vec::with_capacity(1);
        loop {
            parts.push(self.string()?);
            self.skip();
            if !matches!(self.peek(), b'"' | b'\'') {
                break;
            }
        }
        let span = Span {
            start: parts[0].start,
            end: parts[parts.len() - 1].end,
        };
        Ok(Scalar {
            kind: ScalarKind::Strings(parts),
            span,
        })
    }

    /// One literal, at its opening quote: no raw newline or NUL, only the
    /// grammar's escapes.
    fn string(&mut self) -> Res<Span> {
        let start = self.pos;
        let quote = self.b[start];
        let mut i = start + 1;
        loop {
            let Some(&c) = self.b.get(i) else {
                return Err(Refused);
            };
            if c == quote {
                i += 1;
                break;
            }
            match c {
                b'\\' => i = self.escape(i)?,
                b'\n' | 0 => return Err(Refused),
                _ => i += 1,
            }
        }
        self.pos = i;
        Ok(Span::new(start, i))
    }

    /// The escape at `i` (a backslash); returns where it ends. How many
    /// digits an escape takes does not change the verdict (the digits it
    /// leaves are ordinary characters of the string), only that it has at
    /// least as many as it needs.
    #[inline]
    fn escape(&self, i: usize) -> Res<usize> {
        let hex_run = |from: usize, n: usize| (from..from + n).all(|k| is_hex(self.at(k)));
        match self.at(i + 1) {
            b'x' if is_hex(self.at(i + 2)) => Ok(i + 3),
            b'0'..=b'7' => Ok(i + 2),
            b'u' if hex_run(i + 2, 4) => Ok(i + 6),
            b'U' if hex_run(i + 2, 8) => Ok(i + 10),
            b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'\\' | b'?' | b'\'' | b'"' => {
                Ok(i + 2)
            }
            _ => Err(Refused),
        }
    }

    /// `minus? ~ num_lit`, with `self.pos` at the literal and `start` at the
    /// number (the '-', if any).
    fn number(&mut self, start: usize, negative: bool) -> Res<Scalar> {
        let at = self.pos;
        let (end, kind) = self.num_lit(at)?;
        self.pos = end;
        let lit = Span::new(at, end);
        let kind = match kind {
            Lit::Float => ScalarKind::Float { negative, lit },
            Lit::Int(radix) => ScalarKind::Int {
                negative,
                radix,
                lit,
            },
        };
        Ok(Scalar {
            kind,
            span: Span::new(start, end),
        })
    }

    /// `int_part`: "0" not followed by a digit, or a non-zero digit and
    /// digits. Returns its end.
    #[inline]
    fn int_part(&self, i: usize) -> Option<usize> {
        match self.at(i) {
            b'0' => (!is_digit(self.at(i + 1))).then_some(i + 1),
            b'1'..=b'9' => {
                let mut j = i + 1;
                while is_digit(self.at(j)) {
                    j += 1;
                }
                Some(j)
            }
            _ => None,
        }
    }

    /// `exponent` at `i`: returns its end.
    #[inline]
    fn exponent(&self, i: usize) -> Option<usize> {
        if !matches!(self.at(i), b'e' | b'E') {
            return None;
        }
        let mut j = i + 1;
        if matches!(self.at(j), b'+' | b'-') {
            j += 1;
        }
        if !is_digit(self.at(j)) {
            return None;
        }
        while is_digit(self.at(j)) {
            j += 1;
        }
        Some(j)
    }

    /// `float_lit` at `i`, alternatives in the grammar's order: returns its
    /// end.
    fn float_lit(&self, i: usize) -> Option<usize> {
        let f_opt = |j: usize| j + usize::from(matches!(self.at(j), b'f' | b'F'));
        let int = self.int_part(i);
        // (int_part "." digit* | "." digit+) exponent? ("f" | "F")?
        let mantissa = match int {
            Some(j) if self.at(j) == b'.' => Some(j + 1),
            _ if self.at(i) == b'.' && is_digit(self.at(i + 1)) => Some(i + 1),
            _ => None,
        };
        if let Some(mut j) = mantissa {
            while is_digit(self.at(j)) {
                j += 1;
            }
            let j = self.exponent(j).unwrap_or(j);
            return Some(f_opt(j));
        }
        let int = int?;
        // int_part exponent ("f" | "F")?
        if let Some(j) = self.exponent(int) {
            return Some(f_opt(j));
        }
        // int_part ("f" | "F")
        matches!(self.at(int), b'f' | b'F').then_some(int + 1)
    }

    /// `num_lit`: the first alternative that matches (hex, float, octal,
    /// decimal) must then be followed by something that cannot continue a
    /// number; PEG does not go back to try the next alternative.
    fn num_lit(&self, i: usize) -> Res<(usize, Lit)> {
        let (end, kind) = if self.at(i) == b'0'
            && matches!(self.at(i + 1), b'x' | b'X')
            && is_hex(self.at(i + 2))
        {
            let mut j = i + 3;
            while is_hex(self.at(j)) {
                j += 1;
            }
            (j, Lit::Int(IntRadix::Hex))
        } else if let Some(j) = self.float_lit(i) {
            (j, Lit::Float)
        } else if self.at(i) == b'0' && is_oct(self.at(i + 1)) {
            let mut j = i + 2;
            while is_oct(self.at(j)) {
                j += 1;
            }
            (j, Lit::Int(IntRadix::Octal))
        } else if let Some(j) = self.int_part(i) {
            (j, Lit::Int(IntRadix::Decimal))
        } else {
            return Err(Refused);
        };
        let next = self.at(end);
        if is_ident_char(next) || next == b'.' {
            return Err(Refused);
        }
        Ok((end, kind))
    }
}

#[derive(Clone, Copy)]
enum Lit {
    Float,
    Int(IntRadix),
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Both parsers on `src`: same verdict, same tree.
    fn agree(src: &str) -> Result<(), String> {
        let fast = parse(src);
        let pest = super::super::parse_with_pest(src);
        match (fast, pest) {
            (Ok(a), Ok(b)) if a == b => Ok(()),
            (Ok(a), Ok(b)) => Err(format!("{src:?}: trees differ\nfast: {a:#?}\npest: {b:#?}")),
            (Err(_), Err(_)) => Ok(()),
            (Ok(_), Err(e)) => Err(format!(
                "{src:?}: fast parser accepts, pest refuses: {} {}",
                e.code(),
                e.message
            )),
            (Err(_), Ok(_)) => Err(format!("{src:?}: fast parser refuses, pest accepts")),
        }
    }

    fn all_agree(cases: &[&str]) {
        let failures: Vec<String> = cases.iter().filter_map(|s| agree(s).err()).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    fn accepts(src: &str) -> bool {
        parse(src).is_ok()
    }

    #[test]
    fn lexical_details_agree_with_the_grammar() {
        all_agree(&[
            "",
            " \t\r\n\u{0b}\u{0c}",
            "#",
            "# c",
            "a: 1 # c",
            "a: 1#c\nb: 2",
            "a:1",
            "a:-1",
            "a: - 5",
            "a: -  # c\n 5",
            "a: -# c\n5",
            "a: -\n inf",
            "a: - - 5",
            "a: -",
            "a: -\"x\"",
            "a: -[1]",
            "a: 0",
            "a: 00",
            "a: 08",
            "a: 07",
            "a: 0777",
            "a: 0778",
            "a: 078",
            "a: 07.5",
            "a: 07e5",
            "a: 09.5",
            "a: 00.5",
            "a: 0.5",
            "a: 0.",
            "a: 0e5",
            "a: 0f",
            "a: 0F",
            "a: 0x",
            "a: 0X",
            "a: 0x1F",
            "a: 0XaBc",
            "a: 0x1.5",
            "a: 0x1g",
            "a: 0xg",
            "a: 1",
            "a: 123",
            "a: 1.",
            "a: 1.5",
            "a: 1.5.",
            "a: 1..5",
            "a: .5",
            "a: .",
            "a: .e5",
            "a: .5e5",
            "a: .5f",
            "a: 5.e3",
            "a: 1e5",
            "a: 1E+5",
            "a: 1e-5",
            "a: 1e",
            "a: 1e+",
            "a: 1.5e",
            "a: 1.5e5f",
            "a: 1.5e5ff",
            "a: 1f",
            "a: 1F",
            "a: 1ff",
            "a: 1fx",
            "a: 1_000",
            "a: 5abc",
            "a: 5é",
            "a: 5\"x\"",
            "a: 5,b: 6",
            "a: 5;b: 6",
            "a: 5,,b: 6",
            "a: 5;,b: 6",
            "a: 5 , b: 6 ,",
            ",",
            ";a: 1",
            "a: -0x5",
            "a: -.5",
            "a: -inf",
            "a: -nan",
            "a: -_x",
            "a: inf",
            "a: true",
            "a: True",
            "a: x.y",
            "a: x-y",
            "a: \"s\"",
            "a: 's'",
            "a: \"s\" 't' \"u\"",
            "a: \"s\" # c\n 't'",
            "a: \"s\"'t'",
            "a: \"s\" \"\\q\"",
            "a: \"s\" \"unterminated",
            "a: \"'\" '\"'",
            "a: \"",
            "a: \"abc",
            "a: \"a\nb\"",
            "a: \"a\rb\"",
            "a: \"a\tb\"",
            "a: \"a\u{0}b\"",
            "a: \"\\x\"",
            "a: \"\\x4\"",
            "a: \"\\x41\"",
            "a: \"\\x414\"",
            "a: \"\\X41\"",
            "a: \"\\xg\"",
            "a: \"\\0\"",
            "a: \"\\7\"",
            "a: \"\\8\"",
            "a: \"\\101\"",
            "a: \"\\1010\"",
            "a: \"\\u\"",
            "a: \"\\u12\"",
            "a: \"\\u1234\"",
            "a: \"\\u12345\"",
            "a: \"\\u123g\"",
            "a: \"\\U0001F600\"",
            "a: \"\\U0001F60\"",
            "a: \"\\a\\b\\f\\n\\r\\t\\v\\\\\\?\\'\\\"\"",
            "a: '\\''",
            "a: \"\\",
            "a: \"\\\"",
            "a: \"é\"",
            "a: \"\\é\"",
            "a { }",
            "a {}",
            "a: {}",
            "a < >",
            "a: <>",
            "a { >",
            "a < }",
            "a {",
            "a }",
            "a { b: 1 c { d: 2 } }",
            "a { b: 1, } c",
            "a { b: 1; }, c {}",
            "a { } ; b < >",
            "a [ ]",
            "a: []",
            "a: [1]",
            "a: [1,]",
            "a: [,1]",
            "a: [1 2]",
            "a: [1,,2]",
            "a: [1; b: 2",
            "a: [1} b: 2",
            "a: [1> b: 2",
            "a: [1, 2; 3]",
            "a: [[1]]",
            "a: [ { b: 1 }, < c: 2 >, 3, 'x' ]",
            "a [ { }, { } ]",
            "a: [1, 2",
            "a: [1; 2]",
            "a: [-1, - 2, -inf, .5, 0x1]",
            "a: [\"x\" \"y\", 'z']",
            "[ext]: 1",
            "[ext.name]: 1",
            "[ ext.name ]: 1",
            "[ # c\n ext.name # d\n ]: 1",
            "[a.b/c.D] { }",
            "[a.b/c.D.e] < >",
            "[a/b]: 1",
            "[a/b/c]: 1",
            "[a.]: 1",
            "[a. b]: 1",
            "[a .b]: 1",
            "[a/]: 1",
            "[.a]: 1",
            "[]: 1",
            "[1]: 1",
            "[a]",
            "[a] 1",
            "[a] [1]",
            "a",
            "a:",
            "a 1",
            "a \"x\"",
            "a: b c: d",
            "a: truec: d",
            "a: b {}",
            "a [b] {}",
            "a: 1 [ext]: 2",
            "a: 1 b",
            "1: 2",
            "_a: 1",
            "a1_b: 1",
            "\u{feff}a: 1",
            "// x\na: 1",
            "a: +5",
            "a: 1\u{0}",
            "a: 1 \u{0}",
            "a: 1 # \u{0} in a comment\n",
            "a: \"x\" \u{1a}",
            "a: ${X}",
            "a {{ }}",
        ]);
    }

    #[test]
    fn spans_and_kinds_match_the_pest_tree() {
        // Whole trees compared: field spans to the end of the value, number
        // spans from the '-', string parts, name spans with brackets.
        all_agree(&[
            "max_batch_size: 64#MAX\ninput [ { dims: [ -1, 0x10 ] } ]",
            "a: - 5 b: -  inf c: \"x\"  'y'  d: 1.5e3f e: 017 f: 0X1a",
            "[type.googleapis.com/a.B] { x: 1 } [ e.f ] : [ 1 ]",
            "a: [ ] b: < > c { } d: 'x' # trailing\n",
        ]);
    }

    #[test]
    fn nesting_limit_counts_like_the_pre_scan() {
        let open = |n: usize, o: &str, c: &str| format!("{}{}", o.repeat(n), c.repeat(n));
        // MAX_DEPTH levels are fine, one more is not.
        let ok = open(MAX_DEPTH, "a {", "}");
        assert!(accepts(&ok));
        assert!(!accepts(&open(MAX_DEPTH + 1, "a {", "}")));
        // A list bracket counts, and the '[' of an extension name too.
        let inner = |s: &str| {
            format!(
                "{}{s}{}",
                "a {".repeat(MAX_DEPTH - 1),
                "}".repeat(MAX_DEPTH - 1)
            )
        };
        assert!(accepts(&inner("b: [1]")));
        assert!(!accepts(&inner("b: [{}]")));
        assert!(accepts(&inner("[e]: 1")));
        assert!(!accepts(&inner("c { [e]: 1 }")));
        for src in [
            ok,
            open(MAX_DEPTH + 1, "a {", "}"),
            inner("b: [{}]"),
            inner("c { [e]: 1 }"),
            inner("c { d: 1 }"),
        ] {
            agree(&src).unwrap();
        }
        // Deep input is refused by the fast parser without deep recursion.
        let deep = "a {".repeat(100_000);
        assert!(!accepts(&deep));
    }

    #[test]
    fn hand_written_cases_agree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/pbtxt");
        let mut n = 0;
        for dir in ["valid", "invalid"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("testdata/pbtxt") {
                let path = entry.expect("entry").path();
                if path.extension().is_none_or(|x| x != "pbtxt") {
                    continue;
                }
                let (src, _) = crate::text::decode_source(std::fs::read(&path).expect("case"));
                agree(&src).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                if dir == "valid" {
                    assert!(accepts(&src), "{} should parse", path.display());
                }
                n += 1;
            }
        }
        assert!(n > 100, "only {n} hand-written cases found");
    }

    /// Tokens of the grammar and pieces of them, glued into token soup.
    fn token() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "a",
            "b_1",
            "_",
            "inf",
            "x.y",
            " ",
            "\n",
            "\t",
            "\r",
            "\u{0b}",
            "#c\n",
            "# c",
            ":",
            ",",
            ";",
            "{",
            "}",
            "<",
            ">",
            "[",
            "]",
            "-",
            "0",
            "1",
            "7",
            "8",
            "09",
            "0x",
            "0X1f",
            "x",
            ".",
            ".5",
            "1.",
            "e",
            "E+",
            "e-3",
            "f",
            "F",
            "\"",
            "'",
            "\"s\"",
            "'t'",
            "\\",
            "\\x4",
            "\\101",
            "\\u00e9",
            "\\U0001F600",
            "\\n",
            "\\q",
            "[e.f]",
            "[a/b.C]",
            "/",
            "+",
            "é",
            "\u{0}",
            "$",
            "*",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn token_soup_agrees(tokens in prop::collection::vec(token(), 0..40)) {
            let src = tokens.concat();
            agree(&src).map_err(TestCaseError::fail)?;
        }

        #[test]
        fn field_soup_agrees(
            fields in prop::collection::vec(
                (prop::sample::select(vec!["a", "[e.x]", "b"]),
                 prop::sample::select(vec![": ", " ", ":", ": -", " -"]),
                 prop::collection::vec(token(), 0..6),
                 prop::sample::select(vec!["", ",", ";", " ", "\n"])),
                0..8)
        ) {
            let src: String = fields
                .iter()
                .map(|(n, c, v, s)| format!("{n}{c}{}{s}", v.concat()))
                .collect();
            agree(&src).map_err(TestCaseError::fail)?;
        }
    }
}
