//! Tests of state specs (from the config and from files) and of
//! [`StateStore`]: reset, gather, scatter and release.

use super::*;
use crate::config::ParsedConfig;
use crate::tensor::TensorData;

fn f32s(shape: &[i64], v: &[f32]) -> Tensor {
    Tensor::new(shape.to_vec(), TensorData::F32(v.to_vec())).unwrap()
}

/// One FP32 state of `n` elements, batched on axis 0.
fn store(n: i64) -> StateStore<u64> {
    StateStore::new(vec![StateSpec {
        input_name: "S_IN".into(),
        output_name: "S_OUT".into(),
        initial: Tensor::zeros(DataType::F32, vec![n]).unwrap(),
        batch_axis: Some(0),
    }])
}

fn values(t: &Tensor) -> Vec<f32> {
    match &t.data {
        TensorData::F32(v) => v.clone(),
        other => panic!("not FP32: {other:?}"),
    }
}

/// What a model "computes": state out = state in + x per row.
fn step(s: &mut StateStore<u64>, keys: &[Option<u64>], x: &[f32]) -> Vec<f32> {
    let gathered = s.gather(keys).unwrap();
    assert_eq!(gathered[0].0, "S_IN");
    let input = values(&gathered[0].1);
    let n = input.len() / keys.len();
    let next: Vec<f32> = input
        .iter()
        .enumerate()
        .map(|(e, v)| v + x[e / n])
        .collect();
    let out = f32s(&gathered[0].1.shape, &next);
    s.scatter(keys, |name| (name == "S_OUT").then_some(&out))
        .unwrap();
    input
}

#[test]
fn gather_into_matches_gather_and_reuses_the_buffer() {
    let mut s = store(3);
    s.reset(1);
    s.reset(2);
    step(&mut s, &[Some(1), Some(2)], &[1.0, 2.0]);
    let mut buf = vec![("X".to_string(), f32s(&[1], &[9.0]))];
    for keys in [vec![Some(1)], vec![Some(2), None, Some(1)], vec![Some(2)]] {
        let end = s.gather_into(&keys, &mut buf, 1, &mut Vec::new()).unwrap();
        assert_eq!(end, 2);
        assert_eq!(buf[0].0, "X", "entries before k are kept");
        assert_eq!(buf[1..], s.gather(&keys).unwrap()[..]);
    }
    // The single-sequence buffer keeps its memory from step to step.
    let ptr = |b: &Vec<(String, Tensor)>| match &b[1].1.data {
        TensorData::F32(v) => v.as_ptr(),
        _ => unreachable!(),
    };
    let before = ptr(&buf);
    step(&mut s, &[Some(2)], &[5.0]);
    s.gather_into(&[Some(2)], &mut buf, 1, &mut Vec::new())
        .unwrap();
    assert_eq!(ptr(&buf), before);
    assert_eq!(values(&buf[1].1), vec![7.0, 7.0, 7.0]);
    assert_eq!(buf[1].1.shape, vec![1, 3]);
}

#[test]
fn interleaved_sequences_keep_their_own_state() {
    let mut s = store(1);
    s.reset(1);
    s.reset(2);
    // Sequence 1 adds 1 per step, sequence 2 adds 100, in varying
    // batch positions and batch sizes.
    step(&mut s, &[Some(1), Some(2)], &[1.0, 100.0]);
    step(&mut s, &[Some(2), Some(1)], &[100.0, 1.0]);
    step(&mut s, &[Some(2)], &[100.0]);
    let seen = step(&mut s, &[Some(1), Some(2)], &[1.0, 100.0]);
    assert_eq!(seen, vec![2.0, 300.0]);
    assert_eq!(values(&s.get(&1).unwrap()[0]), vec![3.0]);
    assert_eq!(values(&s.get(&2).unwrap()[0]), vec![400.0]);
}

#[test]
fn a_released_and_restarted_key_starts_from_the_initial_state() {
    let mut s = store(2);
    s.reset(5);
    step(&mut s, &[Some(5)], &[7.0]);
    assert!(s.release(&5));
    assert!(!s.contains(&5));
    assert!(matches!(
        s.gather(&[Some(5)]),
        Err(StateError::UnknownSequence(_))
    ));
    assert!(!s.reset(5));
    assert_eq!(step(&mut s, &[Some(5)], &[1.0]), vec![0.0, 0.0]);
    // START on a live sequence restarts it too.
    assert!(s.reset(5));
    assert_eq!(step(&mut s, &[Some(5)], &[0.0]), vec![0.0, 0.0]);
    assert!(!s.release(&6));
}

#[test]
fn padding_rows_are_zero_and_never_stored() {
    let mut s = store(2);
    s.reset(1);
    s.reset(2);
    step(&mut s, &[Some(1), Some(2)], &[1.0, 2.0]);
    let g = s.gather(&[None, Some(2), None, Some(1)]).unwrap();
    assert_eq!(g[0].1.shape, vec![4, 2]);
    assert_eq!(
        values(&g[0].1),
        vec![0.0, 0.0, 2.0, 2.0, 0.0, 0.0, 1.0, 1.0]
    );
    // The model writes garbage into the padding rows: nobody gets it.
    let out = f32s(&[4, 2], &[9.0, 9.0, 20.0, 20.0, 9.0, 9.0, 10.0, 10.0]);
    s.scatter(&[None, Some(2), None, Some(1)], |_| Some(&out))
        .unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(values(&s.get(&1).unwrap()[0]), vec![10.0, 10.0]);
    assert_eq!(values(&s.get(&2).unwrap()[0]), vec![20.0, 20.0]);
    // A batch of padding only is zeros shaped like the initial state.
    let g = s.gather(&[None, None]).unwrap();
    assert_eq!(g[0].1.shape, vec![2, 2]);
    assert_eq!(values(&g[0].1), vec![0.0; 4]);
}

#[test]
fn bad_batches_are_errors_and_leave_the_store_unchanged() {
    let mut s = store(1);
    s.reset(1);
    s.reset(2);
    assert!(matches!(
        s.gather(&[Some(1), Some(1)]),
        Err(StateError::DuplicateSequence(_))
    ));
    let out = f32s(&[2, 1], &[5.0, 6.0]);
    assert!(matches!(
        s.scatter(&[Some(1), Some(1)], |_| Some(&out)),
        Err(StateError::DuplicateSequence(_))
    ));
    // One unknown key: no row is stored, not even the known one.
    assert!(matches!(
        s.scatter(&[Some(1), Some(3)], |_| Some(&out)),
        Err(StateError::UnknownSequence(_))
    ));
    // Wrong number of rows, missing output.
    assert!(s.scatter(&[Some(1)], |_| Some(&out)).is_err());
    assert!(s.scatter(&[Some(1), Some(2)], |_| None).is_err());
    assert_eq!(values(&s.get(&1).unwrap()[0]), vec![0.0]);
    assert_eq!(values(&s.get(&2).unwrap()[0]), vec![0.0]);
}

#[test]
fn several_states_and_a_middle_batch_axis() {
    // Like an LSTM: h [layers=2, batch, 3] and a flag [batch].
    let pair = |a: &str, b: &str| StatePair {
        input: a.into(),
        output: b.into(),
    };
    let h =
        StateSpec::stateful_backend(&pair("h_in", "h_out"), DataType::F32, &[2, -1, 3]).unwrap();
    assert_eq!(h.batch_axis, Some(1));
    assert_eq!(h.initial.shape, vec![2, 3]);
    let f = StateSpec::stateful_backend(&pair("f_in", "f_out"), DataType::Bool, &[-1]).unwrap();
    let mut s: StateStore<&str> = StateStore::new(vec![h, f]);
    s.reset("a");
    s.reset("b");
    // h_out[l][j][k] = 100 l + 10 j + k, f_out = [true, false].
    let h_out = f32s(
        &[2, 2, 3],
        &[
            0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 100.0, 101.0, 102.0, 110.0, 111.0, 112.0,
        ],
    );
    let f_out = Tensor::new(vec![2], TensorData::Bool(vec![true, false])).unwrap();
    s.scatter(&[Some("a"), Some("b")], |n| match n {
        "h_out" => Some(&h_out),
        "f_out" => Some(&f_out),
        _ => None,
    })
    .unwrap();
    assert_eq!(
        values(&s.get(&"a").unwrap()[0]),
        vec![0.0, 1.0, 2.0, 100.0, 101.0, 102.0]
    );
    assert_eq!(
        values(&s.get(&"b").unwrap()[0]),
        vec![10.0, 11.0, 12.0, 110.0, 111.0, 112.0]
    );
    // Reversed order, with a padding row in the middle.
    let g = s.gather(&[Some("b"), None, Some("a")]).unwrap();
    assert_eq!(g[0].0, "h_in");
    assert_eq!(g[0].1.shape, vec![2, 3, 3]);
    assert_eq!(
        values(&g[0].1),
        vec![
            10.0, 11.0, 12.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, //
            110.0, 111.0, 112.0, 0.0, 0.0, 0.0, 100.0, 101.0, 102.0
        ]
    );
    assert_eq!(g[1].1.data, TensorData::Bool(vec![false, false, true]));
}

#[test]
fn unbatched_models_take_one_sequence() {
    let mut s: StateStore<u64> = StateStore::new(vec![StateSpec {
        input_name: "S".into(),
        output_name: "S_OUT".into(),
        initial: f32s(&[2], &[1.0, 2.0]),
        batch_axis: None,
    }]);
    s.reset(1);
    s.reset(2);
    let g = s.gather(&[Some(1)]).unwrap();
    assert_eq!(g[0].1, f32s(&[2], &[1.0, 2.0]));
    assert!(s.gather(&[Some(1), Some(2)]).is_err());
    assert!(s.gather(&[None]).is_err());
    // A state whose shape changes (Triton follows the output's shape).
    let out = f32s(&[3], &[4.0, 5.0, 6.0]);
    s.scatter(&[Some(1)], |_| Some(&out)).unwrap();
    assert_eq!(s.gather(&[Some(1)]).unwrap()[0].1, out);
    assert_eq!(s.get(&2).unwrap()[0], f32s(&[2], &[1.0, 2.0]));
}

#[test]
fn sequences_of_different_state_shapes_do_not_batch() {
    let mut s = store(1);
    s.reset(1);
    s.reset(2);
    let wide = f32s(&[1, 2], &[1.0, 2.0]);
    s.scatter(&[Some(1)], |_| Some(&wide)).unwrap();
    assert!(matches!(
        s.gather(&[Some(1), Some(2)]),
        Err(StateError::Batch(_))
    ));
}

#[test]
fn fp16_storage_rounds_fp32_states() {
    let mut s = store(1).with_fp16_storage(true);
    s.reset(1);
    let out = f32s(&[1, 1], &[0.1]);
    s.scatter(&[Some(1)], |_| Some(&out)).unwrap();
    // 0.1 in binary16 is 0x2e66 = 0.0999755859375.
    assert_eq!(values(&s.get(&1).unwrap()[0]), vec![0.099_975_586]);
}

#[test]
fn state_pairs_from_the_config() {
    let cfg = |params: &str| {
        ParsedConfig::parse(format!("name: \"m\"\nbackend: \"stateful\"\n{params}"))
            .config
            .unwrap()
    };
    let c = cfg(
        "parameters { key: \"state_pairs\" value { string_value: \"<<<h_in, h_out>>> <<<c_in,c_out>>>\" } }",
    );
    assert_eq!(
        stateful_pairs(&c).unwrap(),
        vec![
            StatePair {
                input: "h_in".into(),
                output: "h_out".into()
            },
            StatePair {
                input: "c_in".into(),
                output: "c_out".into()
            }
        ]
    );
    assert!(matches!(
        stateful_pairs(&cfg("")),
        Err(StateError::StatePairs(_))
    ));
    let bad = cfg("parameters { key: \"state_pairs\" value { string_value: \"h_in, h_out\" } }");
    let e = stateful_pairs(&bad).unwrap_err().to_string();
    assert!(e.contains("Could not find any state tensors"), "{e}");
    assert!(parse_state_pairs("<<<a, b").is_err());
}

#[test]
fn stateful_backend_state_shapes() {
    let p = StatePair {
        input: "s".into(),
        output: "t".into(),
    };
    let e = StateSpec::stateful_backend(&p, DataType::F32, &[4, 5]).unwrap_err();
    assert!(e
        .to_string()
        .starts_with("No dynamic dimension in the ONNX model for a state tensor"));
    assert!(StateSpec::stateful_backend(&p, DataType::F32, &[-1, -1]).is_err());
    assert!(StateSpec::stateful_backend(&p, DataType::I64, &[-1]).is_err());
    let s = StateSpec::stateful_backend(&p, DataType::F16, &[3, -1]).unwrap();
    assert_eq!((s.batch_axis, s.initial.shape.clone()), (Some(1), vec![3]));
    assert_eq!(s.initial.data, TensorData::F16(vec![0; 3]));
}

fn implicit_config(mbs: i64, state: &str) -> ModelConfig {
    ParsedConfig::parse(format!(
        "name: \"m\"\nbackend: \"onnxruntime\"\nmax_batch_size: {mbs}\n\
         sequence_batching {{ state [ {state} ] }}"
    ))
    .config
    .unwrap()
}

#[test]
fn implicit_initial_states() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("initial_state")).unwrap();
    let mut bytes = Vec::new();
    for v in [1i32, -2, 3, 99] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(dir.path().join("initial_state").join("three.bin"), &bytes).unwrap();
    std::fs::write(
        dir.path().join("initial_state").join("words.bin"),
        [2, 0, 0, 0, b'h', b'i', 1, 0, 0, 0, b'!'],
    )
    .unwrap();
    let cfg = implicit_config(
        4,
        "{ input_name: \"A\" output_name: \"A_OUT\" data_type: TYPE_INT32 dims: [ 3 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 3 ] data_file: \"three.bin\" } },
         { input_name: \"B\" output_name: \"B_OUT\" data_type: TYPE_FP32 dims: [ -1, 2 ]
           initial_state { name: \"z\" data_type: TYPE_FP32 dims: [ 0, 2 ] zero_data: true } },
         { input_name: \"C\" output_name: \"C_OUT\" data_type: TYPE_INT64 dims: [ -1, 2 ] },
         { input_name: \"D\" output_name: \"D_OUT\" data_type: TYPE_STRING dims: [ 2 ]
           initial_state { name: \"w\" data_type: TYPE_STRING dims: [ 2 ] data_file: \"words.bin\" } }",
    );
    let specs = implicit_states(&cfg, dir.path()).unwrap();
    assert_eq!(specs.len(), 4);
    // Extra bytes in the file are ignored, as Triton does.
    assert_eq!(
        specs[0].initial,
        Tensor::new(vec![3], TensorData::I32(vec![1, -2, 3])).unwrap()
    );
    assert_eq!(specs[0].batch_axis, Some(0));
    assert_eq!(specs[1].initial.shape, vec![0, 2]);
    assert_eq!(
        specs[2].initial,
        Tensor::zeros(DataType::I64, vec![1, 2]).unwrap()
    );
    assert_eq!(
        specs[3].initial.data,
        TensorData::Bytes(vec![b"hi".to_vec(), b"!".to_vec()])
    );
    let unbatched = implicit_states(
        &implicit_config(
            0,
            "{ input_name: \"C\" output_name: \"C_OUT\" data_type: TYPE_INT64 dims: [ 1 ] }",
        ),
        dir.path(),
    )
    .unwrap();
    assert_eq!(unbatched[0].batch_axis, None);
}

#[test]
fn implicit_initial_state_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("initial_state")).unwrap();
    std::fs::write(dir.path().join("initial_state").join("short.bin"), [0u8; 8]).unwrap();
    let err = |state: &str| {
        implicit_states(&implicit_config(4, state), dir.path())
            .unwrap_err()
            .to_string()
    };
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] data_file: \"short.bin\" } }",
    );
    assert!(
        e.contains("initial_state setting expects 16 bytes, but the data provided from short.binonly has 8 bytes"),
        "{e}"
    );
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] data_file: \"missing.bin\" } }",
    );
    assert!(
        e.contains("cannot read") && e.contains("missing.bin"),
        "{e}"
    );
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
           initial_state { name: \"i\" data_type: TYPE_FP32 dims: [ 4 ] zero_data: true } }",
    );
    assert!(e.contains("does not match the state data type"), "{e}");
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ 4 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 4 ] } }",
    );
    assert!(e.contains("to have state_data set"), "{e}");
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ -1 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ -1 ] zero_data: true } }",
    );
    assert!(e.contains("contains variable dimensions"), "{e}");
    // More than any memory: an error naming the state, not an abort.
    let e = err(
        "{ input_name: \"A\" output_name: \"O\" data_type: TYPE_INT32 dims: [ -1 ]
           initial_state { name: \"i\" data_type: TYPE_INT32 dims: [ 100000000000000000 ] zero_data: true } }",
    );
    assert_eq!(
        e,
        "state 'A': cannot allocate 100000000000000000 elements of INT32: not enough memory"
    );
}
