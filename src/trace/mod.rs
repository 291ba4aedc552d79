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

pub use generate::{generate, requests, Distribution, GenerateError, GenerateOptions, Step};

use crate::batching::Request;
use crate::inputs::fast_line;
use crate::inputs::request::{self, ArrivalOrder, Reader};
use std::fmt;
use std::io::BufRead;

/// The fields a trace line may carry.
pub fn fields() -> impl Iterator<Item = &'static str> + Clone {
    Reader::Trace.fields()
}

pub use crate::inputs::request::MAX_TIME_US;

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
    order: ArrivalOrder,
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
            order: ArrivalOrder::default(),
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
            // Lines are read in place from the input's buffer; only a line
            // that spans two fills, or that the fast reader leaves to the
            // full one, is copied into `buf`.
            self.buf.clear();
            let mut tried = false;
            loop {
                let avail = match self.input.fill_buf() {
                    Ok(a) => a,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Some(Err(TraceError {
                            file: self.file.clone(),
                            line: 0,
                            message: format!("cannot read: {e}"),
                        }))
                    }
                };
                if avail.is_empty() {
                    if self.buf.is_empty() {
                        return None;
                    }
                    break;
                }
                let Some(end) = avail.iter().position(|&b| b == b'\n') else {
                    self.buf.extend_from_slice(avail);
                    let n = avail.len();
                    self.input.consume(n);
                    continue;
                };
                let line = &avail[..=end];
                if self.buf.is_empty() {
                    if let Some(f) = fast_line::trace_fields(line) {
                        self.input.consume(end + 1);
                        self.line += 1;
                        return Some(self.build(f));
                    }
                    tried = true;
                }
                self.buf.extend_from_slice(line);
                self.input.consume(end + 1);
                break;
            }
            self.line += 1;
            if !tried {
                if let Some(f) = fast_line::trace_fields(&self.buf) {
                    return Some(self.build(f));
                }
            }
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t,
                Err(_) => return Some(Err(self.err("the line is not valid UTF-8"))),
            };
            let text = if self.line == 1 {
                text.strip_prefix('\u{feff}').unwrap_or(text)
            } else {
                text
            };
            let obj = match request::parse_line(text, self.line) {
                Ok(Some(obj)) => obj,
                Ok(None) => continue,
                Err(e) => return Some(Err(self.err(e.message))),
            };
            return Some(self.request(&obj));
        }
    }

    fn request(
        &mut self,
        obj: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Request, TraceError> {
        for w in request::unknown_fields(obj, Reader::Trace) {
            self.warn(w);
        }
        let f =
            request::read_fields(obj, Reader::Trace, self.line).map_err(|e| self.err(e.message))?;
        self.build(f)
    }

    /// The request of the current line from its fields (read by either
    /// reader).
    fn build(&mut self, f: request::RequestFields<'_>) -> Result<Request, TraceError> {
        let Some(arrival_us) = f.arrival_us else {
            return Err(self.err("missing required field 'arrival_us'"));
        };
        self.order
            .check(arrival_us, self.line)
            .map_err(|m| self.err(m))?;
        // Built from `Request::new` so that fields the core adds later keep
        // their defaults.
        let id = f.id.unwrap_or_else(|| (self.line - 1).to_string());
        let mut r = Request::new(id, arrival_us);
        r.sequence_id = f.sequence_id;
        r.start = f.start;
        r.end = f.end;
        r.batch_size = f.batch_size.unwrap_or(1);
        r.priority = f.priority;
        r.timeout_us = f.timeout_us;
        Ok(r)
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<Request, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.next_request()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batching::CorrId;

    fn read(text: &str) -> (Vec<Request>, Option<TraceError>, Vec<String>) {
        read_buffered(text.as_bytes(), 8 << 10)
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

    /// The trace as the full JSON reader alone reads it, line by line:
    /// what `TraceReader` must give whatever takes its fast path.
    fn read_full(text: &[u8]) -> (Vec<Request>, Option<TraceError>, Vec<String>) {
        let (mut out, mut warns) = (Vec::new(), Vec::new());
        let mut order = ArrivalOrder::default();
        let err = |line, message: String| TraceError {
            file: "t.jsonl".into(),
            line,
            message,
        };
        let mut lines: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
        if lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        for (i, bytes) in lines.into_iter().enumerate() {
            let line = i + 1;
            let Ok(text) = std::str::from_utf8(bytes) else {
                return (
                    out,
                    Some(err(line, "the line is not valid UTF-8".into())),
                    warns,
                );
            };
            let text = if line == 1 {
                text.strip_prefix('\u{feff}').unwrap_or(text)
            } else {
                text
            };
            let obj = match request::parse_line(text, line) {
                Ok(Some(obj)) => obj,
                Ok(None) => continue,
                Err(e) => return (out, Some(err(line, e.message)), warns),
            };
            for w in request::unknown_fields(&obj, Reader::Trace) {
                warns.push(format!("t.jsonl:{line}: {w}"));
            }
            let f = match request::read_fields(&obj, Reader::Trace, line) {
                Ok(f) => f,
                Err(e) => return (out, Some(err(line, e.message)), warns),
            };
            let Some(arrival_us) = f.arrival_us else {
                let m = "missing required field 'arrival_us'".to_string();
                return (out, Some(err(line, m)), warns);
            };
            if let Err(m) = order.check(arrival_us, line) {
                return (out, Some(err(line, m)), warns);
            }
            let mut r = Request::new(f.id.unwrap_or_else(|| (line - 1).to_string()), arrival_us);
            r.sequence_id = f.sequence_id;
            r.start = f.start;
            r.end = f.end;
            r.batch_size = f.batch_size.unwrap_or(1);
            r.priority = f.priority;
            r.timeout_us = f.timeout_us;
            out.push(r);
        }
        (out, None, warns)
    }

    fn read_buffered(
        text: &[u8],
        capacity: usize,
    ) -> (Vec<Request>, Option<TraceError>, Vec<String>) {
        let input = std::io::BufReader::with_capacity(capacity, text);
        let mut r = TraceReader::new(input, "t.jsonl");
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

    /// Lines of every kind: the fast reader's shape and lines only the
    /// full reader reads (or refuses).
    const LINES: &[&str] = &[
        "{\"id\":\"r0\",\"arrival_us\":0,\"sequence_id\":1,\"start\":true,\"end\":false}\n",
        "{\"arrival_us\": 3, \"sequence_id\": \"s1\", \"batch_size\": 2}\r\n",
        "{\"arrival_us\": 3, \"id\": \"a\\\"b\", \"priority\": 2, \"timeout_us\": 7}\n",
        "{\"arrival_us\": 4, \"id\": \"caf\u{e9}\", \"end\": true}\n",
        "{\"arrival_us\": 4, \"arival_us\": 9}\n",
        "{\"arrival_us\": 5, \"inputs\": {\"X\": [1]}}\n",
        "{\"arrival_us\": 5, \"id\": 12, \"id\": \"last\"}\n",
        "  \t\n",
        "\n",
        "{\"arrival_us\": 6}\u{c}\n",
        "{\"arrival_us\": 6, \"sequence_id\": 18446744073709551615}\n",
        "{\"arrival_us\": 1.5}\n",
        "{\"arrival_us\": 1}\n",
        "{\"id\": \"no arrival\"}\n",
        "{oops\n",
        "\u{feff}{\"arrival_us\": 9}\n",
        "{\"arrival_us\": 9, \"start\": 1}\n",
    ];

    #[test]
    fn reading_in_place_agrees_with_the_full_reader() {
        let mut text = Vec::new();
        for l in LINES.iter().take(11) {
            text.extend_from_slice(l.as_bytes());
        }
        text.extend_from_slice(b"{\"arrival_us\": 10}");
        let want = read_full(&text);
        // Ids default to the 0-based line index; blank lines count.
        let ids: Vec<&str> = want.0.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "r0",
                "1",
                "a\"b",
                "caf\u{e9}",
                "4",
                "5",
                "last",
                "9",
                "10",
                "11"
            ]
        );
        assert_eq!(want.1, None);
        assert_eq!(want.2.len(), 2, "{want:?}");
        for capacity in [1, 2, 3, 7, 16, 61, 64, 1 << 16] {
            assert_eq!(read_buffered(&text, capacity), want, "capacity {capacity}");
        }
        text.extend_from_slice(b"\n\xff\n");
        let (_, err, _) = read_buffered(&text, 5);
        assert_eq!(
            err.unwrap().to_string(),
            "t.jsonl:13: the line is not valid UTF-8"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_trace_reads_as_the_full_reader_reads_it(
            picks in proptest::collection::vec(0..LINES.len(), 0..12),
            unterminated in proptest::bool::ANY,
            capacity in 1usize..80,
        ) {
            let mut text: Vec<u8> = picks.iter().flat_map(|&i| LINES[i].bytes()).collect();
            if unterminated && text.last() == Some(&b'\n') {
                text.pop();
            }
            proptest::prop_assert_eq!(read_buffered(&text, capacity), read_full(&text));
        }
    }

    #[test]
    fn stops_after_an_error() {
        let (reqs, err, _) = read("{\"arrival_us\": 1}\nnope\n{\"arrival_us\": 2}");
        assert_eq!(reqs.len(), 1);
        assert!(err.is_some());
    }
}
