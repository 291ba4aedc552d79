//! The body of an inference request, built once per run (like
//! perf_analyzer, the same tensors go with every request): inputs as JSON
//! arrays or with the binary tensor data extension, outputs asked for as
//! binary or JSON.

use super::model::{check_size, check_tensor_size, generated_element_size, ModelInfo};
use super::rng::Rng;
use crate::inputs::codec::{encode_le, f64_to_bf16};
use crate::inputs::data_file;
use crate::inputs::json::{json_values, values_from_json};
use crate::tensor::DataType;
use bytes::Bytes;
use serde_json::{json, Map, Value};

/// Where input values come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputData {
    /// Seeded pseudo-random values: small non-negative integers, floats in
    /// [0, 1), 16-character lowercase strings.
    Random,
    /// Zeros (empty strings for BYTES).
    Zero,
}

impl InputData {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "random" => Ok(InputData::Random),
            "zero" => Ok(InputData::Zero),
            other => Err(format!(
                "--input-data '{other}' is not 'random', 'zero' or a JSON file"
            )),
        }
    }
}

/// A ready request body.
#[derive(Debug, Clone, Default)]
pub struct Body {
    /// Shared, not copied, by the prepared requests.
    pub bytes: Bytes,
    /// Length of the JSON header when binary tensors follow it
    /// (`Inference-Header-Content-Length`).
    pub header_len: Option<usize>,
    /// The JSON header, for requests that add parameters to it.
    pub header: Map<String, Value>,
}

impl Body {
    /// The body with request-level `parameters` added (sequence id and
    /// flags), and its header length.
    pub fn with_parameters(&self, params: &Map<String, Value>) -> (Vec<u8>, Option<usize>) {
        let mut header = self.header.clone();
        let p = header
            .entry("parameters")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(p) = p {
            for (k, v) in params {
                p.insert(k.clone(), v.clone());
            }
        }
        let mut bytes = serde_json::to_vec(&header).expect("JSON serialises");
        match self.header_len {
            Some(n) => {
                let len = bytes.len();
                bytes.extend_from_slice(&self.bytes[n..]);
                (bytes, Some(len))
            }
            None => (bytes, None),
        }
    }

    pub fn content_type(&self) -> &'static str {
        if self.header_len.is_some() {
            "application/octet-stream"
        } else {
            "application/json"
        }
    }
}

/// Options of [`build`].
#[derive(Debug, Clone, Copy)]
pub struct BodyOptions {
    pub batch: u64,
    pub data: InputData,
    pub seed: u64,
    pub binary_inputs: bool,
    pub binary_outputs: bool,
    /// `--max-input-bytes`: the largest input tensor built, as sent.
    pub max_input_bytes: u64,
}

/// One generated tensor: raw little-endian bytes (BYTES with 4-byte length
/// prefixes) and, with `json`, the same values as JSON.
fn generate(
    dt: DataType,
    n: usize,
    data: InputData,
    rng: &mut Rng,
    json: bool,
) -> (Vec<u8>, Vec<Value>) {
    // the caller checked the size (`--max-input-bytes`); JSON values only
    // when they are sent (they take several times the raw bytes)
    let mut raw = Vec::with_capacity(n.saturating_mul(dt.element_size().unwrap_or(4 + 16)));
    let mut js = Vec::with_capacity(if json { n } else { 0 });
    let zero = data == InputData::Zero;
    for _ in 0..n {
        let small = if zero { 0 } else { rng.below(16) };
        let unit = if zero { 0.0 } else { rng.next_f64() };
        match dt {
            DataType::Bool => {
                let b = small % 2;
                raw.push(b as u8);
                if json {
                    js.push(Value::Bool(b == 1));
                }
            }
            DataType::U8 => {
                raw.push(small as u8);
                if json {
                    js.push(json!(small));
                }
            }
            DataType::I8 => {
                raw.push(small as i8 as u8);
                if json {
                    js.push(json!(small));
                }
            }
            DataType::U16 | DataType::I16 => {
                raw.extend_from_slice(&(small as u16).to_le_bytes());
                if json {
                    js.push(json!(small));
                }
            }
            DataType::U32 | DataType::I32 => {
                raw.extend_from_slice(&(small as u32).to_le_bytes());
                if json {
                    js.push(json!(small));
                }
            }
            DataType::U64 | DataType::I64 => {
                raw.extend_from_slice(&small.to_le_bytes());
                if json {
                    js.push(json!(small));
                }
            }
            DataType::F32 => {
                let v = unit as f32;
                raw.extend_from_slice(&v.to_le_bytes());
                if json {
                    js.push(json!(v));
                }
            }
            DataType::F64 => {
                raw.extend_from_slice(&unit.to_le_bytes());
                if json {
                    js.push(json!(unit));
                }
            }
            DataType::F16 => {
                // exponent 0..14 (values below 1), any mantissa
                let bits: u16 = if zero {
                    0
                } else {
                    ((rng.below(15) as u16) << 10) | rng.below(1024) as u16
                };
                raw.extend_from_slice(&bits.to_le_bytes());
                if json {
                    js.push(Value::Null);
                }
            }
            DataType::Bf16 => {
                // In [0, 1): never beyond the range.
                let bits = f64_to_bf16(unit).unwrap_or_default();
                raw.extend_from_slice(&bits.to_le_bytes());
                if json {
                    js.push(Value::Null);
                }
            }
            DataType::Bytes => {
                let s: String = if zero {
                    String::new()
                } else {
                    (0..16)
                        .map(|_| (b'a' + rng.below(26) as u8) as char)
                        .collect()
                };
                raw.extend_from_slice(&(s.len() as u32).to_le_bytes());
                raw.extend_from_slice(s.as_bytes());
                if json {
                    js.push(Value::String(s));
                }
            }
        }
    }
    (raw, js)
}

/// Builds the request body for `info` (shapes already resolved).
pub fn build(info: &ModelInfo, opt: BodyOptions) -> Result<Body, String> {
    let mut rng = Rng::new(opt.seed);
    let mut inputs = Vec::new();
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    for input in &info.inputs {
        let mut shape = Vec::new();
        if info.max_batch_size > 0 {
            shape.push(opt.batch as i64);
        }
        shape.extend_from_slice(&input.dims);
        // checked before anything is allocated
        check_tensor_size(
            &input.name,
            input.datatype,
            &shape,
            generated_element_size(input.datatype, opt.binary_inputs),
            opt.max_input_bytes,
        )?;
        let n = crate::tensor::element_count(&shape)
            .ok_or_else(|| format!("input '{}': shape {shape:?} is too large", input.name))?;
        let (raw, values) = generate(input.datatype, n, opt.data, &mut rng, !opt.binary_inputs);
        let mut t = Map::new();
        t.insert("name".into(), json!(input.name));
        t.insert("shape".into(), json!(shape));
        t.insert("datatype".into(), json!(input.datatype.wire_name()));
        if opt.binary_inputs {
            t.insert("parameters".into(), json!({"binary_data_size": raw.len()}));
            chunks.push(raw);
        } else {
            if matches!(input.datatype, DataType::F16 | DataType::Bf16) {
                return Err(format!(
                    "input '{}' is {}, which JSON cannot carry; use --input-tensor-format binary",
                    input.name, input.datatype
                ));
            }
            t.insert("data".into(), Value::Array(values));
        }
        inputs.push(Value::Object(t));
    }
    let mut req = Map::new();
    req.insert("inputs".into(), Value::Array(inputs));
    if opt.binary_outputs {
        req.insert("parameters".into(), json!({"binary_data_output": true}));
    } else if !info.outputs.is_empty() {
        let outs: Vec<Value> = info
            .outputs
            .iter()
            .map(|o| json!({"name": o, "parameters": {"binary_data": false}}))
            .collect();
        req.insert("outputs".into(), Value::Array(outs));
    }
    let mut bytes = serde_json::to_vec(&req).expect("JSON serialises");
    let header_len = if opt.binary_inputs {
        let n = bytes.len();
        for c in chunks {
            bytes.extend_from_slice(&c);
        }
        Some(n)
    } else {
        None
    };
    Ok(Body {
        bytes: Bytes::from(bytes),
        header_len,
        header: req,
    })
}

/// `--input-data FILE`: perf_analyzer's input-data JSON,
/// `{"data": [ENTRY, ...]}` or, for sequence models, `{"data": [[ENTRY,
/// ...], ...]}` (one stream of steps per sequence). An entry maps input
/// names to a flat or nested array of values, to `{"content": VALUES,
/// "shape": [dims without the batch dim]}`, or to `{"b64": "..."}` (the
/// raw little-endian bytes; BYTES elements with their 4-byte length
/// prefixes).
#[derive(Debug, Clone)]
pub struct DataFile {
    /// The file, as named on the command line (for messages).
    pub name: String,
    /// Per stream, its entries with their JSON paths (`data[1][0]`).
    streams: Vec<Vec<(String, Map<String, Value>)>>,
}

impl DataFile {
    /// Parses the document (the entries are checked against the model by
    /// [`DataFile::bodies`]).
    pub fn parse(name: &str, text: &str) -> Result<Self, String> {
        let doc: Value =
            serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?;
        let data = data_file::read(&doc).map_err(|e| format!("{name}: {e}"))?;
        let streams = data
            .streams
            .into_iter()
            .map(|s| s.into_iter().map(|e| (e.path, e.tensors.clone())).collect())
            .collect();
        Ok(DataFile {
            name: name.to_string(),
            streams,
        })
    }

    /// The number of entries per stream.
    pub fn stream_lengths(&self) -> Vec<usize> {
        self.streams.iter().map(Vec::len).collect()
    }

    /// One request body per entry (streams one after the other), and per
    /// stream the indexes of its bodies.
    pub fn bodies(
        &self,
        info: &ModelInfo,
        batch: u64,
        binary_inputs: bool,
        binary_outputs: bool,
        max_input_bytes: u64,
    ) -> Result<(Vec<Body>, Vec<Vec<usize>>), String> {
        let mut bodies = Vec::new();
        let mut index = Vec::new();
        for stream in &self.streams {
            let mut ids = Vec::new();
            for (path, e) in stream {
                let at = format!("{}: {path}", self.name);
                let body = entry_body(
                    info,
                    e,
                    batch,
                    binary_inputs,
                    binary_outputs,
                    max_input_bytes,
                )
                .map_err(|m| format!("{at}: {m}"))?;
                ids.push(bodies.len());
                bodies.push(body);
            }
            index.push(ids);
        }
        Ok((bodies, index))
    }
}

/// The request body of one data entry.
fn entry_body(
    info: &ModelInfo,
    e: &Map<String, Value>,
    batch: u64,
    binary_inputs: bool,
    binary_outputs: bool,
    max_input_bytes: u64,
) -> Result<Body, String> {
    let names: Vec<&str> = info.inputs.iter().map(|i| i.name.as_str()).collect();
    if let Some(k) = e.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(format!(
            "'{k}' is not an input of the model (inputs: {})",
            names.join(", ")
        ));
    }
    let mut tensors = Vec::new();
    for input in &info.inputs {
        let v = e
            .get(&input.name)
            .ok_or_else(|| format!("input '{}' is missing", input.name))?;
        let what = format!("input '{}'", input.name);
        let values = values_from_json(v, input.datatype).map_err(|e| {
            if e.path.is_empty() {
                format!("{what}: {}", e.message)
            } else {
                format!(
                    "{what}: at {}: {}",
                    e.path.trim_start_matches('.'),
                    e.message
                )
            }
        })?;
        // The entry's shape, else the model's (after --shape); nested
        // arrays are taken flat, as perf_analyzer does.
        let dims = match values.shape {
            Some(s) => s,
            None if input.dims.iter().any(|d| *d < 0) => {
                return Err(format!(
                "{what} has a variable dimension ({:?}): give \"shape\" in the entry or --shape",
                input.dims
            ))
            }
            None => input.dims.clone(),
        };
        let want = crate::tensor::element_count(&dims)
            .ok_or_else(|| format!("{what}: shape {dims:?} is too large"))?;
        let got = values.data.len();
        if got != want {
            return Err(format!(
                "{what} has {got} values, its shape {dims:?} needs {want}"
            ));
        }
        let data = values.data;
        let mut shape = Vec::new();
        if info.max_batch_size > 0 {
            shape.push(batch as i64);
        }
        shape.extend_from_slice(&dims);
        tensors.push((input, shape, data));
    }
    let mut inputs = Vec::new();
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    // The same values for every element of the batch.
    let copies = batch.max(1) as usize;
    for (input, shape, data) in tensors {
        // the entry's values repeated for the batch: checked before the
        // copies are made
        let one = if binary_inputs {
            Some(encode_le(&data))
        } else {
            None
        };
        let per_copy = match &one {
            Some(raw) => raw.len() as u64,
            None => (data.len() as u64).saturating_mul(super::model::JSON_BYTES_PER_ELEMENT),
        };
        check_size(
            &input.name,
            input.datatype,
            &shape,
            per_copy.checked_mul(copies as u64),
            max_input_bytes,
        )?;
        let mut t = Map::new();
        t.insert("name".into(), json!(input.name));
        t.insert("shape".into(), json!(shape));
        t.insert("datatype".into(), json!(input.datatype.wire_name()));
        if let Some(one) = one {
            let raw = one.repeat(copies);
            t.insert("parameters".into(), json!({"binary_data_size": raw.len()}));
            chunks.push(raw);
        } else {
            let values = json_values(&data).ok_or_else(|| {
                format!(
                    "input '{}' is {}, which JSON cannot carry; use --input-tensor-format binary",
                    input.name, input.datatype
                )
            })?;
            t.insert(
                "data".into(),
                Value::Array(
                    values
                        .iter()
                        .cycle()
                        .take(values.len() * copies)
                        .cloned()
                        .collect(),
                ),
            );
        }
        inputs.push(Value::Object(t));
    }
    let mut req = Map::new();
    req.insert("inputs".into(), Value::Array(inputs));
    if binary_outputs {
        req.insert("parameters".into(), json!({"binary_data_output": true}));
    } else if !info.outputs.is_empty() {
        let outs: Vec<Value> = info
            .outputs
            .iter()
            .map(|o| json!({"name": o, "parameters": {"binary_data": false}}))
            .collect();
        req.insert("outputs".into(), Value::Array(outs));
    }
    let mut bytes = serde_json::to_vec(&req).expect("JSON serialises");
    let header_len = binary_inputs.then(|| {
        let n = bytes.len();
        for c in chunks {
            bytes.extend_from_slice(&c);
        }
        n
    });
    Ok(Body {
        bytes: Bytes::from(bytes),
        header_len,
        header: req,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::model::InputSpec;

    fn info(dt: DataType) -> ModelInfo {
        ModelInfo {
            name: "m".into(),
            max_batch_size: 8,
            inputs: vec![InputSpec {
                name: "X".into(),
                datatype: dt,
                dims: vec![3],
                optional: false,
            }],
            outputs: vec!["Y".into()],
            output_sizes: vec![Some((3, 4))],
            sequence: false,
            decoupled: false,
            has_config: true,
        }
    }

    fn opts(binary: bool) -> BodyOptions {
        BodyOptions {
            batch: 2,
            data: InputData::Random,
            seed: 1,
            binary_inputs: binary,
            binary_outputs: binary,
            max_input_bytes: 1 << 20,
        }
    }

    #[test]
    fn json_body() {
        let b = build(&info(DataType::F32), opts(false)).unwrap();
        assert!(b.header_len.is_none());
        let v: Value = serde_json::from_slice(&b.bytes).unwrap();
        assert_eq!(v["inputs"][0]["shape"], json!([2, 3]));
        assert_eq!(v["inputs"][0]["data"].as_array().unwrap().len(), 6);
        assert_eq!(v["outputs"][0]["name"], "Y");
        assert!(build(&info(DataType::F16), opts(false)).is_err());
    }

    #[test]
    fn binary_body() {
        let b = build(&info(DataType::I64), opts(true)).unwrap();
        let h = b.header_len.unwrap();
        let v: Value = serde_json::from_slice(&b.bytes[..h]).unwrap();
        assert_eq!(v["inputs"][0]["parameters"]["binary_data_size"], 48);
        assert_eq!(b.bytes.len() - h, 48);
        assert_eq!(v["parameters"]["binary_data_output"], true);
        let s = build(&info(DataType::Bytes), opts(true)).unwrap();
        // 6 strings of 16 bytes with 4-byte prefixes
        assert_eq!(s.bytes.len() - s.header_len.unwrap(), 6 * 20);
    }

    #[test]
    fn added_parameters() {
        let b = build(&info(DataType::F32), opts(true)).unwrap();
        let mut p = Map::new();
        p.insert("sequence_id".into(), json!(7));
        let (bytes, h) = b.with_parameters(&p);
        let h = h.unwrap();
        let v: Value = serde_json::from_slice(&bytes[..h]).unwrap();
        assert_eq!(v["parameters"]["sequence_id"], 7);
        assert_eq!(v["parameters"]["binary_data_output"], true);
        assert_eq!(bytes[h..], b.bytes[b.header_len.unwrap()..]);
        let j = build(&info(DataType::F32), opts(false)).unwrap();
        let (bytes, h) = j.with_parameters(&p);
        assert!(h.is_none());
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["parameters"]["sequence_id"], 7);
        assert_eq!(v["inputs"][0]["data"].as_array().unwrap().len(), 6);
    }

    #[test]
    fn input_sizes_are_checked_before_allocating() {
        let mut m = info(DataType::F32);
        m.inputs[0].dims = vec![1_000_000_000_000];
        let mut o = opts(true);
        o.batch = 1;
        let e = build(&m, o).unwrap_err();
        assert!(
            e.contains("input 'X'")
                && e.contains("[1, 1000000000000]")
                && e.contains("--max-input-bytes"),
            "{e}"
        );
        // the batch size sent, not max_batch_size (8)
        m.inputs[0].dims = vec![1000];
        o.max_input_bytes = 4000;
        let b = build(&m, o).unwrap();
        assert_eq!(b.bytes.len() - b.header_len.unwrap(), 4000);
        o.batch = 2;
        assert!(build(&m, o).unwrap_err().contains("8000 bytes"));
        // as JSON, 32 bytes per element
        o.batch = 1;
        o.binary_inputs = false;
        assert!(build(&m, o).unwrap_err().contains("32000 bytes"));
        o.max_input_bytes = 32000;
        assert!(build(&m, o).is_ok());
    }

    #[test]
    fn data_entries_repeated_for_the_batch_are_checked() {
        let file = DataFile::parse("d.json", r#"{"data": [{"X": [1, 2, 3]}]}"#).unwrap();
        let m = info(DataType::F32);
        assert!(file.bodies(&m, 8, true, true, 96).is_ok());
        let e = file.bodies(&m, 8, true, true, 95).unwrap_err();
        assert!(
            e.contains("d.json: data[0]: input 'X'") && e.contains("96 bytes"),
            "{e}"
        );
    }

    #[test]
    fn seeded_and_zero() {
        let a = build(&info(DataType::F32), opts(true)).unwrap();
        let b = build(&info(DataType::F32), opts(true)).unwrap();
        assert_eq!(a.bytes, b.bytes);
        let mut o = opts(true);
        o.seed = 2;
        assert_ne!(build(&info(DataType::F32), o).unwrap().bytes, a.bytes);
        o.data = InputData::Zero;
        let z = build(&info(DataType::F32), o).unwrap();
        assert!(z.bytes[z.header_len.unwrap()..].iter().all(|b| *b == 0));
    }

    /// The raw bytes of input X in the binary body of one data entry.
    fn entry_bytes(dt: DataType, value: &str) -> Result<Vec<u8>, String> {
        let file = DataFile::parse("d.json", &format!(r#"{{"data": [{{"X": {value}}}]}}"#))?;
        let mut m = info(dt);
        m.max_batch_size = 0;
        let (bodies, _) = file.bodies(&m, 1, true, true, 1 << 20)?;
        let b = &bodies[0];
        Ok(b.bytes[b.header_len.unwrap()..].to_vec())
    }

    #[test]
    fn data_file_values_are_encoded_as_run_encodes_them() {
        let halves = |raw: Vec<u8>| -> Vec<u16> {
            raw.chunks(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        };
        // BF16 rounds to nearest even (it used to truncate: 0x3f80).
        let x = 1.0 + 2f64.powi(-8) + 2f64.powi(-40);
        assert_eq!(
            halves(entry_bytes(DataType::Bf16, &format!("[{x:?}, 1, -2]")).unwrap()),
            [0x3f81, 0x3f80, 0xc000]
        );
        // FP16 rounds once from the JSON number (it used to give 0x3c00).
        assert_eq!(
            halves(entry_bytes(DataType::F16, "[1.0004882812509095, 0.5, 65504]").unwrap()),
            [0x3c01, 0x3800, 0x7bff]
        );
        // Values beyond the type are refused, naming value and type.
        let e = entry_bytes(DataType::F16, "[1, 2, 70000]").unwrap_err();
        assert!(
            e.contains("d.json: data[0]: input 'X': at [2]: 70000 does not fit FP16"),
            "{e}"
        );
        let e = entry_bytes(DataType::Bf16, "[1, 2, 1e39]").unwrap_err();
        assert!(e.contains("at [2]: 1e+39 does not fit BF16"), "{e}");
        let e = entry_bytes(DataType::F32, "[1, 2, 1e40]").unwrap_err();
        assert!(e.contains("at [2]: 1e+40 does not fit FP32"), "{e}");
        // Integral floats are integers, as for run.
        assert_eq!(
            entry_bytes(DataType::I32, "[1, 3.0, -2]").unwrap(),
            [1, 0, 0, 0, 3, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff]
        );
    }
}
