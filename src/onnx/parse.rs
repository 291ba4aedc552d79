//! Decoding of the parts of `ModelProto` the signature needs.
//!
//! Field numbers follow the public `onnx/onnx.proto`:
//!
//! * `ModelProto`: `ir_version` 1 (varint), `graph` 7, `opset_import` 8.
//! * `OperatorSetIdProto`: `domain` 1, `version` 2.
//! * `GraphProto`: `node` 1, `initializer` 5, `input` 11, `output` 12,
//!   `value_info` 13, `sparse_initializer` 15.
//! * `NodeProto`: `input` 1, `output` 2, `op_type` 4, `attribute` 5,
//!   `domain` 7. `AttributeProto`: `name` 1, `i` 3.
//! * `TensorProto`: `dims` 1, `data_type` 2, `name` 8, `external_data` 13
//!   (`StringStringEntryProto`: `key` 1, `value` 2), `data_location` 14.
//!   The payload fields (`raw_data` 9 and the typed `*_data` fields) are
//!   skipped with a seek, never read.
//! * `SparseTensorProto`: `values` 1 (a `TensorProto`), `dims` 3.
//! * `ValueInfoProto`: `name` 1, `type` 2.
//! * `TypeProto` (a oneof): `tensor_type` 1, `sequence_type` 4, `map_type`
//!   5, `opaque_type` 7, `sparse_tensor_type` 8, `optional_type` 9.
//!   `TypeProto.Tensor`: `elem_type` 1, `shape` 2. `TensorShapeProto`:
//!   `dim` 1; `Dimension`: `dim_value` 1, `dim_param` 2.
//!
//! Everything else (doc strings, metadata, functions, training info, node
//! attributes' tensors and sub-graphs) is skipped. Repeated embedded
//! messages that occur more than once (`graph` twice) are merged the way
//! protobuf merges them.

use std::io::{BufRead, Seek};

use super::wire::{WireReader, WireResult, WireType};
use super::Dim;

/// Most dimensions a tensor shape may have (ORT's own limit is far lower).
const MAX_RANK: usize = 1024;

/// The type of a value as declared in the graph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RawType {
    /// `tensor_type`: element type (0 when unset) and shape (`None` when the
    /// shape field is absent: unknown rank).
    Tensor { elem: i32, shape: Option<Vec<Dim>> },
    /// Any other `TypeProto` kind, as Triton's ORT backend names it.
    NonTensor(&'static str),
    /// `ValueInfoProto.type` absent.
    Missing,
}

#[derive(Debug, Clone)]
pub(crate) struct RawValue {
    pub name: String,
    pub ty: RawType,
}

#[derive(Debug, Clone)]
pub(crate) struct RawInit {
    pub name: String,
    pub elem: i32,
    pub dims: Vec<i64>,
}

/// A node of an op the shape propagation understands (others are dropped
/// while reading to keep memory flat).
#[derive(Debug, Clone)]
pub(crate) struct RawNode {
    pub op: super::infer::Op,
    pub inputs: Vec<String>,
    pub outputs: Vec<String>,
    /// The `to` attribute (Cast only).
    pub cast_to: Option<i64>,
}

#[derive(Debug, Default)]
pub(crate) struct RawModel {
    pub ir_version: Option<i64>,
    /// The first field of the file was a plausible `ir_version` (serializers
    /// write fields in number order, so real models start with it).
    pub starts_like_onnx: bool,
    pub opsets: Vec<(String, i64)>,
    pub graph_seen: bool,
    pub nodes: Vec<RawNode>,
    pub initializers: Vec<RawInit>,
    pub inputs: Vec<RawValue>,
    pub outputs: Vec<RawValue>,
    pub value_info: Vec<RawValue>,
    pub external_locations: Vec<String>,
}

fn expect<R: BufRead + Seek>(
    r: &WireReader<R>,
    start: u64,
    field: u32,
    name: &str,
    got: WireType,
    want: WireType,
) -> WireResult<()> {
    if got == want {
        Ok(())
    } else {
        Err(r.malformed(
            start,
            format!(
                "field {name} ({field}) has wire type {}, expected {}",
                got.describe(),
                want.describe()
            ),
        ))
    }
}

/// Reads a repeated int64 field in either packed or unpacked encoding.
fn int64s<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    wt: WireType,
    end: u64,
    out: &mut Vec<i64>,
    start: u64,
    field: u32,
    name: &str,
) -> WireResult<()> {
    match wt {
        WireType::Varint => out.push(r.varint(end)? as i64),
        WireType::Len => {
            let stop = r.len_end(end)?;
            while r.pos() < stop {
                check_rank(r, start, out.len(), name)?;
                out.push(r.varint(stop)? as i64);
            }
        }
        other => expect(r, start, field, name, other, WireType::Varint)?,
    }
    check_rank(r, start, out.len(), name)
}

/// Refuses absurd ranks, which only corrupt input produces, before they
/// turn into large allocations.
fn check_rank<R: BufRead + Seek>(
    r: &WireReader<R>,
    start: u64,
    rank: usize,
    name: &str,
) -> WireResult<()> {
    if rank > MAX_RANK {
        Err(r.malformed(start, format!("{name} has more than {MAX_RANK} dimensions")))
    } else {
        Ok(())
    }
}

/// Reads a whole `ModelProto` from `r` (positioned at offset 0) into `m`.
/// On error `m` holds what was read so far, so the caller can judge whether
/// the input looked like ONNX at all.
pub(crate) fn read_model<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    m: &mut RawModel,
) -> WireResult<()> {
    model_fields(r, m)
}

fn model_fields<R: BufRead + Seek>(r: &mut WireReader<R>, m: &mut RawModel) -> WireResult<()> {
    let end = r.len();
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(());
        };
        match field {
            1 => {
                expect(
                    r,
                    start,
                    field,
                    "ModelProto.ir_version",
                    wt,
                    WireType::Varint,
                )?;
                let v = r.varint(end)? as i64;
                if start == 0 && (1..=64).contains(&v) {
                    m.starts_like_onnx = true;
                }
                m.ir_version = Some(v);
            }
            7 => {
                expect(r, start, field, "ModelProto.graph", wt, WireType::Len)?;
                let stop = r.len_end(end)?;
                m.graph_seen = true;
                r.push("graph");
                graph(r, stop, m)?;
                r.pop();
            }
            8 => {
                expect(
                    r,
                    start,
                    field,
                    "ModelProto.opset_import",
                    wt,
                    WireType::Len,
                )?;
                let stop = r.len_end(end)?;
                r.push("opset_import");
                m.opsets.push(opset(r, stop)?);
                r.pop();
            }
            _ => r.skip(field, wt, end)?,
        }
    }
}

fn opset<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<(String, i64)> {
    let (mut domain, mut version) = (String::new(), 0i64);
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok((domain, version));
        };
        match field {
            1 => {
                expect(
                    r,
                    start,
                    field,
                    "OperatorSetIdProto.domain",
                    wt,
                    WireType::Len,
                )?;
                domain = r.string(end, "an opset domain")?;
            }
            2 => {
                expect(
                    r,
                    start,
                    field,
                    "OperatorSetIdProto.version",
                    wt,
                    WireType::Varint,
                )?;
                version = r.varint(end)? as i64;
            }
            _ => r.skip(field, wt, end)?,
        }
    }
}

fn graph<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64, m: &mut RawModel) -> WireResult<()> {
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(());
        };
        let (name, ctx): (&str, &'static str) = match field {
            1 => ("GraphProto.node", "node"),
            5 => ("GraphProto.initializer", "initializer"),
            11 => ("GraphProto.input", "input"),
            12 => ("GraphProto.output", "output"),
            13 => ("GraphProto.value_info", "value_info"),
            15 => ("GraphProto.sparse_initializer", "sparse_initializer"),
            _ => {
                r.skip(field, wt, end)?;
                continue;
            }
        };
        expect(r, start, field, name, wt, WireType::Len)?;
        let stop = r.len_end(end)?;
        r.push(ctx);
        match field {
            1 => {
                if let Some(n) = node(r, stop)? {
                    m.nodes.push(n);
                }
            }
            5 => {
                let t = tensor(r, stop, &mut m.external_locations)?;
                m.initializers.push(t);
            }
            11 => m.inputs.push(value_info(r, stop)?),
            12 => m.outputs.push(value_info(r, stop)?),
            13 => m.value_info.push(value_info(r, stop)?),
            _ => {
                let t = sparse_tensor(r, stop, &mut m.external_locations)?;
                m.initializers.push(t);
            }
        }
        r.pop();
    }
}

fn node<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<Option<RawNode>> {
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    let mut op_type = String::new();
    let mut domain = String::new();
    let mut cast_to = None;
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            break;
        };
        match field {
            1 => {
                expect(r, start, field, "NodeProto.input", wt, WireType::Len)?;
                inputs.push(r.string(end, "a node input name")?);
            }
            2 => {
                expect(r, start, field, "NodeProto.output", wt, WireType::Len)?;
                outputs.push(r.string(end, "a node output name")?);
            }
            4 => {
                expect(r, start, field, "NodeProto.op_type", wt, WireType::Len)?;
                op_type = r.string(end, "an op type")?;
            }
            5 => {
                expect(r, start, field, "NodeProto.attribute", wt, WireType::Len)?;
                let stop = r.len_end(end)?;
                r.push("attribute");
                if let Some((name, v)) = attribute(r, stop)? {
                    if name == "to" {
                        cast_to = Some(v);
                    }
                }
                r.pop();
            }
            7 => {
                expect(r, start, field, "NodeProto.domain", wt, WireType::Len)?;
                domain = r.string(end, "a node domain")?;
            }
            _ => r.skip(field, wt, end)?,
        }
    }
    if !(domain.is_empty() || domain == "ai.onnx") {
        return Ok(None);
    }
    Ok(super::infer::Op::from_name(&op_type).map(|op| RawNode {
        op,
        inputs,
        outputs,
        cast_to: if op == super::infer::Op::Cast {
            cast_to
        } else {
            None
        },
    }))
}

/// Reads an attribute's name and integer value (`i`); tensors and graphs
/// held by attributes are skipped.
fn attribute<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    end: u64,
) -> WireResult<Option<(String, i64)>> {
    let mut name = String::new();
    let mut value = None;
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            break;
        };
        match field {
            1 => {
                expect(r, start, field, "AttributeProto.name", wt, WireType::Len)?;
                name = r.string(end, "an attribute name")?;
            }
            3 => {
                expect(r, start, field, "AttributeProto.i", wt, WireType::Varint)?;
                value = Some(r.varint(end)? as i64);
            }
            _ => r.skip(field, wt, end)?,
        }
    }
    Ok(value.map(|v| (name, v)))
}

/// Reads a `TensorProto`'s name, element type and dims; the data is skipped.
fn tensor<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    end: u64,
    external: &mut Vec<String>,
) -> WireResult<RawInit> {
    let mut t = RawInit {
        name: String::new(),
        elem: 0,
        dims: Vec::new(),
    };
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(t);
        };
        match field {
            1 => int64s(r, wt, end, &mut t.dims, start, field, "TensorProto.dims")?,
            2 => {
                expect(
                    r,
                    start,
                    field,
                    "TensorProto.data_type",
                    wt,
                    WireType::Varint,
                )?;
                t.elem = r.varint(end)? as i32;
            }
            8 => {
                expect(r, start, field, "TensorProto.name", wt, WireType::Len)?;
                t.name = r.string(end, "a tensor name")?;
            }
            13 => {
                expect(
                    r,
                    start,
                    field,
                    "TensorProto.external_data",
                    wt,
                    WireType::Len,
                )?;
                let stop = r.len_end(end)?;
                r.push("external_data");
                if let Some(loc) = location_entry(r, stop)? {
                    if !external.contains(&loc) {
                        external.push(loc);
                    }
                }
                r.pop();
            }
            // raw_data (9), the typed *_data fields, doc_string, segment,
            // data_location, metadata: never needed, skipped by seeking.
            _ => r.skip(field, wt, end)?,
        }
    }
}

/// The value of an `external_data` entry whose key is `location`.
fn location_entry<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    end: u64,
) -> WireResult<Option<String>> {
    let (mut key, mut value) = (String::new(), String::new());
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            break;
        };
        match field {
            1 => {
                expect(
                    r,
                    start,
                    field,
                    "StringStringEntryProto.key",
                    wt,
                    WireType::Len,
                )?;
                key = r.string(end, "an external_data key")?;
            }
            2 => {
                expect(
                    r,
                    start,
                    field,
                    "StringStringEntryProto.value",
                    wt,
                    WireType::Len,
                )?;
                value = r.string(end, "an external_data value")?;
            }
            _ => r.skip(field, wt, end)?,
        }
    }
    Ok((key == "location").then_some(value))
}

/// A sparse initializer: name and element type from `values`, dense dims.
fn sparse_tensor<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    end: u64,
    external: &mut Vec<String>,
) -> WireResult<RawInit> {
    let mut out = RawInit {
        name: String::new(),
        elem: 0,
        dims: Vec::new(),
    };
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(out);
        };
        match field {
            1 => {
                expect(
                    r,
                    start,
                    field,
                    "SparseTensorProto.values",
                    wt,
                    WireType::Len,
                )?;
                let stop = r.len_end(end)?;
                r.push("values");
                let v = tensor(r, stop, external)?;
                r.pop();
                out.name = v.name;
                out.elem = v.elem;
            }
            3 => int64s(
                r,
                wt,
                end,
                &mut out.dims,
                start,
                field,
                "SparseTensorProto.dims",
            )?,
            _ => r.skip(field, wt, end)?,
        }
    }
}

fn value_info<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<RawValue> {
    let mut v = RawValue {
        name: String::new(),
        ty: RawType::Missing,
    };
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(v);
        };
        match field {
            1 => {
                expect(r, start, field, "ValueInfoProto.name", wt, WireType::Len)?;
                v.name = r.string(end, "a value name")?;
            }
            2 => {
                expect(r, start, field, "ValueInfoProto.type", wt, WireType::Len)?;
                let stop = r.len_end(end)?;
                r.push("type");
                v.ty = type_proto(r, stop)?;
                r.pop();
            }
            _ => r.skip(field, wt, end)?,
        }
    }
}

fn type_proto<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<RawType> {
    // A TypeProto with none of the oneof members set: ORT's "unknown".
    let mut ty = RawType::NonTensor("ONNX_TYPE_UNKNOWN");
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(ty);
        };
        let non_tensor = match field {
            1 => {
                expect(r, start, field, "TypeProto.tensor_type", wt, WireType::Len)?;
                let stop = r.len_end(end)?;
                r.push("tensor_type");
                ty = tensor_type(r, stop)?;
                r.pop();
                continue;
            }
            4 => "ONNX_TYPE_SEQUENCE",
            5 => "ONNX_TYPE_MAP",
            7 => "ONNX_TYPE_OPAQUE",
            8 => "ONNX_TYPE_SPARSETENSOR",
            // Triton's ORT backend has no name for ONNX_TYPE_OPTIONAL and
            // prints it as unknown.
            9 => "ONNX_TYPE_UNKNOWN",
            _ => {
                r.skip(field, wt, end)?;
                continue;
            }
        };
        expect(r, start, field, "TypeProto member", wt, WireType::Len)?;
        r.skip(field, wt, end)?;
        ty = RawType::NonTensor(non_tensor);
    }
}

fn tensor_type<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<RawType> {
    let mut elem = 0i32;
    let mut shape: Option<Vec<Dim>> = None;
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(RawType::Tensor { elem, shape });
        };
        match field {
            1 => {
                expect(
                    r,
                    start,
                    field,
                    "TypeProto.Tensor.elem_type",
                    wt,
                    WireType::Varint,
                )?;
                elem = r.varint(end)? as i32;
            }
            2 => {
                expect(r, start, field, "TypeProto.Tensor.shape", wt, WireType::Len)?;
                let stop = r.len_end(end)?;
                r.push("shape");
                // A repeated occurrence merges (appends dims), as protobuf does.
                let dims = shape.get_or_insert_with(Vec::new);
                shape_proto(r, stop, dims)?;
                r.pop();
            }
            _ => r.skip(field, wt, end)?,
        }
    }
}

fn shape_proto<R: BufRead + Seek>(
    r: &mut WireReader<R>,
    end: u64,
    dims: &mut Vec<Dim>,
) -> WireResult<()> {
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(());
        };
        if field != 1 {
            r.skip(field, wt, end)?;
            continue;
        }
        expect(r, start, field, "TensorShapeProto.dim", wt, WireType::Len)?;
        check_rank(r, start, dims.len() + 1, "TensorShapeProto.dim")?;
        let stop = r.len_end(end)?;
        r.push("dim");
        dims.push(dimension(r, stop)?);
        r.pop();
    }
}

fn dimension<R: BufRead + Seek>(r: &mut WireReader<R>, end: u64) -> WireResult<Dim> {
    let mut d = Dim::Unknown;
    loop {
        let start = r.pos();
        let Some((field, wt)) = r.tag(end)? else {
            return Ok(d);
        };
        match field {
            1 => {
                expect(r, start, field, "Dimension.dim_value", wt, WireType::Varint)?;
                d = Dim::Fixed(r.varint(end)? as i64);
            }
            2 => {
                expect(r, start, field, "Dimension.dim_param", wt, WireType::Len)?;
                d = Dim::Symbolic(r.string(end, "a dim_param")?);
            }
            _ => r.skip(field, wt, end)?,
        }
    }
}
