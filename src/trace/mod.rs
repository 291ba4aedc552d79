//! Request traces for `tritonctl simulate`: a streaming JSON Lines reader
//! that yields [`Request`]s one line at a time (memory does not grow with
//! the length of the trace), and a deterministic generator of synthetic
//! traces (`tritonctl trace generate`).
//!
//! One request per line:
//! `{"id": "r1", "arrival_us": 0, "sequence_id": 7, "start": true,
//! "end": false, "batch_size": 1, "priority": 0, "timeout_us": 0}`.
//! Only `arrival_us` is required; `id` defaults to the 0-based line index.

mod generate;

pub use generate::{generate, Distribution, GenerateError, GenerateOptions};

use crate::batching::{CorrId, Request};
use serde_json::{Map, Value};
use std::fmt;
use std::io::BufRead;

/// The fields a trace line may carry.
pub const FIELDS: &[&str] = &[
    "id",
    "arrival_us",
    "sequence_id",
    "start",
    "end",
    "batch_size",
    "priority",
    "timeout_us",
];

/// The largest time (µs, about 36 000 years) a trace may hold, so that the
/// simulator's sums of times cannot overflow.
pub const MAX_TIME_US: u64 = 1 << 60;

/// At most this many warnings are kept; the rest are only counted.
const MAX_WARNINGS: usize = 100;

/// A problem that stops reading a trace: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    /// 1-based; 0 when the problem is not tied to a line (read error).
    pub line: usize,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

impl std::error::Error for TraceError {}

/// Reads a JSON Lines trace lazily. Blank lines are skipped; a UTF-8 byte
/// order mark on the first line is ignored.
pub struct TraceReader<R> {
    input: R,
    file: String,
    line: usize,
    buf: Vec<u8>,
    /// Arrival time and line of the previous request.
    last: Option<(u64, usize)>,
    failed: bool,
    warnings: Vec<String>,
    warning_count: usize,
}

impl<R: BufRead> TraceReader<R> {
    /// `file` is the name used in messages (`<stdin>` for standard input).
    pub fn new(input: R, file: impl Into<String>) -> Self {
        TraceReader {
            input,
            file: file.into(),
            line: 0,
            buf: Vec::new(),
            last: None,
            failed: false,
            warnings: Vec::new(),
            warning_count: 0,
        }
    }

    /// Warnings so far (`file:line: ...`), at most the first hundred.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// How many warnings there were in all.
    pub fn warning_count(&self) -> usize {
        self.warning_count
    }

    fn err(&self, message: impl Into<String>) -> TraceError {
        TraceError {
            file: self.file.clone(),
            line: self.line,
            message: message.into(),
        }
    }

    fn warn(&mut self, message: String) {
        self.warning_count += 1;
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings
                .push(format!("{}:{}: {message}", self.file, self.line));
        }
    }

    /// The next request, `None` at the end of the trace or after an error.
    pub fn next_request(&mut self) -> Option<Result<Request, TraceError>> {
        if self.failed {
            return None;
        }
        let r = self.read_next();
        if matches!(r, Some(Err(_))) {
            self.failed = true;
        }
        r
    }

    fn read_next(&mut self) -> Option<Result<Request, TraceError>> {
        loop {
            self.buf.clear();
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    return Some(Err(TraceError {
                        file: self.file.clone(),
                        line: 0,
                        message: format!("cannot read: {e}"),
                    }))
                }
            }
            self.line += 1;
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t,
                Err(_) => return Some(Err(self.err("the line is not valid UTF-8"))),
            };
            let text = if self.line == 1 {
                text.strip_prefix('\u{feff}').unwrap_or(text)
            } else {
                text
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let value: Value = match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => return Some(Err(self.err(format!("malformed JSON: {e}")))),
            };
            return Some(self.request(value));
        }
    }

    fn request(&mut self, value: Value) -> Result<Request, TraceError> {
        let Value::Object(obj) = value else {
            return Err(self.err(format!(
                "expected a JSON object (one request per line), found {}",
                kind(&value)
            )));
        };
        for key in obj.keys() {
            if !FIELDS.contains(&key.as_str()) {
                let near = crate::text::suggestions(key, FIELDS.iter().copied());
                let hint = match near.first() {
                    Some(s) => format!("; did you mean '{s}'?"),
                    None => String::new(),
                };
                self.warn(format!("unknown field '{key}' is ignored{hint}"));
            }
        }
        let arrival_us = match obj.get("arrival_us") {
            None => return Err(self.err("missing required field 'arrival_us'")),
            Some(v) => self.uint(v, "arrival_us")?,
        };
        let id = match obj.get("id") {
            None | Some(Value::Null) => (self.line - 1).to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) if n.is_u64() => n.to_string(),
            Some(v) => {
                return Err(self.err(format!(
                    "field 'id' must be a string or a non-negative integer, found {}",
                    kind(v)
                )))
            }
        };
        let sequence_id = match obj.get("sequence_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(CorrId::Str(s.clone())),
            Some(Value::Number(n)) if n.is_u64() => n.as_u64().map(CorrId::Int),
            Some(v) => {
                return Err(self.err(format!(
                    "field 'sequence_id' must be a non-negative integer or a string, found {}",
                    kind(v)
                )))
            }
        };
        let start = self.flag(&obj, "start")?;
        let end = self.flag(&obj, "end")?;
        let batch_size = self.small(&obj, "batch_size", 1)?;
        let priority = self.small(&obj, "priority", 0)?;
        let timeout_us = match obj.get("timeout_us") {
            None | Some(Value::Null) => 0,
            Some(v) => self.uint(v, "timeout_us")?,
        };
        if let Some((prev, line)) = self.last {
            if arrival_us < prev {
                return Err(self.err(format!(
                    "arrival_us {arrival_us} is earlier than {prev} on line {line}; \
                     the trace must be sorted by arrival time"
                )));
            }
        }
        self.last = Some((arrival_us, self.line));
        // Built from `Request::new` so that fields the core adds later keep
        // their defaults.
        let mut r = Request::new(id, arrival_us);
        r.sequence_id = sequence_id;
        r.start = start;
        r.end = end;
        r.batch_size = batch_size;
        r.priority = priority;
        r.timeout_us = timeout_us;
        Ok(r)
    }

    fn uint(&self, v: &Value, field: &str) -> Result<u64, TraceError> {
        match v {
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    if u > MAX_TIME_US {
                        return Err(self.err(format!(
                            "field '{field}' is too large: {u} (at most {MAX_TIME_US})"
                        )));
                    }
                    Ok(u)
                } else if n.as_i64().is_some_and(|i| i < 0) || n.as_f64().is_some_and(|f| f < 0.0) {
                    Err(self.err(format!("field '{field}' must not be negative, found {n}")))
                } else if n.is_f64() {
                    Err(self.err(format!(
                        "field '{field}' must be an integer number of microseconds, found {n}"
                    )))
                } else {
                    Err(self.err(format!("field '{field}' is out of range: {n}")))
                }
            }
            other => Err(self.err(format!(
                "field '{field}' must be a non-negative integer, found {}",
                kind(other)
            ))),
        }
    }

    fn small(
        &self,
        obj: &Map<String, Value>,
        field: &str,
        default: u32,
    ) -> Result<u32, TraceError> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => {
                let u = self.uint(v, field)?;
                u32::try_from(u).map_err(|_| self.err(format!("field '{field}' is too large: {u}")))
            }
        }
    }

    fn flag(&self, obj: &Map<String, Value>, field: &str) -> Result<bool, TraceError> {
        match obj.get(field) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(format!(
                "field '{field}' must be true or false, found {}",
                kind(v)
            ))),
        }
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Request, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_request()
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string {:?}", s),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Vec<Request>, Option<TraceError>, Vec<String>) {
        let mut r = TraceReader::new(text.as_bytes(), "t.jsonl");
        let mut out = Vec::new();
        let mut err = None;
        for item in r.by_ref() {
            match item {
                Ok(q) => out.push(q),
                Err(e) => err = Some(e),
            }
        }
        (out, err, r.warnings().to_vec())
    }

    #[test]
    fn reads_all_fields_and_defaults() {
        let (reqs, err, warns) = read(
            "{\"arrival_us\": 5}\n\n{\"id\": \"x\", \"arrival_us\": 7, \"sequence_id\": \"s7\", \
             \"start\": true, \"end\": true, \"batch_size\": 2, \"priority\": 3, \"timeout_us\": 9}\n\
             {\"arrival_us\": 7, \"sequence_id\": 4}",
        );
        assert!(err.is_none() && warns.is_empty());
        assert_eq!(reqs[0], Request::new("0", 5));
        assert_eq!(reqs[1].id, "x");
        assert_eq!(reqs[1].sequence_id, Some(CorrId::Str("s7".into())));
        assert!(reqs[1].start && reqs[1].end);
        assert_eq!(
            (reqs[1].batch_size, reqs[1].priority, reqs[1].timeout_us),
            (2, 3, 9)
        );
        assert_eq!(reqs[2].id, "3");
        assert_eq!(reqs[2].sequence_id, Some(CorrId::Int(4)));
    }

    #[test]
    fn errors_name_the_line() {
        let cases = [
            (
                "{\"arrival_us\": 5}\n{\"arrival_us\": 4}",
                "t.jsonl:2: arrival_us 4 is earlier than 5 on line 1",
            ),
            (
                "{\"arrival_us\": -1}",
                "t.jsonl:1: field 'arrival_us' must not be negative",
            ),
            (
                "{\"arrival_us\": 1.5}",
                "t.jsonl:1: field 'arrival_us' must be an integer",
            ),
            ("{\"arrival_us\": 1}\n{oops", "t.jsonl:2: malformed JSON"),
            (
                "{\"arrival_us\": 1, \"sequence_id\": true}",
                "t.jsonl:1: field 'sequence_id' must be",
            ),
            (
                "{\"arrival_us\": 1, \"id\": [1]}",
                "t.jsonl:1: field 'id' must be",
            ),
            (
                "{\"id\": \"a\"}",
                "t.jsonl:1: missing required field 'arrival_us'",
            ),
            ("[1]", "t.jsonl:1: expected a JSON object"),
            (
                "{\"arrival_us\": 1, \"start\": 1}",
                "t.jsonl:1: field 'start' must be true or false",
            ),
        ];
        for (text, want) in cases {
            let (_, err, _) = read(text);
            let got = err.expect(text).to_string();
            assert!(got.starts_with(want), "{got} does not start with {want}");
        }
    }

    #[test]
    fn unknown_fields_warn() {
        let (reqs, err, warns) = read("{\"arrival_us\": 1, \"arival_us\": 2}");
        assert!(err.is_none());
        assert_eq!(reqs.len(), 1);
        assert_eq!(warns.len(), 1);
        assert!(warns[0].starts_with("t.jsonl:1: unknown field 'arival_us'"));
        assert!(warns[0].contains("did you mean 'arrival_us'"));
    }

    #[test]
    fn stops_after_an_error() {
        let (reqs, err, _) = read("{\"arrival_us\": 1}\nnope\n{\"arrival_us\": 2}");
        assert_eq!(reqs.len(), 1);
        assert!(err.is_some());
    }
}
