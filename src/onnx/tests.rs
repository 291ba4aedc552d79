//! Tests of the ONNX signature reader.
//!
//! Fixtures in `testdata/onnx/` come from `scripts/gen-onnx-fixtures.py`
//! (Python `onnx` package); `expected.json` holds, per fixture, the graph as
//! the `onnx` package reads it and, where ONNX Runtime could load the model,
//! the session's view of inputs, outputs and overridable initializers. Other
//! models are built here with a tiny protobuf encoder.

use std::io::{Cursor, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;

use super::*;

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    crate_root().join("testdata").join("onnx").join(name)
}

fn read(name: &str) -> Signature {
    read_signature(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn from_bytes(bytes: &[u8]) -> Result<Signature, OnnxError> {
    read_signature_from(
        Cursor::new(bytes),
        bytes.len() as u64,
        Path::new("mem.onnx"),
    )
}

fn sym(s: &str) -> Dim {
    Dim::Symbolic(s.into())
}

fn by_name<'a>(list: &'a [TensorInfo], name: &str) -> &'a TensorInfo {
    list.iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no tensor {name} in {list:?}"))
}

fn names(list: &[TensorInfo]) -> Vec<&str> {
    list.iter().map(|t| t.name.as_str()).collect()
}

// ---------------------------------------------------------------------------
// A tiny protobuf encoder for hand-built models.

mod pb {
    pub(super) fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    pub(super) fn key(out: &mut Vec<u8>, field: u32, wt: u8) {
        varint(out, (u64::from(field) << 3) | u64::from(wt));
    }
    pub(super) fn int(out: &mut Vec<u8>, field: u32, v: i64) {
        key(out, field, 0);
        varint(out, v as u64);
    }
    pub(super) fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        key(out, field, 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }
    pub(super) fn msg(field: u32, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        bytes(&mut out, field, body);
        out
    }

    pub(super) enum D<'a> {
        V(i64),
        P(&'a str),
        U,
    }

    /// A `TypeProto` holding a tensor type; `dims: None` leaves out the shape.
    pub(super) fn tensor_type(elem: i32, dims: Option<&[D]>) -> Vec<u8> {
        let mut tt = Vec::new();
        int(&mut tt, 1, i64::from(elem));
        if let Some(dims) = dims {
            let mut shape = Vec::new();
            for d in dims {
                let mut dim = Vec::new();
                match d {
                    D::V(v) => int(&mut dim, 1, *v),
                    D::P(p) => bytes(&mut dim, 2, p.as_bytes()),
                    D::U => {}
                }
                bytes(&mut shape, 1, &dim);
            }
            bytes(&mut tt, 2, &shape);
        }
        msg(1, &tt)
    }

    /// A `ValueInfoProto` (field content, without its own key).
    pub(super) fn value(name: &str, type_proto: Option<&[u8]>) -> Vec<u8> {
        let mut v = Vec::new();
        bytes(&mut v, 1, name.as_bytes());
        if let Some(t) = type_proto {
            bytes(&mut v, 2, t);
        }
        v
    }

    pub(super) fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> Vec<u8> {
        let mut n = Vec::new();
        for i in inputs {
            bytes(&mut n, 1, i.as_bytes());
        }
        for o in outputs {
            bytes(&mut n, 2, o.as_bytes());
        }
        bytes(&mut n, 4, op.as_bytes());
        n
    }

    /// `ModelProto` bytes: ir_version, one default-domain opset, the graph.
    pub(super) fn model(ir: i64, graph: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        int(&mut m, 1, ir);
        let mut opset = Vec::new();
        int(&mut opset, 2, 13);
        bytes(&mut m, 8, &opset);
        bytes(&mut m, 7, graph);
        m
    }
}

use pb::D;

/// Graph: X FLOAT ['N', 4] -> Relu -> Y (declared without a shape).
fn relu_graph() -> Vec<u8> {
    let mut g = Vec::new();
    pb::bytes(&mut g, 1, &pb::node("Relu", &["X"], &["Y"]));
    let tx = pb::tensor_type(1, Some(&[D::P("N"), D::V(4)]));
    pb::bytes(&mut g, 11, &pb::value("X", Some(&tx)));
    let ty = pb::tensor_type(1, None);
    pb::bytes(&mut g, 12, &pb::value("Y", Some(&ty)));
    g
}

// ---------------------------------------------------------------------------
// Fixtures against the independent oracle (onnx package / ONNX Runtime).

fn expected() -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

/// Our view of one tensor in the JSON shape the generator writes.
fn as_json(t: &TensorInfo) -> Value {
    let (elem, shape) = match &t.kind {
        TensorKind::Tensor { elem_type, shape } => (
            serde_json::json!(elem_type),
            match shape {
                None => Value::Null,
                Some(dims) => Value::Array(
                    dims.iter()
                        .map(|d| match d {
                            Dim::Fixed(v) => serde_json::json!(v),
                            Dim::Symbolic(s) => serde_json::json!(s),
                            Dim::Unknown => Value::Null,
                        })
                        .collect(),
                ),
            },
        ),
        TensorKind::NonTensor(_) => (Value::Null, Value::Null),
    };
    serde_json::json!({
        "name": t.name,
        "onnx_type": t.onnx_type_name(),
        "elem_type": elem,
        "shape": shape,
    })
}

#[test]
fn fixtures_match_onnxruntime_and_the_onnx_package() {
    let exp = expected();
    let fixtures = exp["fixtures"].as_object().expect("fixtures object");
    assert!(
        fixtures.len() >= 15,
        "expected.json lists {} fixtures",
        fixtures.len()
    );
    for (file, e) in fixtures {
        let sig = read(file);
        assert_eq!(sig.ir_version, e["ir_version"].as_i64().unwrap(), "{file}");
        let opsets: Vec<(String, i64)> = e["opsets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o[0].as_str().unwrap().to_string(), o[1].as_i64().unwrap()))
            .collect();
        assert_eq!(sig.opsets, opsets, "{file}");

        let ours = |l: &[TensorInfo]| l.iter().map(as_json).collect::<Vec<_>>();
        if let Some(ort) = e["ort"].as_object() {
            // ORT's session view: inputs and overridable initializers exactly.
            assert_eq!(
                ours(&sig.inputs),
                *ort["inputs"].as_array().unwrap(),
                "{file} inputs"
            );
            assert_eq!(
                ours(&sig.overridable_initializers),
                *ort["overridable_initializers"].as_array().unwrap(),
                "{file} overridable initializers"
            );
            // Outputs: exact where we claim to know everything; otherwise
            // whatever we do know must agree with ORT.
            let ort_out = ort["outputs"].as_array().unwrap();
            assert_eq!(names(&sig.outputs).len(), ort_out.len(), "{file}");
            for (t, o) in sig.outputs.iter().zip(ort_out) {
                let mine = as_json(t);
                if t.is_fully_known() {
                    assert_eq!(mine, *o, "{file} output {}", t.name);
                } else {
                    assert!(!sig.output_shapes_complete, "{file}: {} not known", t.name);
                    assert_eq!(mine["name"], o["name"], "{file}");
                    assert_eq!(mine["onnx_type"], o["onnx_type"], "{file}");
                    if let (Some(a), Some(b)) = (mine["shape"].as_array(), o["shape"].as_array()) {
                        assert_eq!(a.len(), b.len(), "{file} {} rank", t.name);
                        for (x, y) in a.iter().zip(b) {
                            assert!(x.is_null() || x == y, "{file} {}: {x} vs {y}", t.name);
                        }
                    }
                }
            }
        } else {
            // No session possible: compare with the graph as declared, minus
            // initializer-backed inputs.
            let d = &e["declared"];
            let inits: Vec<&str> = d["initializers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            let want_in: Vec<Value> = d["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|v| !inits.contains(&v["name"].as_str().unwrap()))
                .cloned()
                .collect();
            assert_eq!(ours(&sig.inputs), want_in, "{file} inputs");
            assert_eq!(
                ours(&sig.outputs),
                *d["outputs"].as_array().unwrap(),
                "{file} outputs"
            );
        }
    }
}

// ---------------------------------------------------------------------------
// Fixtures against the spec (docs/spec/autoconfig.md §3, §4, §13).

#[test]
fn symbolic_batch_dim_reads_as_minus_one() {
    let sig = read("batch_symbolic.onnx");
    assert_eq!(names(&sig.inputs), ["X"], "the weight W is not an input");
    assert!(sig.overridable_initializers.is_empty());
    let x = &sig.inputs[0];
    assert_eq!(
        x.shape(),
        Some(&[sym("N"), Dim::Fixed(3), Dim::Fixed(8), Dim::Fixed(8)][..])
    );
    assert_eq!(x.triton_dims(), Some(vec![-1, 3, 8, 8]));
    assert_eq!(x.triton_data_type(), "TYPE_FP32");
    assert_eq!(sig.outputs[0].triton_dims(), Some(vec![-1, 10]));
    assert!(sig.output_shapes_complete);
    assert!(!sig.output_shapes_inferred);
    assert_eq!(sig.default_opset(), Some(13));
    assert!(sig.external_data.is_empty());
}

#[test]
fn fixed_batch_dim_is_kept() {
    let sig = read("batch_fixed.onnx");
    assert_eq!(sig.inputs[0].triton_dims(), Some(vec![1, 3, 8, 8]));
    assert_eq!(sig.outputs[0].triton_dims(), Some(vec![1, 10]));
}

#[test]
fn rank_zero_io_has_an_empty_shape() {
    let sig = read("scalar_io.onnx");
    for t in sig.inputs.iter().chain(&sig.outputs) {
        assert_eq!(t.shape(), Some(&[][..]), "{}", t.name);
        assert_eq!(t.triton_dims(), Some(vec![]));
        assert!(t.is_fully_known());
    }
    let v = read("vector_batch.onnx");
    assert_eq!(v.inputs[0].triton_dims(), Some(vec![-1]));
    assert_eq!(v.inputs[0].triton_data_type(), "TYPE_INT64");
}

#[test]
fn output_without_shape_is_completed_through_relu() {
    for file in ["relu_no_shape.onnx", "relu_unknown_dims.onnx"] {
        let sig = read(file);
        let y = &sig.outputs[0];
        assert_eq!(y.shape(), Some(&[sym("n"), Dim::Fixed(4)][..]), "{file}");
        assert_eq!(y.shape_source, ShapeSource::Propagated, "{file}");
        assert!(sig.output_shapes_inferred, "{file}");
        assert!(sig.output_shapes_complete, "{file}");
    }
}

#[test]
fn cast_changes_the_element_type_and_untyped_outputs_are_inferred() {
    let sig = read("cast_chain.onnx");
    assert_eq!(sig.inputs[0].triton_data_type(), "TYPE_INT32");
    for name in ["Y", "Z"] {
        let t = by_name(&sig.outputs, name);
        assert_eq!(t.triton_data_type(), "TYPE_FP32", "{name}");
        assert_eq!(
            t.shape(),
            Some(&[sym("batch"), Dim::Fixed(5)][..]),
            "{name}"
        );
    }
    assert_eq!(
        sig.opsets,
        vec![
            (String::new(), 13),
            ("ai.onnx.ml".to_string(), 3),
            ("com.microsoft".to_string(), 1)
        ]
    );
    assert!(sig.output_shapes_complete);
}

#[test]
fn value_info_feeds_the_propagation_and_unknown_ops_leave_gaps() {
    let sig = read("value_info_output.onnx");
    let y = by_name(&sig.outputs, "Y");
    assert_eq!(y.shape(), Some(&[sym("N"), Dim::Fixed(3)][..]));
    // I comes straight out of TopK, outside the propagation subset.
    let i = by_name(&sig.outputs, "I");
    assert_eq!(i.shape(), None);
    assert_eq!(i.triton_data_type(), "TYPE_INT64");
    assert_eq!(
        i.triton_dims(),
        Some(vec![]),
        "unknown rank reads as rank 0"
    );
    assert!(!sig.output_shapes_complete);
    assert_eq!(sig.incomplete_outputs(), ["I"]);
    assert_eq!(names(&sig.value_info), ["V"]);

    let sig = read("unsupported_op_output.onnx");
    assert_eq!(sig.outputs[0].shape(), None);
    assert!(!sig.output_shapes_complete);
    assert!(!sig.output_shapes_inferred);
}

#[test]
fn output_value_info_of_the_same_name_is_used() {
    // Y comes from an op outside the subset but has its own value_info.
    let mut g = Vec::new();
    pb::bytes(&mut g, 1, &pb::node("Transpose", &["X"], &["Y"]));
    let tx = pb::tensor_type(1, Some(&[D::P("N"), D::V(4)]));
    pb::bytes(&mut g, 11, &pb::value("X", Some(&tx)));
    let ty = pb::tensor_type(1, Some(&[D::U, D::P("N")]));
    pb::bytes(&mut g, 12, &pb::value("Y", Some(&ty)));
    let vi = pb::tensor_type(1, Some(&[D::V(4), D::P("M")]));
    pb::bytes(&mut g, 13, &pb::value("Y", Some(&vi)));
    let sig = from_bytes(&pb::model(8, &g)).unwrap();
    let y = &sig.outputs[0];
    // the unknown dim is filled, the declared symbolic one kept
    assert_eq!(y.shape(), Some(&[Dim::Fixed(4), sym("N")][..]));
    assert_eq!(y.shape_source, ShapeSource::ValueInfo);
    assert!(sig.output_shapes_complete);
}

#[test]
fn initializers_listed_as_inputs_depend_on_the_ir_version() {
    let ir8 = read("init_input_ir8.onnx");
    assert_eq!(names(&ir8.inputs), ["X"]);
    assert_eq!(names(&ir8.overridable_initializers), ["W"]);
    assert_eq!(ir8.overridable_initializers[0].triton_dims(), Some(vec![3]));
    // Add broadcasts ['N', 3] with [3]
    assert_eq!(ir8.outputs[0].shape(), Some(&[sym("N"), Dim::Fixed(3)][..]));

    let ir3 = read("init_input_ir3.onnx");
    assert_eq!(ir3.ir_version, 3);
    assert_eq!(names(&ir3.inputs), ["X"]);
    assert!(ir3.overridable_initializers.is_empty());
}

#[test]
fn every_element_type_maps_per_the_table() {
    // docs/spec/autoconfig.md §4
    let table = [
        ("BOOL", "TYPE_BOOL"),
        ("UINT8", "TYPE_UINT8"),
        ("UINT16", "TYPE_UINT16"),
        ("UINT32", "TYPE_UINT32"),
        ("UINT64", "TYPE_UINT64"),
        ("INT8", "TYPE_INT8"),
        ("INT16", "TYPE_INT16"),
        ("INT32", "TYPE_INT32"),
        ("INT64", "TYPE_INT64"),
        ("BFLOAT16", "TYPE_BF16"),
        ("FLOAT16", "TYPE_FP16"),
        ("FLOAT", "TYPE_FP32"),
        ("DOUBLE", "TYPE_FP64"),
        ("STRING", "TYPE_STRING"),
    ];
    let sig = read("all_types.onnx");
    assert_eq!(sig.inputs.len(), table.len());
    for (onnx, triton) in table {
        for t in [
            by_name(&sig.inputs, &format!("IN_{onnx}")),
            by_name(&sig.outputs, &format!("OUT_{onnx}")),
        ] {
            assert_eq!(t.triton_data_type(), triton, "{}", t.name);
            assert_eq!(onnx_type_name(t.elem_type()), onnx, "{}", t.name);
        }
    }
    let c = read("complex64.onnx");
    assert_eq!(c.outputs[0].elem_type(), 14);
    assert_eq!(c.outputs[0].triton_data_type(), "TYPE_INVALID");
    assert_eq!(onnx_type_name(14), "COMPLEX64");
    for unmapped in [0, 14, 15, 17, 21, 22, 23, 99, -1] {
        assert_eq!(triton_data_type(unmapped), "TYPE_INVALID", "{unmapped}");
    }
}

#[test]
fn non_tensor_types_are_named_as_triton_names_them() {
    let sig = read("sequence_output.onnx");
    assert_eq!(
        sig.outputs[0].kind,
        TensorKind::NonTensor("ONNX_TYPE_SEQUENCE")
    );
    assert_eq!(sig.outputs[0].triton_dims(), None);
    assert_eq!(sig.outputs[0].triton_data_type(), "TYPE_INVALID");

    let sig = read("nontensor_io.onnx");
    let kinds: Vec<(&str, &str)> = sig
        .inputs
        .iter()
        .map(|t| (t.name.as_str(), t.onnx_type_name()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("M", "ONNX_TYPE_MAP"),
            ("O", "ONNX_TYPE_UNKNOWN"),
            ("S", "ONNX_TYPE_SPARSETENSOR"),
            ("Q", "ONNX_TYPE_OPAQUE"),
            ("Seq", "ONNX_TYPE_SEQUENCE"),
            ("T", "ONNX_TYPE_TENSOR"),
        ]
    );
}

#[test]
fn symbolic_unknown_and_zero_dims() {
    let sig = read("dims_mixed.onnx");
    let a = by_name(&sig.inputs, "A");
    assert_eq!(
        a.shape(),
        Some(&[sym("batch"), sym("seq"), Dim::Fixed(16), Dim::Unknown][..])
    );
    assert_eq!(a.triton_dims(), Some(vec![-1, -1, 16, -1]));
    assert_eq!(by_name(&sig.inputs, "Z").triton_dims(), Some(vec![0, 3]));
    // B is declared with an unknown dim and nothing knows more
    assert!(!sig.output_shapes_complete);
    assert_eq!(sig.incomplete_outputs(), ["B"]);
}

#[test]
fn external_data_is_never_opened() {
    let sig = read("external_data/model.onnx");
    assert_eq!(sig.external_data, ["weights.bin"]);
    assert_eq!(sig.inputs[0].triton_dims(), Some(vec![-1, 64]));

    // The model file alone, without its side file, reads the same.
    let dir = tempfile::tempdir().unwrap();
    let alone = dir.path().join("model.onnx");
    std::fs::copy(fixture("external_data/model.onnx"), &alone).unwrap();
    let again = read_signature(&alone).unwrap();
    assert_eq!(again.inputs, sig.inputs);
    assert_eq!(again.outputs, sig.outputs);

    // A directory stands for the model.onnx inside it.
    let via_dir = read_signature(dir.path()).unwrap();
    assert_eq!(via_dir.path, alone);
    assert_eq!(via_dir.outputs, sig.outputs);
}

#[test]
fn triton_qa_models_read_in_place() {
    let dir = crate_root().join("../shared/conformance/L0_model_config/autofill_noplatform/onnx");
    if !dir.is_dir() {
        eprintln!("skipped: {} is not present", dir.display());
        return;
    }
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let model_dir = entry.unwrap().path();
        let model = model_dir.join("1").join("model.onnx");
        if !model.is_file() {
            continue;
        }
        seen += 1;
        let name = model_dir.file_name().unwrap().to_string_lossy().to_string();
        let sig = read_signature(&model).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(names(&sig.inputs), ["INPUT0", "INPUT1"], "{name}");
        assert_eq!(names(&sig.outputs), ["OUTPUT0", "OUTPUT1"], "{name}");
        // the QA models: INT32 inputs, INT8 outputs, 16 wide; all but
        // bad_max_batch_size have a variable first dim
        let want: Vec<i64> = if name == "bad_max_batch_size" {
            vec![16]
        } else {
            vec![-1, 16]
        };
        for t in &sig.inputs {
            assert_eq!(t.triton_data_type(), "TYPE_INT32", "{name}");
            assert_eq!(t.triton_dims().as_ref(), Some(&want), "{name}");
        }
        for t in &sig.outputs {
            assert_eq!(t.triton_data_type(), "TYPE_INT8", "{name}");
            assert_eq!(t.triton_dims().as_ref(), Some(&want), "{name}");
        }
        assert!(sig.output_shapes_complete, "{name}");
    }
    assert!(
        seen >= 7,
        "only {seen} QA models found in {}",
        dir.display()
    );
}

// ---------------------------------------------------------------------------
// Hand-built wire-format corner cases.

#[test]
fn unknown_fields_of_every_wire_type_are_skipped() {
    let mut g = relu_graph();
    // unknown graph fields: varint, fixed64, fixed32, bytes, group
    pb::int(&mut g, 900, 7);
    pb::key(&mut g, 901, 1);
    g.extend_from_slice(&[0; 8]);
    pb::key(&mut g, 902, 5);
    g.extend_from_slice(&[0; 4]);
    pb::bytes(&mut g, 903, b"whatever");
    pb::key(&mut g, 904, 3);
    pb::int(&mut g, 1, 1);
    pb::key(&mut g, 904, 4);
    let mut m = pb::model(8, &g);
    // unknown model fields after the graph, and a doc string
    pb::bytes(&mut m, 6, b"doc");
    pb::int(&mut m, 777, 1);
    let sig = from_bytes(&m).unwrap();
    assert_eq!(names(&sig.inputs), ["X"]);
    assert_eq!(sig.outputs[0].triton_dims(), Some(vec![-1, 4]));
}

#[test]
fn packed_and_unpacked_dims_and_sparse_initializers() {
    let mut g = relu_graph();
    // initializer W with packed dims [2, 3]
    let mut t = Vec::new();
    let mut packed = Vec::new();
    pb::varint(&mut packed, 2);
    pb::varint(&mut packed, 3);
    pb::bytes(&mut t, 1, &packed);
    pb::int(&mut t, 2, 1);
    pb::bytes(&mut t, 8, b"W");
    pb::bytes(&mut t, 9, &[0; 24]);
    pb::bytes(&mut g, 5, &t);
    // sparse initializer S: values tensor named S, dense dims [5]
    let mut values = Vec::new();
    pb::int(&mut values, 1, 1);
    pb::int(&mut values, 2, 6);
    pb::bytes(&mut values, 8, b"S");
    let mut sp = Vec::new();
    pb::bytes(&mut sp, 1, &values);
    pb::int(&mut sp, 3, 5);
    pb::bytes(&mut g, 15, &sp);
    for (name, dims) in [("W", vec![D::V(2), D::V(3)]), ("S", vec![D::V(5)])] {
        let tt = pb::tensor_type(if name == "S" { 6 } else { 1 }, Some(&dims));
        pb::bytes(&mut g, 11, &pb::value(name, Some(&tt)));
    }
    let sig = from_bytes(&pb::model(7, &g)).unwrap();
    assert_eq!(names(&sig.inputs), ["X"]);
    assert_eq!(names(&sig.overridable_initializers), ["W", "S"]);
}

#[test]
fn errors_name_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);

    let missing = p("nope.onnx");
    let e = read_signature(&missing).unwrap_err();
    assert!(matches!(e, OnnxError::NotFound { .. }), "{e}");
    assert!(e.to_string().contains("nope.onnx"), "{e}");
    assert_eq!(e.path(), missing);

    std::fs::create_dir(p("empty_dir")).unwrap();
    let e = read_signature(&p("empty_dir")).unwrap_err();
    assert!(matches!(e, OnnxError::NoModelInDirectory { .. }), "{e}");
    assert!(e.to_string().contains("model.onnx"), "{e}");

    std::fs::write(p("empty.onnx"), b"").unwrap();
    let e = read_signature(&p("empty.onnx")).unwrap_err();
    assert!(matches!(e, OnnxError::Empty { .. }), "{e}");

    std::fs::write(
        p("text.onnx"),
        b"name: \"model\"\nplatform: \"onnxruntime_onnx\"\n",
    )
    .unwrap();
    let e = read_signature(&p("text.onnx")).unwrap_err();
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e}");
    assert!(
        e.to_string().contains("text.onnx: not an ONNX model"),
        "{e}"
    );

    // deterministic pseudo-random bytes
    let mut x: u32 = 12345;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    std::fs::write(p("noise.onnx"), &noise).unwrap();
    let e = read_signature(&p("noise.onnx")).unwrap_err();
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e}");

    // valid protobufs that are TensorProtos, not ModelProtos
    let mut t = Vec::new();
    pb::int(&mut t, 1, 3);
    pb::int(&mut t, 2, 1);
    pb::bytes(&mut t, 9, &[0; 12]);
    let e = from_bytes(&t).unwrap_err();
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e}");
    assert!(e.to_string().contains("no graph"), "{e}");
    // with a name (ModelProto's opset_import number) that is no OperatorSetId
    let mut named = Vec::new();
    pb::int(&mut named, 1, 3);
    pb::bytes(&mut named, 8, b"x");
    pb::bytes(&mut named, 9, &[0; 12]);
    let e = from_bytes(&named).unwrap_err();
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e}");
}

#[test]
fn truncation_is_reported_as_such() {
    let full = std::fs::read(fixture("batch_symbolic.onnx")).unwrap();
    for cut in [full.len() - 1, full.len() / 2, 40] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.onnx");
        std::fs::write(&path, &full[..cut]).unwrap();
        let e = read_signature(&path).unwrap_err();
        assert!(
            matches!(e, OnnxError::Truncated { .. }),
            "cut at {cut}: {e}"
        );
        assert!(
            e.to_string().contains("cut.onnx: truncated ONNX model"),
            "{e}"
        );
    }
    // A graph that is the last field: every strict prefix fails.
    let m = pb::model(8, &relu_graph());
    for cut in 0..m.len() {
        assert!(
            from_bytes(&m[..cut]).is_err(),
            "prefix of {cut} bytes was accepted"
        );
    }
    assert!(from_bytes(&m).is_ok());
}

#[test]
fn wrong_wire_types_are_malformed() {
    // graph (7) as a varint: never got to a graph, so not ONNX at all
    let mut m = Vec::new();
    pb::int(&mut m, 1, 8);
    pb::int(&mut m, 7, 1);
    let e = from_bytes(&m).unwrap_err();
    assert!(matches!(e, OnnxError::NotOnnx { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("ModelProto.graph (7) has wire type varint"),
        "{e}"
    );

    // elem_type as bytes inside an input type
    let mut tt = Vec::new();
    pb::bytes(&mut tt, 1, b"x");
    let bad_type = pb::msg(1, &tt);
    let mut g = Vec::new();
    pb::bytes(&mut g, 11, &pb::value("X", Some(&bad_type)));
    let e = from_bytes(&pb::model(8, &g)).unwrap_err();
    assert!(matches!(e, OnnxError::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("elem_type"), "{e}");
    assert!(
        e.to_string().contains("graph.input.type.tensor_type"),
        "{e}"
    );

    // a nested length running past its parent
    let mut g = Vec::new();
    pb::key(&mut g, 11, 2);
    pb::varint(&mut g, 3);
    pb::bytes(&mut g, 1, b"longer than three");
    let e = from_bytes(&pb::model(8, &g)).unwrap_err();
    assert!(matches!(e, OnnxError::Malformed { .. }), "{e}");
}

#[test]
fn absurd_ranks_are_refused() {
    let dims: Vec<D> = (0..2000).map(|_| D::V(1)).collect();
    let tt = pb::tensor_type(1, Some(&dims));
    let mut g = Vec::new();
    pb::bytes(&mut g, 11, &pb::value("X", Some(&tt)));
    let e = from_bytes(&pb::model(8, &g)).unwrap_err();
    assert!(matches!(e, OnnxError::Malformed { .. }), "{e}");
    assert!(e.to_string().contains("more than 1024 dimensions"), "{e}");
    // 1024 is still fine
    let dims: Vec<D> = (0..1024).map(|_| D::V(1)).collect();
    let tt = pb::tensor_type(1, Some(&dims));
    let mut g = Vec::new();
    pb::bytes(&mut g, 11, &pb::value("X", Some(&tt)));
    let sig = from_bytes(&pb::model(8, &g)).unwrap();
    assert_eq!(sig.inputs[0].shape().map(<[Dim]>::len), Some(1024));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = from_bytes(&bytes);
    }

    #[test]
    fn mutated_and_truncated_models_never_panic(
        cut in 0usize..2000,
        flips in proptest::collection::vec((0usize..2000, any::<u8>()), 0..6),
    ) {
        let mut bytes = pb::model(8, &relu_graph());
        bytes.extend(std::fs::read(fixture("cast_chain.onnx")).unwrap());
        for (at, v) in flips {
            let n = bytes.len();
            bytes[at % n] = v;
        }
        let cut = cut % (bytes.len() + 1);
        let _ = from_bytes(&bytes[..cut]);
    }
}

// ---------------------------------------------------------------------------
// A large single-file model: memory must stay flat.

const BIG_ENV: &str = "TRITONCTL_ONNX_BIG_MODEL";
const BIG_PAYLOAD: u64 = 300 * 1024 * 1024;

/// Writes a ~300 MB model: Relu graph plus one FLOAT initializer whose
/// raw_data is 300 MB; the graph inputs and outputs come *after* the
/// payload, so the reader has to get past it. The payload is a hole
/// (seek), so the file costs no disk space.
fn write_big_model(path: &Path) {
    let mut init_head = Vec::new();
    pb::int(&mut init_head, 1, (BIG_PAYLOAD / 4) as i64);
    pb::int(&mut init_head, 2, 1);
    pb::bytes(&mut init_head, 8, b"W");
    pb::key(&mut init_head, 9, 2);
    pb::varint(&mut init_head, BIG_PAYLOAD);
    let init_len = init_head.len() as u64 + BIG_PAYLOAD;

    let mut node = Vec::new();
    pb::bytes(&mut node, 1, &pb::node("Relu", &["X"], &["Y"]));
    let mut init_key = Vec::new();
    pb::key(&mut init_key, 5, 2);
    pb::varint(&mut init_key, init_len);
    let mut tail = Vec::new();
    let tx = pb::tensor_type(1, Some(&[D::P("N"), D::V(4)]));
    pb::bytes(&mut tail, 11, &pb::value("X", Some(&tx)));
    let ty = pb::tensor_type(1, None);
    pb::bytes(&mut tail, 12, &pb::value("Y", Some(&ty)));
    let graph_len = (node.len() + init_key.len()) as u64 + init_len + tail.len() as u64;

    let mut head = Vec::new();
    pb::int(&mut head, 1, 8);
    let mut opset = Vec::new();
    pb::int(&mut opset, 2, 13);
    pb::bytes(&mut head, 8, &opset);
    pb::key(&mut head, 7, 2);
    pb::varint(&mut head, graph_len);

    let mut f = std::fs::File::create(path).unwrap();
    for part in [&head, &node, &init_key, &init_head] {
        f.write_all(part).unwrap();
    }
    f.seek(SeekFrom::Current(BIG_PAYLOAD as i64)).unwrap();
    f.write_all(&tail).unwrap();
    f.flush().unwrap();
}

fn vm_hwm_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn big_single_file_model_reads_with_flat_memory() {
    if vm_hwm_kb().is_none() {
        eprintln!("skipped: /proc/self/status has no VmHWM on this system");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.onnx");
    write_big_model(&path);
    assert!(std::fs::metadata(&path).unwrap().len() > BIG_PAYLOAD);
    // Measure in a fresh process so parallel tests cannot disturb the peak.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "onnx::tests::big_model_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(BIG_ENV, &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "child did not run:\n{stdout}\n{stderr}"
    );
}

/// Run by `big_single_file_model_reads_with_flat_memory` in a child process.
#[test]
#[ignore = "run by big_single_file_model_reads_with_flat_memory"]
fn big_model_child() {
    let path = PathBuf::from(std::env::var_os(BIG_ENV).expect("set by the parent test"));
    let before = vm_hwm_kb().unwrap();
    let start = Instant::now();
    let sig = read_signature(&path).unwrap();
    let took = start.elapsed();
    let after = vm_hwm_kb().unwrap();
    assert_eq!(names(&sig.inputs), ["X"]);
    assert_eq!(sig.outputs[0].triton_dims(), Some(vec![-1, 4]));
    assert!(took < Duration::from_secs(5), "took {took:?}");
    let growth_mb = (after.saturating_sub(before)) / 1024;
    println!("peak RSS growth {growth_mb} MB, {took:?}");
    assert!(growth_mb < 50, "peak RSS grew by {growth_mb} MB");
}
