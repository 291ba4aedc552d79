//! The request lines of JSON Lines files: `simulate`'s traces and
//! `run --input`'s requests share their fields and how they are read.
//!
//! `{"id": "r1", "arrival_us": 0, "sequence_id": 7, "start": true,
//! "end": false, "batch_size": 1, "priority": 0, "timeout_us": 0,
//! "inputs": {...}}`: a trace takes `batch_size` (it has no tensors), a run
//! takes `inputs` (its batch size is the first dimension of the tensors).

use super::kind;
use crate::batching::CorrId;
use serde_json::{Map, Value};
use std::fmt;

/// Which reader reads the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// `simulate`'s traces.
    Trace,
    /// `run --input`.
    Run,
}

/// A field of a request line and the readers that take it.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub trace: bool,
    pub run: bool,
    /// Why a reader that does not take the field ignores it, for its
    /// warning.
    pub elsewhere: Option<&'static str>,
}

/// Every field a request line may carry.
pub const FIELDS: &[Field] = &[
    both("id"),
    both("arrival_us"),
    both("sequence_id"),
    both("start"),
    both("end"),
    Field {
        name: "batch_size",
        trace: true,
        run: false,
        elsewhere: Some("the batch size is the first dimension of the inputs"),
    },
    both("priority"),
    both("timeout_us"),
    Field {
        name: "inputs",
        trace: false,
        run: true,
        elsewhere: None,
    },
];

const fn both(name: &'static str) -> Field {
    Field {
        name,
        trace: true,
        run: true,
        elsewhere: None,
    }
}

impl Reader {
    fn takes(self, f: &Field) -> bool {
        match self {
            Reader::Trace => f.trace,
            Reader::Run => f.run,
        }
    }

    /// The names of the fields this reader takes.
    pub fn fields(self) -> impl Iterator<Item = &'static str> + Clone {
        FIELDS.iter().filter(move |f| self.takes(f)).map(|f| f.name)
    }
}

/// The largest time (µs, about 36 000 years) a request line may hold, so
/// that the simulator's sums of times cannot overflow.
pub const MAX_TIME_US: u64 = 1 << 60;

/// A problem with a request line: its line and, when one field is at
/// fault, the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based.
    pub line: usize,
    /// 1-based, for JSON syntax errors.
    pub column: Option<usize>,
    pub field: Option<&'static str>,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for LineError {}

/// The fields of one request line (its tensors are left as JSON).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RequestFields<'a> {
    /// `None` when the line has none (or `null`).
    pub id: Option<String>,
    pub arrival_us: Option<u64>,
    pub sequence_id: Option<CorrId>,
    pub start: bool,
    pub end: bool,
    /// Trace lines only.
    pub batch_size: Option<u32>,
    /// 0 = not set.
    pub priority: u32,
    /// 0 = none.
    pub timeout_us: u64,
    /// Run lines only: the named tensors.
    pub inputs: Option<&'a Map<String, Value>>,
}

/// One line as a JSON object: `Ok(None)` for a blank line.
pub fn parse_line(text: &str, line: usize) -> Result<Option<Map<String, Value>>, LineError> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| LineError {
        line,
        column: Some(e.column()),
        field: None,
        message: format!("malformed JSON: {e}"),
    })?;
    match value {
        Value::Object(obj) => Ok(Some(obj)),
        other => Err(LineError {
            line,
            column: None,
            field: None,
            message: format!(
                "expected a JSON object (one request per line), found {}",
                kind(&other)
            ),
        }),
    }
}

/// Warnings (without their `file:line: ` prefix) for the members of `obj`
/// that `reader` does not take.
pub fn unknown_fields(obj: &Map<String, Value>, reader: Reader) -> Vec<String> {
    let mut out = Vec::new();
    for key in obj.keys() {
        if reader.fields().any(|f| f == key) {
            continue;
        }
        let near = crate::text::suggestions(key, reader.fields());
        let elsewhere = FIELDS
            .iter()
            .find(|f| f.name == key)
            .and_then(|f| f.elsewhere);
        let hint = match (near.first(), elsewhere) {
            (Some(s), _) => format!("; did you mean '{s}'?"),
            (None, Some(why)) => format!("; {why}"),
            (None, None) => String::new(),
        };
        out.push(format!("unknown field '{key}' is ignored{hint}"));
    }
    out
}

/// Reads the fields `reader` takes from one line's object. Fields it does
/// not take are left alone (see [`unknown_fields`]).
pub fn read_fields(
    obj: &Map<String, Value>,
    reader: Reader,
    line: usize,
) -> Result<RequestFields<'_>, LineError> {
    let err = |field: &'static str, message: String| LineError {
        line,
        column: None,
        field: Some(field),
        message,
    };
    let get = |field: &str| obj.get(field).filter(|v| !v.is_null());
    let id = match get("id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) if n.is_u64() => Some(n.to_string()),
        Some(v) => {
            return Err(err(
                "id",
                format!(
                    "field 'id' must be a string or a non-negative integer, found {}",
                    kind(v)
                ),
            ))
        }
    };
    let uint = |field: &'static str, max: u64| -> Result<Option<u64>, LineError> {
        get(field)
            .map(|v| unsigned(v, field, max).map_err(|m| err(field, m)))
            .transpose()
    };
    let flag = |field: &'static str| -> Result<bool, LineError> {
        match get(field) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(err(
                field,
                format!("field '{field}' must be true or false, found {}", kind(v)),
            )),
        }
    };
    let arrival_us = uint("arrival_us", MAX_TIME_US)?;
    let sequence_id = match get("sequence_id") {
        None => None,
        Some(Value::String(s)) => Some(CorrId::Str(s.clone())),
        Some(Value::Number(n)) if n.is_u64() => n.as_u64().map(CorrId::Int),
        Some(v) => {
            return Err(err(
                "sequence_id",
                format!(
                    "field 'sequence_id' must be a non-negative integer or a string, found {}",
                    kind(v)
                ),
            ))
        }
    };
    let start = flag("start")?;
    let end = flag("end")?;
    let u32_max = u64::from(u32::MAX);
    let batch_size = match reader {
        Reader::Trace => uint("batch_size", u32_max)?.map(|b| b as u32),
        Reader::Run => None,
    };
    let priority = uint("priority", u32_max)?.unwrap_or(0) as u32;
    let timeout_us = uint("timeout_us", MAX_TIME_US)?.unwrap_or(0);
    let inputs = match (reader, get("inputs")) {
        (Reader::Trace, _) | (Reader::Run, None) => None,
        (Reader::Run, Some(Value::Object(o))) => Some(o),
        (Reader::Run, Some(v)) => {
            return Err(err(
                "inputs",
                format!(
                    "field 'inputs' must be an object of named tensors, found {}",
                    kind(v)
                ),
            ))
        }
    };
    Ok(RequestFields {
        id,
        arrival_us,
        sequence_id,
        start,
        end,
        batch_size,
        priority,
        timeout_us,
        inputs,
    })
}

/// A non-negative integer field of at most `max`.
fn unsigned(v: &Value, field: &str, max: u64) -> Result<u64, String> {
    let Value::Number(n) = v else {
        return Err(format!(
            "field '{field}' must be a non-negative integer, found {}",
            kind(v)
        ));
    };
    if let Some(u) = n.as_u64() {
        if u > max {
            return Err(format!("field '{field}' is too large: {u} (at most {max})"));
        }
        Ok(u)
    } else if n.as_i64().is_some_and(|i| i < 0) || n.as_f64().is_some_and(|f| f < 0.0) {
        Err(format!("field '{field}' must not be negative, found {n}"))
    } else if n.is_f64() {
        Err(format!("field '{field}' must be an integer, found {n}"))
    } else {
        Err(format!("field '{field}' is out of range: {n}"))
    }
}

/// Arrival times must not go back: remembers the last time and its line.
#[derive(Debug, Clone, Default)]
pub struct ArrivalOrder {
    last: Option<(u64, usize)>,
}

impl ArrivalOrder {
    /// Records the arrival time of the request on `line`; an error when
    /// it is earlier than the one before.
    pub fn check(&mut self, arrival_us: u64, line: usize) -> Result<(), String> {
        if let Some((prev, prev_line)) = self.last {
            if arrival_us < prev {
                return Err(format!(
                    "arrival_us {arrival_us} is earlier than {prev} on line {prev_line}; \
                     requests must be sorted by arrival time"
                ));
            }
        }
        self.last = Some((arrival_us, line));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Map<String, Value> {
        parse_line(text, 1).unwrap().unwrap()
    }

    #[test]
    fn both_readers_read_the_shared_fields_alike() {
        let o = obj(
            r#"{"id": 5, "arrival_us": 7, "sequence_id": "s", "start": true, "end": null,
                "priority": 3, "timeout_us": 9, "batch_size": 2, "inputs": {"X": [1]}}"#,
        );
        let t = read_fields(&o, Reader::Trace, 1).unwrap();
        let r = read_fields(&o, Reader::Run, 1).unwrap();
        for f in [&t, &r] {
            assert_eq!(f.id.as_deref(), Some("5"));
            assert_eq!(f.arrival_us, Some(7));
            assert_eq!(f.sequence_id, Some(CorrId::Str("s".into())));
            assert!(f.start && !f.end);
            assert_eq!((f.priority, f.timeout_us), (3, 9));
        }
        assert_eq!((t.batch_size, t.inputs), (Some(2), None));
        assert_eq!(r.batch_size, None);
        assert!(r.inputs.is_some_and(|i| i.contains_key("X")));
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            (
                r#"{"arrival_us": -1}"#,
                "arrival_us",
                "must not be negative",
            ),
            (r#"{"arrival_us": 1.5}"#, "arrival_us", "must be an integer"),
            (
                r#"{"timeout_us": "3"}"#,
                "timeout_us",
                "must be a non-negative integer",
            ),
            (r#"{"priority": 4294967296}"#, "priority", "is too large"),
            (
                r#"{"arrival_us": 1152921504606846977}"#,
                "arrival_us",
                "is too large",
            ),
            (
                r#"{"sequence_id": true}"#,
                "sequence_id",
                "must be a non-negative",
            ),
            (r#"{"id": [1]}"#, "id", "must be a string"),
            (r#"{"start": 1}"#, "start", "must be true or false"),
            (r#"{"inputs": [1]}"#, "inputs", "must be an object"),
        ];
        for (text, field, want) in cases {
            let e = read_fields(&obj(text), Reader::Run, 4).unwrap_err();
            assert_eq!((e.line, e.field), (4, Some(field)), "{text}");
            assert!(e.message.contains(want), "{}", e.message);
            assert!(e.to_string().starts_with("line 4: field '"), "{e}");
        }
        let e = parse_line("{oops", 2).unwrap_err();
        assert_eq!((e.line, e.column, e.field), (2, Some(2), None));
        assert!(parse_line("[1]", 1)
            .unwrap_err()
            .message
            .contains("JSON object"));
        assert_eq!(parse_line("  ", 1), Ok(None));
    }

    #[test]
    fn unknown_fields_depend_on_the_reader() {
        let o = obj(r#"{"arival_us": 1, "batch_size": 2, "inputs": {}}"#);
        let t = unknown_fields(&o, Reader::Trace);
        assert_eq!(
            t,
            [
                "unknown field 'arival_us' is ignored; did you mean 'arrival_us'?",
                "unknown field 'inputs' is ignored",
            ]
        );
        let r = unknown_fields(&o, Reader::Run);
        assert_eq!(
            r,
            [
                "unknown field 'arival_us' is ignored; did you mean 'arrival_us'?",
                "unknown field 'batch_size' is ignored; the batch size is the first \
                 dimension of the inputs",
            ]
        );
    }

    #[test]
    fn arrival_times_must_not_go_back() {
        let mut o = ArrivalOrder::default();
        assert!(o.check(5, 1).is_ok());
        assert!(o.check(5, 2).is_ok());
        let e = o.check(4, 3).unwrap_err();
        assert!(
            e.starts_with("arrival_us 4 is earlier than 5 on line 2"),
            "{e}"
        );
    }
}
