//! The common shape of a trace line, read without building a JSON value.
//!
//! Traces run to millions of lines, nearly all of one shape: a flat object
//! of the trace fields with plain values. [`trace_fields`] reads exactly
//! that shape: an ASCII line holding one object whose keys are trace
//! fields (each at most once, written without escapes) and whose values
//! are strings without escapes, non-negative integers, `true`, `false` or
//! `null`, with JSON whitespace around the tokens. Everything else (an
//! unknown field, an escape, a nested value, a fraction or exponent, a
//! value out of range or of the wrong type, a missing `arrival_us`, a
//! blank line, a byte order mark, malformed JSON) is answered `None`,
//! and the caller reads the line with [`super::request::parse_line`] and
//! [`super::request::read_fields`]. So every message, warning and refusal
//! comes from the full reader, and for the lines read here both readers
//! give the same fields (checked by the tests below over generated lines).

use super::request::{RequestFields, MAX_TIME_US};
use crate::batching::CorrId;

/// The fields of a trace line of the common shape, or `None` when the full
/// reader must read it.
pub fn trace_fields(line: &[u8]) -> Option<RequestFields<'static>> {
    let mut c = Cursor { b: line, i: 0 };
    c.space();
    c.eat(b'{')?;
    c.space();
    let mut f = RequestFields::default();
    let mut seen = 0u8;
    loop {
        c.eat(b'"')?;
        let key = c.string()?;
        c.space();
        c.eat(b':')?;
        c.space();
        let value = c.scalar()?;
        let bit = assign(&mut f, key, value)?;
        if seen & bit != 0 {
            // A repeated key: JSON readers keep the last; leave it to the
            // full reader.
            return None;
        }
        seen |= bit;
        c.space();
        match c.next()? {
            b',' => c.space(),
            b'}' => break,
            _ => return None,
        }
    }
    c.space();
    if c.i != line.len() {
        return None;
    }
    f.arrival_us?;
    Some(f)
}

/// A value of the common shape.
#[derive(Debug, Clone, Copy)]
enum Scalar<'a> {
    Str(&'a str),
    Int(u64),
    Bool(bool),
    Null,
}

/// Stores `value` as the field `key`; its bit in the set of fields seen, or
/// `None` when the full reader must decide (unknown key, wrong type, out of
/// range). The accepted values are those `read_fields` accepts for a trace.
fn assign(f: &mut RequestFields<'static>, key: &str, value: Scalar) -> Option<u8> {
    use Scalar::*;
    let u32_max = u64::from(u32::MAX);
    let bit = match key {
        "id" => {
            f.id = match value {
                Str(s) => Some(s.to_owned()),
                Int(n) => Some(n.to_string()),
                Null => None,
                Bool(_) => return None,
            };
            1
        }
        "arrival_us" => {
            f.arrival_us = match value {
                Int(n) if n <= MAX_TIME_US => Some(n),
                Null => None,
                _ => return None,
            };
            1 << 1
        }
        "sequence_id" => {
            f.sequence_id = match value {
                Str(s) => Some(CorrId::Str(s.to_owned())),
                Int(n) => Some(CorrId::Int(n)),
                Null => None,
                Bool(_) => return None,
            };
            1 << 2
        }
        "start" | "end" => {
            let b = match value {
                Bool(b) => b,
                Null => false,
                _ => return None,
            };
            if key == "start" {
                f.start = b;
                1 << 3
            } else {
                f.end = b;
                1 << 4
            }
        }
        "batch_size" => {
            f.batch_size = match value {
                Int(n) if n <= u32_max => Some(n as u32),
                Null => None,
                _ => return None,
            };
            1 << 5
        }
        "priority" => {
            f.priority = match value {
                Int(n) if n <= u32_max => n as u32,
                Null => 0,
                _ => return None,
            };
            1 << 6
        }
        "timeout_us" => {
            f.timeout_us = match value {
                Int(n) if n <= MAX_TIME_US => n,
                Null => 0,
                _ => return None,
            };
            1 << 7
        }
        _ => return None,
    };
    Some(bit)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    /// JSON whitespace (not the wider set `str::trim` removes).
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn next(&mut self) -> Option<u8> {
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// The rest of a string after its opening quote: printable ASCII
    /// without escapes.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => break,
                b'\\' | 0..=0x1f | 0x80..=0xff => return None,
                _ => self.i += 1,
            }
        }
        let s = &self.b[start..self.i];
        self.i += 1;
        std::str::from_utf8(s).ok()
    }

    fn scalar(&mut self) -> Option<Scalar<'a>> {
        let v = match *self.b.get(self.i)? {
            b'"' => {
                self.i += 1;
                Scalar::Str(self.string()?)
            }
            b'0' => {
                self.i += 1;
                Scalar::Int(0)
            }
            b'1'..=b'9' => {
                let mut n = 0u64;
                while let Some(&d @ b'0'..=b'9') = self.b.get(self.i) {
                    n = n.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                    self.i += 1;
                }
                Scalar::Int(n)
            }
            b't' => self.word(b"true", Scalar::Bool(true))?,
            b'f' => self.word(b"false", Scalar::Bool(false))?,
            b'n' => self.word(b"null", Scalar::Null)?,
            _ => return None,
        };
        // A value ends at whitespace, a comma or the closing brace; `01`,
        // `1.5`, `1e3` and `truex` do not.
        match self.b.get(self.i) {
            Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}') => Some(v),
            _ => None,
        }
    }

    fn word(&mut self, w: &[u8], v: Scalar<'a>) -> Option<Scalar<'a>> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Some(v)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::request::{parse_line, read_fields, unknown_fields, Reader};
    use proptest::prelude::*;

    /// What the full reader makes of a line: `Ok(Some(fields))` when it
    /// reads the line without warnings.
    fn full(line: &[u8]) -> Result<Option<RequestFields<'static>>, ()> {
        let text = std::str::from_utf8(line).map_err(|_| ())?;
        let obj = parse_line(text, 1).map_err(|_| ())?.ok_or(())?;
        if !unknown_fields(&obj, Reader::Trace).is_empty() {
            return Ok(None);
        }
        let f = read_fields(&obj, Reader::Trace, 1).map_err(|_| ())?;
        if f.arrival_us.is_none() {
            return Err(());
        }
        Ok(Some(RequestFields {
            id: f.id,
            arrival_us: f.arrival_us,
            sequence_id: f.sequence_id,
            start: f.start,
            end: f.end,
            batch_size: f.batch_size,
            priority: f.priority,
            timeout_us: f.timeout_us,
            inputs: None,
        }))
    }

    /// The fast reader may leave any line to the full reader, but what it
    /// reads it must read as the full reader does.
    fn agree(line: &[u8]) -> Result<bool, String> {
        match trace_fields(line) {
            None => Ok(false),
            Some(fast) => match full(line) {
                Ok(Some(slow)) if slow == fast => Ok(true),
                other => Err(format!(
                    "{:?}: fast {fast:?}, full {other:?}",
                    String::from_utf8_lossy(line)
                )),
            },
        }
    }

    #[test]
    fn reads_the_generated_shape() {
        let line = br#"{"id":"r7","arrival_us":35,"sequence_id":8,"start":true,"end":false}"#;
        let f = trace_fields(line).unwrap();
        assert_eq!(f.id.as_deref(), Some("r7"));
        assert_eq!(f.arrival_us, Some(35));
        assert_eq!(f.sequence_id, Some(CorrId::Int(8)));
        assert!(f.start && !f.end);
        assert_eq!((f.batch_size, f.priority, f.timeout_us), (None, 0, 0));
        assert_eq!(agree(line), Ok(true));
    }

    #[test]
    fn leaves_everything_unusual_to_the_full_reader() {
        let left = [
            "",
            "   \n",
            "{}",
            r#"{"id": "a"}"#,
            r#"{"arrival_us": null}"#,
            r#"{"arrival_us": 1,}"#,
            r#"{"arrival_us": 1 "id": "a"}"#,
            r#"{"arrival_us": 1} x"#,
            r#"{"arrival_us": 1}}"#,
            r#"[{"arrival_us": 1}]"#,
            r#"{"arrival_us": 01}"#,
            r#"{"arrival_us": -1}"#,
            r#"{"arrival_us": -0}"#,
            r#"{"arrival_us": 1.0}"#,
            r#"{"arrival_us": 1e3}"#,
            r#"{"arrival_us": 1E3}"#,
            r#"{"arrival_us": 18446744073709551616}"#,
            r#"{"arrival_us": 1152921504606846977}"#,
            r#"{"arrival_us": "1"}"#,
            r#"{"arrival_us": true}"#,
            r#"{"arrival_us": 1, "priority": 4294967296}"#,
            r#"{"arrival_us": 1, "batch_size": 4294967296}"#,
            r#"{"arrival_us": 1, "timeout_us": 1152921504606846977}"#,
            r#"{"arrival_us": 1, "start": 1}"#,
            r#"{"arrival_us": 1, "start": tru}"#,
            r#"{"arrival_us": 1, "start": truex}"#,
            r#"{"arrival_us": 1, "end": "true"}"#,
            r#"{"arrival_us": 1, "id": true}"#,
            r#"{"arrival_us": 1, "id": [1]}"#,
            r#"{"arrival_us": 1, "sequence_id": {}}"#,
            r#"{"arrival_us": 1, "id": "a\"b"}"#,
            r#"{"arrival_us": 1, "id": "a\u0041"}"#,
            "{\"arrival_us\": 1, \"id\": \"caf\u{e9}\"}",
            "{\"arrival_us\": 1, \"id\": \"a\tb\"}",
            r#"{"arrival\u005fus": 1}"#,
            r#"{"arrival_us": 1, "arrival_us": 2}"#,
            r#"{"arrival_us": 1, "id": null, "id": "a"}"#,
            r#"{"arrival_us": 1, "inputs": {}}"#,
            r#"{"arrival_us": 1, "arival_us": 2}"#,
            r#"{"arrival_us": 1, "Start": true}"#,
            "\u{feff}{\"arrival_us\": 1}",
            "\u{b}{\"arrival_us\": 1}",
            "{\"arrival_us\": 1}\u{c}",
            "{\"arrival_us\": 1}\u{a0}",
            r#"{"arrival_us" 1}"#,
            r#"{arrival_us: 1}"#,
            r#"{"arrival_us": 1"#,
            r#"{"arrival_us": "#,
            r#"{"arrival_us"#,
            "{",
        ];
        for line in left {
            assert_eq!(trace_fields(line.as_bytes()), None, "{line:?}");
        }
        assert_eq!(trace_fields(b"{\"arrival_us\": 1, \"id\": \"\xff\"}"), None);
    }

    #[test]
    fn agrees_with_the_full_reader_on_plain_lines() {
        let read = [
            r#"{"arrival_us":0}"#,
            " \t{ \"arrival_us\" : 5 , \"id\" : 7 } \r\n",
            r#"{"timeout_us": 9, "priority": 3, "batch_size": 2, "end": true, "start": true, "sequence_id": "s7", "id": "x", "arrival_us": 7}"#,
            r#"{"arrival_us": 1152921504606846976, "timeout_us": 1152921504606846976, "priority": 4294967295, "batch_size": 4294967295}"#,
            r#"{"arrival_us": 1, "id": 18446744073709551615, "sequence_id": 18446744073709551615}"#,
            r#"{"arrival_us": 1, "id": null, "sequence_id": null, "start": null, "end": null, "batch_size": null, "priority": null, "timeout_us": null}"#,
            r#"{"arrival_us": 1, "id": "", "sequence_id": ""}"#,
            "{\"arrival_us\": 1, \"id\": \"a b/c{}[],:\u{7f}\"}",
            r#"{"arrival_us": 0, "batch_size": 0}"#,
        ];
        for line in read {
            assert_eq!(agree(line.as_bytes()), Ok(true), "{line:?}");
        }
    }

    /// A member of a generated line: key text and value text, plain or odd.
    fn member() -> impl Strategy<Value = (String, String)> {
        let key = prop_oneof![
            6 => prop::sample::select(vec![
                "id", "arrival_us", "sequence_id", "start", "end", "batch_size",
                "priority", "timeout_us",
            ])
            .prop_map(str::to_string),
            1 => prop::sample::select(vec![
                "inputs", "arival_us", "Start", "arrival\\u005fus", "", "x y",
            ])
            .prop_map(str::to_string),
        ];
        let number = prop_oneof![
            4 => (0u64..1_000_000).prop_map(|n| n.to_string()),
            2 => any::<u64>().prop_map(|n| n.to_string()),
            1 => prop::sample::select(vec![
                "0", "4294967295", "4294967296", "1152921504606846976",
                "1152921504606846977", "18446744073709551615", "18446744073709551616",
                "99999999999999999999999", "-0", "-1", "01", "00", "1.0", "1.5",
                "1e3", "1E3", "0e0", "-", "+1", "0x1", "1_0",
            ])
            .prop_map(str::to_string),
        ];
        let string = prop_oneof![
            4 => "[a-zA-Z0-9_ ./:-]{0,12}".prop_map(|s| format!("\"{s}\"")),
            2 => prop::sample::select(vec![
                "\"a\\\"b\"", "\"a\\\\b\"", "\"\\u0041\"", "\"\\n\"", "\"\\/\"",
                "\"caf\u{e9}\"", "\"\u{7f}\"", "\"a\tb\"", "\"\\x\"", "\"unterminated",
                "\"\u{202e}\"", "\"{}\"", "\",\"",
            ])
            .prop_map(str::to_string),
        ];
        let other = prop::sample::select(vec![
            "true",
            "false",
            "null",
            "tru",
            "nul",
            "truex",
            "[1]",
            "[]",
            "{}",
            "{\"a\":1}",
            "\"1\"",
            "",
        ])
        .prop_map(str::to_string);
        let value = prop_oneof![4 => number, 3 => string, 2 => other];
        (key, value)
    }

    fn space() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => Just(String::new()),
            3 => "[ \t]{1,3}",
            1 => prop::sample::select(vec!["\r", "\n", "\u{b}", "\u{c}", "\u{a0}", "\u{feff}"])
                .prop_map(str::to_string),
        ]
    }

    const KEYS: [&str; 8] = [
        "id",
        "arrival_us",
        "sequence_id",
        "start",
        "end",
        "batch_size",
        "priority",
        "timeout_us",
    ];

    /// Lines of trace fields in any order with plain values (mostly of the
    /// field's type, sometimes `null` or of another type) and JSON
    /// whitespace.
    fn plain_line() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            6 => (0u64..1_000_000).prop_map(|n| n.to_string()),
            1 => any::<u64>().prop_map(|n| n.to_string()),
            1 => prop::sample::select(vec![
                "4294967295", "4294967296", "1152921504606846976", "1152921504606846977",
            ])
            .prop_map(str::to_string),
        ];
        let string = "[a-zA-Z0-9_ .:-]{0,10}".prop_map(|s| format!("\"{s}\""));
        let flag = prop::sample::select(vec!["true", "false"]).prop_map(str::to_string);
        let value = (0u8..10, number, string, flag, any::<bool>());
        let ws = || "[ \t]{0,2}";
        (
            prop::sample::subsequence(KEYS.to_vec(), 0..=KEYS.len()).prop_shuffle(),
            prop::collection::vec((value, ws(), ws()), KEYS.len()),
            0u64..1 << 60,
            ws(),
            ws(),
        )
            .prop_map(|(keys, values, arrival, lead, trail)| {
                let mut parts: Vec<String> = keys
                    .iter()
                    .zip(values)
                    .map(|(&k, ((roll, n, s, b, pick), x, y))| {
                        let v = match (roll, k) {
                            (9, _) => "null".to_string(),
                            (8, "start" | "end") => n,
                            (8, _) => b,
                            (_, "start" | "end") => b,
                            (_, "id" | "sequence_id") if pick => s,
                            _ => n,
                        };
                        format!("{x}\"{k}\"{y}:{x}{v}{y}")
                    })
                    .collect();
                if !keys.contains(&"arrival_us") {
                    parts.push(format!("\"arrival_us\": {arrival}"));
                }
                format!("{lead}{{{}}}{trail}\n", parts.join(","))
            })
    }

    /// Lines of members in any order, often plain, sometimes not.
    fn odd_line() -> impl Strategy<Value = String> {
        (
            prop::collection::vec((member(), space(), space()), 0..10),
            space(),
            space(),
            prop::sample::select(vec![",", ",", ",", ",", ",,", ";", ""]),
            prop::sample::select(vec!["", "", "", "", ",", "}", " x"]),
            any::<bool>(),
        )
            .prop_map(|(members, lead, trail, sep, tail, with_arrival)| {
                let mut parts: Vec<String> = members
                    .iter()
                    .map(|((k, v), a, b)| format!("{a}\"{k}\"{b}:{a}{v}{b}"))
                    .collect();
                if with_arrival && !members.iter().any(|((k, _), _, _)| k == "arrival_us") {
                    let at = parts.len() / 2;
                    parts.insert(at, "\"arrival_us\":1".to_string());
                }
                format!("{lead}{{{}}}{tail}{trail}\n", parts.join(sep))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn fast_and_full_readers_agree_on_plain_lines(text in plain_line()) {
            if let Err(e) = agree(text.as_bytes()) {
                prop_assert!(false, "{}", e);
            }
        }

        #[test]
        fn fast_and_full_readers_agree_on_odd_lines(text in odd_line()) {
            if let Err(e) = agree(text.as_bytes()) {
                prop_assert!(false, "{}", e);
            }
        }

        #[test]
        fn fast_and_full_readers_agree_on_any_bytes(
            bytes in prop::collection::vec(
                prop::sample::select(b"{}\":, \t\n0123456789-.eE+truefalsnid_ar\\x\x00\xff".to_vec()),
                0..40,
            )
        ) {
            if let Err(e) = agree(&bytes) {
                prop_assert!(false, "{}", e);
            }
        }
    }

    #[test]
    fn generated_lines_often_take_the_fast_path() {
        // The properties above must not pass by leaving every line to the
        // full reader.
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        for (name, strategy, at_least) in [
            ("plain", plain_line().boxed(), 20),
            ("odd", odd_line().boxed(), 1),
        ] {
            let total = 2000;
            let fast = (0..total)
                .filter(|_| {
                    let text = strategy.new_tree(&mut runner).unwrap().current();
                    agree(text.as_bytes()).unwrap()
                })
                .count();
            assert!(
                fast * 100 >= total * at_least,
                "only {fast} of {total} {name} lines read fast"
            );
        }
    }
}
