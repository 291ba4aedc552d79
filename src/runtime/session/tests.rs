//! Tests of [`ModelSession`] on the models in testdata/onnx and on hand-made
//! ones (skipped, with a note, when ONNX Runtime is absent); `have_ort`
//! and `write_model` are shared with the benchmark module.

use super::bound::copy_to_host;
use super::*;
use crate::tensor::TensorData;

/// True when ONNX Runtime is there; otherwise says so and skips, unless
/// `TRITONCTL_REQUIRE_ORT=1`, which makes its absence a failure.
pub(crate) fn have_ort() -> bool {
    match crate::runtime::probe() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var_os("TRITONCTL_REQUIRE_ORT").is_some_and(|v| v == "1") {
                panic!("TRITONCTL_REQUIRE_ORT=1 but ONNX Runtime is not available: {e}");
            }
            eprintln!("skipped: ONNX Runtime is not available: {e}");
            false
        }
    }
}

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/onnx")
        .join(name)
}

#[test]
fn on_cuda_onnx_runtime_prefers_the_cuda_execution_provider_to_the_cpu_one() {
    // ONNX Runtime gives each node to the first provider that can run
    // it: with the CPU one first, a CUDA session would run on the CPU.
    let names = |device| {
        let options = SessionOptions {
            device,
            ..SessionOptions::default()
        };
        execution_providers(&options)
            .iter()
            .map(|ep| ep.name())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(Device::Cuda(1)),
        ["CUDAExecutionProvider", "CPUExecutionProvider"]
    );
    assert_eq!(names(Device::Cpu), ["CPUExecutionProvider"]);
}

fn open(name: &str) -> ModelSession {
    ModelSession::open(&fixture(name), &SessionOptions::default())
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn t(shape: &[i64], data: TensorData) -> Tensor {
    Tensor::new(shape.to_vec(), data).unwrap()
}

/// A [3, 2] tensor of distinctive values of every data type.
fn sample(d: DataType) -> Tensor {
    let data = match d {
        DataType::Bool => TensorData::Bool(vec![true, false, false, true, true, true]),
        DataType::U8 => TensorData::U8(vec![0, 1, 127, 128, 254, 255]),
        DataType::U16 => TensorData::U16(vec![0, 1, 300, 40000, 65534, 65535]),
        DataType::U32 => TensorData::U32(vec![0, 1, 70000, 1 << 31, u32::MAX - 1, u32::MAX]),
        DataType::U64 => TensorData::U64(vec![0, 1, 1 << 40, 1 << 63, u64::MAX - 1, u64::MAX]),
        DataType::I8 => TensorData::I8(vec![i8::MIN, -1, 0, 1, 100, i8::MAX]),
        DataType::I16 => TensorData::I16(vec![i16::MIN, -300, 0, 1, 300, i16::MAX]),
        DataType::I32 => TensorData::I32(vec![i32::MIN, -70000, 0, 1, 70000, i32::MAX]),
        DataType::I64 => TensorData::I64(vec![i64::MIN, -(1 << 40), 0, 1, 1 << 40, i64::MAX]),
        // 1.0, -2.0, max finite, smallest subnormal, -0.0, +inf.
        DataType::F16 => TensorData::F16(vec![0x3C00, 0xC000, 0x7BFF, 0x0001, 0x8000, 0x7C00]),
        DataType::F32 => {
            TensorData::F32(vec![1.5, -2.25, f32::MAX, f32::MIN_POSITIVE, -0.0, 1e-30])
        }
        DataType::F64 => {
            TensorData::F64(vec![1.5, -2.25, f64::MAX, f64::MIN_POSITIVE, -0.0, 1e-300])
        }
        DataType::Bf16 => TensorData::Bf16(vec![0x3F80, 0xC000, 0x7F7F, 0x0001, 0x8000, 0x7F80]),
        DataType::Bytes => TensorData::Bytes(vec![
            Vec::new(),
            b"a".to_vec(),
            b"\0nul\0inside".to_vec(),
            vec![0xff, 0xfe, 0x00, 0x80],
            "unicod\u{e9}".as_bytes().to_vec(),
            vec![b'x'; 1000],
        ]),
    };
    t(&[3, 2], data)
}

fn onnx_name(d: DataType) -> &'static str {
    match d {
        DataType::Bool => "BOOL",
        DataType::U8 => "UINT8",
        DataType::U16 => "UINT16",
        DataType::U32 => "UINT32",
        DataType::U64 => "UINT64",
        DataType::I8 => "INT8",
        DataType::I16 => "INT16",
        DataType::I32 => "INT32",
        DataType::I64 => "INT64",
        DataType::F16 => "FLOAT16",
        DataType::F32 => "FLOAT",
        DataType::F64 => "DOUBLE",
        DataType::Bf16 => "BFLOAT16",
        DataType::Bytes => "STRING",
    }
}

#[test]
fn every_data_type_goes_through_an_identity_model_unchanged() {
    if !have_ort() {
        return;
    }
    let mut s = open("all_types.onnx");
    assert_eq!(s.inputs().len(), DataType::ALL.len());
    let names: Vec<String> = DataType::ALL
        .iter()
        .map(|d| format!("IN_{}", onnx_name(*d)))
        .collect();
    let tensors: Vec<Tensor> = DataType::ALL.iter().map(|d| sample(*d)).collect();
    for (name, d) in names.iter().zip(DataType::ALL) {
        let spec = s.inputs().iter().find(|i| &i.name == name).unwrap();
        assert_eq!(spec.data_type(), Some(d), "{name}");
    }
    let inputs: Vec<(&str, &Tensor)> = names
        .iter()
        .map(String::as_str)
        .zip(tensors.iter())
        .collect();
    let out = s.run(&inputs).unwrap();
    let out_names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
    let want_names: Vec<&str> = s.outputs().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(out_names, want_names);
    for (d, t) in DataType::ALL.iter().zip(&tensors) {
        let name = format!("OUT_{}", onnx_name(*d));
        let (_, got) = out.iter().find(|(n, _)| *n == name).unwrap();
        assert_eq!(got, t, "{name}");
    }

    // Again into the same buffers: same values, and the output vectors
    // are refilled in place (no new allocation).
    let mut again = out.clone();
    let before: Vec<usize> = again.iter().map(|(_, t)| data_ptr(&t.data)).collect();
    s.run_into(&inputs, &mut again).unwrap();
    assert_eq!(again, out);
    let after: Vec<usize> = again.iter().map(|(_, t)| data_ptr(&t.data)).collect();
    assert_eq!(before, after);

    // Zero rows are fine too.
    let empty: Vec<Tensor> = DataType::ALL
        .iter()
        .map(|d| Tensor::zeros(*d, vec![0, 2]).unwrap())
        .collect();
    let inputs: Vec<(&str, &Tensor)> = names.iter().map(String::as_str).zip(empty.iter()).collect();
    let out = s.run(&inputs).unwrap();
    for (_, t) in &out {
        assert_eq!(t.shape, vec![0, 2]);
        assert!(t.data.is_empty());
    }
}

fn data_ptr(d: &TensorData) -> usize {
    match d {
        TensorData::Bool(v) => v.as_ptr() as usize,
        TensorData::U8(v) => v.as_ptr() as usize,
        TensorData::U16(v) | TensorData::F16(v) | TensorData::Bf16(v) => v.as_ptr() as usize,
        TensorData::U32(v) => v.as_ptr() as usize,
        TensorData::U64(v) => v.as_ptr() as usize,
        TensorData::I8(v) => v.as_ptr() as usize,
        TensorData::I16(v) => v.as_ptr() as usize,
        TensorData::I32(v) => v.as_ptr() as usize,
        TensorData::I64(v) => v.as_ptr() as usize,
        TensorData::F32(v) => v.as_ptr() as usize,
        TensorData::F64(v) => v.as_ptr() as usize,
        TensorData::Bytes(v) => v.as_ptr() as usize,
    }
}

#[test]
fn a_model_computes() {
    if !have_ort() {
        return;
    }
    // Y = X + W with W = [1, 1, 1] (an initializer).
    let mut s = open("init_input_ir8.onnx");
    assert_eq!(s.device(), Device::Cpu);
    assert_eq!(s.inputs()[0].dims, vec![-1, 3]);
    let x = t(
        &[2, 3],
        TensorData::F32(vec![1.0, 2.0, 3.0, -4.0, 0.5, 0.0]),
    );
    let out = s.run(&[("X", &x)]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, "Y");
    assert_eq!(
        out[0].1,
        t(
            &[2, 3],
            TensorData::F32(vec![2.0, 3.0, 4.0, -3.0, 1.5, 1.0])
        )
    );
}

#[test]
fn bad_inputs_name_the_tensor() {
    if !have_ort() {
        return;
    }
    let mut s = open("init_input_ir8.onnx");
    let good = t(&[1, 3], TensorData::F32(vec![0.0; 3]));
    let err = |inputs: &[(&str, &Tensor)], s: &mut ModelSession| s.run(inputs).unwrap_err();

    let e = err(&[("X", &good), ("Z", &good)], &mut s);
    assert!(
        matches!(&e, RunError::UnknownInput { name, .. } if name == "Z"),
        "{e}"
    );
    assert_eq!(e.to_string(), "unknown input 'Z' (the model's inputs: X)");

    let e = err(&[], &mut s);
    assert_eq!(e.to_string(), "input 'X' is missing");

    let e = err(&[("X", &good), ("X", &good)], &mut s);
    assert_eq!(e.to_string(), "input 'X' is given twice");

    let ints = t(&[1, 3], TensorData::I32(vec![0; 3]));
    let e = err(&[("X", &ints)], &mut s);
    assert_eq!(
        e.to_string(),
        "input 'X': data type INT32 does not match the model's FP32"
    );

    let rank3 = t(&[1, 3, 1], TensorData::F32(vec![0.0; 3]));
    let e = err(&[("X", &rank3)], &mut s);
    assert!(
        matches!(&e, RunError::Shape { name, .. } if name == "X"),
        "{e}"
    );
    assert!(e.to_string().contains("[1, 3, 1]"), "{e}");

    let wide = t(&[1, 4], TensorData::F32(vec![0.0; 4]));
    let e = err(&[("X", &wide)], &mut s);
    assert!(
        e.to_string()
            .starts_with("input 'X': shape [1, 4] does not match the model's [-1, 3]"),
        "{e}"
    );

    let short = Tensor {
        shape: vec![2, 3],
        data: TensorData::F32(vec![0.0; 5]),
    };
    let e = err(&[("X", &short)], &mut s);
    assert_eq!(
        e.to_string(),
        "input 'X': shape [2, 3] holds 6 elements but the tensor has 5"
    );

    // The session still works after refusing inputs.
    assert!(s.run(&[("X", &good)]).is_ok());
}

/// Writes a hand-made model into a temporary directory.
pub(crate) fn write_model(bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("model.onnx");
    std::fs::write(&p, bytes).unwrap();
    (d, p)
}

/// A session on the model `bytes` (written to a directory that lives
/// as long as the returned guard).
fn open_bytes(bytes: &[u8]) -> (tempfile::TempDir, ModelSession) {
    let (d, path) = write_model(bytes);
    let s = ModelSession::open(&path, &SessionOptions::default()).unwrap();
    (d, s)
}

#[test]
fn onnx_runtime_errors_carry_its_message() {
    if !have_ort() {
        return;
    }
    // No declared shapes: ONNX Runtime is the one to refuse
    // mismatched inner dims.
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::matmul_unknown_shapes());
    assert!(s.inputs()[0].dims.is_empty());
    let a = t(&[2, 3], TensorData::F32(vec![1.0; 6]));
    let b = t(&[4, 5], TensorData::F32(vec![1.0; 20]));
    let e = s.run(&[("A", &a), ("B", &b)]).unwrap_err();
    assert!(matches!(e, RunError::Ort { .. }), "{e}");
    assert!(e.to_string().contains("MatMul"), "{e}");
    // And it still runs good inputs.
    let b = t(&[3, 1], TensorData::F32(vec![1.0, 2.0, 3.0]));
    let out = s.run(&[("A", &a), ("B", &b)]).unwrap();
    assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![6.0, 6.0])));
}

#[test]
fn preallocated_outputs_give_the_same_results_and_fall_back_when_shapes_change() {
    if !have_ort() {
        return;
    }
    // Outputs are preallocated from the third run with the same input
    // shapes on; every run must give what a fresh session gives.
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let mut state = Tensor::zeros(DataType::F32, vec![2, 1]).unwrap();
    let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
    let mut out = Vec::new();
    let mut expected = [0f32, 0.0];
    for step in 0..6 {
        let v = step as f32;
        let x = t(
            &[2, 4],
            TensorData::F32(vec![v, v, v, v, 1.0, 1.0, 1.0, 1.0]),
        );
        s.run_into(
            &[("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)],
            &mut out,
        )
        .unwrap();
        expected[0] += 4.0 * v;
        expected[1] += 4.0;
        assert_eq!(
            out[0].1,
            t(&[2, 1], TensorData::F32(expected.to_vec())),
            "step {step}"
        );
        state = out[1].1.clone();
    }
    assert!(s.reuse.values.is_some(), "outputs are preallocated by now");

    // NonZero: the output's shape depends on the values. The same input
    // shape with another count of nonzero values must still be right,
    // and reuse is turned off for the session.
    let (_d2, mut s) = open_bytes(&crate::runtime::testmodel::nonzero());
    let x = |v: Vec<i64>| t(&[4], TensorData::I64(v));
    for _ in 0..3 {
        s.run_into(&[("X", &x(vec![0, 5, 0, 7]))], &mut out)
            .unwrap();
        assert_eq!(out[0].1, t(&[1, 2], TensorData::I64(vec![1, 3])));
    }
    assert!(s.reuse.values.is_some());
    s.run_into(&[("X", &x(vec![1, 5, 0, 7]))], &mut out)
        .unwrap();
    assert_eq!(out[0].1, t(&[1, 3], TensorData::I64(vec![0, 1, 3])));
    assert!(s.reuse.off && s.reuse.values.is_none());
    s.run_into(&[("X", &x(vec![0, 0, 0, 2]))], &mut out)
        .unwrap();
    assert_eq!(out[0].1, t(&[1, 1], TensorData::I64(vec![3])));
}

#[test]
fn c_names_hold_every_name_once_nul_terminated_in_one_buffer() {
    let st = |name: &str| SessionTensor {
        name: name.to_string(),
        is_tensor: true,
        elem_type: 1,
        dims: Vec::new(),
        symbols: Vec::new(),
    };
    let ins = [st("INPUT"), st(""), st("état_in")];
    let outs = [st("OUTPUT"), st("STATE_OUT")];
    let c = CNames::new(&ins, &outs).unwrap();
    let (ip, op) = c.pointers();
    assert_eq!((ip.len(), op.len()), (3, 2));
    for (i, t) in ins.iter().enumerate() {
        assert_eq!(c.input(i), t.name.as_bytes());
        // SAFETY: the pointers point to NUL-terminated names in `c`.
        let read = unsafe { std::ffi::CStr::from_ptr(ip[i]) };
        assert_eq!(read.to_bytes(), t.name.as_bytes());
    }
    for (i, t) in outs.iter().enumerate() {
        assert_eq!(c.output(i), t.name.as_bytes());
        // SAFETY: as above.
        let read = unsafe { std::ffi::CStr::from_ptr(op[i]) };
        assert_eq!(read.to_bytes(), t.name.as_bytes());
    }
    assert_eq!((c.input(3), c.output(2)), (&[][..], &[][..]));
    let total: usize = ins.iter().chain(&outs).map(|t| t.name.len() + 1).sum();
    assert_eq!(c.buf.len(), total, "one buffer, no gaps");
    assert!(CNames::new(&[st("A\0B")], &outs).is_none());
    assert!(CNames::new(&ins, &[st("\0")]).is_none());
}

/// Two rows of the accumulate test model's input (row sums 10 and 2).
fn accumulate_input() -> Tensor {
    t(
        &[2, 4],
        TensorData::F32(vec![1.0, 2.0, 3.0, 4.0, 0.5, 0.5, 0.5, 0.5]),
    )
}

#[test]
fn outputs_are_written_in_place_into_an_output_vector_the_caller_reuses() {
    if !have_ort() {
        return;
    }
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let x = accumulate_input();
    let state = t(&[2, 1], TensorData::F32(vec![10.0, 20.0]));
    let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
    let inputs = [("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)];
    let want = t(&[2, 1], TensorData::F32(vec![20.0, 22.0]));
    let data_ptr = |o: &Vec<(String, Tensor)>| match &o[0].1.data {
        TensorData::F32(v) => v.as_ptr(),
        other => panic!("{other:?}"),
    };
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for step in 0..6 {
        s.run_into(&inputs, &mut out).unwrap();
        assert_eq!(out[0].1, want, "step {step}");
        assert_eq!(out[1].1, want, "step {step}");
        seen.push(data_ptr(&out));
    }
    // From the fourth run on ONNX Runtime writes into the caller's
    // tensors: their memory stays where it is.
    assert!(
        s.reuse.outputs_viewed(s.c_names.as_ref().unwrap(), &out),
        "written in place"
    );
    assert!(seen[3..].iter().all(|&p| p == seen[3]), "{seen:?}");
    // Another output vector (here a new one, then the first again
    // with one tensor replaced) gets the right values too.
    let mut other = Vec::new();
    for _ in 0..2 {
        s.run_into(&inputs, &mut other).unwrap();
        assert_eq!(other[0].1, want);
        s.run_into(&inputs, &mut out).unwrap();
        assert_eq!(out[0].1, want);
        assert_eq!(out[1].1, want);
    }
    out[1].1 = t(&[2, 1], TensorData::F32(vec![-1.0, -1.0]));
    s.run_into(&inputs, &mut out).unwrap();
    assert_eq!(out[1].1, want);
    s.run_into(&inputs, &mut out).unwrap();
    assert_eq!(out[1].1, want);
    assert!(s.reuse.outputs_viewed(s.c_names.as_ref().unwrap(), &out));
    // A caller that gives a new vector every time (`run`) as well.
    for _ in 0..3 {
        let o = s.run(&inputs).unwrap();
        assert_eq!(o[0].1, want);
    }
}

#[test]
fn the_accumulate_model_keeps_a_running_sum() {
    if !have_ort() {
        return;
    }
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let x = accumulate_input();
    let mut state = BoundState::new(&[("STATE_IN", "STATE_OUT")]);
    state
        .set(
            "STATE_IN",
            &Tensor::zeros(DataType::F32, vec![2, 1]).unwrap(),
        )
        .unwrap();
    let keep = t(&[2, 1], TensorData::Bool(vec![false, false]));
    let reset_second = t(&[2, 1], TensorData::Bool(vec![false, true]));
    let mut out = Vec::new();
    for _ in 0..3 {
        s.run_bound(&[("INPUT", &x), ("RESET", &keep)], &mut state, &mut out)
            .unwrap();
    }
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0],
        (
            "OUTPUT".to_string(),
            t(&[2, 1], TensorData::F32(vec![30.0, 6.0]))
        )
    );
    s.run_bound(
        &[("INPUT", &x), ("RESET", &reset_second)],
        &mut state,
        &mut out,
    )
    .unwrap();
    assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![40.0, 2.0])));
    // The same with host state through `run`.
    let st = state.get("STATE_IN").unwrap().unwrap();
    let r = s
        .run(&[("INPUT", &x), ("STATE_IN", &st), ("RESET", &keep)])
        .unwrap();
    assert_eq!(r[0].1, t(&[2, 1], TensorData::F32(vec![50.0, 4.0])));
    assert_eq!(r[1].0, "STATE_OUT");
    assert_eq!(r[1].1, r[0].1);
}

#[test]
fn inputs_in_any_order_and_after_a_refused_call_are_matched_by_name() {
    // run_into keeps the order of the last call's inputs; a call with
    // them in another order, a refused call and a call after it must
    // still pair every tensor with its own input.
    if !have_ort() {
        return;
    }
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    let state = t(&[1, 1], TensorData::F32(vec![100.0]));
    let keep = t(&[1, 1], TensorData::Bool(vec![false]));
    let want = t(&[1, 1], TensorData::F32(vec![110.0]));
    let mut out = Vec::new();
    for _ in 0..4 {
        s.run_into(
            &[("INPUT", &x), ("STATE_IN", &state), ("RESET", &keep)],
            &mut out,
        )
        .unwrap();
        assert_eq!(out[0].1, want);
    }
    s.run_into(
        &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
        &mut out,
    )
    .unwrap();
    assert_eq!(out[0].1, want);
    let bad = s.run_into(&[("RESET", &keep), ("INPUT", &x), ("INPUT", &x)], &mut out);
    assert!(
        matches!(bad, Err(RunError::DuplicateInput { .. })),
        "{bad:?}"
    );
    let bad = s.run_into(&[("INPUT", &x), ("RESET", &keep)], &mut out);
    assert!(
        matches!(&bad, Err(RunError::MissingInput { name }) if name == "STATE_IN"),
        "{bad:?}"
    );
    // Owned pairs, as the runner passes them.
    let owned = vec![
        ("STATE_IN".to_string(), state.clone()),
        ("RESET".to_string(), keep.clone()),
        ("INPUT".to_string(), x.clone()),
    ];
    s.run_into(&owned, &mut out).unwrap();
    assert_eq!(out[0].1, want);
    assert_eq!(out[1], ("STATE_OUT".to_string(), want.clone()));
}

#[test]
fn runs_on_the_same_tensors_go_straight_to_onnx_runtime_and_stay_right() {
    // From the fourth run on the same tensors, `run_again` calls ONNX
    // Runtime at once; values changed in place, inputs in another
    // order and other tensors must all still give the right sums.
    if !have_ort() {
        return;
    }
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let mut x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    let state = t(&[1, 1], TensorData::F32(vec![100.0]));
    let keep = t(&[1, 1], TensorData::Bool(vec![false]));
    // The inputs of a run in the session's order, `x` as INPUT.
    fn feed<'a>(x: &'a Tensor, state: &'a Tensor, keep: &'a Tensor) -> [(&'a str, &'a Tensor); 3] {
        [("INPUT", x), ("STATE_IN", state), ("RESET", keep)]
    }
    let mut out = Vec::new();
    for _ in 0..3 {
        s.run_into(&feed(&x, &state, &keep), &mut out).unwrap();
    }
    assert!(
        s.reuse.armed,
        "the third run went through the preallocated outputs"
    );
    let sum = |out: &[(String, Tensor)]| out[0].1.clone();
    // New values in the same memory.
    if let TensorData::F32(v) = &mut x.data {
        v[0] = 11.0;
    }
    assert!(s.run_again(&feed(&x, &state, &keep), &mut out));
    assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![120.0])));
    // Another tensor (other memory) with the same shape.
    let mut y = t(&[1, 4], TensorData::F32(vec![0.5; 4]));
    assert!(!s.run_again(&feed(&y, &state, &keep), &mut out));
    s.run_into(&feed(&y, &state, &keep), &mut out).unwrap();
    assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![102.0])));
    // Runs on it go straight to ONNX Runtime again, reading its
    // memory (not that of the tensor bound before).
    if let TensorData::F32(v) = &mut y.data {
        v[0] = 2.5;
    }
    assert!(s.run_again(&feed(&y, &state, &keep), &mut out));
    assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![104.0])));
    // Another output vector of the same layout is written in place,
    // not the one bound before.
    let mut other = out.clone();
    if let TensorData::F32(v) = &mut y.data {
        v[0] = 4.5;
    }
    assert!(s.run_again(&feed(&y, &state, &keep), &mut other));
    assert_eq!(sum(&other), t(&[1, 1], TensorData::F32(vec![106.0])));
    assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![104.0])));
    // Another order of the same tensors: not the order the session
    // kept, so the general path matches them by name (and re-arms).
    s.run_into(
        &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
        &mut out,
    )
    .unwrap();
    assert_eq!(sum(&out), t(&[1, 1], TensorData::F32(vec![120.0])));
    // That order is kept now; a wrong name in its place is never run.
    assert!(s.run_again(
        &[("RESET", &keep), ("INPUT", &x), ("STATE_IN", &state)],
        &mut out
    ));
    assert!(!s.run_again(
        &[("RESET_", &keep), ("INPUT", &x), ("STATE_IN", &state)],
        &mut out
    ));
}

#[test]
fn inputs_changed_in_place_after_a_run_are_checked_again() {
    // The views of the inputs and the preallocated outputs are kept
    // from call to call: an input whose shape, type or memory changed
    // is checked again, and after a refused call the shapes the
    // preallocated outputs were made for are not trusted.
    if !have_ort() {
        return;
    }
    let (_d, mut s) = open_bytes(&crate::runtime::testmodel::accumulate());
    let mut x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    let mut state = t(&[1, 1], TensorData::F32(vec![100.0]));
    let keep = t(&[1, 1], TensorData::Bool(vec![false]));
    let mut out = Vec::new();
    let mut run = |x: &Tensor, state: &Tensor, reset: &Tensor, out: &mut Vec<_>| {
        s.run_into(&[("INPUT", x), ("STATE_IN", state), ("RESET", reset)], out)?;
        Ok::<_, RunError>(s.reuse.off)
    };
    for _ in 0..4 {
        run(&x, &state, &keep, &mut out).unwrap();
        assert_eq!(out[0].1, t(&[1, 1], TensorData::F32(vec![110.0])));
    }
    // The same memory with another shape.
    x.shape = vec![4, 1];
    let bad = run(&x, &state, &keep, &mut out);
    assert!(
        matches!(&bad, Err(RunError::Shape { name, .. }) if name == "INPUT"),
        "{bad:?}"
    );
    x.shape = vec![1, 4];
    // Another type.
    let wrong = t(&[1, 1], TensorData::U8(vec![0]));
    let bad = run(&x, &state, &wrong, &mut out);
    assert!(
        matches!(&bad, Err(RunError::DataType { name, .. }) if name == "RESET"),
        "{bad:?}"
    );
    // Two rows for INPUT and STATE_IN with a RESET of the wrong type
    // are refused ...
    x = t(&[2, 4], TensorData::F32(vec![1.0; 8]));
    state = t(&[2, 1], TensorData::F32(vec![5.0, 6.0]));
    let wrong = t(&[2, 1], TensorData::U8(vec![0, 1]));
    let bad = run(&x, &state, &wrong, &mut out);
    assert!(
        matches!(&bad, Err(RunError::DataType { name, .. }) if name == "RESET"),
        "{bad:?}"
    );
    // ... and with the first RESET again (broadcast over the rows) they
    // run: the outputs preallocated for one row must not be used
    // (using them would fail and turn preallocation off).
    for _ in 0..3 {
        let off = run(&x, &state, &keep, &mut out).unwrap();
        assert_eq!(out[0].1, t(&[2, 1], TensorData::F32(vec![9.0, 10.0])));
        assert!(!off, "preallocated outputs of another shape were used");
    }
    // Back to one row: the outputs follow.
    x = t(&[1, 4], TensorData::F32(vec![1.0, 2.0, 3.0, 4.0]));
    state = t(&[1, 1], TensorData::F32(vec![100.0]));
    run(&x, &state, &keep, &mut out).unwrap();
    assert_eq!(out[0].1, t(&[1, 1], TensorData::F32(vec![110.0])));
}

#[test]
fn models_tritonctl_cannot_feed_are_refused_at_open() {
    if !have_ort() {
        return;
    }
    let o = SessionOptions::default();
    let e = ModelSession::open(&fixture("sequence_output.onnx"), &o).unwrap_err();
    assert!(e.to_string().contains("output 'Y' is not a tensor"), "{e}");
    // ONNX Runtime refuses COMPLEX64 itself.
    let e = ModelSession::open(&fixture("complex64.onnx"), &o).unwrap_err();
    assert!(e.to_string().contains("complex64"), "{e}");
    // A corrupt file: ONNX Runtime's message.
    let d = tempfile::tempdir().unwrap();
    let junk = d.path().join("model.onnx");
    std::fs::write(&junk, b"this is not a protobuf").unwrap();
    let e = ModelSession::open(&junk, &o).unwrap_err();
    assert!(
        matches!(&e, SessionError::Load { model, .. } if *model == junk),
        "{e}"
    );
    assert!(!e.to_string().is_empty());
    let e = ModelSession::open(&d.path().join("missing.onnx"), &o).unwrap_err();
    assert!(matches!(e, SessionError::Load { .. }), "{e}");
}

#[test]
fn bound_state_feeds_each_output_to_the_next_run() {
    if !have_ort() {
        return;
    }
    // Y = X + 1 with Y fed back to X: after k runs the state is k.
    let mut s = open("init_input_ir8.onnx");
    let mut state = BoundState::new(&[("X", "Y")]);
    assert_eq!(state.get("X"), Ok(None));
    let mut out = Vec::new();
    let e = s.run_bound(&[], &mut state, &mut out).unwrap_err();
    assert!(
        matches!(&e, RunError::State { name, .. } if name == "X"),
        "{e}"
    );
    state
        .set("X", &Tensor::zeros(DataType::F32, vec![2, 3]).unwrap())
        .unwrap();
    for _ in 0..5 {
        s.run_bound(&[], &mut state, &mut out).unwrap();
        assert!(out.is_empty(), "Y is a state output: {out:?}");
    }
    assert_eq!(
        state.get("X").unwrap().unwrap(),
        t(&[2, 3], TensorData::F32(vec![5.0; 6]))
    );
    // Resetting one row from the host, then going on.
    let mut x = state.get("X").unwrap().unwrap();
    if let TensorData::F32(v) = &mut x.data {
        v[..3].fill(0.0);
    }
    state.set("X", &x).unwrap();
    s.run_bound(&[], &mut state, &mut out).unwrap();
    assert_eq!(
        state.get("X").unwrap().unwrap(),
        t(&[2, 3], TensorData::F32(vec![1.0, 1.0, 1.0, 6.0, 6.0, 6.0]))
    );
    // Host inputs may not name a state input.
    let x = Tensor::zeros(DataType::F32, vec![2, 3]).unwrap();
    let e = s.run_bound(&[("X", &x)], &mut state, &mut out).unwrap_err();
    assert_eq!(e.to_string(), "input 'X' is given twice");
    assert!(state.set("Q", &x).is_err());

    let mut wrong = BoundState::new(&[("X", "NOPE")]);
    let e = s.run_bound(&[], &mut wrong, &mut out).unwrap_err();
    assert!(e.to_string().contains("no output 'NOPE'"), "{e}");
}

#[test]
fn bound_state_passes_other_outputs_to_the_host() {
    if !have_ort() {
        return;
    }
    // Identity per type: BOOL's output feeds its input back; every
    // other input is given and comes back unchanged.
    let mut s = open("all_types.onnx");
    let mut state = BoundState::new(&[("IN_BOOL", "OUT_BOOL")]);
    state.set("IN_BOOL", &sample(DataType::Bool)).unwrap();
    let tensors: Vec<(String, Tensor)> = DataType::ALL[1..]
        .iter()
        .map(|d| (format!("IN_{}", onnx_name(*d)), sample(*d)))
        .collect();
    let inputs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut out = Vec::new();
    for _ in 0..3 {
        s.run_bound(&inputs, &mut state, &mut out).unwrap();
        assert_eq!(out.len(), DataType::ALL.len() - 1);
        for (name, got) in &out {
            let input = name.replace("OUT_", "IN_");
            let (_, want) = tensors.iter().find(|(n, _)| *n == input).unwrap();
            assert_eq!(got, want, "{name}");
        }
    }
    assert_eq!(
        state.get("IN_BOOL").unwrap().unwrap(),
        sample(DataType::Bool)
    );
}

#[test]
fn the_device_to_host_copy_works_on_host_values() {
    if !have_ort() {
        return;
    }
    // The copy `BoundState::get` makes of CUDA values, tried on a CPU
    // value (the only device here).
    let mut state = BoundState::new(&[("X", "Y")]);
    let x = sample(DataType::F32);
    state.set("X", &x).unwrap();
    let v = state.values[0].as_ref().unwrap();
    assert_eq!(copy_to_host(v).unwrap(), x);
}
