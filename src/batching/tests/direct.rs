//! The Direct sequence batcher: slots, backlog, padding, idle timeouts
//! and admission errors (docs/spec/schedulers.md §3.11).

use super::*;

#[test]
fn direct_free_slots_come_from_tritons_heap() {
    // testdata/fidelity/direct-reuse (recorded on Triton 2.51): 2 instances
    // x 2 slots. p0 and q0 take slot 0 of instance 0 and 1; q1 (END) frees
    // instance 1's slot 0 before p1 (END) frees instance 0's. The free
    // slots are a heap keyed by slot index only: the next new sequence, r0,
    // gets instance 1's slot 0, s0 instance 0's, and t0 slot 1 of
    // instance 1 (docs/spec/schedulers-observed.md, Direct).
    let s = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
           sequence_batching { max_sequence_idle_microseconds: 5000000 direct {} }"#,
    );
    let ms = 1000;
    let trace = vec![
        sreq("p0", 0, 31, true, false),
        sreq("q0", 20 * ms, 32, true, false),
        sreq("q1", 200 * ms, 32, false, true),
        sreq("p1", 250 * ms, 31, false, true),
        sreq("r0", 450 * ms, 33, true, false),
        sreq("s0", 470 * ms, 34, true, false),
        sreq("t0", 490 * ms, 35, true, true),
        sreq("r1", 700 * ms, 33, false, true),
        sreq("s1", 720 * ms, 34, false, true),
    ];
    let out = run(&s, 151_482, trace);
    let placed = |id: &str| (record(&out, id).instance, record(&out, id).slot);
    assert_eq!(placed("p0"), (Some(0), Some(0)));
    assert_eq!(placed("q0"), (Some(1), Some(0)));
    assert_eq!(placed("r0"), (Some(1), Some(0)));
    assert_eq!(placed("s0"), (Some(0), Some(0)));
    assert_eq!(placed("t0"), (Some(1), Some(1)));
    assert_eq!(placed("r1"), (Some(1), Some(0)));
    assert_eq!(placed("s1"), (Some(0), Some(0)));
}

/// (start, instance, per-slot (request, START, READY) for the executed entries)
type DirectRow<'a> = (u64, usize, Vec<(Option<&'a str>, bool, bool)>);

pub(super) fn direct_rows(sink: &CollectSink) -> Vec<DirectRow<'_>> {
    sink.batches
        .iter()
        .map(|b| {
            let entries = b.slots[..b.size as usize]
                .iter()
                .map(|s| (s.request.as_deref(), s.start, s.ready))
                .collect();
            (b.start_us, b.instance, entries)
        })
        .collect()
}

#[test]
fn s1_direct_docs_example_with_backlog() {
    let s = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}]
        sequence_batching { direct {} }"#,
    );
    let u = MS; // one time unit
    let lens = [5u64, 3, 6, 2, 3, 2];
    let starts = [0u64, 0, 0, 0, 10, 20];
    let mut trace = Vec::new();
    for t in (0..=50).step_by(10) {
        for k in 0..6 {
            if t >= starts[k] && (t - starts[k]) / 10 < lens[k] {
                let n = (t - starts[k]) / 10;
                trace.push(sreq(
                    &format!("S{k}.{n}"),
                    t * u,
                    100 + k as u64,
                    n == 0,
                    n + 1 == lens[k],
                ));
            }
        }
    }
    // Arrival order within a timestamp as in the spec's table.
    let out = run(&s, u, trace);
    let r = |id| Some(id);
    let expected: Vec<DirectRow> = vec![
        (0, 0, vec![(r("S0.0"), true, true), (r("S2.0"), true, true)]),
        (0, 1, vec![(r("S1.0"), true, true), (r("S3.0"), true, true)]),
        (
            10 * u,
            0,
            vec![(r("S0.1"), false, true), (r("S2.1"), false, true)],
        ),
        (
            10 * u,
            1,
            vec![(r("S1.1"), false, true), (r("S3.1"), false, true)],
        ),
        (
            11 * u,
            1,
            vec![(None, false, false), (r("S4.0"), true, true)],
        ),
        (
            20 * u,
            0,
            vec![(r("S0.2"), false, true), (r("S2.2"), false, true)],
        ),
        (
            20 * u,
            1,
            vec![(r("S1.2"), false, true), (r("S4.1"), false, true)],
        ),
        (21 * u, 1, vec![(r("S5.0"), true, true)]),
        (
            30 * u,
            0,
            vec![(r("S0.3"), false, true), (r("S2.3"), false, true)],
        ),
        (
            30 * u,
            1,
            vec![(r("S5.1"), false, true), (r("S4.2"), false, true)],
        ),
        (
            40 * u,
            0,
            vec![(r("S0.4"), false, true), (r("S2.4"), false, true)],
        ),
        (
            50 * u,
            0,
            vec![(None, false, false), (r("S2.5"), false, true)],
        ),
    ];
    assert_eq!(direct_rows(&out), expected);
    // Every batch lists every slot of its instance; padding has CORRID 0.
    assert!(out.batches.iter().all(|b| b.slots.len() == 2));
    let pad = &out.batches[4].slots[0];
    assert_eq!((pad.end, pad.corrid.clone()), (false, CorrId::Int(0)));
    assert_eq!(out.batches[4].slots[1].corrid, CorrId::Int(104));
    assert!(out.requests.iter().all(|r| r.status == Status::Ok));
    assert_eq!(out.requests.len(), 21);
}

pub(super) fn skip_batch_trace() -> Vec<Request> {
    // 1002 (4 requests) and 1004 (4) start first, then 1001 (2), 1003 (2).
    let lens = [(1002u64, 4u64), (1004, 4), (1001, 2), (1003, 2)];
    let mut trace = Vec::new();
    for n in 0..4 {
        for &(id, len) in &lens {
            if n < len {
                trace.push(sreq(&format!("{id}.{n}"), 0, id, n == 0, n + 1 == len));
            }
        }
    }
    trace
}

#[test]
fn s2_skip_batch_spread_order() {
    let h = |pairs: &[(u32, usize)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
    let one = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let out = run(&one, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(4, 2), (2, 2)]));
    let slot_of = |out: &CollectSink, id: &str| {
        let r = record(out, id);
        (r.instance.unwrap(), r.slot.unwrap())
    };
    assert_eq!(slot_of(&out, "1002.0"), (0, 0));
    assert_eq!(slot_of(&out, "1004.0"), (0, 1));
    assert_eq!(slot_of(&out, "1001.0"), (0, 2));
    assert_eq!(slot_of(&out, "1003.0"), (0, 3));

    let two = settings(
        r#"name: "m" max_batch_size: 2 instance_group [{count: 2}] sequence_batching { direct {} }"#,
    );
    let out = run(&two, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(2, 4), (1, 4)]));
    assert_eq!(slot_of(&out, "1002.3"), (0, 0));
    assert_eq!(slot_of(&out, "1004.3"), (1, 0));
    assert_eq!(slot_of(&out, "1001.1"), (0, 1));
    assert_eq!(slot_of(&out, "1003.1"), (1, 1));

    let four = settings(
        r#"name: "m" max_batch_size: 1 instance_group [{count: 4}] sequence_batching { direct {} }"#,
    );
    let out = run(&four, MS, skip_batch_trace());
    assert_eq!(histogram(&out), h(&[(1, 12)]));
}

#[test]
fn s3_direct_delay_and_minimum_slot_utilization() {
    let cfg = r#"name: "m" max_batch_size: 4
        sequence_batching { max_sequence_idle_microseconds: 100000000
          direct { max_queue_delay_microseconds: 3000000 minimum_slot_utilization: U } }"#;
    let trace = |late: u64| {
        vec![
            sreq("1001.0", 0, 1001, true, false),
            sreq("1002.0", 0, 1002, true, false),
            sreq("1002.1", late, 1002, false, false),
        ]
    };
    let out = run(&settings(&cfg.replace("U", "0")), 100 * MS, trace(500 * MS));
    assert_eq!(
        direct_rows(&out),
        vec![
            (
                0,
                0,
                vec![(Some("1001.0"), true, true), (Some("1002.0"), true, true)]
            ),
            (
                500 * MS,
                0,
                vec![(None, false, false), (Some("1002.1"), false, true)]
            ),
        ]
    );
    assert_eq!(histogram(&out), [(2, 2)].into_iter().collect());
    // U = 0.5: first batch at once, second waits 3 s after 1002.1 arrived
    // (strictly more than the delay: an instant later).
    let out = run(
        &settings(&cfg.replace("U", "0.5")),
        100 * MS,
        trace(500 * MS),
    );
    let starts: Vec<u64> = out.batches.iter().map(|b| b.start_us).collect();
    assert_eq!(starts, vec![0, 3500 * MS + 1]);
    // U = 1: the first batch waits 3 s; 1002.1 (sent at 3.5 s) waits again.
    let out = run(
        &settings(&cfg.replace("U", "1")),
        100 * MS,
        trace(3500 * MS),
    );
    let starts: Vec<u64> = out.batches.iter().map(|b| b.start_us).collect();
    assert_eq!(starts, vec![3 * S + 1, 6500 * MS + 1]);
}

#[test]
fn s6_admission_errors() {
    let s = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let trace = vec![
        sreq("zero", 0, 0, true, false),
        sreq("n1", 0, 37469245, false, false),
        sreq("n2", MS, 37469245, false, false),
        sreq("n3", 2 * MS, 37469245, false, true),
        sreq("c1", 10 * MS, 3, true, false),
        sreq("c2", 11 * MS, 3, false, false),
        sreq("c3", 12 * MS, 3, false, true),
        sreq("c4", 13 * MS, 3, false, false),
        Request {
            batch_size: 2,
            ..sreq("big", 20 * MS, 9, true, true)
        },
    ];
    let out = run(&s, MS / 10, trace);
    let reason = |id| record(&out, id).reason.clone().unwrap_or_default();
    assert_eq!(
        reason("zero"),
        "inference request to model 'm' must specify a non-zero or non-empty correlation ID"
    );
    let start37 = "inference request for sequence 37469245 to model 'm' must specify the START flag on the first request of the sequence";
    for id in ["n1", "n2", "n3"] {
        assert_eq!(reason(id), start37);
        assert_eq!(record(&out, id).status, Status::Rejected);
    }
    for id in ["c1", "c2", "c3"] {
        assert_eq!(record(&out, id).status, Status::Ok);
    }
    assert_eq!(
        reason("c4"),
        "inference request for sequence 3 to model 'm' must specify the START flag on the first request of the sequence"
    );
    assert_eq!(
        reason("big"),
        "inference request to model 'm' must specify batch-size 1 due to requirements of sequence batcher"
    );
}

#[test]
fn s7_restart_without_end_keeps_slot() {
    let s = settings(r#"name: "m" max_batch_size: 4 sequence_batching { direct {} }"#);
    let trace = vec![
        sreq("a", 0, 4566, true, false),
        sreq("b", 10 * MS, 4566, false, false),
        sreq("c", 20 * MS, 4566, true, false),
        sreq("d", 30 * MS, 4566, false, true),
    ];
    let out = run(&s, MS, trace);
    assert_eq!(out.batches.len(), 4);
    assert!(out.batches.iter().all(|b| b.size == 1));
    assert!(out
        .requests
        .iter()
        .all(|r| r.status == Status::Ok && r.slot == Some(0) && r.instance == Some(0)));
}

#[test]
fn s8_idle_timeout_reaps_and_backlog_moves_in() {
    let s = settings(
        r#"name: "m" max_batch_size: 1
        sequence_batching { max_sequence_idle_microseconds: 5000000 direct {} }"#,
    );
    let trace = vec![
        sreq("X.0", 0, 1, true, false),
        sreq("Y.0", S, 2, true, false),
        sreq("Y.1", 2 * S, 2, false, true),
        sreq("X.1", 7 * S, 1, false, false),
    ];
    let out = run(&s, MS, trace);
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["X.0"]),
            (5 * S, 0, vec!["Y.0"]),
            (5 * S + MS, 0, vec!["Y.1"])
        ]
    );
    assert_eq!(
        record(&out, "X.1").reason.as_deref(),
        Some("inference request for sequence 1 to model 'm' must specify the START flag on the first request of the sequence")
    );
}

#[test]
fn s9_backlog_request_timeout() {
    let s = settings(r#"name: "m" max_batch_size: 1 sequence_batching { direct {} }"#);
    let t = |r: Request| Request {
        timeout_us: 3 * S,
        ..r
    };
    let trace = vec![
        t(sreq("1.0", 0, 1, true, false)),
        t(sreq("1.1", 500 * MS, 1, false, false)),
        t(sreq("1.2", S, 1, false, true)),
        t(sreq("2.0", S, 2, true, false)),
        t(sreq("2.1", 2 * S, 2, false, false)),
        t(sreq("2.2", 5 * S, 2, false, true)),
    ];
    let out = run(&s, 5 * S, trace);
    assert_eq!(
        batches(&out),
        vec![
            (0, 0, vec!["1.0"]),
            (5 * S, 0, vec!["1.1"]),
            (10 * S, 0, vec!["1.2"])
        ]
    );
    for id in ["2.0", "2.1"] {
        let r = record(&out, id);
        assert_eq!(r.status, Status::TimedOut);
        assert_eq!(
            r.reason.as_deref(),
            Some("timeout of the corresponding sequence has been expired")
        );
        assert_eq!(r.end_us, Some(4 * S));
    }
    assert_eq!(record(&out, "2.2").status, Status::Rejected);
}
