//! Unit tests of the pieces of the pipeline on signatures built in memory;
//! tests/cli/autoconfig.rs drives the whole command on real model files.

use super::ort::{self, config_dims, data_type_of, onnx_type_of};
use super::*;
use crate::onnx::{Dim, TensorInfo, TensorKind};
use crate::schema::inference::model_instance_group::Kind;
use crate::schema::inference::{DataType, ModelInstanceGroup, ModelTensorReshape};

fn dims(spec: &[&str]) -> Vec<Dim> {
    spec.iter()
        .map(|d| match d.parse::<i64>() {
            Ok(v) => Dim::Fixed(v),
            Err(_) if *d == "?" => Dim::Unknown,
            Err(_) => Dim::Symbolic(d.to_string()),
        })
        .collect()
}

fn t(name: &str, elem_type: i32, shape: &[&str]) -> TensorInfo {
    TensorInfo {
        name: name.into(),
        kind: TensorKind::Tensor {
            elem_type,
            shape: Some(dims(shape)),
        },
        shape_source: ShapeSource::Declared,
    }
}

fn sig(inputs: Vec<TensorInfo>, outputs: Vec<TensorInfo>) -> Signature {
    Signature {
        path: "m/1/model.onnx".into(),
        ir_version: 8,
        opsets: vec![(String::new(), 13)],
        inputs,
        outputs,
        overridable_initializers: Vec::new(),
        value_info: Vec::new(),
        output_shapes_inferred: false,
        output_shapes_complete: true,
        external_data: Vec::new(),
    }
}

/// A1: X FP32 ['N',3,8,8] -> Y FP32 ['N',10].
fn a1() -> Signature {
    sig(
        vec![t("X", 1, &["N", "3", "8", "8"])],
        vec![t("Y", 1, &["N", "10"])],
    )
}

/// A2: fixed first dims.
fn a2() -> Signature {
    sig(
        vec![t("X", 1, &["1", "3", "8", "8"])],
        vec![t("Y", 1, &["1", "10"])],
    )
}

fn cfg(text: &str) -> ModelConfig {
    let p = crate::config::ParsedConfig::parse(text.to_string());
    assert!(p.diagnostics.is_empty(), "{text}: {:?}", p.diagnostics);
    let mut c = p.config.unwrap();
    crate::config::normalize::autofill_backend_fields(
        &mut c,
        "m",
        &DirFacts {
            has_subdir: true,
            first_subdir_files: vec!["model.onnx".into()],
            first_subdir_dirs: vec![],
        },
    )
    .unwrap();
    c
}

fn run(c: &ModelConfig, s: &Signature, d: i64) -> (Result<Completion, LoadFailure>, Vec<Note>) {
    let mut notes = Vec::new();
    (ort::autocomplete(c, s, "m", d, &mut notes), notes)
}

const WARN4: &str = "autofilled max_batch_size to 4 for model 'm' since batching is supporrted but no max_batch_size is specified in model configuration. Must specify max_batch_size to utilize autofill with a larger max batch size";

#[test]
fn dims_drop_the_batch_dim_and_scalars_become_one() {
    assert_eq!(config_dims(&[-1, 3, 8, 8], 4), (vec![3, 8, 8], None));
    assert_eq!(config_dims(&[-1, 3, 8, 8], 0), (vec![-1, 3, 8, 8], None));
    assert_eq!(
        config_dims(&[-1], 4),
        (vec![1], Some(ModelTensorReshape { shape: vec![] }))
    );
    assert_eq!(config_dims(&[], 0), (vec![1], None));
    assert_eq!(config_dims(&[-1, -1, 5], 1), (vec![-1, 5], None));
    assert_eq!(config_dims(&[0, 3], 0), (vec![0, 3], None));
}

#[test]
fn data_type_table() {
    let table = [
        (9, DataType::TypeBool),
        (2, DataType::TypeUint8),
        (4, DataType::TypeUint16),
        (12, DataType::TypeUint32),
        (13, DataType::TypeUint64),
        (3, DataType::TypeInt8),
        (5, DataType::TypeInt16),
        (6, DataType::TypeInt32),
        (7, DataType::TypeInt64),
        (16, DataType::TypeBf16),
        (10, DataType::TypeFp16),
        (1, DataType::TypeFp32),
        (11, DataType::TypeFp64),
        (8, DataType::TypeString),
    ];
    for (onnx, triton) in table {
        assert_eq!(data_type_of(onnx), triton as i32, "ONNX type {onnx}");
        assert_eq!(onnx_type_of(triton as i32), Some(onnx), "{triton:?}");
    }
    // COMPLEX64/128, the FLOAT8 family, UINT4/INT4, FLOAT4, UNDEFINED, ids
    // past the table.
    for onnx in [0, 14, 15, 17, 18, 19, 20, 21, 22, 23, 24, 99] {
        assert_eq!(data_type_of(onnx), DataType::TypeInvalid as i32, "{onnx}");
    }
    assert_eq!(onnx_type_of(DataType::TypeInvalid as i32), None);
}

#[test]
fn batchable_model_gets_the_default_max_batch_size_and_a_dynamic_batcher() {
    let (done, notes) = run(&cfg(""), &a1(), 4);
    let done = done.unwrap();
    assert!(!done.skipped);
    assert_eq!(done.max_batch_size, Some(4));
    assert!(done.dynamic_batching);
    let inputs = done.inputs.unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "X");
    assert_eq!(inputs[0].data_type, DataType::TypeFp32 as i32);
    assert_eq!(inputs[0].dims, vec![3, 8, 8]);
    assert_eq!(inputs[0].reshape, None);
    assert_eq!(done.outputs.unwrap()[0].dims, vec![10]);
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].text, WARN4);
    assert_eq!(notes[0].level, NoteLevel::Warning);
}

#[test]
fn default_max_batch_size_one_zero_and_negative() {
    // A6: 1 -> no dynamic batching.
    let done = run(&cfg(""), &a1(), 1).0.unwrap();
    assert_eq!(done.max_batch_size, Some(1));
    assert!(!done.dynamic_batching);
    // A7: 0 -> max_batch_size 0 (still warned), first dims kept.
    let (done, notes) = run(&cfg(""), &a1(), 0);
    let done = done.unwrap();
    assert_eq!(done.max_batch_size, Some(0));
    assert!(!done.dynamic_batching);
    assert_eq!(done.inputs.unwrap()[0].dims, vec![-1, 3, 8, 8]);
    assert!(notes[0]
        .text
        .starts_with("autofilled max_batch_size to 0 for model 'm'"));
    // Negative behaves as 0.
    let done = run(&cfg(""), &a1(), -5).0.unwrap();
    assert_eq!(done.max_batch_size, Some(0));
}

#[test]
fn configured_max_batch_size_is_kept() {
    // A8.
    let (done, notes) = run(&cfg("max_batch_size: 16"), &a1(), 4);
    let done = done.unwrap();
    assert_eq!(done.max_batch_size, None);
    assert!(done.dynamic_batching);
    assert!(notes.is_empty());
    let mut c = cfg("max_batch_size: 16");
    done.apply(&mut c);
    normalize::normalize(&mut c);
    let Some(SchedulingChoice::DynamicBatching(db)) = &c.scheduling_choice else {
        panic!("no dynamic batching")
    };
    assert_eq!(db.preferred_batch_size, vec![16]);
    // max_batch_size 1 from the config: no dynamic batcher.
    assert!(
        !run(&cfg("max_batch_size: 1"), &a1(), 4)
            .0
            .unwrap()
            .dynamic_batching
    );
}

#[test]
fn unbatchable_model_with_max_batch_size_fails() {
    // A9.
    let f = run(&cfg("max_batch_size: 8"), &a2(), 4).0.unwrap_err();
    assert_eq!(
        f.text,
        "autofill failed for model 'm': model does not support batching while non-zero max_batch_size is specified"
    );
    assert_eq!(f.status, "Invalid argument");
    assert_eq!(f.stage, Stage::Autocomplete);
    // Without max_batch_size nothing happens to it.
    let done = run(&cfg(""), &a2(), 4).0.unwrap();
    assert_eq!(done.max_batch_size, None);
    assert_eq!(done.inputs.unwrap()[0].dims, vec![1, 3, 8, 8]);
}

#[test]
fn one_tensor_decides_against_batching() {
    // A5: an output with a fixed first dim.
    let s = sig(vec![t("X", 1, &["N", "4"])], vec![t("Y", 1, &["1", "4"])]);
    let done = run(&cfg(""), &s, 4).0.unwrap();
    assert_eq!(done.max_batch_size, None);
    assert_eq!(done.inputs.unwrap()[0].dims, vec![-1, 4]);
    // A scalar output.
    let s = sig(
        vec![t("X", 1, &["N", "4"])],
        vec![t("Y", 1, &["N", "4"]), t("Z", 1, &[])],
    );
    let done = run(&cfg(""), &s, 4).0.unwrap();
    assert_eq!(done.max_batch_size, None);
    let outs = done.outputs.unwrap();
    assert_eq!(
        (outs[1].dims.clone(), outs[1].reshape.clone()),
        (vec![1], None)
    );
    // An unknown first dim counts as variable.
    let s = sig(vec![t("X", 1, &["?", "5"])], vec![t("Y", 1, &["?", "5"])]);
    assert_eq!(run(&cfg(""), &s, 4).0.unwrap().max_batch_size, Some(4));
}

#[test]
fn schedulers_already_present() {
    // A10: sequence batching: no dynamic batching added.
    let done = run(&cfg("sequence_batching { }"), &a1(), 4).0.unwrap();
    assert_eq!(done.max_batch_size, Some(4));
    assert!(!done.dynamic_batching);
    // A written dynamic_batching stays as written.
    let c = cfg("dynamic_batching { max_queue_delay_microseconds: 100 }");
    let done = run(&c, &a1(), 4).0.unwrap();
    assert!(!done.dynamic_batching);
}

#[test]
fn partial_io_matrix() {
    let input = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] } ]";
    let output = "output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 10 ] } ]";
    // A11: inputs and outputs: nothing at all (info note).
    let (done, notes) = run(&cfg(&format!("{input} {output}")), &a1(), 4);
    let done = done.unwrap();
    assert!(done.skipped);
    assert_eq!(done.max_batch_size, None);
    assert!(!done.dynamic_batching);
    assert_eq!(
        notes[0].text,
        "skipping model configuration auto-complete for 'm': inputs and outputs already specified"
    );
    // A12: only inputs: max_batch_size, outputs and the batcher added.
    let done = run(&cfg(input), &a1(), 4).0.unwrap();
    assert!(done.inputs.is_none());
    assert_eq!(done.outputs.unwrap()[0].name, "Y");
    assert_eq!(done.max_batch_size, Some(4));
    assert!(done.dynamic_batching);
    // Only outputs.
    let done = run(&cfg(output), &a1(), 4).0.unwrap();
    assert!(done.outputs.is_none());
    assert_eq!(done.inputs.unwrap()[0].name, "X");
    // batch_input counts as an input: nothing completed.
    let c = cfg(&format!(
        "batch_input [ {{ kind: BATCH_ELEMENT_COUNT target_name: \"C\" data_type: TYPE_FP32 source_input: \"X\" }} ] {output}"
    ));
    assert!(run(&c, &a1(), 4).0.unwrap().skipped);
}

#[test]
fn non_tensor_io_is_unsupported() {
    let mut s = a1();
    s.outputs[0].kind = TensorKind::NonTensor("ONNX_TYPE_SEQUENCE");
    let f = run(&cfg(""), &s, 4).0.unwrap_err();
    assert_eq!(f.status, "Unsupported");
    assert_eq!(
        f.text,
        "Unsupported ONNX Type 'ONNX_TYPE_SEQUENCE' for I/O 'Y', expected 'ONNX_TYPE_TENSOR'."
    );
    // Also when auto-complete is skipped: the instance fails.
    let c = cfg("input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 10 ] } ] max_batch_size: 4");
    let f = ort::instance_checks(&c, &s, "m").unwrap_err();
    assert!(f
        .text
        .starts_with("Unsupported ONNX Type 'ONNX_TYPE_SEQUENCE'"));
}

fn check(c: &str, s: &Signature) -> Result<(), String> {
    ort::instance_checks(&cfg(c), s, "m").map_err(|f| f.text)
}

#[test]
fn instance_checks_accept_what_auto_complete_writes() {
    for (s, d) in [(a1(), 4), (a1(), 0), (a2(), 4)] {
        let mut c = cfg("");
        let done = run(&c, &s, d).0.unwrap();
        done.apply(&mut c);
        assert_eq!(ort::instance_checks(&c, &s, "m"), Ok(()));
    }
    // Scalars with and without batching.
    for shape in [&["N"][..], &[]] {
        let s = sig(vec![t("X", 7, shape)], vec![t("Y", 7, shape)]);
        let mut c = cfg("");
        run(&c, &s, 4).0.unwrap().apply(&mut c);
        assert_eq!(ort::instance_checks(&c, &s, "m"), Ok(()));
    }
}

#[test]
fn instance_check_messages() {
    let x = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] } ]";
    let y = "output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 10 ] } ]";
    // A11: no max_batch_size, dims without the batch dim.
    assert_eq!(
        check(&format!("{x} {y}"), &a1()).unwrap_err(),
        "model 'm', tensor 'X': the model expects 4 dimensions (shape [-1,3,8,8]) but the model configuration specifies 3 dimensions (shape [3,8,8])"
    );
    // Batching config, too many dims.
    let x3 = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8, 1 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {x3} {y}"), &a1()).unwrap_err(),
        "model 'm', tensor 'X': the model expects 4 dimensions (shape [-1,3,8,8]) but the model configuration specifies 5 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,3,8,8,1])"
    );
    // Batching config on a model without a batch dim.
    assert_eq!(
        check(&format!("max_batch_size: 2 {x} {y}"), &a2()).unwrap_err(),
        "model 'm', tensor 'X': for the model to support batching the shape should have at least 1 dimension and the first dimension must be -1; but shape expected by the model is [1,3,8,8]"
    );
    // Count.
    let extra = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 3, 8, 8 ] }, { name: \"Z\" data_type: TYPE_FP32 dims: [ 1 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {extra} {y}"), &a1()).unwrap_err(),
        "unable to load model 'm', configuration expects 2 inputs, model provides 1"
    );
    // Unknown names: sorted, overridable initializers included.
    let mut s = sig(
        vec![t("b", 1, &["N", "2"]), t("a", 1, &["N", "2"])],
        vec![t("out", 1, &["N", "2"])],
    );
    s.overridable_initializers = vec![t("W", 1, &["2"])];
    let ins = "input [ { name: \"a\" data_type: TYPE_FP32 dims: [ 2 ] }, { name: \"c\" data_type: TYPE_FP32 dims: [ 2 ] } ]";
    let out = "output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 2 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {ins} {out}"), &s).unwrap_err(),
        "unexpected inference input 'c', allowed inputs are: W, a, b"
    );
    let ins = "input [ { name: \"a\" data_type: TYPE_FP32 dims: [ 2 ] }, { name: \"b\" data_type: TYPE_FP32 dims: [ 2 ] } ]";
    let bad_out = "output [ { name: \"o\" data_type: TYPE_FP32 dims: [ 2 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {ins} {bad_out}"), &s).unwrap_err(),
        "unexpected inference output 'o', allowed outputs are: out"
    );
    // An overridable initializer is accepted only as an optional input,
    // which needs a non-batching config.
    let with_w = "input [ { name: \"a\" data_type: TYPE_FP32 dims: [ -1, 2 ] }, { name: \"b\" data_type: TYPE_FP32 dims: [ -1, 2 ] }, { name: \"W\" data_type: TYPE_FP32 dims: [ 2 ] optional: true } ] output [ { name: \"out\" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]";
    assert_eq!(check(with_w, &s), Ok(()));
    let with_w_batching = "max_batch_size: 2 input [ { name: \"a\" data_type: TYPE_FP32 dims: [ 2 ] }, { name: \"b\" data_type: TYPE_FP32 dims: [ 2 ] }, { name: \"W\" data_type: TYPE_FP32 dims: [ 2 ] optional: true } ] output [ { name: \"out\" data_type: TYPE_FP32 dims: [ 2 ] } ]";
    assert_eq!(
        check(with_w_batching, &s).unwrap_err(),
        "unable to load model 'm', optional input 'W' is not supported for models that support batching"
    );
    // Data types: the model side in Triton API names.
    let s = sig(vec![t("X", 8, &["N"])], vec![t("Y", 8, &["N"])]);
    let xs = "input [ { name: \"X\" data_type: TYPE_INT32 dims: [ 1 ] } ] output [ { name: \"Y\" data_type: TYPE_STRING dims: [ 1 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {xs}"), &s).unwrap_err(),
        "unable to load model 'm', configuration expects datatype TYPE_INT32 for input 'X', model provides TYPE_BYTES"
    );
    let xs = "input [ { name: \"X\" dims: [ 1 ] } ] output [ { name: \"Y\" data_type: TYPE_STRING dims: [ 1 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {xs}"), &s).unwrap_err(),
        "unsupported datatype TYPE_INVALID for input 'X' for model 'm'"
    );
    // Outputs compare exactly, inputs loosely.
    let s = sig(vec![t("X", 1, &["N", "?"])], vec![t("Y", 1, &["N", "16"])]);
    let loose = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 5 ] } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 16 ] } ]";
    assert_eq!(check(&format!("max_batch_size: 2 {loose}"), &s), Ok(()));
    let exact = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 5 ] } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ -1 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {exact}"), &s).unwrap_err(),
        "model 'm', tensor 'Y': the model expects 2 dimensions (shape [-1,16]) but the model configuration specifies 2 dimensions (an initial batch dimension because max_batch_size > 0 followed by the explicit tensor shape, making complete shape [-1,-1])"
    );
    // A reshape replaces dims in the comparison.
    let reshaped = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 5 ] } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 4, 4 ] reshape { shape: [ 16 ] } } ]";
    assert_eq!(check(&format!("max_batch_size: 2 {reshaped}"), &s), Ok(()));
    // Scalars take only 1s.
    let s = sig(vec![t("X", 1, &[])], vec![t("Y", 1, &[])]);
    let sc = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 2 ] } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 1 ] } ]";
    assert_eq!(
        check(sc, &s).unwrap_err(),
        "unable to load model 'm', scalar tensor 'X', should only provide 1 in the model configuration when the model doesn't support batching. Model configuration provided: [2]."
    );
    // Ragged inputs need the model shape [-1] (two spaces, sic).
    let s = sig(vec![t("X", 1, &["N", "4"])], vec![t("Y", 1, &["N", "4"])]);
    let rg = "input [ { name: \"X\" data_type: TYPE_FP32 dims: [ 4 ] allow_ragged_batch: true } ] output [ { name: \"Y\" data_type: TYPE_FP32 dims: [ 4 ] } ]";
    assert_eq!(
        check(&format!("max_batch_size: 2 {rg}"), &s).unwrap_err(),
        "unable to load model 'm', configuration expects model provides input with shape [-1]  for ragged input 'X', model provides [-1,4]"
    );
}

fn sequence_signature() -> Signature {
    sig(
        vec![
            t("INPUT", 1, &["N", "4"]),
            t("START", 6, &["N", "1"]),
            t("CORRID", 13, &["N", "1"]),
            t("state_in", 1, &["N", "4"]),
        ],
        vec![t("OUTPUT", 1, &["N", "4"]), t("state_out", 1, &["N", "4"])],
    )
}

const SEQ: &str = "sequence_batching { control_input [ { name: \"START\" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] }, { name: \"CORRID\" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ] state [ { input_name: \"state_in\" output_name: \"state_out\" data_type: TYPE_FP32 dims: [ 4 ] } ] }";

#[test]
fn sequence_controls_and_states() {
    let s = sequence_signature();
    let io = "input [ { name: \"INPUT\" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: \"OUTPUT\" data_type: TYPE_FP32 dims: [ 4 ] } ]";
    assert_eq!(check(&format!("max_batch_size: 4 {io} {SEQ}"), &s), Ok(()));
    // Without batching the control keeps its first dim: [-1,1] != [1].
    assert_eq!(
        check(&format!("{io} {SEQ}"), &s).unwrap_err(),
        "unable to load model 'm', sequence control 'START' in model has dims [-1,1] but dims [1] is expected"
    );
    // Control data type.
    let fp = SEQ.replace("int32_false_true", "fp32_false_true");
    assert_eq!(
        check(&format!("max_batch_size: 4 {io} {fp}"), &s).unwrap_err(),
        "unable to load model 'm', sequence control 'START', the model expects data-type INT32 but the model configuration specifies data-type TYPE_FP32"
    );
    // A control the model does not have.
    let missing = SEQ.replace("\"START\"", "\"BEGIN\"");
    assert_eq!(
        check(&format!("max_batch_size: 4 {io} {missing}"), &s).unwrap_err(),
        "configuration specified sequence control 'BEGIN', but model does not provide that input"
    );
    // A state output the model does not have.
    let bad_state = SEQ.replace("\"state_out\"", "\"state_o\"");
    assert_eq!(
        check(&format!("max_batch_size: 4 {io} {bad_state}"), &s).unwrap_err(),
        "unexpected inference output 'state_o', allowed outputs are: OUTPUT, state_out"
    );
    // Listing the controls as inputs too (what Triton's auto-complete does)
    // counts them twice.
    let mut c = cfg(SEQ);
    let done = run(&c, &s, 4).0.unwrap();
    done.apply(&mut c);
    assert_eq!(
        ort::instance_checks(&c, &s, "m").unwrap_err().text,
        "unable to load model 'm', configuration expects 7 inputs, model provides 4"
    );
}

#[test]
fn sequence_tensors_are_left_out_unless_triton_compatible() {
    let s = sequence_signature();
    let c = cfg(SEQ);
    let mut done = run(&c, &s, 4).0.unwrap();
    let mut notes = Vec::new();
    let excluded = exclude_sequence_tensors(&c, &mut done, &mut notes);
    assert_eq!(excluded, ["START", "CORRID", "state_in", "state_out"]);
    let names: Vec<&str> = done
        .inputs
        .as_ref()
        .unwrap()
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(names, ["INPUT"]);
    assert_eq!(done.outputs.as_ref().unwrap().len(), 1);
    assert!(notes[0].text.contains("--triton-compatible"), "{notes:?}");
    let mut c2 = c.clone();
    done.apply(&mut c2);
    assert_eq!(ort::instance_checks(&c2, &s, "m"), Ok(()));
    // No sequence batching: nothing left out.
    let mut done = run(&cfg(""), &a1(), 4).0.unwrap();
    assert!(exclude_sequence_tensors(&cfg(""), &mut done, &mut notes).is_empty());
    // A state output that is the only output stays.
    let s = sig(
        vec![t("INPUT", 1, &["N", "4"]), t("state_in", 1, &["N", "4"])],
        vec![t("state_out", 1, &["N", "4"])],
    );
    let c = cfg("sequence_batching { state [ { input_name: \"state_in\" output_name: \"state_out\" data_type: TYPE_FP32 dims: [ 4 ] } ] }");
    let mut done = run(&c, &s, 4).0.unwrap();
    let excluded = exclude_sequence_tensors(&c, &mut done, &mut Vec::new());
    assert_eq!(excluded, ["state_in"]);
    assert_eq!(done.outputs.unwrap()[0].name, "state_out");
}

fn group(name: &str, kind: Kind, count: i32, gpus: &[i32]) -> ModelInstanceGroup {
    ModelInstanceGroup {
        name: name.into(),
        kind: kind as i32,
        count,
        gpus: gpus.to_vec(),
        ..ModelInstanceGroup::default()
    }
}

#[test]
fn instance_groups_are_normalized_for_the_target_server() {
    // CPU-only host: one group named after the model, two CPU instances.
    let mut c = cfg("");
    normalize_instance_groups(&mut c, &[]);
    assert_eq!(c.instance_group, vec![group("m", Kind::Cpu, 2, &[])]);
    // A GPU host: one instance on every GPU.
    let mut c = cfg("");
    normalize_instance_groups(&mut c, &[0, 1]);
    assert_eq!(c.instance_group, vec![group("m", Kind::Gpu, 1, &[0, 1])]);
    // Unnamed groups are numbered; KIND_AUTO with a GPU the host lacks is
    // a CPU group; KIND_MODEL counts 1.
    let mut c = cfg(
        "instance_group [ { kind: KIND_CPU }, { gpus: [ 3 ] }, { name: \"g\" kind: KIND_MODEL }, { count: 3 } ]",
    );
    normalize_instance_groups(&mut c, &[0]);
    assert_eq!(
        c.instance_group,
        vec![
            group("m_0", Kind::Cpu, 2, &[]),
            group("m_1", Kind::Cpu, 2, &[3]),
            group("g", Kind::Model, 1, &[]),
            group("m_3", Kind::Gpu, 3, &[0]),
        ]
    );
    // Other backends get one CPU instance.
    let mut c = cfg("backend: \"python\"");
    normalize_instance_groups(&mut c, &[]);
    assert_eq!(c.instance_group[0].count, 1);
}
