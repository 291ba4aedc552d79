//! Printing the results of `tritonctl run` (docs/spec/cli.md):
//!
//! * `--format json`: JSON Lines, one result per request:
//!   `{"id": "r1", "sequence_id": 7, "status": "ok", "outputs": {"OUTPUT":
//!   {"datatype": "FP32", "shape": [1, 1], "data": [3.0]}}}`, or
//!   `"status": "error"` with an `"error"` message instead of `"outputs"`.
//!   `sequence_id` is `null` for requests outside a sequence. Outputs keep
//!   the config's order. FP16/BF16 values are printed as numbers, NaN and
//!   infinities as the strings `"nan"`, `"inf"`, `"-inf"` (JSON has no such
//!   numbers), BYTES elements as strings when they are UTF-8, else as
//!   `{"b64": "..."}`.
//! * human: a table (id, sequence, status, outputs abbreviated).

use super::input::FailedRequest;
use crate::batching::CorrId;
use crate::inputs::codec::{b64_encode, bf16_to_f32, f16_to_f32};
use crate::tensor::{Tensor, TensorData};
use crate::text::display::{escape, Untrusted};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;
use std::io::{self, Write};

/// The outcome of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The request's id (its position in the input when it had none).
    pub id: String,
    pub sequence_id: Option<CorrId>,
    /// The outputs in config order, or the error message.
    pub outcome: Result<Vec<(String, Tensor)>, String>,
}

impl RunResult {
    pub fn is_ok(&self) -> bool {
        self.outcome.is_ok()
    }
}

/// The results of the requests that ran (`ran`, one per request, in
/// order; `indices` are their positions in the input) and the requests
/// that failed before running (`failed`, while the input was read), in
/// input order.
pub fn merge_failed(
    ran: Vec<RunResult>,
    indices: &[usize],
    failed: &[FailedRequest],
) -> Vec<RunResult> {
    if failed.is_empty() {
        // Nothing to place: no second list of every result.
        return ran;
    }
    let mut out = Vec::with_capacity(ran.len() + failed.len());
    let mut ran = indices.iter().copied().zip(ran).peekable();
    let mut failed = failed.iter().peekable();
    loop {
        let take_failed = match (ran.peek(), failed.peek()) {
            (Some((i, _)), Some(f)) => f.index < *i,
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if take_failed {
            let f = failed.next().expect("peeked");
            out.push(RunResult {
                id: f.id.clone(),
                sequence_id: f.sequence_id.clone(),
                outcome: Err(f.error.clone()),
            });
        } else if let Some((_, r)) = ran.next() {
            out.push(r);
        } else {
            break;
        }
    }
    out
}

/// One result as a JSON line (without the newline).
pub fn json_line(result: &RunResult) -> String {
    serde_json::to_string(&Line(result)).expect("results serialize to JSON")
}

/// Writes one result as a JSON line.
pub fn write_json_line(w: &mut dyn Write, result: &RunResult) -> io::Result<()> {
    serde_json::to_writer(&mut *w, &Line(result)).map_err(io::Error::other)?;
    w.write_all(b"\n")
}

/// The JSON value of one result (for callers that embed it).
pub fn result_json(result: &RunResult) -> serde_json::Value {
    serde_json::to_value(Line(result)).expect("results serialize to JSON")
}

/// The JSON value of one tensor: `{"datatype", "shape", "data"}`.
pub fn tensor_json(t: &Tensor) -> serde_json::Value {
    serde_json::to_value(JsonTensor(t)).expect("tensors serialize to JSON")
}

struct Line<'a>(&'a RunResult);

impl Serialize for Line<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", &r.id)?;
        m.serialize_entry("sequence_id", &r.sequence_id)?;
        match &r.outcome {
            Ok(outputs) => {
                m.serialize_entry("status", "ok")?;
                m.serialize_entry("outputs", &Outputs(outputs))?;
            }
            Err(e) => {
                m.serialize_entry("status", "error")?;
                m.serialize_entry("error", e)?;
            }
        }
        m.end()
    }
}

struct Outputs<'a>(&'a [(String, Tensor)]);

impl Serialize for Outputs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (name, t) in self.0 {
            m.serialize_entry(name, &JsonTensor(t))?;
        }
        m.end()
    }
}

struct JsonTensor<'a>(&'a Tensor);

impl Serialize for JsonTensor<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.0;
        let mut m = s.serialize_map(Some(3))?;
        m.serialize_entry("datatype", t.dtype().wire_name())?;
        m.serialize_entry("shape", &t.shape)?;
        m.serialize_entry("data", &Elements(&t.data))?;
        m.end()
    }
}

struct Elements<'a>(&'a TensorData);

/// A float element: a number, or a string for NaN and the infinities.
enum Float {
    F32(f32),
    F64(f64),
}

impl Serialize for Float {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (finite, nan, positive) = match *self {
            Float::F32(x) => (x.is_finite(), x.is_nan(), x > 0.0),
            Float::F64(x) => (x.is_finite(), x.is_nan(), x > 0.0),
        };
        if !finite {
            return s.serialize_str(if nan {
                "nan"
            } else if positive {
                "inf"
            } else {
                "-inf"
            });
        }
        match *self {
            // The shortest decimal that reads back as the same f32, as an
            // f64, so that a `serde_json::Value` holds 0.1 and not
            // 0.10000000149011612.
            Float::F32(x) => s.serialize_f64(x.to_string().parse::<f64>().unwrap_or(f64::from(x))),
            Float::F64(x) => s.serialize_f64(x),
        }
    }
}

/// A BYTES element: a string when UTF-8, else `{"b64": ...}`.
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("b64", &b64_encode(self.0))?;
                m.end()
            }
        }
    }
}

impl Serialize for Elements<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn all<S: Serializer, T, U: Serialize>(
            s: S,
            v: &[T],
            f: impl Fn(&T) -> U,
        ) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(v.len()))?;
            for x in v {
                seq.serialize_element(&f(x))?;
            }
            seq.end()
        }
        match self.0 {
            TensorData::Bool(v) => v.serialize(s),
            TensorData::U8(v) => v.serialize(s),
            TensorData::U16(v) => v.serialize(s),
            TensorData::U32(v) => v.serialize(s),
            TensorData::U64(v) => v.serialize(s),
            TensorData::I8(v) => v.serialize(s),
            TensorData::I16(v) => v.serialize(s),
            TensorData::I32(v) => v.serialize(s),
            TensorData::I64(v) => v.serialize(s),
            TensorData::F16(v) => all(s, v, |&h| Float::F32(f16_to_f32(h))),
            TensorData::F32(v) => all(s, v, |&x| Float::F32(x)),
            TensorData::F64(v) => all(s, v, |&x| Float::F64(x)),
            TensorData::Bf16(v) => all(s, v, |&b| Float::F32(bf16_to_f32(b))),
            TensorData::Bytes(v) => {
                let mut seq = s.serialize_seq(Some(v.len()))?;
                for b in v {
                    seq.serialize_element(&Bytes(b))?;
                }
                seq.end()
            }
        }
    }
}

/// Settings of the human table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// Values shown per output before `…`.
    pub max_values: usize,
    /// Characters an error message may take before it is cut.
    pub max_error_chars: usize,
    /// Rows shown: a table of a million requests is unreadable and would
    /// be built whole in memory (comfy-table renders one string), so the
    /// rest are counted, and `--format json` lists them all.
    pub max_rows: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            max_values: 8,
            max_error_chars: 200,
            max_rows: 1000,
        }
    }
}

/// The human table: one row per result with its id, sequence, status and
/// its outputs (one line each: `NAME TYPE [shape]: v1, v2, …`) or error.
/// Ids, names, string values and errors come from the input, the config or
/// the model: each is shown escaped ([`crate::text::display`]), so that none
/// can add a line to the table or reach the terminal as a control sequence.
/// At most `opts.max_rows` rows, the first results.
pub fn render_table(results: &[RunResult], opts: &TableOptions) -> comfy_table::Table {
    use comfy_table::{presets, Table};
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED);
    t.set_header(vec!["id", "sequence", "status", "outputs"]);
    for r in results.iter().take(opts.max_rows) {
        let seq = r
            .sequence_id
            .as_ref()
            .map_or_else(|| "-".to_string(), |s| escape(&s.to_string()).into_owned());
        let (status, detail) = match &r.outcome {
            Ok(outputs) => (
                "ok",
                outputs
                    .iter()
                    .map(|(name, t)| summarize(name, t, opts.max_values))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Err(e) => ("error", escape(&cut(e, opts.max_error_chars)).into_owned()),
        };
        t.add_row(vec![
            escape(&r.id).into_owned(),
            seq,
            status.to_string(),
            detail,
        ]);
    }
    t
}

/// `NAME TYPE [d0,d1]: v1, v2, … (N values)`, escaped as display text.
pub fn summarize(name: &str, t: &Tensor, max_values: usize) -> String {
    let n = t.data.len();
    let shown: Vec<String> = (0..n.min(max_values))
        .map(|i| element_text(&t.data, i))
        .collect();
    let dims: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let mut s = format!(
        "{} {} [{}]: {}",
        Untrusted(name),
        t.dtype().wire_name(),
        dims.join(","),
        shown.join(", ")
    );
    if n > max_values {
        s.push_str(&format!(", … ({n} values)"));
    }
    s
}

fn element_text(data: &TensorData, i: usize) -> String {
    match data {
        TensorData::Bool(v) => v[i].to_string(),
        TensorData::U8(v) => v[i].to_string(),
        TensorData::U16(v) => v[i].to_string(),
        TensorData::U32(v) => v[i].to_string(),
        TensorData::U64(v) => v[i].to_string(),
        TensorData::I8(v) => v[i].to_string(),
        TensorData::I16(v) => v[i].to_string(),
        TensorData::I32(v) => v[i].to_string(),
        TensorData::I64(v) => v[i].to_string(),
        TensorData::F16(v) => f16_to_f32(v[i]).to_string(),
        TensorData::F32(v) => v[i].to_string(),
        TensorData::F64(v) => v[i].to_string(),
        TensorData::Bf16(v) => bf16_to_f32(v[i]).to_string(),
        TensorData::Bytes(v) => match std::str::from_utf8(&v[i]) {
            Ok(s) => format!("\"{}\"", escape(&cut(s, 40)).replace('"', "\\\"")),
            Err(_) => format!("<{} bytes>", v[i].len()),
        },
    }
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::DataType;
    use serde_json::{json, Value};

    fn tensor(shape: &[i64], data: TensorData) -> Tensor {
        Tensor::new(shape.to_vec(), data).unwrap()
    }

    fn ok(id: &str, seq: Option<CorrId>, outputs: Vec<(&str, Tensor)>) -> RunResult {
        RunResult {
            id: id.into(),
            sequence_id: seq,
            outcome: Ok(outputs
                .into_iter()
                .map(|(n, t)| (n.to_string(), t))
                .collect()),
        }
    }

    fn parsed(r: &RunResult) -> Value {
        let line = json_line(r);
        assert!(!line.contains('\n'));
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn the_cli_md_shape() {
        let r = ok(
            "r1",
            Some(CorrId::Int(7)),
            vec![("OUTPUT", tensor(&[1, 1], TensorData::F32(vec![3.0])))],
        );
        assert_eq!(
            parsed(&r),
            json!({"id": "r1", "sequence_id": 7, "status": "ok",
                   "outputs": {"OUTPUT": {"datatype": "FP32", "shape": [1, 1], "data": [3.0]}}})
        );
        // Keys in the documented order, outputs in config order.
        let two = ok(
            "x",
            Some(CorrId::Str("s".into())),
            vec![
                ("Z", tensor(&[1], TensorData::I32(vec![1]))),
                ("A", tensor(&[1], TensorData::I32(vec![2]))),
            ],
        );
        let line = json_line(&two);
        let pos = |k: &str| line.find(k).unwrap();
        assert!(
            pos("\"id\"") < pos("\"sequence_id\"") && pos("\"sequence_id\"") < pos("\"status\"")
        );
        assert!(pos("\"Z\"") < pos("\"A\""));
        assert_eq!(parsed(&two)["sequence_id"], json!("s"));
    }

    #[test]
    fn errors_and_requests_without_sequence() {
        let r = RunResult {
            id: "3".into(),
            sequence_id: None,
            outcome: Err("inference request batch-size must be <= 4 for 'm'".into()),
        };
        assert_eq!(
            parsed(&r),
            json!({"id": "3", "sequence_id": null, "status": "error",
                   "error": "inference request batch-size must be <= 4 for 'm'"})
        );
        let mut buf = Vec::new();
        write_json_line(&mut buf, &r).unwrap();
        write_json_line(&mut buf, &r).unwrap();
        assert_eq!(String::from_utf8(buf).unwrap().lines().count(), 2);
        assert_eq!(result_json(&r), parsed(&r));
    }

    #[test]
    fn every_data_type_prints_as_json() {
        let h = |x: f32| crate::inputs::codec::f32_to_f16(x);
        let b = |x: f32| crate::inputs::codec::f32_to_bf16(x);
        let cases = [
            (TensorData::Bool(vec![true, false]), json!([true, false])),
            (TensorData::U8(vec![0, 255]), json!([0, 255])),
            (TensorData::U64(vec![u64::MAX]), json!([u64::MAX])),
            (TensorData::I8(vec![-128]), json!([-128])),
            (TensorData::I64(vec![i64::MIN]), json!([i64::MIN])),
            (TensorData::F16(vec![h(1.5), h(-0.25)]), json!([1.5, -0.25])),
            (TensorData::Bf16(vec![b(2.0), b(-3.0)]), json!([2.0, -3.0])),
            (
                TensorData::F32(vec![0.1, f32::NAN, f32::INFINITY, f32::NEG_INFINITY]),
                json!([0.1, "nan", "inf", "-inf"]),
            ),
            (TensorData::F64(vec![0.1, f64::NAN]), json!([0.1, "nan"])),
            (
                TensorData::Bytes(vec![b"hi".to_vec(), vec![0xff, 0x00]]),
                json!(["hi", {"b64": "/wA="}]),
            ),
        ];
        for (data, want) in cases {
            let dtype = data.dtype();
            let t = tensor(&[data.len() as i64], data);
            let v = tensor_json(&t);
            assert_eq!(v["datatype"], json!(dtype.wire_name()));
            assert_eq!(v["data"], want, "{dtype}");
        }
        // FP32 is printed as the shortest decimal that reads back as the
        // same f32 (not its f64 expansion 0.10000000149011612).
        let t = tensor(&[1], TensorData::F32(vec![0.1]));
        assert!(serde_json::to_string(&tensor_json(&t))
            .unwrap()
            .contains("[0.1]"));
        // Every printed FP32 reads back as the same f32.
        let xs = vec![
            1.0 / 3.0,
            1e-45,
            3.402_823_5e38,
            -7.25e-10,
            16_777_217.0,
            0.0,
        ];
        let v = tensor_json(&tensor(&[6], TensorData::F32(xs.clone())));
        let text = serde_json::to_string(&v).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        for (x, y) in xs.iter().zip(back["data"].as_array().unwrap()) {
            assert_eq!(*x, y.as_f64().unwrap() as f32);
        }
        let e = tensor(&[0, 3], TensorData::empty(DataType::I32));
        assert_eq!(
            tensor_json(&e),
            json!({"datatype": "INT32", "shape": [0, 3], "data": []})
        );
    }

    #[test]
    fn the_table_abbreviates_outputs() {
        let results = vec![
            ok(
                "a1",
                Some(CorrId::Int(7)),
                vec![
                    (
                        "Output",
                        tensor(
                            &[1, 12],
                            TensorData::F32((0..12).map(|i| i as f32 + 0.5).collect()),
                        ),
                    ),
                    (
                        "Label",
                        tensor(&[1], TensorData::Bytes(vec![b"cat".to_vec()])),
                    ),
                ],
            ),
            RunResult {
                id: "a2".into(),
                sequence_id: None,
                outcome: Err("x".repeat(500)),
            },
        ];
        let text = render_table(&results, &TableOptions::default()).to_string();
        assert!(text.contains("a1") && text.contains("a2"));
        assert!(text.contains("Output FP32 [1,12]: 0.5, 1.5"), "{text}");
        assert!(text.contains("… (12 values)"), "{text}");
        assert!(!text.contains("8.5"), "only the first 8 values: {text}");
        assert!(text.contains("Label BYTES [1]: \"cat\""), "{text}");
        assert!(text.contains("error"));
        assert!(!text.contains(&"x".repeat(201)), "long errors are cut");
        assert_eq!(
            summarize(
                "o",
                &tensor(&[2], TensorData::Bytes(vec![vec![0xff], vec![]])),
                8
            ),
            "o BYTES [2]: <1 bytes>, \"\""
        );
    }

    #[test]
    fn the_table_shows_at_most_max_rows() {
        let results: Vec<RunResult> = (0..5)
            .map(|i| RunResult {
                id: format!("r{i}"),
                sequence_id: None,
                outcome: Err("x".into()),
            })
            .collect();
        let opts = TableOptions {
            max_rows: 3,
            ..TableOptions::default()
        };
        let text = render_table(&results, &opts).to_string();
        assert!(text.contains("r2") && !text.contains("r3"), "{text}");
    }

    #[test]
    fn the_table_shows_input_text_escaped() {
        let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J\nforged\u{202e}";
        let results = vec![
            ok(
                hostile,
                Some(CorrId::Str(hostile.into())),
                vec![(
                    hostile,
                    tensor(
                        &[1],
                        TensorData::Bytes(vec![format!("say \"{hostile}\"").into_bytes()]),
                    ),
                )],
            ),
            RunResult {
                id: "e".into(),
                sequence_id: None,
                outcome: Err(format!("model says {hostile}")),
            },
        ];
        let text = render_table(&results, &TableOptions::default()).to_string();
        assert!(
            !text
                .chars()
                .any(|c| c != '\n' && crate::text::display::needs_escape(c)),
            "{text:?}"
        );
        assert!(!text.contains("\nforged"), "no forged line: {text}");
        assert!(text.contains("\\u{1b}]0;pwned\\u{7}"), "{text}");
        assert!(text.contains("\\nforged\\u{202e}"), "{text}");
        assert!(text.contains("\"say \\\"\\u{1b}"), "{text}");
    }
}
