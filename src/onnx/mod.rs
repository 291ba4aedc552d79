//! Reading the signature of an ONNX model without ONNX Runtime.
//!
//! [`read_signature`] streams a `model.onnx` file (protobuf `ModelProto`)
//! and returns what Triton's ONNX Runtime backend sees of it when it
//! auto-completes a configuration (docs/spec/autoconfig.md §3): the inputs
//! without initializers, the overridable initializers, the outputs with
//! shapes completed from `value_info` and a small shape propagation, the IR
//! version and the opset imports.
//!
//! Memory stays flat whatever the model size: the file is read through a
//! small buffer, and the bulky parts (initializer payloads, doc strings,
//! node attribute tensors, sub-graphs, functions) are skipped with a seek,
//! never read. Tensor data stored in external files is never opened; their
//! locations are only listed ([`Signature::external_data`]).
//!
//! Output shapes: ORT merges its shape inference into declared output
//! shapes. This reader does the same with what it has: a declared output
//! whose element type, shape or some dims are unknown is completed from the
//! `value_info` entry of the same name, then from a conservative propagation
//! through shape-preserving ops (see `infer.rs` for the op list). Declared
//! dims are never changed. What stays unknown is reported as
//! [`Dim::Unknown`] (Triton `-1`) or a missing shape (Triton treats it as
//! rank 0), and [`Signature::output_shapes_complete`] is false so callers
//! can say that ORT may report more.

mod infer;
mod parse;
mod wire;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead, BufReader, Seek};
use std::path::{Path, PathBuf};

use infer::Ty;
use parse::{RawModel, RawType, RawValue};
use wire::{WireError, WireReader};

/// One dimension of a tensor shape.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    /// `dim_value`.
    Fixed(i64),
    /// `dim_param`: a named, variable dimension.
    Symbolic(String),
    /// A dimension with neither value nor name.
    Unknown,
}

impl Dim {
    /// The dimension as ORT reports it to Triton: the value when fixed,
    /// `-1` for symbolic and unknown dims.
    pub fn triton(&self) -> i64 {
        match self {
            Dim::Fixed(v) => *v,
            Dim::Symbolic(_) | Dim::Unknown => -1,
        }
    }

    /// True for symbolic and unknown dims (both `-1` for Triton).
    pub fn is_variable(&self) -> bool {
        !matches!(self, Dim::Fixed(_))
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(v) => write!(f, "{v}"),
            Dim::Symbolic(s) => write!(f, "'{s}'"),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

/// Formats an ONNX shape for messages: `['N', 3, ?]`; `None` (unknown rank)
/// as `(no shape)`.
pub fn format_shape(shape: Option<&[Dim]>) -> String {
    match shape {
        None => "(no shape)".to_string(),
        Some(dims) => {
            let parts: Vec<String> = dims.iter().map(Dim::to_string).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// What kind of value an input or output is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorKind {
    /// A dense tensor. `elem_type` is the ONNX `TensorProto.DataType` id
    /// (0 when unknown); `shape` is `None` when the rank is unknown.
    Tensor {
        elem_type: i32,
        shape: Option<Vec<Dim>>,
    },
    /// Anything else, named as Triton's ORT backend names it in
    /// `Unsupported ONNX Type '<name>' for I/O …`: `ONNX_TYPE_SEQUENCE`,
    /// `ONNX_TYPE_MAP`, `ONNX_TYPE_OPAQUE`, `ONNX_TYPE_SPARSETENSOR` or
    /// `ONNX_TYPE_UNKNOWN` (also used for `optional(…)` types and for
    /// values without any type).
    NonTensor(&'static str),
}

/// Where the shape and element type of a [`TensorInfo`] come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeSource {
    /// As declared in the graph (inputs, initializers, complete outputs).
    Declared,
    /// Completed from a `value_info` entry of the same name.
    ValueInfo,
    /// Completed by the shape propagation through the graph's nodes.
    Propagated,
}

/// A named model input, output or initializer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    pub kind: TensorKind,
    pub shape_source: ShapeSource,
}

impl TensorInfo {
    pub fn is_tensor(&self) -> bool {
        matches!(self.kind, TensorKind::Tensor { .. })
    }

    /// The ONNX element type id (0 for non-tensors and unknown types).
    pub fn elem_type(&self) -> i32 {
        match self.kind {
            TensorKind::Tensor { elem_type, .. } => elem_type,
            TensorKind::NonTensor(_) => 0,
        }
    }

    /// The shape (`None` for an unknown rank and for non-tensors).
    pub fn shape(&self) -> Option<&[Dim]> {
        match &self.kind {
            TensorKind::Tensor { shape, .. } => shape.as_deref(),
            TensorKind::NonTensor(_) => None,
        }
    }

    /// `ONNX_TYPE_TENSOR` or the non-tensor kind name.
    pub fn onnx_type_name(&self) -> &'static str {
        match self.kind {
            TensorKind::Tensor { .. } => "ONNX_TYPE_TENSOR",
            TensorKind::NonTensor(n) => n,
        }
    }

    /// Triton config `data_type` (docs/spec/autoconfig.md §4); `TYPE_INVALID`
    /// for unmapped element types and non-tensors.
    pub fn triton_data_type(&self) -> &'static str {
        triton_data_type(self.elem_type())
    }

    /// The dims ORT reports to Triton: fixed values, `-1` for symbolic and
    /// unknown dims, and no dims at all for an unknown rank (Triton then
    /// treats the tensor as a scalar). `None` for non-tensors.
    pub fn triton_dims(&self) -> Option<Vec<i64>> {
        match &self.kind {
            TensorKind::Tensor { shape, .. } => Some(
                shape
                    .as_deref()
                    .unwrap_or_default()
                    .iter()
                    .map(Dim::triton)
                    .collect(),
            ),
            TensorKind::NonTensor(_) => None,
        }
    }

    /// True when the element type, the rank and every dim are known
    /// (symbolic dims count as known).
    pub fn is_fully_known(&self) -> bool {
        match &self.kind {
            TensorKind::Tensor { elem_type, shape } => {
                *elem_type != 0
                    && shape
                        .as_ref()
                        .is_some_and(|s| s.iter().all(|d| *d != Dim::Unknown))
            }
            TensorKind::NonTensor(_) => true,
        }
    }
}

/// What Triton's ORT backend sees of a model (docs/spec/autoconfig.md §3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The file that was read (`<dir>/model.onnx` when given a directory).
    pub path: PathBuf,
    /// `ModelProto.ir_version` (0 when absent).
    pub ir_version: i64,
    /// `(domain, version)` of every opset import, in file order; the
    /// default domain is the empty string.
    pub opsets: Vec<(String, i64)>,
    /// Graph inputs that are not initializers, in graph order.
    pub inputs: Vec<TensorInfo>,
    /// Graph outputs in graph order, shapes completed as far as possible.
    pub outputs: Vec<TensorInfo>,
    /// Graph inputs that also have an initializer (IR version ≥ 4 only;
    /// with IR < 4 they are in neither list).
    pub overridable_initializers: Vec<TensorInfo>,
    /// The graph's `value_info` entries as declared.
    pub value_info: Vec<TensorInfo>,
    /// True when some output's type or shape was completed from
    /// `value_info` or by propagation.
    pub output_shapes_inferred: bool,
    /// False when some tensor output still has an unknown element type,
    /// rank or dim after completion; ORT's own inference may know more.
    pub output_shapes_complete: bool,
    /// Distinct `location`s of initializers whose data is stored outside the
    /// model file (relative to its directory). The files are not opened.
    pub external_data: Vec<String>,
}

impl Signature {
    /// Names of the tensor outputs whose shape is not fully known.
    pub fn incomplete_outputs(&self) -> Vec<&str> {
        self.outputs
            .iter()
            .filter(|t| !t.is_fully_known())
            .map(|t| t.name.as_str())
            .collect()
    }

    /// The version of the default (`""` / `ai.onnx`) opset, if imported.
    pub fn default_opset(&self) -> Option<i64> {
        self.opsets
            .iter()
            .find(|(d, _)| d.is_empty() || d == "ai.onnx")
            .map(|(_, v)| *v)
    }
}

/// Why a model could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error("{path}: no such file or directory")]
    NotFound { path: PathBuf },
    #[error("{path}: is a directory without a model.onnx file")]
    NoModelInDirectory { path: PathBuf },
    #[error("{path}: not a regular file")]
    NotAFile { path: PathBuf },
    #[error("{path}: cannot read: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}: empty file, not an ONNX model")]
    Empty { path: PathBuf },
    #[error("{path}: truncated ONNX model: {detail} (byte offset {offset})")]
    Truncated {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    #[error("{path}: not an ONNX model: {detail}")]
    NotOnnx { path: PathBuf, detail: String },
    #[error("{path}: malformed ONNX model: {detail} (byte offset {offset})")]
    Malformed {
        path: PathBuf,
        offset: u64,
        detail: String,
    },
}

impl OnnxError {
    /// The file or directory the error is about.
    pub fn path(&self) -> &Path {
        match self {
            OnnxError::NotFound { path }
            | OnnxError::NoModelInDirectory { path }
            | OnnxError::NotAFile { path }
            | OnnxError::Io { path, .. }
            | OnnxError::Empty { path }
            | OnnxError::Truncated { path, .. }
            | OnnxError::NotOnnx { path, .. }
            | OnnxError::Malformed { path, .. } => path,
        }
    }
}

/// Reads the signature of the ONNX model at `path`: a `.onnx` file, or a
/// directory holding `model.onnx` (Triton accepts a directory as the model
/// file and then reads `model.onnx` inside it).
pub fn read_signature(path: &Path) -> Result<Signature, OnnxError> {
    read_signature_in(path, None)
}

/// [`read_signature`] of a model file found inside the directory `root`
/// being processed: refused when it resolves outside it (`files`).
pub fn read_signature_in(path: &Path, root: Option<&Path>) -> Result<Signature, OnnxError> {
    let io_err = |p: &Path, e: io::Error| {
        if e.kind() == io::ErrorKind::NotFound {
            OnnxError::NotFound { path: p.into() }
        } else {
            OnnxError::Io {
                path: p.into(),
                source: e,
            }
        }
    };
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, e))?;
    let file_path = if meta.is_dir() {
        let inner = path.join("model.onnx");
        match std::fs::metadata(&inner) {
            Ok(m) if m.is_file() => inner,
            Ok(_) => return Err(OnnxError::NotAFile { path: inner }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(OnnxError::NoModelInDirectory { path: path.into() })
            }
            Err(e) => return Err(io_err(&inner, e)),
        }
    } else if meta.is_file() {
        path.to_path_buf()
    } else {
        return Err(OnnxError::NotAFile { path: path.into() });
    };
    let file = crate::files::open_regular(&file_path, root).map_err(|e| io_err(&file_path, e))?;
    let len = file.metadata().map_err(|e| io_err(&file_path, e))?.len();
    read_signature_from(BufReader::with_capacity(64 * 1024, file), len, &file_path)
}

/// Reads a signature from `len` bytes of `reader` (positioned at the start
/// of the `ModelProto`); `path` is only used in the result and in errors.
pub fn read_signature_from<R: BufRead + Seek>(
    reader: R,
    len: u64,
    path: &Path,
) -> Result<Signature, OnnxError> {
    if len == 0 {
        return Err(OnnxError::Empty { path: path.into() });
    }
    let mut r = WireReader::new(reader, len);
    let mut raw = RawModel::default();
    parse::read_model(&mut r, &mut raw).map_err(|e| wire_error(path, e, &raw))?;
    if !raw.graph_seen {
        return Err(OnnxError::NotOnnx {
            path: path.into(),
            detail: "the protobuf has no graph (ModelProto field 7); it is not an ONNX ModelProto"
                .into(),
        });
    }
    Ok(assemble(raw, path))
}

/// Classifies a decoding failure. A file that started like a model (an
/// `ir_version` first) and then ends early is truncated; bad bytes inside
/// the graph make a malformed model; anything else was never ONNX.
fn wire_error(path: &Path, e: WireError, partial: &RawModel) -> OnnxError {
    let path = path.to_path_buf();
    match e {
        WireError::Io(source) => OnnxError::Io { path, source },
        WireError::Eof { offset, detail } if partial.graph_seen || partial.starts_like_onnx => {
            OnnxError::Truncated {
                path,
                offset,
                detail,
            }
        }
        WireError::Malformed { offset, detail } if partial.graph_seen => OnnxError::Malformed {
            path,
            offset,
            detail,
        },
        WireError::Eof { offset, detail } | WireError::Malformed { offset, detail } => {
            OnnxError::NotOnnx {
                path,
                detail: format!("not a valid protobuf ModelProto: {detail} (byte offset {offset})"),
            }
        }
    }
}

fn to_ty(t: &RawType) -> Option<Ty> {
    match t {
        RawType::Tensor { elem, shape } => Some(Ty {
            elem: *elem,
            shape: shape.clone(),
        }),
        _ => None,
    }
}

fn info(v: &RawValue) -> TensorInfo {
    let kind = match &v.ty {
        RawType::Tensor { elem, shape } => TensorKind::Tensor {
            elem_type: *elem,
            shape: shape.clone(),
        },
        RawType::NonTensor(n) => TensorKind::NonTensor(n),
        RawType::Missing => TensorKind::NonTensor("ONNX_TYPE_UNKNOWN"),
    };
    TensorInfo {
        name: v.name.clone(),
        kind,
        shape_source: ShapeSource::Declared,
    }
}

/// Builds ORT's view from the raw graph (docs/spec/autoconfig.md §3.1, §3.2).
fn assemble(raw: RawModel, path: &Path) -> Signature {
    let ir_version = raw.ir_version.unwrap_or(0);
    let init_names: std::collections::HashSet<&str> =
        raw.initializers.iter().map(|i| i.name.as_str()).collect();

    let mut inputs = Vec::new();
    let mut overridable = Vec::new();
    for v in &raw.inputs {
        if !init_names.contains(v.name.as_str()) {
            inputs.push(info(v));
        } else if ir_version >= 4 {
            overridable.push(info(v));
        }
    }

    // Everything known about value types, most precise first.
    let mut env: HashMap<String, Ty> = HashMap::new();
    let mut add = |name: &str, ty: Ty| {
        env.entry(name.to_string())
            .and_modify(|t| {
                t.refine(&ty);
            })
            .or_insert(ty);
    };
    for v in &raw.inputs {
        if let Some(t) = to_ty(&v.ty) {
            add(&v.name, t);
        }
    }
    for i in &raw.initializers {
        let shape = Some(i.dims.iter().map(|d| Dim::Fixed(*d)).collect());
        add(
            &i.name,
            Ty {
                elem: i.elem,
                shape,
            },
        );
    }
    let mut from_value_info: HashMap<&str, Ty> = HashMap::new();
    for v in &raw.value_info {
        if let Some(t) = to_ty(&v.ty) {
            add(&v.name, t.clone());
            from_value_info.entry(&v.name).or_insert(t);
        }
    }
    for v in &raw.outputs {
        if let Some(t) = to_ty(&v.ty) {
            add(&v.name, t);
        }
    }
    infer::propagate(&raw.nodes, &mut env);

    let mut outputs = Vec::with_capacity(raw.outputs.len());
    let mut any_inferred = false;
    for v in &raw.outputs {
        let mut out = info(v);
        let declared = match &v.ty {
            RawType::Tensor { elem, shape } => Some(Ty {
                elem: *elem,
                shape: shape.clone(),
            }),
            // No type at all: ORT takes it from the producing node.
            RawType::Missing => Some(Ty::default()),
            RawType::NonTensor(_) => None,
        };
        if let Some(mut ty) = declared {
            let mut source = ShapeSource::Declared;
            if let Some(vi) = from_value_info.get(v.name.as_str()) {
                if ty.refine(vi) {
                    source = ShapeSource::ValueInfo;
                }
            }
            // The environment holds the propagation results (and, for a
            // pass-through output, the type of the input or initializer of
            // the same name).
            if let Some(known) = env.get(&v.name) {
                if ty.refine(known) {
                    source = ShapeSource::Propagated;
                }
            }
            if matches!(v.ty, RawType::Missing) && ty == Ty::default() {
                // Nothing at all is known: ORT would not load such a model.
                out.kind = TensorKind::NonTensor("ONNX_TYPE_UNKNOWN");
            } else {
                if source != ShapeSource::Declared {
                    any_inferred = true;
                }
                out.kind = TensorKind::Tensor {
                    elem_type: ty.elem,
                    shape: ty.shape,
                };
                out.shape_source = source;
            }
        }
        outputs.push(out);
    }
    let complete = outputs.iter().all(TensorInfo::is_fully_known);

    Signature {
        path: path.to_path_buf(),
        ir_version,
        opsets: raw.opsets,
        inputs,
        outputs,
        overridable_initializers: overridable,
        value_info: raw.value_info.iter().map(info).collect(),
        output_shapes_inferred: any_inferred,
        output_shapes_complete: complete,
        external_data: raw.external_locations,
    }
}

/// Triton config data type for an ONNX element type (docs/spec/autoconfig.md
/// §4): the 14 mapped types, `TYPE_INVALID` for everything else.
pub fn triton_data_type(elem_type: i32) -> &'static str {
    match elem_type {
        9 => "TYPE_BOOL",
        2 => "TYPE_UINT8",
        4 => "TYPE_UINT16",
        12 => "TYPE_UINT32",
        13 => "TYPE_UINT64",
        3 => "TYPE_INT8",
        5 => "TYPE_INT16",
        6 => "TYPE_INT32",
        7 => "TYPE_INT64",
        16 => "TYPE_BF16",
        10 => "TYPE_FP16",
        1 => "TYPE_FP32",
        11 => "TYPE_FP64",
        8 => "TYPE_STRING",
        _ => "TYPE_INVALID",
    }
}

/// The ONNX `TensorProto.DataType` name of an element type id (`FLOAT`,
/// `INT32`, …), `UNDEFINED` for 0 and unknown ids.
pub fn onnx_type_name(elem_type: i32) -> &'static str {
    match elem_type {
        1 => "FLOAT",
        2 => "UINT8",
        3 => "INT8",
        4 => "UINT16",
        5 => "INT16",
        6 => "INT32",
        7 => "INT64",
        8 => "STRING",
        9 => "BOOL",
        10 => "FLOAT16",
        11 => "DOUBLE",
        12 => "UINT32",
        13 => "UINT64",
        14 => "COMPLEX64",
        15 => "COMPLEX128",
        16 => "BFLOAT16",
        17 => "FLOAT8E4M3FN",
        18 => "FLOAT8E4M3FNUZ",
        19 => "FLOAT8E5M2",
        20 => "FLOAT8E5M2FNUZ",
        21 => "UINT4",
        22 => "INT4",
        23 => "FLOAT4E2M1",
        24 => "FLOAT8E8M0",
        25 => "UINT2",
        26 => "INT2",
        _ => "UNDEFINED",
    }
}
