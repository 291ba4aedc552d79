//! JSON ↔ tensor conversion: a request's tensor value (a flat or nested
//! list of values, `{"content": [...], "shape": [...]}`, or `{"b64": "..."}`
//! raw little-endian bytes) converted to an input's data type and shaped
//! to its dims, for `run` and `perf` alike; and tensor elements back as
//! JSON values (`perf`'s JSON request bodies).

use super::codec::{b64_decode, decode_le, f64_to_bf16, f64_to_f16};
use super::kind;
use crate::tensor::{element_count, DataType, Tensor, TensorData};
use serde_json::{json, Value};

/// One input the client supplies, from the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputSpec {
    pub name: String,
    pub dtype: DataType,
    /// Config dims, without the batch dimension.
    pub dims: Vec<i64>,
    pub optional: bool,
}

/// A problem inside one tensor value: `path` is relative to the value
/// (`[3]`, `.content[1][0]`, `.shape`), empty for the value itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueError {
    pub path: String,
    pub message: String,
}

impl ValueError {
    pub(crate) fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        ValueError {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// `.name`, or `["name"]` when the name is not a plain identifier.
pub fn json_member(name: &str) -> String {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ':');
    if plain {
        format!(".{name}")
    } else {
        format!("[{}]", Value::String(name.to_string()))
    }
}

/// The values of one JSON tensor value, converted to a data type, before
/// they are shaped.
#[derive(Debug, Clone, PartialEq)]
pub struct Values {
    pub data: TensorData,
    /// The value's `"shape"` member, as given.
    pub shape: Option<Vec<i64>>,
    /// The shape of nested arrays (more than one level), if no `"shape"`
    /// was given.
    pub nested: Option<Vec<i64>>,
}

/// Converts one JSON tensor value to the input's data type and shape (see
/// the module documentation for the accepted forms).
pub fn tensor_from_json(
    value: &Value,
    spec: &InputSpec,
    max_batch_size: i64,
) -> Result<Tensor, ValueError> {
    let v = values_from_json(value, spec.dtype)?;
    let shape = resolve_shape(v.data.len(), v.shape.or(v.nested), spec, max_batch_size)
        .map_err(|m| ValueError::at("", m))?;
    Tensor::new(shape, v.data).map_err(|e| ValueError::at("", e.to_string()))
}

/// Converts one JSON tensor value's elements to `dtype`, keeping the
/// shape it gives (if any) apart.
pub fn values_from_json(value: &Value, dtype: DataType) -> Result<Values, ValueError> {
    let (content, given, prefix) = match value {
        Value::Object(o) if o.contains_key("content") => {
            if let Some(k) = o.keys().find(|k| *k != "content" && *k != "shape") {
                return Err(ValueError::at(
                    "",
                    format!("unknown member \"{k}\" (expected \"content\" and \"shape\")"),
                ));
            }
            let shape = o
                .get("shape")
                .map(|s| parse_shape(s).map_err(|m| ValueError::at(".shape", m)))
                .transpose()?;
            (&o["content"], shape, ".content")
        }
        other => (other, None, ""),
    };
    let (data, nested) = match content {
        Value::Object(o) => {
            let b64 = match (o.get("b64"), o.len()) {
                (Some(Value::String(s)), 1) => s,
                _ => {
                    return Err(ValueError::at(
                        prefix,
                        "expected an array of values, {\"b64\": \"...\"} or \
                         {\"content\": ..., \"shape\": [...]}",
                    ))
                }
            };
            let bytes = b64_decode(b64).map_err(|m| ValueError::at(format!("{prefix}.b64"), m))?;
            let data =
                decode_le(dtype, &bytes).map_err(|m| ValueError::at(format!("{prefix}.b64"), m))?;
            (data, None)
        }
        _ => {
            let mut data = TensorData::empty(dtype);
            let shape = flatten(content, dtype, &mut data)
                .map_err(|e| ValueError::at(format!("{prefix}{}", e.path), e.message))?;
            // Nested arrays give the shape; a flat list is reshaped.
            (data, shape.filter(|s| s.len() > 1))
        }
    };
    let nested = if given.is_some() { None } else { nested };
    Ok(Values {
        data,
        shape: given,
        nested,
    })
}

/// Tensor elements as JSON values (BYTES as text, invalid UTF-8 replaced);
/// `None` for FP16 and BF16, which JSON tensors of the KServe v2 protocol
/// cannot carry.
pub fn json_values(data: &TensorData) -> Option<Vec<Value>> {
    fn all<T: Copy + Into<Value>>(v: &[T]) -> Vec<Value> {
        v.iter().map(|&x| x.into()).collect()
    }
    Some(match data {
        TensorData::Bool(v) => all(v),
        TensorData::U8(v) => all(v),
        TensorData::I8(v) => all(v),
        TensorData::U16(v) => all(v),
        TensorData::I16(v) => all(v),
        TensorData::U32(v) => all(v),
        TensorData::I32(v) => all(v),
        TensorData::U64(v) => all(v),
        TensorData::I64(v) => all(v),
        TensorData::F32(v) => v.iter().map(|&x| json!(x)).collect(),
        TensorData::F64(v) => v.iter().map(|&x| json!(x)).collect(),
        TensorData::F16(_) | TensorData::Bf16(_) => return None,
        TensorData::Bytes(v) => v
            .iter()
            .map(|b| Value::String(String::from_utf8_lossy(b).into_owned()))
            .collect(),
    })
}

fn parse_shape(v: &Value) -> Result<Vec<i64>, String> {
    let Value::Array(items) = v else {
        return Err(format!(
            "expected an array of dimensions, found {}",
            kind(v)
        ));
    };
    items
        .iter()
        .map(|d| match d.as_u64().and_then(|u| i64::try_from(u).ok()) {
            Some(u) => Ok(u),
            None => Err(format!(
                "dimensions must be non-negative integers, found {}",
                kind(d)
            )),
        })
        .collect()
}

/// Appends the scalars of a (possibly nested) JSON array to `data`;
/// returns the nesting shape (`None` for a lone scalar).
fn flatten(
    v: &Value,
    dtype: DataType,
    data: &mut TensorData,
) -> Result<Option<Vec<i64>>, ValueError> {
    if !v.is_array() {
        push_scalar(data, v, dtype).map_err(|m| ValueError::at("", m))?;
        return Ok(None);
    }
    // The shape from the first element at every depth.
    let mut shape = Vec::new();
    let mut probe = v;
    while let Value::Array(items) = probe {
        shape.push(items.len() as i64);
        match items.first() {
            Some(first) => probe = first,
            None => break,
        }
    }
    let mut path = String::new();
    walk(v, 0, &shape, dtype, data, &mut path)?;
    Ok(Some(shape))
}

fn walk(
    v: &Value,
    depth: usize,
    shape: &[i64],
    dtype: DataType,
    data: &mut TensorData,
    path: &mut String,
) -> Result<(), ValueError> {
    match v {
        Value::Array(items) => {
            if depth >= shape.len() || items.len() as i64 != shape[depth] {
                return Err(ValueError::at(
                    path.clone(),
                    format!(
                        "nested arrays are not rectangular: expected {}, found an array of {}",
                        if depth >= shape.len() {
                            "a value".to_string()
                        } else {
                            format!("{} elements", shape[depth])
                        },
                        items.len()
                    ),
                ));
            }
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, depth + 1, shape, dtype, data, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        scalar => {
            if depth != shape.len() {
                return Err(ValueError::at(
                    path.clone(),
                    format!(
                        "nested arrays are not rectangular: expected an array of {} elements, \
                         found {}",
                        shape[depth],
                        kind(scalar)
                    ),
                ));
            }
            push_scalar(data, scalar, dtype).map_err(|m| ValueError::at(path.clone(), m))
        }
    }
}

/// Converts one JSON scalar to `dtype` and appends it.
fn push_scalar(data: &mut TensorData, v: &Value, dtype: DataType) -> Result<(), String> {
    macro_rules! int {
        ($vec:expr, $t:ty) => {{
            let i = integer(v, dtype)?;
            let x = <$t>::try_from(i).map_err(|_| {
                format!("{i} does not fit {dtype} ({} to {})", <$t>::MIN, <$t>::MAX)
            })?;
            $vec.push(x);
        }};
    }
    match data {
        TensorData::Bool(vec) => vec.push(match v {
            Value::Bool(b) => *b,
            Value::Number(n) if n.as_u64() == Some(0) => false,
            Value::Number(n) if n.as_u64() == Some(1) => true,
            other => {
                return Err(format!(
                    "expected true or false for BOOL, found {}",
                    kind(other)
                ))
            }
        }),
        TensorData::U8(vec) => int!(vec, u8),
        TensorData::U16(vec) => int!(vec, u16),
        TensorData::U32(vec) => int!(vec, u32),
        TensorData::U64(vec) => int!(vec, u64),
        TensorData::I8(vec) => int!(vec, i8),
        TensorData::I16(vec) => int!(vec, i16),
        TensorData::I32(vec) => int!(vec, i32),
        TensorData::I64(vec) => int!(vec, i64),
        TensorData::F64(vec) => vec.push(float(v, dtype)?),
        TensorData::F32(vec) => vec.push(narrow(v, float(v, dtype)?, dtype)?),
        TensorData::F16(vec) => vec.push(
            f64_to_f16(float(v, dtype)?)
                .ok_or_else(|| format!("{v} does not fit FP16 (largest finite value 65504)"))?,
        ),
        TensorData::Bf16(vec) => vec.push(f64_to_bf16(float(v, dtype)?).ok_or_else(|| {
            format!("{v} does not fit BF16 (largest finite value about 3.39e38)")
        })?),
        TensorData::Bytes(vec) => vec.push(match v {
            Value::String(s) => s.as_bytes().to_vec(),
            Value::Object(o) if o.len() == 1 && o.get("b64").is_some_and(Value::is_string) => {
                b64_decode(o["b64"].as_str().unwrap_or_default())?
            }
            other => {
                return Err(format!(
                    "expected a string (or {{\"b64\": \"...\"}}) for BYTES, found {}",
                    kind(other)
                ))
            }
        }),
    }
    Ok(())
}

fn integer(v: &Value, dtype: DataType) -> Result<i128, String> {
    let Value::Number(n) = v else {
        return Err(format!(
            "expected an integer for {dtype}, found {}",
            kind(v)
        ));
    };
    if let Some(i) = n.as_i64() {
        return Ok(i128::from(i));
    }
    if let Some(u) = n.as_u64() {
        return Ok(i128::from(u));
    }
    match n.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() < 1e38 => Ok(f as i128),
        _ => Err(format!("{n} is not an integer ({dtype})")),
    }
}

fn float(v: &Value, dtype: DataType) -> Result<f64, String> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .ok_or_else(|| format!("{n} is not a number ({dtype})")),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "nan" => Ok(f64::NAN),
            "inf" | "+inf" | "infinity" | "+infinity" => Ok(f64::INFINITY),
            "-inf" | "-infinity" => Ok(f64::NEG_INFINITY),
            _ => Err(format!(
                "expected a number for {dtype}, found the string {s:?} \
                 (\"nan\", \"inf\" and \"-inf\" are accepted as strings)"
            )),
        },
        other => Err(format!(
            "expected a number for {dtype}, found {}",
            kind(other)
        )),
    }
}

/// `x` (the value of `v`) as an f32, refusing finite values beyond its
/// range.
fn narrow(v: &Value, x: f64, dtype: DataType) -> Result<f32, String> {
    let f = x as f32;
    if x.is_finite() && f.is_infinite() {
        return Err(format!("{v} does not fit {dtype}"));
    }
    Ok(f)
}

/// The request tensor's shape for `count` values: `given` (from "shape" or
/// nested arrays) checked against the dims, or the dims with one `-1`
/// resolved; a batching model's batch dimension of 1 prepended unless
/// `given` has it.
pub fn resolve_shape(
    count: usize,
    given: Option<Vec<i64>>,
    spec: &InputSpec,
    max_batch_size: i64,
) -> Result<Vec<i64>, String> {
    let dims = &spec.dims;
    let batching = max_batch_size > 0;
    let shape = match given {
        None => {
            let mut shape = dims.clone();
            let unknown: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] < 0).collect();
            match unknown.as_slice() {
                [] => {}
                [u] => {
                    let known = element_count(
                        &dims
                            .iter()
                            .filter(|&&d| d >= 0)
                            .copied()
                            .collect::<Vec<_>>(),
                    )
                    .unwrap_or(0);
                    if known == 0 || !count.is_multiple_of(known) {
                        return Err(format!(
                            "{count} values cannot fill dims {dims:?}{}; give the shape as \
                             {{\"content\": [...], \"shape\": [...]}} or as nested arrays",
                            if known == 0 {
                                String::new()
                            } else {
                                format!(" ({count} is not a multiple of {known})")
                            }
                        ));
                    }
                    shape[*u] = (count / known) as i64;
                }
                _ => {
                    return Err(format!(
                        "dims {dims:?} have {} variable dimensions, so a flat list of {count} \
                         values has no unique shape; give the shape as {{\"content\": [...], \
                         \"shape\": [...]}} or as nested arrays",
                        unknown.len()
                    ))
                }
            }
            if batching {
                shape.insert(0, 1);
            }
            shape
        }
        Some(s) => {
            let (body, with_batch) = if s.len() == dims.len() {
                (&s[..], false)
            } else if batching && s.len() == dims.len() + 1 {
                (&s[1..], true)
            } else {
                return Err(format!(
                    "shape {s:?} does not match dims {dims:?}{}",
                    if batching {
                        " (with or without a leading batch dimension)"
                    } else {
                        ""
                    }
                ));
            };
            for (i, (&g, &d)) in body.iter().zip(dims).enumerate() {
                if d >= 0 && g != d {
                    return Err(format!(
                        "shape {s:?} does not match dims {dims:?}: dimension {} is {g}, \
                         expected {d}",
                        i + usize::from(with_batch)
                    ));
                }
            }
            if with_batch && s[0] == 0 {
                return Err(format!("shape {s:?} has a batch dimension of 0"));
            }
            let mut shape = s.clone();
            if batching && !with_batch {
                shape.insert(0, 1);
            }
            shape
        }
    };
    let need = element_count(&shape).ok_or_else(|| format!("shape {shape:?} is too large"))?;
    if need != count {
        return Err(format!(
            "expected {need} values for shape {shape:?}, found {count}"
        ));
    }
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dtype: DataType, dims: &[i64]) -> InputSpec {
        InputSpec {
            name: "X".into(),
            dtype,
            dims: dims.to_vec(),
            optional: false,
        }
    }

    fn convert(v: &str, dtype: DataType, dims: &[i64], mbs: i64) -> Result<Tensor, ValueError> {
        tensor_from_json(&serde_json::from_str(v).unwrap(), &spec(dtype, dims), mbs)
    }

    #[test]
    fn values_must_fit_the_data_type() {
        let bad = [
            ("[300]", DataType::U8, "300 does not fit UINT8 (0 to 255)"),
            ("[-1]", DataType::U32, "-1 does not fit UINT32"),
            ("[1.5]", DataType::I32, "1.5 is not an integer (INT32)"),
            (
                "[\"7\"]",
                DataType::I64,
                "expected an integer for INT64, found the string \"7\"",
            ),
            (
                "[\"abc\"]",
                DataType::F32,
                "expected a number for FP32, found the string \"abc\"",
            ),
            (
                "[true]",
                DataType::F64,
                "expected a number for FP64, found true",
            ),
            ("[2]", DataType::Bool, "expected true or false for BOOL"),
            ("[70000]", DataType::F16, "70000 does not fit FP16"),
            ("[1e39]", DataType::Bf16, "does not fit BF16"),
            ("[3]", DataType::Bytes, "expected a string"),
            ("[128]", DataType::I8, "128 does not fit INT8 (-128 to 127)"),
        ];
        for (v, dtype, want) in bad {
            let e = convert(v, dtype, &[1], 0).unwrap_err();
            assert!(e.message.contains(want), "{v} as {dtype}: {}", e.message);
            assert_eq!(e.path, "[0]");
        }
        let ok = [
            ("[255]", DataType::U8, TensorData::U8(vec![255])),
            ("[-128]", DataType::I8, TensorData::I8(vec![-128])),
            (
                "[18446744073709551615]",
                DataType::U64,
                TensorData::U64(vec![u64::MAX]),
            ),
            ("[3.0]", DataType::I32, TensorData::I32(vec![3])),
            ("[1]", DataType::Bool, TensorData::Bool(vec![true])),
            ("[1.0]", DataType::F16, TensorData::F16(vec![0x3c00])),
            ("[-2]", DataType::Bf16, TensorData::Bf16(vec![0xc000])),
            (
                "[\"-inf\"]",
                DataType::F32,
                TensorData::F32(vec![f32::NEG_INFINITY]),
            ),
            ("[0.1]", DataType::F64, TensorData::F64(vec![0.1])),
            (
                "[\"héllo\"]",
                DataType::Bytes,
                TensorData::Bytes(vec!["héllo".as_bytes().to_vec()]),
            ),
            (
                "[{\"b64\": \"AP8=\"}]",
                DataType::Bytes,
                TensorData::Bytes(vec![vec![0, 255]]),
            ),
        ];
        for (v, dtype, want) in ok {
            assert_eq!(
                convert(v, dtype, &[1], 0).unwrap().data,
                want,
                "{v} as {dtype}"
            );
        }
        assert!(matches!(
            convert("[\"nan\"]", DataType::F32, &[1], 0).unwrap().data,
            TensorData::F32(ref v) if v[0].is_nan()
        ));
    }

    #[test]
    fn shapes_follow_the_dims() {
        let shape =
            |v: &str, dims: &[i64], mbs: i64| convert(v, DataType::I32, dims, mbs).map(|t| t.shape);
        assert_eq!(shape("[1, 2, 3, 4, 5, 6]", &[2, 3], 0).unwrap(), vec![2, 3]);
        assert_eq!(
            shape("[1, 2, 3, 4, 5, 6]", &[2, 3], 4).unwrap(),
            vec![1, 2, 3]
        );
        // One -1 is resolved from the element count.
        assert_eq!(
            shape("[1, 2, 3, 4, 5, 6]", &[-1, 3], 4).unwrap(),
            vec![1, 2, 3]
        );
        assert_eq!(
            shape("[1, 2, 3, 4, 5, 6]", &[2, -1], 0).unwrap(),
            vec![2, 3]
        );
        // The stateful backend's stacking axis in the middle.
        let v: Vec<String> = (0..20).map(|i| i.to_string()).collect();
        assert_eq!(
            shape(&format!("[{}]", v.join(",")), &[4, -1, 5], 16).unwrap(),
            vec![1, 4, 1, 5]
        );
        // Nested arrays give the shape, with or without the batch dimension.
        assert_eq!(
            shape("[[1, 2, 3], [4, 5, 6]]", &[-1, 3], 4).unwrap(),
            vec![1, 2, 3]
        );
        assert_eq!(
            shape("[[1, 2, 3], [4, 5, 6]]", &[3], 4).unwrap(),
            vec![2, 3]
        );
        assert_eq!(
            shape("[[[1, 2, 3]], [[4, 5, 6]]]", &[-1, 3], 4).unwrap(),
            vec![2, 1, 3]
        );
        // Errors: not a multiple, two unknowns, wrong fixed dim, wrong rank.
        assert!(shape("[1, 2, 3, 4, 5]", &[-1, 3], 4)
            .unwrap_err()
            .message
            .contains("not a multiple of 3"));
        assert!(shape("[1, 2, 3, 4]", &[-1, -1], 0)
            .unwrap_err()
            .message
            .contains("2 variable dimensions"));
        assert!(shape("[[1, 2], [3, 4]]", &[2, 3], 0)
            .unwrap_err()
            .message
            .contains("dimension 1 is 2, expected 3"));
        assert!(shape("[[1, 2], [3, 4]]", &[4], 0)
            .unwrap_err()
            .message
            .contains("does not match dims [4]"));
        assert!(shape("[1, 2, 3]", &[2, 2], 0)
            .unwrap_err()
            .message
            .contains("expected 4 values"));
        // Content + shape; a zero batch is refused.
        assert_eq!(
            shape(
                "{\"content\": [1, 2, 3, 4], \"shape\": [2, 2]}",
                &[-1, -1],
                4
            )
            .unwrap(),
            vec![1, 2, 2]
        );
        assert!(shape("{\"content\": [], \"shape\": [0, 3]}", &[3], 4).is_err());
        // A scalar is one value.
        assert_eq!(shape("5", &[1], 0).unwrap(), vec![1]);
        assert_eq!(shape("[]", &[0], 0).unwrap(), vec![0]);
    }
}
