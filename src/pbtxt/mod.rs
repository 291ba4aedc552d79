//! Protobuf text format: the pest grammar (`grammar/pbtxt.pest`) turned into
//! an owned tree with byte spans, plus syntax errors in the user's words.
//!
//! Two parsers, one language. The grammar is the definition; [`parse`] first
//! runs a hand-written parser of the same language (`fast.rs`, several times
//! quicker) and only when that one refuses the text runs the pest parser,
//! which finds the error and words it. Differential tests hold the two to
//! the same verdict and the same tree.

pub mod ast;
pub mod comments;
mod fast;
pub mod literal;
pub mod printer;

use crate::diagnostics::{rule_in, Category, Diagnostic, Rule as RuleInfo, Severity};
use crate::text::Span;
use ast::*;
use pest::iterators::Pair;
use pest::Parser as _;

/// The syntax rules, raised here (part of the one registry, `crate::lint::registry`).
pub const RULES: &[RuleInfo] = &[
    RuleInfo {
        code: "E0001",
        name: "syntax-error",
        category: Category::Syntax,
        severity: Severity::Error,
        summary: "The text is not valid protobuf text format",
        docs: "Triton reads `config.pbtxt` with protobuf's text-format parser and refuses the model when the text does not parse (`failed to read text proto from <path>`).\n\nCommon causes: `//` comments (only `#` starts a comment), a trailing comma in a list (`dims: [1, 2,]`), a missing comma between list elements, a scalar without `:` (`max_batch_size 8`), a leading `+` on a number, a string that runs past the end of its line, a UTF-8 byte order mark, and unrendered template placeholders (`${x}`, `{{ x }}`).\n\n```\ndims: [ 1, 2, ]   # error: a list cannot end with a comma\n```",
        triton_source: Some("core src/model_config_utils.cc (ReadTextProto), protobuf text_format.cc"),
    },
    RuleInfo {
        code: "E0002",
        name: "nesting-too-deep",
        category: Category::Syntax,
        severity: Severity::Error,
        summary: "Messages or lists are nested deeper than 100 levels",
        docs: "No ModelConfig nests more than a handful of levels, so such a file cannot be a valid configuration. tritonctl refuses it before parsing so that hostile input cannot exhaust the stack.",
        triton_source: None,
    },
];

const E0001: &RuleInfo = rule_in(RULES, "E0001");
const E0002: &RuleInfo = rule_in(RULES, "E0002");

#[derive(pest_derive::Parser)]
#[grammar = "grammar/pbtxt.pest"]
struct PbtxtParser;

/// Deeper nesting than this is refused (both parsers are recursive). No
/// ModelConfig is deeper than 8 levels, so protobuf's parser refuses every
/// such document too, with an unknown-field or wrong-type error.
pub const MAX_DEPTH: usize = 100;

/// Parses a whole document. On a syntax error returns the one diagnostic
/// (the parser, like protobuf's, stops at the first).
pub fn parse(src: &str) -> Result<Document, Box<Diagnostic>> {
    match fast::parse_or_resume(src) {
        Ok(doc) => Ok(doc),
        // The pest parser finds and words the error, from the top-level
        // field before the one the fast parser refused in: pest's memory
        // grows with the text it reads, several times its size, and the
        // fields before that one are valid. Should it accept what the fast parser refused
        // (the differential tests say it never does), its tree of the
        // whole text wins.
        Err(from) => match pest_error_from(src, from) {
            Some(d) => Err(d),
            None => parse_with_pest(src),
        },
    }
}

/// The pest parser's error in `src[from..]`, where `from` starts a
/// complete top-level field before the error, at its place in `src`.
fn pest_error_from(src: &str, from: usize) -> Option<Box<Diagnostic>> {
    if from == 0 {
        return parse_with_pest(src).err();
    }
    if let Some(d) = deep_error(src) {
        return Some(d);
    }
    PbtxtParser::parse(Rule::document, &src[from..])
        .err()
        .map(|e| Box::new(syntax_error(src, from, e)))
}

/// The fast parser alone: the tree, or `None` where [`parse`] would ask the
/// pest parser. For the differential tests.
#[doc(hidden)]
pub fn parse_fast(src: &str) -> Option<Document> {
    fast::parse_or_resume(src).ok()
}

/// The pest parser alone (after the nesting check that protects its
/// recursion): the reference [`parse`] falls back to. For the differential
/// tests.
#[doc(hidden)]
pub fn parse_with_pest(src: &str) -> Result<Document, Box<Diagnostic>> {
    if let Some(d) = deep_error(src) {
        return Err(d);
    }
    let mut pairs =
        PbtxtParser::parse(Rule::document, src).map_err(|e| Box::new(syntax_error(src, 0, e)))?;
    let doc = pairs.next().expect("document");
    let span = Span::new(0, src.len());
    let fields = doc
        .into_inner()
        .filter(|p| p.as_rule() == Rule::field)
        .map(build_field)
        .collect();
    Ok(Document { fields, span })
}

/// The error for nesting past [`MAX_DEPTH`], if `src` has such nesting.
fn deep_error(src: &str) -> Option<Box<Diagnostic>> {
    let at = too_deep(src)?;
    Some(Box::new(
        Diagnostic::new(E0002, format!("nesting is deeper than {MAX_DEPTH} levels"))
            .at(Span::new(at, at + 1))
            .help(
                "no ModelConfig nests this deep; the file is probably damaged or generated wrongly",
            ),
    ))
}

fn span_of(p: &Pair<Rule>) -> Span {
    let s = p.as_span();
    Span::new(s.start(), s.end())
}

fn build_field(p: Pair<Rule>) -> Field {
    let span = span_of(&p);
    let mut inner = p.into_inner();
    let name_pair = inner.next().expect("field name");
    let name = match name_pair.as_rule() {
        Rule::extension_name => Name {
            span: span_of(&name_pair),
            extension: true,
        },
        _ => Name {
            span: span_of(&name_pair),
            extension: false,
        },
    };
    let mut colon = None;
    let mut value = None;
    for part in inner {
        match part.as_rule() {
            Rule::colon => colon = Some(span_of(&part)),
            _ => value = Some(build_value(part)),
        }
    }
    let value = value.expect("field value");
    Field {
        name,
        colon,
        span: Span::new(span.start as usize, value.span().end as usize),
        value,
    }
}

fn build_value(p: Pair<Rule>) -> Value {
    let span = span_of(&p);
    match p.as_rule() {
        Rule::message => Value::Message(Message {
            fields: p
                .into_inner()
                .filter(|f| f.as_rule() == Rule::field)
                .map(build_field)
                .collect(),
            span,
        }),
        Rule::list => Value::List(List {
            items: p.into_inner().map(build_value).collect(),
            span,
        }),
        Rule::strings => {
            // The pair's own span can reach over trailing blanks: cover the
            // literals only.
            let parts: Vec<Span> = p.into_inner().map(|s| span_of(&s)).collect();
            let span = Span::new(parts[0].start as usize, parts[parts.len() - 1].end as usize);
            Value::Scalar(Scalar {
                kind: ScalarKind::Strings(parts),
                span,
            })
        }
        Rule::number => {
            let mut negative = false;
            let mut kind = None;
            let mut span = span;
            for part in p.into_inner() {
                match part.as_rule() {
                    Rule::minus => negative = true,
                    Rule::num_lit => {
                        let lit = span_of(&part);
                        span.end = lit.end;
                        let inner = part.into_inner().next().expect("literal kind");
                        kind = Some(match inner.as_rule() {
                            Rule::float_lit => ScalarKind::Float { negative, lit },
                            Rule::hex_lit => ScalarKind::Int {
                                negative,
                                radix: IntRadix::Hex,
                                lit,
                            },
                            Rule::oct_lit => ScalarKind::Int {
                                negative,
                                radix: IntRadix::Octal,
                                lit,
                            },
                            _ => ScalarKind::Int {
                                negative,
                                radix: IntRadix::Decimal,
                                lit,
                            },
                        });
                    }
                    _ => {}
                }
            }
            Value::Scalar(Scalar {
                kind: kind.expect("number literal"),
                span,
            })
        }
        Rule::signed_ident => {
            let ident = p
                .into_inner()
                .find(|x| x.as_rule() == Rule::ident)
                .map(|x| span_of(&x))
                .expect("identifier");
            Value::Scalar(Scalar {
                kind: ScalarKind::Ident {
                    negative: true,
                    ident,
                },
                span: Span::new(span.start as usize, ident.end as usize),
            })
        }
        Rule::ident => Value::Scalar(Scalar {
            kind: ScalarKind::Ident {
                negative: false,
                ident: span,
            },
            span,
        }),
        r => unreachable!("unexpected rule {r:?} as a value"),
    }
}

/// Offset of the first opening bracket past [`MAX_DEPTH`], skipping strings
/// and comments. Only the slow path runs this scan: the fast parser counts
/// the same brackets and refuses past the limit, so a text it accepts never
/// has such a bracket, and the pest parser, which recurses, only ever sees
/// texts this scan has passed.
fn too_deep(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                i += 1;
                while i < b.len() && b[i] != q && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'{' | b'<' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b'}' | b'>' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// What the user would call each grammar rule.
fn rule_words(r: &Rule) -> Option<&'static str> {
    Some(match r {
        Rule::EOI => "end of file",
        Rule::field | Rule::ident | Rule::extension_name | Rule::type_path => "a field name",
        Rule::colon => "':'",
        Rule::message => "'{'",
        Rule::list => "'['",
        Rule::strings | Rule::string => "a string",
        Rule::number | Rule::num_lit | Rule::minus => "a number",
        Rule::signed_ident => "a value",
        Rule::escape => "an escape sequence",
        _ => return None,
    })
}

fn found_at(src: &str, pos: usize) -> String {
    let rest = &src[pos.min(src.len())..];
    match rest.chars().next() {
        None => "end of file".to_string(),
        Some('\n') | Some('\r') => "end of line".to_string(),
        Some('\u{feff}') => "a byte order mark (U+FEFF)".to_string(),
        Some('\u{1a}') => "bytes that are not UTF-8".to_string(),
        Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
            let word: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
                .take(40)
                .collect();
            format!("'{word}'")
        }
        Some(c) if c.is_control() => format!("control character U+{:04X}", c as u32),
        Some(c) => format!("'{c}'"),
    }
}

/// The diagnostic for pest's error `e` in `src[from..]`.
fn syntax_error(src: &str, from: usize, e: pest::error::Error<Rule>) -> Diagnostic {
    let pos = from
        + match e.location {
            pest::error::InputLocation::Pos(p) => p,
            pest::error::InputLocation::Span((s, _)) => s,
        };
    let mut expected: Vec<&'static str> = Vec::new();
    if let pest::error::ErrorVariant::ParsingError { positives, .. } = &e.variant {
        for r in positives {
            if let Some(w) = rule_words(r) {
                if !expected.contains(&w) {
                    expected.push(w);
                }
            }
        }
    }
    if let Some(nul) = nul_in_string(src, pos) {
        return Diagnostic::new(E0001, "a NUL character is not allowed in a string")
            .at(Span::new(nul, nul + 1));
    }
    let found = found_at(src, pos);
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {}, found {found}", join_or(&expected))
    };
    let end = (pos
        + src[pos.min(src.len())..]
            .chars()
            .next()
            .map_or(0, |c| c.len_utf8()))
    .min(src.len());
    let mut d = Diagnostic::new(E0001, message).at(Span::new(pos, end));
    if let Some(h) = syntax_help(src, pos) {
        d = d.help(h);
    }
    d
}

/// The offset of a NUL inside the string literal that starts at `pos`,
/// before its closing quote or the end of its line: both
/// parsers refuse it there, as protobuf's does ("Invalid control
/// characters encountered in text"), and the grammar's own words would
/// name the opening quote instead.
fn nul_in_string(src: &str, pos: usize) -> Option<usize> {
    let bytes = src.as_bytes();
    let quote = *bytes.get(pos)?;
    if quote != b'"' && quote != b'\'' {
        return None;
    }
    let mut i = pos + 1;
    while let Some(&b) = bytes.get(i) {
        match b {
            0 => return Some(i),
            b'\\' => i += 2,
            b'\n' => return None,
            _ if b == quote => return None,
            _ => i += 1,
        }
    }
    None
}

fn join_or(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [a] => a.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// Advice for the mistakes people make most.
fn syntax_help(src: &str, pos: usize) -> Option<&'static str> {
    let rest = &src[pos.min(src.len())..];
    let before = src[..pos.min(src.len())].trim_end();
    if rest.starts_with("//") || rest.starts_with("/*") {
        return Some("comments in protobuf text format start with '#'");
    }
    if rest.starts_with('\u{feff}') {
        return Some("protobuf's parser refuses a UTF-8 byte order mark; save the file without it");
    }
    if rest.starts_with('+') {
        return Some("protobuf's parser does not accept a leading '+' on numbers");
    }
    if rest.starts_with("${") || rest.starts_with("{{") || rest.starts_with('%') {
        return Some(
            "this looks like a template placeholder; render the template before validating it",
        );
    }
    if rest.starts_with(']') && before.ends_with(',') {
        return Some("a list cannot end with a comma");
    }
    if rest.starts_with('\n') || rest.starts_with('\r') {
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line = &src[line_start..pos];
        if line.matches('"').count() % 2 == 1 || line.matches('\'').count() % 2 == 1 {
            return Some(
                "a string cannot continue past the end of the line; write \\n for a line break",
            );
        }
    }
    if rest.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '"' || c == '\'')
        && !before.ends_with(':')
        && !before.ends_with('[')
        && !before.ends_with(',')
    {
        return Some("a scalar value needs ':' after the field name");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(src: &str) -> Document {
        match parse(src) {
            Ok(d) => d,
            Err(e) => panic!("{src:?} should parse: {}", e.message),
        }
    }

    fn err(src: &str) -> Diagnostic {
        match parse(src) {
            Ok(_) => panic!("{src:?} should not parse"),
            Err(e) => *e,
        }
    }

    /// Regression (docs/hostile.md): a NUL in a string was reported as `found '"'` at the
    /// opening quote; it is named, at its own position.
    #[test]
    fn a_nul_in_a_string_is_named_at_its_position() {
        for (src, at) in [
            ("name: \"a\0b\"\n", 8),
            ("name: 'x\\'\0'", 10),
            ("name: \"ok\" \"\0\"", 12),
            ("input [ { name: \"\0\" } ]", 17),
        ] {
            let d = err(src);
            assert_eq!(
                d.message, "a NUL character is not allowed in a string",
                "{src:?}"
            );
            let span = d.span.unwrap();
            assert_eq!(
                (span.start as usize, span.end as usize),
                (at, at + 1),
                "{src:?}"
            );
            assert!(parse_fast(src).is_none(), "{src:?}");
        }
        // A NUL outside a string keeps the grammar's words.
        assert!(err("name: \"a\"\0")
            .message
            .contains("control character U+0000"));
    }

    #[test]
    fn accepts_protobuf_forms() {
        for src in [
            "",
            "# only a comment",
            "name: \"a\" max_batch_size: 8",
            "input [ { name: \"x\" dims: [1, 2] } ]",
            "input: [ { name: 'x' } , < name: \"y\" > ]",
            "a { b: 1, c: 2; } d <>",
            "max_batch_size: 64#MAX_BATCH\n",
            "dims: -1#AUDIO\r\n\tdims: 0x10 dims: 010 dims: - 5",
            "f: 1.5 f: 1e3 f: 2f f: .5 f: -inf f: nan f: 1.5E-3F",
            "s: \"a\" 'b' \"c\\x41\\101\\u00e9\\n\\\"\"",
            "[ext.name]: 1 [type.googleapis.com/a.B] { }",
            "b: True b: t b: 0",
            "x: [] y []",
        ] {
            ok(src);
        }
    }

    #[test]
    fn refuses_what_protobuf_refuses() {
        for src in [
            "dims: [1, 2,]",
            "dims: [1 2]",
            "dims: [[1]]",
            "// comment\nname: \"x\"",
            "\u{feff}name: \"x\"",
            "max_batch_size 8",
            "a: +8",
            "s: \"line\nbreak\"",
            "a: 08",
            "a: 0x1.5",
            "a: 5abc",
            "a { b: 1 >",
            "a: 1,, b: 2",
            "a: \"\\q\"",
            "a: 1e",
        ] {
            err(src);
        }
    }

    #[test]
    fn spans_and_kinds() {
        let src = "max_batch_size: 64#MAX\ninput [ { dims: [ -1, 0x10 ] } ]";
        let d = ok(src);
        assert_eq!(d.fields.len(), 2);
        let f = &d.fields[0];
        assert_eq!(&src[f.name.span.range()], "max_batch_size");
        let Value::Scalar(s) = &f.value else { panic!() };
        assert_eq!(&src[s.span.range()], "64");
        let Value::List(l) = &d.fields[1].value else {
            panic!()
        };
        let Value::Message(m) = &l.items[0] else {
            panic!()
        };
        let Value::List(dims) = &m.fields[0].value else {
            panic!()
        };
        let Value::Scalar(Scalar {
            kind: ScalarKind::Int {
                negative, radix, ..
            },
            ..
        }) = &dims.items[0]
        else {
            panic!()
        };
        assert!(*negative);
        assert_eq!(*radix, IntRadix::Decimal);
        let Value::Scalar(Scalar {
            kind: ScalarKind::Int { radix, .. },
            ..
        }) = &dims.items[1]
        else {
            panic!()
        };
        assert_eq!(*radix, IntRadix::Hex);
    }

    #[test]
    fn error_positions_and_words() {
        let e = err("name: \"a\"\ndims: [1, 2,]");
        assert_eq!(e.span.unwrap().start, 22);
        assert_eq!(e.help.as_deref(), Some("a list cannot end with a comma"));
        let e = err("max_batch_size 8");
        assert!(e.message.contains("':'"), "{}", e.message);
        let e = err("// x");
        assert!(e.help.unwrap().contains('#'));
    }

    #[test]
    fn errors_found_from_the_refused_field_match_the_whole_text() {
        let prefix = "name: \"m\"\ninput [ { name: \"a\" dims: [ 1 ] } ];\nmax_batch_size: 8,\n";
        for broken in [
            "input { name: \"cut",
            "input { name: \"a\" dims: [ 1, ] }",
            "}",
            "max_batch_size 8",
            "x: 1 y { z: [ { a: 1 } ] ] }",
            "input { name: \"a\" } }",
            "// comment",
            "input { dims: [ 1 2 ] }",
            "a: \"x\" 'y\n'",
            "[ext.a]: 1 ;; b: 2",
            "[ext.name]<>[name",
            "a: 1 [name",
            "a { } [",
            "a { } }",
        ] {
            let src = format!("{prefix}{broken}");
            let from_field = err(&src);
            let whole = parse_with_pest(&src).unwrap_err();
            assert_eq!(from_field.message, whole.message, "{src}");
            assert_eq!(from_field.span, whole.span, "{src}");
            assert_eq!(from_field.help, whole.help, "{src}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_without_recursion() {
        let src = "a {".repeat(10_000) + &"}".repeat(10_000);
        let e = err(&src);
        assert_eq!(e.code(), "E0002");
    }
}
