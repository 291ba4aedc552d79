//! What a load test needs to know about a model, from the model metadata
//! and (when the server has Triton's configuration extension) its config.

use crate::tensor::DataType;
use serde_json::Value;

/// One input, its dims without the batch dim.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    pub name: String,
    pub datatype: DataType,
    pub dims: Vec<i64>,
    /// The config says `optional: true` (false without a config).
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    /// 0: requests have no batch dim.
    pub max_batch_size: u64,
    pub inputs: Vec<InputSpec>,
    pub outputs: Vec<String>,
    /// Per output (in metadata order), its elements per batch element and
    /// the bytes of one element when its dims and datatype are fixed;
    /// `None` for variable dims, BYTES or an unknown datatype.
    pub output_sizes: Vec<Option<(u64, u64)>>,
    /// The config has `sequence_batching`.
    pub sequence: bool,
    /// `model_transaction_policy.decoupled`.
    pub decoupled: bool,
    /// The config endpoint answered.
    pub has_config: bool,
}

/// An integer written as a JSON number or a numeric string (proto3 JSON
/// prints 64-bit fields as strings).
pub fn lenient_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn dims_of(v: Option<&Value>) -> Result<Vec<i64>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|d| {
                lenient_int(d).ok_or_else(|| match d {
                    // a whole number beyond i64 (dims are int64 in the protocol)
                    Value::Number(n) if n.is_u64() => {
                        format!("dimension {d} is too large (at most {})", i64::MAX)
                    }
                    Value::String(t) if is_whole(t) => {
                        format!("dimension {d} is too large (at most {})", i64::MAX)
                    }
                    _ => format!("dimension {d} is not an integer"),
                })
            })
            .collect(),
        Some(other) => Err(format!("dims {other} is not an array")),
    }
}

/// Digits only, with an optional sign: a whole number, however large.
fn is_whole(t: &str) -> bool {
    let t = t.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The largest inference answer read when `--max-response-bytes` is not
/// given is 4 times the outputs' expected size at the batch size sent, and
/// at least this (outputs with variable dims or strings have no expected
/// size).
pub const MIN_DEFAULT_RESPONSE_BYTES: u64 = 64 << 20;

/// Bytes per element of an output asked for as JSON: a number as JSON
/// text with its separator.
pub const JSON_BYTES_PER_ELEMENT: u64 = 32;

/// Bytes per element of a generated input of fixed-size elements as
/// sent: its size; as JSON at least [`JSON_BYTES_PER_ELEMENT`]. (Generated
/// BYTES elements take the size of the strings `--string-length` and
/// `--string-data` make: `inputs::Strings::element_size`.)
pub fn generated_element_size(dt: DataType, binary: bool) -> u64 {
    let raw = dt.element_size().map_or(4 + 16, |n| n as u64);
    if binary {
        raw
    } else {
        raw.max(JSON_BYTES_PER_ELEMENT)
    }
}

/// The elements and bytes per element of one output, when fixed.
fn output_size(datatype: Option<&str>, dims: &[i64]) -> Option<(u64, u64)> {
    let size = DataType::parse(datatype?)?.element_size()? as u64;
    let elements = dims.iter().try_fold(1u64, |acc, &d| {
        u64::try_from(d).ok().and_then(|d| acc.checked_mul(d))
    })?;
    Some((elements, size))
}

fn datatype(name: &str) -> Result<DataType, String> {
    DataType::parse(name).ok_or_else(|| format!("unknown datatype '{name}'"))
}

impl ModelInfo {
    /// From the model metadata and, when present, the config. Without a
    /// config the first metadata dim is a batch dim only when `batched`.
    pub fn new(meta: &Value, config: Option<&Value>, batched: bool) -> Result<Self, String> {
        let name = meta["name"].as_str().unwrap_or_default().to_string();
        let meta_inputs = meta["inputs"]
            .as_array()
            .ok_or("model metadata has no 'inputs' array")?;
        let outputs = meta["outputs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|o| o["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let mut info = ModelInfo {
            name,
            max_batch_size: 0,
            inputs: Vec::new(),
            outputs,
            output_sizes: Vec::new(),
            sequence: false,
            decoupled: false,
            has_config: config.is_some(),
        };
        match config {
            Some(cfg) => {
                info.max_batch_size = cfg
                    .get("max_batch_size")
                    .and_then(lenient_int)
                    .unwrap_or(0)
                    .max(0) as u64;
                info.sequence = cfg.get("sequence_batching").is_some_and(|v| v.is_object());
                info.decoupled = cfg["model_transaction_policy"]["decoupled"]
                    .as_bool()
                    .unwrap_or(false);
                let cfg_inputs = cfg["input"].as_array().cloned().unwrap_or_default();
                for m in meta_inputs {
                    let spec = Self::meta_input(m, info.max_batch_size > 0)?;
                    // the config's dims are the ones without the batch dim;
                    // prefer them (reshape makes metadata differ)
                    let from_cfg = cfg_inputs
                        .iter()
                        .find(|c| c["name"].as_str() == Some(spec.name.as_str()));
                    let dims = match from_cfg {
                        Some(c) if c.get("dims").is_some() && c.get("reshape").is_none() => {
                            dims_of(c.get("dims"))?
                        }
                        _ => spec.dims.clone(),
                    };
                    let optional = from_cfg.is_some_and(|c| c["optional"].as_bool() == Some(true));
                    info.inputs.push(InputSpec {
                        dims,
                        optional,
                        ..spec
                    });
                }
            }
            None => {
                for m in meta_inputs {
                    info.inputs.push(Self::meta_input(m, batched)?);
                }
                if batched {
                    info.max_batch_size = u64::MAX;
                }
            }
        }
        // the config's output dims (without the batch dim), else the
        // metadata's; anything unreadable is simply not a fixed size
        let cfg_outputs = config
            .and_then(|c| c["output"].as_array())
            .map(Vec::as_slice)
            .unwrap_or_default();
        let strip_batch = info.max_batch_size > 0;
        for o in meta["outputs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let Some(name) = o["name"].as_str() else {
                continue;
            };
            let from_cfg = cfg_outputs
                .iter()
                .find(|c| c["name"].as_str() == Some(name) && c.get("reshape").is_none());
            let dims = match from_cfg {
                Some(c) => dims_of(c.get("dims")).ok(),
                None => dims_of(o.get("shape")).ok().map(|mut d| {
                    if strip_batch && !d.is_empty() {
                        d.remove(0);
                    }
                    d
                }),
            };
            info.output_sizes
                .push(dims.and_then(|d| output_size(o["datatype"].as_str(), &d)));
        }
        Ok(info)
    }

    /// The default limit of an inference answer at batch size `batch`:
    /// 4 times the outputs' size (elements times element size, or
    /// [`JSON_BYTES_PER_ELEMENT`] as JSON), at least
    /// [`MIN_DEFAULT_RESPONSE_BYTES`].
    pub fn default_response_limit(&self, batch: u64, binary_outputs: bool) -> u64 {
        let expected = self
            .output_sizes
            .iter()
            .flatten()
            .map(|&(elements, size)| {
                let per = if binary_outputs {
                    size
                } else {
                    JSON_BYTES_PER_ELEMENT
                };
                elements.saturating_mul(per).saturating_mul(batch.max(1))
            })
            .fold(0u64, u64::saturating_add);
        expected.saturating_mul(4).max(MIN_DEFAULT_RESPONSE_BYTES)
    }

    fn meta_input(m: &Value, strip_batch: bool) -> Result<InputSpec, String> {
        let name = m["name"]
            .as_str()
            .ok_or("a metadata input has no name")?
            .to_string();
        let dt = m["datatype"]
            .as_str()
            .ok_or_else(|| format!("input '{name}' has no datatype"))?;
        let mut dims = dims_of(m.get("shape")).map_err(|e| format!("input '{name}': {e}"))?;
        if strip_batch && !dims.is_empty() {
            dims.remove(0);
        }
        Ok(InputSpec {
            datatype: datatype(dt).map_err(|e| format!("input '{name}': {e}"))?,
            name,
            dims,
            optional: false,
        })
    }

    /// Applies `--shape NAME:D1,D2` overrides and, with `require_fixed`,
    /// checks that no variable dim is left.
    pub fn apply_shapes(&mut self, shapes: &[String], require_fixed: bool) -> Result<(), String> {
        for s in shapes {
            let (name, dims) = s
                .rsplit_once(':')
                .ok_or_else(|| format!("--shape '{s}' is not NAME:D1,D2,..."))?;
            let dims: Vec<i64> = dims
                .split(',')
                .map(|d| {
                    let d = d.trim();
                    match d.parse::<i64>() {
                        Ok(v) if v >= 0 => Ok(v),
                        Err(_) if is_whole(d) && !d.starts_with('-') => Err(format!(
                            "--shape '{s}': dim {d} is too large (at most {})",
                            i64::MAX
                        )),
                        _ => Err(format!("--shape '{s}': dims must be whole numbers >= 0")),
                    }
                })
                .collect::<Result<_, _>>()?;
            let names: Vec<String> = self.inputs.iter().map(|i| i.name.clone()).collect();
            let input = self
                .inputs
                .iter_mut()
                .find(|i| i.name == name)
                .ok_or_else(|| {
                    format!(
                        "--shape names '{name}', which is not an input of the model (inputs: {})",
                        names.join(", ")
                    )
                })?;
            input.dims = dims;
        }
        let shown = |dims: &[i64]| {
            dims.iter()
                .map(|d| {
                    if *d < 0 {
                        "N".to_string()
                    } else {
                        d.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        };
        for i in self.inputs.iter().filter(|_| require_fixed) {
            if i.dims.iter().any(|d| *d < 0) {
                // without the config the batch dim is only known with
                // --batched: a leading -1 is likely one
                let batched_hint = if !self.has_config
                    && self.max_batch_size == 0
                    && i.dims.first() == Some(&-1)
                {
                    format!(
                        "; if its first dim is the batch dim, pass --batched and give the rest, e.g. --batched --shape {}:{}",
                        i.name,
                        shown(&i.dims[1..])
                    )
                } else {
                    String::new()
                };
                return Err(format!(
                    "input '{}' has a variable dimension ({:?}); give its shape without the batch dimension with --shape {}:{}{batched_hint}",
                    i.name,
                    i.dims,
                    i.name,
                    shown(&i.dims)
                ));
            }
        }
        Ok(())
    }

    /// Checks the batch size against the model.
    pub fn check_batch(&self, batch: u64) -> Result<(), String> {
        if batch == 0 {
            return Err("batch size must be at least 1".into());
        }
        if batch > 1 && self.max_batch_size == 0 {
            return Err(format!(
                "model '{}' does not batch (max_batch_size 0{}); use -b 1",
                self.name,
                if self.has_config {
                    ""
                } else {
                    "; pass --batched if its first dim is a batch dim"
                }
            ));
        }
        if batch > self.max_batch_size && self.max_batch_size > 0 {
            return Err(format!(
                "batch size {batch} is above the model's max_batch_size {}",
                self.max_batch_size
            ));
        }
        Ok(())
    }
}

/// Checks that a tensor of `shape` with `element_bytes` per element takes
/// at most `limit` bytes (overflow counts as above it); the message names
/// the input, its shape, the size, the limit and the flag.
pub fn check_tensor_size(
    name: &str,
    datatype: DataType,
    shape: &[i64],
    element_bytes: u64,
    limit: u64,
) -> Result<(), String> {
    let bytes = shape.iter().try_fold(element_bytes, |acc, &d| {
        acc.checked_mul(u64::try_from(d).unwrap_or(0))
    });
    check_size(name, datatype, shape, bytes, limit)
}

/// As [`check_tensor_size`], for a size already computed (`None`: it
/// overflowed).
pub fn check_size(
    name: &str,
    datatype: DataType,
    shape: &[i64],
    bytes: Option<u64>,
    limit: u64,
) -> Result<(), String> {
    if bytes.is_some_and(|b| b <= limit) {
        return Ok(());
    }
    let size = match bytes {
        Some(b) => format!("{b} bytes"),
        None => format!("more than {} bytes", u64::MAX),
    };
    Err(format!(
        "input '{name}' ({datatype} with shape {shape:?}) takes {size}, above the limit of {limit} bytes per input tensor (--max-input-bytes raises it)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta() -> Value {
        json!({"name": "m", "platform": "python",
               "inputs": [{"name": "X", "datatype": "FP32", "shape": [-1, -1]},
                          {"name": "S", "datatype": "BYTES", "shape": [-1, 1]}],
               "outputs": [{"name": "Y", "datatype": "FP32", "shape": [-1, -1]}]})
    }

    #[test]
    fn config_gives_batch_and_dims() {
        let cfg = json!({"max_batch_size": "8", "input": [{"name": "X", "data_type": "TYPE_FP32", "dims": ["4"]}],
                         "sequence_batching": {}});
        let info = ModelInfo::new(&meta(), Some(&cfg), false).unwrap();
        assert_eq!(info.max_batch_size, 8);
        assert!(info.sequence);
        assert_eq!(info.inputs[0].dims, vec![4]);
        assert_eq!(info.inputs[1].dims, vec![1]);
        assert_eq!(info.inputs[1].datatype, DataType::Bytes);
        assert_eq!(info.outputs, vec!["Y"]);
    }

    #[test]
    fn metadata_only_and_shapes() {
        let mut info = ModelInfo::new(&meta(), None, false).unwrap();
        assert_eq!(info.inputs[0].dims, vec![-1, -1]);
        let err = info.apply_shapes(&[], true).unwrap_err();
        assert!(err.contains("--shape X:"), "{err}");
        assert!(err.contains("--batched --shape X:N"), "{err}");
        assert!(info.check_batch(2).is_err());
        let fixed_first =
            json!({"name": "m", "inputs": [{"name": "X", "datatype": "FP32", "shape": [3, -1]}]});
        let mut f = ModelInfo::new(&fixed_first, None, false).unwrap();
        let err = f.apply_shapes(&[], true).unwrap_err();
        assert!(!err.contains("--batched"), "{err}");
        let mut b = ModelInfo::new(&meta(), None, true).unwrap();
        b.apply_shapes(&["X:3".into()], true).unwrap();
        assert_eq!(b.inputs[0].dims, vec![3]);
        assert!(b.check_batch(4).is_ok());
        assert!(b
            .apply_shapes(&["Q:3".into()], true)
            .unwrap_err()
            .contains("not an input"));
        assert!(b.apply_shapes(&["X:a".into()], true).is_err());
    }

    #[test]
    fn too_large_dims_are_named_as_such() {
        let mut info = ModelInfo::new(&meta(), None, false).unwrap();
        let e = info
            .apply_shapes(&["X:18446744073709551615,1".into()], true)
            .unwrap_err();
        assert!(e.contains("dim 18446744073709551615 is too large"), "{e}");
        assert!(!e.contains("non-negative") && !e.contains(">= 0"), "{e}");
        let e = info.apply_shapes(&["X:-3,1".into()], true).unwrap_err();
        assert!(e.contains("whole numbers >= 0"), "{e}");
        let cfg = json!({"max_batch_size": 1, "input": [{"name": "X", "dims": [18446744073709551615u64]}]});
        let e = ModelInfo::new(&meta(), Some(&cfg), false).unwrap_err();
        assert!(e.contains("18446744073709551615 is too large"), "{e}");
        let cfg = json!({"max_batch_size": 1, "input": [{"name": "X", "dims": ["99999999999999999999"]}]});
        let e = ModelInfo::new(&meta(), Some(&cfg), false).unwrap_err();
        assert!(e.contains("is too large"), "{e}");
    }

    #[test]
    fn tensor_sizes_are_checked_without_overflow() {
        let e =
            check_tensor_size("X", DataType::F32, &[1, 1_000_000_000_000], 4, 1 << 30).unwrap_err();
        assert!(
            e.contains("input 'X'")
                && e.contains("[1, 1000000000000]")
                && e.contains("4000000000000 bytes")
                && e.contains("1073741824")
                && e.contains("--max-input-bytes"),
            "{e}"
        );
        let e =
            check_tensor_size("X", DataType::F32, &[i64::MAX, i64::MAX], 4, 1 << 30).unwrap_err();
        assert!(e.contains("more than 18446744073709551615 bytes"), "{e}");
        assert!(check_tensor_size("X", DataType::F32, &[2, 3], 4, 24).is_ok());
        assert!(check_tensor_size("X", DataType::F32, &[2, 3], 4, 23).is_err());
    }

    #[test]
    fn default_response_limit_follows_the_outputs() {
        let meta = json!({"name": "m", "inputs": [],
            "outputs": [{"name": "Y", "datatype": "FP32", "shape": [-1, 1000, 1000]},
                        {"name": "S", "datatype": "BYTES", "shape": [-1, 1]}]});
        let cfg = json!({"max_batch_size": 64});
        let info = ModelInfo::new(&meta, Some(&cfg), false).unwrap();
        assert_eq!(info.output_sizes, vec![Some((1_000_000, 4)), None]);
        // small outputs: the floor
        assert_eq!(info.default_response_limit(1, true), 64 << 20);
        // 4 x 32 x 4 MB
        assert_eq!(info.default_response_limit(32, true), 4 * 32 * 4_000_000);
        // as JSON, 32 bytes per element
        assert_eq!(info.default_response_limit(2, false), 4 * 2 * 32_000_000);
        let huge = json!({"name": "m", "inputs": [],
            "outputs": [{"name": "Y", "datatype": "FP64", "shape": [-1, 4611686018427387904i64]}]});
        let info = ModelInfo::new(&huge, Some(&cfg), false).unwrap();
        assert_eq!(info.default_response_limit(8, true), u64::MAX);
    }
}
