//! Control tensors (START, END, READY, CORRID) of the sequence batcher.

use super::*;
use crate::batching::controls::{control_tensors, ControlKind, ControlSpec, ControlValues};

fn model_config(pbtxt: &str) -> crate::schema::inference::ModelConfig {
    ParsedConfig::parse(pbtxt.to_string())
        .config
        .expect("test config parses")
}

/// (name, datatype, shape, data) of each control tensor.
fn tensors_of(
    cfg: &crate::schema::inference::ModelConfig,
    b: &BatchRecord,
) -> Vec<(String, &'static str, Vec<i64>, ControlValues)> {
    control_tensors(cfg, b.executed_slots())
        .expect("valid controls")
        .into_iter()
        .map(|t| (t.name, t.datatype, t.shape, t.data))
        .collect()
}

#[test]
fn s10_corrid_truncated_and_controls_in_configured_dtypes() {
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { direct {}
          control_input [
            { name: "START" control [{ kind: CONTROL_SEQUENCE_START bool_false_true: [false, true] }] },
            { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY int32_false_true: [0, 1] }] },
            { name: "CORRID" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT32 }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    let big = (1u64 << 32) + 5;
    let out = run(
        &s,
        MS,
        vec![sreq("a", 0, 7, true, false), sreq("b", 0, big, true, false)],
    );
    assert_eq!(out.batches.len(), 1, "both start together");
    assert_eq!(
        tensors_of(&cfg, &out.batches[0]),
        vec![
            (
                "START".into(),
                "BOOL",
                vec![2, 1],
                ControlValues::Bool(vec![true, true])
            ),
            (
                "READY".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![1, 1])
            ),
            (
                "CORRID".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![7, 5])
            ),
        ]
    );
    let t = control_tensors(&cfg, out.batches[0].executed_slots()).unwrap();
    assert_eq!(
        t.iter().map(|t| t.kind).collect::<Vec<_>>(),
        vec![ControlKind::Start, ControlKind::Ready, ControlKind::Corrid]
    );
    let json = serde_json::to_value(&t[2]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"name": "CORRID", "kind": "CORRID", "datatype": "INT32", "shape": [2, 1], "data": [7, 5]})
    );
}

#[test]
fn fp32_controls_with_direct_padding() {
    // S1's configuration: START and READY as fp32_false_true [0, 1].
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { direct {}
          control_input [
            { name: "START" control [{ kind: CONTROL_SEQUENCE_START fp32_false_true: [0, 1] }] },
            { name: "READY" control [{ kind: CONTROL_SEQUENCE_READY fp32_false_true: [0.5, 2] }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    // Slot 0: 1 (START, then idle); slot 1: 2 (START, then a second step).
    let out = run(
        &s,
        MS,
        vec![
            sreq("1.0", 0, 1, true, false),
            sreq("2.0", 0, 2, true, false),
            sreq("2.1", 10 * MS, 2, false, false),
        ],
    );
    assert_eq!(out.batches.len(), 2);
    assert_eq!(
        tensors_of(&cfg, &out.batches[1]),
        vec![
            (
                "START".into(),
                "FP32",
                vec![2, 1],
                ControlValues::Fp32(vec![0.0, 0.0])
            ),
            (
                "READY".into(),
                "FP32",
                vec![2, 1],
                ControlValues::Fp32(vec![0.5, 2.0])
            ),
        ]
    );
}

#[test]
fn string_corrid_and_padding_and_kind_mismatch() {
    let text = |dtype: &str| {
        format!(
            r#"name: "m" max_batch_size: 2
            sequence_batching {{ direct {{}}
              control_input [
                {{ name: "END" control [{{ kind: CONTROL_SEQUENCE_END int32_false_true: [-1, 9] }}] }},
                {{ name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {dtype} }}] }}
              ] }}"#
        )
    };
    let cfg = model_config(&text("TYPE_STRING"));
    let s = Settings::from_config(&cfg).unwrap();
    let str_req = |id: &str, t, corr: &str, start, end| Request {
        sequence_id: Some(CorrId::Str(corr.into())),
        start,
        end,
        ..Request::new(id, t)
    };
    let out = run(
        &s,
        MS,
        vec![
            str_req("a0", 0, "alpha", true, false),
            str_req("b0", 0, "beta", true, false),
            str_req("b1", 10 * MS, "beta", false, true),
        ],
    );
    assert_eq!(
        tensors_of(&cfg, &out.batches[0])[1],
        (
            "CORRID".into(),
            "BYTES",
            vec![2, 1],
            ControlValues::Bytes(vec!["alpha".into(), "beta".into()])
        )
    );
    // The second batch pads slot 0: CORRID is the empty string, END false.
    assert_eq!(
        tensors_of(&cfg, &out.batches[1]),
        vec![
            (
                "END".into(),
                "INT32",
                vec![2, 1],
                ControlValues::Int32(vec![-1, 9])
            ),
            (
                "CORRID".into(),
                "BYTES",
                vec![2, 1],
                ControlValues::Bytes(vec![String::new(), "beta".into()])
            ),
        ]
    );
    // An integer id with a TYPE_STRING CORRID, a string id with a numeric one.
    let ints = run(&s, MS, vec![sreq("x", 0, 9, true, false)]);
    let e = control_tensors(&cfg, ints.batches[0].executed_slots()).unwrap_err();
    assert!(e.contains("integer correlation id 9"), "{e}");
    let numeric = model_config(&text("TYPE_UINT64"));
    let e = control_tensors(&numeric, out.batches[0].executed_slots()).unwrap_err();
    assert!(e.contains("string correlation id alpha"), "{e}");
}

#[test]
fn corrid_keeps_the_low_order_bytes_of_the_id() {
    let row = |slot, id: u64| SlotRecord {
        slot,
        request: Some(format!("r{slot}")),
        sequence_id: Some(CorrId::Int(id)),
        start: false,
        end: false,
        ready: true,
        corrid: CorrId::Int(id),
    };
    let pad = SlotRecord {
        request: None,
        sequence_id: None,
        ready: false,
        corrid: CorrId::Int(0),
        ..row(2, 0)
    };
    let rows = [row(0, u64::MAX), row(1, (1 << 31) | (7 << 32)), pad];
    let corrid = |dtype: &str| {
        let cfg = model_config(&format!(
            r#"name: "m" max_batch_size: 4 sequence_batching {{ direct {{}}
              control_input [{{ name: "C" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: {dtype} }}] }}] }}"#
        ));
        let t = control_tensors(&cfg, &rows).unwrap();
        assert_eq!(t[0].shape, vec![3, 1]);
        (t[0].datatype, t[0].data.clone())
    };
    assert_eq!(
        corrid("TYPE_UINT64"),
        (
            "UINT64",
            ControlValues::Uint64(vec![u64::MAX, (1 << 31) | (7 << 32), 0])
        )
    );
    assert_eq!(
        corrid("TYPE_INT64"),
        (
            "INT64",
            ControlValues::Int64(vec![-1, (1 << 31) | (7 << 32), 0])
        )
    );
    assert_eq!(
        corrid("TYPE_UINT32"),
        ("UINT32", ControlValues::Uint32(vec![u32::MAX, 1 << 31, 0]))
    );
    assert_eq!(
        corrid("TYPE_INT32"),
        ("INT32", ControlValues::Int32(vec![-1, i32::MIN, 0]))
    );
}

#[test]
fn oldest_controls_and_unbatched_shape() {
    let cfg = model_config(
        r#"name: "m" max_batch_size: 2
        sequence_batching { oldest { max_candidate_sequences: 4 }
          control_input [
            { name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] },
            { name: "E" control [{ kind: CONTROL_SEQUENCE_END int32_false_true: [0, 1] }] },
            { name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }] }
          ] }"#,
    );
    let s = Settings::from_config(&cfg).unwrap();
    let out = run(&s, MS, oldest_trace(false));
    // S4a at t3: [D1, A3] with START [1,0], END [0,1], CORRID [D, A].
    assert_eq!(out.batches[3].requests, vec!["D1", "A3"]);
    let data: Vec<ControlValues> = tensors_of(&cfg, &out.batches[3])
        .into_iter()
        .map(|t| t.3)
        .collect();
    assert_eq!(
        data,
        vec![
            ControlValues::Int32(vec![1, 0]),
            ControlValues::Int32(vec![0, 1]),
            ControlValues::Uint64(vec![4, 1]),
        ]
    );
    // max_batch_size 0: one entry, shape [1].
    let cfg0 = model_config(
        r#"name: "m" max_batch_size: 0 sequence_batching { direct {}
          control_input [{ name: "R" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] }] }"#,
    );
    let s0 = Settings::from_config(&cfg0).unwrap();
    let out = run(&s0, MS, vec![sreq("a", 0, 3, true, true)]);
    assert_eq!(
        tensors_of(&cfg0, &out.batches[0]),
        vec![("R".into(), "BOOL", vec![1], ControlValues::Bool(vec![true]))]
    );
}

#[test]
fn control_spec_rejects_what_triton_would_not_load() {
    let spec = |controls: &str| {
        ControlSpec::from_config(&model_config(&format!(
            r#"name: "m" max_batch_size: 2 sequence_batching {{ control_input [{controls}] }}"#
        )))
    };
    let bad = [
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] fp32_false_true: [0, 1] }] }"#,
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [1] }] }"#,
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START }] }"#,
        r#"{ name: "C" control [{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_FP32 }] }"#,
        r#"{ name: "A" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] },
           { name: "B" control [{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }] }"#,
    ];
    for b in bad {
        assert!(spec(b).is_err(), "{b} must be rejected");
    }
    let ok = spec(
        r#"{ name: "S" control [{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }] }"#,
    )
    .unwrap()
    .unwrap();
    assert!(!ok.is_empty());
    let none = ControlSpec::from_config(&model_config(
        r#"name: "m" max_batch_size: 2 dynamic_batching {}"#,
    ))
    .unwrap();
    assert!(none.is_none());
}
