//! Tests of the stateful backend: sizing, slots, its config checks,
//! warm-up inputs and GPU-only notes.

use super::*;
use crate::config::ParsedConfig;
use crate::tensor::TensorData;

/// A stateful-backend config: `max_batch_size` B, `oldest` with N
/// candidates (and `extra` inside `oldest`), parameters as key/value.
fn config(b: i64, n: i64, extra: &str, params: &[(&str, &str)], corrid: &str) -> ModelConfig {
    let params: String = params
        .iter()
        .map(|(k, v)| format!("parameters {{ key: \"{k}\" value {{ string_value: \"{v}\" }} }}\n"))
        .collect();
    ParsedConfig::parse(format!(
        "name: \"m\"\nbackend: \"stateful\"\nmax_batch_size: {b}\n\
         output {{ name: \"Output\" data_type: TYPE_FP32 dims: [ 4, -1, 5 ] }}\n\
         sequence_batching {{ max_sequence_idle_microseconds: 1000 \
         oldest {{ max_candidate_sequences: {n} {extra} }} \
         control_input {{ name: \"CORRID\" control {{ kind: CONTROL_SEQUENCE_CORRID data_type: {corrid} }} }} }}\n{params}"
    ))
    .config
    .unwrap()
}

fn backend(b: i64, n: i64, extra: &str, params: &[(&str, &str)]) -> StatefulBackend {
    StatefulBackend::from_config(&config(b, n, extra, params, "TYPE_UINT64"), 1)
        .unwrap()
        .unwrap()
}

#[test]
fn warm_up_runs_at_the_maximum_at_one_unless_padded_to_the_preferred_sizes_and_at_each_preferred_size(
) {
    // No preferred size: the maximum and 1.
    assert_eq!(backend(4, 8, "", &[]).warmup_batch_sizes(), [4, 1]);
    // Preferred sizes ascending, the maximum not twice.
    assert_eq!(
        backend(8, 16, "preferred_batch_size: [ 8, 2, 4 ]", &[]).warmup_batch_sizes(),
        [8, 1, 2, 4]
    );
    // Runs padded to the preferred sizes: no run at 1 (unless
    // preferred).
    let padded = [("always_pad_to_max_batch", "1")];
    assert_eq!(
        backend(8, 16, "preferred_batch_size: [ 2 ]", &padded).warmup_batch_sizes(),
        [8, 2]
    );
    assert_eq!(
        backend(8, 16, "preferred_batch_size: [ 1, 8 ]", &padded).warmup_batch_sizes(),
        [8, 1]
    );
}

#[test]
fn warm_up_inputs_are_zeros_with_every_row_reset_at_the_batch_size() {
    let with_input_dims = |dims: &str| {
        ParsedConfig::parse(format!(
            "name: \"m\" backend: \"stateful\" max_batch_size: 4 \
             input {{ name: \"Input\" data_type: TYPE_FP32 dims: [ {dims} ] }}"
        ))
        .config
        .unwrap()
    };
    let cfg = with_input_dims("4, -1, 5");
    let input = |name, dtype, dims| ModelInput { name, dtype, dims };
    let model = [
        input("Input", Some(DataType::F32), &[4, -1, 5][..]),
        input("Accumulate_In", Some(DataType::F32), &[-1, 5][..]),
        input("resetsequence", Some(DataType::Bool), &[-1, 1][..]),
    ];
    let states = ["Accumulate_In"];
    let got = warmup_inputs(&cfg, &model, "ResetSequence", &states, 3).unwrap();
    let shapes: Vec<(&str, &[i64])> = got
        .iter()
        .map(|(n, t)| (n.as_str(), t.shape.as_slice()))
        .collect();
    assert_eq!(
        shapes,
        [
            ("Input", &[4, 3, 5][..]),
            ("Accumulate_In", &[3, 5][..]),
            ("resetsequence", &[3, 1][..]),
        ]
    );
    assert_eq!(got[0].1.data, TensorData::F32(vec![0.0; 60]));
    assert_eq!(got[1].1.data, TensorData::F32(vec![0.0; 15]));
    assert_eq!(got[2].1.data, TensorData::Bool(vec![true; 3]));

    // What the backend refuses at load, in its words where it has
    // them.
    let refused =
        |model: &[ModelInput]| warmup_inputs(&cfg, model, "ResetSequence", &states, 3).unwrap_err();
    let extra = [model[0], input("Other", Some(DataType::F32), &[-1][..])];
    assert_eq!(
        refused(&extra),
        "Model configuration does not match ONNX model for tensor name: Other"
    );
    let fixed_reset = [input("ResetSequence", Some(DataType::Bool), &[1, 1][..])];
    assert_eq!(
        refused(&fixed_reset),
        "Batch dimension should always be the first dimension for reset sequence tensor"
    );
    let fixed_state = [input("Accumulate_In", Some(DataType::F32), &[2, 5][..])];
    assert_eq!(
        refused(&fixed_state),
        "No dynamic dimension in the ONNX model for a state tensor"
    );
    let two_variable = [input("Accumulate_In", Some(DataType::F32), &[-1, -1][..])];
    assert!(
        refused(&two_variable).contains("[-1, 3] at batch size 3"),
        "{}",
        refused(&two_variable)
    );
    let int_reset = [input("ResetSequence", Some(DataType::I32), &[-1, 1][..])];
    assert!(
        refused(&int_reset).contains("booleans"),
        "{}",
        refused(&int_reset)
    );
    assert_eq!(
        warmup_inputs(
            &with_input_dims("4, 5"),
            &model[..1],
            "ResetSequence",
            &states,
            3
        )
        .unwrap_err(),
        "Cannot infer the batch dimension based on the Triton model configuration"
    );
}

#[test]
fn the_worked_sizing_of_the_accumulate_example() {
    // docs/spec/stateful-backend.md §4: N 1280, ratio 0.9, B 16, lazy
    // 512/100/32/200.
    let c = config(
        16,
        1280,
        "",
        &[
            ("initial_buffer_size", "512"),
            ("subsequent_buffer_size", "100"),
            ("buffer_alloc_threshold", "32"),
            ("buffer_dealloc_threshold", "200"),
        ],
        "TYPE_UINT64",
    );
    let z = sizing(&c).unwrap();
    assert_eq!((z.initial, z.subsequent, z.max_chunks), (512, 100, 7));
    assert_eq!(z.capacity(), 1112);
    // Without lazy parameters: min(N, max_conn) in one chunk.
    let z = sizing(&config(4, 8, "", &[], "TYPE_UINT64")).unwrap();
    assert_eq!((z.initial, z.max_chunks, z.capacity()), (7, 1, 7));
}

#[test]
fn load_time_checks_give_the_backends_messages() {
    let e = |b, n, p: &[(&str, &str)]| sizing(&config(b, n, "", p, "TYPE_UINT64")).unwrap_err();
    assert_eq!(
        e(16, 0, &[]),
        "Initial buffer size must be larger than or equal to the max batch size"
    );
    let lazy = |i: &str, s: &str, a: &str| {
        vec![
            ("initial_buffer_size", i.to_string()),
            ("subsequent_buffer_size", s.to_string()),
            ("buffer_alloc_threshold", a.to_string()),
            ("buffer_dealloc_threshold", "200".to_string()),
        ]
    };
    let run = |p: Vec<(&str, String)>| {
        let p: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
        sizing(&config(16, 1280, "", &p, "TYPE_UINT64")).unwrap_err()
    };
    assert_eq!(
        run(lazy("2000", "100", "32")),
        "Initial buffer size cannot be larger than maximum allowed connections."
    );
    assert!(run(lazy("512", "8", "32")).starts_with("Sbusequent buffer size"));
    assert!(run(lazy("512", "100", "8")).starts_with("Buffer allocation threshold"));
    assert_eq!(
        run(lazy("64", "100", "100")),
        "Initial buffer size cannot be smaller than allocation threshold."
    );
    assert_eq!(
        run(lazy("-1", "100", "32")),
        "Invalid value for `initial_buffer_size`"
    );
    let missing = sizing(&config(
        16,
        1280,
        "",
        &[("initial_buffer_size", "512")],
        "TYPE_UINT64",
    ))
    .unwrap_err();
    assert!(missing.contains("subsequent_buffer_size"), "{missing}");
}

#[test]
fn a_sequence_beyond_capacity_fails_and_a_freed_slot_is_reused() {
    // Capacity 7 (N 8 × 0.9), B 4.
    let mut b = backend(4, 8, "", &[]);
    let ids: Vec<CorrId> = (1..=9).map(CorrId::Int).collect();
    let rows = |r: &[usize], end: bool| -> Vec<Row> {
        r.iter()
            .map(|&i| Row {
                corrid: Some(&ids[i]),
                end,
            })
            .collect::<Vec<_>>()
    };
    let (f, p) = b.plan(0, 0, &rows(&[0, 1, 2, 3], false));
    assert_eq!((f, p), (vec![Fate::Infer; 4], 4));
    let (f, _) = b.plan(0, 1, &rows(&[4, 5, 6, 7], false));
    assert_eq!(f[..3], vec![Fate::Infer; 3]);
    assert_eq!(f[3], Fate::Error(TOO_MANY.into()));
    assert_eq!(b.slots(0).len(), 7);
    // Known ids keep their slots; an END frees one after the run, so
    // the same batch cannot reuse it, the next one can.
    let mut r = rows(&[0, 7], false);
    r[0].end = true;
    let (f, _) = b.plan(0, 2, &r);
    assert_eq!(f, vec![Fate::Infer, Fate::Error(TOO_MANY.into())]);
    let (f, _) = b.plan(0, 3, &rows(&[7], false));
    assert_eq!(f, vec![Fate::Infer]);
    assert!(b.slots(0).holds(&CorrId::Int(8)) && !b.slots(0).holds(&CorrId::Int(1)));
}

#[test]
fn idle_sequences_lose_their_slot_unless_in_the_batch() {
    let mut b = backend(4, 8, "", &[]);
    let (a, c) = (CorrId::Int(1), CorrId::Int(2));
    let row = |id| Row {
        corrid: Some(id),
        end: false,
    };
    b.plan(0, 0, &[row(&a), row(&c)]);
    // Idle limit 1000 µs: at 5000 both are stale, but 2 is in the batch.
    b.plan(0, 5000, &[row(&c)]);
    assert!(!b.slots(0).holds(&CorrId::Int(1)) && b.slots(0).holds(&CorrId::Int(2)));
}

#[test]
fn lazy_chunks_grow_and_shrink() {
    // N 40 × 1.0, B 2, lazy 4/4/2/6: chunks of 4 up to 1 + 36/4 = 10.
    let c = config(
        2,
        40,
        "",
        &[
            ("max_candidate_sequence_use_ratio", "1.0"),
            ("initial_buffer_size", "4"),
            ("subsequent_buffer_size", "4"),
            ("buffer_alloc_threshold", "2"),
            ("buffer_dealloc_threshold", "6"),
        ],
        "TYPE_UINT64",
    );
    let mut s = Slots::new(sizing(&c).unwrap());
    assert_eq!(s.allocated(), 4);
    let id = |s: &str| CorrId::Str(s.to_string());
    for k in ["a", "b", "c"] {
        assert!(s.lookup(&id(k), 0));
    }
    s.after_batch(); // 1 free < 2: a chunk is added
    assert_eq!(s.allocated(), 8);
    for k in ["d", "e", "f"] {
        assert!(s.lookup(&id(k), 0));
    }
    for k in ["a", "b", "c", "d", "e", "f"] {
        s.free(&id(k));
    }
    s.after_batch(); // 8 free > 6 and the last chunk is free
    assert_eq!(s.allocated(), 4);
    s.after_batch(); // chunk 0 is never released
    assert_eq!(s.allocated(), 4);
}

#[test]
fn end_requests_are_not_run_with_infer_end_requests_0() {
    let mut b = backend(4, 8, "", &[("infer_end_requests", "0")]);
    let id = CorrId::Int(5);
    let (f, p) = b.plan(
        0,
        0,
        &[Row {
            corrid: Some(&id),
            end: false,
        }],
    );
    assert_eq!((f, p), (vec![Fate::Infer], 4));
    assert!(b.slots(0).holds(&CorrId::Int(5)));
    let (f, p) = b.plan(
        0,
        1,
        &[Row {
            corrid: Some(&id),
            end: true,
        }],
    );
    assert_eq!((f, p), (vec![Fate::EndOnly], 0));
    assert!(b.slots(0).is_empty());
    let (name, t) = &b.end_outputs()[0];
    assert_eq!(
        (name.as_str(), t.shape.clone()),
        ("Output", vec![1, 1, 1, 1])
    );
    // The default runs END requests.
    let mut d = backend(4, 8, "", &[]);
    let (f, _) = d.plan(
        0,
        0,
        &[Row {
            corrid: Some(&id),
            end: true,
        }],
    );
    assert_eq!(f, vec![Fate::Infer]);
    assert!(d.slots(0).is_empty());
}

#[test]
fn padding_to_max_or_preferred_batch_size() {
    let b = backend(8, 16, "preferred_batch_size: [ 2, 6 ]", &[]);
    assert_eq!(
        (b.padded_size(1), b.padded_size(3), b.padded_size(8)),
        (8, 8, 8)
    );
    let b = backend(
        8,
        16,
        "preferred_batch_size: [ 6, 2 ]",
        &[("always_pad_to_max_batch", "1")],
    );
    assert_eq!(
        (
            b.padded_size(1),
            b.padded_size(2),
            b.padded_size(3),
            b.padded_size(7)
        ),
        (2, 2, 6, 7)
    );
    assert_eq!(b.padded_size(0), 0);
}

#[test]
fn correlation_ids_of_the_wrong_kind_fail() {
    let mut n = backend(4, 8, "", &[]);
    let s = CorrId::Str("abc".into());
    let i = CorrId::Int(3);
    let (f, _) = n.plan(
        0,
        0,
        &[
            Row {
                corrid: Some(&s),
                end: false,
            },
            Row {
                corrid: Some(&i),
                end: false,
            },
        ],
    );
    assert_eq!(f, vec![Fate::Error(NOT_UNSIGNED.into()), Fate::Infer]);
    let mut st = StatefulBackend::from_config(&config(4, 8, "", &[], "TYPE_STRING"), 1)
        .unwrap()
        .unwrap();
    let (f, _) = st.plan(
        0,
        0,
        &[
            Row {
                corrid: Some(&s),
                end: false,
            },
            Row {
                corrid: Some(&i),
                end: false,
            },
        ],
    );
    assert_eq!(f, vec![Fate::Infer, Fate::Error(NOT_STRING.into())]);
}

#[test]
fn apply_takes_rows_out_and_pads() {
    let mut b = backend(4, 8, "", &[("infer_end_requests", "0")]);
    let req = |id: &str, seq: u64, end: bool| RunRequest {
        id: id.into(),
        index: 0,
        origin: String::new(),
        arrival_us: None,
        sequence_id: Some(CorrId::Int(seq)),
        start: !end,
        end,
        priority: 0,
        timeout_us: 0,
        inputs: Default::default(),
    };
    let requests = vec![req("a", 1, false), req("b", 2, true), req("c", 3, false)];
    let mut tags = vec![Some(0), Some(1), Some(2)];
    let mut keys = vec![Some(10u32), Some(20), Some(30)];
    let mut sizes = vec![1, 1, 1];
    let mut starts = vec![true, false, true];
    let answers = b.apply(
        0,
        0,
        &requests,
        &mut tags,
        &mut keys,
        &mut sizes,
        &mut starts,
    );
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0].0, 1);
    assert!(answers[0].1.outcome.is_ok());
    assert_eq!(tags, vec![Some(0), Some(2), None, None]);
    assert_eq!(keys, vec![Some(10), Some(30), None, None]);
    assert_eq!(starts, vec![true, true, true, true]);
    assert_eq!(sizes.len(), 4);
}

#[test]
fn gpu_only_parameters_get_a_note() {
    let c = config(
        4,
        8,
        "",
        &[
            ("ort_ep", "trt"),
            ("enable_cuda_graph", "1"),
            ("state_pairs", "<<<a, b>>>"),
        ],
        "TYPE_UINT64",
    );
    let notes = gpu_only_notes(&c);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("'ort_ep'") && notes[1].contains("'enable_cuda_graph'"));
    assert!(notes.iter().all(|n| n.contains("no effect on a CPU run")));
}
